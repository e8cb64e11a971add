"""The ``numalab`` command's own behaviour (each subcommand has its own tests)."""

import subprocess
import sys

from numalab import __version__
import pytest

from numalab.cli import COMMANDS, main


def test_version_and_help(capsys):
    assert main([]) == 0
    assert "usage: numalab" in capsys.readouterr().out
    proc = subprocess.run([sys.executable, "-m", "numalab", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"numalab {__version__}"


def test_console_script_help_lists_subcommands():
    proc = subprocess.run([sys.executable, "-m", "numalab", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "COMMAND" in proc.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_has_working_help(command, capsys):
    # argparse %-formats help strings: a stray "%change" would crash here, not at import
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert f"usage: numalab {command}" in out
    assert "%%" not in out  # description= is printed as written: '%%stddev' showed both signs

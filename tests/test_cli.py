"""The ``numalab`` command's own behaviour (each subcommand has its own tests)."""

import subprocess
import sys
from pathlib import Path

import numalab
from numalab import __version__
import pytest

from numalab.cli import COMMANDS, main


def test_version_and_help(capsys):
    assert main([]) == 0
    assert "usage: numalab" in capsys.readouterr().out
    proc = subprocess.run([sys.executable, "-m", "numalab", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"numalab {__version__}"


def test_child_pythons_import_the_numalab_under_test():
    # tests/conftest.py: a child started from the checkout's root (pytest's working directory)
    # must import the package this session tests, not the checkout's files beside it (they
    # differ in a non-editable install, as in .ci/run)
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", "import numalab; print(numalab.__file__)"],
                          capture_output=True, text=True, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()).resolve() == Path(numalab.__file__).resolve()


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

"""``numalab explore`` (the page it serves, its command line) and the saved notebooks' static
views (what ``jupyter nbconvert --to html`` shows without a kernel)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from numalab.cli import build_parser, main
from numalab.commands import explore

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def test_explore_is_a_subcommand():
    args = build_parser().parse_args(["explore", "--port", "0", "--notebook", "03"])
    assert args.command == "explore" and args.port == 0 and args.notebook == "03"


def test_page_is_a_valid_notebook_with_every_explorer():
    for full in (False, True):
        nb = nbformat.from_dict(explore.page_notebook(full))
        nbformat.validate(nb)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        for name in ("HistoryExplorer", "FutexExplorer", "DecisionMatrixExplorer", "PidHashExplorer"):
            assert f"nl.widgets.{name}(" in code
    assert "HistoryExplorer()" in "".join(c["source"] for c in explore.page_notebook(True)["cells"])


def test_shipped_notebooks_are_found_by_number_or_name():
    assert explore._shipped("03").name == "03-hot-and-shared-vmas.ipynb"
    assert explore._shipped("quickstart").name == "01-quickstart.ipynb"
    with pytest.raises(ValueError, match="not a shipped notebook"):
        explore._shipped("99")


def test_command_serves_on_localhost_only(tmp_path):
    cmd = explore.command(tmp_path / "x.ipynb", 8123)
    assert cmd[1:3] == ["-m", "voila"] and "--Voila.ip=127.0.0.1" in cmd and "--port=8123" in cmd
    assert "--no-browser" in cmd


def test_missing_voila_is_explained(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "voila" else real(name, *a))
    assert main(["explore"]) == 2
    assert "pip install voila" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["01-quickstart", "02-pid-history-sweep", "03-hot-and-shared-vmas"])
def test_saved_notebooks_export_to_html_with_their_last_view(name):
    """Opened without a kernel (nbconvert --to html), every explorer shows its snapshot -- the
    summary table and the figure -- and never the widget's text repr."""
    from nbconvert import HTMLExporter

    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    body, _ = HTMLExporter().from_notebook_node(nb)
    explorers = sum("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                    for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert explorers >= 1
    assert "VBox(children=" not in body
    assert body.count('class="numalab-snapshot numalab-snapshot-') == explorers
    assert body.count("numalab-value") >= 5 * explorers  # the summary numbers
    figures = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert body.count("data:image/png;base64") >= figures
    stored = json.dumps(nb)
    assert "shared/" not in stored and "spec §" not in stored


def test_command_line_parses_without_a_deprecation_warning(tmp_path):
    """Voilà reads the page's options as given, without traitlets' 'for containers is deprecated'
    warning (a list option passed as one item, not as a Python list)."""
    import warnings

    pytest.importorskip("voila")
    from voila.app import Voila

    app = Voila()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        app.parse_command_line(explore.command(tmp_path / "x.ipynb", 8123)[3:])
    assert app.config.VoilaConfiguration.file_allowlist == [r".*\.(png|jpg|gif|svg)"]
    assert app.config.Voila.ip == "127.0.0.1"
    # the executor that runs the page reads the longer wait for a cell's outputs (a misspelt
    # class or option would leave nbclient's 4 s, which lost an explorer on a loaded machine)
    from voila.execute import VoilaExecutor

    assert VoilaExecutor(nbformat.v4.new_notebook(), config=app.config).iopub_timeout == 30

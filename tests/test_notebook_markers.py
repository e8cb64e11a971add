"""What a reader sees of nbval: nothing. The notebooks mark the cells whose outputs nbval compares
with the cell tag ``nbval-check-output`` (metadata, not shown) instead of a ``# NBVAL_CHECK_OUTPUT``
comment in the code, and nbval honours the tag."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
#: the notebooks this rule covers (05 and 08 are tagged by their own authors)
TAGGED = ["01-quickstart", "02-pid-history-sweep", "03-hot-and-shared-vmas", "04-futex-buckets", "06-scale-out",
          "07-adaptive-history"]


@pytest.mark.parametrize("name", TAGGED)
def test_checked_cells_are_tagged_not_commented(name):
    from nbval.plugin import find_comment_markers, find_metadata_tags

    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not [c.source for c in code if "NBVAL" in c.source]  # no marker in what the reader sees
    checked = [c for c in code if dict(find_metadata_tags(c.metadata)).get("check")]
    assert checked and all(not dict(find_comment_markers(c.source)) for c in checked)

"""The provenance table of every default constant, generated from the code (not a test).

Prints the markdown table of :func:`numalab.fidelity.provenance_markdown` (the Costs and
EngineOptions field metadata, the LKP job constants, the topology figures of the robot's three
machines); ``--write docs/fidelity.md`` replaces the table between the file's
``<!-- provenance:start -->`` and ``<!-- provenance:end -->`` markers instead
(``tests/test_provenance.py`` fails when the two differ).

Run: ``python benchmarks/provenance.py [--write docs/fidelity.md] [--preset NAME ...]``
"""

from __future__ import annotations

import argparse
from pathlib import Path

from numalab.fidelity import provenance_markdown
from numalab.fidelity.constants import CALIBRATION_PRESETS

START, END = "<!-- provenance:start -->", "<!-- provenance:end -->"


def replace_between(text: str, table: str) -> str:
    """``text`` with the part between the markers replaced by ``table``."""
    if START not in text or END not in text:
        raise SystemExit(f"the file has no {START} ... {END} markers")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table}{END}{tail}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", metavar="MARKDOWN", help="replace the table between the markers of this file")
    ap.add_argument("--preset", action="append", help="topology presets to list (default: the robot's machines)")
    args = ap.parse_args(argv)
    table = provenance_markdown(tuple(args.preset) if args.preset else CALIBRATION_PRESETS)
    if args.write:
        path = Path(args.write)
        path.write_text(replace_between(path.read_text(), table))
        print(f"provenance table written to {path}")
    else:
        print(table, end="")


if __name__ == "__main__":
    main()

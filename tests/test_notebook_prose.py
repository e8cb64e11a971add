"""The notebooks' prose quotes their own outputs: every decimal number in a markdown cell (a
number with a decimal point, outside inline code) is, at the precision it is printed with, a
number in the notebook's stored outputs, or it is listed in :data:`ELSEWHERE` with where it
comes from.

Why: a model change re-runs the notebooks (nbval compares their tagged outputs), and the
sentences that read those outputs went stale four times before this check (a false-skip count,
run times, an explorer's numbers, 8-seed verdicts), each found by a reader. Integers are not
checked (thread counts, sizes and seeds would match by chance); a number computed from two
outputs (a percentage between them) is listed with the outputs it comes from, so an edit of
either sentence or output brings a reader here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

#: a decimal number in prose: a point between digits, not part of a version (0.12.0) or a word
DECIMAL = re.compile(r"(?<![\w.])[-+\u2212]?\d+\.\d+(?![\w.]*\d)")
#: any number in an output (the candidates a prose number may quote)
OUTPUT_NUMBER = re.compile(r"[-+\u2212]?\d+(?:\.\d+)?")
INLINE_CODE = re.compile(r"`[^`]*`")

#: per notebook, the prose decimals that do not quote its outputs, and where each comes from
ELSEWHERE = {
    "02-pid-history-sweep": {
        "7.3": "the VM batch of docs/fidelity.md, 'The history length in a real kernel' (numalab 0.9)",
        "0.1": "the same VM batch",
        "-18.1": "python benchmarks/forecast.py, 16 seeds (docs/fidelity.md, 0.12.0 section)",
        "-20.4": "the same forecast",
        "-18.0": "the same forecast",
    },
    "04-futex-buckets": {
        "6.17": "a kernel version",
        "3.4": "a section of spec kernel-futex-hash.md",
    },
    "05-reproduce-published": {
        "-4.2": "numalab reproduce at 8 seeds (the CLI's default), quoted beside the notebook's 2 seeds",
        "-18.2": "the same row at 64 seeds (docs/fidelity.md)",
    },
    "07-adaptive-history": {
        "0.10": "the mmtests 2023 t-test's level",
    },
    "08-your-own-rule": {
        "1.3": "the mean paired change of the 2s-128 figure (plots.paired_change, an image)",
        "2.8": "the same figure",
        "0.4": "the mean paired change of the 2s-ivb-40 figure (an image)",
    },
}


def _texts(cells):
    """The stored output text of the code cells: streams, text/plain, HTML and markdown."""
    for c in cells:
        if c["cell_type"] != "code":
            continue
        for o in c.get("outputs", []):
            if "text" in o:
                yield "".join(o["text"])
            for kind in ("text/plain", "text/html", "text/markdown"):
                if kind in o.get("data", {}):
                    yield "".join(o["data"][kind])


def _value(token: str) -> float:
    return float(token.replace("\u2212", "-"))


def _quotes(token: str, outputs: list[float]) -> bool:
    """Whether ``token`` (e.g. "175.5") is some output rounded to its decimals (half a unit of
    its last digit either way, so 175.45 printed as 175.5 counts), sign aside."""
    x = abs(_value(token))
    half = 0.5 * 10 ** -len(token.split(".")[1]) + 1e-9
    return any(abs(abs(y) - x) <= half for y in outputs)


def unquoted(path: Path) -> list[tuple[int, str, str]]:
    """(markdown cell index, number, its context) for every prose decimal that is no stored
    output of the notebook at ``path``."""
    cells = json.loads(path.read_text())["cells"]
    outputs = [_value(t) for text in _texts(cells) for t in OUTPUT_NUMBER.findall(text)]
    found = []
    for i, c in enumerate(cells):
        if c["cell_type"] != "markdown":
            continue
        prose = INLINE_CODE.sub(" ", "".join(c["source"]))
        for m in DECIMAL.finditer(prose):
            if not _quotes(m.group(0), outputs):
                found.append((i, m.group(0).replace("\u2212", "-"),
                              " ".join(prose[max(0, m.start() - 50):m.end() + 20].split())))
    return found


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_prose_decimals_quote_the_outputs(path):
    listed = ELSEWHERE.get(path.stem, {})
    stray = [(i, n, ctx) for i, n, ctx in unquoted(path) if n not in listed]
    assert not stray, (f"{path.name}: prose numbers that no stored output holds (re-read the outputs, or list "
                       f"the number in ELSEWHERE with its source): "
                       + "; ".join(f"cell {i}: {n} in '...{ctx}...'" for i, n, ctx in stray))


@pytest.mark.parametrize("name", sorted(ELSEWHERE))
def test_every_listed_number_is_still_in_the_prose(name):
    # a listing outlives its sentence only by mistake: then it would excuse a new, stale number
    path = NOTEBOOKS / f"{name}.ipynb"
    left = {n for _, n, _ in unquoted(path)}
    assert set(ELSEWHERE[name]) <= left, f"{name}: listed but not (or no longer unquoted) in the prose: " \
                                         f"{sorted(set(ELSEWHERE[name]) - left)}"


def test_the_check_finds_a_stale_number(tmp_path):
    # the check itself: a sentence quoting 429.8 where the output says 467.8 is caught, the
    # output's own number (at a coarser precision too) is not
    nb = {"cells": [
        {"cell_type": "code", "source": [], "outputs": [{"output_type": "stream", "name": "stdout",
                                                         "text": ["false skips 467.84 per run\n"]}]},
        {"cell_type": "markdown", "source": ["N=2 takes 429.8 false skips a run (numalab 0.12.0)."]},
        {"cell_type": "markdown", "source": ["N=2 takes 467.8, about 468 or 467.84; `x = 1.5` is code."]},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    p = tmp_path / "stale.ipynb"
    p.write_text(json.dumps(nb))
    assert [(i, n) for i, n, _ in unquoted(p)] == [(1, "429.8")]

"""Cross-validation, the project's own judge: does a fitted constant or a mechanism switch earn
its place on data it was not chosen on?

The candidates (:func:`candidates`) are built from

* each fitted constant (kind ``fitted`` in its provenance: ``EngineOptions.lb_migrate_hz``, and
  the fitted figures of the calibration presets, ``Topology 2s-128.write_efficiency``; a
  machine's figure moves only its own machine's rows, so a fold that leaves that machine out
  has nothing to choose it on and keeps the default) on a small grid over its plausible band (``grid``
  values evenly spread, the one nearest the default replaced by the default), and
* the mechanism switches (the bool :data:`numalab.engine.SWITCHES`): all at their defaults, or
  one of them flipped (off, or on for a mechanism that is off by default: ``sweep_convoy``), or
  a group of them flipped together (``together``: mechanisms of one kernel path judged as one).
  Left out: a switch whose mechanism costs nothing at the default constants
  (``harness_overhead`` with ``harness_overhead_s = 0``: flipping it changes no bit) and a switch
  whose setting is measured (``thp``: the robot's counters show THP was on).

``design="separate"`` (the default) takes every combination of the fitted constants' grids with
the switches at their defaults, and each switch flipped with the fitted constants at their
defaults (3 x 3 + 9 = 18 candidates at ``grid=3``); ``design="product"`` crosses the two (3 x 3 x 10
= 90), about five times the engine time, for a choice of a switch and a refit together.

Each candidate is simulated once over every table (one :func:`numalab.fidelity.execute` for
all of them). The rest is bookkeeping over the per-row verdicts (:func:`leave_one_out`): for
each fold (a machine, or a table) the candidate with the most reproduced rows on the other
folds is chosen (ties: the default, then the candidate with fewer changes), and scored on the rows
of the fold it never saw. The cross-validated score is the sum of those held-out scores; the
in-sample score is the best candidate's score on every row. A change that raises the
in-sample score and lowers the cross-validated one is a fit, not a mechanism.

Scores count the judged rows the published rule (``verdict``) or the strict rule
(``strict_verdict``) calls reproduced; fitted rows are ordinary rows here (the constants are
refitted on each fold's training rows).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from .rules import NOT_JUDGED, REPRODUCED
from .runs import Point, execute, plan
from .tables import table_rows

__all__ = ["Candidate", "DESIGNS", "candidates", "leave_one_out", "cross_validate", "CrossValidation", "write"]

RULES = ("verdict", "strict_verdict")


@dataclass(frozen=True)
class Candidate:
    """One setting of the fitted constants and switches: ``costs``, ``options`` and ``topology``
    (``{preset: {field: value}}``) overrides (empty for the defaults) and a readable ``name``."""

    name: str
    costs: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    topology: dict = field(default_factory=dict)

    def point(self) -> Point:
        return Point(costs=dict(self.costs), options=dict(self.options),
                     topology={p: dict(f) for p, f in self.topology.items()})

    @property
    def changes(self) -> int:
        return len(self.costs) + len(self.options) + sum(len(f) for f in self.topology.values())


def _fitted():
    from ..costs import Costs
    from ..engine.options import EngineOptions
    from ..provenance import provenance_of

    from ..topology import Topology
    from .constants import CALIBRATION_PRESETS, topology_provenance

    out = []
    for owner, cls in (("costs", Costs), ("options", EngineOptions)):
        defaults = {f: getattr(cls(), f) for f in provenance_of(cls)}
        for name, p in provenance_of(cls).items():
            if p.kind == "fitted":
                out.append((owner, name, defaults[name], p.band))
    for preset in CALIBRATION_PRESETS:          # a machine's fitted figure: owner "topology:<preset>"
        topo = Topology.preset(preset)
        for name, p in topology_provenance(topo).items():
            if p.kind == "fitted":
                out.append((f"topology:{preset}", name, getattr(topo, name), p.band))
    return out


def _grid(default, band, n):
    """``n`` values evenly over the band (log-spaced when it spans a factor of 3 or more), the
    one nearest the default replaced by the default itself."""
    if n <= 1 or band is None:
        return [default]
    lo, hi = band
    if lo > 0 and hi / lo >= 3:
        values = list(np.exp(np.linspace(math.log(lo), math.log(hi), n)))
    else:
        values = list(np.linspace(lo, hi, n))
    values[int(np.argmin([abs(v - default) for v in values]))] = default
    return sorted(float(f"{v:.4g}") for v in values)


def _bool_switches() -> list[str]:
    """The mechanism switches that flip (lb_migrate_hz, a fitted constant, is on its grid)."""
    from ..engine.options import DEFAULTS, SWITCHES

    return [name for name in SWITCHES if isinstance(DEFAULTS[name], bool)]


def _switches():
    from ..costs import Costs
    from ..engine.options import EngineOptions
    from ..provenance import provenance_of

    prov = provenance_of(EngineOptions)
    out = []
    for name in _bool_switches():
        if name == "harness_overhead" and Costs().harness_overhead_s == 0:
            continue                      # a no-op at the default costs
        if prov[name].kind == "measurement":
            continue                      # thp: the robot's counters say THP was on; not a choice
        out.append(name)
    return out


DESIGNS = ("separate", "product")


def candidates(grid: int = 3, switches=None, design: str = "separate", together=()) -> list[Candidate]:
    """The fitted constants' grids (``grid`` values each) and the switch states (module
    docstring: ``design`` "separate" or "product"); the defaults first. ``together``: groups of
    switches (each a tuple of names) that are also flipped as one candidate, for mechanisms that
    are judged together (a group counts as one change per switch in it)."""
    from ..engine.options import DEFAULTS
    from ..errors import NumalabValueError, check_choice

    check_choice("design", design, DESIGNS)
    fitted = _fitted()
    switches = _switches() if switches is None else list(switches)
    groups = [tuple(g) for g in together]
    bools = _bool_switches()
    for g in groups:
        if len(g) < 2 or not set(g) <= set(bools):
            raise NumalabValueError(f"together={g!r}: allowed: two or more of the bool switches {', '.join(bools)}")
    axes = [[(owner, name, v) for v in _grid(default, band, grid)] for owner, name, default, band in fitted]
    defaults = tuple((owner, name, default) for owner, name, default, _ in fitted)
    states = [None, *[(x,) for x in switches], *groups]
    out = []
    for combo in itertools.product(*axes):
        for flip in states:
            if design == "separate" and flip is not None and combo != defaults:
                continue
            costs, options, topology, parts = {}, {}, {}, []
            for (owner, name, v), (_, _, default, _) in zip(combo, fitted):
                if v != default:
                    if owner.startswith("topology:"):
                        preset = owner.partition(":")[2]
                        topology.setdefault(preset, {})[name] = v
                        parts.append(f"{preset}.{name}={v:g}")
                    else:
                        (costs if owner == "costs" else options)[name] = v
                        parts.append(f"{name}={v:g}")
            for x in flip or ():
                options[x] = not DEFAULTS[x]
                parts.append(f"{x}={'on' if options[x] else 'off'}")
            out.append(Candidate(" + ".join(parts) or "default", costs, options, topology))
    out.sort(key=lambda c: c.changes)   # the defaults first, then one change, ...
    return out


def _key(row) -> tuple:
    return row["table"], row["metric"], row["quantity"]


def leave_one_out(verdicts: dict, folds: dict) -> dict:
    """The bookkeeping (module docstring). ``verdicts``: candidate name -> {row key: reproduced
    (bool)}, every candidate over the same rows, the first candidate the default; ``folds``: row
    key -> fold name. Returns ``{"folds": [{fold, chosen, train, train_rows, held_out, rows}],
    "cross_validated", "rows", "in_sample", "in_sample_best", "default"}``."""
    names = list(verdicts)
    keys = list(folds)
    ok = np.array([[bool(verdicts[c][k]) for k in keys] for c in names])        # (candidate, row)
    fold_of = np.array([folds[k] for k in keys])
    out = []
    for f in dict.fromkeys(fold_of):
        test = fold_of == f
        train = ok[:, ~test].sum(axis=1)
        best = int(np.flatnonzero(train == train.max())[0])      # ties: the first listed (fewer changes)
        out.append(dict(fold=str(f), chosen=names[best], train=int(train[best]), train_rows=int((~test).sum()),
                        held_out=int(ok[best, test].sum()), rows=int(test.sum())))
    total = ok.sum(axis=1)
    best = int(np.flatnonzero(total == total.max())[0])
    return dict(folds=out, cross_validated=sum(f["held_out"] for f in out), rows=len(keys),
                in_sample=int(total[best]), in_sample_best=names[best], default=int(total[0]))


@dataclass
class CrossValidation:
    """What :func:`cross_validate` found: ``rows`` (candidate name -> its judged rows),
    ``results`` (``{(rule, by): leave_one_out(...)}`` for ``rule`` in ``verdict`` /
    ``strict_verdict`` and ``by`` in ``machine`` / ``table``), ``seeds``, ``grid``, ``design``."""

    rows: dict
    results: dict
    seeds: int
    grid: int
    design: str = "separate"

    def summary(self) -> str:
        lines = [f"cross-validation over {len(self.rows)} candidates ({self.design} design, {self.seeds} seeds, "
                 f"{self.grid} values per fitted constant): in-sample and cross-validated reproduced rows"]
        for (rule, by), r in self.results.items():
            lines.append(f"  {rule:<15} leave one {by:<8} default {r['default']} of {r['rows']}, in-sample best "
                         f"{r['in_sample']} ({r['in_sample_best']}), cross-validated {r['cross_validated']} of "
                         f"{r['rows']}")
        return "\n".join(lines)

    def markdown(self) -> str:
        """The tables of docs/fidelity.md's cross-validation section."""
        lines = ["| rule | left out | default (in-sample) | best in-sample | cross-validated |", "|---|---|---|---|---|"]
        for (rule, by), r in self.results.items():
            lines.append(f"| {rule} | one {by} | {r['default']} of {r['rows']} | {r['in_sample']} "
                         f"(`{r['in_sample_best']}`) | **{r['cross_validated']} of {r['rows']}** |")
        for (rule, by), r in self.results.items():
            lines += ["", f"{rule}, leaving one {by} out:", "", "| left out | chosen on the others | train | held out |",
                      "|---|---|---|---|"]
            lines += [f"| {f['fold']} | `{f['chosen']}` | {f['train']} of {f['train_rows']} | {f['held_out']} of "
                      f"{f['rows']} |" for f in r["folds"]]
        return "\n".join(lines) + "\n"


def _judged(rows):
    return [r for r in rows if r["verdict"] != NOT_JUDGED]


def cross_validate(published: dict, *, seeds: int = 8, grid: int = 3, switches=None, design: str = "separate",
                   together=(), topology=None, workers=None, progress=False) -> CrossValidation:
    """Simulate every candidate (:func:`candidates`) over every table of ``published`` once and
    leave one machine, then one table, out (:func:`leave_one_out`)."""
    from ..errors import check_int

    check_int("grid", grid, lo=1, hi=20)
    cands = candidates(grid, switches, design, together)
    calls = []
    for k, c in enumerate(cands):
        calls += plan(published, seeds, topology=topology, point=k, overrides=c.point())
    sims = execute(calls, workers=workers, progress=progress, desc="cross-validation")
    rows = {c.name: _judged(table_rows(published, {p: s for (i, p), s in sims.items() if i == k}))
            for k, c in enumerate(cands)}
    machine = {name: pub.attrs.get("machine", name) for name, pub in published.items()}
    first = rows[cands[0].name]
    results = {}
    for rule in RULES:
        verdicts = {name: {_key(r): r[rule] == REPRODUCED for r in rs} for name, rs in rows.items()}
        for by in ("machine", "table"):
            folds = {_key(r): (machine[r["table"]] if by == "machine" else r["table"]) for r in first}
            results[(rule, by)] = leave_one_out(verdicts, folds)
    return CrossValidation(rows=rows, results=results, seeds=seeds, grid=grid, design=design)


def write(cv: CrossValidation, out) -> list:
    """``crossval.md`` (the summary tables) and ``crossval.csv`` (every candidate's verdict on
    every row) in ``out``."""
    import csv
    import io
    from pathlib import Path

    from ..storage import write_text

    out = Path(out)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["candidate", "table", "metric", "quantity", "published", "simulated_mean", "verdict",
                "strict_verdict"])
    for name, rs in cv.rows.items():
        for r in rs:
            w.writerow([name, r["table"], r["metric"], r["quantity"], f"{r['published']:.4g}",
                        f"{r['simulated_mean']:.4g}", r["verdict"], r["strict_verdict"]])
    return [write_text(out / "crossval.md", f"# Cross-validation\n\n{cv.summary()}\n\n{cv.markdown()}"),
            write_text(out / "crossval.csv", buf.getvalue())]

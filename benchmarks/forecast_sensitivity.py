"""Which uncertain constant moves the model's answer to the history-length step (issue 24
item 5; not a test).

``benchmarks/forecast.py --bands`` gives the strict rule's interval of patch 4 against patch 3
(``NR_ACCESS_PID_HIST`` 2 -> 4) on the robot's three machines; for numa01 it is some 40 points
wide. This says where that width comes from, one constant at a time: every axis of the
uncertainty box (:func:`numalab.fidelity.bands.box`: the Costs fields, engine options and the
machine's topology figures that carry a ``band`` in their provenance) is set to the low and to
the high end of its range, the others stay at their defaults, and the step is simulated at both
ends with the same ``--seeds`` seeds as at the centre. Per machine and test it prints the
change at each end, their difference (the axis' effect) and that difference's standard error
from the paired per-seed spread; effects over twice their error are marked ``*``. The axes are
sorted by the size of their effect: the top ones are what to measure on a machine to pin the
history length's effect down, the unmarked ones need no measurement for this question.

Nothing here reads a published number::

    python benchmarks/forecast_sensitivity.py                   # 8 seeds, numa01 and TA, 3 machines
    python benchmarks/forecast_sensitivity.py --seeds 16 --workloads numa01 --presets 2s-128
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import numalab as nl
from numalab.fidelity import simulated_change
from numalab.fidelity.bands import box
from numalab.fidelity.runs import Call, Point, execute

STEP = ("rfc2023-p4", "rfc2023-p3")   # (new, base): the patch that changes only the history length
PRESETS = ("2s-128", "2s-88-csl", "2s-224-spr")
WORKLOADS = ("numa01", "numa01_THREAD_ALLOC")


def axis_points(presets) -> list[tuple[str, str, Point]]:
    """``(axis, end, overrides)`` for both ends of every axis of the box (``end`` 'lo' / 'hi')."""
    out = []
    for (owner, name), ranges in sorted(box(presets).items()):
        for end, i in (("lo", 0), ("hi", 1)):
            if owner == "topology":
                pt = Point(topology={p: {name: r[i]} for p, r in ranges.items() if p in presets})
            else:
                pt = Point(**{owner: {name: ranges[None][i]}})
            out.append((f"{owner}.{name}", end, pt))
    return out


def _range(ranges, preset) -> str:
    lo, hi = ranges.get(preset, ranges.get(None))
    return f"{lo:g}-{hi:g}"


def run(presets, workloads, seeds):
    points = axis_points(presets)
    calls = [Call(p, w, pol, tuple(range(seeds)), k, pt)
             for k, (_axis, _end, pt) in enumerate([("centre", "", Point())] + points)
             for p in presets for w in workloads for pol in STEP]
    return points, execute(calls, progress=True, desc="axis ends")


def _paired(sim, wl):
    """(mean %change, per-seed paired changes) of the step for ``wl``."""
    d = sim.sel(workload=wl)
    new, base = d["elsp"].sel(policy=STEP[0]), d["elsp"].sel(policy=STEP[1])
    mean, _sd = simulated_change(d, STEP[1], STEP[0])
    return float(mean), (100.0 * (new - base) / base).values


def effects(sims, points, preset, wl):
    """(centre %change, its per-seed changes, rows) for ``wl`` on ``preset``; a row is
    ``(axis, range, change at low end, at high end, effect, its standard error, the two ends'
    standard errors)``, the largest effect first."""
    ranges = box([preset])
    centre, c_runs = _paired(sims[(0, preset)], wl)
    rows = []
    for j in range(0, len(points), 2):
        axis = points[j][0]
        lo, lo_runs = _paired(sims[(j + 1, preset)], wl)
        hi, hi_runs = _paired(sims[(j + 2, preset)], wl)
        lo_se, hi_se = (math.sqrt(np.var(r, ddof=1) / r.size) for r in (lo_runs, hi_runs))
        owner, name = axis.split(".", 1)
        rows.append((axis, _range(ranges[(owner, name)], preset), lo, hi, hi - lo, math.hypot(lo_se, hi_se),
                     lo_se, hi_se))
    rows.sort(key=lambda r: -abs(r[4]))
    return centre, c_runs, rows


def table(sims, points, preset, wl) -> str:
    centre, c_runs, rows = effects(sims, points, preset, wl)
    lines = [f"**{preset}, {wl}**: patch 4 vs 3, %change of elsp; centre {centre:+.1f} "
             f"(seed sd {np.std(c_runs, ddof=1):.1f}, {c_runs.size} seeds)", "",
             "| axis | range | at low end | at high end | effect (high - low) |", "|---|---|---|---|---|"]
    for axis, rng, lo, hi, eff, se, _lo_se, _hi_se in rows:
        mark = "*" if abs(eff) > 2 * se else ""
        lines.append(f"| {axis} | {rng} | {lo:+.1f} | {hi:+.1f} | {eff:+.1f} ± {se:.1f}{mark} |")
    return "\n".join(lines)


def tornado(sims, points, presets, wl, top=6, ax=None):
    """One panel per machine: the ``top`` axes' changes at their low (o) and high (x) ends
    around the centre's change (dashed), each with its 2-standard-error bar; returns the Figure."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, axes = plt.subplots(1, len(presets), figsize=(4.2 * len(presets), 3.6), sharex=True,
                                 layout="constrained", squeeze=False)
        axes = axes[0]
    else:
        axes, fig = np.atleast_1d(ax), np.atleast_1d(ax)[0].figure
    for a, preset in zip(axes, presets):
        centre, c_runs, rows = effects(sims, points, preset, wl)
        rows = rows[:top][::-1]
        y = np.arange(len(rows))
        for i, (_axis, _rng, lo, hi, _eff, _se, lo_se, hi_se) in enumerate(rows):
            a.plot([lo, hi], [i, i], color="0.6", lw=4, solid_capstyle="butt")
            a.errorbar([lo], [i], xerr=[2 * lo_se], fmt="o", color="C0", ms=5, capsize=2)
            a.errorbar([hi], [i], xerr=[2 * hi_se], fmt="x", color="C3", ms=6, capsize=2)
        a.axvline(centre, color="k", ls="--", lw=1)
        a.axvline(0.0, color="0.8", lw=1)
        a.set_yticks(y, [f"{r[0].split('.', 1)[1]}\n{r[1]}" for r in rows], fontsize=7)
        a.set_title(f"{preset}: centre {centre:+.1f} %", fontsize=9)
        a.set_xlabel(f"{wl}: %change of elsp, patch 4 vs 3", fontsize=8)
    fig.suptitle("The history-length step at each end of an uncertain constant (o low, x high)", fontsize=10)
    return fig


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=8, help="seeds per end of an axis (default 8)")
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--figure", help="write the tornado figure of the first workload here (PNG)")
    args = ap.parse_args(argv)
    presets, workloads = args.presets.split(","), args.workloads.split(",")
    t = time.time()
    points, sims = run(presets, workloads, args.seeds)
    for p in presets:
        for w in workloads:
            print(table(sims, points, p, w), "\n")
    print(f"numalab {nl.__version__}; {len(points) // 2} axes; {time.time() - t:.0f} s wall")
    if args.figure:
        import matplotlib

        matplotlib.use("Agg")
        tornado(sims, points, presets, workloads[0]).savefig(args.figure, dpi=110)
        print(f"wrote {args.figure}")


if __name__ == "__main__":
    main()

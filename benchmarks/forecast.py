"""The model's forecast for the RFC 2023 series, patch by patch, on the robot's three machines
(issue 24; not a test).

The given tables hold only some of the series' steps: patch 5 against 4 and 6 against 5 on Ice
Lake, patches 1, 2 and 6 against the base on Sapphire Rapids. This prints what the default
model says for **every** step on each machine -- above all patch 4 against patch 3, which
changes nothing but ``NR_ACCESS_PID_HIST`` (2 -> 4) -- so the model's answer can be scored
against results it never saw by whoever holds them, without running it. Nothing here reads a
published number.

Per machine and step, per test: the mean %change of the benchmark's seconds over ``--seeds``
seeds and the standard deviation of the paired per-seed change (seeds pair the same TIDs and
initial node), and the base seconds. ``job`` is ``time.elapsed_time`` of a numa01_THREAD_ALLOC
LKP job (numa01, numa01_THREAD_ALLOC and numa02, 4 iterations: ``numalab.fidelity.job_elapsed``).
Steps a given table holds are marked ``given``.

With ``--bands P`` (default 4, ``numalab reproduce``'s) each machine also gets the table a
scorer of the strict rule needs: the same steps run at the ``P`` points of the uncertainty box
(:func:`numalab.fidelity.bands.box_points`, the Latin hypercube ``numalab reproduce`` uses,
``--band-seeds`` seeds each), every cell the strict rule's interval
(:func:`numalab.fidelity.rules.interval`: the range of the centre's and the points' means,
widened by two errors of a published change, its own and the model's mean's). The published
change's own error is taken as that of a robot table that prints no ``±`` for either kernel
(both runs' spreads at most 2 %, :func:`numalab.fidelity.rules.published_se`), the narrowest a
robot table gives; a printed ``±`` widens it, and ``numalab compare TABLE`` applies a table's
own. A published change inside it passes the strict rule.

``--option NAME=VALUE`` (repeatable) forecasts with that engine option, as ``numalab simulate
--option``: ``--option sweep_convoy=True`` gives the answer if numa01's writers start their loops
together (docs/fidelity.md, "numa01's writers as a convoy"), the assumption whose choice moves the
size of numa01's history-length answer most.

Run: ``python benchmarks/forecast.py [--seeds 8] [--bands 4] [--option NAME=VALUE] [--out DIR]`` (one
``numalab.sweep`` and the points' runs; about two minutes on a 2-core machine with the
compiled engine).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numalab as nl
from numalab.commands.simulate import options_from_args
from numalab.fidelity import job_elapsed, simulated_change
from numalab.fidelity.bands import DEFAULT_POINTS, DEFAULT_SEEDS, box_points
from numalab.fidelity.rules import interval, published_se
from numalab.fidelity.runs import Call, execute
from numalab.stats import lkp_printed_var

MACHINES = {"2s-128": "lkp-icl-2sp6", "2s-88-csl": "lkp-csl-2sp9", "2s-224-spr": "lkp-spr-r02"}
PROFILES = ("6.4", "rfc2023-p1", "rfc2023-p2", "rfc2023-p3", "rfc2023-p4", "rfc2023-p5", "rfc2023-p6")
WORKLOADS = ("numa01", "numa01_THREAD_ALLOC", "numa02", "numa02_SMT")
JOB = ("numa01", "numa01_THREAD_ALLOC", "numa02")
#: (new, base) steps: each patch against the one before it, and the whole series
STEPS = tuple(zip(PROFILES[1:], PROFILES[:-1])) + (("rfc2023-p6", "6.4"),)
#: steps a table in the repository holds, per preset (reference/calibration*.md)
GIVEN = {"2s-128": {("rfc2023-p5", "rfc2023-p4"), ("rfc2023-p6", "rfc2023-p5")},
         "2s-224-spr": {("rfc2023-p1", "6.4"), ("rfc2023-p6", "6.4")}}
GIVEN_SPR_CUMULATIVE = ("rfc2023-p2", "6.4")   # the SPR summary's p2 column is against the base
#: the mean square (%²) of a spread the robot hides (at most 2 %)
HIDDEN = float(lkp_printed_var(float("nan")))


def run(seeds=8, presets=tuple(MACHINES), **options):
    grid = {"workload": list(WORKLOADS), "topology": list(presets), "profile": list(PROFILES),
            **{k: [v] for k, v in options.items()}}
    ds = nl.sweep(grid, seeds=seeds, progress=True)
    # a grid axis of length one (an option's too) comes back as a scalar coordinate
    return ds if "topology" in ds.dims else ds.expand_dims("topology")


def run_points(presets, points=DEFAULT_POINTS, seeds=DEFAULT_SEEDS, **options) -> dict:
    """``{(point, preset): Dataset}`` (dims workload, policy, seed) of every workload and
    profile at the box's points ``1 .. points``, seeds ``0 .. seeds-1`` (as ``numalab
    reproduce``'s bands), with the engine ``options`` at every point."""
    if points < 1:
        return {}
    box = [dataclasses.replace(pt, options={**pt.options, **options}) for pt in box_points(list(presets), points)]
    calls = [Call(preset, wl, pol, tuple(range(seeds)), k, pt)
             for k, pt in enumerate(box, start=1)
             for preset in presets for wl in WORKLOADS for pol in PROFILES]
    return execute(calls, progress=True, desc="box points")


def _mark(preset, new, base) -> str:
    """``given`` when a table in the repository holds the step on that machine."""
    given = GIVEN.get(preset, set()) | ({GIVEN_SPR_CUMULATIVE} if preset == "2s-224-spr" else set())
    return "given" if (new, base) in given else ""


def _changes(d, new, base):
    """Per workload and ``job``: (mean %change, paired std) of policy ``new`` against ``base``."""
    out = {w: simulated_change(d.sel(workload=w), base, new) for w in WORKLOADS}
    job = job_elapsed(d.sel(workload=list(JOB))).to_dataset(name="job")
    out["job"] = simulated_change(job, base, new, "job")
    return {k: (float(m), float(sd)) for k, (m, sd) in out.items()}


def band_table(ds, points: dict, preset) -> str:
    """The strict rule's interval per step and test (module docstring) on ``preset``."""
    d = ds.sel(topology=preset).rename(profile="policy")
    pts = [sim for (k, p), sim in sorted(points.items()) if p == preset]
    lines = [f"**{preset}** ({MACHINES[preset]}): the strict rule's interval of the %change, centre "
             f"({d.sizes['seed']} seeds) and {len(pts)} box points, for a table that prints no ± "
             "(a printed one widens it)", "",
             "| step | " + " | ".join(WORKLOADS) + " | job | |", "|" + "---|" * (len(WORKLOADS) + 3)]
    for new, base in STEPS:
        centre = _changes(d, new, base)
        at_points = [_changes(sim, new, base) for sim in pts]
        cells = []
        for w in (*WORKLOADS, "job"):
            mean, sd = centre[w]
            means = [mean] + [p[w][0] for p in at_points]
            quiet = published_se(mean, HIDDEN, HIDDEN)   # a table printing no ± (module docstring)
            lo, hi = interval({"simulated_mean": mean, "simulated_std": sd, "published_se": quiet,
                               "seeds": d.sizes["seed"], "band_lo": min(means), "band_hi": max(means)})
            cells.append(f"{lo:+.1f} … {hi:+.1f}")
        lines.append(f"| {new} vs {base} | " + " | ".join(cells) + f" | {_mark(preset, new, base)} |")
    return "\n".join(lines)


def table(ds, preset) -> str:
    d = ds.sel(topology=preset).rename(profile="policy")
    elsp = d["elsp"]
    job = job_elapsed(d.sel(workload=list(JOB))).to_dataset(name="job")
    head = "| step | " + " | ".join(WORKLOADS) + " | job | |"
    lines = [f"**{preset}** ({MACHINES[preset]}): %change ± paired std over {d.sizes['seed']} seeds",
             "", head, "|" + "---|" * (len(WORKLOADS) + 3)]
    base_cells = [f"{float(elsp.sel(workload=w, policy='6.4').mean()):.1f} s" for w in WORKLOADS]
    lines.append("| 6.4 (base) seconds | " + " | ".join(base_cells)
                 + f" | {float(job['job'].sel(policy='6.4').mean()):.0f} s | |")
    for new, base in STEPS:
        change = _changes(d, new, base)
        cells = [f"{pct:+.1f} ± {sd:.1f}" for pct, sd in (change[w] for w in (*WORKLOADS, "job"))]
        lines.append(f"| {new} vs {base} | " + " | ".join(cells) + f" | {_mark(preset, new, base)} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--out", default="forecast")
    ap.add_argument("--presets", default=",".join(MACHINES))
    ap.add_argument("--bands", type=int, default=DEFAULT_POINTS,
                    help=f"points of the uncertainty box (default {DEFAULT_POINTS}; 0: no band tables)")
    ap.add_argument("--band-seeds", type=int, default=DEFAULT_SEEDS,
                    help=f"seeds per box point (default {DEFAULT_SEEDS})")
    ap.add_argument("--option", action="append", default=None, metavar="NAME=VALUE",
                    help="an engine option for every run (repeatable), e.g. sweep_convoy=True")
    args = ap.parse_args(argv)
    t = time.time()
    presets = args.presets.split(",")
    options = options_from_args(args, ap)   # the CLI's reader of --option, checked by EngineOptions
    if options:
        print("engine options: " + ", ".join(f"{k}={v}" for k, v in options.items()))
    ds = run(args.seeds, presets, **options)
    points = run_points(presets, args.bands, args.band_seeds, **options)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from numalab.storage import write_netcdf

    write_netcdf(ds, out / "forecast.nc")
    for p in ds.topology.values.tolist():
        print(table(ds, p), "\n")
        if points:
            print(band_table(ds, points, p), "\n")
    print(f"numalab {nl.__version__}; {time.time() - t:.0f} s wall; wrote {out}/forecast.nc")


if __name__ == "__main__":
    main()

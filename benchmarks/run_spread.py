"""Does the model's run-to-run spread match the machine's? (issue 24; not a test)

Every published LKP table prints each kernel's run-to-run spread (``± r%``, the population
stddev over the runs, hidden when at most 2 %). The model's spread over seeds is its prediction
of it. This simulates every table's tests and kernels on its machine's preset and prints, per
(machine, test, kernel) once, the model's spread beside the printed one and the
log-probability that the robot prints what it printed if the machine's runs scattered as the
model's do (:func:`numalab.stats.spread_vs_published`, :func:`numalab.stats.lkp_spread_logp`:
``runs · r² / σ²`` is chi-square with ``runs − 1`` degrees of freedom, 4 runs). The sum over
rows is the log-likelihood of the printed spreads under the model; rows where the printout has
probability 0 to double precision (the machine's runs vary far more than the model's, which may
not vary at all) are counted apart. It judges the
model's distribution, not its mean: a model whose convergence is a coin toss where the machine
repeats itself scores badly here even when its mean is right.

``--option NAME=VALUE`` (repeatable) adds a what-if column: every run with that engine option
(as ``numalab simulate --option``), e.g. ``first_arrival=False``.

``--sources TOPOLOGY`` asks instead which per-seed draw makes the spread: one test (the first
``--workload``, default numa01) under ``--profiles`` on that preset, with each draw fixed in turn
(the TIDs, ``pid_base``; node B, ``init_node``; both) and with ``first_arrival=False`` (no sweep
phases), printing each kernel's mean and coefficient of variation.

Run: ``python benchmarks/run_spread.py [--seeds 16] [--workload numa01] [--option NAME=VALUE]``
(16 seeds of every table's runs: about 30 s on a 2-core machine with the compiled engine; twice
with ``--option``), or ``python benchmarks/run_spread.py --sources 2s-128`` (about 30 s).
"""

from __future__ import annotations

import argparse
import math
import time

import numalab as nl
import numalab.fidelity as F
from numalab.commands.simulate import options_from_args


def spreads(seeds: int, workloads=None, **options) -> dict:
    """``{(machine, workload, kernel): row}`` of :func:`numalab.fidelity.spread_rows` over every
    published table (only ``workloads`` when given)."""
    published, sims = F.simulate_fidelity(seeds=seeds, **options)
    return {(r["machine"], r["workload"], r["kernel"]): r for r in F.spread_rows(published, sims)
            if not workloads or r["workload"] in workloads}


#: the draws of a seed, each fixed in turn (``--sources``); the values are arbitrary but fixed
SOURCES = {"default": {}, "pid_base fixed": {"pid_base": 12345}, "init_node fixed": {"init_node": 0},
           "both fixed": {"pid_base": 12345, "init_node": 0}, "first_arrival=False": {"first_arrival": False}}


def sources(topology: str, workload: str, profiles: list[str], seeds: int) -> str:
    """The ``--sources`` table (module docstring), markdown."""
    lines = ["| | " + " | ".join(profiles) + " |", "|" + "---|" * (len(profiles) + 1)]
    for name, opts in SOURCES.items():
        e = nl.simulate(workload, profiles, seeds=seeds, topology=topology, **opts)["elsp"]
        x = {p: e.sel(policy=p) for p in profiles}
        cells = [f"{float(v.mean()):.1f} s, {100 * float(v.std(ddof=1) / v.mean()):.1f} %" for v in x.values()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=16, help="seeds per run (default: %(default)s)")
    ap.add_argument("--workload", action="append", default=None,
                    help="only this test (repeatable; default: every test a table prints)")
    ap.add_argument("--option", action="append", default=None, metavar="NAME=VALUE",
                    help="a what-if column: an engine option for every run (numalab.engine.EngineOptions)")
    ap.add_argument("--sources", metavar="TOPOLOGY", default=None,
                    help="which per-seed draw makes the spread of one test on this preset (module docstring)")
    ap.add_argument("--profiles", default="rfc2023-p3,rfc2023-p4,rfc2023-p5",
                    help="kernels for --sources (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.seeds < 2:
        ap.error(f"--seeds={args.seeds} must be at least 2 (a spread needs two runs)")
    if args.sources:
        if args.option:
            ap.error("--sources fixes its own options; not with --option")
        t0 = time.time()
        workload = (args.workload or ["numa01"])[0]
        print(f"**{workload} on {args.sources}**, {args.seeds} seeds: mean elapsed time and coefficient of "
              "variation, with each per-seed draw fixed in turn\n")
        print(sources(args.sources, workload, args.profiles.split(","), args.seeds))
        print(f"\n{time.time() - t0:.0f} s wall")
        return
    whatif = options_from_args(args, ap)       # the CLI's reader of --option, checked by EngineOptions
    t0 = time.time()
    base = spreads(args.seeds, args.workload)
    other = spreads(args.seeds, args.workload, **whatif) if whatif else None
    label = ", ".join(f"{k}={v}" for k, v in whatif.items())
    head = "| machine | test | kernel | printed ± | model % | log p |"
    head += f" {label}: model % | log p |" if other else ""
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for key, r in sorted(base.items()):
        printed = "≤ 2" if math.isnan(r["published"]) else f"{r['published']:.0f}"
        cells = [*key, printed, f"{r['model']:.1f}", f"{r['log_p']:.2f}"]
        if other:
            cells += [f"{other[key]['model']:.1f}", f"{other[key]['log_p']:.2f}"]
        print("| " + " | ".join(cells) + " |")
    for name, rows in (("default", base), (label, other)):
        if rows:
            total, n, impossible = F.spread_total(list(rows.values()))
            print(f"\n{name}: log-likelihood of the printed spreads {total:.2f} over {n} rows"
                  f" ({impossible} impossible to double precision: the machine's runs vary far more than the "
                  f"model's)")
    print(f"\n{args.seeds} seeds; {time.time() - t0:.0f} s wall")


if __name__ == "__main__":
    main()

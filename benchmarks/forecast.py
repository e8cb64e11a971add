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

Run: ``python benchmarks/forecast.py [--seeds 8] [--out DIR]`` (one ``numalab.sweep``; about
two minutes on a 2-core machine with the compiled engine).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numalab as nl
from numalab.fidelity import job_elapsed, simulated_change

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


def run(seeds=8, presets=tuple(MACHINES)):
    grid = {"workload": list(WORKLOADS), "topology": list(presets), "profile": list(PROFILES)}
    return nl.sweep(grid, seeds=seeds, progress=True)


def table(ds, preset) -> str:
    d = ds.sel(topology=preset).rename(profile="policy")
    elsp = d["elsp"]
    job = job_elapsed(d.sel(workload=list(JOB))).to_dataset(name="job")
    given = GIVEN.get(preset, set()) | ({GIVEN_SPR_CUMULATIVE} if preset == "2s-224-spr" else set())
    head = "| step | " + " | ".join(WORKLOADS) + " | job | |"
    lines = [f"**{preset}** ({MACHINES[preset]}): %change ± paired std over {d.sizes['seed']} seeds",
             "", head, "|" + "---|" * (len(WORKLOADS) + 3)]
    base_cells = [f"{float(elsp.sel(workload=w, policy='6.4').mean()):.1f} s" for w in WORKLOADS]
    lines.append("| 6.4 (base) seconds | " + " | ".join(base_cells)
                 + f" | {float(job['job'].sel(policy='6.4').mean()):.0f} s | |")
    for new, base in STEPS:
        cells = []
        for w in WORKLOADS:
            pct, sd = simulated_change(d.sel(workload=w), base, new)
            cells.append(f"{float(pct):+.1f} ± {float(sd):.1f}")
        pct, sd = (float(x) for x in simulated_change(job, base, new, "job"))
        mark = "given" if (new, base) in given else ""
        lines.append(f"| {new} vs {base} | " + " | ".join(cells) + f" | {pct:+.1f} ± {sd:.1f} | {mark} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--out", default="forecast")
    ap.add_argument("--presets", default=",".join(MACHINES))
    args = ap.parse_args(argv)
    t = time.time()
    ds = run(args.seeds, args.presets.split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from numalab.storage import write_netcdf

    write_netcdf(ds, out / "forecast.nc")
    for p in ds.topology.values.tolist():
        print(table(ds, p), "\n")
    print(f"numalab {nl.__version__}; {time.time() - t:.0f} s wall; wrote {out}/forecast.nc")


if __name__ == "__main__":
    main()

"""Sweep throughput: one point at a time vs the batched local executor vs a 2-worker dask cluster.

    python benchmarks/bench_sweep.py [--quick] [--seeds 8] [--topology 2s-128] [--no-dask]
    python benchmarks/bench_sweep.py --kind futex          # the futex model instead

The grid (issue 7) on ``2s-128``: 5 policies (``6.12`` = history 2, ``6.12+N=4``, ``6.12+N=6``,
``6.12+N=8`` and the ``rfc2024-hot-shared`` profile) x 4 workloads (numa01,
numa01_THREAD_ALLOC, numa02, numa02_SMT) x 8 seeds = 160 points. Measured in one run, all with
``cache=False``:

* ``one-by-one`` -- every point in its own model call, in this process (``workers=1,
  batch_size=1``): what a loop over ``numalab.simulate`` calls costs;
* ``batched-1``  -- the same batches in this process (``workers=1``): the gain of batching alone;
* ``local``      -- ``nl.sweep`` defaults: points of one workload batched into vectorised
  calls, one process per core;
* ``dask``       -- the same batches on a ``LocalCluster(n_workers=2, threads_per_worker=1,
  processes=True)`` on loopback (cluster start-up timed separately, not included).

``local`` and ``dask`` run ``--repeat`` times (default 2) and the best run is reported; every
run is printed. The first dask run includes the workers importing numalab (the local executor
pays the same in its fresh processes on every run).

The three Datasets are checked to be identical. Targets: local >= 3x faster than one-by-one;
dask <= 1.5x the local time. ``--quick`` shortens every run (``workload_loops``) so the whole
benchmark takes about a minute on a 2-core box; the ratios then carry more fixed overhead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import xarray as xr

import numalab
from numalab.sweeps import run_sweep

WORKLOADS = ["numa01", "numa01_THREAD_ALLOC", "numa02", "numa02_SMT"]
POLICIES = ["6.12", "6.12+N=4", "6.12+N=6", "6.12+N=8", "rfc2024-hot-shared"]


def numa_grid(topology: str, quick: bool) -> dict:
    grid = {"workload": WORKLOADS, "policy": POLICIES, "topology": topology}
    if quick:
        grid["workload_loops"] = 2
    return grid


def futex_grid(topology: str, quick: bool) -> dict:
    return {"mode": ["classic", "numa", "private"], "threads": [16, 64, 128], "topology": topology,
            "buckets": [-1, 1024] if quick else [-1, 256, 1024, 4096]}


def timed(label, fn, repeat=1):
    """Best of ``repeat`` runs (the box is shared: the minimum is the least disturbed run)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t0)
    dt = min(times)
    runs = "" if repeat == 1 else f", runs {' '.join(f'{t:.2f}' for t in times)}"
    print(f"  {label:<11} {dt:8.2f} s  ({res.computed} points, {res.tasks} model calls, {res.executor}{runs}; "
          f"load {os.getloadavg()[0]:.1f})", flush=True)
    return res, dt, times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", default="numa", choices=["numa", "futex"])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--topology", default="2s-128")
    ap.add_argument("--quick", action="store_true", help="short runs (workload_loops=2)")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--repeat", type=int, default=2, help="runs of local and dask; the best is reported")
    ap.add_argument("--json", help="also write the figures to this JSON file")
    args = ap.parse_args(argv)

    grid = numa_grid(args.topology, args.quick) if args.kind == "numa" else futex_grid(args.topology, args.quick)
    ncpu = len(os.sched_getaffinity(0))
    print(f"numalab {numalab.__version__} sweep benchmark: kind={args.kind} grid={json.dumps(grid)} "
          f"seeds={args.seeds} on {ncpu} CPUs", flush=True)
    common = dict(seeds=args.seeds, cache=False, progress=False, kind=args.kind)

    # one by one, timed per value of the first parameter (workload / mode): a point's cost
    # differs by two orders of magnitude between numa01 and numa02
    first = next(iter(grid))
    parts, per_point = [], {}
    for value in grid[first]:
        t0 = time.perf_counter()
        part = run_sweep({**grid, first: [value]}, workers=1, batch_size=1, **common)
        dt = time.perf_counter() - t0
        per_point[value] = dt / part.points
        parts.append(part)
        print(f"  one-by-one  {first}={value}: {dt:7.2f} s = {per_point[value] * 1e3:8.1f} ms/point", flush=True)
    t_one = sum(p.seconds for p in parts)
    n_points = sum(p.points for p in parts)
    print(f"  {'one-by-one':<11} {t_one:8.2f} s  ({n_points} points, {n_points} model calls, in-process)", flush=True)

    serial, t_serial, _ = timed("batched-1", lambda: run_sweep(grid, workers=1, **common))
    local, t_local, local_runs = timed("local", lambda: run_sweep(grid, **common), args.repeat)
    xr.testing.assert_identical(serial.dataset, local.dataset)
    for value, part in zip(grid[first], parts):  # the one-by-one cells equal the batched ones
        xr.testing.assert_identical(
            part.dataset.drop_vars(first).drop_attrs(),
            local.dataset.sel({first: value}).drop_vars(first).drop_attrs(),
        )
    figures = {
        "kind": args.kind, "quick": args.quick, "points": local.points, "cpus": ncpu,
        "one_by_one_s": t_one, "per_point_s": {str(k): v for k, v in per_point.items()},
        "local_s": t_local, "local_runs_s": local_runs,
        "speedup_local_vs_one_by_one": t_one / t_local,
        "batched_1_worker_s": t_serial, "speedup_batching_alone": t_one / t_serial,
        "points_per_hour_local": local.points / t_local * 3600,
    }
    if not args.no_dask:
        from distributed import Client, LocalCluster

        t0 = time.perf_counter()
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster, Client(cluster) as client:
            t_start = time.perf_counter() - t0
            print(f"  {'cluster up':<11} {t_start:8.2f} s  (2 workers x 1 thread, not counted)", flush=True)
            dask, t_dask, dask_runs = timed("dask", lambda: run_sweep(grid, client=client, **common), args.repeat)
        xr.testing.assert_identical(dask.dataset, local.dataset)
        figures.update(dask_s=t_dask, dask_overhead_vs_local=t_dask / t_local, cluster_start_s=t_start,
                       dask_runs_s=dask_runs)
    print(f"one point alone: {t_one / n_points * 1e3:.1f} ms on average; local executor "
          f"{figures['speedup_local_vs_one_by_one']:.2f}x faster than one by one (target >= 3x); "
          f"{figures['points_per_hour_local']:.0f} points/hour here; batching alone "
          f"{figures['speedup_batching_alone']:.2f}x")
    if "dask_s" in figures:
        print(f"dask 2-worker LocalCluster / local: {figures['dask_overhead_vs_local']:.2f}x (target <= 1.5x)")
    print("results identical across executors: yes")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

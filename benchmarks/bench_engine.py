"""Speed and memory of the NUMA-balancing engine (figures printed; not a test).

Targets (issue 3): one replica of numa01_THREAD_ALLOC on "2s-128" (128 threads, 2 x 3 GiB,
2 MiB regions) for its whole simulated run in <= 10 s on one core; 16 replicas in one call
<= 4x the one-replica time; peak memory <= 2 GiB; and how the cost per simulated second grows
when the threads double and when the memory doubles.

Run: ``python benchmarks/bench_engine.py [--profile 6.12]``. Times are process CPU seconds
(the machine is shared; CPU time is what one core spends), ratios are measured in one run.
"""

from __future__ import annotations

import argparse
import resource
import time

import numalab as nl
from numalab.engine import run_batch


def timed(wl, pol, seeds):
    t0, c0 = time.perf_counter(), time.process_time()
    b = run_batch(wl, pol, seeds)
    return time.process_time() - c0, time.perf_counter() - t0, b


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="6.12")
    ap.add_argument("--repeat", type=int, default=2, help="take the best of N runs (default 2)")
    args = ap.parse_args(argv)
    pol = nl.Policy.profile(args.profile)
    topo = nl.Topology.preset("2s-128")
    wl = nl.workload("numa01_THREAD_ALLOC", topo)
    print(f"# {wl.summary()}, profile {pol.name}")

    one = min((timed(wl, pol, [0]) for _ in range(args.repeat)), key=lambda x: x[0])
    print(f"1 replica : cpu {one[0]:6.2f} s  wall {one[1]:6.2f} s  simulated {one[2].elsp[0]:7.1f} s  "
          f"steps {one[2].steps}   (target <= 10 s)")
    six = min((timed(wl, pol, list(range(16))) for _ in range(args.repeat)), key=lambda x: x[0])
    print(f"16 replicas: cpu {six[0]:6.2f} s  wall {six[1]:6.2f} s  ratio {six[0] / one[0]:.2f}x (target <= 4x); "
          f"per replica {six[0] / 16:.3f} s")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS  : {peak:7.0f} MiB (target <= 2048 MiB)")

    # cost per simulated second as threads and memory double (one replica each)
    print("scaling (cpu s per simulated s, one replica):")
    cases = [
        ("numa02, 64 threads", nl.workload("numa02", topo, threads=64)),
        ("numa02, 128 threads", nl.workload("numa02", topo, threads=128)),
        ("numa01_THREAD_ALLOC, 32 thr/proc", nl.workload("numa01_THREAD_ALLOC", topo, threads=32)),
        ("numa01_THREAD_ALLOC, 64 thr/proc", wl),
        ("numa01_THREAD_ALLOC, 3 GiB/proc", wl),
        ("numa01_THREAD_ALLOC, 6 GiB/proc", nl.workload("numa01_THREAD_ALLOC", topo, size_bytes=6 << 30)),
    ]
    for label, w in cases:
        cpu, wall, b = timed(w, pol, [0])
        print(f"  {label:<36} {cpu / b.elsp[0] * 1000:8.2f} ms/sim-s   ({cpu:.2f} s for {b.elsp[0]:.1f} sim-s, "
              f"{w.nregions} regions)")


if __name__ == "__main__":
    main()

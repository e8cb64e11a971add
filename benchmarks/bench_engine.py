"""Speed and memory of the NUMA-balancing engine (figures printed; not a test).

Targets (issue 3): one replica of numa01_THREAD_ALLOC on "2s-128" (128 threads, 2 x 3 GiB,
2 MiB regions) for its whole simulated run in <= 10 s on one core; 16 replicas in one call
<= 4x the one-replica time; peak memory <= 2 GiB; and how the cost per simulated second grows
when the threads double and when the memory doubles.

Run: ``python benchmarks/bench_engine.py [--profile 6.12] [--repeat N] [--breakdown] [--dt S]``. Times
are process CPU seconds (the machine is shared; CPU time is what one core spends), ratios are
measured in one run. ``--breakdown`` also prints where the CPU time of the 1- and 16-replica
runs goes, per engine stage (nested stages are included in their parents), with call counts.
It also prints the CPU time per replica as the batch grows (1, 4, 16, 64 seeds in one call):
where that levels off is the marginal cost of one more replica. ``--dt`` runs everything at
another engine step (the model's default is 0.05 s; results change with it). Last, one replica
on the larger presets the explorers offer (4s-144, 2s-224-spr), CPU time per engine step.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import resource
import time

import numalab as nl
from numalab.engine import balance, batch, faults, observe, placement, progress, run_batch, scan

#: engine phases timed by --breakdown: (module, function, label); nested ones are indented.
#: Phases call each other through their modules' globals, so patching the module attribute
#: times every call.
STAGES = [
    (batch, "draws", "draws (per-replica Generators)"),
    (progress, "refresh", "refresh (speeds, touch rates)"),
    (progress, "advance", "progress"),
    (progress, "record_locality", "locality series"),
    (scan, "scan_trigger", "scan triggering + task_numa_work"),
    (scan, "evaluate", "  per-VMA evaluation"),
    (scan, "decide_unchecked", "    policy.decide_unchecked"),
    (scan, "walk", "  VMA walks"),
    (faults, "hinting_faults", "hinting faults"),
    (faults, "handle_faults", "  fault handling"),
    (faults, "task_numa_placement", "    task_numa_placement"),
    (placement, "numa_migrate_preferred", "task placement"),
    (balance, "lb_moves", "load balancer"),
    (observe, "check_invariants", "invariants"),
    (observe, "sample", "time series"),
]


@contextlib.contextmanager
def stage_timer():
    """Wrap the engine stages with process-CPU-time accumulators; yields {label: [s, calls]}."""
    acc = collections.defaultdict(lambda: [0.0, 0])
    saved = []
    for obj, name, label in STAGES:
        f = getattr(obj, name)
        saved.append((obj, name, f))

        def wrapped(*a, _f=f, _label=label, **k):
            c0 = time.process_time()
            try:
                return _f(*a, **k)
            finally:
                acc[_label][0] += time.process_time() - c0
                acc[_label][1] += 1
        setattr(obj, name, wrapped)
    try:
        yield acc
    finally:
        for obj, name, f in saved:
            setattr(obj, name, f)


def breakdown(wl, pol):
    """Per-stage CPU time of one run with 1 and one with 16 replicas."""
    rows = {}
    for n in (1, 16):
        with stage_timer() as acc:
            cpu, _, b = timed(wl, pol, list(range(n)))
        rows[n] = (cpu, b.steps, dict(acc))
    print(f"breakdown (cpu s, calls; stage timers add overhead): "
          f"1 replica {rows[1][0]:.2f} s / {rows[1][1]} steps, 16 replicas {rows[16][0]:.2f} s / {rows[16][1]} steps")
    for _, _, label in STAGES:
        a1, a16 = rows[1][2].get(label, (0.0, 0)), rows[16][2].get(label, (0.0, 0))
        print(f"  {label:<36} {a1[0]:6.2f} s {a1[1]:6d}   {a16[0]:6.2f} s {a16[1]:6d}")


def timed(wl, pol, seeds, **options):
    t0, c0 = time.perf_counter(), time.process_time()
    b = run_batch(wl, pol, seeds, **options)
    return time.process_time() - c0, time.perf_counter() - t0, b


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="6.12")
    ap.add_argument("--repeat", type=int, default=2, help="take the best of N runs (default 2)")
    ap.add_argument("--breakdown", action="store_true", help="also print CPU time per engine stage")
    ap.add_argument("--dt", type=float, default=None, help="engine step, s (default: the engine's 0.05)")
    args = ap.parse_args(argv)
    opt = {} if args.dt is None else {"dt": args.dt}
    pol = nl.Policy.profile(args.profile)
    topo = nl.Topology.preset("2s-128")
    wl = nl.workload("numa01_THREAD_ALLOC", topo)
    print(f"# {wl.summary()}, profile {pol.name}" + (f", dt {args.dt} s" if opt else ""))

    one = min((timed(wl, pol, [0], **opt) for _ in range(args.repeat)), key=lambda x: x[0])
    print(f"1 replica : cpu {one[0]:6.2f} s  wall {one[1]:6.2f} s  simulated {one[2].elsp[0]:7.1f} s  "
          f"steps {one[2].steps}   (target <= 10 s)")
    six = min((timed(wl, pol, list(range(16)), **opt) for _ in range(args.repeat)), key=lambda x: x[0])
    print(f"16 replicas: cpu {six[0]:6.2f} s  wall {six[1]:6.2f} s  ratio {six[0] / one[0]:.2f}x (target <= 4x); "
          f"per replica {six[0] / 16:.3f} s")
    # the same seed 16 times: every replica scans and faults in the same steps, so this is the
    # batch cost with perfectly aligned events; the gap to the line above is what 16 seeds'
    # events falling in different steps cost (each step's scans and faults are one call)
    same = min((timed(wl, pol, [0] * 16, **opt) for _ in range(args.repeat)), key=lambda x: x[0])
    print(f"16 x seed 0: cpu {same[0]:6.2f} s  ratio {same[0] / one[0]:.2f}x (events aligned across replicas)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS  : {peak:7.0f} MiB (target <= 2048 MiB; up to the 16-replica runs)")
    # the marginal cost of a replica: CPU time per replica as the batch grows (1 and 16 seeds
    # are the runs above)
    cpu_of = {1: one[0], 16: six[0]}
    for n in (4, 64):
        cpu_of[n], _, b = timed(wl, pol, list(range(n)), **opt)
    per = [f"{n} seeds {cpu_of[n] / n:.3f} s" for n in sorted(cpu_of)]
    print("per replica: " + ", ".join(per) + f"  (mean simulated {b.elsp.mean():.1f} s over 64 seeds; "
          f"peak RSS now {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)")
    if args.breakdown:
        breakdown(wl, pol)

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

    # the larger presets the explorers offer (HistoryExplorer's first answer is one replica):
    # 4s-144's four nodes and 2s-224-spr's 52k access entries weigh on the rate refresh
    print("large presets (numa01_THREAD_ALLOC, one replica, best of --repeat):")
    for name in ("4s-144", "2s-224-spr"):
        w = nl.workload("numa01_THREAD_ALLOC", nl.Topology.preset(name))
        cpu, wall, b = min((timed(w, pol, [0], **opt) for _ in range(args.repeat)), key=lambda x: x[0])
        print(f"  {name:<12} cpu {cpu:6.2f} s  wall {wall:6.2f} s  {b.steps} steps  "
              f"{cpu / b.steps * 1e6:6.0f} us/step  (simulated {b.elsp[0]:.1f} s, {w.nthreads} threads, "
              f"{w.entry_class.size} access entries)")


if __name__ == "__main__":
    main()

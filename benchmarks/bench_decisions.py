"""Task x VMA scan decisions per second: vectorised decide() vs the scalar reference vs numpy's floor.

    python benchmarks/bench_decisions.py [--tasks 1024] [--vmas 4096] [--windows 8] [--profile 6.12]

Three measurements in one run, on the same random state (1024 tasks x 4096 VMAs x 8 windows
by default):

* ``decide``    -- numalab.policy.decide in task x VMA matrix mode (best of --repeat runs);
* ``reference`` -- numalab.reference.policy.visit, one (task, VMA) at a time, timed on a
  subsample (--ref-tasks x --ref-vmas) and scaled to the full matrix (it would take minutes);
* ``floor``     -- a bare ``numpy.bitwise_and`` over a uint64 array of tasks x VMAs elements
  (allocating its result, as decide does): the speed numpy itself sets.

Targets (issue 2): decide >= 100x the reference and within 4x of the floor.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from numalab import history as H
from numalab.policy import Policy, decide
from numalab.reference import policy as RP


def make_state(rng, policy, ntasks, nvmas):
    tids = rng.choice(np.arange(1000, 1000 + 4 * ntasks, dtype=np.uint32), size=ntasks, replace=False)
    pa, idx = H.empty((nvmas,), policy.windows, policy.width)
    for _ in range(policy.windows):  # a few faulting tasks per VMA per window
        faults = 3 * nvmas
        H.set_pid_bits(pa, idx, (rng.integers(0, nvmas, faults),), rng.choice(tids, faults),
                       width=policy.width, rotation=policy.rotation)
        H.rotate(pa, idx, rng.random(nvmas) < 0.7, rotation=policy.rotation)
    seq = 20
    state = dict(
        pids_active=pa, idx=idx, numa_scan_seq=seq, start_scan_seq=rng.integers(0, seq + 1, nvmas),
        prev_scan_seq=seq - rng.integers(0, 30, nvmas), scan_offset=512 * nvmas // 2,
        vm_start=np.arange(nvmas) * 512, vm_end=np.arange(1, nvmas + 1) * 512,
        next_scan=rng.integers(0, 1100, nvmas), now=1000, nr_threads=ntasks,
        vma_scan_select=rng.integers(0, 3, nvmas),
    )
    return tids, state


def best_of(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1024)
    ap.add_argument("--vmas", type=int, default=4096)
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--profile", default="6.12")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--ref-tasks", type=int, default=16)
    ap.add_argument("--ref-vmas", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    policy = Policy.profile(args.profile, history=args.windows)
    rng = np.random.default_rng(args.seed)
    tids, state = make_state(rng, policy, args.tasks, args.vmas)
    n = args.tasks * args.vmas

    decide(policy, scanner_tid=tids, **state)  # warm-up
    t_dec = best_of(lambda: decide(policy, scanner_tid=tids, **state), args.repeat)

    words = rng.integers(0, 2**63, size=(args.tasks, args.vmas), dtype=np.uint64)
    mask = np.uint64(1 << 17)
    t_floor = best_of(lambda: np.bitwise_and(words, mask), args.repeat)

    # scalar reference on a subsample, scaled to the full matrix
    rt, rv = min(args.ref_tasks, args.tasks), min(args.ref_vmas, args.vmas)
    hists = [[[int(w) for w in win] for win in state["pids_active"][v]] for v in range(rv)]

    def run_reference():
        for t in range(rt):
            tid = int(tids[t])
            for v in range(rv):
                RP.visit(policy, hists[v], int(state["idx"][v]), tid, numa_scan_seq=state["numa_scan_seq"],
                         start_scan_seq=int(state["start_scan_seq"][v]),
                         prev_scan_seq=int(state["prev_scan_seq"][v]), scan_offset=state["scan_offset"],
                         vm_start=int(state["vm_start"][v]), next_scan=int(state["next_scan"][v]),
                         now=state["now"], nr_threads=state["nr_threads"], forced=False,
                         vma_scan_select=int(state["vma_scan_select"][v]), vm_end=int(state["vm_end"][v]))

    t_ref_sub = best_of(run_reference, 2)
    t_ref = t_ref_sub * n / (rt * rv)

    print(f"policy {policy.name}: {args.tasks} tasks x {args.vmas} VMAs x {policy.windows} windows "
          f"= {n:,} decisions")
    print(f"  decide (vectorised)   {t_dec * 1e3:9.2f} ms   {n / t_dec:14,.0f} decisions/s")
    print(f"  reference (scalar)    {t_ref * 1e3:9.0f} ms   {n / t_ref:14,.0f} decisions/s"
          f"   (timed on {rt}x{rv} = {rt * rv:,} decisions, scaled x{n / (rt * rv):.0f})")
    print(f"  floor (numpy AND)     {t_floor * 1e3:9.2f} ms   {n / t_floor:14,.0f} elements/s")
    print(f"  speed-up over reference: {t_ref / t_dec:8.0f}x   (target >= 100x)")
    print(f"  time / floor:            {t_dec / t_floor:8.2f}x   (target <= 4x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

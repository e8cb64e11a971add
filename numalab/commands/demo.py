"""``numalab demo``: a small built-in demonstration of the access-PID scan filter.

Builds one synthetic process -- per-thread stacks (touched only by their own thread), a buffer
split into VMAs each worked on by one thread (the "disjoint VMA" case), a few VMAs every thread
touches, and library mappings faulted once, long ago -- replays the same fault history into
each kernel profile's ``pids_active`` windows, and prints which fraction of (scanning thread,
VMA) pairs each profile lets through and why the rest are skipped.
"""

from __future__ import annotations

import argparse

HELP = "print a table of how kernel profiles' VMA scan filters treat a synthetic process"
DEFAULT_PROFILES = "pre-6.4,6.4,6.8,6.12,rfc2023-p6,rfc2024-hot-shared,rfc2024-pid-bits"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("demo", help=HELP, description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--threads", default="4,16,64",
                   help="comma-separated thread counts of the synthetic process (default: %(default)s)")
    p.add_argument("--vmas", type=int, default=32,
                   help="number of buffer VMAs, each worked on by one thread (default: %(default)s)")
    p.add_argument("--profiles", default=DEFAULT_PROFILES,
                   help="comma-separated policies: profiles or names such as 6.12+N=4 (default: %(default)s; see Policy.profiles())")
    p.add_argument("--history", type=int, default=None,
                   help="override every profile's number of PID windows N (1-64)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the fault history (default: 0)")
    p.set_defaults(command="demo")
    return p


def _parse_ints(name: str, text: str) -> list[int]:
    from ..errors import NumalabValueError, check_int, check_list

    def one(item):
        try:
            return check_int(f"--{name}", int(item), lo=1, hi=4096)
        except ValueError as exc:
            if isinstance(exc, NumalabValueError):
                raise
            raise NumalabValueError(f"--{name}={text!r}: {item!r} is not an integer; allowed: comma-separated "
                                    "integers in [1, 4096]") from None

    return check_list(f"--{name}", text, one)


def fault_history(rng, nthreads: int, nbuffer: int, nwindows: int = 4):
    """Synthetic faults, one list of (vma, tid) per past window (oldest first), and VMA kinds."""
    import numpy as np

    tids = 1000 + np.arange(nthreads)  # consecutive TIDs, as a freshly started process gets
    kinds = ["stack"] * nthreads + ["buffer"] * nbuffer + ["shared"] * 4 + ["lib"] * 6
    stack0, buf0, shared0, lib0 = 0, nthreads, nthreads + nbuffer, nthreads + nbuffer + 4
    owner = rng.integers(0, nthreads, nbuffer)
    windows = []
    for w in range(nwindows):
        vma, tid = [], []
        busy = rng.random(nthreads) < 0.7  # a thread faults in its stack in 70% of windows
        vma += list(stack0 + np.flatnonzero(busy)); tid += list(tids[busy])  # noqa: E702
        worked = rng.random(nbuffer) < 0.6
        vma += list(buf0 + np.flatnonzero(worked)); tid += list(tids[owner[worked]])  # noqa: E702
        for s in range(4):  # shared VMAs: a few random threads each window
            who = rng.choice(nthreads, size=min(nthreads, 3), replace=False)
            vma += [shared0 + s] * len(who); tid += list(tids[who])  # noqa: E702
        if w == 0:  # libraries: the main thread faulted once, at start-up
            vma += list(range(lib0, lib0 + 6)); tid += [tids[0]] * 6  # noqa: E702
        windows.append((np.array(vma, dtype=np.int64), np.array(tid, dtype=np.int64)))
    return tids, kinds, windows


def run(args) -> int:
    import numpy as np

    from .. import history as H
    from ..errors import check_int, check_list, check_seed
    from ..policy import REASONS, SKIP_REASONS, Policy, decide

    check_seed("--seed", args.seed)
    if args.history is not None:
        check_int("--history", args.history, lo=1, hi=64)
    threads = _parse_ints("threads", args.threads)
    nbuffer = check_int("--vmas", args.vmas, lo=1, hi=65536)
    names = check_list("--profiles", str(args.profiles))
    # pre-6.4 has no PID windows to resize: --history leaves it as it is
    policies = [Policy.parse(n, history=None if n == "pre-6.4" else args.history) for n in names]

    cols = ["scanned", "own_pid", "hot", "shared", "early", "other+", "pid_inact", "disj_wait", "other-"]
    print("numalab demo: share of (scanning thread, VMA) pairs, in %, that task_numa_work would scan")
    print("  process: one stack per thread, --vmas buffer VMAs each worked on by one thread, 4 VMAs a few")
    print("  threads share, 6 library VMAs faulted once at start-up; pass 10, scan delay over, nothing")
    print("  partly scanned. other+ = other allow rules, other- = other skips.\n")
    header = f"{'profile':<24}{'threads':>8}{'VMAs':>6}" + "".join(f"{c:>10}" for c in cols)
    print(header)
    print("-" * len(header))
    for nthreads in threads:
        rng = np.random.default_rng(args.seed)
        tids, kinds, windows = fault_history(rng, nthreads, nbuffer)
        nvma = len(kinds)
        for policy in policies:
            pa, idx = H.empty((nvma,), policy.windows, policy.width)
            for i, (vma, tid) in enumerate(windows):
                if i:
                    H.rotate(pa, idx, rotation=policy.rotation)
                H.set_pid_bits(pa, idx, (vma,), tid, width=policy.width, rotation=policy.rotation)
            vm_start = np.arange(nvma, dtype=np.int64) * 4096  # pages; 16 MiB apart
            _, reason, _ = decide(
                policy, pids_active=pa, idx=idx, scanner_tid=tids, numa_scan_seq=10, start_scan_seq=0,
                prev_scan_seq=9, scan_offset=0, vm_start=vm_start, vm_end=vm_start + 2048, next_scan=0,
                now=1, nr_threads=nthreads, vma_scan_select=np.zeros(nvma, np.int64),
            )
            share = {r: float(np.mean(reason == i)) * 100 for i, r in enumerate(REASONS)}
            scanned = sum(v for r, v in share.items() if r not in SKIP_REASONS)
            named = {"own_pid", "hot", "shared", "early_passes", "pid_inactive", "disjoint_wait"}
            other_allow = sum(v for r, v in share.items() if r not in SKIP_REASONS and r not in named)
            other_skip = sum(v for r, v in share.items() if r in SKIP_REASONS and r not in named)
            row = [scanned, share["own_pid"], share["hot"], share["shared"], share["early_passes"], other_allow,
                   share["pid_inactive"], share["disjoint_wait"], other_skip]
            print(f"{policy.name:<24}{nthreads:>8}{nvma:>6}" + "".join(f"{v:>10.1f}" for v in row))
        print()
    print("Profiles: " + "; ".join(f"{p.name} = {', '.join(p.rules) or 'no filter'}" for p in policies))
    return 0

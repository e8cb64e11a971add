"""Which writer takes a protected huge page's fault when numa01's writers sweep one buffer? A
trace on this machine's hardware (figures printed; not a test; docs/fidelity.md, "numa01's
writers as a convoy").

The engine gives a swept region's hinting fault to the first writer to reach it (first arrival,
``engine.faults.sweep_faults``): a writer arriving behind finds the PMD restored and records
nothing, so consecutive protected huge pages go to the same writer until it meets another, and a
window of ``pids_active`` records few PIDs. Writers that sweep as a convoy (they leave numa01's
init together and stay bunched, ``benchmarks/convoy.py``) reach each page within a short time of
each other. Is the fault then a race that any of them may win (many PIDs), or does the convoy's
leader keep taking it (few)?

This compiles ``benchmarks/fault_race.c``, a user-space stand-in for the hinting fault: writers
``bzero`` a shared buffer in whole sweeps; a scanner thread makes the next ``--scan-mib`` of it
``PROT_NONE`` every ``--scan-ms`` (task_numa_work); the first writer to touch a protected 2 MiB
chunk claims it (compare-and-swap: the kernel's "is the PMD still the one I read"), spends
``--fault-us`` (the fault's kernel time; a 2 MiB migration takes a few hundred) and restores it;
a writer that loses retries its access and records nothing. Per run it prints how many faults
each writer took (with more than 4 writers: how many took any, and the largest share), and the
**switch rate**: the share of consecutive faults (in the order they
were claimed) taken by a different writer than the one before. If the first writer were a fresh
race every time, the switch rate would be ``1 - sum(share²)`` ("random"); if the writer nearest
behind takes every page ahead of it, it is near 0.

``together``: the writers start at the buffer's beginning at the same moment (numa01);
``apart``: writer i starts i/NT of the way in (the engine's independent phases)::

    python benchmarks/fault_race.py                  # 512 MiB, 20 sweeps, 2 writers, 3 runs
    python benchmarks/fault_race.py --fault-us 0,5,100,300 --runs 2
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from convoy import build   # benchmarks/ is on sys.path when run as a script

MODES = {"together": 0, "apart": 2}


def run(exe: Path, size_mib, loops, threads, mode, scan_mib, scan_ms, fault_us) -> tuple[list[int], str]:
    """The faulting writer of every fault, in the order they were claimed, and the summary line."""
    out = subprocess.run([str(exe), *map(str, (size_mib, loops, threads, mode, scan_mib, scan_ms, fault_us))],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    return [int(line.split()[2]) for line in out if line.startswith("f ")], out[-1]


def switch_rate(writers: list[int]) -> tuple[float, float]:
    """(share of consecutive faults by a different writer; the same if each fault's writer were
    drawn afresh with the observed shares)."""
    if len(writers) < 2:
        return float("nan"), float("nan")
    observed = sum(a != b for a, b in zip(writers, writers[1:])) / (len(writers) - 1)
    n = len(writers)
    return observed, 1.0 - sum((c / n) ** 2 for c in Counter(writers).values())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mib", type=int, default=512, help="buffer MiB (default 512)")
    p.add_argument("--loops", type=int, default=20, help="sweeps per writer (default 20)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="writers (default: one per CPU)")
    p.add_argument("--scan-mib", type=int, default=64, help="MiB protected per scan (default 64)")
    p.add_argument("--scan-ms", type=int, default=10, help="ms between scans (default 10)")
    p.add_argument("--fault-us", default="5,100", help="fault costs to try, µs, comma-separated (default 5,100)")
    p.add_argument("--runs", type=int, default=3, help="runs per mode and cost (default 3)")
    args = p.parse_args(argv)
    if args.threads < 2:
        p.error(f"--threads={args.threads}: at least 2 writers race")
    costs = [int(x) for x in args.fault_us.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(Path(tmp), "fault_race.c")
        print(f"{args.threads} writers, {args.size_mib} MiB, {args.loops} sweeps, {args.scan_mib} MiB protected "
              f"every {args.scan_ms} ms, {os.cpu_count()} CPUs")
        print(f"{'mode':<9} {'fault µs':>8} {'run':>3} {'faults':>7} {'shares':<18} {'switch':>7} {'random':>7}")
        for fault_us in costs:
            for name, mode in MODES.items():
                for i in range(args.runs):
                    writers, _ = run(exe, args.size_mib, args.loops, args.threads, mode, args.scan_mib,
                                     args.scan_ms, fault_us)
                    n = max(1, len(writers))
                    c = Counter(writers)
                    if args.threads <= 4:
                        shares = " ".join(f"{c[t] / n:.2f}" for t in range(args.threads))
                    else:                      # many writers: how many faulted, the largest share
                        shares = f"{len(c)} faulted, max {max(c.values(), default=0) / n:.2f}"
                    obs, rnd = switch_rate(writers)
                    print(f"{name:<9} {fault_us:>8} {i:>3} {len(writers):>7} {shares:<18} {obs:7.3f} {rnd:7.3f}",
                          flush=True)


if __name__ == "__main__":
    main()

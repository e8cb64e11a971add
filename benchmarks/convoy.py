"""Do numa01's writers sweep the shared buffer bunched or apart? A trace on this machine's
hardware (figures printed; not a test; docs/fidelity.md, "numa01's loop: bunched writers").

The engine charges each numa01 thread its own DRAM traffic for its loop sweeps, which holds
when the threads write far apart in the buffer; ``engine.batch._sweep_phase`` therefore starts
each thread's sweep at an independent uniform phase. numa01's threads, though, leave their init
sweep together. This compiles ``benchmarks/sweep_convoy.c`` (numa01's loop: whole-buffer
``bzero`` sweeps, unsynchronised) with the system's C compiler and runs, ``--runs`` times each:

* ``together``: one shared buffer, every thread starting at its beginning at the same moment;
* ``apart``: one shared buffer, thread i starting i/NT of the way in (the engine's assumption);
* ``private``: a buffer per thread (numa01_THREAD_ALLOC's loop).

It prints per run the steady time of one sweep per thread (median over the sweeps after the
first, which on a VM includes the hypervisor's first-write cost) and, for two threads or more,
how far apart the threads' sweeps end -- as a fraction of a sweep, after the first sweep and
after the last (0: in lockstep, 0.5: half a buffer apart)::

    python benchmarks/convoy.py                      # 1 GiB, 12 sweeps, one thread per CPU, 3 runs
    python benchmarks/convoy.py --threads 2 --size-mib 2048 --loops 20
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = {"together": 0, "apart": 2, "private": 1}


def build(out_dir: Path, source: str = "sweep_convoy.c") -> Path:
    """Compile ``benchmarks/<source>`` with the system's C compiler into ``out_dir``."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        sys.exit(f"{Path(sys.argv[0]).name}: no C compiler (cc or gcc) on PATH")
    exe = out_dir / Path(source).stem
    subprocess.run([cc, "-O2", "-pthread", "-o", str(exe), str(HERE / source)], check=True)
    return exe


def run(exe: Path, size_mib: int, loops: int, threads: int, mode: int) -> list[list[float]]:
    out = subprocess.run([str(exe), str(size_mib), str(loops), str(threads), str(mode)], check=True,
                         capture_output=True, text=True).stdout
    return [[float(x) for x in line.split()[1:]] for line in out.splitlines() if line.startswith("t")]


def summary(ends: list[list[float]]) -> tuple[float, float, float]:
    """(steady seconds per sweep, median over threads; phase gap after the first and after the
    last sweep, as a fraction of a sweep: the spread of the threads' end times, wrapped)."""
    steady = statistics.median(statistics.median(b - a for a, b in zip(e[1:], e[2:])) for e in ends)

    def gap(k):
        t = [e[k] for e in ends]
        frac = [((x - t[0]) / steady) % 1.0 for x in t]
        return max(min(f, 1.0 - f) for f in frac)

    return steady, gap(0), gap(-1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mib", type=int, default=1024, help="buffer MiB (default 1024)")
    p.add_argument("--loops", type=int, default=12, help="sweeps per thread (default 12)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="threads (default: one per CPU)")
    p.add_argument("--runs", type=int, default=3, help="runs per mode (default 3)")
    args = p.parse_args(argv)
    if args.loops < 3:
        p.error(f"--loops={args.loops}: at least 3 (the first sweep is not steady)")
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(Path(tmp))
        print(f"{args.threads} threads, {args.size_mib} MiB, {args.loops} sweeps, {os.cpu_count()} CPUs")
        print(f"{'mode':<9} {'run':>3} {'s/sweep':>8} {'GB/s/thread':>12} {'gap first':>10} {'gap last':>9}")
        for name, mode in MODES.items():
            for i in range(args.runs):
                steady, g0, g1 = summary(run(exe, args.size_mib, args.loops, args.threads, mode))
                rate = args.size_mib * 2**20 / steady / 1e9
                gaps = f"{g0:10.2f} {g1:9.2f}" if name != "private" else f"{'-':>10} {'-':>9}"
                print(f"{name:<9} {i:>3} {steady:8.4f} {rate:12.2f} {gaps}", flush=True)


if __name__ == "__main__":
    main()

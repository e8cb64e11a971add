"""Does this machine write zeros faster than data? One thread's libc ``memset`` over a buffer far
larger than the caches, by what it writes and what the buffer held, beside a read (not a test).

autonuma-benchmark's loops are ``bzero`` (numa01, numa01_THREAD_ALLOC, numa02, numa02_SMT write
zeros over zeros after their first pass), so the store stream the model's ``write_efficiency`` and
``thread_bw_GBps`` stand for is a zero fill. ``numalab probe`` measures that fill and a fill of
ones (``fill_nonzero_GBps``); this script separates the two ways a machine can make zeros cheap:

* a zero fill fast **whatever the buffer held** (``0 over 1`` as fast as ``0 over 0``): the write
  of a zero line itself is cheaper, e.g. it skips the read-for-ownership a data store pays;
* fast **only over zeros** (``0 over 0`` fast, ``0 over 1`` not): an unchanged line's write-back
  is dropped (silent-store, or "zero-store", elimination).

A data fill that runs at about the read rate is the read-for-ownership bound (every line read,
then written back). Each cell is the best of ``--repeats`` fills, the buffer set to the old
value before each (GB/s = 1e9 B/s).

Run: ``python benchmarks/zero_fill.py [--mib 1024] [--repeats 4]`` (a few seconds).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from numalab.machine import _memset

CASES = (("0 over 0", 0, 0), ("0 over 1", 1, 0), ("1 over 1", 1, 1), ("1 over 0", 0, 1), ("2 over 1", 1, 2))


def _best_GBps(op, nbytes: int, repeats: int, before=lambda: None) -> float:
    """The best rate of ``repeats`` timed calls of ``op``, ``before`` run untimed ahead of each."""
    best = 0.0
    for _ in range(repeats):
        before()
        t0 = time.perf_counter()
        op()
        best = max(best, nbytes / (time.perf_counter() - t0) / 1e9)
    return best


def measure(nbytes: int, repeats: int) -> dict:
    """Best GB/s of each (new over old) fill and of an int64 read, one thread, ``nbytes`` bytes."""
    buf = np.empty(nbytes, np.uint8)
    _memset(buf, 0)                                   # first touch: every page placed here
    out = {name: _best_GBps(lambda new=new: _memset(buf, new), nbytes, repeats, lambda old=old: _memset(buf, old))
           for name, old, new in CASES}
    out["read"] = _best_GBps(lambda: np.add.reduce(buf.view(np.int64)), nbytes, repeats)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=1024, help="buffer size, MiB (default 1024: beyond any LLC)")
    ap.add_argument("--repeats", type=int, default=4)
    a = ap.parse_args(argv)
    if a.mib < 64 or a.repeats < 1:
        ap.error(f"--mib={a.mib} (at least 64) and --repeats={a.repeats} (at least 1)")
    r = measure(a.mib << 20, a.repeats)
    print(f"one thread, {a.mib} MiB, best of {a.repeats}:")
    for name, v in r.items():
        print(f"  {name:9s} {v:7.1f} GB/s   {v / r['read']:5.2f} x read")
    zero_any = r["0 over 1"] / r["1 over 1"]
    zero_same = r["0 over 0"] / r["0 over 1"]
    print(f"zeros over data / data over data: {zero_any:.2f}   zeros over zeros / zeros over data: {zero_same:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

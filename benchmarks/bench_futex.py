"""Speed of the futex model: the issue-6 sweep, 17 bucket counts (2 ... 131072) x 3 modes x 4
thread counts x 8 seeds = 1632 points of perf-bench-futex-hash (1024 futexes per thread) on the
2s-128 topology, solved by MVA. Target: <= 30 s on the 2-core dev machine.

    python benchmarks/bench_futex.py [--plot FILE.png] [--threads 8,32,64,128]

Prints the wall time (and a figure if asked). Not a test: timings are measured, never asserted.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="8,32,64,128")
    ap.add_argument("--topology", default="2s-128")
    ap.add_argument("--plot", default=None)
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]

    t0 = time.perf_counter()
    import numalab as nl

    nl.futex.sweep(buckets=[2, 4], mode="private", threads=8, seeds=1, topology=args.topology)  # imports, warm-up
    t1 = time.perf_counter()
    ds = nl.futex.sweep(buckets=[2 ** k for k in range(1, 18)], mode=list(nl.futex.MODES), threads=threads,
                        seeds=8, topology=args.topology)
    t2 = time.perf_counter()
    points = ds.ops_per_s.size
    print(f"futex sweep: {ds.sizes['buckets']} buckets x {ds.sizes['mode']} modes x {ds.sizes['threads']} "
          f"thread counts x {ds.sizes['seed']} seeds = {points} points on {args.topology}: "
          f"{t2 - t1:.1f} s ({1e3 * (t2 - t1) / points:.1f} ms/point; imports + warm-up {t1 - t0:.1f} s)")
    mean = ds.ops_per_s_per_thread.mean("seed")
    for t in threads:
        row = mean.sel(threads=t)
        print(f"  {t:4d} threads: ops/s/thread at 2 / 1024 / 131072 buckets: " + "; ".join(
            f"{m} {float(row.sel(mode=m, buckets=2)):.3g} / {float(row.sel(mode=m, buckets=1024)):.3g} / "
            f"{float(row.sel(mode=m, buckets=131072)):.3g}" for m in nl.futex.MODES))
    if args.plot:
        from numalab.plots import futex_buckets, save

        save(futex_buckets(ds.sel(threads=[threads[0], threads[-1]])), args.plot, dpi=120)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()

"""How long an explorer takes from a knob change to the new figure, at full size.

Drives the explorers as the browser does (``live=True``: the change is handed to the worker
thread, the first answer is drawn as soon as it is ready, then refined) and prints, for each
change, the seconds to the first answer and to the final one (``Explorer.timings``: from the
change to the new summary + PNG being set on the widgets, rendering included).

Views measured (the defaults of the explorers, full size):

* ``HistoryExplorer()``: numa01_THREAD_ALLOC on 2s-128 (2 x 64 threads, 3 GiB per process),
  v6.12 against v6.12 with N = 8, 8 seeds;
* ``FutexExplorer(threads=128)``: perf bench futex hash, private hash, 2 seeds, 14 bucket counts.

Run::

    PYTHONPATH=. python benchmarks/bench_explorers.py            # both
    PYTHONPATH=. python benchmarks/bench_explorers.py --only futex

Numbers depend on the machine and its load (the engine is single-threaded numpy).
"""

from __future__ import annotations

import argparse
import time


def _measure(ex, label, **change):
    ex.timings.clear()
    t0 = time.perf_counter()
    ex.set(**change)
    ex.wait(600)
    wall = time.perf_counter() - t0
    shown = [t for t in ex.timings if all(t["params"].get(k) == v for k, v in change.items())]
    first = shown[0]["seconds"] if shown else float("nan")
    final = shown[-1]["seconds"] if shown else float("nan")
    note = "cached" if len(shown) == 1 and final < 0.5 else ("first answer + refined" if len(shown) > 1 else "")
    if ex.error:
        note = f"refused: {ex.error[:60]}"
    print(f"  {label:<44} first {first:6.2f} s   final {final:6.2f} s   ({note}; wall {wall:.2f} s)")
    return first, final


def bench_history():
    from numalab.widgets import HistoryExplorer

    t0 = time.perf_counter()
    ex = HistoryExplorer(live=True)  # numa01_THREAD_ALLOC, 2s-128, 6.12 vs N=8, 8 seeds, full size
    print(f"HistoryExplorer() full size, 8 seeds: opened in {time.perf_counter() - t0:.2f} s "
          f"({ex.runs} runs, synchronous)")
    out = {}
    out["history 8 -> 4 (one new policy)"] = _measure(ex, "history 8 -> 4 (one new policy, 8 seeds)", history=4)
    out["history 4 -> 8 (cached)"] = _measure(ex, "history 4 -> 8 (cached)", history=8)
    out["profile 6.12 -> 6.8 (two new policies)"] = _measure(ex, "profile 6.12 -> 6.8 (two new policies)",
                                                            profile="6.8")
    out["topology 2s-128 -> 2s-ivb-40"] = _measure(ex, "topology 2s-128 -> 2s-ivb-40 (two new policies)",
                                                  topology="2s-ivb-40")
    out["seeds 8 -> 4 (cached)"] = _measure(ex, "seeds 8 -> 4 (cached subset)", seeds=4)
    return out


def bench_futex():
    from numalab.widgets import FutexExplorer

    t0 = time.perf_counter()
    ex = FutexExplorer(threads=128, live=True)
    print(f"FutexExplorer(threads=128), 2 seeds: opened in {time.perf_counter() - t0:.2f} s")
    out = {}
    out["threads 128 -> 96"] = _measure(ex, "threads 128 -> 96 (new curves)", threads=96)
    out["buckets 256 -> 1024"] = _measure(ex, "buckets 256 -> 1024 (same curves)", buckets=1024)
    out["mode private -> numa"] = _measure(ex, "mode private -> numa (new curves)", mode="numa")
    out["threads 96 -> 128 (cached)"] = _measure(ex, "threads 96 -> 128 (cached)", threads=128)
    out["seeds 2 -> 4"] = _measure(ex, "seeds 2 -> 4 (two more curves)", seeds=4)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["history", "futex"])
    args = parser.parse_args(argv)
    if args.only in (None, "futex"):
        bench_futex()
    if args.only in (None, "history"):
        bench_history()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

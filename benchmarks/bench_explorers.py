"""How long an explorer takes from a knob change to the new figure, at full size.

Drives the explorers as the browser does (``live=True``: the change is handed to the worker
thread, the first answer is drawn as soon as it is ready, then refined) and prints, for each
change, the seconds to the first answer and to the final one (``Explorer.timings``: from the
change to the new summary + PNG being set on the widgets, rendering included).

Views measured (the defaults of the explorers, full size), once the opening view is on screen
(the time to it is printed first: imports, worker processes starting, the first runs), each
main knob moved once uncached (computing ahead off), then cached and computed-ahead cases, a
second HistoryExplorer built in the same process (a re-run cell: its opening view, with workers
forked from the process's warmed server), and last a FutexExplorer whose knob moves while its
opening view still computes:

* ``HistoryExplorer()``: numa01_THREAD_ALLOC on 2s-128 (2 x 64 threads, 3 GiB per process),
  v6.12 against v6.12 with N = 8, 8 seeds; its engine calls run on the explorer's worker
  processes (:class:`numalab.widgets.pool.SeedPool`, one per CPU), the first answer is the
  preliminary one from seed 0 of each new policy;
* ``FutexExplorer(threads=128)``: perf bench futex hash, private hash, 2 seeds, 14 bucket counts.

"superseded" changes the knob again while the first change is still computing (0.3 s after it):
the runs the newer view does not need are cancelled mid-call, and its time is counted from the
second change.

Run::

    PYTHONPATH=. python benchmarks/bench_explorers.py            # both
    PYTHONPATH=. python benchmarks/bench_explorers.py --only futex

Numbers depend on the machine and its load (the engine is single-threaded numpy): ``cpu`` is the
CPU time of the updating thread plus that of the worker processes' finished engine calls (the CPU
work behind the answer, which a busy machine does not inflate the way it does wall time; with
two workers the final answer's cpu can exceed its wall time). Load average is printed first and
last: other work on the machine slows the wall times.
"""

from __future__ import annotations

import argparse
import time


def _idle(ex, timeout=300):
    """Let the worker finish computing ahead (a person looking at the figure for a while)."""
    before = getattr(ex, "prefetched", 0)
    end = time.monotonic() + timeout
    while getattr(ex, "prefetched", 0) == before and time.monotonic() < end:
        time.sleep(0.05)


def _measure(ex, label, *, prefetch=False, first=None, **change):
    """Move ``change`` (after ``first``, moved 0.3 s earlier, when given) and print its times."""
    ex.prefetch_enabled = prefetch
    ex.timings.clear()
    if first:
        ex.set(**first)
        time.sleep(0.3)
    t0 = time.perf_counter()
    ex.set(**change)
    ex.wait(600)
    wall = time.perf_counter() - t0
    shown = [t for t in ex.timings if all(t["params"].get(k) == v for k, v in change.items())]
    first = shown[0]["seconds"] if shown else float("nan")
    final = shown[-1]["seconds"] if shown else float("nan")
    cpu1 = shown[0]["cpu_seconds"] if shown else float("nan")
    cpu2 = shown[-1]["cpu_seconds"] if shown else float("nan")
    note = "first answer + refined" if len(shown) > 1 else "one answer"
    if ex.error:
        note = f"refused: {ex.error[:60]}"
    print(f"  {label:<60} first {first:5.2f} s (cpu {cpu1:5.2f})   final {final:5.2f} s (cpu {cpu2:5.2f})"
          f"   {note}")
    return first, final


def bench_history():
    from numalab.widgets import HistoryExplorer

    t0 = time.perf_counter()
    HistoryExplorer.layouts_ahead = False  # cold layouts for the uncached changes; turned on at the end
    ex = HistoryExplorer(live=True)  # numa01_THREAD_ALLOC, 2s-128, 6.12 vs N=8, 8 seeds, full size
    pool = f"{ex.pool.size} worker processes" if ex.pool else "no worker processes (one CPU)"
    _opened(ex, t0, f"HistoryExplorer() full size, 8 seeds, {pool}")
    _measure(ex, "history 8 -> 4: one new policy, uncached", history=4)
    _measure(ex, "history 4 -> 16, superseding 4 -> 12: one new policy", history=16, first={"history": 12})
    _measure(ex, "history 4 -> 8: cached", history=8)
    _measure(ex, "seeds 8 -> 4: cached subset", seeds=4)
    _measure(ex, "seeds 4 -> 8: cached", seeds=8)
    _measure(ex, "profile 6.12 -> 6.8: two new policies, uncached", profile="6.8")
    _measure(ex, "profile 6.8 -> 6.12: cached", profile="6.12", prefetch=True)
    _idle(ex)
    _measure(ex, "history 8 -> 6 after idle time (first answer computed ahead)", history=6, prefetch=True)
    _idle(ex)
    _measure(ex, "history 6 -> 3 after idle time (first answer computed ahead)", history=3, prefetch=True)
    _measure(ex, "topology 2s-128 -> 2s-240: two new policies, uncached", topology="2s-240")
    _measure(ex, "topology 2s-240 -> 4s-144: two new policies, uncached", topology="4s-144")
    _measure(ex, "workload -> numa02 (4s-144): two new policies, uncached", workload="numa02")
    _measure(ex, "threads default -> 32 (numa02): two new policies, uncached", threads=32)
    _measure(ex, "workload -> numa01_THREAD_ALLOC, threads default (4s-144): cached", workload="numa01_THREAD_ALLOC",
             threads="default")
    ex.layouts_ahead = True
    _measure(ex, "history 3 -> 4 (4s-144): one new policy, uncached; layouts built ahead", history=4)
    time.sleep(8)  # idle: the workers build the layouts one topology / workload change away
    _measure(ex, "topology 4s-144 -> 2s-224-spr, layout built ahead: two new policies", topology="2s-224-spr")
    ex.prefetch_enabled = False
    # the cell run again: a new explorer (its own cache) whose workers fork from the process's
    # warmed server instead of importing
    t0 = time.perf_counter()
    again = HistoryExplorer(live=True)
    _opened(again, t0, "HistoryExplorer() again in the same process (a re-run cell)")


def bench_futex():
    from numalab.widgets import FutexExplorer

    t0 = time.perf_counter()
    ex = FutexExplorer(threads=128, live=True)
    _opened(ex, t0, "FutexExplorer(threads=128), 2 seeds")
    _measure(ex, "threads 128 -> 96: new curves, uncached", threads=96)
    _measure(ex, "buckets 256 -> 1024: same curves", buckets=1024)
    _measure(ex, "mode private -> numa: new curves, uncached", mode="numa")
    _measure(ex, "buckets 1024 -> 64 (numa): same curves", buckets=64)
    _measure(ex, "threads 96 -> 128 (numa): new curves, uncached", threads=128, prefetch=True)
    _idle(ex)
    _measure(ex, "mode numa -> classic after idle time (computed ahead)", mode="classic", prefetch=True)
    _measure(ex, "seeds 2 -> 4: two more curves", seeds=4)
    ex.prefetch_enabled = False
    # a knob moved at once, while the opening view still computes (its imports, first solve and
    # first figure): the answer waits for the step of the opening view under way
    ex = FutexExplorer(threads=128, live=True)
    _measure(ex, "threads 128 -> 96 while the opening view computes", threads=96)


def _opened(ex, t0, what):
    """Print when the explorer returned and when its opening view was on screen: the knob
    changes after it are measured from a shown view, as a researcher moves them."""
    returned = time.perf_counter() - t0
    ex.prefetch_enabled = False  # the uncached rows below stay uncached
    ex.wait(600)
    print(f"{what}: returned in {returned:.2f} s, opening view shown after {time.perf_counter() - t0:.2f} s "
          f"({ex.runs} runs)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["history", "futex"])
    args = parser.parse_args(argv)
    import os

    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    if args.only in (None, "futex"):
        bench_futex()
    if args.only in (None, "history"):
        bench_history()
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

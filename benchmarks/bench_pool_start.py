"""What starting worker processes costs: a short sweep's local pool and an explorer's
:class:`~numalab.widgets.pool.SeedPool`, this tree against another one.

    python benchmarks/bench_pool_start.py --old DIR [--workers 2,8] [--rounds 2] [--what sweeps,explorers]

Sweeps: each measurement is a fresh process running one small sweep three times (16 points: numa02 at
64 MiB and ``max_time=2``, four policies x 4 seeds, ``batch_size=1``, ``cache=False``), with the
in-process probe turned off (``POOL_MIN_S = 0``) so that every sweep starts a pool. The first
sweep of a process also starts the forkserver; the later ones only fork workers from it. Trees
are alternated old / new per round; wall seconds are printed per sweep (the machine's other load
moves them, so compare within a round).

Explorers: each measurement is a fresh process that builds a ``SeedPool`` three times, one after
another, as re-running a notebook cell does, and times each from ``start()`` until every worker
has answered a first (empty) task: a worker's imports and warm-up engine run included. The CPU
seconds are those of the whole process tree (``RUSAGE_CHILDREN`` of this driver once the
process has exited: each process is reaped by the one that started it, so the workers' time
reaches the driver through the process or the fork server). They are printed for the
explorers only: multiprocessing's forkserver is never waited for by the sweep's process, so its
workers' time does not reach the driver.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import sys, time
def main():
    import numalab as nl
    from numalab.sweeps import executors
    executors.POOL_MIN_S = 0.0
    grid = {"workload": ["numa02"], "policy": ["6.12", "6.12+N=4", "6.12+N=6", "6.12+N=8"],
            "workload_size_bytes": 64 << 20, "max_time": 2.0}
    out = []
    for _ in range(3):
        t = time.perf_counter()
        nl.sweep(grid, seeds=4, cache=False, progress=False, workers=int(sys.argv[1]), batch_size=1)
        out.append(time.perf_counter() - t)
    print(" ".join(f"{x:.2f}" for x in out))
if __name__ == "__main__":
    main()
"""


EXPLORER_CHILD = r"""
import os, sys, time
from numalab.widgets.pool import SeedPool
n, out = int(sys.argv[1]), []
for _ in range(3):
    t = time.perf_counter()
    pool = SeedPool(lambda k, v: None, n).start()
    pool.plan([(i, os.getpid, (), {}) for i in range(n)])  # one task per worker
    pool.wait(range(n))
    out.append(time.perf_counter() - t)
    pool.close()
print(" ".join(f"{x:.2f}" for x in out))
"""


def run(tree: Path, workers: int, script: Path) -> tuple[list[float], float]:
    """Wall seconds printed by ``script`` run on ``tree``, and the CPU seconds of its process tree."""
    import resource

    env = dict(os.environ, PYTHONPATH=str(tree), TQDM_DISABLE="1")
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, str(script), str(workers)], env=env, capture_output=True, text=True,
                         check=True, cwd="/")
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return [float(x) for x in out.stdout.split()], (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def _range(ts) -> str:
    return f"{min(ts):.2f}-{max(ts):.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="another checkout, measured alternately with this one")
    ap.add_argument("--workers", default="2,8", help="comma-separated worker counts (default 2,8)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--what", default="sweeps,explorers", help="sweeps, explorers or both (default)")
    a = ap.parse_args(argv)
    new, old = Path(__file__).resolve().parents[1], Path(a.old).resolve()
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    scripts = {"sweeps": (tmp / f"numalab_pool_start_{os.getpid()}.py", CHILD),
               "explorers": (tmp / f"numalab_explorer_pool_start_{os.getpid()}.py", EXPLORER_CHILD)}
    what = a.what.split(",")
    try:
        rows = {}
        for kind in what:
            script, text = scripts[kind]
            script.write_text(text)
            for w in (int(x) for x in a.workers.split(",")):
                for r in range(a.rounds):
                    for name, tree in (("old", old), ("new", new)) if r % 2 == 0 else (("new", new), ("old", old)):
                        t, cpu = run(tree, w, script)
                        rows.setdefault((kind, w, name), []).append((t, cpu))
                        print(f"{kind} workers={w} round {r + 1} {name}: first {t[0]:.2f} s, then {t[1]:.2f} s, "
                              f"{t[2]:.2f} s" + (f"; {cpu:.1f} CPU s" if kind == "explorers" else ""), flush=True)
        for kind in what:
            cpu_head = " CPU s, old | new |" if kind == "explorers" else ""
            print(f"\n{kind}\n| workers | first, old | new | later, old | new |{cpu_head}\n"
                  "|---|---|---|---|---|" + ("---|---|" if cpu_head else ""))
            for w in sorted({w for k, w, _ in rows if k == kind}):
                o, n = rows[(kind, w, "old")], rows[(kind, w, "new")]
                cells = [_range([t[0] for t, _ in x]) + " s" for x in (o, n)]
                cells += [_range([v for t, _ in x for v in t[1:]]) + " s" for x in (o, n)]
                if kind == "explorers":
                    cells += [_range([c for _, c in x]) for x in (o, n)]
                print(f"| {w} | " + " | ".join(cells) + " |")
    finally:
        for script, _ in scripts.values():
            script.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

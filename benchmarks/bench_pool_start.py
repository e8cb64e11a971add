"""What starting local worker processes costs a short sweep: this tree against another one.

    python benchmarks/bench_pool_start.py --old DIR [--workers 2,8] [--rounds 2]

Each measurement is a fresh process running one small sweep three times (16 points: numa02 at
64 MiB and ``max_time=2``, four policies x 4 seeds, ``batch_size=1``, ``cache=False``), with the
in-process probe turned off (``POOL_MIN_S = 0``) so that every sweep starts a pool. The first
sweep of a process also starts the forkserver; the later ones only fork workers from it. Trees
are alternated old / new per round; wall seconds are printed per sweep (the machine's other load
moves them, so compare within a round).
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


def run(tree: Path, workers: int, script: Path) -> list[float]:
    env = dict(os.environ, PYTHONPATH=str(tree), TQDM_DISABLE="1")
    out = subprocess.run([sys.executable, str(script), str(workers)], env=env, capture_output=True, text=True,
                         check=True, cwd="/")
    return [float(x) for x in out.stdout.split()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="another checkout, measured alternately with this one")
    ap.add_argument("--workers", default="2,8", help="comma-separated worker counts (default 2,8)")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args(argv)
    new, old = Path(__file__).resolve().parents[1], Path(a.old).resolve()
    script = Path(os.environ.get("TMPDIR", "/tmp")) / f"numalab_pool_start_{os.getpid()}.py"
    script.write_text(CHILD)
    try:
        rows = {}
        for w in (int(x) for x in a.workers.split(",")):
            for r in range(a.rounds):
                for name, tree in (("old", old), ("new", new)) if r % 2 == 0 else (("new", new), ("old", old)):
                    t = run(tree, w, script)
                    rows.setdefault((w, name), []).append(t)
                    print(f"workers={w} round {r + 1} {name}: first {t[0]:.2f} s, then {t[1]:.2f} s, {t[2]:.2f} s",
                          flush=True)
        print("\n| workers | first sweep, old | new | later sweeps, old | new |\n|---|---|---|---|---|")
        for w in sorted({w for w, _ in rows}):
            o, n = rows[(w, "old")], rows[(w, "new")]
            first = lambda ts: f"{min(t[0] for t in ts):.2f}-{max(t[0] for t in ts):.2f} s"   # noqa: E731
            later = lambda ts: f"{min(min(t[1:]) for t in ts):.2f}-{max(max(t[1:]) for t in ts):.2f} s"  # noqa: E731
            print(f"| {w} | {first(o)} | {first(n)} | {later(o)} | {later(n)} |")
    finally:
        script.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Speed of the NUMA-balancing engine against the goals of issue 26 (figures printed; not a test).

One command prints every row of the goals table, each measured in a fresh process, and with
``--old DIR`` (another checkout, e.g. ``git worktree add /tmp/old <commit>``) the same rows of
that tree, the two trees alternated round by round so that both see the same machine::

    python benchmarks/bench_engine.py --old /tmp/old                 # the engine rows
    python benchmarks/bench_engine.py --old /tmp/old --all           # + explorers, sweep, reproduce, tests
    python benchmarks/bench_engine.py --breakdown                    # CPU per engine stage, this tree
    python benchmarks/bench_engine.py --scaling                      # batches, memory, size, this tree

Rows (CPU seconds of the measuring process, ``time.process_time``, best of ``--repeat`` runs
in a process and of ``--rounds`` processes; the machine is shared and CPU time is what one
core spends; wall seconds where the goal is wall time):

* ``one seed``: numa01_THREAD_ALLOC on 2s-128 under 6.12, seed 0 (``run_batch``);
* ``16 seeds`` / ``64 seeds``: seeds 0..n-1 in one batch, per replica;
* ``first simulate``: in a fresh process, ``import numalab`` and the first
  ``nl.simulate("numa01_THREAD_ALLOC", "6.12", seeds=1)`` (imports, caches, the Dataset) minus
  the second, identical call;
* ``numa01 2s-224-spr`` / ``numa01 8n-genoa-nps4``: one seed of numa01 under 6.12;
* ``explorer first answer`` (``--all``): the slowest first answer of HistoryExplorer's uncached
  knob changes in ``benchmarks/bench_explorers.py --only history`` (wall; two worker processes);
* ``128-point sweep`` (``--all``): 4 workloads x 4 histories (6.12 and N = 4, 6, 8) x 8 seeds on
  2s-128, ``nl.sweep(workers=2, cache=False)``, wall;
* ``numalab reproduce`` (``--all``): every table, 8 seeds, notebooks' figures off, wall;
* ``test suite`` (``--all``): ``python -m pytest -q`` in the tree (its own pytest settings), wall.

``--breakdown`` prints where the CPU time of a 1- and a 16-replica run goes, per engine stage
(nested stages are included in their parents), with call counts. ``--scaling`` prints, for this
tree, 16 copies of seed 0 in one batch (every replica's events in the same steps) against 16
seeds, the peak memory (target of issue 3: <= 2 GiB), and the cost per simulated second as the
threads and the memory double.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: row -> (label, goal, unit, needs --all)
ROWS = {
    "one_seed": ("one seed, numa01_THREAD_ALLOC, 2s-128, 6.12", 0.15, "s cpu", False),
    "seeds16": ("per replica, 16-seed batch", None, "s cpu", False),
    "seeds64": ("per replica, 64-seed batch", 0.05, "s cpu", False),
    "first": ("first nl.simulate in a fresh process, over steady", 0.15, "s cpu", False),
    "spr": ("one seed, numa01, 2s-224-spr", 0.5, "s cpu", False),
    "genoa": ("one seed, numa01, 8n-genoa-nps4", 0.7, "s cpu", False),
    "explorer": ("full-size explorer, slowest first answer", 0.5, "s wall", True),
    "sweep": ("128-point sweep, 2 workers", 6.0, "s wall", True),
    "reproduce": ("numalab reproduce (every table, 8 seeds)", 75.0, "s wall", True),
    "tests": ("test suite (pytest -q in the tree)", 300.0, "s wall", True),
}


# ---------------------------------------------------------------- measurements (child side)
def _run_batch_cpu(workload, preset, seeds, repeat):
    import numalab as nl
    from numalab.engine import run_batch

    wl = nl.workload(workload, nl.Topology.preset(preset))
    pol = nl.Policy.profile("6.12")
    run_batch(wl, pol, [0], max_time=2.0)                     # imports and first-call costs
    best = float("inf")
    for _ in range(repeat):
        c0 = time.process_time()
        run_batch(wl, pol, list(range(seeds)))
        best = min(best, time.process_time() - c0)
    return best / seeds


def _first_simulate():
    c0 = time.process_time()
    import numalab as nl
    nl.simulate("numa01_THREAD_ALLOC", "6.12", seeds=1)
    c1 = time.process_time()
    nl.simulate("numa01_THREAD_ALLOC", "6.12", seeds=1)
    c2 = time.process_time()
    return (c1 - c0) - (c2 - c1)


def _explorer():
    out = subprocess.run([sys.executable, str(HERE / "bench_explorers.py"), "--only", "history"],
                         capture_output=True, text=True, check=True).stdout
    firsts = [float(m.group(2)) for m in re.finditer(r"^\s+(.*uncached.*?)\s+first\s+([\d.]+) s", out, re.M)]
    return max(firsts)


def _sweep():
    import numalab as nl

    grid = {"workload": ["numa01", "numa01_THREAD_ALLOC", "numa02", "numa02_SMT"],
            "policy": ["6.12", "6.12+N=4", "6.12+N=6", "6.12+N=8"], "topology": "2s-128"}
    t0 = time.perf_counter()
    nl.sweep(grid, seeds=8, workers=2, cache=False, progress=False)
    return time.perf_counter() - t0


def _reproduce():
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "numalab", "reproduce", "--out", out, "--seeds", "8", "--no-progress",
                        "--no-notebooks"], check=True, capture_output=True)
        return time.perf_counter() - t0


def _tests():
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q"], cwd=os.environ["BENCH_TREE"], capture_output=True)
    return time.perf_counter() - t0


def measure(row, repeat):
    if row == "one_seed":
        return _run_batch_cpu("numa01_THREAD_ALLOC", "2s-128", 1, repeat)
    if row == "seeds16":
        return _run_batch_cpu("numa01_THREAD_ALLOC", "2s-128", 16, 1)
    if row == "seeds64":
        return _run_batch_cpu("numa01_THREAD_ALLOC", "2s-128", 64, 1)
    if row == "first":
        return _first_simulate()
    if row == "spr":
        return _run_batch_cpu("numa01", "2s-224-spr", 1, repeat)
    if row == "genoa":
        return _run_batch_cpu("numa01", "8n-genoa-nps4", 1, repeat)
    return {"explorer": _explorer, "sweep": _sweep, "reproduce": _reproduce, "tests": _tests}[row]()


# ---------------------------------------------------------------- the table (parent side)
def in_tree(tree: Path, row: str, repeat: int) -> float:
    """One measurement of ``row`` in a fresh process importing numalab from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "BENCH_TREE": str(tree)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)       # imports from .pyc, as an installed numalab does
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--measure", row, "--repeat", str(repeat)],
                         env=env, capture_output=True, text=True, cwd=tree)
    if out.returncode:
        raise RuntimeError(f"{row} in {tree} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["value"]


def table(trees, rows, rounds, repeat):
    best = {(name, row): float("inf") for name, _ in trees for row in rows}
    for k in range(rounds):
        for row in rows:
            for name, tree in (trees if k % 2 == 0 else trees[::-1]):      # alternate the order
                v = in_tree(tree, row, repeat)
                best[name, row] = min(best[name, row], v)
                print(f"  round {k + 1}: {name:<4} {row:<10} {v:8.3f}   (load {os.getloadavg()[0]:.1f})", flush=True)
    names = [n for n, _ in trees]
    head = f"| measure | {' | '.join(names)} |" + (" new / old |" if len(names) == 2 else "") + " goal |"
    print("\n" + head)
    print("|" + "---|" * (head.count("|") - 1))
    for row in rows:
        label, goal, unit, _ = ROWS[row]
        vals = [best[n, row] for n in names]
        cells = " | ".join(f"{v:.3g} {unit}" for v in vals)
        ratio = f" {vals[-1] / vals[0]:.2f}x |" if len(vals) == 2 else ""
        print(f"| {label} | {cells} |{ratio} {'≤ ' + format(goal, 'g') if goal else '-'} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, help="another checkout, measured alternately with this one")
    ap.add_argument("--all", action="store_true", help="also the explorer, sweep, reproduce and test-suite rows")
    ap.add_argument("--rows", help="comma-separated rows (default: the engine rows; --all: every row): "
                    + ", ".join(ROWS))
    ap.add_argument("--rounds", type=int, default=2, help="processes per tree and row, alternated (default 2)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per process of the one-seed rows (default 2)")
    ap.add_argument("--breakdown", action="store_true", help="CPU time per engine stage in this tree, then exit")
    ap.add_argument("--scaling", action="store_true", help="batches, memory and size in this tree, then exit")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.measure:
        print(json.dumps({"value": measure(args.measure, args.repeat)}))
        return 0
    if args.breakdown:
        breakdown()
        return 0
    if args.scaling:
        scaling()
        return 0
    rows = args.rows.split(",") if args.rows else [r for r, v in ROWS.items() if args.all or not v[3]]
    trees = ([("old", args.old.resolve())] if args.old else []) + [("new", HERE.parent)]
    print(f"# trees: {', '.join(f'{n} = {t}' for n, t in trees)}; {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    table(trees, rows, args.rounds, args.repeat)
    return 0


# ---------------------------------------------------------------- --breakdown (this tree)
def _stages():
    from numalab.engine import balance, batch, faults, observe, placement, progress, quiet, scan

    return [
        (batch, "draws", "draws (per-replica Generators)"),
        (quiet, "plan", "quiet stretches: plan"),
        (quiet, "skip", "quiet stretches: skip"),
        (progress, "refresh", "refresh (speeds, touch rates)"),
        (progress, "advance", "progress"),
        (progress, "record_locality", "locality series"),
        (scan, "scan_trigger", "scan triggering + task_numa_work"),
        (scan, "evaluate", "  per-VMA evaluation"),
        (scan, "decide_unchecked", "    policy.decide_unchecked"),
        (scan, "walk", "  VMA walks"),
        (faults, "hinting_faults", "hinting faults"),
        (faults, "handle_faults", "  fault handling"),
        (faults, "task_numa_placement", "    task_numa_placement"),
        (placement, "numa_migrate_preferred", "task placement"),
        (balance, "lb_moves", "load balancer"),
        (observe, "check_invariants", "invariants"),
        (observe, "sample", "time series"),
    ]


@contextlib.contextmanager
def stage_timer(stages):
    """Wrap the engine stages with process-CPU-time accumulators; yields {label: [s, calls]}.
    Phases call each other through their modules' globals, so patching the module attribute
    times every call."""
    acc = collections.defaultdict(lambda: [0.0, 0])
    saved = []
    for obj, name, label in stages:
        f = getattr(obj, name)
        saved.append((obj, name, f))

        def wrapped(*a, _f=f, _label=label, **k):
            c0 = time.process_time()
            try:
                return _f(*a, **k)
            finally:
                acc[_label][0] += time.process_time() - c0
                acc[_label][1] += 1
        setattr(obj, name, wrapped)
    try:
        yield acc
    finally:
        for obj, name, f in saved:
            setattr(obj, name, f)


def breakdown():
    """Per-stage CPU time of one run with 1 and one with 16 replicas (this tree)."""
    import numalab as nl
    from numalab.engine import run_batch

    wl = nl.workload("numa01_THREAD_ALLOC", nl.Topology.preset("2s-128"))
    pol = nl.Policy.profile("6.12")
    stages = _stages()
    rows = {}
    for n in (1, 16):
        with stage_timer(stages) as acc:
            c0 = time.process_time()
            b = run_batch(wl, pol, list(range(n)))
            rows[n] = (time.process_time() - c0, b.steps, dict(acc))
    print(f"breakdown (cpu s, calls; stage timers add overhead): "
          f"1 replica {rows[1][0]:.2f} s / {rows[1][1]} steps, 16 replicas {rows[16][0]:.2f} s / {rows[16][1]} steps")
    for _, _, label in stages:
        a1, a16 = rows[1][2].get(label, (0.0, 0)), rows[16][2].get(label, (0.0, 0))
        print(f"  {label:<36} {a1[0]:6.2f} s {a1[1]:6d}   {a16[0]:6.2f} s {a16[1]:6d}")


def scaling():
    """Aligned against independent replicas, peak memory, cost as threads and memory double."""
    import resource

    import numalab as nl
    from numalab.engine import run_batch

    topo = nl.Topology.preset("2s-128")
    wl = nl.workload("numa01_THREAD_ALLOC", topo)
    pol = nl.Policy.profile("6.12")

    def cpu(w, seeds):
        c0 = time.process_time()
        b = run_batch(w, pol, seeds)
        return time.process_time() - c0, b

    one, _ = cpu(wl, [0])
    six, _ = cpu(wl, list(range(16)))
    same, _ = cpu(wl, [0] * 16)
    print(f"1 replica {one:.2f} s; 16 seeds {six:.2f} s ({six / one:.2f}x); 16 x seed 0 {same:.2f} s "
          f"({same / one:.2f}x: every replica's scans and faults in the same steps)")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB (target <= 2048 MiB)")
    print("cost per simulated second, one replica:")
    for label, w in [("numa02, 64 threads", nl.workload("numa02", topo, threads=64)),
                     ("numa02, 128 threads", nl.workload("numa02", topo, threads=128)),
                     ("numa01_THREAD_ALLOC, 32 thr/proc", nl.workload("numa01_THREAD_ALLOC", topo, threads=32)),
                     ("numa01_THREAD_ALLOC, 64 thr/proc, 3 GiB/proc", wl),
                     ("numa01_THREAD_ALLOC, 6 GiB/proc", nl.workload("numa01_THREAD_ALLOC", topo, size_bytes=6 << 30))]:
        c, b = cpu(w, [0])
        print(f"  {label:<44} {c / b.elsp[0] * 1000:8.2f} ms/sim-s   ({c:.2f} s for {b.elsp[0]:.1f} sim-s, "
              f"{w.nregions} regions)")


if __name__ == "__main__":
    raise SystemExit(main())

"""Speed of what surrounds the engine -- laying out a workload (``nl.workload``) and the
paired-effect statistics (``stats.paired_change``, ``stats.runs_needed``) -- this tree against
another (figures printed; not a test).

Every figure, explorer and notebook that shows a paired %change also says how many runs a real
machine would need (``runs_needed``), which solves Student-t quantiles by bisection. Each row is
measured in a fresh process (so no quantile is remembered from an earlier row), CPU seconds of
that process, best of ``--rounds``; with ``--old DIR`` (e.g. ``git worktree add /tmp/old
<commit>``) the same rows run in that tree, the two trees alternated round by round::

    python benchmarks/bench_setup.py --old /tmp/old

Rows:

* ``workload numa01 2s-128`` / ``... 8n-genoa-nps4`` / ``numa01_THREAD_ALLOC 2s-128``: one
  ``nl.workload`` (every ``nl.simulate`` by name and every sweep point lays one out; numa01's
  128 threads each sweep the whole buffer, so its region classes are the cost);
* ``paired_change``: a (4 histories x 3 workloads x 8 seeds) elapsed-time DataArray, the shape of
  notebook 02's sweep, with effects of 0, -2, -0.1 and -4 % on a 3 % spread (a small effect needs
  thousands of runs, so large degrees of freedom), ``stats.paired_change(da, "history")``;
* ``paired_change x5``: five such calls in one process (a notebook's or an explorer's life);
* ``runs_needed 1000``: ``runs_needed`` of 1000 (spread, change) pairs drawn from one seed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CODE = r"""
import json, sys, time
import numpy as np
import xarray as xr
from numalab import stats

row = sys.argv[1]
if row.startswith("workload "):
    import numalab as nl
    _, name, topo = row.split()
    nl.Topology.preset(topo)
    t = time.process_time()
    wl = nl.workload(name, topo)
    print(json.dumps({"cpu": time.process_time() - t, "sum": float(wl.region_class.sum() + wl.entry_share.sum()),
                      "file": nl.__file__}))
    sys.exit(0)
rng = np.random.default_rng(0)
# effects of 0, -2, -0.1 and -4 % on a 3 % spread: the small one needs thousands of runs
da = xr.DataArray(100 + rng.normal(0, 3, (4, 3, 8)) + np.array([0.0, -2.0, -0.1, -4.0])[:, None, None],
                  dims=("history", "workload", "seed"),
                  coords={"history": ["6.12", "4", "6", "8"], "workload": ["a", "b", "c"]}, name="elsp")
t = time.process_time()
if row == "paired_change":
    out = stats.paired_change(da, "history")["runs"].values
elif row == "paired_change x5":
    for i in range(5):
        out = stats.paired_change(da * (1 + 0.01 * i), "history")["runs"].values
else:
    out = stats.runs_needed(rng.uniform(0.5, 20, 1000), rng.uniform(-10, 10, 1000))
print(json.dumps({"cpu": time.process_time() - t, "sum": float(np.nansum(np.where(np.isfinite(out), out, 0)))}))
"""

ROWS = ("workload numa01 2s-128", "workload numa01 8n-genoa-nps4", "workload numa01_THREAD_ALLOC 2s-128",
        "paired_change", "paired_change x5", "runs_needed 1000")


def _run(tree, row):
    env = dict(os.environ, PYTHONPATH=tree)
    # run outside any checkout: ``python -c`` puts the working directory first on sys.path
    out = subprocess.run([sys.executable, "-c", CODE, row], capture_output=True, text=True, env=env, check=True,
                         cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", default=None, help="another checkout to compare against")
    ap.add_argument("--rounds", type=int, default=3, help="fresh processes per row and tree (default: %(default)s)")
    args = ap.parse_args(argv)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"new": here, **({"old": os.path.abspath(args.old)} if args.old else {})}
    best = {(t, r): None for t in trees for r in ROWS}
    sums = {}
    for _ in range(args.rounds):
        for row in ROWS:
            for name, tree in trees.items():
                res = _run(tree, row)
                b = best[name, row]
                best[name, row] = res["cpu"] if b is None else min(b, res["cpu"])
                sums[name, row] = res["sum"]
    print("| row | " + " | ".join(f"{t} [s cpu]" for t in trees) + (" | new / old | same result |" if args.old else " |"))
    print("|---|" + "---|" * len(trees) + ("---|---|" if args.old else ""))
    for row in ROWS:
        cells = [f"{best[t, row]:.3f}" for t in trees]
        if args.old:
            cells += [f"{best['new', row] / best['old', row]:.3f}", str(sums["new", row] == sums["old", row])]
        print(f"| {row} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

"""The shared init as coherence traffic: how the length of numa01's MPOL_BIND init decides
v6.4's deadlock and v6.8's escape, with the mechanism off and on (issue 15; docs/fidelity.md,
"The shared init is coherence traffic").

Every worker of numa01 / numa01_THREAD_ALLOC zero-writes its process's whole 3 GiB buffer under
MPOL_BIND before its loop, and a scanner still in that init finds every VMA unsuitable. With
``init_coherence=False`` each of those T concurrent sweeps is charged its full DRAM traffic
(the earlier model: a 10-20 s init on the robot's machines); with the default ``True`` the
workers advance together behind the first-touch frontier, a line reaches DRAM once and moves
between caches, across the socket link when the previous writer is on the other node (a
link-bound init of a few seconds). This prints, per preset and setting, the init's length
(first and last worker out of the init, seed 0 under v6.4) and the %changes the published
tables judge, with the published number beside each.

``--spread`` prints instead how far apart one process's init writers are while the init runs
(max - min of the bytes they have written, and the mean position per node): the coherence
mechanism assumes writers close enough to hand lines over from cache (docs/fidelity.md, "0.4.0").

Run::

    python benchmarks/init_window.py                 # 4 seeds, ~6 min CPU
    python benchmarks/init_window.py --seeds 8 --presets 2s-224-spr
    python benchmarks/init_window.py --spread --presets 2s-128
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import numalab as nl
from numalab.engine import make_batch
from numalab.workloads import PH_INIT

PROFILES = ["6.4-rc-scan-delay", "6.4", "6.7", "6.8", "rfc2023-p2", "rfc2023-p6"]
#: (preset, test, published %change) per column: calibration-intel.md sections A, B, C
COLUMNS = [
    ("6.4 vs rc", "6.4", "6.4-rc-scan-delay", {"2s-224-spr": {"numa01": 39.3}, "2s-88-csl": {"numa01": 48.9}}),
    ("6.8 vs 6.7", "6.8", "6.7", {"2s-224-spr": {"numa01": -16.3, "numa01_THREAD_ALLOC": -46.2}}),
    ("p2 vs 6.4", "rfc2023-p2", "6.4", {"2s-224-spr": {"numa01": -0.7, "numa01_THREAD_ALLOC": -11.7}}),
    ("p6 vs 6.4", "rfc2023-p6", "6.4", {"2s-224-spr": {"numa01": -26.4, "numa01_THREAD_ALLOC": -46.9}}),
]


def init_span(topo, coherence):
    """(first, last) second a worker leaves the bound init, seed 0 of numa01 under v6.4."""
    wl = nl.workload("numa01", topo)
    b = make_batch(wl, nl.Policy.profile("6.4"), [0], init_coherence=coherence)
    bound = wl.init_bind
    first = None
    for i in range(4000):
        b.step()
        n = int(((b.tasks.phase[0] == PH_INIT) & bound).sum())
        if first is None and n < bound.sum():
            first = (i + 1) * b.dt
        if n == 0:
            return first, (i + 1) * b.dt
    return first, float("nan")


def init_spread(topo, every=0.5):
    """Lines ``(t, mm, writers in the init, spread MiB, mean position per node GiB)`` while
    numa01's bound init runs (seed 0, v6.4, the default mechanism)."""
    wl = nl.workload("numa01", topo)
    b = make_batch(wl, nl.Policy.profile("6.4"), [0])
    pb = wl.phase_bytes[:, 0]
    init = wl.init_bind & (pb > 0)
    out, next_t = [], 0.0
    for _ in range(4000):
        b.step()
        ph = b.tasks.phase[0]
        if not (init & (ph == PH_INIT)).any():
            break
        if b.now + 1e-9 < next_t:
            continue
        next_t += every
        for m in range(wl.nproc):
            sel = init & (wl.thread_mm == m) & (ph == PH_INIT)
            if sel.sum() > 1:
                x = pb[sel] - b.tasks.bytes_left[0, sel]
                nodes = b.tasks.node[0, sel]
                out.append((b.now, m, int(sel.sum()), (x.max() - x.min()) / 2**20,
                            {int(n): x[nodes == n].mean() / 2**30 for n in np.unique(nodes)}))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--presets", default="2s-224-spr,2s-88-csl,2s-128")
    ap.add_argument("--spread", action="store_true", help="the init writers' spread instead (seed 0)")
    args = ap.parse_args(argv)
    t0 = time.process_time()
    if args.spread:
        for preset in args.presets.split(","):
            for t, m, n, spread, pos in init_spread(nl.Topology.preset(preset)):
                print(f"{preset} t={t:5.2f} s mm{m}: {n:3d} writers in the init, spread {spread:7.1f} MiB; "
                      "mean position " + ", ".join(f"node {k} {v:.2f} GiB" for k, v in pos.items()))
        return
    for preset in args.presets.split(","):
        topo = nl.Topology.preset(preset)
        print(f"\n{preset}: %change, simulated (published); init = first..last worker out of the bound init")
        head = "".join(f"{c[0]:>26}" for c in COLUMNS)
        print(f"{'coherence':>9} {'test':<20} {'init s':>11}{head}")
        for coherence in (False, True):
            first, last = init_span(topo, coherence)
            for test in ("numa01", "numa01_THREAD_ALLOC"):
                ds = nl.simulate(test, PROFILES, seeds=args.seeds, topology=topo, init_coherence=coherence)
                e = ds.elsp.mean("seed")
                cells = []
                for _, new, base, pub in COLUMNS:
                    ch = 100 * (float(e.sel(policy=new)) / float(e.sel(policy=base)) - 1)
                    p = pub.get(preset, {}).get(test)
                    cells.append(f"{ch:+8.1f} ({p:+6.1f})" if p is not None else f"{ch:+8.1f} {'':8}")
                print(f"{'on' if coherence else 'off':>9} {test:<20} {first:4.1f}..{last:4.1f}  "
                      + "".join(f"{c:>26}" for c in cells))
    print(f"\n{args.seeds} seeds; {time.process_time() - t0:.0f} cpu s")


if __name__ == "__main__":
    main()

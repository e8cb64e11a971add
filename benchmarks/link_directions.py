"""Where a remote write loading both link directions acts (docs/fidelity.md "0.6.0"; not a test).

A remote write reads its line for ownership from the memory's node and writes it back there: one
line each way. ``costs.progress_rates`` (engine option ``link_both_directions``) charges each
direction of a link the remote writes between its two nodes in both senses; with the option off
it charges each remote write twice on its own (cpu node, memory node) direction, as 0.5.0 did.

This prints, for every two-node preset of the robot's machines:

1. the closed-form rates of a stuck numa01 placement (every page on node 1, half the threads on
   each node; the controllers bind, the accounting makes no difference) and of its tail (only the
   node-0 writers left: a one-way stream, where it does);
2. numa01 under 6.4 on that machine (stuck: the buffer never takes a hinting fault), both
   settings, ``seeds`` seeds: the run time, and when the local writers finish (``local_fraction``
   below 0.5: the tail where only remote writers are left).

Run: ``python benchmarks/link_directions.py [--seeds 2] [--presets 2s-224-spr,2s-88-csl,2s-128]``
"""

from __future__ import annotations

import argparse

import numpy as np


def _rates(topo, both):
    from numalab.costs import Costs, progress_rates

    T = topo.ncpus
    node = np.zeros((1, T), int)
    node[0, T // 2:] = 1
    frac = np.zeros((1, T, 2))
    frac[:, :, 1] = 1.0                               # every page on node 1
    full = progress_rates(Costs(), topo, node, frac, np.ones((1, T), bool), both_directions=both)[0]
    tail_run = np.zeros((1, T), bool)
    tail_run[0, :T // 2] = True                       # only the node-0 (remote) writers left
    tail = progress_rates(Costs(), topo, node, frac, tail_run, both_directions=both)[0]
    return full[:T // 2].sum() / 1e9, full[T // 2:].sum() / 1e9, tail.sum() / 1e9


def main(argv=None):
    import numalab as nl

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--presets", default="2s-224-spr,2s-88-csl,2s-128")
    a = ap.parse_args(argv)
    print("| preset | setting | stuck: remote / local writers GB/s | tail: remote writers alone GB/s | "
          "numa01 6.4 elsp s | local writers done at s |")
    print("|---|---|---|---|---|---|")
    for preset in a.presets.split(","):
        topo = nl.Topology.preset(preset)
        for both in (False, True):
            rem, loc, tail = _rates(topo, both)
            ds = nl.simulate("numa01", ["6.4"], seeds=a.seeds, topology=topo, link_both_directions=both)
            lf = ds.local_fraction.isel(policy=0)
            done = []
            for s in range(lf.sizes["seed"]):
                v = lf.isel(seed=s).values
                low = np.flatnonzero((v < 0.5) & (ds.time.values > 10.0))
                done.append(float(ds.time.values[low[0]]) if low.size else float("nan"))
            label = "both directions (0.6.0)" if both else "own direction x2 (0.5.0)"
            print(f"| {preset} | {label} | {rem:.1f} / {loc:.1f} | {tail:.1f} | "
                  f"{float(ds.elsp.mean()):.1f} | {np.nanmean(done):.0f} |")


if __name__ == "__main__":
    main()

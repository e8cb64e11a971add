"""What the interconnect model gives on the machines with more than two nodes (docs/fidelity.md,
"0.7.0: the interconnect as physical links").

Prints the mean elapsed seconds of numa01, numa01_THREAD_ALLOC and numa02 under 6.4, 6.12 and
rfc2023-p4 on ``4s-144`` and ``8n-genoa-nps4`` (2 seeds each, the built-in workload sizes), and
the write bandwidth 128 threads of ``2s-128`` get into a CXL expander with a 25 GB/s link. Run
it at two commits to see what a change of the link model moves; no published row is on these
machines, so it judges nothing by itself.

    python benchmarks/interconnect.py            # ~15 s on 2 cores (numba engine)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import numalab as nl
from numalab.costs import Costs, progress_rates


def cxl_bandwidth() -> tuple[float, float, float]:
    """GB/s of 64 writers on each socket of 2s-128 into a CXL node hung off socket 0 (25 GB/s
    link, 64 GB/s device that writes at its read rate): total, socket 0's, socket 1's."""
    topo = nl.Topology.preset("2s-128").with_memory_node(
        256.0, [14, 24], node_bw_GBps=64.0, link_bw_GBps=25.0, write_efficiency=1.0,
        local_latency_ns=170.0, remote_latency_ns=250.0)
    T = 128
    node = np.array([[0] * 64 + [1] * 64])
    frac = np.zeros((1, T, topo.nodes))
    frac[0, :, 2] = 1.0
    s = progress_rates(Costs(), topo, node, frac, np.ones((1, T), bool))[0] / 1e9
    return float(s.sum()), float(s[:64].sum()), float(s[64:].sum())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=2, help="seeds per point (default 2)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    print(f"numalab {nl.__version__}")
    total, s0, s1 = cxl_bandwidth()
    print(f"2s-128 + CXL (25 GB/s link): {total:.1f} GB/s from both sockets ({s0:.1f} socket 0, {s1:.1f} socket 1)")
    policies = ["6.4", "6.12", "rfc2023-p4"]
    print(f"{'preset':15s} {'workload':20s} " + " ".join(f"{p:>11s}" for p in policies))
    for preset in ("4s-144", "8n-genoa-nps4"):
        for name in ("numa01", "numa01_THREAD_ALLOC", "numa02"):
            ds = nl.simulate(nl.workload(name, nl.Topology.preset(preset)), policies, seeds=list(range(args.seeds)))
            elsp = ds.elsp.mean("seed")
            print(f"{preset:15s} {name:20s} " + " ".join(f"{float(elsp.sel(policy=p)):11.1f}" for p in policies),
                  flush=True)
    print(f"wall {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()

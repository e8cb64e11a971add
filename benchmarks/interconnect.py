"""What the interconnect model gives on the machines with more than two nodes (docs/fidelity.md,
"0.7.0: the interconnect as physical links").

Prints the mean elapsed seconds of numa01, numa01_THREAD_ALLOC and numa02 under 6.4, 6.12 and
rfc2023-p4 on ``4s-144`` and ``8n-genoa-nps4`` (2 seeds each, the built-in workload sizes), and
the write bandwidth 128 threads of ``2s-128`` get into a CXL expander with a 25 GB/s link. Run
it at two commits to see what a change of the link model moves; no published row is on these
machines, so it judges nothing by itself.

    python benchmarks/interconnect.py            # ~15 s on 2 cores (numba engine)
    python benchmarks/interconnect.py --xgmi     # Genoa's numa01 over the xGMI figure's band (~40 s)
    python benchmarks/interconnect.py --xgmi --set tick_clock=False     # ... on the 0.7.0 engine
"""

from __future__ import annotations

import argparse
import dataclasses
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


#: the xGMI figure of 8n-genoa-nps4 (GB/s each way between its IO dies): its plausible band
#: 90-256 (data/topologies/8n-genoa-nps4.json) and the preset's 134
XGMI_GBPS = (90.0, 112.0, 134.0, 160.0, 192.0, 256.0)


def xgmi_band(seeds: int, options: dict) -> None:
    """numa01's mean elapsed s on 8n-genoa-nps4 under 6.4, 6.12 and rfc2023-p4 with the IO dies'
    link at each figure of XGMI_GBPS (an uncertain constant's band: what a researcher would have
    to measure), and 6.12's per-seed times."""
    preset = nl.Topology.preset("8n-genoa-nps4")
    policies = ["6.4", "6.12", "rfc2023-p4"]
    print(f"{'xGMI GB/s':>9s} " + " ".join(f"{p:>11s}" for p in policies) + "   6.12 per seed")
    for gbps in XGMI_GBPS:
        links = tuple(lk if lk[:2] != (8, 9) else (8, 9, gbps, gbps) for lk in preset.links)
        topo = dataclasses.replace(preset, links=links)
        ds = nl.simulate(nl.workload("numa01", topo), policies, seeds=list(range(seeds)), **options)
        elsp = ds.elsp.mean("seed")
        per_seed = " ".join(f"{v:.0f}" for v in ds.elsp.sel(policy="6.12").values.ravel())
        print(f"{gbps:9.0f} " + " ".join(f"{float(elsp.sel(policy=p)):11.1f}" for p in policies)
              + f"   {per_seed}", flush=True)


def _option(text: str):
    name, _, value = text.partition("=")
    if value in ("True", "False"):
        return name, value == "True"
    for kind in (int, float):
        try:
            return name, kind(value)
        except ValueError:
            pass
    return name, value


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=None, help="seeds per point (default 2; --xgmi 4)")
    ap.add_argument("--xgmi", action="store_true", help="Genoa's numa01 over the xGMI figure's band instead")
    ap.add_argument("--set", action="append", default=[], metavar="OPTION=VALUE",
                    help="an engine option for every run, e.g. tick_clock=False")
    args = ap.parse_args(argv)
    options = dict(_option(o) for o in args.set)
    t0 = time.perf_counter()
    print(f"numalab {nl.__version__}" + (f" {options}" if options else ""))
    if args.xgmi:
        xgmi_band(args.seeds or 4, options)
        print(f"wall {time.perf_counter() - t0:.0f} s")
        return
    args.seeds = args.seeds or 2
    total, s0, s1 = cxl_bandwidth()
    print(f"2s-128 + CXL (25 GB/s link): {total:.1f} GB/s from both sockets ({s0:.1f} socket 0, {s1:.1f} socket 1)")
    policies = ["6.4", "6.12", "rfc2023-p4"]
    print(f"{'preset':15s} {'workload':20s} " + " ".join(f"{p:>11s}" for p in policies))
    for preset in ("4s-144", "8n-genoa-nps4"):
        for name in ("numa01", "numa01_THREAD_ALLOC", "numa02"):
            ds = nl.simulate(nl.workload(name, nl.Topology.preset(preset)), policies, seeds=list(range(args.seeds)),
                             **options)
            elsp = ds.elsp.mean("seed")
            print(f"{preset:15s} {name:20s} " + " ".join(f"{float(elsp.sel(policy=p)):11.1f}" for p in policies),
                  flush=True)
    print(f"wall {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()

"""What the machine's CPU numbering does to perf bench futex hash (docs/futex.md, "Where perf
bench's threads run").

    python benchmarks/cpu_numbering.py [--seeds 2] [--presets 2s-128,2s-88-csl,2s-224-spr,2s-ivb-40]

perf bench pins thread i to the i-th online CPU. For every preset and T = ncpus/4, ncpus/2,
3 ncpus/4 and ncpus it prints the per-thread ops/s (global hash, 1024 futexes a thread, 6.17's
per-CPU reference, the MVA) with the CPUs numbered cores-first (the x86 default: every core's
first thread, node after node, then the siblings) and node by node (each node's cores, then its
siblings), the ratio, and where the threads ran (per node, and how many share a core).
"""

from __future__ import annotations

import argparse

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--presets", default="2s-128,2s-88-csl,2s-224-spr,2s-ivb-40")
    args = ap.parse_args()

    import numalab as nl
    from numalab.futex.costs import core_load
    from numalab.futex.workloads import perf_bench_hash

    print("| preset (CPUs) | T | cores-first M ops/s | node by node M ops/s | ratio | threads per node "
          "(cores-first / node by node) | threads sharing a core |")
    print("|---|---:|---:|---:|---:|---|---|")
    for name in args.presets.split(","):
        n = nl.Topology.preset(name).ncpus
        for T in (n // 4, n // 2, 3 * n // 4, n):
            rate, where, shared = [], [], []
            for numbering in ("cores-first", "node"):
                topo = nl.Topology.preset(name, cpu_numbering=numbering)
                w = perf_bench_hash(topo, threads=T, futexes=1024, buckets=0, refcount="percpu")
                rate.append(float(nl.futex.simulate(w, seeds=args.seeds).ops_per_s_per_thread.mean()) / 1e6)
                where.append("/".join(map(str, np.bincount(topo.cpu_node[w.thread_cpu], minlength=topo.nodes))))
                shared.append(int((core_load(topo, w.thread_cpu, np.ones(T, bool)) > 1).sum()))
            print(f"| {name} ({n}) | {T} | {rate[0]:.2f} | {rate[1]:.2f} | {rate[0] / rate[1]:.2f} | "
                  f"{where[0]} / {where[1]} | {shared[0]} / {shared[1]} |")


if __name__ == "__main__":
    main()

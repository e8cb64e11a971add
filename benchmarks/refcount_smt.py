"""What SMT siblings sharing their L1 do to the 6.16 rcuref private hash (docs/futex.md, "SMT
siblings on the refcount line").

    python benchmarks/refcount_smt.py [--seeds 2] [--presets 2s-ivb-40,2s-128,2s-88-csl,2s-224-spr]

For every preset, with one thread a core (T = cores) and with every CPU busy (T = CPUs), it
prints perf bench futex hash's per-thread ops/s [M] (the default 1024 futexes a thread, private
hash) with 6.17's per-CPU reference and with 6.16's rcuref, with the core's shared L1/L2
switched off (``smt_shared_l1=0``: every hardware thread pulls each line as if it had a core of
its own) and on (the default: a line a core-mate held last is an L1/L2 hit, and an RMW on the
refcount line issued while its sibling's is pending completes right after it), and the drop
from per-CPU to rcuref, by the MVA and by the simulation.
"""

from __future__ import annotations

import argparse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--presets", default="2s-ivb-40,2s-128,2s-88-csl,2s-224-spr")
    args = ap.parse_args()

    import numalab as nl
    from numalab.futex.workloads import perf_bench_hash

    def rate(topo, T, refcount, method, on):
        w = perf_bench_hash(topo, threads=T, futexes=1024, refcount=refcount)
        ds = nl.futex.simulate(w, seeds=args.seeds, method=method, costs=dict(smt_shared_l1=on))
        return float(ds.ops_per_s_per_thread.mean()) / 1e6

    print("| preset | T | method | per-CPU, off | per-CPU, on | rcuref, off | rcuref, on | rcuref on / off "
          "| drop off | drop on |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.presets.split(","):
        topo = nl.Topology.preset(name)
        cores = topo.nodes * topo.cores_per_node
        for T in (cores, topo.ncpus):
            for method in ("mva", "simulation"):
                b_off, b_on = rate(topo, T, "percpu", method, 0.0), rate(topo, T, "percpu", method, 1.0)
                off, on = rate(topo, T, "rcuref", method, 0.0), rate(topo, T, "rcuref", method, 1.0)
                print(f"| {name} | {T} | {method} | {b_off:.3f} | {b_on:.3f} | {off:.4f} | {on:.4f} | {on / off:.2f} "
                      f"| {100 * (1 - off / b_off):.1f} % | {100 * (1 - on / b_on):.1f} % |", flush=True)

if __name__ == "__main__":
    main()

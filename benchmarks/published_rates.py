"""What the published runtimes say about each machine's write bandwidth, before any model runs.

For every base-column seconds row of the calibration tables (``data/lkp-*.csv``) this divides
the bytes the benchmark writes (the workload's own count: numa01 2 x T x 51 x 3 GiB, ...) by
the published seconds and by the machine preset's ``nodes x node_bw_GBps`` (its STREAM figure).
The machine's ``Topology.write_efficiency`` turns that figure into ``bzero`` bandwidth (until
0.4.0 one cost constant for every machine, which needed this ratio to be machine-independent
for the runs that are not stuck on one node: rc, p5, 6.8 columns; it is not). docs/fidelity.md,
"Across machines" and "The write capacity is the machine's", discusses the result.

Run: ``python benchmarks/published_rates.py``
"""

from __future__ import annotations

import numalab as nl
from numalab import data, fidelity


def published_runtimes() -> dict[tuple[str, str, str], float]:
    """Every published runtime of the calibration tables, ``(preset, workload, kernel) ->
    seconds``; a base column several tables share is listed once."""
    rows = {}
    for name in fidelity.calibration_tables():
        ds = data.load(name)
        preset = fidelity.table_preset(ds)
        for pol in [str(p) for p in ds.policy.values]:
            for wl in ds.workload.values:
                s = float(ds.elsp.sel(workload=wl, policy=pol))
                if s == s:
                    rows[(preset, str(wl), pol)] = s
    return rows


def main():
    rows = published_runtimes()
    print(f"{'preset':<12} {'test':<20} {'kernel':<18} {'seconds':>8} {'TB':>6} {'GB/s':>7} {'/ (nodes x node_bw)':>20}")
    for (preset, wl, pol), s in sorted(rows.items()):
        topo = nl.Topology.preset(preset)
        tb = float(nl.workload(wl, topo).phase_bytes.sum())
        rate = tb / s / 1e9
        print(f"{preset:<12} {wl:<20} {pol:<18} {s:>8.1f} {tb / 1e12:>6.2f} {rate:>7.1f} "
              f"{rate / (topo.nodes * topo.node_bw_GBps):>20.3f}")


if __name__ == "__main__":
    main()

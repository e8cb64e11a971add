"""The model's own bandwidth floor under every published runtime (issue 24 item 1; not a test).

In the progress model (``numalab.costs``) a node's memory controllers write at most
``write_efficiency x node_bw_GBps`` (both the topology's); whatever the placement, a run cannot
end before its loop-phase bytes (``Workload.phase_bytes``, the init sweeps left out, so this is
a lower bound) have gone through the machine's controllers:

    floor = loop bytes / (sum over nodes of write_efficiency x node_bw_GBps)

For every published runtime of the calibration tables this prints the floor at the preset's
figures beside the published seconds, and the throughput the machine achieved
(loop bytes / published seconds) as a share of the preset's summed ``node_bw_GBps``: the
``write_efficiency`` the machine had at least. A published runtime below the floor cannot be
reproduced by any scan, fault or placement mechanism: only the capacity can reach it.

``--capacity PRESET=EFF`` (repeatable) then simulates every calibration table with that
machine's ``write_efficiency`` at ``EFF`` (the others at their presets') and prints the
published and strict rules' counts per machine beside the presets', and every row whose
verdict changes.

Run: ``python benchmarks/bandwidth_floor.py [--capacity 2s-224-spr=0.5 --capacity 2s-88-csl=0.5] [--seeds 8]``
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np

import numalab as nl
from numalab import data, fidelity
from published_rates import published_runtimes   # benchmarks/ is on sys.path when run as a script


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--capacity", action="append", default=[], metavar="PRESET=EFF",
                    help="simulate the tables with this machine's write_efficiency (repeatable)")
    ap.add_argument("--seeds", type=int, default=8, help="seeds per run of --capacity (default: %(default)s)")
    args = ap.parse_args(argv)
    floor_table()
    if args.capacity:
        capacity = {}
        for item in args.capacity:
            preset, _, value = item.partition("=")
            try:
                capacity[preset] = float(value)
            except ValueError:
                ap.error(f"--capacity {item!r}: expected PRESET=EFF, e.g. 2s-224-spr=0.5")
        compare_capacity(capacity, args.seeds)


def floor_table():
    rows = []
    for (preset, wl, pol), s in published_runtimes().items():
        topo = nl.Topology.preset(preset)
        read = float(np.sum(topo.per_node("node_bw_GBps"))) * 1e9          # B/s, STREAM read, all nodes
        write = float(np.sum(topo.per_node("node_bw_GBps") * topo.per_node("write_efficiency"))) * 1e9
        loop = float(nl.workload(wl, topo).phase_bytes[:, 1].sum())        # phase_bytes: (init, loop) per thread
        rows.append((preset, wl, pol, s, loop / write, loop / s / read))
    print("# floor = loop bytes / (the nodes' summed write_efficiency x node_bw_GBps)\n")
    print("| preset | workload | kernel | published s | model's floor s | machine's fill / node_bw at least |")
    print("|---|---|---|---|---|---|")
    below = defaultdict(lambda: [0, 0])
    for preset, wl, pol, s, floor, got in rows:
        mark = " **below**" if s < floor else ""
        print(f"| {preset} | {wl} | {pol} | {s:.1f}{mark} | {floor:.1f} | {got:.2f} |")
        below[preset][0] += s < floor
        below[preset][1] += 1
    print()
    for preset, (n, of) in below.items():
        best = max(got for p, *_, got in rows if p == preset)
        eff = nl.Topology.preset(preset).write_efficiency
        print(f"{preset}: {n} of {of} published runtimes below the model's floor; the machine reached "
              f"{best:.2f} x node_bw at best (the preset's write_efficiency: {eff})")


def compare_capacity(capacity: dict, seeds: int):
    """Every table at the presets' figures and with ``capacity`` ({preset: write_efficiency});
    the counts per machine and the rows whose published-rule verdict changes."""
    from numalab.fidelity.runs import Point, execute, plan

    published = {name: data.load(name) for name in fidelity.calibration_tables()}
    results = []
    for point in (Point(), Point(topology={p: {"write_efficiency": e} for p, e in capacity.items()})):
        sims = execute(plan(published, seeds, overrides=point))
        results.append(fidelity.table_rows(published, {preset: s for (_, preset), s in sims.items()}))
    label = ", ".join(f"{p} {e}" for p, e in capacity.items())
    print(f"\n# the calibration tables at the presets' write_efficiency and with {label} ({seeds} seeds)\n")
    print("| machine | judged rows | published rule, presets | with the capacity | strict rule, presets | with the capacity |")
    print("|---|---|---|---|---|---|")
    count = defaultdict(lambda: [0, 0, 0, 0, 0])
    for before, after in zip(*results):
        if before["verdict"] == fidelity.rules.NOT_JUDGED:
            continue
        for key in (published[before["table"]].attrs["machine"], "all"):
            c = count[key]
            c[0] += 1
            c[1] += before["verdict"] == "reproduced"
            c[2] += after["verdict"] == "reproduced"
            c[3] += before["strict_verdict"] == "reproduced"
            c[4] += after["strict_verdict"] == "reproduced"
    for key, c in sorted(count.items(), key=lambda kv: kv[0] == "all"):
        print(f"| {key} | {c[0]} | {c[1]} | {c[2]} | {c[3]} | {c[4]} |")
    print("\nrows whose published-rule verdict changes:\n")
    for before, after in zip(*results):
        if before["verdict"] != after["verdict"]:
            print(f"* {before['table']}, {before['metric']}, {before['quantity']}: published {before['published']}, "
                  f"{before['simulated_mean']:.4g} ({before['verdict']}) -> {after['simulated_mean']:.4g} "
                  f"({after['verdict']})")


if __name__ == "__main__":
    main()

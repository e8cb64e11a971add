"""Ablation table: every published row of ``numalab reproduce`` simulated with every mechanism
on, and with each mechanism switched off alone (``numalab.engine.SWITCHES``).

Run: ``python benchmarks/ablation.py [--seeds 8] [--out ablation.md]``. Prints a Markdown
table (one row per published %change, one column per configuration) of the simulated mean
%change; the published value and the all-on verdict are in the first columns. The harness
column drops ``fidelity.JOB_OVERHEAD_S`` (the only harness overhead the reproduce rows use:
``Costs.harness_overhead_s`` is 0 by default) and needs no extra run.
"""

from __future__ import annotations

import argparse
import time

from numalab import fidelity as fid

#: column label -> engine options (None: the all-on run with the harness overhead dropped)
CONFIGS = {
    "all on": {},
    "no LB pulls": {"lb_migrate_hz": 0.0},
    "no numa groups": {"numa_groups": False},
    "no task swaps": {"task_swaps": False},
    "no scan-period adapt": {"scan_period_adapt": False},
    "no 2-stage filter": {"migrate_filter": False},
    "no THP": {"thp": False},
    "no init coherence": {"init_coherence": False},
    "no first arrival": {"first_arrival": False},
    "no harness overhead": None,
}


def change_rows(published, sim):
    """(table, metric, published %change, simulated %change, verdict) of every %change row."""
    out = []
    for name, pub in published.items():
        for row in fid.compare(pub, sim):
            if row["quantity"].startswith("%change"):
                out.append((name, row["metric"], row["published"], row["simulated_mean"], row["verdict"]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--out", default=None, help="also write the table to this file")
    args = ap.parse_args(argv)
    cols, rows, base_sim, published = {}, None, None, None
    for label, opts in CONFIGS.items():
        t0 = time.process_time()
        if opts is None:
            saved = fid.JOB_OVERHEAD_S
            fid.JOB_OVERHEAD_S = 0.0
            try:
                res = change_rows(published, base_sim)
            finally:
                fid.JOB_OVERHEAD_S = saved
        else:
            published, sim = fid.simulate_calibration(seeds=args.seeds, **opts)
            res = change_rows(published, sim)
            if not opts:
                base_sim, rows = sim, res
        cols[label] = [r[3] for r in res]
        print(f"# {label}: {time.process_time() - t0:.0f} s CPU", flush=True)
    head = ["table", "metric", "published %", "verdict (all on)", *cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, (table, metric, pub, _, verdict) in enumerate(rows):
        vals = [f"{cols[c][i]:+.1f}" for c in cols]
        lines.append(f"| {table} | {metric.replace('autonuma-benchmark.', '')} | {pub:+.1f} | {verdict} | "
                     + " | ".join(vals) + " |")
    text = f"simulated mean %change, {args.seeds} seeds per policy, topology 2s-128\n\n" + "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()

"""How the access-PID history length acts, on every preset (issue 24 item 2; not a test).

For numa01, numa01_THREAD_ALLOC, numa02 and numa02_SMT on every topology preset, with the RFC
2023 p4 rules (no unconditional early passes, the disjoint select counter, a ring of N windows:
N = 2 is patch 3, N = 4 is patch 4) at N = 1, 2, 4, 6, 8, one ``numalab.sweep`` over
workload x topology x history x seed, and per run the links of the chain
(``numalab.engine.history_stats``):

* ``pids_per_window`` -- distinct hashed PIDs a buffer window recorded before its rotation
  (``vma_set_access_pid_bit`` on hinting faults; on a shared buffer only the first writer to
  reach a protected huge page faults, engine.faults);
* ``pid_pass_rate`` -- share of buffer visits whose scanner's bit was in the N windows the
  own-PID test of ``vma_is_accessed`` ORs;
* ``scan_coverage`` -- buffer regions ``change_prot_numa`` protected per completed pass
  (``numa_scan_seq``), as a share of the buffer;
* ``convergence_time`` -- seconds until 90 % of each process's pages stay on its node;
* ``elsp`` -- the benchmark's run time.

Writes ``history_mechanism.nc`` and ``history_mechanism.png`` (plots.history_mechanism) to
``--out`` and prints one markdown table per workload (the numbers docs/fidelity.md quotes).

Run: ``python benchmarks/history_mechanism.py [--seeds 2] [--out DIR] [--presets 2s-128,...]``
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numalab as nl

WORKLOADS = ("numa01", "numa01_THREAD_ALLOC", "numa02", "numa02_SMT")
HISTORY = (1, 2, 4, 6, 8)
VARIABLES = ("pids_per_window", "pid_pass_rate", "scan_coverage", "convergence_time", "elsp")


def run(seeds=2, presets=None, workloads=WORKLOADS, history=HISTORY, profile="rfc2023-p4", cache=True):
    presets = list(presets or nl.Topology.presets())
    grid = {"workload": list(workloads), "topology": presets, "profile": [profile], "history": list(history)}
    return nl.sweep(grid, seeds=seeds, cache=cache, progress=True)


def table(ds, workload) -> str:
    """One markdown table: a row per preset, per N the variables as ``a / b / c / d / e``."""
    d = ds.sel(workload=workload).squeeze(drop=True).mean("seed")
    hist = [int(h) for h in d.history.values]
    head = "| preset | " + " | ".join(f"N={h}" for h in hist) + " |"
    lines = [f"**{workload}** — per N: PIDs/window · own-PID pass rate · coverage/pass · convergence s · elsp s",
             "", head, "|" + "---|" * (len(hist) + 1)]
    for t in d.topology.values.tolist():
        cells = []
        for h in hist:
            x = d.sel(topology=t, history=h)
            cells.append(" · ".join(_fmt(float(x[v]), v) for v in VARIABLES))
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _fmt(v, name):
    if v != v:   # NaN: no window retired / never converged
        return "–"
    if name in ("pid_pass_rate", "scan_coverage"):
        return f"{v:.2f}"
    return f"{v:.1f}" if v < 100 else f"{v:.0f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--out", default="history-mechanism")
    ap.add_argument("--presets", default=None, help="comma-separated presets (default: all)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--profile", default="rfc2023-p4")
    args = ap.parse_args(argv)
    t = time.time()
    ds = run(args.seeds, args.presets.split(",") if args.presets else None, args.workloads.split(","),
             profile=args.profile)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from numalab.storage import write_netcdf

    write_netcdf(ds, out / "history_mechanism.nc")
    fig = nl.plots.history_mechanism(ds.squeeze("profile", drop=True) if "profile" in ds.dims else ds)
    nl.plots.save(fig, out / "history_mechanism.png")
    for w in ds.workload.values.tolist():
        print(table(ds.squeeze("profile", drop=True) if "profile" in ds.dims else ds, w), "\n")
    print(f"{time.time() - t:.0f} s wall; wrote {out}/history_mechanism.nc and .png")


if __name__ == "__main__":
    main()

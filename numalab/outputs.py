"""What ``numalab reproduce`` writes: per calibration table the published and simulated LKP
blocks one above the other and a fidelity figure; ``fidelity.csv`` with one row per published
number; the simulated Dataset. Every file is written atomically (:mod:`numalab.storage`)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import xarray as xr

from . import data, fidelity, report
from .storage import write_netcdf, write_text

__all__ = ["write_reproduction", "published_block", "simulated_block", "FIDELITY_COLUMNS"]

FIDELITY_COLUMNS = ["table", "metric", "quantity", "published", "simulated_mean", "simulated_std", "verdict"]


def published_block(name: str) -> str:
    """The robot's block as published (``data/<name>.lkp.txt``), re-printed through
    :func:`numalab.report.read_lkp` / :func:`numalab.report.lkp` (byte for byte the same)."""
    return report.lkp(report.read_lkp((data.data_dir() / f"{name}.lkp.txt").read_text()))


def simulated_block(published: xr.Dataset, sim: xr.Dataset) -> str:
    """The same block computed from simulated runs of the table's workloads and policies."""
    wls = [str(w) for w in published.workload.values]
    pols = [str(p) for p in published.policy.values]
    return report.lkp(sim.sel(workload=wls, policy=pols), along="policy", baseline=pols[0])


def _csv_text(rows) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIDELITY_COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})
    return buf.getvalue()


def write_reproduction(out, published: dict, sim: xr.Dataset) -> dict:
    """Write every output of ``numalab reproduce`` into ``out``; return their paths and a
    printable ``summary``."""
    from . import plots

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows, paths, parts = [], {}, []
    topo = sim.attrs.get("topology", "")
    for name, pub in published.items():
        text = (f"# {name}: published (kernel test robot, {pub.attrs['machine']})\n\n"
                f"{published_block(name)}\n"
                f"# {name}: simulated by numalab ({topo}, {sim.sizes['seed']} seeds)\n\n"
                f"{simulated_block(pub, sim)}")
        paths[f"{name}.txt"] = write_text(out / f"{name}.txt", text)
        parts.append(text)
        pub_change, sim_change = fidelity.paired_changes(pub, sim)
        fig = plots.fidelity(pub_change, sim_change, title=name)
        paths[f"{name}.png"] = plots.save(fig, out / f"{name}.png", dpi=120)
        rows += fidelity.compare(pub, sim)
    paths["fidelity.csv"] = write_text(out / "fidelity.csv", _csv_text(rows))
    paths["simulated.nc"] = write_netcdf(sim, out / "simulated.nc")
    ok = sum(r["verdict"] == fidelity.REPRODUCED for r in rows)
    verdicts = "\n".join(
        f"{r['metric']:<48} {r['quantity']:<32} {r['published']:>9.2f} {r['simulated_mean']:>9.2f} "
        f"± {r['simulated_std']:<7.2f} {r['verdict']}" for r in rows)
    summary = "\n".join(parts) + (
        f"\n{'metric':<48} {'quantity':<32} {'published':>9} {'simulated':>9}\n{verdicts}\n\n"
        f"{ok} of {len(rows)} published numbers reproduced; files in {out}/")
    return {"paths": paths, "rows": rows, "summary": summary}


"""What ``numalab reproduce`` writes: per published table the published and simulated LKP
blocks one above the other and a fidelity figure; one figure of every row of every table
(``fidelity.png``, one marker per machine); ``fidelity.csv`` with one row per published number
(its ``table`` column says which table); the simulated Datasets, one per machine preset. Every
file is written atomically (:mod:`numalab.storage`)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import xarray as xr

from . import data, fidelity, report
from .storage import write_netcdf, write_text

__all__ = ["write_reproduction", "published_block", "simulated_block", "fidelity_rows_figure", "rows_csv",
           "FIDELITY_COLUMNS", "VERDICT_COLUMNS", "SPREAD_COLUMNS", "verdict_cells", "verdict_table"]

#: fidelity.csv's columns (numalab.fidelity.compare's row fields): ``verdict`` is the published
#: rule, ``strict_verdict`` the strict one, ``robust`` robustness over the uncertainty box
#: (``band_lo``..``band_hi`` over ``band_points`` points), ``fitted`` the fitted constants set
#: from the row (its verdicts then count for nothing); a %change row's ``simulated_std`` is the
#: per-seed paired spread, ``run_std`` one run's unpaired spread and ``published_se`` the
#: published value's error from its table's printed spreads (nan: the table prints none), the strict
#: rule's terms (numalab.fidelity.rules.interval)
FIDELITY_COLUMNS = ["table", "metric", "quantity", "published", "simulated_mean", "simulated_std", "seeds",
                    "run_std", "published_se", "verdict", "strict_verdict", "band_lo", "band_hi", "band_points",
                    "robust", "fitted"]
#: spread.csv's columns (:func:`numalab.fidelity.spread_rows`)
SPREAD_COLUMNS = ["machine", "workload", "kernel", "published", "model", "verdict", "log_p"]


def published_block(name: str) -> str:
    """The robot's block as published (``data/<name>.lkp.txt``), re-printed through
    :func:`numalab.report.read_lkp` / :func:`numalab.report.lkp` (byte for byte the same).

    Tables transcribed without the mail's layout (``calibration-intel.md``: no ``.lkp.txt``)
    are typeset in the same layout from their CSV: the same numbers, ids as the CSV gives them."""
    path = data.data_dir() / f"{name}.lkp.txt"
    if path.exists():
        return report.lkp(report.read_lkp(path.read_text()))
    return report.lkp(report.read_lkp(_typeset(name)))


def _typeset(name: str) -> str:
    with open(data.data_dir() / f"{name}.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))

    def pm(v):
        return f" ±  {v}%" if v else ""

    lines = [f"{rows[0]['base_commit']} {rows[0]['new_commit']}", "---------------- ---------------------------",
             "         %stddev     %change         %stddev", "             \\          |                \\  "]
    for r in rows:
        lines.append(f"{r['base_value']}{pm(r['base_stddev_pct'])} {float(r['change_pct']):+.1f}% "
                     f"{r['new_value']}{pm(r['new_stddev_pct'])} {r['metric']}")
    return "\n".join(lines) + "\n"


def simulated_block(published: xr.Dataset, sim: xr.Dataset) -> str:
    """The same block computed from simulated runs of the table's workloads and policies (the
    vmstat rows of this block are per run of these workloads; fidelity.csv has the whole job)."""
    wls = [str(w) for w in published.workload.values]
    pols = [str(p) for p in published.policy.values]
    return report.lkp(sim.sel(workload=wls, policy=pols), along="policy", baseline=pols[0])


def rows_csv(rows, columns=FIDELITY_COLUMNS) -> str:
    """The rows as ``fidelity.csv`` holds them (``columns``, default :data:`FIDELITY_COLUMNS`;
    ``spread.csv``: :data:`SPREAD_COLUMNS`), floats to 4 figures."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items() if k in columns})
    return buf.getvalue()


def _range(lo_hi) -> str:
    return "" if lo_hi is None else f"[{lo_hi[0]:.4g}, {lo_hi[1]:.4g}]"


#: the columns of :func:`verdict_table` (and of ``nl.compare``'s HTML table)
VERDICT_COLUMNS = ("table", "metric", "quantity", "published", "simulated", "± std", "strict interval",
                   "range over the box", "verdict", "strict", "robust", "fitted")


def verdict_cells(r: dict) -> list[str]:
    """One row of :data:`VERDICT_COLUMNS` as text: the strict interval is where the published
    value must lie for the strict rule (:func:`numalab.fidelity.rules.strict_range`)."""
    band = (r["band_lo"], r["band_hi"]) if r.get("band_points") else None
    return [r["table"], r["metric"], r["quantity"], f"{r['published']:.4g}", f"{r['simulated_mean']:.4g}",
            f"{r['simulated_std']:.3g}", _range(fidelity.rules.strict_range(r)), _range(band), r["verdict"],
            r["strict_verdict"], r["robust"], r.get("fitted", "")]


def verdict_table(rows: list[dict]) -> str:
    """The per-row verdicts as ``numalab reproduce`` and ``numalab compare`` print them."""
    cells = [list(VERDICT_COLUMNS)] + [verdict_cells(r) for r in rows]
    width = [max(len(c[i]) for c in cells) for i in range(len(VERDICT_COLUMNS))]
    right = {3, 4, 5}           # numbers
    return "\n".join(" ".join((c[i].rjust(width[i]) if i in right else c[i].ljust(width[i]))
                              for i in range(len(c))).rstrip() for c in cells)


def _short(row) -> str:
    metric = row["metric"].removeprefix("autonuma-benchmark.").removesuffix(".seconds")
    metric = metric.removeprefix("proc-vmstat.").replace("time.elapsed_time", "elapsed_time")
    return f"{row['table'].removeprefix('lkp-')}: {metric}"


def fidelity_rows_figure(rows: list[dict], machines: dict, title=None, ax=None):
    """:func:`numalab.plots.fidelity_machines` of every %change row of ``rows`` (those of
    :func:`numalab.fidelity.compare`); ``machines`` maps a table to its machine's name."""
    from . import plots

    changes = [r for r in rows if r["quantity"].startswith("%change")]
    labels = [_short(r) for r in changes]
    pub = xr.DataArray([r["published"] for r in changes], dims="row",
                       coords={"row": labels, "machine": ("row", [machines[r["table"]] for r in changes])})
    sim = xr.DataArray([r["simulated_mean"] for r in changes], dims="row", coords={"row": labels})
    if title is None:
        ok = sum(r["verdict"] == fidelity.REPRODUCED for r in changes)
        title = f"published vs simulated %change: {ok} of {len(changes)} rows reproduced (base seconds: fidelity.csv)"
    return plots.fidelity_machines(pub, sim, ax, error=[r["simulated_std"] for r in changes], title=title)


def write_reproduction(out, published: dict, sims, rows=None, *, shown=None) -> dict:
    """Write every output of ``numalab reproduce`` into ``out``; return their paths, the rows
    and a printable ``summary``. ``sims``: ``{preset: Dataset}`` as
    :func:`numalab.fidelity.simulate_fidelity` returns it (a single Dataset is taken as the
    simulation of every table); ``rows``: the judged rows when already computed (with their
    uncertainty bands, :func:`numalab.fidelity.simulate_bands`), else
    :func:`numalab.fidelity.table_rows` of ``sims``. Also writes ``provenance.md``, the table
    of every default constant (:func:`numalab.fidelity.provenance_markdown`), ``spread.csv``, the
    model's run-to-run spread against every printed ``±`` (:func:`numalab.fidelity.spread_rows`),
    and with bands ``fidelity-bands.png`` (:func:`numalab.plots.fidelity_bands`). ``shown``: the folder the
    summary names (default ``out``; ``numalab reproduce`` writes into a staging folder first,
    see numalab.storage.staged_dir)."""
    from . import plots

    if isinstance(sims, xr.Dataset):
        sims = {sims.attrs.get("topology", "sim"): sims}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths, parts, machines = {}, [], {}
    for name, pub in published.items():
        sim = fidelity.table_sim(pub, sims)
        topo = sim.attrs.get("topology", "")
        machines[name] = f"{pub.attrs['machine']} ({topo})"
        text = (f"# {name}: published (kernel test robot, {pub.attrs['machine']}; {pub.attrs['source']})\n\n"
                f"{published_block(name)}\n"
                f"# {name}: simulated by numalab ({topo}, {sim.sizes['seed']} seeds)\n\n"
                f"{simulated_block(pub, sim)}")
        paths[f"{name}.txt"] = write_text(out / f"{name}.txt", text)
        parts.append(text)
        pub_change, sim_change = fidelity.paired_changes(pub, sim)
        fig = plots.fidelity(pub_change, sim_change, title=name)
        paths[f"{name}.png"] = plots.save(fig, out / f"{name}.png", dpi=120)
    rows = fidelity.table_rows(published, sims) if rows is None else rows
    paths["fidelity.csv"] = write_text(out / "fidelity.csv", rows_csv(rows))
    paths["fidelity.png"] = plots.save(fidelity_rows_figure(rows, machines), out / "fidelity.png", dpi=120)
    if any(r.get("band_points") for r in rows):
        paths["fidelity-bands.png"] = plots.save(plots.fidelity_bands(rows, label=_short), out / "fidelity-bands.png",
                                                 dpi=120)
    paths["provenance.md"] = write_text(out / "provenance.md", "# Where every default constant comes from\n\n"
                                        + fidelity.provenance_markdown())
    spread = fidelity.spread_rows(published, sims)
    paths["spread.csv"] = write_text(out / "spread.csv", rows_csv(spread, SPREAD_COLUMNS))
    loglik, n_finite, n_impossible = fidelity.spread_total(spread)
    for preset, sim in sims.items():
        key = "simulated.nc" if len(sims) == 1 else f"simulated-{preset}.nc"
        paths[key] = write_netcdf(sim, out / key)
    per_table = "\n".join(
        f"  {name:<40} {machines[name]:<28} "
        f"{sum(r['verdict'] == fidelity.REPRODUCED for r in rows if r['table'] == name)} of "
        f"{sum(r['verdict'] != fidelity.NOT_JUDGED for r in rows if r['table'] == name)}" for name in published)
    summary = "\n".join(parts) + (
        f"\n{verdict_table(rows)}\n\nper table (published rule):\n{per_table}\n\n"
        f"{fidelity.counts_text(fidelity.counts(rows))}\n"
        f"run-to-run spread: log-likelihood {loglik:.1f} of the printed ± under the model's spread over "
        f"{n_finite} (machine, test, kernel) rows, {n_impossible} printouts impossible (spread.csv)\n"
        f"files in {shown if shown is not None else out}/")
    return {"paths": paths, "rows": rows, "summary": summary}

"""Published tables against simulated runs: one row per published number (:func:`compare`).

``autonuma-benchmark.time.elapsed_time`` is the whole LKP job. Its published values equal, to
within a few seconds, ``iterations × Σ_tests seconds`` (4 × (341.49 + 186.67 + 21.17) = 2197 vs
2200 printed), so numalab simulates it the same way: ``JOB_ITERATIONS`` times the sum of the
simulated tests plus ``JOB_OVERHEAD_S`` per iteration for the harness (build and start-up).

The job's tests are those ``start_bench.sh`` runs for it (spec/benchmarks-and-reports.md §1.1):
``numa01`` and ``numa02`` always, plus the job's own ``<test>`` (``-t`` adds
numa01_THREAD_ALLOC, ``-s`` numa02_SMT) -- :func:`job_tests`. A table need not print all of
them (the robot prints only the stats that changed): the 2023-11 Sapphire Rapids report prints
numa01 and numa01_THREAD_ALLOC, yet its 1381 s job is 4 × (258.20 + 78.26 + 8.06) + 3 s, numa02
included. The ``proc-vmstat.*`` rows are whole-job counters too (LKP's proc-vmstat monitor runs
over the whole job), so they are simulated the same way: ``JOB_ITERATIONS`` times the sum over
the job's tests of the simulated counter of one run (:func:`job_counter`). A table read from
mmtests (``attrs["job"] == "mmtests"``) has no LKP job: its counters are summed over its own
workloads and it has no job time.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from ..stats import lkp_printed_var
from .rules import JOB_ITERATIONS, JOB_OVERHEAD_S, NOT_JUDGED, judge, published_se, verdict_base, verdict_change

__all__ = ["simulated_change", "unpaired_std", "compare", "JOB_OVERHEAD_S", "VMSTAT_COUNTERS", "job_tests",
           "job_elapsed", "job_counter", "table_preset", "calibration_tables", "table_sim", "table_rows",
           "paired_changes", "spread_rows", "spread_total"]

#: the proc-vmstat counters a published table may list, as simulated per run
VMSTAT_COUNTERS = ("numa_hint_faults", "numa_hint_faults_local", "numa_huge_pte_updates", "numa_pte_updates",
                   "numa_pages_migrated")
#: start_bench.sh's test order; numa01 and numa02 run in every job (spec/benchmarks-and-reports.md §1.1)
_JOB_ORDER = ("numa01", "numa01_THREAD_ALLOC", "numa02", "numa02_SMT")
_ALWAYS = ("numa01", "numa02")


def simulated_change(sim: xr.Dataset, base: str, new: str, var: str = "elsp") -> tuple:
    """Mean %change of ``var`` from policy ``base`` to ``new`` over seeds, and its stddev.

    The stddev is that of the per-seed ratio (seeds pair the same initial node B and TIDs),
    which is what the ±N % of the robot's new column expresses for a 4-iteration job."""
    b = sim[var].sel(policy=base)
    n = sim[var].sel(policy=new)
    change = 100.0 * (n.mean("seed") - b.mean("seed")) / b.mean("seed")
    paired = 100.0 * (n - b) / b
    return change, paired.std("seed", ddof=1) if sim.sizes["seed"] > 1 else paired.std("seed")


def unpaired_std(b, n) -> float:
    """The spread, in %change points, of one run's %change of ``n`` against ``b`` when the two
    kernels' runs are independent, as a real machine's are (separate boots): to first order
    ``100 / b̄ · √(s_n² + (n̄ / b̄)² s_b²)``, ``s`` the per-seed stddevs. The seeds pair the two
    kernels (the same node B and TIDs), so the per-seed paired spread of
    :func:`simulated_change` is the error of the model's mean change; this one is what a
    published number, a change between separate runs, scatters by (the strict rule,
    :func:`numalab.fidelity.rules.interval`). 0 with one seed."""
    b = np.asarray(b, dtype=float).ravel()
    n = np.asarray(n, dtype=float).ravel()
    if b.size < 2:
        return 0.0
    mb, mn = b.mean(), n.mean()
    return float(100.0 / mb * np.sqrt(n.var(ddof=1) + (mn / mb) ** 2 * b.var(ddof=1)))


def job_elapsed(sim: xr.Dataset) -> xr.DataArray:
    """Simulated ``autonuma-benchmark.time.elapsed_time`` per policy and seed (module docstring):
    the sum over ``sim``'s workloads (select the job's tests first, :func:`job_tests`)."""
    return JOB_ITERATIONS * (sim["elsp"].sum("workload") + JOB_OVERHEAD_S)


def job_counter(sim: xr.Dataset, counter: str) -> xr.DataArray:
    """Simulated whole-job ``proc-vmstat.<counter>`` per policy and seed: ``JOB_ITERATIONS``
    times the sum over ``sim``'s workloads (the job's tests) of one run's counter."""
    return JOB_ITERATIONS * sim[counter].astype(float).sum("workload")


def job_tests(published: xr.Dataset) -> list[str]:
    """The tests the table's LKP job ran (module docstring), in start_bench.sh's order; an
    mmtests table's own workloads."""
    own = [str(w) for w in published.workload.values]
    if published.attrs.get("job") == "mmtests":
        return own
    wanted = {*_ALWAYS, *own}
    if published.attrs.get("job_test"):
        wanted.add(published.attrs["job_test"])
    return [w for w in _JOB_ORDER if w in wanted] + sorted(wanted - set(_JOB_ORDER))


def table_preset(published: xr.Dataset) -> str:
    """The topology preset of the table's machine (``lkp-spr-r02`` -> ``"2s-224-spr"``)."""
    from ..topology import PRESET_ALIASES

    machine = published.attrs["machine"]
    if machine not in PRESET_ALIASES:
        from ..errors import NumalabValueError

        raise NumalabValueError(f"table {published.attrs.get('table')!r}: machine {machine!r} has no topology "
                                f"preset; allowed: {', '.join(PRESET_ALIASES)}")
    return PRESET_ALIASES[machine]


def _std(x) -> float:
    return float(x.std(ddof=1)) if x.size > 1 else 0.0


def _row(name, metric, quantity, published, sim_values, verdict, fitted) -> dict:
    from ..provenance import row_id

    return dict(table=name, metric=metric, quantity=quantity, published=published,
                simulated_mean=float(sim_values.mean()), simulated_std=_std(sim_values),
                seeds=int(sim_values.size), verdict=verdict,
                fitted=";".join(fitted.get(row_id(name, metric, quantity), ())))


def _change_row(name, metric, base, new, b, n, pub_change, fitted, printed=None):
    """A %change row; ``printed``: the table's ``± r%`` of the two kernels (NaN = hidden, at most
    2 %), or None where the table gives no spread (the published value's error then comes from
    the model's ``run_std``)."""
    paired = 100 * (n - b) / b
    row = _row(name, metric, f"%change {new} vs {base}", pub_change, paired, "", fitted)
    row["simulated_mean"] = float(100 * (n.mean() - b.mean()) / b.mean())   # change of the means
    row["verdict"] = verdict_change(pub_change, row["simulated_mean"])
    row["run_std"] = unpaired_std(b, n)
    row["published_se"] = math.nan if printed is None else \
        published_se(pub_change, *(float(v) for v in lkp_printed_var(np.asarray(printed, dtype=float))))
    return row


def _printed(published: xr.Dataset, var: str, base: str, new: str, workload: str | None = None):
    """The table's printed relative stddevs (base, new) of ``var`` (``elsp``: per workload), or
    None when the table has none (``<var>_stddev_pct`` holds LKP's ``± r%``, NaN where hidden)."""
    da = published.get(f"{var}_stddev_pct")
    if da is None:
        return None
    if workload is not None:
        da = da.sel(workload=workload)
    return float(da.sel(policy=base)), float(da.sel(policy=new))


def compare(published: xr.Dataset, sim: xr.Dataset) -> list[dict]:
    """One row per published number: ``table``, ``metric``, ``quantity``, ``published``,
    ``simulated_mean``, ``simulated_std`` (over seeds), ``seeds``, ``verdict`` (the published
    rule), ``strict_verdict``, ``robust`` (:mod:`numalab.fidelity.rules`) and ``fitted`` (the
    fitted constants set from this row, ``;``-joined; empty for most rows).

    ``published`` is ``numalab.data.load(name)`` (or a table read with
    :func:`numalab.fidelity.published_from_report`); ``sim`` has ``elsp`` with dims
    ``("workload", "policy", "seed")`` covering the table's workloads and both policies."""
    from .constants import fitted_rows

    fitted = fitted_rows()
    base, new = (str(p) for p in published.policy.values)
    name = published.attrs["table"]
    _check_sim(published, sim, [base, new])
    rows = []
    for wl in published.workload.values:
        wl = str(wl)
        s = sim["elsp"].sel(workload=wl)
        metric = f"autonuma-benchmark.{wl}.seconds"
        pub_base = float(published.elsp.sel(workload=wl, policy=base))
        b, n = s.sel(policy=base), s.sel(policy=new)
        rows.append(_row(name, metric, f"{base} seconds", pub_base, b, verdict_base(pub_base, float(b.mean())),
                         fitted))
        rows.append(_change_row(name, metric, base, new, b, n, float(published.change_pct.sel(workload=wl)),
                                fitted, _printed(published, "elsp", base, new, wl)))
    job = None
    if any(str(v).startswith("job_") for v in published.data_vars):
        job = sim.sel(workload=job_tests(published), policy=[base, new])
    if "job_time_elapsed_time" in published:
        t = job_elapsed(job)
        rows.append(_change_row(name, "autonuma-benchmark.time.elapsed_time", base, new, t.sel(policy=base),
                                t.sel(policy=new), float(published["job_time_elapsed_time_change_pct"]), fitted,
                                _printed(published, "job_time_elapsed_time", base, new)))
    for counter in VMSTAT_COUNTERS:
        var = f"job_vmstat_{counter}"
        if var not in published:
            continue
        c = job_counter(job, counter)
        b, n = c.sel(policy=base), c.sel(policy=new)
        metric = f"proc-vmstat.{counter}"
        rows.append(_row(name, metric, f"{base} whole job", float(published[var].sel(policy=base)), b, NOT_JUDGED,
                         fitted))
        rows.append(_change_row(name, metric, base, new, b, n, float(published[f"{var}_change_pct"]), fitted,
                                _printed(published, var, base, new)))
    return [judge(r) for r in rows]


def _check_sim(published, sim, policies):
    """The simulation holds what the table needs (its workloads, its job's tests, both
    policies, elsp and the counters it lists), or a NumalabValueError says what is missing."""
    from ..errors import NumalabValueError

    name = published.attrs.get("table", "table")
    for dim in ("workload", "policy", "seed"):
        if dim not in sim.dims:
            raise NumalabValueError(f"{name}: the simulated Dataset has no {dim!r} dim; allowed: dims "
                                    f"(workload, policy, seed) as numalab.fidelity.simulate_fidelity returns")
    wls = [str(w) for w in published.workload.values]
    if any(str(v).startswith("job_") for v in published.data_vars):
        wls += [w for w in job_tests(published) if w not in wls]
    for dim, want in (("workload", wls), ("policy", policies)):
        have = {str(v) for v in sim[dim].values}
        missing = [w for w in want if w not in have]
        if missing:
            raise NumalabValueError(f"{name}: the simulated Dataset lacks {dim} {', '.join(missing)}; allowed: one "
                                    f"that has {', '.join(want)} (have: {', '.join(sorted(have))})")
    counters = [c for c in VMSTAT_COUNTERS if f"job_vmstat_{c}" in published]
    missing = [v for v in ["elsp", *counters] if v not in sim]
    if missing:
        raise NumalabValueError(f"{name}: the simulated Dataset lacks the variables {', '.join(missing)}")


def calibration_tables(machine: str | None = None) -> list[str]:
    """Names of the published LKP tables of the calibration set (``data/lkp-*.csv``), all of
    them or those of one robot machine (``"lkp-icl-2sp6"``: the two tables of calibration.md)."""
    from .. import data

    names = [n for n in data.names() if n.startswith("lkp-")]
    if machine is None:
        return names
    return [n for n in names if data.load(n).attrs["machine"] == machine]


def table_sim(published: xr.Dataset, sims: dict) -> xr.Dataset:
    """The simulated Dataset a table is judged on (its machine's), from
    :func:`numalab.fidelity.simulate_fidelity`'s ``sims``."""
    if len(sims) == 1:
        return next(iter(sims.values()))
    return sims[published.attrs.get("preset") or table_preset(published)]


def table_rows(published: dict, sims: dict) -> list[dict]:
    """:func:`compare` of every table on its machine's simulation, a base column several
    tables share (the RFC summary's three patches against one base) judged once: the rows
    ``fidelity.csv`` holds."""
    rows, seen = [], set()
    for pub in published.values():
        for r in compare(pub, table_sim(pub, sims)):
            key = (pub.attrs.get("machine"), pub.attrs.get("source"), r["metric"], r["quantity"], r["published"])
            if r["quantity"].startswith("%change") or key not in seen:
                seen.add(key)
                rows.append(r)
    return rows


def spread_rows(published: dict, sims: dict) -> list[dict]:
    """:func:`numalab.stats.spread_vs_published` over every table on its machine's simulation,
    each (machine, workload, kernel) once (tables share base columns), with ``machine`` added:
    the model's run-to-run spread beside the robot's printed one and ``log_p``, the printout's
    log-probability under the model's spread (``numalab reproduce``'s ``spread.csv``)."""
    from ..stats import spread_vs_published

    rows, seen = [], set()
    for pub in published.values():
        for r in spread_vs_published(pub, table_sim(pub, sims)):
            key = (pub.attrs["machine"], r["workload"], r["kernel"])
            if key not in seen:
                seen.add(key)
                rows.append({"machine": key[0], **r})
    return rows


def spread_total(rows: list[dict]) -> tuple[float, int, int]:
    """Over :func:`spread_rows`: the log-likelihood of the printed spreads under the model's
    (the sum of the finite ``log_p``), the rows it sums, and the rows whose printout has
    probability 0 to double precision (the machine's runs vary far more than the model's)."""
    logp = np.array([r["log_p"] for r in rows], dtype=float)
    finite = np.isfinite(logp)
    return float(logp[finite].sum()), int(finite.sum()), int(np.isneginf(logp).sum())


def paired_changes(published: xr.Dataset, sim: xr.Dataset) -> tuple[xr.DataArray, xr.DataArray]:
    """Published %change per workload and the simulated per-seed %change (dims workload, seed)
    of the table's new policy against its base, for :func:`numalab.plots.fidelity`."""
    base, new = (str(p) for p in published.policy.values)
    wls = [str(w) for w in published.workload.values]
    s = sim["elsp"].sel(workload=wls)
    per_seed = 100.0 * (s.sel(policy=new) - s.sel(policy=base)) / s.sel(policy=base)
    pub = published.change_pct.rename(f"%change {new} vs {base}")
    return pub, per_seed.rename(f"simulated %change {new} vs {base}")

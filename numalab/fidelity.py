"""Published-vs-simulated comparison for the calibration set (issue: reproduce the kernel test
robot's results).

The verdict rules are those of ``shared/reference/calibration.md``:

* a published change with ``|%change| >= 5`` is *reproduced* when the simulated change has the
  same sign and a size within a factor of 2 (−27.1 % → between −13.55 % and −54.2 %);
* a published change with ``|%change| < 5`` is reproduced when the simulated change stays within
  ±7 %;
* the base column's absolute seconds are reproduced when within a factor of 2.

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
the job's tests of the simulated counter of one run (:func:`job_counter`).

Every table runs on the topology preset of its machine (:data:`numalab.topology.PRESET_ALIASES`
maps the robot's machine names), with the same defaults everywhere: :func:`simulate_fidelity`.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

__all__ = [
    "verdict_change",
    "verdict_base",
    "simulated_change",
    "compare",
    "JOB_ITERATIONS",
    "JOB_OVERHEAD_S",
    "REPRODUCED",
    "NOT_JUDGED",
    "VMSTAT_COUNTERS",
    "job_tests",
    "job_counter",
    "table_preset",
    "simulate_fidelity",
]

REPRODUCED = "reproduced"
NOT_JUDGED = "not judged"   # a whole-job counter's base value: printed for scale, no rule applies
#: the proc-vmstat counters a published table may list, as simulated per run
VMSTAT_COUNTERS = ("numa_hint_faults", "numa_hint_faults_local", "numa_huge_pte_updates", "numa_pte_updates",
                   "numa_pages_migrated")
#: start_bench.sh's test order; numa01 and numa02 run in every job (spec/benchmarks-and-reports.md §1.1)
_JOB_ORDER = ("numa01", "numa01_THREAD_ALLOC", "numa02", "numa02_SMT")
_ALWAYS = ("numa01", "numa02")
JOB_ITERATIONS = 4          # LKP job "4x" (calibration.md job path)
JOB_OVERHEAD_S = 1.0        # per iteration: start_bench.sh's make/awk, measured as the gap 2200 - 2197


def verdict_change(published_pct: float, simulated_pct: float) -> str:
    """Verdict for one %change row (rules in the module docstring)."""
    if not np.isfinite(simulated_pct):
        return "not simulated"
    if abs(published_pct) >= 5:
        if np.sign(simulated_pct) != np.sign(published_pct):
            return "wrong sign"
        ratio = abs(simulated_pct) / abs(published_pct)
        if ratio < 0.5:
            return "too small"
        if ratio > 2:
            return "too large"
        return REPRODUCED
    return REPRODUCED if abs(simulated_pct) <= 7 else "too large"


def verdict_base(published_s: float, simulated_s: float) -> str:
    """Verdict for a base-column absolute time: within a factor of 2."""
    if not np.isfinite(simulated_s):
        return "not simulated"
    ratio = simulated_s / published_s
    if ratio < 0.5:
        return "too fast"
    if ratio > 2:
        return "too slow"
    return REPRODUCED


def simulated_change(sim: xr.Dataset, base: str, new: str, var: str = "elsp") -> tuple:
    """Mean %change of ``var`` from policy ``base`` to ``new`` over seeds, and its stddev.

    The stddev is that of the per-seed ratio (seeds pair the same initial node B and TIDs),
    which is what the ±N % of the robot's new column expresses for a 4-iteration job."""
    b = sim[var].sel(policy=base)
    n = sim[var].sel(policy=new)
    change = 100.0 * (n.mean("seed") - b.mean("seed")) / b.mean("seed")
    paired = 100.0 * (n - b) / b
    return change, paired.std("seed", ddof=1) if sim.sizes["seed"] > 1 else paired.std("seed")


def job_elapsed(sim: xr.Dataset) -> xr.DataArray:
    """Simulated ``autonuma-benchmark.time.elapsed_time`` per policy and seed (module docstring):
    the sum over ``sim``'s workloads (select the job's tests first, :func:`job_tests`)."""
    return JOB_ITERATIONS * (sim["elsp"].sum("workload") + JOB_OVERHEAD_S)


def job_counter(sim: xr.Dataset, counter: str) -> xr.DataArray:
    """Simulated whole-job ``proc-vmstat.<counter>`` per policy and seed: ``JOB_ITERATIONS``
    times the sum over ``sim``'s workloads (the job's tests) of one run's counter."""
    return JOB_ITERATIONS * sim[counter].astype(float).sum("workload")


def job_tests(published: xr.Dataset) -> list[str]:
    """The tests the table's LKP job ran (module docstring), in start_bench.sh's order."""
    wanted = {*_ALWAYS, *(str(w) for w in published.workload.values)}
    if published.attrs.get("job_test"):
        wanted.add(published.attrs["job_test"])
    return [w for w in _JOB_ORDER if w in wanted] + sorted(wanted - set(_JOB_ORDER))


def table_preset(published: xr.Dataset) -> str:
    """The topology preset of the table's machine (``lkp-spr-r02`` -> ``"2s-224-spr"``)."""
    from .topology import PRESET_ALIASES

    machine = published.attrs["machine"]
    if machine not in PRESET_ALIASES:
        from .errors import NumalabValueError

        raise NumalabValueError(f"table {published.attrs.get('table')!r}: machine {machine!r} has no topology "
                                f"preset; allowed: {', '.join(PRESET_ALIASES)}")
    return PRESET_ALIASES[machine]


def _job_change_row(published, name, metric, base, new, b, n, pub_change):
    change = float(100 * (n.mean() - b.mean()) / b.mean())
    return dict(table=name, metric=metric, quantity=f"%change {new} vs {base}", published=pub_change,
                simulated_mean=change, simulated_std=float((100 * (n - b) / b).std(ddof=1)),
                verdict=verdict_change(pub_change, change))


def compare(published: xr.Dataset, sim: xr.Dataset) -> list[dict]:
    """One row per published number: published, simulated mean, simulated stddev, verdict.

    ``published`` is ``numalab.data.load(name)``; ``sim`` has ``elsp`` with dims
    ``("workload", "policy", "seed")`` covering the table's workloads and both policies."""
    base, new = (str(p) for p in published.policy.values)
    rows = []
    for wl in published.workload.values:
        wl = str(wl)
        s = sim.sel(workload=wl)
        metric = f"autonuma-benchmark.{wl}.seconds"
        pub_base = float(published.elsp.sel(workload=wl, policy=base))
        sim_base = s["elsp"].sel(policy=base)
        rows.append(dict(
            table=published.attrs["table"], metric=metric, quantity=f"{base} seconds",
            published=pub_base, simulated_mean=float(sim_base.mean()), simulated_std=float(sim_base.std(ddof=1)),
            verdict=verdict_base(pub_base, float(sim_base.mean())),
        ))
        change, std = simulated_change(s, base, new)
        pub_change = float(published.change_pct.sel(workload=wl))
        rows.append(dict(
            table=published.attrs["table"], metric=metric, quantity=f"%change {new} vs {base}",
            published=pub_change, simulated_mean=float(change), simulated_std=float(std),
            verdict=verdict_change(pub_change, float(change)),
        ))
    name = published.attrs["table"]
    if "job_time_elapsed_time" in published:
        job = job_elapsed(sim.sel(workload=job_tests(published), policy=[base, new]))
        rows.append(_job_change_row(published, name, "autonuma-benchmark.time.elapsed_time", base, new,
                                    job.sel(policy=base), job.sel(policy=new),
                                    float(published["job_time_elapsed_time_change_pct"])))
    for counter in VMSTAT_COUNTERS:
        var = f"job_vmstat_{counter}"
        if var not in published:
            continue
        job = job_counter(sim.sel(workload=job_tests(published), policy=[base, new]), counter)
        b, n = job.sel(policy=base), job.sel(policy=new)
        metric = f"proc-vmstat.{counter}"
        rows.append(dict(table=name, metric=metric, quantity=f"{base} whole job",
                         published=float(published[var].sel(policy=base)), simulated_mean=float(b.mean()),
                         simulated_std=float(b.std(ddof=1)), verdict=NOT_JUDGED))
        rows.append(_job_change_row(published, name, metric, base, new, b, n, float(published[f"{var}_change_pct"])))
    return rows


def calibration_tables(machine: str | None = None) -> list[str]:
    """Names of the published LKP tables of the calibration set (``data/lkp-*.csv``), all of
    them or those of one robot machine (``"lkp-icl-2sp6"``: the two tables of calibration.md)."""
    from . import data

    names = [n for n in data.names() if n.startswith("lkp-")]
    if machine is None:
        return names
    return [n for n in names if data.load(n).attrs["machine"] == machine]


def simulate_calibration(tables=None, *, seeds=8, topology="2s-128", progress=False, **engine_options):
    """Simulate every (workload, profile) the given tables need on one topology, one batched
    engine call per workload (all profiles × seeds). ``tables`` default: the Ice Lake tables of
    ``calibration.md`` (machine ``lkp-icl-2sp6``, preset ``"2s-128"``); for every table on its
    own machine use :func:`simulate_fidelity`.

    Returns ``(published, sim)``: the loaded tables ``{name: Dataset}`` and one Dataset with
    ``elsp``/``syst``/counters on dims ``("workload", "policy", "seed")``."""
    from . import data

    tables = calibration_tables("lkp-icl-2sp6") if tables is None else list(tables)
    published = {name: data.load(name) for name in tables}
    return published, _simulate_needs(_needs(published.values()), seeds, topology, progress, engine_options)


def simulate_fidelity(tables=None, *, seeds=8, topology=None, progress=False, **engine_options):
    """Simulate every published table (default: all of ``data/``) on the topology preset of its
    machine (:func:`table_preset`; ``topology=`` puts every table on that one instead).

    Each (machine, workload) is one batched engine call over every profile any table of that
    machine needs for that workload -- its own rows and its job's tests (:func:`job_tests`) -- so a
    run shared by several tables (the Sapphire Rapids base ``6.4`` of the RFC summary and of
    the PID-filter table, the Cascade Lake runs of the monitored and monitors-off tables) is
    simulated once. Results do not depend on the batch's composition (a seed gives the same run
    in any batch).

    Returns ``(published, sims)``: ``{table: Dataset}`` and ``{preset: Dataset}`` with dims
    ``("workload", "policy", "seed")``; a (workload, policy) no table needs holds NaN."""
    from . import data

    tables = calibration_tables() if tables is None else list(tables)
    published = {name: data.load(name) for name in tables}
    by_preset: dict[str, list] = {}
    for pub in published.values():
        by_preset.setdefault(topology or table_preset(pub), []).append(pub)
    sims = {preset: _simulate_needs(_needs(pubs), seeds, preset, progress, engine_options)
            for preset, pubs in by_preset.items()}
    return published, sims


def table_sim(published: xr.Dataset, sims: dict) -> xr.Dataset:
    """The simulated Dataset a table is judged on (its machine's), from :func:`simulate_fidelity`'s
    ``sims``."""
    if len(sims) == 1:
        return next(iter(sims.values()))
    return sims[table_preset(published)]


def _needs(pubs) -> dict[str, list[str]]:
    """workload -> the profiles the tables need it for (their rows and their job's tests)."""
    needs: dict[str, list[str]] = {}
    for ds in pubs:
        profiles = [str(p) for p in ds.policy.values]
        wls = job_tests(ds) if any(v.startswith("job_") for v in ds.data_vars) else [str(w) for w in ds.workload.values]
        for wl in [str(w) for w in ds.workload.values] + wls:
            have = needs.setdefault(wl, [])
            have += [p for p in profiles if p not in have]
    return needs


def _simulate_needs(needs: dict, seeds, topology, progress, engine_options) -> xr.Dataset:
    from .engine import simulate
    from .engine.results import per_run

    runs = []
    bar = _progress(list(needs), progress, f"simulating on {topology}")
    for wl in bar:
        ds = simulate(wl, needs[wl], seeds=seeds, topology=topology, **engine_options)
        runs.append(per_run(ds).expand_dims(workload=[wl]))
    sim = xr.concat(runs, dim="workload", join="outer", combine_attrs="drop_conflicts")
    sim.attrs["workload"] = ",".join(needs)
    sim.attrs["topology"] = topology if isinstance(topology, str) else getattr(topology, "name", "custom")
    return sim


def _progress(items, enabled, desc):
    if not enabled:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, unit="workload")


def paired_changes(published: xr.Dataset, sim: xr.Dataset) -> tuple[xr.DataArray, xr.DataArray]:
    """Published %change per workload and the simulated per-seed %change (dims workload, seed)
    of the table's new policy against its base, for :func:`numalab.plots.fidelity`."""
    base, new = (str(p) for p in published.policy.values)
    wls = [str(w) for w in published.workload.values]
    s = sim["elsp"].sel(workload=wls)
    per_seed = 100.0 * (s.sel(policy=new) - s.sel(policy=base)) / s.sel(policy=base)
    pub = published.change_pct.rename(f"%change {new} vs {base}")
    return pub, per_seed.rename(f"simulated %change {new} vs {base}")

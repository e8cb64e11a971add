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
]

REPRODUCED = "reproduced"
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
    """Simulated ``autonuma-benchmark.time.elapsed_time`` per policy and seed (module docstring)."""
    return JOB_ITERATIONS * (sim["elsp"].sum("workload") + JOB_OVERHEAD_S)


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
    if "job_time_elapsed_time" in published:
        job = job_elapsed(sim.sel(workload=[str(w) for w in published.workload.values]))
        b, n = job.sel(policy=base), job.sel(policy=new)
        change = float(100 * (n.mean() - b.mean()) / b.mean())
        pub_change = float(published["job_time_elapsed_time_change_pct"])
        rows.append(dict(
            table=published.attrs["table"], metric="autonuma-benchmark.time.elapsed_time",
            quantity=f"%change {new} vs {base}", published=pub_change, simulated_mean=change,
            simulated_std=float((100 * (n - b) / b).std(ddof=1)),
            verdict=verdict_change(pub_change, change),
        ))
    return rows


def calibration_tables() -> list[str]:
    """Names of the published LKP tables of the calibration set (``data/lkp-*.csv``)."""
    from . import data

    return [n for n in data.names() if n.startswith("lkp-")]


def simulate_calibration(tables=None, *, seeds=8, topology="2s-128", progress=False, **engine_options):
    """Simulate every (workload, profile) the calibration tables need, one batched engine call
    per workload (all profiles × seeds), on the matching topology preset.

    Returns ``(published, sim)``: the loaded tables ``{name: Dataset}`` and one Dataset with
    ``elsp``/``syst``/counters on dims ``("workload", "policy", "seed")``."""
    from . import data
    from .engine import simulate
    from .engine.results import per_run

    tables = calibration_tables() if tables is None else list(tables)
    published = {name: data.load(name) for name in tables}
    workloads, profiles = [], []
    for ds in published.values():
        workloads += [str(w) for w in ds.workload.values if str(w) not in workloads]
        profiles += [str(p) for p in ds.policy.values if str(p) not in profiles]
    runs = []
    bar = _progress(workloads, progress, "simulating calibration workloads")
    for wl in bar:
        ds = simulate(wl, profiles, seeds=seeds, topology=topology, **engine_options)
        runs.append(per_run(ds).expand_dims(workload=[wl]))
    sim = xr.concat(runs, dim="workload", combine_attrs="drop_conflicts")
    sim.attrs["workload"] = ",".join(workloads)
    return published, sim


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

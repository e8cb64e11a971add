"""The xarray layer over the engine: finished batches -> one Dataset (DESIGN.md contract).

Dims ``("policy", "seed")`` for per-run variables and ``time`` (plus ``process``, ``node``)
for the series. Every variable carries ``units`` and ``long_name``, and ``kernel_name`` where it
mirrors a kernel counter. Attrs are netCDF-safe (str/int/float; dicts as JSON).
"""

from __future__ import annotations

import json

import numpy as np

from .._version import __version__
from ..counters import COUNTER_NAMES, HISTORY_VARIABLES, VARIABLE_ATTRS as _VARIABLE_ATTRS, reason_variable
from . import history_stats

__all__ = ["to_dataset", "VARIABLE_ATTRS"]

#: variable -> attrs of the per-run variables (the table of numalab.counters)
VARIABLE_ATTRS = _VARIABLE_ATTRS


CONVERGED = 0.9   # issue 9: "until 90 % of each process's pages sit on the node ..."


def convergence_time(converged_fraction, resolution):
    """Seconds until the run converged: the first sample from which every later sample (of the
    processes still running in full, i.e. finite values) has every process at >= ``CONVERGED``.

    ``converged_fraction`` has dims (..., time, process); returns (...), NaN where the last
    running sample is not converged."""
    cf = np.asarray(converged_fraction, dtype=float)
    bad = (cf < CONVERGED).any(axis=-1)                       # NaN compares False: not bad
    seen = np.isfinite(cf).any(axis=-1)
    L = cf.shape[-2]
    idx = np.arange(L)
    last_bad = np.where(bad, idx, -1).max(axis=-1)            # (...)
    any_seen = seen.any(axis=-1)
    start = last_bad + 1                                      # first sample after the last miss
    first_seen_after = np.where(seen & (idx >= start[..., None]), idx, L).min(axis=-1)
    ok = any_seen & (first_seen_after < L)
    return np.where(ok, first_seen_after * resolution, np.nan)


def to_dataset(wl, policies, seeds, batches, o, costs):
    import xarray as xr

    data = {}

    def per_run(name, getter, dtype):
        arr = np.stack([np.asarray(getter(b), dtype=dtype) for b in batches])
        data[name] = (("policy", "seed"), arr, dict(VARIABLE_ATTRS.get(name, {})))

    per_run("elsp", lambda b: b.outcome.elsp, float)
    per_run("syst", lambda b: b.counters.syst, float)
    for k in COUNTER_NAMES:
        per_run(k, lambda b, k=k: b.counters.events[k], np.int64)
    per_run("finished", lambda b: b.outcome.finished, np.int8)
    stats = [history_stats.summary(b) for b in batches]
    for c in HISTORY_VARIABLES:
        data[c.name] = (("policy", "seed"), np.stack([s_[c.name] for s_ in stats]), dict(c.attrs))
    # one variable per decision of any policy (a user rule's only where a policy has it: 0 elsewhere)
    decisions = [p.decisions for p in policies]
    names = list(dict.fromkeys(n for d in decisions for n in d.names))
    for reason in names:
        dec = next(d for d in decisions if reason in d.code)
        var = reason_variable(reason, not dec.allowed[dec.code[reason]])
        arr = np.stack([b.counters.reasons[:, d.code[reason]] if reason in d.code else np.zeros(len(seeds), np.int64)
                        for b, d in zip(batches, decisions)]).astype(np.int64)
        data[var.name] = (("policy", "seed"), arr, var.attrs)

    # series: pad to the longest run
    L = max(len(b.obs.series_t) for b in batches)
    res = o["time_resolution"]
    time = np.arange(L) * res

    def pad(b, key, shape_tail):
        arr = np.stack(b.obs.series[key], axis=0).astype(float)                  # (L_b, R, ...)
        out = np.full((L, *arr.shape[1:]), np.nan)
        out[: arr.shape[0]] = arr
        return np.moveaxis(out, 0, 1)                                        # (R, L, ...)

    M, N = wl.nproc, wl.topology.nodes
    pn = np.stack([pad(b, "pages_node", (M, N)) for b in batches])              # (P, S, L, M, N)
    data["pages_node"] = (("policy", "seed", "time", "process", "node"), pn,
                          dict(units="pages", long_name="resident base pages of each process on each node"))
    lf = np.stack([pad(b, "local_fraction", ()) for b in batches])
    data["local_fraction"] = (("policy", "seed", "time"), lf,
                              dict(units="1", long_name="share of written bytes that went to the writer's node"))
    sp = np.stack([pad(b, "scan_period", (M,)) for b in batches])
    data["scan_period"] = (("policy", "seed", "time", "process"), sp,
                           dict(units="ms", long_name="mean numa_scan_period of the process's worker threads",
                                kernel_name="numa_scan_period"))
    cf = np.stack([pad(b, "converged_fraction", (M,)) for b in batches])
    data["converged_fraction"] = (("policy", "seed", "time", "process"), cf, dict(
        units="1", long_name="share of the process's accessed pages on the node most of their accesses come from"))
    data["convergence_time"] = (("policy", "seed"), convergence_time(cf, res), dict(
        units="s", long_name=f"time from which {CONVERGED:.0%} of each process's accessed pages stay on the node "
                             "most of their accesses come from, while all its threads run (NaN: never)"))
    fa = np.stack([pad(b, "faults", ()) for b in batches]) / res
    data["faults_per_s"] = (("policy", "seed", "time"), fa,
                            dict(units="1/s", long_name="NUMA hinting faults per second",
                                 kernel_name="numa_hint_faults (rate)"))
    coords = dict(policy=("policy", [p.name for p in policies], dict(long_name="scan-filter policy")),
                  seed=("seed", np.asarray(seeds, dtype=np.int64), dict(long_name="random seed")),
                  time=("time", time, dict(units="s", long_name="simulated time")),
                  process=("process", np.arange(M), dict(long_name="process (mm) index")),
                  node=("node", np.arange(N), dict(long_name="NUMA node")))
    params = {k: v for k, v in o.items()}
    params["costs"] = costs.to_dict()
    params["policies"] = [p.to_dict() for p in policies]
    attrs = dict(numalab_version=__version__, workload=wl.name,
                 workload_params=json.dumps(wl.params, sort_keys=True, default=str),
                 topology=wl.topology.name,
                 parameters=json.dumps(params, sort_keys=True, default=str),
                 title=f"numalab simulation of {wl.name} on {wl.topology.name}")
    attrs.update({k: (json.dumps(v) if isinstance(v, (bool, dict, list, type(None))) else v)
                  for k, v in wl.topology.to_attrs().items()})
    # the arrays are numpy arrays already: fastpath Variables skip xarray's duck-array checks,
    # whose first call imports dask.array when dask is installed (a third of a second nl.simulate
    # does not need; an xarray operation that does imports it then)
    def var(dims, values, var_attrs):
        return xr.Variable(dims, np.asarray(values), var_attrs, fastpath=True)
    return xr.Dataset({k: var(*v) for k, v in data.items()}, coords={k: var(*v) for k, v in coords.items()},
                      attrs=attrs)


def per_run(ds):
    """The per-run variables of a :func:`numalab.simulate` Dataset: those on ``("policy",
    "seed")`` only, without the time series and per-process variables (whose shapes differ
    between workloads), and without the coordinates only those used."""
    keep = [v for v in ds.data_vars if set(ds[v].dims) <= {"policy", "seed"}]
    out = ds[keep]
    return out.drop_vars([c for c in out.coords if c not in ("policy", "seed")])

"""Fit futex cost constants to measured rows (:mod:`numalab.futex.calibration`).

A measurement row is ``(mode, threads, buckets, ops_per_s_per_thread)`` -- what ``perf bench
futex hash`` prints as "Averaged X operations/sec". :func:`calibrate` finds the constants of
:class:`~numalab.futex.solver.FutexCosts` named in ``fit`` that minimise the squared log
error of the MVA prediction (Levenberg-Marquardt on log-constants with forward-difference
Jacobians; common random numbers: the same seeds' bucket maps at every evaluation).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import NumalabValueError, check_choice, check_int, check_seeds
from ..topology import Topology
from .hash import MODES
from .solver import COST_NAMES, FutexCosts, coerce_costs, mva, network
from .workloads import PERF_BENCH, route, workload_for

__all__ = ["CalibrationResult", "calibrate", "measurement_rows", "DEFAULT_FIT"]

#: identifiable from rows that span uncontended (many buckets), saturated (2 buckets) and
#: one-node vs two-node thread counts, with the same-node line latency held at the Topology's
DEFAULT_FIT = ("syscall_ns", "critical_section_ns", "line_remote_ns")


@dataclass(frozen=True, eq=False)
class CalibrationResult:
    """``costs``: the fitted :class:`FutexCosts`; ``constants``: the fitted values by name;
    ``residuals``: log(predicted / measured) per row; ``predictions``: an xarray Dataset over
    ``row``; ``iterations`` of the fit."""

    costs: FutexCosts
    constants: dict
    residuals: np.ndarray
    predictions: object
    iterations: int


def measurement_rows(measurements) -> dict:
    """Normalise a table (list of dicts, dict of columns, pandas DataFrame or xarray Dataset)
    with columns mode, threads, buckets, ops_per_s_per_thread to a dict of arrays."""
    cols = ("mode", "threads", "buckets", "ops_per_s_per_thread")
    if hasattr(measurements, "to_dataframe") and hasattr(measurements, "data_vars"):
        measurements = measurements.to_dataframe().reset_index()
    if hasattr(measurements, "to_dict") and hasattr(measurements, "columns"):
        measurements = {c: np.asarray(measurements[c]) for c in measurements.columns}
    if isinstance(measurements, (list, tuple)):
        if not measurements or not all(isinstance(r, dict) for r in measurements):
            raise NumalabValueError("measurements must be a non-empty list of dicts or a table")
        measurements = {c: [r.get(c) for r in measurements] for c in cols}
    if not isinstance(measurements, dict):
        raise NumalabValueError(f"measurements of type {type(measurements).__name__}; allowed: list of dicts, dict of columns, DataFrame, Dataset")
    missing = [c for c in cols if c not in measurements]
    if missing:
        raise NumalabValueError(f"measurements lack column(s) {missing}; allowed columns: {', '.join(cols)}")
    out = {c: np.asarray(measurements[c]) for c in cols}
    n = out["mode"].size
    if n == 0 or any(v.size != n for v in out.values()):
        raise NumalabValueError("measurements columns must be non-empty and of equal length")
    rate = out["ops_per_s_per_thread"].astype(float)
    if not np.all(np.isfinite(rate)) or np.any(rate <= 0):
        raise NumalabValueError("ops_per_s_per_thread must hold finite numbers > 0")
    out["ops_per_s_per_thread"] = rate
    out["threads"] = np.array([check_int("threads", int(t), lo=1) for t in out["threads"]])
    out["buckets"] = out["buckets"].astype(np.int64)
    out["mode"] = np.array([check_choice("mode", str(m), MODES) for m in out["mode"]])
    return out


def _routings(rows, topology, seeds, futexes, workload_kw):
    groups = []
    for m, t, b in zip(rows["mode"], rows["threads"], rows["buckets"]):
        # buckets -1 = the kernel's own size (no prctl / default table)
        w = workload_for(PERF_BENCH, topology, mode=str(m), buckets=None if b < 0 else int(b),
                         threads=int(t),
                         futexes=futexes, **workload_kw)
        groups.append([route(w, s) for s in seeds])
    return groups


def _predict(groups, costs):
    flat = [rt for g in groups for rt in g]
    net = network(flat, costs)
    res = mva(net)
    per_point = np.bincount(net.cls_point, weights=net.cls_n * res["x"] * net.cls_counted) / np.bincount(
        net.cls_point, weights=net.cls_n * net.cls_counted)
    return per_point.reshape(len(groups), -1).mean(axis=1) * 1e9


def calibrate(measurements, topology, *, fit=DEFAULT_FIT, costs=None, seeds=4, futexes=1024,
              max_iter=50, **workload_kw) -> CalibrationResult:
    """Fit cost constants to measured perf-bench-futex-hash rows on ``topology``.

    ``measurements``: rows of ``mode`` ("classic" | "numa" | "private"), ``threads``,
    ``buckets`` (private: slots, 0 = global hash; classic/numa: table size; -1 = the kernel's
    size) and ``ops_per_s_per_thread`` (perf bench's "Averaged" figure), as a list of dicts,
    a dict of columns, a DataFrame or a Dataset.

    ``fit`` names the constants to fit (default :data:`DEFAULT_FIT`); the others stay at
    ``costs`` (defaults: the documented constants). Returns a :class:`CalibrationResult`.
    """
    topology = Topology.coerce(topology)
    rows = measurement_rows(measurements)
    fit = tuple(fit)
    if not fit:
        raise NumalabValueError("fit must name at least one constant")
    for name in fit:
        check_choice("fit", name, COST_NAMES)
    base = coerce_costs(costs).resolve(topology)
    seeds = check_seeds(seeds)
    groups = _routings(rows, topology, seeds, futexes, workload_kw)
    y = np.log(rows["ops_per_s_per_thread"])

    def model(theta):
        c = replace(base, **{n: float(np.exp(v)) for n, v in zip(fit, theta)})
        return np.log(_predict(groups, c))

    theta = np.log(np.array([max(getattr(base, n), 1e-3) for n in fit], dtype=float))
    r = model(theta) - y
    lam, it = 1e-2, 0
    for it in range(1, max_iter + 1):
        J = np.empty((y.size, theta.size))
        h = 1e-4
        for i in range(theta.size):
            tp = theta.copy()
            tp[i] += h
            J[:, i] = (model(tp) - y - r) / h
        g = J.T @ r
        H = J.T @ J
        improved = False
        for _ in range(10):
            step = np.linalg.solve(H + lam * np.diag(np.diag(H) + 1e-12), -g)
            step = np.clip(step, -2.0, 2.0)
            r_new = model(theta + step) - y
            if r_new @ r_new < r @ r:
                theta, r, improved = theta + step, r_new, True
                lam = max(lam / 3.0, 1e-9)
                break
            lam *= 10.0
        if not improved or np.max(np.abs(step)) < 1e-7:
            break
    fitted = {n: float(np.exp(v)) for n, v in zip(fit, theta)}
    best = replace(base, **fitted)
    pred = np.exp(r + y)
    import xarray as xr

    ds = xr.Dataset(
        {
            "measured": ("row", rows["ops_per_s_per_thread"], {"units": "1/s", "long_name": "measured ops/s per thread"}),
            "ops_per_s_per_thread": ("row", pred, {"units": "1/s", "long_name": "predicted ops/s per thread (MVA, fitted constants)"}),
            "residual": ("row", r, {"units": "1", "long_name": "log(predicted / measured)"}),
        },
        coords={"row": np.arange(y.size), "mode": ("row", rows["mode"]), "threads": ("row", rows["threads"]),
                "buckets": ("row", rows["buckets"])},
        attrs={"fitted": ",".join(fit), **{f"cost_{k}": v for k, v in best.to_dict().items()}, **topology.to_attrs()},
    )
    return CalibrationResult(best, fitted, r, ds, it)

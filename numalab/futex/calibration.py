"""Fit futex cost constants to measured rows (:mod:`numalab.futex.calibration`).

A measurement row is ``(mode, threads, buckets, ops_per_s_per_thread)`` -- what ``perf bench
futex hash`` prints as "Averaged X operations/sec". :func:`calibrate` finds the constants of
:class:`~numalab.futex.solver.FutexCosts` named in ``fit`` that minimise the squared log
error of the MVA prediction: Levenberg-Marquardt on log-constants with forward-difference
Jacobians, common random numbers (the same seeds' bucket maps at every evaluation), the
network's structure built once and only re-priced per evaluation, each MVA warm-started from
the last solution. At the optimum it reports each constant's standard error from the
Jacobian of the residuals, ``cov = s^2 (J^T J)^-1`` with ``s^2`` the residual variance (at
least the :data:`NOISE_FLOOR` of a benchmark run), and flags the constants the rows cannot
identify (relative standard error above :data:`IDENTIFIABLE_REL`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import NumalabValueError, check_choice, check_int, check_seeds
from ..topology import KERNEL_COSTS, Topology
from .hash import hash_mode
from ..provenance import provenance_of
from .costs import _UNIT_WEIGHTS, MEASURED_FROM, RELATIVE_BANDS, from_measurement
from .solver import COST_NAMES, FutexCosts, coerce_costs, mva, network
from .workloads import PERF_BENCH, route, workload_for

__all__ = ["CalibrationResult", "CrossValidation", "calibrate", "predict", "predict_band", "cross_validate",
           "banded_constants", "measurement_rows", "prior_sigma", "DEFAULT_FIT", "NOISE_FLOOR", "IDENTIFIABLE_REL"]

#: the per-operation CPU cost outside the lock (syscall entry/exit: the mitigations and the
#: clock vary most between machines) and the cross-node line transfer: both pinned down by
#: the rows of one thread count on two nodes (the flat part fixes the first, the saturated
#: part the second). The hold time and the same-node line latency stay at their documented
#: values: those rows see them only in sums with the others (fit them too and the result
#: flags them as unidentified -- and predicts another thread count worse).
DEFAULT_FIT = ("syscall_ns", "line_remote_ns")
#: log-residual standard deviation assumed at least (perf bench's own run-to-run spread, a
#: few per cent), so a perfect fit still reports how well the rows pin each constant down
NOISE_FLOOR = 0.02
#: a constant whose relative standard error exceeds this is flagged as not identified
IDENTIFIABLE_REL = 0.5


@dataclass(frozen=True, eq=False)
class CalibrationResult:
    """``costs``: the fitted :class:`FutexCosts`; ``constants``: the fitted values by name;
    ``uncertainty``: standard error of each by name (same units), ``relative_uncertainty``
    (standard error / value), ``correlation`` (fit x fit matrix, order of ``constants``),
    ``identified``: name -> whether the rows pin it down (relative error <=
    :data:`IDENTIFIABLE_REL`), ``unidentified``: the names that fail it; ``residuals``:
    log(predicted / measured) per row; ``predictions``: an xarray Dataset over ``row``;
    ``iterations`` of the fit, ``evaluations`` of the model, ``seconds`` of wall time."""

    costs: FutexCosts
    constants: dict
    uncertainty: dict
    relative_uncertainty: dict
    correlation: np.ndarray
    identified: dict
    residuals: np.ndarray
    predictions: object
    iterations: int
    evaluations: int = 0
    seconds: float = 0.0

    @property
    def unidentified(self) -> tuple:
        return tuple(n for n, ok in self.identified.items() if not ok)

    def summary(self) -> str:
        """One line per fitted constant: value +- standard error, and the identification flag."""
        lines = []
        for n, v in self.constants.items():
            flag = "" if self.identified[n] else "   NOT IDENTIFIED by these rows"
            lines.append(f"{n:>22} = {v:10.4g} +- {self.uncertainty[n]:.3g} "
                         f"({100 * self.relative_uncertainty[n]:.0f} %){flag}")
        rms = float(np.sqrt(np.mean(self.residuals ** 2)))
        lines.append(f"{'rms log residual':>22} = {rms:.3f} over {self.residuals.size} rows")
        return "\n".join(lines)


def measurement_rows(measurements, *, need_rate: bool = True) -> dict:
    """Normalise a table (list of dicts, dict of columns, pandas DataFrame or xarray Dataset)
    with columns mode, threads, buckets, ops_per_s_per_thread to a dict of arrays
    (``need_rate=False``: the rate column may be absent, as for :func:`predict`)."""
    cols = ("mode", "threads", "buckets") + (("ops_per_s_per_thread",) if need_rate else ())
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
    if need_rate:
        rate = out["ops_per_s_per_thread"].astype(float)
        if not np.all(np.isfinite(rate)) or np.any(rate <= 0):
            raise NumalabValueError("ops_per_s_per_thread must hold finite numbers > 0")
        out["ops_per_s_per_thread"] = rate
    out["threads"] = np.array([check_int("threads", int(t), lo=1) for t in out["threads"]])
    out["buckets"] = out["buckets"].astype(np.int64)
    # the kernel's futex hash of each row (a mode name, spec or HashMode object), and its name
    out["hash_mode"] = [hash_mode(m) for m in out["mode"]]
    out["mode"] = np.array([m if isinstance(m, str) else h.name for m, h in zip(out["mode"], out["hash_mode"])])
    return out


def _workloads(rows, topology, futexes, workload_kw):
    out = []
    for m, t, b in zip(rows["hash_mode"], rows["threads"], rows["buckets"]):
        # buckets -1 = the kernel's own size (no prctl / default table)
        out.append(workload_for(PERF_BENCH, topology, mode=m, buckets=None if b < 0 else int(b),
                                threads=int(t), futexes=futexes, **workload_kw))
    return out


class _Model:
    """The rows' network built once; :meth:`__call__` re-prices it and solves the MVA,
    warm-started from the previous solution (same fixed point, fewer iterations)."""

    def __init__(self, rows, topology, seeds, futexes, workload_kw, tol=1e-10):
        ws = _workloads(rows, topology, futexes, workload_kw)
        self.n_rows, self.n_seeds = len(ws), len(seeds)
        self.net = network([route(w, s) for w in ws for s in seeds], keep_threads=False)
        self.tol = tol
        self.last = None
        self.evaluations = 0

    def __call__(self, costs) -> np.ndarray:
        net = self.net.with_costs(costs)
        res = mva(net, tol=self.tol, max_iter=20000, start=self.last)
        self.last = res
        self.evaluations += 1
        w = net.cls_n * net.cls_counted
        per_point = np.bincount(net.cls_point, weights=w * res["x"]) / np.bincount(net.cls_point, weights=w)
        return per_point.reshape(self.n_rows, self.n_seeds).mean(axis=1) * 1e9


def predict(measurements, topology, *, costs=None, seeds=4, futexes=1024, **workload_kw) -> np.ndarray:
    """The MVA's ops/s per thread for each row of ``measurements`` (its ``ops_per_s_per_thread``
    column may be absent), mean over ``seeds``: what :func:`calibrate` compares with."""
    topology = Topology.coerce(topology)
    rows = measurement_rows(measurements, need_rate=False)
    return _Model(rows, topology, check_seeds(seeds), futexes, workload_kw, tol=1e-8)(
        coerce_costs(costs).resolve(topology))


def prior_sigma(name: str, topology: Topology | None = None, costs=None) -> float:
    """Log-space standard deviation of a constant's prior: a quarter of the log width of its
    band (the band spans +-2 sigma; relative bands are factors of the Topology's figure);
    1 (a factor e) for a constant without a band or with a band reaching 0 (the weights).

    On a ``topology`` whose kernel costs were measured, a constant :meth:`FutexCosts.resolve`
    derives from them (not given in ``costs``) has the band of its measurement instead: the
    constant's range over the corners of its figures' provenance bands (the probe's repeats)."""
    topology = None if topology is None else Topology.coerce(topology)
    if topology is not None and name in from_measurement(topology, costs):
        lo, hi = _measured_range(topology, coerce_costs(costs), name)
    else:
        prov = provenance_of(FutexCosts).get(name)
        if prov is None or prov.band is None:
            return 1.0
        lo, hi = prov.band
    if lo <= 0:
        return 1.0
    return max(np.log(hi / lo) / 4.0, 1e-3)


def _measured_range(topology: Topology, given: FutexCosts, name: str) -> tuple:
    """A derived constant's lowest and highest value over the corners of the measured figures'
    bands it comes from (:func:`_measured_figures`)."""
    import itertools

    figs = _measured_figures(topology, (name,))
    values = [getattr(given.resolve(replace(topology, **dict(zip(figs, corner)))), name)
              for corner in itertools.product(*figs.values())]
    return min(values), max(values)


def _fit_names(fit) -> tuple:
    """``fit`` as a tuple, checked: at least one name, each a :data:`COST_NAMES` entry, none twice."""
    fit = tuple(fit)
    if not fit:
        raise NumalabValueError("fit must name at least one constant")
    for name in fit:
        check_choice("fit", name, COST_NAMES)
    if len(set(fit)) != len(fit):
        raise NumalabValueError(f"fit={fit} names a constant twice; allowed: distinct names from {COST_NAMES}")
    return fit


def _jacobian(residual, theta: np.ndarray, r: np.ndarray, h: float = 1e-4) -> np.ndarray:
    """Forward-difference Jacobian of the log residuals ``r = residual(theta)`` in the
    log-constants ``theta``, (rows, fit) [log ratio per unit of log-constant], step ``h``."""
    J = np.empty((r.size, theta.size))
    for i in range(theta.size):
        tp = theta.copy()
        tp[i] += h
        J[:, i] = (residual(tp) - r) / h
    return J


def _levenberg_marquardt(residual, theta: np.ndarray, max_iter: int):
    """Minimise ``|residual(theta)|^2`` over the log-constants ``theta`` from the given start:
    Levenberg-Marquardt with Marquardt's diagonal scaling and steps clipped to +-2 (a factor
    e^2 per constant), until no better step, a step below 1e-6 or a relative gain below 1e-6.
    Returns ``(theta, r, J, iterations)``: the optimum, its log residuals and their
    Jacobian there."""
    r = residual(theta)
    lam, it = 1e-2, 0
    J = _jacobian(residual, theta, r)
    for it in range(1, max_iter + 1):
        g = J.T @ r
        H = J.T @ J
        improved = False
        for _ in range(10):
            step = np.linalg.solve(H + lam * np.diag(np.diag(H) + 1e-12), -g)
            step = np.clip(step, -2.0, 2.0)
            r_new = residual(theta + step)
            if r_new @ r_new < r @ r:
                gain = 1.0 - (r_new @ r_new) / max(r @ r, 1e-300)
                theta, r, improved = theta + step, r_new, True
                lam = max(lam / 3.0, 1e-9)
                break
            lam *= 10.0
        # converged: no better step, a negligible one, or a negligible gain in the misfit
        if not improved or np.max(np.abs(step)) < 1e-6 or gain < 1e-6:
            break
        J = _jacobian(residual, theta, r)
    if improved:
        J = _jacobian(residual, theta, r)
    return theta, r, J, it


def _standard_errors(fit: tuple, fitted: dict, r: np.ndarray, J: np.ndarray):
    """Standard errors of the fitted constants from the Jacobian ``J`` of the log residuals
    ``r`` at the optimum: ``cov = s^2 (J^T J)^-1`` in log-constants (= relative errors),
    ``s^2`` the residual variance, at least :data:`NOISE_FLOOR` squared. Returns
    ``(uncertainty, relative, correlation, identified)``: by name, the standard error (the
    constant's units) and the relative one [1], the fit x fit correlation matrix, and whether
    the relative error is at most :data:`IDENTIFIABLE_REL`."""
    dof = max(r.size - len(fit), 1)
    s2 = max(float(r @ r) / dof, NOISE_FLOOR ** 2)
    cov = s2 * np.linalg.pinv(J.T @ J)
    rel = np.sqrt(np.maximum(np.diag(cov), 0.0))
    sd = np.sqrt(np.maximum(np.diag(cov), 1e-300))
    corr = cov / np.outer(sd, sd)
    rel_d = {n: float(v) for n, v in zip(fit, rel)}
    unc = {n: fitted[n] * rel_d[n] for n in fit}
    ident = {n: bool(rel_d[n] <= IDENTIFIABLE_REL) for n in fit}
    return unc, rel_d, corr, ident


def _fit_dataset(rows: dict, r: np.ndarray, y: np.ndarray, fit: tuple, best: FutexCosts, unc: dict,
                 ident: dict, topology: Topology):
    """The rows' xarray Dataset over ``row``: measured and predicted ops/s per thread [1/s]
    and the log residual [1], with the fitted costs, their standard errors, the unidentified
    names and the topology as attributes."""
    pred = np.exp(r + y)
    import xarray as xr

    return xr.Dataset(
        {
            "measured": ("row", rows["ops_per_s_per_thread"], {"units": "1/s", "long_name": "measured ops/s per thread"}),
            "ops_per_s_per_thread": ("row", pred, {"units": "1/s", "long_name": "predicted ops/s per thread (MVA, fitted constants)"}),
            "residual": ("row", r, {"units": "1", "long_name": "log(predicted / measured)"}),
        },
        coords={"row": np.arange(y.size), "mode": ("row", rows["mode"]), "threads": ("row", rows["threads"]),
                "buckets": ("row", rows["buckets"])},
        attrs={"fitted": ",".join(fit), **{f"cost_{k}": v for k, v in best.to_dict().items()},
               **{f"stderr_{k}": v for k, v in unc.items()},
               "unidentified": ",".join(n for n in fit if not ident[n]), **topology.to_attrs()},
    )


def calibrate(measurements, topology, *, fit=DEFAULT_FIT, costs=None, seeds=4, futexes=1024,
              max_iter=50, **workload_kw) -> CalibrationResult:
    """Fit cost constants to measured perf-bench-futex-hash rows on ``topology``.

    ``measurements``: rows of ``mode`` ("classic" | "numa" | "private", or any mode
    :func:`~numalab.futex.hash.hash_mode` accepts), ``threads``,
    ``buckets`` (private: slots, 0 = global hash; classic/numa: table size; -1 = the kernel's
    size) and ``ops_per_s_per_thread`` (perf bench's "Averaged" figure), as a list of dicts,
    a dict of columns, a DataFrame or a Dataset. Other keyword arguments go to
    :func:`~numalab.futex.perf_bench_hash` (e.g. ``refcount="immutable"`` for ``-I`` runs).

    ``fit`` names the constants to fit (default :data:`DEFAULT_FIT`); the others stay at
    ``costs`` (defaults: the documented constants). Each fitted constant's plausible band
    (its provenance) is a log-normal prior around its starting value (:func:`prior_sigma`; on a
    probed machine a measured constant's prior is its measurement's band),
    so the fit is a maximum a posteriori estimate: the rows decide what they can see, the
    sources the rest. The standard errors and identification flags are the rows' alone (the
    Jacobian of the residuals without the prior). Returns a :class:`CalibrationResult`
    (``fit.summary()`` prints it).
    """
    import time

    t0 = time.perf_counter()
    topology = Topology.coerce(topology)
    rows = measurement_rows(measurements)
    fit = _fit_names(fit)
    max_iter = check_int("max_iter", max_iter, lo=1)
    base = coerce_costs(costs).resolve(topology)
    model_rows = _Model(rows, topology, check_seeds(seeds), futexes, workload_kw)
    y = np.log(rows["ops_per_s_per_thread"])
    bounds = {n: 1.0 for n in _UNIT_WEIGHTS}

    def priced(theta):
        vals = {n: float(np.exp(v)) for n, v in zip(fit, theta)}
        return replace(base, **{n: min(v, bounds.get(n, np.inf)) for n, v in vals.items()})

    def residual(theta):
        return np.log(model_rows(priced(theta))) - y

    # maximum a posteriori: each constant's band is its prior (log-normal, the band +-2 sigma
    # around the default), so a constant the rows cannot see stays where its source puts it
    # instead of drifting along a flat direction; the rows are weighed as NOISE_FLOOR-noisy
    theta0 = np.log(np.array([max(getattr(base, n), 1e-3) for n in fit], dtype=float))
    sigma = np.array([prior_sigma(n, topology, costs) for n in fit])
    ny = y.size

    def posterior(theta):
        return np.concatenate([residual(theta), NOISE_FLOOR * (theta - theta0) / sigma])

    theta, r_all, J_all, it = _levenberg_marquardt(posterior, theta0.copy(), max_iter)
    r, J = r_all[:ny], J_all[:ny]          # what the rows alone say (errors, identification)
    best = priced(theta)
    fitted = {n: float(getattr(best, n)) for n in fit}
    unc, rel_d, corr, ident = _standard_errors(fit, fitted, r, J)
    ds = _fit_dataset(rows, r, y, fit, best, unc, ident, topology)
    return CalibrationResult(best, fitted, unc, rel_d, corr, ident, r, ds, it,
                             model_rows.evaluations, time.perf_counter() - t0)


def _band_box(names, base: FutexCosts, topology: Topology) -> dict:
    """name -> (lo, hi) in the constant's units for the band sampling: the provenance band,
    a factor of the Topology's figure for the relative ones."""
    box = {}
    c = base.resolve(topology)
    for n in names:
        prov = provenance_of(FutexCosts)[n]
        if prov.band is None:
            raise NumalabValueError(f"names={n!r} has no band in its provenance; allowed: constants with a band")
        lo, hi = prov.band
        if n in RELATIVE_BANDS:
            lo, hi = lo * getattr(c, n), hi * getattr(c, n)
        box[n] = (float(lo), float(hi))
    return box


def _measured_figures(topology: Topology, derived) -> dict:
    """Topology figure -> (lo, hi) for each measured figure a ``derived`` constant comes from:
    the band of its provenance (the probe's repeats), or the value alone where none is recorded."""
    prov = topology.provenance()
    out = {}
    for f in sorted({f for n in derived for f in MEASURED_FROM[n]}, key=KERNEL_COSTS.index):
        v, band = getattr(topology, f), prov[f].band
        out[f] = (float(min(band[0], v)), float(max(band[1], v))) if band else (float(v), float(v))
    return out


def banded_constants() -> tuple:
    """The constants whose provenance gives a plausible band (what :func:`predict_band`
    samples by default)."""
    return tuple(n for n, p in provenance_of(FutexCosts).items() if p.band is not None)


def predict_band(measurements, topology, *, names=None, costs=None, samples=24, sample_seed=0, seeds=2,
                 futexes=1024, **workload_kw):
    """The model's range for each row when every banded constant ranges over its plausible
    band (its provenance): a Latin hypercube of ``samples`` points over the box (log-uniform
    for positive bands, uniform for the weights), each row's minimum and maximum over them,
    and the prediction at ``costs`` (the defaults). Returns an xarray Dataset over ``row``
    (``ops_per_s_per_thread``, ``low``, ``high``, the ``samples``; the box as attributes; with
    measured rows also ``measured`` and ``inside``). A wide band is the model saying what to
    measure.

    On a topology whose kernel costs were measured (``numalab probe``: ``Topology.syscall_ns``,
    ``futex_private_ns``, ``futex_shared_ns``) a constant resolved from them and not given in
    ``costs`` is not sampled over its stated band: the measured figure is, over the band its
    provenance gives (the probe's repeats), and the constant follows from it and the other
    sampled constants as :meth:`FutexCosts.resolve` derives it (the box's ``band_topology_*``
    attributes)."""
    topology = Topology.coerce(topology)
    rows = measurement_rows(measurements, need_rate=False)
    names = banded_constants() if names is None else tuple(names)
    samples = check_int("samples", samples, lo=2, hi=4096)
    given = coerce_costs(costs)
    base = given.resolve(topology)
    taken = from_measurement(topology, given)
    derived = tuple(n for n in names if n in taken)
    figures = _measured_figures(topology, derived)
    names = tuple(n for n in names if n not in derived)
    box = {**_band_box(names, base, topology), **{f"topology_{f}": band for f, band in figures.items()}}
    model = _Model(rows, topology, check_seeds(seeds), futexes, workload_kw, tol=1e-8)
    centre = model(base)
    rng = np.random.default_rng(check_int("sample_seed", sample_seed, lo=0))
    # Latin hypercube: each constant's range cut into `samples` strata, one draw per stratum
    u = (rng.permuted(np.tile(np.arange(samples), (len(box), 1)), axis=1) + rng.random((len(box), samples))) / samples
    preds = np.empty((samples, centre.size))
    for s in range(samples):
        vals = {}
        for i, (n, (lo, hi)) in enumerate(box.items()):
            vals[n] = lo * (hi / lo) ** u[i, s] if lo > 0 else lo + (hi - lo) * u[i, s]
        if figures:   # the measured figures drawn, the constants they give derived from them
            measured = replace(topology, **{f: vals.pop(f"topology_{f}") for f in figures})
            preds[s] = model(replace(given, **vals).resolve(measured))
        else:
            preds[s] = model(replace(base, **vals))
    import xarray as xr

    out = xr.Dataset(
        {"ops_per_s_per_thread": ("row", centre, {"units": "1/s", "long_name": "prediction at the given constants"}),
         "low": ("row", np.minimum(preds.min(axis=0), centre), {"units": "1/s", "long_name": "lowest over the band box"}),
         "high": ("row", np.maximum(preds.max(axis=0), centre), {"units": "1/s", "long_name": "highest over the band box"}),
         "samples": (("sample", "row"), preds, {"units": "1/s", "long_name": "prediction at each Latin-hypercube point"})},
        coords={"row": np.arange(centre.size), "threads": ("row", rows["threads"]), "buckets": ("row", rows["buckets"]),
                "mode": ("row", rows["mode"])},
        attrs={"banded": ",".join(names), **{f"band_{n}": f"{lo:g} {hi:g}" for n, (lo, hi) in box.items()},
               **topology.to_attrs()},
    )
    try:
        meas = measurement_rows(measurements)["ops_per_s_per_thread"]
    except NumalabValueError:
        meas = None                          # rows without a measured rate: a prediction only
    if meas is not None:
        out["measured"] = ("row", meas, {"units": "1/s", "long_name": "measured ops/s per thread"})
        out["inside"] = ("row", (meas >= out["low"].values) & (meas <= out["high"].values),
                         {"long_name": "measured value inside the band"})
    return out


@dataclass(frozen=True, eq=False)
class CrossValidation:
    """:func:`cross_validate`'s answer: ``fits`` (group value -> :class:`CalibrationResult`
    of the rows of that group), ``table`` (one dict per (calibrated on, scored on) pair:
    ``train``, ``test``, ``in_sample``, ``rms_log`` and ``max_error`` = max |predicted /
    measured - 1|) and ``predictions`` (train -> predicted ops/s per thread of every row)."""

    by: str
    fits: dict
    table: list
    predictions: dict

    def summary(self) -> str:
        lines = [f"{'calibrated on':>14} {'scored on':>10} {'':>15} {'rms log':>8} {'max |err|':>10}"]
        for r in self.table:
            kind = "in-sample" if r["in_sample"] else "cross-validated"
            lines.append(f"{self.by + '=' + str(r['train']):>14} {self.by + '=' + str(r['test']):>10} "
                         f"{kind:>15} {r['rms_log']:8.3f} {100 * r['max_error']:9.0f} %")
        return "\n".join(lines)


def cross_validate(measurements, topology, *, by="threads", fit=DEFAULT_FIT, costs=None, seeds=4, futexes=1024,
                   **workload_kw) -> CrossValidation:
    """Calibrate on the rows of each value of ``by`` (a column: "threads", "buckets" or
    "mode") and score the prediction on every group, itself (in-sample) and the others
    (cross-validated): a constant the model needs to be right for one thread count but wrong
    for another shows as the gap between the two."""
    topology = Topology.coerce(topology)
    rows = measurement_rows(measurements)
    check_choice("by", by, ("threads", "buckets", "mode"))
    groups = list(dict.fromkeys(rows[by].tolist()))
    if len(groups) < 2:
        raise NumalabValueError(f"by={by!r} has {len(groups)} group(s); allowed: a column with at least 2 values")
    y = rows["ops_per_s_per_thread"]
    fits, preds, table = {}, {}, []
    for g in groups:
        sel = rows[by] == g
        sub = {k: (v[sel] if isinstance(v, np.ndarray) else [x for x, m in zip(v, sel) if m]) for k, v in rows.items()}
        fits[g] = calibrate(sub, topology, fit=fit, costs=costs, seeds=seeds, futexes=futexes, **workload_kw)
        preds[g] = predict(rows, topology, costs=fits[g].costs, seeds=seeds, futexes=futexes, **workload_kw)
        for h in groups:
            m = rows[by] == h
            ratio = preds[g][m] / y[m]
            table.append(dict(train=g, test=h, in_sample=g == h, rms_log=float(np.sqrt(np.mean(np.log(ratio) ** 2))),
                              max_error=float(np.max(np.abs(ratio - 1.0)))))
    return CrossValidation(by, fits, table, preds)

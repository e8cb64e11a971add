"""mmtests and kernel-test-robot (LKP) statistics, vectorised over array axes / xarray dims.

Everything here follows spec/benchmarks-and-reports.md §2.2-§2.4 (mmtests' ``Stat.pm``,
``Summarise*.pm``, ``Compare.pm``) and §3.1 (LKP ``lib/compare.rb``, ``lib/statistics.rb``).

Conventions shared by every function:

* samples lie along ``axis`` (numpy) or ``dim`` (xarray, ``"seed"`` for simulations); a NaN
  sample means "no run" and is left out, so rows with unequal sample counts can share an array;
* ``direction`` is ``"lower"`` (times: autonumabench) or ``"higher"`` (throughputs) and decides
  the sort order, which end is "best", which mean is used and the sign of the percentage;
* ``era`` picks the mmtests code generation (see :data:`ERAS`).

No scipy: the Student-t tail needed for the 2018-2024 significance test is computed from the
regularised incomplete beta function (Lentz continued fraction), see :func:`t_sf`.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import NumalabValueError, check_choice, check_int

__all__ = [
    "ERAS",
    "DIRECTIONS",
    "NORM_PPF_975",
    "stat_labels",
    "count",
    "sample_min",
    "sample_max",
    "amean",
    "hmean",
    "gmean",
    "stddev",
    "hstddev",
    "coeffvar",
    "best_mean",
    "pndiff",
    "pdiff",
    "percent",
    "betainc",
    "t_sf",
    "t_cdf",
    "ttest_significant",
    "band_significant",
    "lkp_mean",
    "lkp_stddev",
    "lkp_stddev_pct",
    "LKP_SHOWN_ABOVE_PCT",
    "lkp_printed_range",
    "lkp_printed_var",
    "chi2_cdf",
    "lkp_spread_logp",
    "lkp_change",
    "lkp_is_absolute",
    "mmtests_stats",
    "mmtests_compare",
    "lkp_stats",
    "t_ppf",
    "paired_change",
    "runs_needed",
    "spread_vs_published",
]

#: mmtests code generations, named by the first month they describe:
#: "2023"    2019-04 .. 2024-08-15: BAmean-50/95/99, two-sample t-test asterisks (p < 0.10);
#: "2024-09" 2024-08-16 .. 2024-12-01: same table, asterisks never printed (mmtests bug);
#: "2024-12" 2024-12-02 .. 2025: same table, asterisks when the mean +/- 1.96 s bands do not overlap;
#: "2026"    HEAD (2026-06): Elapsed-/System-/User- ops, field width 18, only ``BAmean.95``.
ERAS = ("2023", "2024-09", "2024-12", "2026")
DIRECTIONS = ("lower", "higher")

#: Phi^-1(0.975), the half-width factor of mmtests' 2024-12 confidence bands (R's qnorm).
NORM_PPF_975 = 1.959963984540054


def _check_direction(direction: str) -> str:
    return check_choice("direction", direction, DIRECTIONS)


def _check_era(era: str) -> str:
    return check_choice("era", era, ERAS)


def stat_labels(direction: str = "lower", era: str = "2023") -> tuple[str, ...]:
    """Row labels of the mmtests "Multiops" summary, in print order (§2.2).

    HEAD's labels for Higher-preferred data (Hmean, HStddev, HCoeffVar, BHmean.95) follow the
    spec's description of ``HStddev``/``HCoeffVar``; autonumabench itself is always Lower."""
    _check_direction(direction)
    _check_era(era)
    m = "A" if direction == "lower" else "H"
    if era == "2026":
        if direction == "lower":
            return ("Min", "Amean", "Stddev", "CoeffVar", "Max", "BAmean.95")
        return ("Min", "Hmean", "HStddev", "HCoeffVar", "Max", "BHmean.95")
    return ("Min", f"{m}mean", "Stddev", "CoeffVar", "Max", f"B{m}mean-50", f"B{m}mean-95", f"B{m}mean-99")


# --------------------------------------------------------------------------------------------
# mmtests per-op statistics (Stat.pm); NaN samples are missing runs


def _valid(x):
    x = np.asarray(x, dtype=float)
    return x, ~np.isnan(x)


def count(x, axis: int = -1) -> np.ndarray:
    """Number of non-NaN samples."""
    x, ok = _valid(x)
    return ok.sum(axis=axis)


def _nan_where_empty(result, n):
    return np.where(n > 0, result, np.nan)


def sample_min(x, axis: int = -1) -> np.ndarray:
    """Smallest sample (``Min``); NaN when there is none."""
    x, ok = _valid(x)
    return _nan_where_empty(np.where(ok, x, np.inf).min(axis=axis), ok.sum(axis=axis))


def sample_max(x, axis: int = -1) -> np.ndarray:
    """Largest sample (``Max``); NaN when there is none."""
    x, ok = _valid(x)
    return _nan_where_empty(np.where(ok, x, -np.inf).max(axis=axis), ok.sum(axis=axis))


def amean(x, axis: int = -1) -> np.ndarray:
    """Arithmetic mean sum(x)/n (``Amean``); NaN when n = 0."""
    x, ok = _valid(x)
    n = ok.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _nan_where_empty(np.where(ok, x, 0.0).sum(axis=axis) / n, n)


def hmean(x, axis: int = -1, era: str = "2023") -> np.ndarray:
    """Harmonic mean n / sum(1/x) (``Hmean``).

    If any sample is <= 0 the result is -1 before 2024-12 ([MM-23]) and NaN from 2024-12 on."""
    _check_era(era)
    x, ok = _valid(x)
    n = ok.sum(axis=axis)
    bad = (ok & (x <= 0)).any(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        h = n / np.where(ok & (x > 0), 1.0 / np.where(x > 0, x, 1.0), 0.0).sum(axis=axis)
    h = np.where(bad, -1.0 if era in ("2023", "2024-09") else np.nan, h)
    return _nan_where_empty(h, n)


def gmean(x, axis: int = -1) -> np.ndarray:
    """Geometric mean (prod x)^(1/n); 0 if a sample is 0, NaN if one is negative."""
    x, ok = _valid(x)
    n = ok.sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        logs = np.where(ok, np.log(np.where(ok, x, 1.0)), 0.0)
        return _nan_where_empty(np.exp(logs.sum(axis=axis) / n), n)


def stddev(x, axis: int = -1) -> np.ndarray:
    """Sample standard deviation sqrt(sum((x - mean)^2) / (n - 1)); NaN when n <= 1."""
    x, ok = _valid(x)
    n = ok.sum(axis=axis)
    m = np.expand_dims(amean(x, axis=axis), axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        ss = np.where(ok, (x - m) ** 2, 0.0).sum(axis=axis)
        return np.where(n > 1, np.sqrt(ss / (n - 1)), np.nan)


def hstddev(x, axis: int = -1, era: str = "2026") -> np.ndarray:
    """HEAD's ``HStddev`` for Higher-preferred data: sqrt(sum((1/x - 1/H)^2) * H^4 / n)."""
    x, ok = _valid(x)
    n = ok.sum(axis=axis)
    h = hmean(x, axis=axis, era=era)
    hx = np.expand_dims(h, axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        ss = np.where(ok, (1.0 / x - 1.0 / hx) ** 2, 0.0).sum(axis=axis)
        return np.where((n > 1) & (h > 0), np.sqrt(ss * h**4 / n), np.nan)


def coeffvar(sd, mean) -> np.ndarray:
    """``CoeffVar`` = 100 * stddev / mean; 0 when the stddev is NaN or the mean is 0; NaN when
    the mean is NaN (no usable sample: nothing to report, not a zero spread)."""
    sd = np.asarray(sd, dtype=float)
    mean = np.asarray(mean, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        cv = 100.0 * sd / mean
    return np.where(np.isnan(mean), np.nan, np.where(np.isnan(sd) | (mean == 0), 0.0, cv))


def best_mean(x, percent: int, axis: int = -1, direction: str = "lower", era: str = "2023") -> np.ndarray:
    """``BAmean-P`` / ``BHmean-P``: the mean of the best c = max(1, floor(n*P/100)) samples.

    "Best" = lowest for Lower, highest for Higher; Amean for Lower, Hmean for Higher."""
    _check_direction(direction)
    check_int("percent", percent, lo=1, hi=100)
    x, ok = _valid(x)
    x, n = np.moveaxis(x, axis, -1), ok.sum(axis=axis)
    # NaN sorts last either way; negate for "highest first"
    s = np.sort(x if direction == "lower" else -x, axis=-1)
    if direction == "higher":
        s = -s
    c = np.maximum(1, (n * percent) // 100)
    keep = np.arange(s.shape[-1]) < c[..., None]
    kept = np.where(keep, s, np.nan)  # n = 0 rows stay all-NaN -> NaN
    if direction == "lower":
        return amean(kept, axis=-1)
    return hmean(kept, axis=-1, era=era)


# --------------------------------------------------------------------------------------------
# percentages (Compare.pm, §2.3)


def pndiff(new, base) -> np.ndarray:
    """Lower-is-better percentage 100 - 100*new/base (positive = improvement).

    In order: new == base -> 0; new == 0 -> +100; base == 0 -> -99."""
    new = np.asarray(new, dtype=float)
    base = np.asarray(base, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = 100.0 - 100.0 * new / base
    r = np.where(base == 0, -99.0, r)
    r = np.where(new == 0, 100.0, r)
    return np.where(new == base, 0.0, r)


def pdiff(new, base) -> np.ndarray:
    """Higher-is-better percentage 100*new/base - 100 (positive = improvement).

    In order: new == base or new == 0 -> 0; base == 0 or NaN -> +100."""
    new = np.asarray(new, dtype=float)
    base = np.asarray(base, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = 100.0 * new / base - 100.0
    r = np.where((base == 0) | np.isnan(base), 100.0, r)
    return np.where((new == base) | (new == 0), 0.0, r)


def percent(new, base, label: str, direction: str = "lower") -> np.ndarray:
    """The percentage mmtests prints for row ``label``: Stddev/CoeffVar rows always use pndiff
    (less spread is better), every other row pndiff for Lower and pdiff for Higher."""
    _check_direction(direction)
    if "Stddev" in label or "CoeffVar" in label or direction == "lower":
        return pndiff(new, base)
    return pdiff(new, base)


# --------------------------------------------------------------------------------------------
# Student t tail without scipy


_lgamma = np.vectorize(math.lgamma, otypes=[float])
_TINY = 1e-300


def _betacf(a, b, x, maxiter: int = 500, eps: float = 1e-15):
    """Continued fraction of I_x(a, b) (modified Lentz), elementwise: each element stops at its
    own convergence, so its value does not depend on the others computed beside it (the same
    number alone or in any batch)."""
    a, b, x = (np.asarray(v, dtype=float).ravel() for v in np.broadcast_arrays(a, b, x))
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = 1.0 / np.where(np.abs(d) < _TINY, _TINY, d)
    h = d.copy()
    live = np.arange(x.size)                  # the elements not yet converged
    for m in range(1, maxiter + 1):
        if live.size == 0:
            break
        al, bl, xl, cl, dl = a[live], b[live], x[live], c[live], d[live]
        m2 = 2 * m
        aa = m * (bl - m) * xl / ((qam[live] + m2) * (al + m2))
        dl = 1.0 + aa * dl
        dl = 1.0 / np.where(np.abs(dl) < _TINY, _TINY, dl)
        cl = 1.0 + aa / cl
        cl = np.where(np.abs(cl) < _TINY, _TINY, cl)
        hl = h[live] * dl * cl
        aa = -(al + m) * (qab[live] + m) * xl / ((al + m2) * (qap[live] + m2))
        dl = 1.0 + aa * dl
        dl = 1.0 / np.where(np.abs(dl) < _TINY, _TINY, dl)
        cl = 1.0 + aa / cl
        cl = np.where(np.abs(cl) < _TINY, _TINY, cl)
        delta = dl * cl
        h[live] = hl * delta
        c[live], d[live] = cl, dl
        live = live[~(np.abs(delta - 1.0) < eps)]
    return h


def betainc(a, b, x, y=None) -> np.ndarray:
    """Regularised incomplete beta I_x(a, b) for a, b > 0 and 0 <= x <= 1 (broadcasting).

    ``y`` = 1 - x may be given exactly (it is for the t tail, where 1 - x would cancel)."""
    a, b, x = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, x)))
    y = 1.0 - x if y is None else np.broadcast_to(np.asarray(y, dtype=float), x.shape)
    out = np.full(x.shape, np.nan)
    out[x == 0] = 0.0
    out[y == 0] = 1.0
    inner = (x > 0) & (y > 0) & (a > 0) & (b > 0)
    if inner.any():
        ai, bi, xi, yi = a[inner], b[inner], x[inner], y[inner]
        lbt = _lgamma(ai + bi) - _lgamma(ai) - _lgamma(bi) + ai * np.log(xi) + bi * np.log(yi)
        bt = np.exp(lbt)
        direct = xi < (ai + 1.0) / (ai + bi + 2.0)
        # evaluate each branch where it converges fast, swapping (a, b, x) -> (b, a, 1 - x)
        aa = np.where(direct, ai, bi)
        bb = np.where(direct, bi, ai)
        xx = np.where(direct, xi, yi)
        frac = bt * _betacf(aa, bb, xx) / aa
        out[inner] = np.where(direct, frac, 1.0 - frac)
    return out


def t_sf(t, df) -> np.ndarray:
    """Upper tail P(T_df > t) of Student's t: 0.5 * I_{df/(df+t^2)}(df/2, 1/2) for t >= 0."""
    t, df = np.broadcast_arrays(np.asarray(t, dtype=float), np.asarray(df, dtype=float))
    with np.errstate(over="ignore", invalid="ignore"):
        t2 = t * t
        x = df / (df + t2)
        y = t2 / (df + t2)  # = 1 - x without cancellation near t = 0
    x = np.where(np.isinf(t), 0.0, x)
    y = np.where(np.isinf(t), 1.0, y)
    half = 0.5 * betainc(df / 2.0, 0.5, x, y)
    return np.where(t >= 0, half, 1.0 - half)


def t_cdf(t, df) -> np.ndarray:
    """P(T_df <= t)."""
    return 1.0 - t_sf(t, df)


def ttest_significant(mean_b, sd_b, n_b, mean_n, sd_n, n_n, alpha: float = 0.10) -> np.ndarray:
    """mmtests 2018-10 .. 2024-08 significance: two-sample t-test, marked if p < ``alpha``.

    se = sqrt(s_b^2/n_b + s_n^2/n_n) (NaN stddev -> 0); se == 0 -> significant iff the means
    differ; otherwise t = |mean_b - mean_n| / se, df = n_b + n_n - 2, p = 2 * P(T_df > t)."""
    mean_b, sd_b, n_b, mean_n, sd_n, n_n = (
        np.asarray(v, dtype=float) for v in (mean_b, sd_b, n_b, mean_n, sd_n, n_n)
    )
    sd_b = np.where(np.isnan(sd_b), 0.0, sd_b)
    sd_n = np.where(np.isnan(sd_n), 0.0, sd_n)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(sd_b**2 / n_b + sd_n**2 / n_n)
        t = np.abs(mean_b - mean_n) / np.where(se > 0, se, 1.0)
    df = np.maximum(n_b + n_n - 2, 1)
    p = 2.0 * t_sf(t, df)
    return np.where(se > 0, p < alpha, mean_b != mean_n)


def band_significant(mean_b, sd_b, mean_n, sd_n, z: float = NORM_PPF_975) -> np.ndarray:
    """mmtests 2024-12+ significance: the two mean +/- z*s bands do not overlap.

    s is the sample stddev itself (not s/sqrt(n)); a NaN stddev (one sample) never marks."""
    mean_b, sd_b, mean_n, sd_n = (np.asarray(v, dtype=float) for v in (mean_b, sd_b, mean_n, sd_n))
    with np.errstate(invalid="ignore"):
        return np.abs(mean_n - mean_b) > z * sd_b + z * sd_n


# --------------------------------------------------------------------------------------------
# LKP (lib/compare.rb, lib/statistics.rb)


def lkp_mean(x, axis: int = -1) -> np.ndarray:
    """``avg``: arithmetic mean over the usable (non-NaN) runs; NaN when there is none (Ruby's
    ``avg`` of an empty list is 0, but a stat with no value in any run is unknown, not zero)."""
    return amean(x, axis=axis)


def lkp_stddev(x, axis: int = -1) -> np.ndarray:
    """Population standard deviation sqrt(sum((v - avg)^2)/n); -1 when there is at most one run."""
    x, ok = _valid(x)
    n = ok.sum(axis=axis)
    m = np.expand_dims(lkp_mean(x, axis=axis), axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(ok, (x - m) ** 2, 0.0).sum(axis=axis) / n
    return np.where(n > 1, np.sqrt(var), -1.0)


#: LKP prints a stat's ``± r%`` only when r > this (its "hide small stddev" rule); a blank one is at most this
LKP_SHOWN_ABOVE_PCT = 2.0


def lkp_stddev_pct(mean, sd) -> np.ndarray:
    """r = 100*stddev/avg (the raw stddev when avg == 0); the ``±`` shows when r > 2."""
    mean = np.asarray(mean, dtype=float)
    sd = np.asarray(sd, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(mean == 0, sd, 100.0 * sd / np.where(mean == 0, 1.0, mean))


def lkp_printed_range(printed_pct) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` in %: where LKP's relative stddev r lies given how the robot printed it. A
    printed ``± k%`` means k <= r < k + 1 (r is truncated to an integer), a hidden one (NaN)
    0 <= r <= :data:`LKP_SHOWN_ABOVE_PCT` (:func:`lkp_stddev_pct`)."""
    p = np.asarray(printed_pct, dtype=float)
    shown = np.isfinite(p)
    return np.where(shown, p, 0.0), np.where(shown, p + 1.0, LKP_SHOWN_ABOVE_PCT)


def lkp_printed_var(printed_pct) -> np.ndarray:
    """The mean square (in %²) of LKP's relative stddev r given how the robot printed it
    (:func:`lkp_printed_range`), r taken uniform over that range, so a hidden spread counts as
    neither its bound nor zero: E[r²] = 4/3.

    >>> float(lkp_printed_var(float("nan"))), float(lkp_printed_var(6.0))
    (1.3333333333333333, 42.333333333333336)
    """
    lo, hi = lkp_printed_range(printed_pct)
    return (lo * lo + lo * hi + hi * hi) / 3.0


def _gammainc_lower(a: float, x: float, maxiter: int = 1000, eps: float = 1e-15) -> float:
    """Regularised lower incomplete gamma P(a, x): its series below x = a + 1, one minus the
    Lentz continued fraction of Q(a, x) above (Numerical Recipes' split)."""
    if x <= 0.0:
        return 0.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1.0:
        term = total = 1.0 / a
        for n in range(1, maxiter):
            term *= x / (a + n)
            total += term
            if abs(term) < abs(total) * eps:
                break
        return min(1.0, total * math.exp(log_front))
    tiny = 1e-300
    b = x + 1.0 - a
    c, d = 1.0 / tiny, 1.0 / b
    h = d
    for i in range(1, maxiter):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return max(0.0, 1.0 - math.exp(log_front) * h)


def chi2_cdf(x, df) -> np.ndarray:
    """P(X <= x) for a chi-square variable with ``df`` degrees of freedom, the regularised lower
    incomplete gamma P(df/2, x/2) (no scipy). Broadcasts; 0 for x <= 0.

    >>> round(float(chi2_cdf(2.0, 2)), 12) == round(1 - math.exp(-1.0), 12)
    True
    """
    x, df = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(df, dtype=float))
    out = np.array([_gammainc_lower(d / 2.0, v / 2.0) for v, d in zip(x.ravel(), df.ravel())], dtype=float)
    return out.reshape(x.shape) if x.ndim else out[0]


def lkp_spread_logp(printed_pct, sigma_pct, runs: int = 4) -> np.ndarray:
    """Natural log of the probability that the robot prints ``printed_pct`` (its ``± r%``; NaN:
    hidden) for ``runs`` normal runs whose true relative spread is ``sigma_pct`` %: LKP's r is the
    population stddev, so ``runs · r² / σ²`` is chi-square with ``runs − 1`` degrees of freedom;
    a printed k means k <= r < k + 1 and a hidden one r <= 2 (:func:`lkp_printed_range`). ``-inf``
    when the printout is impossible (σ = 0 against a printed spread). Tests a model's run-to-run
    spread, not just its mean, against a table (``benchmarks/run_spread.py``)."""
    runs = check_int("runs", runs, lo=2, hi=10**6)
    p, s = np.broadcast_arrays(np.asarray(printed_pct, dtype=float), np.asarray(sigma_pct, dtype=float))
    lo, hi = (v / 100.0 for v in lkp_printed_range(p))
    var = (s / 100.0) ** 2
    safe = np.where(var > 0, var, 1.0)
    inside = chi2_cdf(runs * hi ** 2 / safe, runs - 1) - chi2_cdf(runs * lo ** 2 / safe, runs - 1)
    inside = np.where(var > 0, inside, (lo == 0).astype(float))      # σ = 0: every run alike, r = 0
    inside = np.where(np.isnan(var), np.nan, inside)
    with np.errstate(divide="ignore"):
        return np.log(np.maximum(inside, 0.0))


def lkp_is_absolute(name: str) -> bool:
    """Stats whose change is printed as a plain difference: names ending in ``%`` or
    starting with ``perf-profile``."""
    return name.endswith("%") or name.startswith("perf-profile")


def lkp_change(new, base, absolute: bool = False) -> np.ndarray:
    """%change 100*(new - base)/base (base 0 -> 1e-100), or new - base when ``absolute``.

    Sign convention is LKP's: negative = smaller value (the opposite of mmtests)."""
    new = np.asarray(new, dtype=float)
    base = np.asarray(base, dtype=float)
    if absolute:
        return new - base
    base = np.where(base == 0, 1e-100, base)
    return 100.0 * (new - base) / base


# --------------------------------------------------------------------------------------------
# xarray layer: summarise a whole sweep at once


def mmtests_stats(da, dim: str = "seed", direction: str = "lower", era: str = "2023"):
    """Every mmtests row statistic of ``da`` reduced over ``dim``.

    Returns a DataArray with ``dim`` replaced by a ``stat`` dim (labels :func:`stat_labels`)
    plus coordinate ``n`` (samples per cell); all other dims are kept, so a whole sweep is
    summarised in one call."""
    import xarray as xr

    _check_direction(direction)
    _check_era(era)
    if dim not in da.dims:
        raise NumalabValueError(f"dim={dim!r} is not a dimension of {da.name!r}; dims are {list(da.dims)}")
    x = da.transpose(..., dim).values.astype(float)
    labels = stat_labels(direction, era)
    values = []
    mean = amean(x) if direction == "lower" else hmean(x, era=era)
    sd = stddev(x)
    for label in labels:
        if label == "Min":
            v = sample_min(x)
        elif label == "Max":
            v = sample_max(x)
        elif label in ("Amean", "Hmean"):
            v = mean
        elif label == "Stddev":
            v = sd
        elif label == "CoeffVar":
            v = coeffvar(sd, amean(x))
        elif label == "HStddev":
            v = hstddev(x, era=era)
        elif label == "HCoeffVar":
            v = coeffvar(hstddev(x, era=era), mean)
        else:  # BAmean-50 / BAmean.95 / BHmean-99 ...
            v = best_mean(x, int(label[-2:]), direction=direction, era=era)
        values.append(v)
    other = [d for d in da.dims if d != dim]
    out = xr.DataArray(
        np.stack(values, axis=-1),
        dims=(*other, "stat"),
        coords={**{k: c for k, c in da.coords.items() if dim not in c.dims}, "stat": list(labels)},
        name=da.name,
        attrs=dict(da.attrs),
    )
    return out.assign_coords(n=(tuple(other), count(x)))


def mmtests_compare(
    da, along: str, baseline=None, dim: str = "seed", direction: str = "lower", era: str = "2023"
):
    """The numbers of an mmtests compare table for ``da``: Dataset with ``value`` (stat rows),
    ``pct`` (the percentage against ``baseline`` along ``along``) and ``significant`` (the
    asterisk: mean row, non-baseline columns, era's test). Vectorised over every other dim."""
    import xarray as xr

    if along not in da.dims:
        raise NumalabValueError(f"along={along!r} is not a dimension of {da.name!r}; dims are {list(da.dims)}")
    names = [str(v) for v in da[along].values]
    base = names[0] if baseline is None else check_choice("baseline", str(baseline), names)
    bi = names.index(base)
    st = mmtests_stats(da, dim=dim, direction=direction, era=era).transpose(along, ..., "stat")
    labels = [str(s) for s in st.stat.values]
    v = st.values  # (kernel, ..., stat)
    b = v[bi]
    pct = np.stack([percent(v[..., j], b[..., j], lab, direction) for j, lab in enumerate(labels)], axis=-1)
    mean, sd = v[..., 1], v[..., labels.index("HStddev" if "HStddev" in labels else "Stddev")]
    n = st["n"].transpose(along, ...).values
    if era == "2023":
        sig = ttest_significant(mean[bi], sd[bi], n[bi], mean, sd, n)
    elif era == "2024-09":
        sig = np.zeros(mean.shape, dtype=bool)  # the printer lost the asterisks (§2.4)
    else:
        sig = band_significant(mean[bi], sd[bi], mean, sd)
    sig = sig & (np.arange(len(names)) != bi).reshape((-1,) + (1,) * (sig.ndim - 1))
    significant = np.zeros(v.shape, dtype=bool)
    significant[..., 1] = sig  # only the Amean/Hmean row is ever marked
    out = xr.Dataset(
        {"value": st, "pct": (st.dims, pct), "significant": (st.dims, significant)}, coords=st.coords
    )
    return out.assign_attrs(baseline=base, direction=direction, era=era)


def lkp_stats(da, dim: str = "seed"):
    """LKP's per-commit numbers reduced over ``dim``: Dataset with ``mean`` (NaN when no runs),
    ``stddev`` (population; -1 with one run), ``stddev_pct`` and ``n``."""
    import xarray as xr

    if dim not in da.dims:
        raise NumalabValueError(f"dim={dim!r} is not a dimension of {da.name!r}; dims are {list(da.dims)}")
    x = da.transpose(..., dim).values.astype(float)
    other = [d for d in da.dims if d != dim]
    coords = {k: c for k, c in da.coords.items() if dim not in c.dims}
    m, s = lkp_mean(x), lkp_stddev(x)
    return xr.Dataset(
        {
            "mean": (other, m),
            "stddev": (other, s),
            "stddev_pct": (other, lkp_stddev_pct(m, s)),
            "n": (other, count(x)),
        },
        coords=coords,
    )


# --------------------------------------------------------------------------------------------
# paired effects: seeds are common random numbers across policies


_T_PPF_CACHE: dict = {}
_T_PPF_CACHE_MAX = 200_000


def t_ppf(q, df) -> np.ndarray:
    """Quantile of Student's t: the t with P(T_df <= t) = q (bisection on :func:`t_cdf`, to
    1e-10), for 0 < q < 1 and df >= 1; broadcasting.

    Each distinct (q, df) pair is solved once per process and remembered: the value of an
    element does not depend on the others beside it (:func:`_betacf` stops each element at its
    own convergence), so the cache gives the numbers a fresh solve would. :func:`runs_needed`
    asks for the same few degrees of freedom over and over."""
    q, df = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(df, dtype=float))
    pairs = np.stack([q.ravel(), df.ravel()], axis=-1)
    uniq, inv = np.unique(pairs, axis=0, return_inverse=True) if pairs.size else (pairs, np.zeros(0, dtype=np.int64))
    keys = [(float(a), float(b)) for a, b in uniq]
    missing = [i for i, k in enumerate(keys) if k not in _T_PPF_CACHE]
    if missing:
        mq, mdf = uniq[missing, 0], uniq[missing, 1]
        lo = np.full(mq.shape, -1e3)
        hi = np.full(mq.shape, 1e3)
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            below = t_cdf(mid, mdf) < mq
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        if len(_T_PPF_CACHE) + len(missing) > _T_PPF_CACHE_MAX:
            _T_PPF_CACHE.clear()
        _T_PPF_CACHE.update(zip((keys[i] for i in missing), (0.5 * (lo + hi)).tolist()))
    vals = np.array([_T_PPF_CACHE[k] for k in keys], dtype=float)
    return vals[np.asarray(inv).ravel()].reshape(q.shape)


def paired_change(da, along: str, baseline=None, dim: str = "seed", *, direction: str = "lower",
                  era: str = "2023", ci: float = 0.95, method: str = "t", resamples: int = 4000,
                  rng_seed: int = 0, scale: str = "linear", power: float = 0.8):
    """Per-seed %change of ``da`` against ``baseline`` along ``along`` -- the paired view.

    numalab seeds are common random numbers: seed s draws the same random stream under every
    policy, so the per-seed difference ``100 * (new_s - base_s) / base_s`` removes the noise the
    policies share, and its confidence interval is much tighter than the spread of the levels.

    Parameters
    ----------
    da : xarray.DataArray with dims (along, dim, ...)
    along : the dim holding the compared policies (e.g. "history", "policy")
    baseline : the ``along`` value compared against (default: the first)
    ci : confidence level of the interval of the mean %change
    method : "t" (mean +- t_{n-1} * s / sqrt(n) of the per-seed changes) or "bootstrap"
        (percentile interval of ``resamples`` resamples of seeds, numpy Generator ``rng_seed``)
    scale : "linear" (the interval of the mean of the per-seed %changes: for times) or "log"
        (for counts: the interval of the mean per-seed log ratio ``log((new + 1/2) / (base + 1/2))``,
        the 1/2 being the usual continuity correction for counts that can be 0, turned back into
        a %change: a geometric-mean change whose interval never reaches -100 %)
    direction, era : passed to :func:`mmtests_compare`, whose significance mark (the asterisk of
        the Amean row, on the levels, as mmtests prints it) is returned as ``significant``
    power : the power :func:`runs_needed` plans for (``runs``)

    Returns
    -------
    xarray.Dataset with ``pct`` (along, dim, ...) [%] (LKP's sign: negative = smaller), and over
    (along, ...): ``mean``, ``lo``, ``hi`` [%] (the interval), ``n`` (seeds with both runs),
    ``resolved`` (bool: the paired interval excludes 0 -- the statistic the figures mark),
    ``significant`` (bool: mmtests' own test on the levels, what its table marks), ``cv`` [%]
    (the levels' seed-to-seed spread, pooled over the two policies, relative to the baseline's
    mean) and ``runs`` (:func:`runs_needed`: runs per kernel a real machine, without common
    random numbers, would need to resolve the mean change at ``ci``; inf for no change); attrs
    ``baseline``, ``ci``, ``method``, ``scale``.
    """
    import xarray as xr

    method = check_choice("method", method, ("t", "bootstrap"))
    scale = check_choice("scale", scale, ("linear", "log"))
    if not 0 < float(ci) < 1:
        raise NumalabValueError(f"ci={ci!r}; allowed: a confidence level between 0 and 1, e.g. 0.95")
    for d in (along, dim):
        if d not in da.dims:
            raise NumalabValueError(f"{d!r} is not a dimension of {da.name!r}; dims are {list(da.dims)}")
    names = [str(v) for v in da[along].values]
    base = names[0] if baseline is None else check_choice("baseline", str(baseline), names)
    bi = names.index(base)
    x = da.astype(float)
    b = x.isel({along: bi})
    with np.errstate(invalid="ignore", divide="ignore"):
        if scale == "log":
            per = np.log((x + 0.5) / (b + 0.5))   # per-seed log ratio, continuity-corrected
        else:
            per = 100.0 * (x - b) / b.where(b != 0)
    per = per.transpose(along, ..., dim)
    n, mean, lo, hi = _mean_interval(per.values, ci, method, resamples, rng_seed)
    if scale == "log":  # back to a %change: 100 * (ratio - 1)
        pct = 100.0 * np.expm1(per)
        mean, lo, hi = (100.0 * np.expm1(a) for a in (mean, lo, hi))
    else:
        pct = per
    cmp = mmtests_compare(x, along=along, baseline=base, dim=dim, direction=direction, era=era)
    mean_label = "Amean" if direction == "lower" else "Hmean"
    sig = cmp["significant"].sel(stat=mean_label).transpose(along, ...).values
    levels = x.transpose(along, ..., dim).values
    sd_lv, m_lv = stddev(levels), amean(levels)
    with np.errstate(invalid="ignore", divide="ignore"):
        cv = 100.0 * np.sqrt((sd_lv ** 2 + sd_lv[bi] ** 2) / 2) / np.abs(m_lv[bi])
    runs = runs_needed(cv, mean, confidence=ci, power=power)
    other = pct.dims[:-1]
    coords = {k: c for k, c in pct.coords.items() if dim not in c.dims}
    out = xr.Dataset(
        {
            "pct": pct.assign_attrs(units="%", long_name=f"per-seed %change of {da.name} vs {base}"),
            "mean": (other, mean, {"units": "%", "long_name": f"mean per-seed %change vs {base}"
                                   + (" (geometric)" if scale == "log" else "")}),
            "lo": (other, lo, {"units": "%", "long_name": f"lower end of the {ci:.0%} interval"}),
            "hi": (other, hi, {"units": "%", "long_name": f"upper end of the {ci:.0%} interval"}),
            "n": (other, n),
            "resolved": (other, (lo > 0) | (hi < 0), {"long_name": f"the paired {ci:.0%} interval excludes 0"}),
            "significant": (other, sig.astype(bool), {"long_name": f"mmtests {era} significance (Amean row)"}),
            "cv": (other, cv, {"units": "%", "long_name": "seed-to-seed spread of the levels (pooled CoeffVar)"}),
            "runs": (other, runs, {"units": "1", "long_name": f"runs per kernel to resolve the change at {ci:.0%} "
                                                              f"with power {power:g} (unpaired, a real machine)"}),
        },
        coords=coords,
    )
    return out.assign_attrs(baseline=base, ci=float(ci), method=method, era=era, variable=str(da.name), scale=scale)


def _mean_interval(v, ci, method, resamples, rng_seed):
    """(n, mean, lo, hi) of the last axis of ``v`` (NaN = missing): the ``ci`` interval of the
    mean by Student's t or the percentile bootstrap; no interval from fewer than 2 samples."""
    n = (~np.isnan(v)).sum(axis=-1)
    mean = amean(v)
    alpha = 1.0 - float(ci)
    if method == "t":
        half = t_ppf(1.0 - alpha / 2, np.maximum(n - 1, 1)) * stddev(v) / np.sqrt(np.maximum(n, 1))
        lo, hi = mean - half, mean + half
    else:
        check_int("resamples", resamples, lo=100, hi=10**6)
        rng = np.random.default_rng(check_int("rng_seed", rng_seed, lo=0))
        m = v.shape[-1]
        idx = rng.integers(0, m, size=(int(resamples), m))
        boot = amean(v[..., idx], axis=-1)  # (..., resamples)
        lo = np.nanquantile(boot, alpha / 2, axis=-1) if boot.size else boot
        hi = np.nanquantile(boot, 1 - alpha / 2, axis=-1) if boot.size else boot
    return n, mean, np.where(n > 1, lo, np.nan), np.where(n > 1, hi, np.nan)


# --------------------------------------------------------------------------------------------
# how many runs a real machine needs


def runs_needed(spread_pct, change_pct, *, confidence: float = 0.95, power: float = 0.8,
                max_runs: int = 100_000) -> np.ndarray:
    """Runs per kernel a real machine needs to resolve a ``change_pct`` % change between two
    kernels whose run-to-run spread is ``spread_pct`` % (the coefficient of variation, e.g. the
    model's seed spread, mmtests' ``CoeffVar`` or LKP's ``%stddev``): the smallest n for which
    a two-sided two-sample t-test at ``confidence`` finds the change with probability ``power``
    (n runs of each kernel, equal spread). On a real machine the runs of two kernels share no
    random stream, so this is the unpaired count, not the paired one of :func:`paired_change`.

    Solves ``|change| / spread = (t_{1-a/2, 2n-2} + t_{power, 2n-2}) * sqrt(2 / n)`` (the
    normal-approximation sample size with Student-t quantiles, iterated to its fixed point).
    Broadcasts; returns floats: at least 2, ``inf`` where the change is 0 (nothing to resolve)
    or more than ``max_runs`` would be needed, NaN where an input is NaN.

    >>> int(runs_needed(2.0, 2.0))   # a 2 % change at a 2 % spread: 17 runs of each kernel
    17
    """
    if not 0 < float(confidence) < 1:
        raise NumalabValueError(f"confidence={confidence!r}; allowed: a level between 0 and 1, e.g. 0.95")
    if not 0 < float(power) < 1:
        raise NumalabValueError(f"power={power!r}; allowed: a probability between 0 and 1, e.g. 0.8")
    max_runs = check_int("max_runs", max_runs, lo=2, hi=10**9)
    spread, change = np.broadcast_arrays(np.abs(np.asarray(spread_pct, dtype=float)),
                                         np.abs(np.asarray(change_pct, dtype=float)))
    alpha = 1.0 - float(confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = spread / change                       # spread in units of the change
        z = 2.0 * (t_ppf(1 - alpha / 2, 1e9) + t_ppf(power, 1e9)) ** 2   # normal quantiles: the start
        n = np.maximum(2.0, np.ceil(z * ratio ** 2))
        for _ in range(30):   # the t quantiles shrink as n grows: iterate to the fixed point
            fin = np.isfinite(n) & (n <= max_runs)
            df = np.where(fin, 2 * n - 2, 2.0)
            q = t_ppf(1 - alpha / 2, df) + t_ppf(power, df)
            nxt = np.where(fin, np.maximum(2.0, np.ceil(2.0 * (q * ratio) ** 2)), n)
            if np.array_equal(nxt, n, equal_nan=True):
                break
            n = nxt
    n = np.where(np.isnan(ratio), np.nan, np.where(~np.isfinite(n) | (n > max_runs), np.inf, n))
    return n if n.ndim else n[()]


def spread_vs_published(published, sim, dim: str = "seed", runs: int = 4) -> list[dict]:
    """The model's seed-to-seed spread beside the robot's published ``%stddev`` for every row of
    a published LKP table (``numalab.data.load(...)``), to know when the model's spread -- and the
    run counts :func:`runs_needed` derives from it -- can be trusted.

    ``sim`` has ``elsp`` over (workload, policy, ``dim``) for the table's workloads and kernels
    (e.g. from :func:`numalab.fidelity.simulate_calibration`). Both spreads are LKP's: the
    population stddev over runs in % of the mean (:func:`lkp_stddev_pct`). The robot prints a
    ``± r%`` only when r > 2, so a blank published cell means "2 % or less".

    Returns one dict per (workload, kernel): ``table``, ``workload``, ``kernel``, ``published``
    (% or NaN = at most 2), ``model`` (%), ``verdict``: "similar" (within a factor of 2, or
    both at most 2 %), "model tighter" (the model's runs are more alike than the machine's:
    run counts from it are too few) or "model wider"; ``log_p``: the log-probability that the
    robot prints what it printed over ``runs`` runs if the machine's runs scattered as the
    model's do (:func:`lkp_spread_logp`, the model's spread taken with Bessel's correction)."""
    rows = []
    base = published.attrs.get("table", "")
    for wl in [str(w) for w in published.workload.values]:
        for kernel in [str(p) for p in published.policy.values]:
            pub = float(published["elsp_stddev_pct"].sel(workload=wl, policy=kernel))
            x = sim["elsp"].sel(workload=wl, policy=kernel).transpose(..., dim).values.astype(float)
            model = float(lkp_stddev_pct(lkp_mean(x), lkp_stddev(x)))
            if not np.isfinite(pub):
                verdict = "similar" if model <= LKP_SHOWN_ABOVE_PCT else "model wider"
            elif model < pub / 2:
                verdict = "model tighter"
            elif model > 2 * pub:
                verdict = "model wider"
            else:
                verdict = "similar"
            n = int(np.isfinite(x).sum())
            sigma = model * math.sqrt(n / (n - 1)) if n > 1 else math.nan
            rows.append({"table": base, "workload": wl, "kernel": kernel, "published": pub, "model": model,
                         "verdict": verdict, "log_p": float(lkp_spread_logp(pub, sigma, runs))})
    return rows

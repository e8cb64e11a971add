"""The verdicts: the published rule, the strict rule researchers apply, and robustness over the
uncertainty box.

* **Published rule** (``verdict``; ``shared/reference/calibration.md``): a published change
  with ``|%change| >= 5`` is reproduced when the simulated mean has the same sign and a size
  within a factor of 2; a smaller one when the simulated mean stays within ±7 %; base-column
  seconds within a factor of 2. It judges the mean alone, so a simulated 0.00 ± 0.00 % passes
  against a published −4.1 %.
* **Strict rule** (``strict_verdict``): a change is reproduced when the published value lies in
  the simulated interval ``[band_lo − Z·se, band_hi + Z·se]`` (:func:`interval`): the range of
  the simulated means over the uncertainty box (:mod:`.bands`; just the mean without bands)
  widened by ``Z`` = :data:`INTERVAL_Z` prediction errors of a published number. ``se``
  combines two independent errors, ``se² = published_se² + simulated_std² / seeds``:

  - the published value's own: it is a change between two means of :data:`JOB_ITERATIONS`
    runs each, and the two kernels' runs are separate boots, not paired. Where its table prints
    the runs' spreads (LKP's ``± r%``; a blank one is at most 2 %), ``published_se`` is computed
    from them (:func:`published_se`, :func:`numalab.stats.lkp_printed_var`); otherwise from
    the model's prediction of them, the spread of one run's change when the two kernels' runs
    are independent (``run_std``), over √runs;
  - the model's mean's: the seeds pair the two kernels (the same node B and TIDs), so its
    error is the per-seed paired spread ``simulated_std`` over √seeds.

  Before 2026-12-07 the paired spread stood for both, ``se = simulated_std · √(1/4 + 1/seeds)``:
  two kernels whose runs the seeds pair exactly (the mechanism never engages) then had a zero
  interval, and any published change, however small against the robot's own ``±``, failed.
  Base seconds must be within :data:`STRICT_BASE_TOL` (25 %) of the simulated mean.
* **Robust** (``robust``): the published value lies inside the simulated range over the box
  (``band_lo .. band_hi``, no seed widening) *and* the published rule holds at the centre (the
  default constants). Only meaningful when bands were simulated; otherwise ``not computed``.

Rows a fitted constant was set from (``fitted`` non-empty, :func:`numalab.fidelity.fitted_rows`)
keep their verdicts, but :func:`counts` does not count them as reproduced.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["REPRODUCED", "NOT_JUDGED", "NOT_COMPUTED", "ROBUST", "NOT_ROBUST", "INTERVAL_Z", "STRICT_BASE_TOL",
           "JOB_ITERATIONS", "JOB_OVERHEAD_S", "verdict_change", "verdict_base", "published_se", "interval",
           "strict_range", "strict_verdict", "robust_verdict", "judge", "counts", "counts_text", "is_change"]

REPRODUCED = "reproduced"
NOT_JUDGED = "not judged"   # a whole-job counter's base value: printed for scale, no rule applies
NOT_COMPUTED = "not computed"
ROBUST = "robust"
NOT_ROBUST = "not robust"
#: prediction errors either side of the simulated range (about a 95 % interval)
INTERVAL_Z = 2.0
#: the strict rule's tolerance on base-column seconds
STRICT_BASE_TOL = 0.25
#: iterations of the LKP job ("4x" in its path, calibration.md): the runs behind one published
#: number, and the factor of the whole-job rows (:func:`numalab.fidelity.job_elapsed`)
JOB_ITERATIONS = 4
#: seconds per iteration of the LKP job outside its tests (start_bench.sh's make and awk): the
#: gap 2200 - 2197 of the p5-vs-p4 table (numalab.fidelity.constants.JOB_PROVENANCE)
JOB_OVERHEAD_S = 1.0


def is_change(row: dict) -> bool:
    """Whether a row is a %change (else an absolute base value)."""
    return row["quantity"].startswith("%change")


def verdict_change(published_pct: float, simulated_pct: float) -> str:
    """The published rule for one %change row (module docstring)."""
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


def verdict_base(published_s: float, simulated_s: float, tol: float | None = None) -> str:
    """A base-column absolute time: within a factor of 2 (the published rule), or within
    ``tol`` (a fraction: the strict rule's 0.25) of the published seconds."""
    if not np.isfinite(simulated_s):
        return "not simulated"
    ratio = simulated_s / published_s
    lo, hi = (0.5, 2.0) if tol is None else (1.0 - tol, 1.0 + tol)
    if ratio < lo:
        return "too fast"
    if ratio > hi:
        return "too slow"
    return REPRODUCED


def published_se(change_pct: float, base_var: float, new_var: float, runs: int = JOB_ITERATIONS) -> float:
    """Standard error, in %change points, of a published %change between two means of ``runs``
    independent runs each (module docstring). ``base_var`` and ``new_var``: the mean squares, in
    %², of the two kernels' relative stddevs as LKP computes them (population, over the runs;
    :func:`numalab.stats.lkp_printed_var` from a printed table). The variance of a mean is then
    r² / (runs − 1), and a ratio's relative variance the sum of its two terms' (first order):
    ``(1 + change/100) · √((base_var + new_var) / (runs − 1))``. NaN for a single run, whose
    spread the table cannot give."""
    runs = int(runs)
    if runs < 2:
        return math.nan
    return abs(1.0 + change_pct / 100.0) * math.sqrt((base_var + new_var) / (runs - 1))


def interval(row: dict) -> tuple[float, float]:
    """The strict rule's simulated interval of a %change row (module docstring). A row whose
    published value is the mean of other than :data:`JOB_ITERATIONS` runs says how many in
    ``published_runs`` (one manual run: 1). The published value's error is ``published_se``
    where the row has it (finite), else ``run_std`` / √runs, else (a row made before
    ``run_std`` existed) ``simulated_std`` / √runs."""
    mean, std = row["simulated_mean"], row["simulated_std"]
    std = 0.0 if not np.isfinite(std) else std
    seeds = max(int(row.get("seeds", 1)), 1)
    runs = max(int(row.get("published_runs", JOB_ITERATIONS)), 1)
    pub = row.get("published_se", math.nan)
    if pub is None or not np.isfinite(pub):
        spread = row.get("run_std", std)
        pub = (0.0 if spread is None or not np.isfinite(spread) else spread) / math.sqrt(runs)
    se = math.sqrt(pub * pub + std * std / seeds)
    lo = min(mean, row.get("band_lo", mean))
    hi = max(mean, row.get("band_hi", mean))
    return lo - INTERVAL_Z * se, hi + INTERVAL_Z * se


def strict_range(row: dict) -> tuple[float, float] | None:
    """Where the published value must lie for the strict rule, in the row's own units: a %change
    row's :func:`interval`; base seconds ``[simulated / 1.25, simulated / 0.75]`` (within
    :data:`STRICT_BASE_TOL` of the published value); None for a row no rule judges."""
    if row["verdict"] == NOT_JUDGED or not np.isfinite(row["simulated_mean"]):
        return None
    if is_change(row):
        return interval(row)
    return row["simulated_mean"] / (1.0 + STRICT_BASE_TOL), row["simulated_mean"] / (1.0 - STRICT_BASE_TOL)


def strict_verdict(row: dict) -> str:
    """The strict rule (module docstring) for one row of :func:`numalab.fidelity.compare`."""
    if row["verdict"] == NOT_JUDGED:
        return NOT_JUDGED
    if not np.isfinite(row["simulated_mean"]):
        return "not simulated"
    if not is_change(row):
        return verdict_base(row["published"], row["simulated_mean"], tol=STRICT_BASE_TOL)
    lo, hi = interval(row)
    if row["published"] < lo:
        return "simulated above"   # the whole interval lies above the published value
    if row["published"] > hi:
        return "simulated below"
    return REPRODUCED


def robust_verdict(row: dict) -> str:
    """Robust (module docstring): needs ``band_lo``/``band_hi`` from simulated bands."""
    if row["verdict"] == NOT_JUDGED:
        return NOT_JUDGED
    if not row.get("band_points"):
        return NOT_COMPUTED
    inside = row["band_lo"] <= row["published"] <= row["band_hi"]
    return ROBUST if inside and row["verdict"] == REPRODUCED else NOT_ROBUST


def judge(row: dict) -> dict:
    """``row`` with ``strict_verdict`` and ``robust`` (re)computed from its other fields."""
    row["strict_verdict"] = strict_verdict(row)
    row["robust"] = robust_verdict(row)
    return row


def counts(rows: list[dict]) -> dict:
    """The counts ``numalab reproduce`` reports: over the judged rows (``judged``), the rows a
    fitted constant was set from (``fitted``, and how many of them the published rule passes,
    ``fitted_reproduced``), and over the judged rows that are not fitted (``not_fitted``) the
    published rule (``published``), the strict rule (``strict``) and robustness (``robust``;
    None when no bands were simulated). ``published_all`` counts the fitted rows too, as the
    published rule did before fitted rows were marked."""
    judged = [r for r in rows if r["verdict"] != NOT_JUDGED]
    fitted = [r for r in judged if r.get("fitted")]
    free = [r for r in judged if not r.get("fitted")]
    banded = any(r.get("band_points") for r in judged)
    return dict(
        judged=len(judged), fitted=len(fitted), not_fitted=len(free),
        published_all=sum(r["verdict"] == REPRODUCED for r in judged),
        fitted_reproduced=sum(r["verdict"] == REPRODUCED for r in fitted),
        published=sum(r["verdict"] == REPRODUCED for r in free),
        strict=sum(r.get("strict_verdict") == REPRODUCED for r in free),
        robust=sum(r.get("robust") == ROBUST for r in free) if banded else None,
    )


def counts_text(c: dict) -> str:
    """:func:`counts` as the lines ``numalab reproduce`` prints."""
    lines = [
        f"published rule: {c['published']} of {c['not_fitted']} rows reproduced "
        f"({c['published_all']} of {c['judged']} counting the {c['fitted']} fitted rows, "
        f"{c['fitted_reproduced']} of which pass)",
        f"strict rule:    {c['strict']} of {c['not_fitted']} (published value inside the simulated interval, "
        f"base seconds within {STRICT_BASE_TOL:.0%})",
        f"fitted:         {c['fitted']} rows a fitted constant was set from, not counted",
    ]
    if c["robust"] is not None:
        lines.append(f"robust:         {c['robust']} of {c['not_fitted']} (published value inside the "
                     f"simulated range over the uncertainty box, published rule at the centre)")
    return "\n".join(lines)

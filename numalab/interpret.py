"""What a simulated comparison says, in words generated from its numbers: the table ``numalab
simulate`` prints (mean ± spread per policy, units, fitting 100 columns), a legend for the
model's own metrics, and a few lines of interpretation -- what differs, by how much, with what
confidence, and why in the kernel's terms.

Every sentence comes from the Dataset: the paired per-seed change and its interval
(:func:`numalab.stats.paired_change`), the runs a real machine would need to see it
(:func:`numalab.stats.runs_needed`), and a few recognisable situations, each with its
explanation in kernel terms (:func:`starved`: the PID filter starved every VMA; fewer false
skips; more pages migrated). The explorers' notes use the same sentences.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["TABLE_WIDTH", "explain", "format_spread", "summary_table", "legend", "interpretation", "starved",
           "starvation_evidence", "STARVATION"]

#: the width the table is laid out in (a terminal, a mail): policies wrap into blocks beyond it
TABLE_WIDTH = 100

#: the rows of the table, in order: the times, the vmstat counters, the PID-filter skips and the
#: model's ground truth (numalab.counters names them and gives their units)
ROWS = ("elsp", "syst", "numa_pte_updates", "numa_hint_faults", "numa_hint_faults_local",
        "numa_pages_migrated", "skip_pid_inactive", "false_skips", "idle_scans")

#: why a policy whose scanner never changed a PTE ran as it did (vma_is_accessed(), spec §3)
STARVATION = (
    "the PID filter starved every VMA. vma_is_accessed() lets a thread scan a VMA only if the "
    "thread's PID bit is already in pids_active[], and only hinting faults in scanned VMAs set "
    "bits. The unconditional first passes (mm->numa_scan_seq < 2) went by without a fault setting "
    "any bit, so every VMA is skipped as pid_inactive for the rest of the run: nothing is "
    "protected or migrated, and elsp is the time with memory left where it was first touched. "
    "v6.7 added a forced scan of one PID-inactive VMA (vma_pids_forced) and v6.12 a starvation "
    "horizon, which end this.")


def _decimals(sd: float, mean: float) -> int:
    """Decimal places that show ``sd`` to two significant figures (negative: round to tens,
    hundreds, ...), at most 3; without spread, what the mean needs (none for a whole number)."""
    if not math.isfinite(sd) or sd == 0:
        if not math.isfinite(mean) or float(mean).is_integer() or abs(mean) >= 1000:
            return 0
        return 2
    return min(3, 1 - math.floor(math.log10(abs(sd))))


def format_spread(mean: float, sd: float) -> str:
    """``mean ± sd`` rounded together: the spread to two significant figures and the mean to the
    same place, thousands grouped (``8,020,000 ± 700,000``, ``208.93 ± 0.25``, ``0 ± 0``), never
    an exponent."""
    if not math.isfinite(mean):
        return "n/a"
    d = _decimals(sd, mean)
    sd = 0.0 if not math.isfinite(sd) else sd
    if d < 0:
        q = 10.0 ** -d
        return f"{round(mean / q) * q:,.0f} ± {round(sd / q) * q:,.0f}"
    return f"{mean:,.{d}f} ± {sd:,.{d}f}"


def _mean_sd(ds, var, policy):
    v = ds[var].sel(policy=policy).values.astype(float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def _units(ds, var) -> str:
    u = str(ds[var].attrs.get("units", ""))
    return "" if u == "1" else u


def summary_table(ds, width: int = TABLE_WIDTH) -> str:
    """Per policy (columns) and metric (rows): mean ± stddev over seeds, with the metric's units,
    laid out in ``width`` columns; more policies than fit wrap into further blocks, each
    repeating the metric names."""
    rows = [r for r in ROWS if r in ds]
    policies = [str(p) for p in ds.policy.values]
    cells = {(r, p): format_spread(*_mean_sd(ds, r, p)) for r in rows for p in policies}
    name_w = max(len(r) for r in rows) + 1
    unit_w = max([len(_units(ds, r)) for r in rows] + [5]) + 1
    col_w = {p: max(len(p), *(len(cells[r, p]) for r in rows)) + 2 for p in policies}
    blocks, cur, used = [], [], name_w + unit_w
    for p in policies:
        if cur and used + col_w[p] > width:
            blocks.append(cur)
            cur, used = [], name_w + unit_w
        cur.append(p)
        used += col_w[p]
    blocks.append(cur)
    lines = [f"{_name(ds, 'workload')} on {_name(ds, 'topology')}: mean ± stddev over "
             f"{ds.sizes['seed']} seed{'s' if ds.sizes['seed'] != 1 else ''} per policy"]
    for block in blocks:
        head = f"{'':<{name_w}}{'units':<{unit_w}}" + "".join(f"{p:>{col_w[p]}}" for p in block)
        lines += ["", head, "-" * len(head)]
        for r in rows:
            lines.append(f"{r:<{name_w}}{_units(ds, r):<{unit_w}}" + "".join(f"{cells[r, p]:>{col_w[p]}}" for p in block))
    if "finished" in ds and int(ds["finished"].min()) == 0:
        lines.append("note: some runs hit max_time before every thread finished (finished=0)")
    return "\n".join(lines)


def _name(ds, key: str) -> str:
    """The run's workload / topology: an attr of a simulate Dataset, a scalar coordinate of a
    point selected from a sweep."""
    if key in ds.attrs:
        return str(ds.attrs[key])
    if key in ds.coords and ds[key].ndim == 0:
        return str(ds[key].values)
    return "?"


def legend(ds) -> list[str]:
    """What the rows the kernel has no counter for mean (from :mod:`numalab.counters`)."""
    out = []
    for var, more in (("skip_pid_inactive", "the sched_skip_vma_numa reason=pid_inactive count"),
                      ("false_skips", "model ground truth: the filter locked a thread out of memory it uses"),
                      ("idle_scans", "model ground truth: change_prot_numa work that found nothing to do")):
        if var in ds:
            out.append(f"{var}: {ds[var].attrs.get('long_name', var)} ({more})")
    return out


def starved(ds) -> list[str]:
    """Policies that took no hinting fault in any seed (so no fault ever set a PID bit) while
    the PID filter skipped VMAs as pid_inactive: the filter starved every VMA (see
    :data:`STARVATION`)."""
    out = []
    var = "numa_hint_faults" if "numa_hint_faults" in ds else "numa_pte_updates"
    if var not in ds or "skip_pid_inactive" not in ds:
        return out
    for p in ds.policy.values:
        d = ds.sel(policy=p)
        if float(np.nanmax(d[var].values)) == 0 and float(np.nanmean(d["skip_pid_inactive"].values)) > 0:
            out.append(str(p))
    return out


def _change(ds, var, base, *, log=False, ci=0.95):
    from .stats import paired_change

    return paired_change(ds[var], "policy", base, ci=ci, scale="log" if log else "linear")


def _interval(eff, p) -> str:
    lo, hi = float(eff["lo"].sel(policy=p)), float(eff["hi"].sel(policy=p))
    if not math.isfinite(lo):
        return "one seed: no interval"
    return f"{eff.attrs['ci']:.0%} interval {lo:+.1f} to {hi:+.1f} %"


def _runs(eff, p) -> str:
    n, m = float(eff["runs"].sel(policy=p)), float(eff["mean"].sel(policy=p))
    if m == 0:
        return "no change to resolve"
    if not math.isfinite(n):
        return "a real machine would need more than 100,000 runs of each kernel to see it at this spread"
    return f"a real machine needs about {n:,.0f} runs of each kernel to see it at this spread"


def starvation_evidence(ds, policy) -> str:
    """The numbers that show ``policy`` starved: its PTE updates, hinting faults and skips."""
    got = [f"{v} {format_spread(*_mean_sd(ds, v, policy))}" for v in ("numa_pte_updates", "numa_hint_faults")
           if v in ds]
    skips = _mean_sd(ds, "skip_pid_inactive", policy)[0]
    return " and ".join(got) + f" with {skips:,.0f} pid_inactive skips per run"


def _pairs(policies, base, hungry) -> list[tuple[str, str]]:
    """(baseline, policy) pairs to compare: every policy against ``base``; when ``base`` starved,
    also the later policies against the first one that did not (where the interesting
    difference then is)."""
    pairs = [(base, p) for p in policies if p != base]
    if base in hungry:
        fed = [p for p in policies if p != base and p not in hungry]
        pairs += [(fed[0], q) for q in fed[1:]]
    return pairs


def interpretation(ds, baseline=None, ci: float = 0.95) -> list[str]:
    """A few lines on what the comparison says: per policy against ``baseline`` (default the
    first; when it starved, also against the first policy that did not), the elapsed-time change
    with its paired interval and whether the seeds resolve it, the runs a real machine would need,
    and why in kernel terms where a known situation explains it (starvation, migrations, false
    skips)."""
    policies = [str(p) for p in ds.policy.values]
    if len(policies) < 2 or "elsp" not in ds:
        return []
    base = policies[0] if baseline is None else str(baseline)
    hungry = set(starved(ds))
    pairs = _pairs(policies, base, hungry)
    lines = []
    if "finished" in ds and int(ds["finished"].min()) == 0:
        lines.append("Some runs stopped at max_time before every thread finished: their elsp is the time "
                     "so far, so the comparisons below are of runs cut short.")
    for b, p in pairs:
        el = _change(ds, "elsp", b, ci=ci)
        m = float(el["mean"].sel(policy=p))
        if bool(el["resolved"].sel(policy=p)):
            lines.append(f"{p} finishes {abs(m):.1f} % {'faster' if m < 0 else 'slower'} than {b} "
                         f"({_interval(el, p)}; {_runs(el, p)}).")
        else:
            lines.append(f"{p} and {b} are not told apart on elsp ({m:+.2f} %, {_interval(el, p)} includes 0; "
                         f"{_runs(el, p)}).")
    for p in [p for p in policies if p in hungry]:
        lines.append(f"Why {p}: {starvation_evidence(ds, p)} -- {STARVATION}")
    for b, p in pairs:
        lines += _why_pair(ds, b, p, hungry, ci)
    return lines


def _why_pair(ds, base, p, hungry, ci) -> list[str]:
    """What explains ``p`` against ``base``: migrations the starved baseline never did, or a
    resolved change in false skips and the rule behind it."""
    if p in hungry:
        return []
    if base in hungry:
        if "numa_pages_migrated" not in ds:
            return []
        mig = format_spread(*_mean_sd(ds, "numa_pages_migrated", p)).split(" ± ")[0]
        return [f"{p} migrated {mig} pages per run to the nodes of the threads that use them, which {base} "
                f"never did: that is where its time goes."]
    if "false_skips" not in ds:
        return []
    fs = _change(ds, "false_skips", base, log=True, ci=ci)
    if not bool(fs["resolved"].sel(policy=p)):
        return []
    m = float(fs["mean"].sel(policy=p))
    a, b = _mean_sd(ds, "false_skips", base)[0], _mean_sd(ds, "false_skips", p)[0]
    moved = bool(_change(ds, "elsp", base, ci=ci)["resolved"].sel(policy=p))
    how = _rule_difference(base, p) if m < 0 else "its filter keeps threads out of VMAs they write"
    return [f"{p} has {abs(m):.0f} % {'fewer' if m < 0 else 'more'} false skips than {base} "
            f"({b:,.1f} vs {a:,.1f} per run, skips of VMAs the scanning thread writes): {how}"
            + ("." if moved else ", though the elapsed time does not move with it.")]


def _rule_difference(base: str, new: str) -> str:
    """How ``new``'s scan filter lets through VMAs ``base``'s skips as PID-inactive, in kernel terms."""
    from .errors import NumalabValueError
    from .policy import Policy

    try:
        b, n = Policy.parse(base), Policy.parse(new)
    except (NumalabValueError, TypeError, ValueError):
        return "its rules let threads scan VMAs whose PID bit is not in pids_active[]"
    why = []
    if isinstance(n.windows, int) and isinstance(b.windows, int) and n.windows > b.windows:
        why.append(f"its longer history (N = {n.windows} windows against {b.windows}) keeps a thread's PID bit "
                   "in pids_active[] longer")
    if n.hot is not None and b.hot is None:
        why.append("its hot rule scans a VMA anyone faulted in during the newest window")
    if n.shared is not None and b.shared is None:
        why.append(f"its shared rule scans a VMA with at least {n.shared} distinct PIDs in its windows")
    if n.starvation and not b.starvation:
        why.append("its starvation horizon scans a VMA the PID test has skipped too long")
    if n.forced_one and not b.forced_one:
        why.append("it forces a scan of one PID-inactive VMA per pass (vma_pids_forced)")
    return "; ".join(why) or "its rules let threads scan VMAs whose PID bit is not in pids_active[]"


def explain(ds, baseline=None, ci: float = 0.95, width: int = TABLE_WIDTH) -> str:
    """What ``numalab simulate`` prints for ``ds``: the table, the legend and the interpretation
    (each line wrapped to ``width``)."""
    import textwrap

    out = [summary_table(ds, width), ""]
    out += [textwrap.fill(line, width, subsequent_indent="  ") for line in legend(ds)]
    lines = interpretation(ds, baseline, ci)
    if lines:
        out += ["", "What it says:"]
        out += [textwrap.fill(line, width, initial_indent="* ", subsequent_indent="  ") for line in lines]
    return "\n".join(out)

"""The community's tables: mmtests ``compare-kernels`` and kernel-test-robot (LKP) text, both
printed from simulated runs and read back from real reports.

Layouts follow spec/benchmarks-and-reports.md §2.5-§2.6 (mmtests), §3.2-§3.3 (LKP) and §4.1
(vmstat rows). Statistics come from :mod:`numalab.stats`.

Two kinds of Dataset are accepted by :func:`mmtests` and :func:`lkp`:

* **runs** -- what ``simulate``/``sweep`` produce: a sample dim (``"seed"``), a dim along which
  kernels/policies differ (``"policy"``), variables ``elsp``, ``syst`` (seconds), vmstat
  counters; the workload is a ``"workload"`` dim or the ``workload`` attr;
* **summaries** -- what :func:`read_mmtests` / :func:`read_lkp` return from a real report (which
  only carries summary statistics). Representation, chosen so units never mix in one variable:

  - mmtests (``attrs["numalab_summary"] == "mmtests"``): dims ``("kernel", "workload", "stat")``;
    ``<var>`` holds the printed row values (``stat`` = the row labels ``Min``, ``Amean``, ...;
    the ``CoeffVar`` row is in percent), ``<var>_pct`` the printed percentage, and
    ``<var>_significant`` whether the cell carried asterisks. Monitor rows become
    variables over ``("kernel",)``: ``duration_user``/``duration_system``/``duration_elapsed``
    and the vmstat counters by their kernel names (``numa_hint_faults``, ...), derived rows as
    ``numa_pte_updates_base``, ``numa_hint_local_pct``, ``autonuma_cost``.
  - LKP (``attrs["numalab_summary"] == "lkp"``): ``<var>`` is the mean over runs, dims
    ``("kernel", "workload")`` for ``autonuma-benchmark.<test>.seconds`` (variable ``elsp``) and
    ``("kernel",)`` for job-level stats; ``<var>_stddev_pct`` is the printed ``±`` value (the
    truncated integer; NaN where the robot printed none, i.e. r <= 2 % or one run) and
    ``<var>_change`` the printed %change (or absolute change for ``%`` stats; NaN for the base).
    Stats with no numalab name keep their LKP key as the variable name.

  Both carry the kernel names (mmtests result names / LKP commit ids as printed) as the
  ``"kernel"`` coordinate and the layout needed to print the same text again in attrs.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np

from . import stats
from .errors import NumalabValueError, check_choice

__all__ = [
    "mmtests",
    "lkp",
    "read_mmtests",
    "read_lkp",
    "read_vmstat",
    "mmtests_test_name",
    "lkp_test_name",
]

# --------------------------------------------------------------------------------------------
# names

#: metric variable -> mmtests op prefix, per layout
_OLD_PREFIX = {"syst": "syst", "elsp": "elsp"}
_NEW_PREFIX = {"elsp": "Elapsed", "syst": "System", "user": "User"}
_PREFIX_VAR = {"syst": "syst", "elsp": "elsp", "Elapsed": "elsp", "System": "syst", "User": "user"}

_VAR_ATTRS = {
    "elsp": dict(units="s", long_name="elapsed wall-clock time"),
    "syst": dict(units="s", long_name="system CPU time"),
    "user": dict(units="s", long_name="user CPU time"),
}

#: vmstat counters: variable (= kernel name) -> mmtests "Ops" label (§4.1 print order)
_VMSTAT_SOURCE = {
    "numa_hit": "NUMA alloc hit",
    "numa_miss": "NUMA alloc miss",
    "numa_interleave": "NUMA interleave hit",
    "numa_local": "NUMA alloc local",
    "numa_pte_updates": "NUMA base-page range updates",
    "numa_huge_pte_updates": "NUMA PMD updates",
    "numa_hint_faults": "NUMA hint faults",
    "numa_hint_faults_local": "NUMA hint local faults %",
    "numa_pages_migrated": "NUMA pages migrated",
}
#: every Ops row we know, print order, with the variable an ingested row is stored under
_OPS_ROWS = [
    ("NUMA alloc hit", "numa_hit"),
    ("NUMA alloc miss", "numa_miss"),
    ("NUMA interleave hit", "numa_interleave"),
    ("NUMA alloc local", "numa_local"),
    ("NUMA base-page range updates", "numa_pte_updates"),
    ("NUMA PTE updates", "numa_pte_updates_base"),
    ("NUMA PMD updates", "numa_huge_pte_updates"),
    ("NUMA hint faults", "numa_hint_faults"),
    ("NUMA hint local faults %", "numa_hint_faults_local"),
    ("NUMA hint local percent", "numa_hint_local_pct"),
    ("NUMA pages migrated", "numa_pages_migrated"),
    ("AutoNUMA cost", "autonuma_cost"),
]
_OPS_VAR = dict(_OPS_ROWS)
_DURATION_ROWS = [("User", "duration_user", "user"), ("System", "duration_system", "syst"),
                  ("Elapsed", "duration_elapsed", "elsp")]


def mmtests_test_name(workload: str) -> str:
    """mmtests' TEST name of a workload: ``numa01_THREAD_ALLOC`` -> ``NUMA01_THREADLOCAL``.

    Names that are not autonuma-benchmark binaries are returned unchanged."""
    w = str(workload)
    if w.lower().startswith("numa0"):
        return w.upper().replace("THREAD_ALLOC", "THREADLOCAL")
    return w


def lkp_test_name(test: str) -> str:
    """The benchmark binary name (numalab's workload name, LKP's ``<test>``) of an mmtests TEST
    or workload alias: ``NUMA01_THREADLOCAL`` -> ``numa01_THREAD_ALLOC``."""
    t = str(test)
    if t.lower().startswith("numa0"):
        return t[:6].lower() + t[6:].upper().replace("THREADLOCAL", "THREAD_ALLOC")
    return t


def _test_sort_key(test: str) -> str:
    # mmtests orders TESTs by the file names autonumabench-<TEST>-1.time: '-' sorts before '_'
    return test + "-"


# --------------------------------------------------------------------------------------------
# shared Dataset handling


def _along(ds, along):
    if along is None:
        for cand in ("policy", "kernel"):
            if cand in ds.dims:
                return cand
        raise NumalabValueError(
            f"along=None: the Dataset has neither a 'policy' nor a 'kernel' dim; dims are {list(ds.dims)}"
        )
    if along not in ds.dims:
        raise NumalabValueError(f"along={along!r} is not a dimension; dims are {list(ds.dims)}")
    return along


def _order_kernels(ds, along, baseline):
    names = [str(v) for v in ds[along].values]
    if len(set(names)) != len(names):
        raise NumalabValueError(f"{along} names must be unique to head columns; got {names}")
    if baseline is None:
        return names
    base = check_choice("baseline", str(baseline), names)
    return [base] + [n for n in names if n != base]


def _workloads(ds, workload):
    if "workload" in ds.dims:
        return [str(w) for w in ds["workload"].values]
    w = workload if workload is not None else ds.attrs.get("workload")
    if w is None:
        raise NumalabValueError(
            "the Dataset has no 'workload' dim or attr; pass workload='numa01' (or another name)"
        )
    if isinstance(w, str) and w.startswith("{"):  # a JSON-encoded workload description
        try:
            w = json.loads(w).get("name", w)
        except (ValueError, AttributeError):
            pass
    return [str(w)]


def _check_dims(da, allowed):
    extra = [d for d in da.dims if d not in allowed]
    if extra:
        raise NumalabValueError(
            f"variable {da.name!r} has dims {extra} that a report cannot show; select one point "
            f"first, e.g. ds.sel({extra[0]}=...)"
        )


def _by_kernel(da, along, kernels):
    return da.sel({along: kernels}) if along in da.dims else da


def _summary_kind(ds):
    return ds.attrs.get("numalab_summary")


def _refuse_other_summary(ds, fmt):
    kind = _summary_kind(ds)
    if kind is not None and kind != fmt:
        # mmtests rows carry a sample stddev without n; LKP lines a truncated population stddev%
        raise NumalabValueError(
            f"this Dataset is an ingested {kind} summary; it holds no runs, so it cannot be printed as {fmt} "
            f"(print it with report.{kind}() instead)"
        )


# --------------------------------------------------------------------------------------------
# mmtests


def _split_name(name: str) -> tuple[str, str]:
    """compare-kernels' two-line header split (§2.5), quirks included."""
    pos = name.find("-")
    if pos >= 0:
        window = name[pos : pos + pos + 3]  # Perl substr(name, pos, pos + 3)
        if re.search(r"-rc[0-9]", window):
            pos += 4
        return name[:pos], name[pos + 1 :]
    return name[:-1], name  # no '-': substr(name, 0, -1) / substr(name, 0)


def _header(kernels, first, width):
    tops, bottoms = zip(*(_split_name(k) for k in kernels))
    return [" " * first + "".join(t.rjust(width) for t in tops),
            " " * first + "".join(b.rjust(width) for b in bottoms)]


def _cell(value, pct, base_value, significant, fl):
    """One kernel cell: ``%FL.2f (%7.2f%)``, or ``*%7.2f%*`` when significant (§2.4)."""
    if math.isnan(value) or value == -1 or base_value == -1:
        value, pct, significant = 0.0, 0.0, False  # NaN / -1 print as 0.00 (0.00%) (§2.3)
    if math.isnan(pct):
        pct = 0.0  # e.g. against a one-sample (NaN stddev) baseline; UNVERIFIED against Perl
    if significant:
        return f"{value:{fl}.2f} *{pct:7.2f}%*"
    return f"{value:{fl}.2f} ({pct:7.2f}%)"


def _main_rows(ds, metrics, along, kernels, era, direction, sample_dim, workload):
    """The stat labels and the ops of the main table: [(op, var, values, pct, significant)],
    each array (kernel, stat), in mmtests' op order."""
    summary = _summary_kind(ds) == "mmtests"
    if summary:
        stored = ds.attrs.get("mmtests_baseline")
        if kernels[0] != stored:
            raise NumalabValueError(
                f"baseline={kernels[0]!r}: an ingested mmtests summary only carries percentages "
                f"against its own baseline {stored!r}"
            )
        labels = [str(s) for s in ds["stat"].values]
    else:
        labels = list(stats.stat_labels(direction, era))
    new = era == "2026"
    workloads = _workloads(ds, workload)
    ops = []
    for var in metrics:
        if var not in ds.data_vars:
            raise NumalabValueError(f"metric={var!r} is not a variable; variables are {sorted(ds.data_vars)}")
        prefix = (_NEW_PREFIX if new else _OLD_PREFIX).get(var, var)
        if summary:
            tables = [ds[var], ds[f"{var}_pct"], ds[f"{var}_significant"]]
        else:
            tables = _compare_runs(ds, var, along, kernels, era, direction, sample_dim)
        per_test = "workload" in tables[0].dims
        inner = (along, "workload", "stat") if per_test else (along, "stat")
        arrays = [t.sel({along: kernels}).transpose(*inner).values for t in tables]
        columns = [str(x) for x in tables[0]["workload"].values] if per_test else []
        for w in workloads if per_test else [None]:
            vals, pct, sg = (a[:, columns.index(w)] if per_test else a for a in arrays)
            if summary and np.isnan(vals).all():
                continue  # this op was not in the report
            if not per_test and not summary:
                w = workloads[0]  # one workload, named by the attr
            op = prefix if w is None else f"{prefix}-{mmtests_test_name(w)}"
            ops.append((op, var, vals, pct, sg.astype(bool)))
    if summary:
        order = json.loads(ds.attrs.get("mmtests_ops", "[]"))
        ops.sort(key=lambda o: order.index(o[0]) if o[0] in order else len(order))
    elif new:
        ops.sort(key=lambda o: (o[0].split("-", 1)[0], _test_sort_key(o[0].split("-", 1)[-1])))
    else:
        rank = {"syst": 0, "elsp": 1}
        ops.sort(key=lambda o: (rank.get(o[1], 2), _test_sort_key(o[0].split("-", 1)[-1])))
    return labels, ops


def _compare_runs(ds, var, along, kernels, era, direction, sample_dim):
    """value / pct / significant DataArrays of one run variable (vectorised over workloads)."""
    da = ds[var]
    if era != "2026" and var == "user":
        raise NumalabValueError("metric='user': 2019-2025 mmtests reports only syst- and elsp- ops; use era='2026'")
    _check_dims(da, {along, sample_dim, "workload"})
    if sample_dim not in da.dims:
        raise NumalabValueError(f"variable {var!r} has no sample dim {sample_dim!r}; dims are {list(da.dims)}")
    if "workload" in ds.dims and "workload" not in da.dims:
        raise NumalabValueError(
            f"metric={var!r} has no 'workload' dim although the Dataset has one; an mmtests op is per workload"
        )
    cmp = stats.mmtests_compare(
        da.sel({along: kernels}), along=along, baseline=kernels[0], dim=sample_dim, direction=direction, era=era
    )
    return [cmp["value"], cmp["pct"], cmp["significant"]]


def _monitor_value(ds, var, along, kernels):
    da = ds[var]
    other = [d for d in da.dims if d != along]
    tot = da.sum(dim=other, skipna=True, min_count=1) if other else da
    return [float(v) for v in _by_kernel(tot, along, kernels).values]


def _monitor_tables(ds, along, kernels, era):
    """Duration and vmstat "Ops" tables (§2.6, §4.1): totals over every run of each kernel."""
    fl_duration = 18 if era == "2026" else 12
    summary = _summary_kind(ds) == "mmtests"
    blocks = []
    rows = []
    for label, stored, var in _DURATION_ROWS:
        name = stored if summary else var
        if name in ds.data_vars and (summary or _monitor_ok(ds, name, along)):
            rows.append((label, _monitor_value(ds, name, along, kernels)))
    if rows:
        blocks.append(_plain_table("Duration", rows, kernels, fl_duration, width2=len("Elapsed")))
    rows = []
    if summary:
        order = json.loads(ds.attrs.get("mmtests_ops_rows", "[]"))
        for label in order:
            var = _OPS_VAR.get(label, label)
            rows.append((label, _monitor_value(ds, var, along, kernels)))
    else:
        have = {v: np.array(_monitor_value(ds, v, along, kernels)) for v in _VMSTAT_SOURCE if v in ds.data_vars
                and _monitor_ok(ds, v, along)}
        pte, huge = have.get("numa_pte_updates"), have.get("numa_huge_pte_updates")
        hint, local = have.get("numa_hint_faults"), have.get("numa_hint_faults_local")
        migrated = have.get("numa_pages_migrated")
        derived = {}
        if pte is not None:
            derived["numa_pte_updates_base"] = pte - 512 * huge if huge is not None else pte
        if hint is not None and local is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                derived["numa_hint_local_pct"] = np.where(hint > 0, 100.0 * local / np.where(hint > 0, hint, 1), 100.0)
        if pte is not None and hint is not None and migrated is not None:
            # the source means a page-copy term too, but a stray statement drops it (§4.1)
            derived["autonuma_cost"] = (7 * pte + 5000 * hint + 19 * migrated) / 1e6
        for label, var in _OPS_ROWS:
            v = have.get(var, derived.get(var))
            if v is not None:
                rows.append((label, [float(x) for x in v]))
    if rows:
        blocks.append(_plain_table("Ops", rows, kernels, 15))
    return blocks


def _monitor_ok(ds, var, along):
    return along in ds[var].dims and "time" not in ds[var].dims


def _plain_table(stat, rows, kernels, fl, width2=None):
    w2 = max(len(r[0]) for r in rows) if width2 is None else max(width2, *(len(r[0]) for r in rows))
    lines = _header(kernels, len(stat) + 1 + w2, fl)
    for label, values in rows:
        cells = "".join(f"{0.0 if math.isnan(v) else v:{fl}.2f}" for v in values)
        lines.append(f"{stat} {label:<{w2}}{cells}")
    return lines


def mmtests(
    ds,
    metric=None,
    along: str | None = None,
    baseline=None,
    era: str = "2023",
    *,
    direction: str = "lower",
    sample_dim: str = "seed",
    workload: str | None = None,
    monitors: bool = True,
    title: str | None = None,
) -> str:
    """The mmtests ``compare-kernels`` text for ``ds`` (§2.5), monitor tables included (§2.6).

    ``metric``: a variable name or list (default: ``syst``, ``elsp`` for 2019-2025;
    ``elsp``, ``syst``, ``user`` (those present) for ``era="2026"``); each becomes one op per
    workload, named ``<prefix>-<TEST>`` (``elsp-NUMA01_THREADLOCAL``, ``Elapsed-NUMA02``).
    ``along``: the dim holding the compared kernels (default ``"policy"``, else ``"kernel"``).
    ``baseline``: the column the percentages compare against (default: the first).
    ``era``: one of :data:`numalab.stats.ERAS`; decides the layout and the significance test.
    ``monitors``: append the Duration table (total elsp/syst/user over every run) and the vmstat
    ``Ops`` table (counter totals over every run, as mmtests' test-begin/test-end delta).
    A Dataset from :func:`read_mmtests` is printed as read (``era`` and ``direction`` ignored).
    """
    era = check_choice("era", era, stats.ERAS)
    check_choice("direction", direction, stats.DIRECTIONS)
    _refuse_other_summary(ds, "mmtests")
    summary = _summary_kind(ds) == "mmtests"
    if summary:
        era = "2026" if int(ds.attrs.get("mmtests_field_width", 12)) == 18 else "2023"
    along = _along(ds, along)
    kernels = _order_kernels(ds, along, baseline)
    if metric is None:
        if summary:
            metric = json.loads(ds.attrs.get("mmtests_vars", "[]"))
        elif era == "2026":
            metric = [v for v in ("elsp", "syst", "user") if v in ds.data_vars]
        else:
            metric = [v for v in ("syst", "elsp") if v in ds.data_vars]
        if not metric:
            raise NumalabValueError(f"no elsp/syst variables to report; variables are {sorted(ds.data_vars)}")
    elif isinstance(metric, str):
        metric = [metric]
    labels, ops = _main_rows(ds, list(metric), along, kernels, era, direction, sample_dim, workload)
    fl = 18 if era == "2026" else 12
    w1 = max(len(s) for s in labels)
    w2 = max(len(o[0]) for o in ops)
    lines = []
    if title is None:
        title = ds.attrs.get("mmtests_title", "autonumabench") if summary else "autonumabench"
    if title:
        lines.append(title)
    lines += _header(kernels, w1 + 1 + w2, fl + 7 + 4)
    for i, label in enumerate(labels):
        for op, _var, vals, pct, sg in ops:
            base = float(vals[0, i])
            cells = "".join(
                _cell(float(vals[k, i]), float(pct[k, i]), base if k else None, bool(sg[k, i]), fl)
                for k in range(len(kernels))
            )
            lines.append(f"{label:<{w1}} {op:<{w2}}{cells}")
    if monitors:
        for block in _monitor_tables(ds, along, kernels, era):
            lines.append("")
            lines += block
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# LKP


def _lkp_key(var: str, workload):
    if var == "elsp" and workload is not None:
        return f"autonuma-benchmark.{lkp_test_name(workload)}.seconds"
    if var == "syst":
        return "autonuma-benchmark.time.system_time"
    if var == "user":
        return "autonuma-benchmark.time.user_time"
    if var.startswith(("numa_", "pg", "thp_")):
        return f"proc-vmstat.{var}"
    return var


_SECONDS = re.compile(r"^autonuma-benchmark\.(?!time\.)(.+)\.seconds$")


def _lkp_var(key: str):
    """(variable, workload or None) an LKP stat key is stored under."""
    m = _SECONDS.match(key)
    if m:
        return "elsp", lkp_test_name(m.group(1))
    if key == "autonuma-benchmark.time.system_time":
        return "syst", None
    if key == "autonuma-benchmark.time.user_time":
        return "user", None
    if key.startswith("proc-vmstat."):
        return key[len("proc-vmstat."):], None
    return key, None


def _lkp_value(v: float) -> str:
    if math.isnan(v):
        return f"{'NaN':>10}"
    if abs(v) < 1000:
        return f"{v:10.2f}"
    if abs(v) > 100_000_000:
        return f"{v:10.4g}"
    return f"{int(v):10d}"  # Ruby's (long) cast truncates toward zero


def _lkp_pm(r: float, as_read: bool = False) -> str:
    # an ingested ± holds the printed (truncated) integer, so "> 2" no longer applies: it was shown
    if not math.isnan(r) and (as_read or r > 2):
        return f" ±{int(r):3d}%"
    return " " * 6


def _lkp_change(c: float, absolute: bool) -> str:
    text = f"{c:+10.2g}" if abs(c) >= 100_000 else f"{c:+10.1f}"
    return text + ("  " if absolute else "% ")


def _lkp_header(ids):
    k = len(ids) - 1
    return [
        ids[0][:16].rjust(16) + " " + "".join(i[:27].rjust(27) + " " for i in ids[1:]),
        "-" * 16 + " " + ("-" * 27 + " ") * k,
        "         %stddev" + "     %change         %stddev" * k,
        "             \\  " + "        |                \\  " * k,
    ]


def _lkp_rows(ds, metrics, along, kernels, sample_dim, workload):
    """[(key, means, stddev_pcts, changes)] in print order."""
    summary = _summary_kind(ds) == "lkp"
    if summary:
        order = json.loads(ds.attrs.get("lkp_order", "[]"))
        stored_base = ds.attrs.get("lkp_baseline")
        rows = []
        for key in order:
            var, w = _lkp_var(key)
            if metrics is not None and var not in metrics:
                continue
            def column(name, w=w):
                da = ds[name].sel(workload=w) if w is not None else ds[name]
                return _by_kernel(da, along, kernels).values.astype(float)

            mean, pm = column(var), column(f"{var}_stddev_pct")
            if kernels[0] == stored_base:
                change = column(f"{var}_change")
            else:
                change = stats.lkp_change(mean, mean[0], stats.lkp_is_absolute(key))
            rows.append((key, mean, pm, change))
        return rows
    if metrics is None:
        metrics = [v for v in ("elsp", "syst", "user", *_VMSTAT_SOURCE) if v in ds.data_vars]
        if not metrics:
            raise NumalabValueError(f"no elsp/syst/vmstat variables to report; variables are {sorted(ds.data_vars)}")
    workloads = _workloads(ds, workload)
    rows = []
    for var in metrics:
        if var not in ds.data_vars:
            raise NumalabValueError(f"metric={var!r} is not a variable; variables are {sorted(ds.data_vars)}")
        da = ds[var]
        _check_dims(da, {along, sample_dim, "workload"})
        if sample_dim not in da.dims:
            raise NumalabValueError(f"variable {var!r} has no sample dim {sample_dim!r}; dims are {list(da.dims)}")
        per_test = var == "elsp"
        for w in workloads if per_test else [None]:
            sel = da
            if "workload" in da.dims:
                # job-level stats of a multi-test Dataset: one job ran every test
                sel = da.sel(workload=w) if per_test else da.sum("workload", skipna=False)
            st = stats.lkp_stats(sel.sel({along: kernels}), dim=sample_dim)
            key = _lkp_key(var, w if per_test else None)
            mean = st["mean"].transpose(along).values
            change = stats.lkp_change(mean, mean[0], stats.lkp_is_absolute(key))
            rows.append((key, mean, st["stddev_pct"].transpose(along).values, change))
    return rows


def lkp(
    ds,
    metric=None,
    along: str | None = None,
    baseline=None,
    *,
    sample_dim: str = "seed",
    workload: str | None = None,
    group_header: bool | None = None,
) -> str:
    """The kernel test robot's ``%stddev %change`` block for ``ds`` (§3.2-§3.3).

    Column ids are the ``along`` names (policies or commits) cut to 16 / 27 characters; the
    baseline (default: first) comes first. Rows: ``autonuma-benchmark.<test>.seconds`` per
    workload from ``elsp``, ``autonuma-benchmark.time.system_time``/``user_time`` from
    ``syst``/``user`` (summed over workloads when there are several: one job ran them all) and
    ``proc-vmstat.<counter>`` for the vmstat counters -- every row, not only LKP's "changed"
    ones. ``group_header``: print the ``====`` block with axes and commit lines (default: only
    when an ingested report had one). Ingested summaries (:func:`read_lkp`) print as read.
    """
    _refuse_other_summary(ds, "lkp")
    along = _along(ds, along)
    kernels = _order_kernels(ds, along, baseline)
    if len(kernels) < 2:
        raise NumalabValueError(f"an LKP comparison needs at least 2 {along}s; got {kernels}")
    metrics = [metric] if isinstance(metric, str) else metric
    rows = _lkp_rows(ds, metrics, along, kernels, sample_dim, workload)
    as_read = _summary_kind(ds) == "lkp"
    lines = []
    stored = ds.attrs.get("lkp_group_header")
    if group_header is None:
        group_header = stored is not None
    if group_header:
        if stored is not None and kernels[0] == ds.attrs.get("lkp_baseline"):
            g = json.loads(stored)
        else:
            w = _workloads(ds, workload) if ("workload" in ds.dims or "workload" in ds.attrs or workload) else []
            g = {
                "axes": "tbox_group/test/testcase",
                "values": f"{ds.attrs.get('topology', 'numalab')}/{'+'.join(w)}/autonuma-benchmark",
                "compare": "commit",
                "commits": kernels,
            }
        lines += ["=" * 89, f"{g['axes']}:", f"  {g['values']}", "", f"{g['compare']}: "]
        lines += [f"  {c}" for c in g["commits"]] + [""]
    lines += _lkp_header(kernels)
    for key, mean, pm, change in rows:
        absolute = stats.lkp_is_absolute(key)
        parts = [_lkp_value(float(mean[0])), _lkp_pm(float(pm[0]), as_read)]
        for k in range(1, len(kernels)):
            parts += [_lkp_change(float(change[k]), absolute), _lkp_value(float(mean[k])),
                      _lkp_pm(float(pm[k]), as_read)]
        lines.append("".join(parts) + "  " + key)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# ingest


_QUOTE = re.compile(r"^(?:> ?)+")


def _unquote(text: str) -> list[str]:
    """Lines of ``text`` with e-mail quoting (``> ``, nested) and CRs removed."""
    if not isinstance(text, str):
        raise NumalabValueError(f"text must be a str holding the report; got {type(text).__name__}")
    return [_QUOTE.sub("", line.rstrip("\r")) if line.startswith(">") else line.rstrip("\r")
            for line in text.split("\n")]


def _err(lineno: int, msg: str) -> NumalabValueError:
    return NumalabValueError(f"line {lineno}: {msg}")


def _summary_dataset(kernels, variables, attrs):
    import xarray as xr

    ds = xr.Dataset(variables, coords={"kernel": kernels})
    ds.attrs.update(attrs)
    return ds


def _attrs_for(var: str):
    if var in _VAR_ATTRS:
        return dict(_VAR_ATTRS[var])
    if var in _VMSTAT_SOURCE:
        return dict(units="1", long_name=_VMSTAT_SOURCE[var], kernel_name=var)
    return dict(units="1", long_name=var)


# ---- LKP

_DASH = re.compile(r"^-{16}((?: -{27})+) ?\s*$")
_LEGEND1 = re.compile(r"^ +%stddev(?: +%change +%stddev)*\s*$")
_LEGEND2 = re.compile(r"^ +\\(?: +\| +\\)*\s*$")
_NUMBER = re.compile(r"^-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$|^-?(?:nan|inf)$", re.I)
_CHANGE = re.compile(r"^[+-](?:\d+(?:\.\d*)?)(?:e[+-]?\d+)?%?$|^[+-]?(?:nan|inf)%?$", re.I)


def read_lkp(text: str):
    """Parse the first kernel-test-robot ``%stddev %change`` block in ``text`` (§3.2-§3.3).

    Accepts e-mail quoting (``> ``), lines wrapped by a mail client between fields, prose
    around the block and an optional ``====`` group header. Returns an LKP summary Dataset
    (see the module docstring); ``lkp(read_lkp(text))`` prints the block again. Malformed or
    truncated input raises ``ValueError`` naming the line and what was expected."""
    lines = _unquote(text)
    dash = next((i for i, line in enumerate(lines) if _DASH.match(line)), None)
    if dash is None:
        raise _err(1, "no LKP comparison block: expected a line of 16 dashes followed by groups of 27")
    k = 1 + _DASH.match(lines[dash]).group(1).count(" ")
    if dash == 0 or len(lines[dash - 1].split()) != k:
        raise _err(dash if dash else 1, f"expected the column-id line with {k} commit ids above the dashes")
    ids = lines[dash - 1].split()
    for off, pat, what in ((1, _LEGEND1, "the legend '%stddev     %change         %stddev'"),
                           (2, _LEGEND2, "the legend line of '\\' and '|'")):
        got = lines[dash + off] if dash + off < len(lines) else None
        if got is None or not pat.match(got):
            if got is not None and "fail:runs" in got:
                raise _err(dash + off + 1, "failure-type (fail:runs) blocks are not supported; paste the %stddev block")
            raise _err(dash + off + 1, f"expected {what}, got {'end of text' if got is None else repr(got)}")
        bars = got.count("%change") if off == 1 else got.count("|")
        if bars != k - 1:
            raise _err(dash + off + 1, f"legend has {bars + 1} columns, expected {k} (one per commit id)")
    header = _lkp_group_header(lines, dash - 1, k)

    # token stream of the stat lines, up to the first blank line
    tokens = []
    i = dash + 3
    while i < len(lines) and lines[i].strip():
        tokens += [(tok, i + 1) for tok in lines[i].split()]
        i += 1
    if not tokens:
        raise _err(i + 1, "expected at least one stat line after the legend")
    records = []
    pos = 0
    last_line = tokens[-1][1]

    def take(what):
        nonlocal pos
        if pos >= len(tokens):
            raise _err(last_line, f"truncated stat line: expected {what}")
        tok = tokens[pos]
        pos += 1
        return tok

    def value(what):
        tok, ln = take(what)
        if not _NUMBER.match(tok):
            raise _err(ln, f"expected {what} (a number), got {tok!r}")
        return float(tok)

    def plusminus():
        if pos < len(tokens) and tokens[pos][0].startswith("±"):
            tok, ln = take("±")
            rest = tok[1:]
            if not rest:
                rest, ln = take("the ±N% value")
            m = re.fullmatch(r"(\d+)%", rest)
            if not m:
                raise _err(ln, f"expected '±  N%' (an integer percentage), got {rest!r} after '±'")
            return float(m.group(1))
        return math.nan

    while pos < len(tokens):
        start_line = tokens[pos][1]
        means, pms, changes = [value("the base commit's value")], [plusminus()], [math.nan]
        pct_flags = []
        for j in range(1, k):
            tok, ln = take(f"the %change of commit {j + 1}")
            if not _CHANGE.match(tok):
                raise _err(ln, f"expected the %change of commit {j + 1} (e.g. '-27.1%'), got {tok!r}")
            pct_flags.append(tok.endswith("%"))
            changes.append(float(tok.rstrip("%")))
            means.append(value(f"the value of commit {j + 1}"))
            pms.append(plusminus())
        name, ln = take("the stat name")
        if _NUMBER.match(name) or _CHANGE.match(name) or name.startswith("±"):
            raise _err(ln, f"expected the stat name, got {name!r} (too many columns for {k} commits?)")
        absolute = stats.lkp_is_absolute(name)
        if any(f == absolute for f in pct_flags):
            raise _err(ln, f"stat {name!r}: its change should be printed {'without' if absolute else 'with'} '%'")
        records.append((name, means, pms, changes, start_line))

    return _lkp_dataset(ids, records, header)


def _lkp_group_header(lines, id_line, k):
    """The optional ``====`` block above the column ids, as a dict (or None)."""
    j = id_line - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    commits = []
    while j >= 0 and lines[j].startswith("  ") and lines[j].strip():
        commits.insert(0, lines[j][2:])
        j -= 1
    if j < 0 or not re.fullmatch(r"\S+: ?", lines[j]) or not commits:
        return None
    compare = lines[j].rstrip()[:-1]
    # a subject wrapped by a mail client: continuation lines start deeper than 2 spaces
    joined = []
    for c in commits:
        if joined and c.startswith(" "):
            joined[-1] += " " + c.strip()
        else:
            joined.append(c)
    if len(joined) != k:
        raise _err(j + 2, f"expected {k} commit lines under '{compare}:', found {len(joined)}")
    j -= 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    if j < 1 or not lines[j].startswith("  ") or not lines[j - 1].endswith(":"):
        return None
    values, axes = lines[j][2:], lines[j - 1][:-1]
    if j < 2 or lines[j - 2] != "=" * 89:
        return None
    return {"axes": axes, "values": values, "compare": compare, "commits": joined}


def _lkp_dataset(ids, records, header):
    k = len(ids)
    per_var: dict[str, dict] = {}
    workloads: list[str] = []
    order = []
    for name, means, pms, changes, ln in records:
        if name in order:
            raise _err(ln, f"stat {name!r} appears twice")
        order.append(name)
        var, w = _lkp_var(name)
        if w is not None and w not in workloads:
            workloads.append(w)
        entry = per_var.setdefault(var, {"per_test": w is not None, "rows": {}, "line": ln, "key": name})
        if entry["per_test"] != (w is not None):
            raise _err(ln, f"stat {name!r} mixes per-test and job-level rows for variable {var!r}")
        entry["rows"][w] = (means, pms, changes)
    variables = {}
    for var, entry in per_var.items():
        pct_units = "1" if stats.lkp_is_absolute(entry["key"]) else "%"
        if entry["per_test"]:
            arr = np.full((3, k, len(workloads)), np.nan)
            for w, (m, p, c) in entry["rows"].items():
                arr[:, :, workloads.index(w)] = [m, p, c]
            dims = ("kernel", "workload")
        else:
            arr = np.array(entry["rows"][None], dtype=float)
            dims = ("kernel",)
        attrs = _attrs_for(var)
        variables[var] = (dims, arr[0], {**attrs, "lkp_stat": "mean over runs"})
        variables[f"{var}_stddev_pct"] = (dims, arr[1], {"units": "%", "long_name": f"population stddev of {var} over runs, "
                                                         "as printed (truncated; NaN = not shown, <= 2 % or one run)"})
        variables[f"{var}_change"] = (dims, arr[2], {"units": pct_units, "long_name": f"change of {var} against the base commit, as printed"})
    ds = _summary_dataset(list(ids), variables, {
        "numalab_summary": "lkp",
        "source": "read_lkp",
        "lkp_baseline": ids[0],
        "lkp_order": json.dumps(order),
    })
    if workloads:
        ds = ds.assign_coords(workload=workloads)
    if header is not None:
        ds.attrs["lkp_group_header"] = json.dumps(header)
    return ds


# ---- mmtests

_CELL = r"(-?(?:\d+\.\d+|nan|inf))\s*([(*])\s*(-?(?:\d+\.\d+|nan|inf))%([)*])"
_CELLS = re.compile(rf"^(?:\s*{_CELL})+\s*$", re.I)
_CELL_RE = re.compile(_CELL, re.I)
_ROW = re.compile(r"^(\S+) +(\S+)(\s.*)$")


def _cells(text):
    if not _CELLS.match(text):
        return None
    out = []
    for m in _CELL_RE.finditer(text):
        if (m.group(2) == "(") != (m.group(4) == ")"):
            return None
        out.append((float(m.group(1)), float(m.group(3)), m.group(2) == "*"))
    return out


def _continued(lines, i, rest):
    """Row ``i``'s cell text with the lines a mail client wrapped it onto (a row starts with its
    label in column 0, so a following non-blank line starting with a space continues it);
    returns (text, index of the row's last line)."""
    while i + 1 < len(lines) and lines[i + 1][:1] == " " and lines[i + 1].strip():
        i += 1
        rest += " " + lines[i]
    return rest, i


def read_mmtests(text: str):
    """Parse an mmtests ``compare-kernels`` text table (§2.5) and its Duration / Ops monitor
    tables (§2.6) into an mmtests summary Dataset (see the module docstring).

    Accepts e-mail quoting and rows wrapped by a mail client. The kernel names are rebuilt from
    the two header lines (split at the first ``-``, with compare-kernels' quirks). Malformed or
    truncated input raises ``ValueError`` naming the line and what was expected."""
    lines = _unquote(text)
    n = len(lines)
    first = None
    for i, line in enumerate(lines):
        m = _ROW.match(line)
        if m and _cells(_continued(lines, i, m.group(3))[0]):
            first = i
            break
    if first is None:
        raise _err(1, "no mmtests table: expected rows like 'Amean     elsp-NUMA01      292.51 (   0.00%) ...'")
    # line 1 of the header is all spaces when no name has a '-' before its last character
    if first < 2 or not lines[first - 1].strip():
        raise _err(first + 1, "expected two header lines with the kernel names above the first row")
    h1, h2 = lines[first - 2], lines[first - 1]
    title = ""
    t = first - 3
    if t >= 0 and lines[t].strip():
        title = lines[t]

    rows = []  # (label, op, cells, lineno, raw)
    i = first
    k = None
    while i < n and lines[i].strip():
        ln = i + 1
        m = _ROW.match(lines[i])
        if not m:
            raise _err(ln, f"expected a table row '<stat> <op> <value> (<pct>%) ...', got {lines[i]!r}")
        rest, end = _continued(lines, i, m.group(3))
        raw = lines[i] if end == i else None  # the unwrapped text, for the column widths
        i = end
        cells = _cells(rest)
        if cells is None:
            raise _err(ln, f"expected '%12.2f (%7.2f%)' cells after {m.group(1)!r} {m.group(2)!r}, got {rest.strip()!r}")
        if k is None:
            k = len(cells)
        if len(cells) != k:
            raise _err(ln, f"expected {k} kernel cells (as in the first row), found {len(cells)}")
        rows.append((m.group(1), m.group(2), cells, ln, raw))
        i += 1
    labels = list(dict.fromkeys(r[0] for r in rows))
    ops = list(dict.fromkeys(r[1] for r in rows))
    seen = {(r[0], r[1]): r[3] for r in rows}
    if len(seen) != len(rows):
        dup = next(r for r in rows if sum(1 for s in rows if s[:2] == r[:2]) > 1)
        raise _err(dup[3], f"row {dup[0]} {dup[1]} appears twice")
    for lab in labels:
        for op in ops:
            if (lab, op) not in seen:
                last = rows[-1][3]
                raise _err(last + 1, f"truncated table: expected a row '{lab} {op}'")
    w1 = max(map(len, labels))
    w2 = max(map(len, ops))
    fl = None
    for r in rows:
        if r[4] is not None:
            width = (len(r[4]) - (w1 + 1 + w2)) / k
            fl = int(width) - 11 if width == int(width) else None
            break
    if fl not in (12, 18):
        fl = 18 if any(o.split("-", 1)[0] in ("Elapsed", "System", "User") for o in ops) else 12
    kernels = _header_names(h1, h2, w1 + 1 + w2, fl + 11, k, first - 1)

    # ---- main table variables
    stat_index = {s: j for j, s in enumerate(labels)}
    per_var: dict[str, dict] = {}
    workloads: list[str] = []
    for lab, op, cells, ln, _raw in rows:
        prefix, _, test = op.partition("-")
        var = _PREFIX_VAR.get(prefix, prefix) if test else op
        w = lkp_test_name(test) if test else None
        if w is not None and w not in workloads:
            workloads.append(w)
        entry = per_var.setdefault(var, {"per_test": w is not None, "cells": {}})
        if entry["per_test"] != (w is not None):
            raise _err(ln, f"op {op!r} mixes per-test and plain ops for variable {var!r}")
        entry["cells"].setdefault(w, {})[lab] = cells
    variables = {}
    for var, entry in per_var.items():
        tests = workloads if entry["per_test"] else [None]
        val = np.full((k, len(tests), len(labels)), np.nan)
        pct = np.full_like(val, np.nan)
        sig = np.zeros(val.shape, dtype=bool)
        for ti, w in enumerate(tests):
            for lab, cells in entry["cells"].get(w, {}).items():
                for kk, (v, p, s) in enumerate(cells):
                    val[kk, ti, stat_index[lab]] = v
                    pct[kk, ti, stat_index[lab]] = p
                    sig[kk, ti, stat_index[lab]] = s
        if entry["per_test"]:
            dims = ("kernel", "workload", "stat")
        else:
            dims, val, pct, sig = ("kernel", "stat"), val[:, 0], pct[:, 0], sig[:, 0]
        variables[var] = (dims, val, {**_attrs_for(var), "mmtests_stat": "row values as printed; CoeffVar in %"})
        variables[f"{var}_pct"] = (dims, pct, {"units": "%", "long_name": f"mmtests percentage of {var} against the baseline "
                                               "(positive = better)"})
        variables[f"{var}_significant"] = (dims, sig, {"long_name": f"{var} cell marked significant (asterisks)"})

    # ---- monitor tables
    duration_rows, ops_rows = {}, {}
    while i < n:
        if not lines[i].strip():
            i += 1
            continue
        i = _read_monitor_block(lines, i, k, kernels, duration_rows, ops_rows)
    attrs = {
        "numalab_summary": "mmtests",
        "source": "read_mmtests",
        "mmtests_baseline": kernels[0],
        "mmtests_title": title,
        "mmtests_field_width": fl,
        "mmtests_ops": json.dumps(ops),
        "mmtests_vars": json.dumps(list(per_var)),
        "mmtests_ops_rows": json.dumps(list(ops_rows)),
    }
    for label, (_, var, _v) in zip(("User", "System", "Elapsed"), _DURATION_ROWS):
        if label in duration_rows:
            variables[var] = (("kernel",), np.array(duration_rows[label]),
                              {"units": "s", "long_name": f"Duration {label}: whole benchmark run"})
    for label, vals in ops_rows.items():
        var = _OPS_VAR.get(label, label)
        variables[var] = (("kernel",), np.array(vals), {**_attrs_for(var), "mmtests_label": f"Ops {label}"})
    ds = _summary_dataset(kernels, variables, attrs)
    return ds.assign_coords(stat=labels, **({"workload": workloads} if workloads else {}))


def _header_names(h1, h2, start, width, k, lineno):
    """Rebuild kernel names from the two header lines."""
    def cut(line):
        if not line.strip():
            return [""] * k
        if len(line) == start + k * width and not line[:start].strip():
            return [line[start + j * width : start + (j + 1) * width].strip() for j in range(k)]
        toks = line.split()
        return toks if len(toks) == k else None

    tops, bottoms = cut(h1), cut(h2)
    if tops is None or bottoms is None:
        raise _err(lineno if tops is not None else lineno - 1,
                   f"expected a header line with {k} kernel-name halves")
    names = []
    for a, b in zip(tops, bottoms):
        # a name without '-' prints as name[:-1] / name (compare-kernels quirk)
        names.append(b if (len(b) == len(a) + 1 and b.startswith(a)) else f"{a}-{b}")
    if len(set(names)) != len(names):
        raise _err(lineno, f"kernel names are not unique: {names}")
    return names


def _read_monitor_block(lines, i, k, kernels, duration_rows, ops_rows):
    """One Duration/Ops table whose header starts at line ``i``; returns the next line index.

    The header lines start with spaces (the first is all spaces when no kernel name has a
    '-'), the rows with ``Duration`` or ``Ops``; the names were already read from the main table."""
    n = len(lines)
    j = i
    while j < n and lines[j][:1] == " " and lines[j].strip():
        j += 1
    if j == i:
        raise _err(i + 1, f"expected a monitor table header (kernel names), got {lines[i]!r}")
    if j >= n or not lines[j].strip():
        raise _err(j + 1, "truncated monitor table: expected rows after the header")
    while j < n and lines[j].strip():
        toks = lines[j].split()
        stat = toks[0]
        if stat not in ("Duration", "Ops") or len(toks) < 2 + k:
            raise _err(j + 1, f"expected a 'Duration <name> v1 .. v{k}' or 'Ops <label> v1 .. v{k}' row, got {lines[j]!r}")
        vals = toks[-k:]
        if not all(_NUMBER.match(v) for v in vals):
            raise _err(j + 1, f"expected {k} numbers at the end of {lines[j]!r}")
        label = " ".join(toks[1:-k])
        target = duration_rows if stat == "Duration" else ops_rows
        if label in target:
            raise _err(j + 1, f"row '{stat} {label}' appears twice")
        target[label] = [float(v) for v in vals]
        j += 1
    return j


# ---- /proc/vmstat


def _parse_vmstat(text, which):
    if not isinstance(text, str):
        raise NumalabValueError(f"{which} must be the text of /proc/vmstat; got {type(text).__name__}")
    out = {}
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2 or not re.fullmatch(r"-?\d+", parts[1]):
            raise NumalabValueError(f"{which} line {i}: expected '<counter> <integer>', got {line!r}")
        if parts[0] in out:
            raise NumalabValueError(f"{which} line {i}: counter {parts[0]!r} appears twice")
        out[parts[0]] = int(parts[1])
    if not out:
        raise NumalabValueError(f"{which} is empty: expected /proc/vmstat lines '<counter> <integer>'")
    return out


def read_vmstat(before: str, after: str, kernel: str | None = None):
    """Counter deltas ``after - before`` of two /proc/vmstat snapshots (mmtests' test-begin /
    test-end delta, §4.1) as a Dataset of int64 scalars named by the kernel counters
    (``numa_hint_faults``, ...). With ``kernel`` the variables get a length-1 ``"kernel"`` dim,
    ready to ``xr.concat`` with other kernels. A counter missing from one snapshot, or a NUMA
    event counter that went backwards, raises ``ValueError``."""
    import xarray as xr

    b = _parse_vmstat(before, "before")
    a = _parse_vmstat(after, "after")
    missing = sorted(set(a) ^ set(b))
    if missing:
        raise NumalabValueError(f"counter {missing[0]!r} is in only one snapshot; both must come from the same kernel")
    variables = {}
    for name, v in a.items():
        d = v - b[name]
        if d < 0 and name.startswith(("numa_", "pg", "thp_")):
            raise NumalabValueError(f"counter {name!r} went backwards ({b[name]} -> {v}); are before/after swapped?")
        attrs = {"units": "1", "kernel_name": name,
                 "long_name": _VMSTAT_SOURCE.get(name, name) + " (after - before)"}
        variables[name] = (("kernel",), [d], attrs) if kernel is not None else ((), d, attrs)
    ds = xr.Dataset(variables, coords={"kernel": [str(kernel)]} if kernel is not None else None)
    ds.attrs["source"] = "read_vmstat"
    return ds

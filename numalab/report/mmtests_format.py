"""mmtests ``compare-kernels`` tables (§2.5) with their Duration / vmstat Ops monitor tables
(§2.6, §4.1): :func:`mmtests` prints them from runs or an ingested summary, :func:`read_mmtests`
reads a real report back (the Dataset layout is described in :mod:`numalab.report`)."""

from __future__ import annotations

import json
import math
import re

import numpy as np

from .. import stats
from ..errors import NumalabValueError, check_choice
from .common import (
    _columns,
    _attrs_for,
    _by_kernel,
    _check_dims,
    _check_line,
    _err,
    _metrics,
    _NUMBER,
    _refuse_other_summary,
    _summary_dataset,
    _summary_kind,
    _test_sort_key,
    _unquote,
    _workloads,
    lkp_test_name,
    mmtests_test_name,
)
from . import vocabulary
from .vmstat_format import _OPS_ROWS, _OPS_VAR, _VMSTAT_SOURCE, _vmstat_ops_rows
from ..limits import check_report_cells, check_report_stats

#: metric variable -> mmtests op prefix, per layout
_OLD_PREFIX = {"syst": "syst", "elsp": "elsp"}
_NEW_PREFIX = {"elsp": "Elapsed", "syst": "System", "user": "User"}
_PREFIX_VAR = {"syst": "syst", "elsp": "elsp", "Elapsed": "elsp", "System": "syst", "User": "user"}
_DURATION_ROWS = [("User", "duration_user", "user"), ("System", "duration_system", "syst"),
                  ("Elapsed", "duration_elapsed", "elsp")]


# --------------------------------------------------------------------------------------------
# writer


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


def _cell(value, pct, base_value, significant, fl, spread_of_one=False):
    """One kernel cell: ``%FL.2f (%7.2f%)``, or ``*%7.2f%*`` when significant (§2.4).

    NaN stays NaN: a value with no usable sample prints ``nan`` (its percentage too), and so
    does a percentage against a baseline that has none. Kept from mmtests (§2.2-§2.3): -1 (a
    2023 Hmean of a sample <= 0) prints 0.00 (0.00%), and so does the undefined Stddev of a
    single sample (``spread_of_one``: the column has a mean)."""
    base_nan = base_value is not None and math.isnan(base_value)
    if value == -1 or base_value == -1 or (spread_of_one and math.isnan(value)):
        value, pct, significant = 0.0, 0.0, False  # -1 / one sample's stddev print as 0.00 (0.00%)
    elif math.isnan(value) or base_nan:
        return f"{value:{fl}.2f} ({'nan':>7}%)"  # f"{nan:.2f}" is 'nan'
    if math.isnan(pct):
        pct = 0.0  # a one-sample (NaN stddev) baseline; UNVERIFIED against Perl
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
    if summary and workload is None and "workload" not in ds.dims:
        workloads = []  # a table as read whose ops name no test ("Amean 1", hackbench/dbench)
    else:
        workloads = _workloads(ds, workload)
    ops = []
    missing = False
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
        if not summary:
            counts = tables[0]["n"].sel({along: kernels}).transpose(*inner[:-1]).values
            arrays = [np.concatenate([a, c[..., None]], axis=-1) for a, c in
                      zip(arrays, (counts.astype(float), stats.pdiff(counts, counts[:1]), counts < 0))]
            total = ds.sizes[sample_dim]
        columns = {str(x): j for j, x in enumerate(tables[0]["workload"].values)} if per_test else {}
        for w in workloads if per_test else [None]:
            vals, pct, sg = (a[:, columns[w]] if per_test else a for a in arrays)
            if summary and np.isnan(vals).all():
                continue  # this op was not in the report
            if not per_test and not summary:
                w = workloads[0]  # one workload, named by the attr
            op = prefix if w is None else f"{prefix}-{mmtests_test_name(w)}"
            ops.append((op, var, vals, pct, sg.astype(bool)))
            if not summary and (vals[:, -1] < total).any():
                missing = True
    if not summary:
        # a NaN sample is a missing run, left out of the statistics; when any op lost one, a
        # Samples row (mmtests' own label, pdiff percentages) shows the usable count of every op
        if missing:
            labels.append("Samples")
        else:
            ops = [(op, var, v[:, :-1], p[:, :-1], g[:, :-1]) for op, var, v, p, g in ops]
    if summary:
        order = {op: j for j, op in enumerate(json.loads(ds.attrs.get("mmtests_ops", "[]")))}
        ops.sort(key=lambda o: order.get(o[0], len(order)))
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
    # a total over runs with a NaN (missing) run is unknown: NaN, not the sum of the others
    tot = da.sum(dim=other, skipna=False) if other else da
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
            rows.append((label, _monitor_value(ds, _ROW_VAR.get(label, label), along, kernels)))
    else:
        have = {v: np.array(_monitor_value(ds, v, along, kernels)) for v in _VMSTAT_SOURCE if v in ds.data_vars
                and _monitor_ok(ds, v, along)}
        rows = _vmstat_ops_rows(have)
    if rows:
        blocks.append(_plain_table("Ops", rows, kernels, 15))
    return blocks


def _monitor_ok(ds, var, along):
    return along in ds[var].dims and "time" not in ds[var].dims


def _plain_table(stat, rows, kernels, fl, width2=None):
    w2 = max(len(r[0]) for r in rows) if width2 is None else max(width2, *(len(r[0]) for r in rows))
    lines = _header(kernels, len(stat) + 1 + w2, fl)
    for label, values in rows:
        cells = "".join(f"{v:{fl}.2f}" for v in values)  # NaN stays NaN: 'nan'

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
    ds, along, kernels = _columns(ds, along, baseline)
    metric = _metrics(metric)
    if metric is None:
        if summary:
            metric = json.loads(ds.attrs.get("mmtests_vars", "[]"))
        elif era == "2026":
            metric = [v for v in ("elsp", "syst", "user") if v in ds.data_vars]
        else:
            metric = [v for v in ("syst", "elsp") if v in ds.data_vars]
        if not metric:
            raise NumalabValueError(f"no elsp/syst variables to report; variables are {sorted(ds.data_vars)}")
    labels, ops = _main_rows(ds, list(metric), along, kernels, era, direction, sample_dim, workload)
    fl = 18 if era == "2026" else 12
    w1 = max(len(s) for s in labels)
    if summary:  # a table as read keeps its label column (see _label_width)
        w1 = max(w1, int(ds.attrs.get("mmtests_label_width", 0)))
    w2 = max(len(o[0]) for o in ops)
    lines = []
    if title is None:
        title = ds.attrs.get("mmtests_title", "autonumabench") if summary else "autonumabench"
    if title:
        lines.append(title)
    lines += _header(kernels, w1 + 1 + w2, fl + 7 + 4)
    mean_row = next((j for j, lab in enumerate(labels) if re.fullmatch(r"[AH]mean", lab)), None)
    printed = None  # a table as read whose poster left rows out prints only those it had
    if summary and "mmtests_rows" in ds.attrs:
        printed = {tuple(r) for r in json.loads(ds.attrs["mmtests_rows"])}
    for i, label in enumerate(labels):
        spread = "Stddev" in label or "CoeffVar" in label
        for op, _var, vals, pct, sg in ops:
            if printed is not None and (label, op) not in printed:
                continue
            base = float(vals[0, i])
            cells = "".join(
                _cell(float(vals[k, i]), float(pct[k, i]), base if k else None, bool(sg[k, i]), fl,
                      spread and mean_row is not None and not math.isnan(float(vals[k, mean_row])))
                for k in range(len(kernels))
            )
            lines.append(f"{label:<{w1}} {op:<{w2}}{cells}")
    if monitors:
        for block in _monitor_tables(ds, along, kernels, era):
            lines.append("")
            lines += block
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# reader

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


#: most lines a mail client wraps one row onto (a row of 64 kernels at 72 columns)
_MAX_WRAP = 32


def _continued(lines, i, rest):
    """Row ``i``'s cell text with the lines a mail client wrapped it onto (a row starts with its
    label in column 0, so a following non-blank line starting with a space continues it);
    returns (text, index of the row's last line). At most :data:`_MAX_WRAP` lines are joined,
    so finding the rows stays linear in the text."""
    parts, last = [rest], min(len(lines) - 1, i + _MAX_WRAP)
    while i < last and lines[i + 1].strip() and (
            lines[i + 1][:1] == " " or lines[i + 1][:1] in "0123456789(-*"):
        # a wrapped row continues on a line that is no new row: it starts with a space (the
        # break kept it) or with a piece of a cell (the break dropped it)
        i += 1
        parts.append(lines[i])
    return " ".join(parts), i


def read_mmtests(text: str, table: int = 0):
    """Parse an mmtests ``compare-kernels`` text table (§2.5) and its Duration / Ops monitor
    tables (§2.6) into an mmtests summary Dataset (see :mod:`numalab.report`).

    Accepts e-mail quoting, rows wrapped by a mail client and prose between the tables. The
    kernel names are rebuilt from the two header lines (split at the first ``-``, with
    compare-kernels' quirks). A mail often compares the kernels on several tests, one compare
    table each (each followed by its own monitor tables): ``table`` picks one (0 = the
    first; ``mmtests_tables`` in the attrs counts them). Malformed or truncated input raises
    ``ValueError`` naming the line and what was expected."""
    lines = _unquote(text)
    found = [_find_table(lines)]
    parsed = []
    while True:  # every compare table of the text, in order
        parsed.append(_table_rows(lines, found[-1][0]))
        nxt = _find_table(lines, parsed[-1][1], required=False)
        if nxt is None:
            break
        found.append(nxt)
    if not isinstance(table, (int, np.integer)) or isinstance(table, bool) or not 0 <= table < len(found):
        raise NumalabValueError(f"table={table!r}: the text has {len(found)} compare table(s); "
                                f"pick 0..{len(found) - 1}")
    first, h1, h2, title, _start = found[table]
    stop = found[table + 1][4] if table + 1 < len(found) else len(lines)
    rows, i, k = parsed[table]
    # a table followed by more text may have had rows left out by its poster (Mel Gorman's
    # dbench4 table keeps one Stddev row); one that ends the text is refused as truncated
    followed = any(line.strip() for line in lines[i:])
    labels, ops, gaps = _check_complete(rows, gaps_ok=followed)
    w1 = _label_width(rows, labels)
    w2 = max(map(len, ops))
    fl, cell = _field_width(rows, ops, w1 + 1 + w2, k)
    kernels = _header_names(h1, h2, w1 + 1 + w2, cell, k, first - 1)
    variables, var_names, workloads = _main_variables(rows, labels, k)
    ops_rows = _monitor_variables(lines[:stop], i, k, kernels, variables)
    attrs = {
        "numalab_summary": "mmtests",
        "source": "read_mmtests",
        "mmtests_baseline": kernels[0],
        "mmtests_title": title,
        "mmtests_field_width": fl,
        "mmtests_ops": json.dumps(ops),
        "mmtests_vars": json.dumps(var_names),
        "mmtests_ops_rows": json.dumps(ops_rows),
        "mmtests_layout": "pre-2019" if cell == 22 else "2026" if fl == 18 else "2019-2025",
    }
    if w1 != max(map(len, labels)):
        attrs["mmtests_label_width"] = w1
    if gaps:  # the (stat, op) rows printed, in order: the others were left out, not NaN
        attrs["mmtests_rows"] = json.dumps([[r[0], r[1]] for r in rows])
    if len(found) > 1:
        attrs["mmtests_tables"] = len(found)
    ds = _summary_dataset(kernels, variables, attrs)
    return ds.assign_coords(stat=labels, **({"workload": workloads} if workloads else {}))


#: _find_table's first header line when the header is one line of whole names
_ONE_LINE = "<one-line header>"


def _find_table(lines, start=0, required=True):
    """(index of the first row, the two header lines, the title or "", index of the table's
    first line: title or header) of the first compare table at or after line ``start`` (None
    when there is none and not ``required``)."""
    first = None
    for i in range(start, len(lines)):
        m = _ROW.match(lines[i])
        if m and _cells(_continued(lines, i, m.group(3))[0]):
            first = i
            break
    if first is None and not required:
        return None
    if first is None:
        raise _err(1, "no mmtests table: expected rows like 'Amean     elsp-NUMA01      292.51 (   0.00%) ...'")
    # blank or whitespace-only lines a poster left between the header and the first row
    end = first
    while end > start and not lines[end - 1].strip():
        end -= 1
    # line 1 of the header is all spaces when no name has a '-' before its last character
    if end < 1 or (end < 2 and len(lines[end - 1].split()) != _ncells(lines, first)):
        raise _err(first + 1, "expected two header lines with the kernel names above the first row")
    j = end - 1
    # the header paragraph: from the blank line above it (its first line is the title when it
    # does not start with a space); a mail client may have wrapped the two header lines
    while j >= 0 and lines[j]:
        j -= 1
    head = lines[j + 1:end]
    if head and head[0][:1] != " " and len(head) > 2:
        j, head = j + 1, head[1:]
    k = _ncells(lines, first)
    above = lines[end - 2] if end >= 2 else ""
    if len(head) > 2 and len(" ".join(head).split()) == 2 * k:
        h1, h2 = None, head
        t = j
    elif len(lines[end - 1].split()) == k and above[:1] not in (" ", "\t"):
        # (compare-kernels indents both of its header lines; a line above at column 0 is a
        # title, its underline or a note, and a blank one is no header line)
        # a one-line header of k whole names written by hand (tabs, no name split), under
        # the title and maybe its '====' underline and a note: "\t\t\tbase-numascan\t\tbase"
        h1, h2 = _ONE_LINE, lines[end - 1]
        p = end - 1
        while p > 0 and lines[p - 1].strip():
            p -= 1
        t = p if lines[p][:1] not in (" ", "\t") and p < end - 1 else end - 2
    else:
        h1, h2 = lines[end - 2], lines[end - 1]
        t = end - 3
    for ln in range(max(t, 0), end):
        _check_line(ln + 1, lines[ln], "header line")
    title = ""
    if t >= 0 and lines[t].strip():
        title = lines[t]
    return first, h1, h2, title, (t if title else t + 1)


def _ncells(lines, first) -> int:
    """The number of kernel cells of the row at line ``first``."""
    m = _ROW.match(lines[first])
    return len(_cells(_continued(lines, first, m.group(3))[0]))


def _table_rows(lines, first):
    """The main table's rows from line ``first`` to the first blank line: ([(label, op, cells,
    lineno, raw)], index of the line after the table, number of kernel cells per row)."""
    n = len(lines)
    rows = []  # (label, op, cells, lineno, raw)
    i = first
    k = None
    while i < n:
        if not lines[i].strip():
            # a blank line a mail client or an editor left inside the table does not end it:
            # the next line is another row of as many cells (a new table starts with a header)
            j = i
            while j < n and not lines[j].strip():
                j += 1
            m = _ROW.match(lines[j]) if j < n and rows else None
            more = _cells(_continued(lines, j, m.group(3))[0]) if m else None
            if more is None or len(more) != k:
                break
            i = j
        ln = i + 1
        m = _ROW.match(_check_line(ln, lines[i]))
        if not m:
            raise _err(ln, f"expected a table row '<stat> <op> <value> (<pct>%) ...', got {lines[i]!r}")
        rest, end = _continued(lines, i, m.group(3))
        raw = lines[i] if end == i else None  # the unwrapped text, for the column widths
        for j in range(i + 1, end + 1):
            _check_line(j + 1, lines[j])
        i = end
        cells = _cells(rest)
        if cells is None:
            raise _err(ln, f"expected '%12.2f (%7.2f%)' cells after {m.group(1)!r} {m.group(2)!r}, got {rest.strip()!r}")
        if any(math.isinf(v) or math.isinf(p) for v, p, _s in cells):
            raise _err(ln, f"a cell of {m.group(1)} {m.group(2)} is 'inf', not a finite number")
        if k is None:
            k = len(cells)
        if len(cells) != k:
            raise _err(ln, f"expected {k} kernel cells (as in the first row), found {len(cells)}")
        _check_label(ln, m.group(1))
        rows.append((m.group(1), m.group(2), cells, ln, raw))
        i += 1
    _check_ops(rows)
    return rows, i, k


def _check_label(ln: int, label: str) -> None:
    """A row's stat label is one of mmtests' (:data:`.vocabulary.STAT_LABEL`), or the line is
    refused: a mistyped label read as data would be a statistic of its own."""
    if not vocabulary.STAT_LABEL.fullmatch(label):
        close = vocabulary.near(label, vocabulary.STAT_EXAMPLES, cap=2)
        hint = f" (did you mean {close!r}?)" if close else ""
        raise _err(ln, f"stat label {label!r} is not an mmtests statistic{hint}; allowed: "
                       f"{', '.join(vocabulary.STAT_EXAMPLES[:-2])}, BAmean-P / BHmean-P, quartiles, Max-P")


def _check_ops(rows) -> None:
    """The ops of a compare table, refused when one is a mistyping of another:

    * an autonumabench table (any op ``<prefix>-<TEST>`` of a benchmark test) holds only such
      ops, and an op within an edit of one (``elsp-NUMA0l``, ``elps-NUMA01``) is refused;
    * in any table, an op that has exactly the rows another op within an edit lacks is a
      mistyping of it (``send-6A`` beside ``send-64``), and so is a stat label that has exactly
      the ops another label lacks (``Hmean`` for one op, ``Amean`` for the rest)."""
    tests, prefixes = vocabulary.autonuma_tests(), vocabulary.AUTONUMA_PREFIXES
    first: dict[str, int] = {}
    labels_of: dict[str, set] = {}
    ops_of: dict[str, set] = {}
    for label, op, _cells, ln, _raw in rows:
        first.setdefault(op, ln)
        labels_of.setdefault(op, set()).add(label)
        ops_of.setdefault(label, set()).add(op)
    bench = []
    for op, ln in first.items():
        prefix, _, test = op.partition("-")
        if prefix in prefixes and test in tests:
            bench.append(op)
            continue
        t = test if test in tests else vocabulary.near(test, tests) if test else None
        p = prefix if prefix in prefixes else vocabulary.near(prefix, prefixes)
        if t and p:
            raise _err(ln, f"op {op!r} is a mistyping of {p}-{t}?; an autonumabench op is <prefix>-<TEST>, prefix "
                           f"one of {', '.join(prefixes)} and TEST one of {', '.join(tests[:4])}, ...")
    if bench and len(bench) != len(first):
        op = next(o for o in first if o not in bench)
        raise _err(first[op], f"op {op!r} in an autonumabench table (its other ops are {bench[0]}, ...); allowed: "
                              f"<prefix>-<TEST> of a benchmark test ({', '.join(tests[:4])}, ...)")
    _check_complements(first, labels_of, "op")
    label_line: dict[str, int] = {}
    for r in rows:
        label_line.setdefault(r[0], r[3])
    _check_complements(label_line, ops_of, "stat label", near=False)


def _check_complements(first, rows_of, what, near=True) -> None:
    """Refuse a name whose rows are exactly those another name lacks (and, with ``near``, that
    is within an edit of it): the mistyped row of a table that is otherwise whole. Of the
    two, the one with fewer rows is blamed (of two as long, the later)."""
    every = set().union(*rows_of.values()) if rows_of else set()
    by_set: dict[frozenset, list[str]] = {}
    for name, got in rows_of.items():
        if got != every:
            by_set.setdefault(frozenset(got), []).append(name)
    for got, names in by_set.items():
        others = by_set.get(frozenset(every - got), [])[:256]
        for name in names:
            for other in others:
                if near and not vocabulary.near(name, (other,)):
                    continue
                if (len(got), -first[name]) < (len(rows_of[other]), -first[other]):
                    raise _err(first[name], f"{what} {name!r} has exactly the rows {other!r} lacks: a mistyping of "
                                            f"{other!r}?")


def _label_width(rows, labels):
    """The width of the stat-label column: compare-kernels pads every label to the longest
    of all its stats (``Amean     `` for ``BAmean-99``), so a table whose poster kept only
    some rows (Mel Gorman's ``Hmean`` lines) is wider than its own labels; read from the
    first unwrapped row."""
    longest = max(map(len, labels))
    for r in rows:
        if r[4] is not None:
            m = re.match(r"\S+ +", r[4])
            return max(longest, len(m.group(0)) - 1)
    return longest


def _check_complete(rows, gaps_ok=False):
    """The stat labels and ops of ``rows``, first-seen order, and whether some (label, op)
    has no row; every (label, op) at most once, and each once unless ``gaps_ok``."""
    labels = list(dict.fromkeys(r[0] for r in rows))
    ops = list(dict.fromkeys(r[1] for r in rows))
    seen: dict[tuple, int] = {}
    for r in rows:
        if (r[0], r[1]) in seen:
            raise _err(r[3], f"row {r[0]} {r[1]} appears twice (first on line {seen[r[0], r[1]]})")
        seen[r[0], r[1]] = r[3]
    gaps = False
    for lab in labels:
        for op in ops:
            if (lab, op) not in seen:
                if not gaps_ok:
                    last = rows[-1][3]
                    raise _err(last + 1, f"truncated table: expected a row '{lab} {op}'")
                gaps = True
    return labels, ops, gaps


def _field_width(rows, ops, start, k):
    """(value field width, kernel cell width) from an unwrapped row, else from the op names:
    12 / 23 (2019-2025), 18 / 29 (2026), or 12 / 22 for the older layout whose percentage is
    ``%6.2f`` (``(  0.00%)``, before 2019)."""
    for r in rows:
        if r[4] is not None:
            width = (len(r[4]) - start) / k
            if width == int(width) and int(width) in (22, 23, 29):
                width = int(width)
                return (18 if width == 29 else 12), width
            break
    fl = 18 if any(o.split("-", 1)[0] in ("Elapsed", "System", "User") for o in ops) and not any(
        r[0] == "Time" for r in rows) else 12
    return fl, fl + 11


def _main_variables(rows, labels, k):
    """Variables of the main table: ({name: (dims, values, attrs)}, metric names, workloads)."""
    stat_index = {s: j for j, s in enumerate(labels)}
    per_var: dict[str, dict] = {}
    workloads: dict[str, int] = {}  # in first-seen order
    for lab, op, cells, ln, _raw in rows:
        prefix, _, test = op.partition("-")
        var = _PREFIX_VAR.get(prefix, prefix) if test else op
        w = lkp_test_name(test) if test else None
        if w is not None and w not in workloads:
            workloads[w] = len(workloads)
        entry = per_var.setdefault(var, {"per_test": w is not None, "cells": {}})
        if entry["per_test"] != (w is not None):
            raise _err(ln, f"op {op!r} mixes per-test and plain ops for variable {var!r}")
        entry["cells"].setdefault(w, {})[lab] = cells
    check_report_stats("ops", len(per_var), f"line {rows[0][3]}: ")
    check_report_cells(f"the {len(per_var)} ops x {k} kernels x {len(labels)} stats of the table",
                       3 * k * len(labels) * sum(len(workloads) if e["per_test"] else 1 for e in per_var.values()))
    variables = {}
    for var, entry in per_var.items():
        tests = workloads if entry["per_test"] else {None: 0}
        val = np.full((k, len(tests), len(labels)), np.nan)
        pct = np.full_like(val, np.nan)
        sig = np.zeros(val.shape, dtype=bool)
        for w, cells_of in entry["cells"].items():
            ti = tests[w]
            for lab, cells in cells_of.items():
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
    return variables, list(per_var), list(workloads)


def _monitor_variables(lines, i, k, kernels, variables):
    """Read the Duration / Ops tables from line ``i`` on into ``variables`` (over "kernel");
    returns the Ops labels in print order."""
    n = len(lines)
    duration_rows, ops_rows = {}, {}
    while i < n:
        if not lines[i].strip():
            i += 1
            continue
        end = i
        while end < n and lines[end].strip():
            end += 1
        if not any(_numeric_row(lines[j], k) for j in range(i, end)) and not _names_line(lines[i], kernels):
            i = end  # a paragraph of prose between the tables (an e-mail's commentary)
            continue
        i = _read_monitor_block(lines, i, k, kernels, duration_rows, ops_rows)
    for label, (_, var, _v) in zip(("User", "System", "Elapsed"), _DURATION_ROWS):
        if label in duration_rows:
            variables[var] = (("kernel",), np.array(duration_rows[label]),
                              {"units": "s", "long_name": f"Duration {label}: whole benchmark run"})
    printed = []
    for label, vals in ops_rows.items():
        if label.startswith("\0"):  # an older-layout row, printed without "Ops"
            label = label[1:]
            shown = label
        else:
            shown = f"Ops {label}"
        var = _ROW_VAR.get(label, label)
        variables[var] = (("kernel",), np.array(vals), {**_attrs_for(var), "mmtests_label": shown})
        printed.append(label)
    return printed


def _names_line(line: str, kernels) -> bool:
    """Whether ``line`` is a header line of a monitor table: indented, and only kernel-name
    halves (as :func:`_split_name` prints them)."""
    if not line[:1] == " ":
        return False
    halves = {h for name in kernels for h in (*_split_name(name), name)}
    toks = line.split()
    return bool(toks) and all(t in halves for t in toks)


def _numeric_row(line: str, k: int) -> bool:
    """Whether ``line`` ends with ``k`` numbers after a label (a monitor row, or a damaged one)."""
    toks = line.split()
    return len(toks) > k and all(_NUMBER.match(t) for t in toks[-k:])


def _header_names(h1, h2, start, width, k, lineno):
    """Rebuild kernel names from the two header lines."""
    def cut(line):
        if not line.strip():
            return [""] * k
        if len(line) == start + k * width and not line[:start].strip():
            return [line[start + j * width : start + (j + 1) * width].strip() for j in range(k)]
        toks = line.split()
        return toks if len(toks) == k else _run_together(line, start, width, k)

    if h1 is None:  # wrapped header lines (see _find_table): 2 k name halves in order
        toks = " ".join(h2).split()
        if len(toks) != 2 * k:
            raise _err(lineno, f"expected {2 * k} kernel-name halves in the wrapped header lines, found {len(toks)}")
        tops, bottoms = toks[:k], toks[k:]
    elif h1 is _ONE_LINE:  # a one-line header of whole names (see _find_table)
        return _unique(h2.split(), lineno)
    else:
        tops, bottoms = cut(h1), cut(h2)
    if tops is None or bottoms is None:
        raise _err(lineno if tops is not None else lineno - 1,
                   f"expected a header line with {k} kernel-name halves")
    names = []
    for a, b in zip(tops, bottoms):
        # a name without '-' prints as name[:-1] / name (compare-kernels quirk)
        names.append(b if (len(b) == len(a) + 1 and b.startswith(a)) else f"{a}-{b}")
    return _unique(names, lineno)


def _run_together(line, start, width, k):
    """The ``k`` right-aligned fields of a header line in which a name longer than the column
    pushed the rest right and ran into the name before it (compare-kernels prints ``%23s``;
    ``vanillasched-scalewakegran-v2r5``, Mel Gorman's 2021 mail in tests/data/README.md), or
    None. A field that fits ends at its column's end; one that does not starts where the one
    before it ended, without padding, and ends at its first space."""
    out, pos = [], start
    for _ in range(k):
        s = pos
        while s < len(line) and line[s] == " ":
            s += 1
        e = s
        while e < len(line) and line[e] != " ":
            e += 1
        end = pos + width
        if s >= len(line) or e < end:
            return None
        if e > end and s > pos:  # this name fits and the next one runs into it
            e = end
        out.append(line[s:e])
        pos = e
    return out if not line[pos:].strip() else None


def _unique(names, lineno):
    if len(set(names)) != len(names):
        raise _err(lineno, f"kernel names are not unique: {names}")
    return names


_ROW_LABELS = ("Duration", "Ops", "User", "System", "Elapsed")

#: the older (pre-2019) vmstat rows, printed without the word ``Ops`` (as in Mel Gorman's
#: 2015 postings, tests/data/README.md): label -> the variable the later ``Ops`` row is
#: stored under. "NUMA page range updates" is the raw numa_pte_updates counter and "NUMA base
#: PTE updates" that less 512 per huge PMD update (the real rows add up so).
_OLD_OPS_VAR = {
    "NUMA base PTE updates": "numa_pte_updates_base",
    "NUMA huge PMD updates": "numa_huge_pte_updates",
    "NUMA page range updates": "numa_pte_updates",
    "NUMA hint local faults": "numa_hint_faults_local",
}
#: a vmstat row's label, in either layout -> its variable: the one lookup of the reader and of
#: the writer printing a read table back (the older labels are printed as ``Ops`` rows)
_ROW_VAR = {**_OPS_VAR, **_OLD_OPS_VAR}


def _old_ops_row(line: str, k: int) -> bool:
    """Whether ``line`` is a whole row of the older layout's vmstat table: a label that starts
    in column 0 with a letter (``NUMA alloc hit``, ``Minor Faults``), then ``k`` numbers."""
    toks = line.split()
    return (line[:1].isalpha() and toks[0] not in _ROW_LABELS and len(toks) > k
            and all(_NUMBER.match(t) for t in toks[-k:]) and not _NUMBER.match(toks[-k - 1]))


def _read_monitor_block(lines, i, k, kernels, duration_rows, ops_rows):
    """One Duration/Ops table whose header starts at line ``i``; returns the next line index.

    The header lines start with spaces (the first is all spaces when no kernel name has a
    '-'; names longer than the column run together, ``vanillaslowscan-v2r7protnone-v3``), the
    rows with ``Duration`` or ``Ops`` (or, in the older layout, a bare ``User`` / ``System`` /
    ``Elapsed``, and vmstat rows without ``Ops``: ``NUMA alloc hit``); the names were already
    read from the main table. A row wrapped by a mail client continues on the lines up to the
    next row label (an older-layout vmstat row must be whole on its line)."""
    n = len(lines)

    def row_start(line):
        return line.split()[0] in _ROW_LABELS or _old_ops_row(line, k)

    j = i
    while j < n and lines[j].strip() and not row_start(lines[j]):
        if lines[j][:1] != " " and j == i:
            break
        j += 1
    if j == i and not row_start(lines[i]):
        raise _err(i + 1, f"expected a monitor table header (kernel names), got {lines[i]!r}")
    _check_monitor_header(lines, i, j, kernels)
    # (no header at all: a table pasted without its kernel-name lines, the main table's names)
    if j >= n or not lines[j].strip():
        raise _err(j + 1, "truncated monitor table: expected rows after the header")
    while j < n and lines[j].strip():
        start, text = j, _check_line(j + 1, lines[j])
        old = _old_ops_row(text, k)
        parts = [text]
        while not old and j + 1 < n and lines[j + 1].strip() and not row_start(lines[j + 1]) and j - start < _MAX_WRAP:
            j += 1
            parts.append(_check_line(j + 1, lines[j]))
        text = " ".join(parts)
        toks = text.split()
        stat = toks[0]
        if old:
            toks = ["Ops", *toks]
            stat = "Ops"
        elif stat in ("User", "System", "Elapsed") and len(toks) == 1 + k:
            toks = ["Duration", *toks]  # the older layout: a Duration table without the word
            stat = "Duration"
        if stat not in ("Duration", "Ops") or len(toks) < 2 + k:
            raise _err(start + 1, f"expected a 'Duration <name> v1 .. v{k}' or 'Ops <label> v1 .. v{k}' row, got {text!r}")
        vals = toks[-k:]
        if not all(_NUMBER.match(v) for v in vals):
            raise _err(start + 1, f"expected {k} numbers at the end of {text!r}")
        label = " ".join(toks[1:-k])
        _check_monitor_label(start + 1, stat, label)
        if old:
            label = "\0" + label  # marks an older-layout row (see _monitor_variables)
        target = duration_rows if stat == "Duration" else ops_rows
        if label in target:
            raise _err(start + 1, f"row '{stat} {label.lstrip(chr(0))}' appears twice")
        target[label] = [float(v) for v in vals]
        if any(math.isinf(v) for v in target[label]):
            raise _err(start + 1, f"a value of {stat} {label.lstrip(chr(0))} is not a finite number")
        check_report_stats("monitor rows", len(ops_rows), f"line {start + 1}: ")
        j += 1
    return j


#: the Ops labels numalab reads (a label within an edit of one of them is refused)
_KNOWN_OPS = tuple(dict.fromkeys([label for label, _v in _OPS_ROWS] + list(_OLD_OPS_VAR)))


def _check_monitor_label(ln: int, stat: str, label: str) -> None:
    """A Duration row is User, System or Elapsed; an Ops row of any label but a mistyping of one
    numalab reads (``NUMA hint faultz``)."""
    if stat == "Duration" and label not in vocabulary.DURATION_LABELS:
        close = vocabulary.near(label, vocabulary.DURATION_LABELS, cap=2)
        raise _err(ln, f"Duration row {label!r} is not known" + (f" (did you mean {close!r}?)" if close else "")
                   + f"; allowed: {', '.join(vocabulary.DURATION_LABELS)}")
    if stat == "Ops":
        close = vocabulary.near(label, _KNOWN_OPS)
        if close:
            raise _err(ln, f"Ops row {label!r} is a mistyping of {close!r}?")


def _check_monitor_header(lines, i, j, kernels) -> None:
    """The header lines ``i .. j-1`` of a monitor table name the compare table's kernels: their
    words, run together, are the kernels' name halves (as the compare table splits them, in
    its order, first halves then second halves) or the whole names."""
    if i == j:
        return  # pasted without its header: the main table's names
    words = "".join("".join(_check_line(ln + 1, lines[ln], "header line").split()) for ln in range(i, j))
    halves = [_split_name(name) for name in kernels]
    if words not in ("".join(t for t, _b in halves) + "".join(b for _t, b in halves), "".join(kernels)):
        raise _err(i + 1, f"the monitor table's header {' '.join(lines[i].split())!r} does not name the compare "
                          f"table's kernels ({', '.join(kernels)}), in their order")

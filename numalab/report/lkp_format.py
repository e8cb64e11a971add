"""The kernel test robot's (LKP) ``%stddev %change`` block (§3.2-§3.3): :func:`lkp` prints it
from runs or an ingested summary, :func:`read_lkp` reads a real report back (the Dataset layout
is described in :mod:`numalab.report`)."""

from __future__ import annotations

import collections
import functools
import json
import math
import re

import numpy as np

from .. import stats
from ..errors import NumalabValueError
from .common import (
    _columns,
    _attrs_for,
    _by_kernel,
    _check_dims,
    _err,
    _metrics,
    _NUMBER,
    _refuse_other_summary,
    _summary_dataset,
    _summary_kind,
    _check_line,
    _unquote,
    _workloads,
    lkp_test_name,
)
from ..limits import check_report_cells, check_report_stats
from . import vocabulary
from .vmstat_format import _VMSTAT_SOURCE


# --------------------------------------------------------------------------------------------
# writer


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
    if math.isnan(v):  # NaN stays NaN (a stat with no usable run), never 0
        return f"{'nan':>10}"
    if abs(v) < 1000:
        return f"{v:10.2f}"
    if abs(v) > 100_000_000:
        return f"{v:10.4g}"
    return f"{int(v):10d}"  # Ruby's (long) cast truncates toward zero


def _lkp_pm(r: float, as_read: bool = False) -> str:
    # an ingested ± holds the printed (truncated) integer, so "> 2" no longer applies: it was shown
    if not math.isnan(r) and (as_read or r > stats.LKP_SHOWN_ABOVE_PCT):
        return f" ±{int(r):3d}%"
    return " " * 6


def _lkp_change(c: float, absolute: bool) -> str:
    if math.isnan(c):  # against or of a commit with no usable run
        return f"{'nan':>10}" + ("  " if absolute else "% ")
    text = f"{c:+10.2g}" if abs(c) >= 100_000 else f"{c:+10.1f}"
    return text + ("  " if absolute else "% ")


#: the widths of the column ids (the robot prints the base commit's id in 16 characters, the
#: others in 27)
_ID_WIDTHS = (16, 27)


def _lkp_ids(kernels) -> tuple[list[str], bool]:
    """The column ids of ``kernels`` as the layout prints them, cut to their widths, and whether
    any was cut. Two names that would print the same id (``6.12+N=4+rules=own_pid,hot>=1`` and
    ``...,hot>=2`` cut to 27) end in ``~<column>`` instead, so every column keeps an id of its
    own; the full names are then in the ``commit:`` list (:func:`lkp`)."""
    widths = [_ID_WIDTHS[0]] + [_ID_WIDTHS[1]] * (len(kernels) - 1)
    ids = [k[:w] for k, w in zip(kernels, widths)]
    cut = any(len(k) > w for k, w in zip(kernels, widths))
    if len(set(ids)) != len(ids):
        counts = collections.Counter(ids)
        taken = {i for i, k, w in zip(ids, kernels, widths) if len(k) <= w}  # whole names stay as they are
        for j, (k, w) in enumerate(zip(kernels, widths)):
            if len(k) > w and (counts[ids[j]] > 1 or ids[j] in taken):
                n = j + 1
                while f"{k[:w - len(str(n)) - 1]}~{n}" in taken:
                    n += len(kernels)
                ids[j] = f"{k[:w - len(str(n)) - 1]}~{n}"
                taken.add(ids[j])
    return ids, cut


def _lkp_header(ids):
    k = len(ids) - 1
    return [
        ids[0].rjust(16) + " " + "".join(i.rjust(27) + " " for i in ids[1:]),
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
            rows.append((key, mean, pm, change, None))
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
            rows.append((key, mean, st["stddev_pct"].transpose(along).values, change,
                         (st["n"].transpose(along).values, sel.sizes[sample_dim])))
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

    Column ids are the ``along`` names (policies or commits) cut to 16 / 27 characters (when one
    is cut, the group header's ``commit:`` list names them in full); the baseline (default:
    first) comes first. Rows: ``autonuma-benchmark.<test>.seconds`` per
    workload from ``elsp``, ``autonuma-benchmark.time.system_time``/``user_time`` from
    ``syst``/``user`` (summed over workloads when there are several: one job ran them all) and
    ``proc-vmstat.<counter>`` for the vmstat counters -- every row, not only LKP's "changed"
    ones. ``group_header``: print the ``====`` block with axes and commit lines (default: when an
    ingested report had one, or a name is too long for its column). Ingested summaries (:func:`read_lkp`) print as read.
    """
    _refuse_other_summary(ds, "lkp")
    if "block" in ds.dims and _summary_kind(ds) == "lkp":  # a mail's several blocks, as read
        return "\n".join(lkp(b, metric, along, baseline, sample_dim=sample_dim, workload=workload,
                              group_header=group_header) for b in lkp_blocks(ds))
    ds, along, kernels = _columns(ds, along, baseline)
    if len(kernels) < 2:
        raise NumalabValueError(f"an LKP comparison needs at least 2 {along}s; got {kernels}")
    metrics = _metrics(metric)
    rows = _lkp_rows(ds, metrics, along, kernels, sample_dim, workload)
    as_read = _summary_kind(ds) == "lkp"
    lines = []
    stored = ds.attrs.get("lkp_group_header")
    ids, cut = _lkp_ids(kernels)
    if group_header is None:  # a name too long for its column: the commit: list holds it whole
        group_header = stored is not None or (cut and not as_read)
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
    # a block as read keeps its layout: the robot prints a space after "commit:" and after
    # each head line; hand-made summary tables (the robot's replies) are trimmed, and may
    # leave two blank lines above the column ids
    trimmed = as_read and bool(ds.attrs.get("lkp_trimmed"))
    if group_header:
        lines += ["=" * 89, f"{g['axes']}:", f"  {g['values']}", ""]
        if g.get("compare") is not None:  # a header read without its commit list prints none
            space = g.get("compare_space", not trimmed)
            lines += [f"{g['compare']}:" + (" " if space else "")] + [f"  {c}" for c in g["commits"]]
            lines += [""] * g.get("gap", 1)
    lines += [h.rstrip() for h in _lkp_header(ids)] if trimmed else _lkp_header(ids)
    notes = []
    for key, mean, pm, change, counts in rows:
        absolute = stats.lkp_is_absolute(key)
        parts = [_lkp_value(float(mean[0])), _lkp_pm(float(pm[0]), as_read)]
        for k in range(1, len(kernels)):
            parts += [_lkp_change(float(change[k]), absolute), _lkp_value(float(mean[k])),
                      _lkp_pm(float(pm[k]), as_read)]
        lines.append("".join(parts) + "  " + key)
        if counts is not None and (counts[0] < counts[1]).any():
            notes.append(f"{_NOTE} {' '.join(f'{int(n)}/{counts[1]}' for n in counts[0])}  {key}")
    if as_read:
        notes = json.loads(ds.attrs.get("lkp_notes", "[]"))
    if notes:  # a NaN run is a missing run, left out of mean and stddev: say how many were used
        lines += [""] + notes
    return "\n".join(lines) + "\n"


#: the note :func:`lkp` prints under a block when runs had no value (NaN), one per stat
_NOTE = "# usable runs per commit:"


# --------------------------------------------------------------------------------------------
# reader

_DASH = re.compile(r"^-{16}((?: -{27})+) ?\s*$")
_LEGEND1 = re.compile(r"^ +%stddev(?: +%change +%stddev)*\s*$")
_LEGEND2 = re.compile(r"^ +\\(?: +\| +\\)*\s*$")
_CHANGE = re.compile(r"^[+-](?:\d+(?:\.\d*)?)(?:e[+-]?\d+)?%?$|^[+-]?(?:nan|inf)%?$", re.I)


def _unflow(lines):
    """The lines of a ``format=flowed`` mail (RFC 3676) as written: a line ending in a space
    was broken there by the mail client (Thunderbird wraps the robot's 100+-column lines so,
    header lines included) and continues on the next; a leading space added by space-stuffing
    is removed first."""
    out, cont = [], False
    for line in lines:
        line = line[1:] if line.startswith(" ") else line
        if cont:
            out[-1].append(line)
        else:
            out.append([line])
        cont = line.endswith(" ") and bool(line.strip())
    return ["".join(parts) for parts in out]


def read_lkp(text: str, flowed: bool | None = None, block: int | None = None):
    """Parse every kernel-test-robot ``%stddev %change`` block in ``text`` (§3.2-§3.3).

    Accepts e-mail quoting (``> ``), lines wrapped by a mail client between fields, prose
    around and between the blocks, an optional ``====`` group header (with or without its
    ``commit:`` list), 2 or more commit columns, and a blank line inside a block (the stat
    lines after it still belong to the block). Returns an LKP summary Dataset (see
    :mod:`numalab.report`); ``lkp(read_lkp(text))`` prints the block again. A mail with
    several blocks gives one Dataset with a ``block`` dim (the coordinate ``testcase`` holds
    each block's group-header values line); :func:`lkp_blocks` splits it back into one
    Dataset per block, each of which :func:`lkp` prints as read; ``block=i`` reads only the
    i-th (0 = the first). Malformed or truncated input raises ``ValueError`` naming the line
    and what was expected -- never part of a block; so do a stat name that is a mistyping of
    one numalab reads (:mod:`numalab.report.vocabulary`), a repeated commit id and a value
    that is no finite number (``1e999``; ``nan`` is read, as :func:`lkp` prints it).

    ``flowed``: the text is a ``format=flowed`` mail whose client wrapped every long line at
    a space, the column-id, dash and legend lines too (:func:`_unflow` joins them back;
    line numbers in errors then count the joined lines). ``None`` (default): only when no
    block is found as the text stands.

    Reading takes time linear in the text, which may be up to
    :data:`numalab.limits.MAX_REPORT_BYTES` long and name up to
    :data:`numalab.limits.MAX_REPORT_STATS` stats."""
    lines = _unquote(text)
    if block is not None and (isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block < 0):
        raise NumalabValueError(f"block={block!r} must be a block number (0 = the first) or None (every block)")
    if flowed:
        return _read_lkp_lines(_unflow(lines), text, block)
    try:
        return _read_lkp_lines(lines, text, block)
    except _HeadError:  # a damaged block (or no block at all) as the text stands: maybe wrapped
        joined = _unflow(lines)
        if flowed is not None or joined == lines:
            raise
        try:
            return _read_lkp_lines(joined, text, block)
        except NumalabValueError:
            pass
        raise


def _read_lkp_lines(lines, text, block=None):
    blocks = []  # (ids, records, header, notes, trimmed) of each block
    start = 0
    names: set[str] = set()
    while True:
        found = _lkp_next_block(lines, start)
        if found is None:
            break
        dash, k, ids = found
        header = _lkp_group_header(lines, dash - 1, k)
        trimmed = not lines[dash - 1].endswith(" ")
        if header is not None and header.get("compare_space") == (not trimmed):
            del header["compare_space"]  # as the rest of the head: no need to keep it
        tokens, end = _lkp_tokens(lines, dash + 3)
        notes, end = _lkp_notes(lines, end)
        records = _lkp_records(tokens, k, ends_text=end >= len(lines) and not text.endswith("\n"))
        names.update(r[0] for r in records)
        check_report_stats("stat names", len(names), f"line {dash + 4}: ")
        blocks.append((ids, records, header, notes, trimmed))
        start = end
    if not blocks:
        _lkp_columns(lines)  # raises, naming what is missing
    if block is not None:
        if block >= len(blocks):
            raise NumalabValueError(f"block={block}: the text has {len(blocks)} block(s); pick 0..{len(blocks) - 1}")
        blocks = [blocks[block]]
    if len(blocks) == 1:
        return _lkp_dataset(*blocks[0])
    return _lkp_combine(blocks)


_BLOCK_ATTRS = ("lkp_baseline", "lkp_order", "lkp_group_header", "lkp_notes", "lkp_trimmed")


def _block_meta(ids, records, header, notes, trimmed) -> dict:
    """What :func:`lkp_blocks` needs to give a block back: its attrs as :func:`_lkp_dataset`
    sets them, its commit ids and workloads."""
    m = {"lkp_baseline": ids[0], "lkp_order": json.dumps([r[0] for r in records])}
    if header is not None:
        m["lkp_group_header"] = json.dumps(header)
    if notes:
        m["lkp_notes"] = json.dumps(notes)
    if trimmed:
        m["lkp_trimmed"] = 1
    m["kernels"] = list(ids)
    m["workloads"] = list(dict.fromkeys(w for name, *_ in records for w in [_lkp_var(name)[1]] if w is not None))
    return m


def _lkp_combine(blocks):
    """One Dataset with a ``block`` dim from several blocks, built in one go (the cells of a
    commit or stat a block does not have are NaN); each block's layout (commit ids, stat
    order, header) is kept in ``attrs["lkp_blocks"]``."""

    meta = [_block_meta(*b) for b in blocks]
    testcase = [json.loads(m["lkp_group_header"])["values"] if "lkp_group_header" in m else "" for m in meta]
    kernels = list(dict.fromkeys(k for m in meta for k in m["kernels"]))
    workloads = list(dict.fromkeys(w for m in meta for w in m["workloads"]))
    kpos, wpos = {k: i for i, k in enumerate(kernels)}, {w: i for i, w in enumerate(workloads)}
    B, K, W = len(blocks), len(kernels), len(workloads)
    per_var: dict[str, dict] = {}  # var -> {"per_test", "key"}, in first-seen order
    for ids, records, *_ in blocks:
        for name, *_r in records:
            var, w = _lkp_var(name)
            per_var.setdefault(var, {"per_test": w is not None, "key": name})
    cells = 3 * B * K * sum(W if e["per_test"] else 1 for e in per_var.values())
    check_report_cells(f"the {B} blocks x {K} commits x {len(per_var)} stats of the mail", cells,
                       "read one block at a time: read_lkp(text, block=i)")
    arrays = {var: np.full((3, B, K, W) if e["per_test"] else (3, B, K), np.nan) for var, e in per_var.items()}
    for b, (ids, records, *_) in enumerate(blocks):
        cols = [kpos[i] for i in ids]
        for name, means, pms, changes, _ln in records:
            var, w = _lkp_var(name)
            arr = arrays[var]
            if w is None:
                arr[:, b, cols] = (means, pms, changes)
            else:
                arr[:, b, cols, wpos[w]] = (means, pms, changes)
    variables = {}
    for var, e in per_var.items():
        dims = ("block", "kernel", "workload") if e["per_test"] else ("block", "kernel")
        for part, (suffix, attrs) in enumerate(_var_attrs(var, e["key"]).items()):
            variables[var + suffix] = (dims, arrays[var][part], attrs)
    coords = {"kernel": kernels, **({"workload": workloads} if workloads else {}),
              "block": np.arange(B), "testcase": ("block", testcase)}
    return _summary_dataset(kernels, variables, {"numalab_summary": "lkp", "source": "read_lkp",
                                                 "lkp_blocks": json.dumps(meta)}, coords=coords)


def lkp_blocks(ds) -> list:
    """The blocks of a :func:`read_lkp` Dataset, each as the Dataset of a one-block mail
    (a Dataset without a ``block`` dim is returned alone): ``"\n".join(lkp(b) for b in
    lkp_blocks(read_lkp(mail)))`` prints every block of the mail again."""
    if "block" not in ds.dims:
        return [ds]
    meta = json.loads(ds.attrs.get("lkp_blocks", "[]"))
    out = []
    for i, m in enumerate(meta):
        b = ds.isel(block=i, drop=True).drop_vars("testcase", errors="ignore").sel(kernel=m["kernels"])
        if "workload" in b.dims:
            b = b.sel(workload=m["workloads"]) if m["workloads"] else b.drop_dims("workload")
        keep = set()
        for key in json.loads(m["lkp_order"]):
            var, _w = _lkp_var(key)
            keep |= {var, f"{var}_stddev_pct", f"{var}_change"}
        b = b[[v for v in b.data_vars if v in keep]]
        b.attrs = {"numalab_summary": "lkp", "source": "read_lkp",
                   **{k: m[k] for k in _BLOCK_ATTRS if k in m}}
        out.append(b)
    return out


def _lkp_next_block(lines, start):
    """(dash line, commits, ids) of the first block head at or after line ``start``, or None."""
    for i in range(start, len(lines)):
        if _DASH.match(lines[i]):
            return _lkp_columns(lines, i)
    return None


def _is_stat_start(line: str) -> bool:
    """Whether ``line`` can begin a stat line: a number, then a ± or a %change."""
    toks = line.split()
    if len(toks) < 2 or not _NUMBER.match(toks[0]):
        return False
    return toks[1].startswith("±") or bool(_CHANGE.match(toks[1]))


def _lkp_notes(lines, i):
    """The ``# usable runs per commit:`` notes :func:`lkp` prints after a block (and the line
    after them)."""
    j = i
    while j < len(lines) and not lines[j].strip():
        j += 1
    notes = []
    while j < len(lines) and lines[j].startswith(_NOTE):
        notes.append(lines[j])
        j += 1
    return (notes, j) if notes else ([], i)


class _HeadError(NumalabValueError):
    """The head of a block (dash line, column ids, legend) is not as the robot prints it: the
    one refusal after which :func:`read_lkp` tries the text as a ``format=flowed`` mail."""


def _head_err(lineno: int, msg: str) -> NumalabValueError:
    return _HeadError(str(_err(lineno, msg)))


def _lkp_columns(lines, dash=None):
    """(index of the dash line, number of commits, commit ids) of the block's head, legend
    lines checked."""
    if dash is None:
        dash = next((i for i, line in enumerate(lines) if _DASH.match(line)), None)
    if dash is None:
        raise _head_err(1, "no LKP comparison block: expected a line of 16 dashes followed by groups of 27")
    k = 1 + _DASH.match(lines[dash]).group(1).count(" ")
    if dash == 0 or len(lines[dash - 1].split()) != k:
        raise _head_err(dash if dash else 1, f"expected the column-id line with {k} commit ids above the dashes")
    try:
        _check_line(dash, lines[dash - 1], "the column-id line")
    except NumalabValueError as exc:
        raise _HeadError(str(exc)) from None
    ids = lines[dash - 1].split()
    seen: dict[str, int] = {}
    for j, i in enumerate(ids):
        if i in seen:
            raise _head_err(dash, f"commit id {i!r} heads columns {seen[i] + 1} and {j + 1}; each column is another "
                             "commit (an id cut to its column? the robot prints 16 / 27 characters)")
        seen[i] = j
    for off, pat, what in ((1, _LEGEND1, "the legend '%stddev     %change         %stddev'"),
                           (2, _LEGEND2, "the legend line of '\\' and '|'")):
        got = lines[dash + off] if dash + off < len(lines) else None
        if got is None or not pat.match(got):
            if got is not None and "fail:runs" in got:
                raise _head_err(dash + off + 1, "failure-type (fail:runs) blocks are not supported; paste the %stddev block")
            raise _head_err(dash + off + 1, f"expected {what}, got {'end of text' if got is None else repr(got)}")
        bars = got.count("%change") if off == 1 else got.count("|")
        if bars != k - 1:
            raise _head_err(dash + off + 1, f"legend has {bars + 1} columns, expected {k} (one per commit id)")
    return dash, k, ids


def _lkp_tokens(lines, i):
    """([(token, lineno)] of the stat lines from line ``i``, index of the line after them).

    The stat lines end at a blank line that is not followed by another stat line (a blank
    line inside a block, as a mail client or an editor may leave, does not end it)."""
    tokens = []
    n = len(lines)
    while i < n:
        if not lines[i].strip():
            j = i
            while j < n and not lines[j].strip():
                j += 1
            if tokens and j < n and _is_stat_start(lines[j]) and not (j + 1 < n and _DASH.match(lines[j + 1])):
                i = j
                continue
            break
        tokens += [(tok, i + 1) for tok in _check_line(i + 1, lines[i], "stat line").split()]
        i += 1
    if not tokens:
        raise _err(i + 1, "expected at least one stat line after the legend")
    return tokens, i


_KNOWN_KEYS = None


def _known_keys():
    global _KNOWN_KEYS
    if _KNOWN_KEYS is None:
        _KNOWN_KEYS = {f"proc-vmstat.{v}" for v in _VMSTAT_SOURCE} | {
            "autonuma-benchmark.time.system_time", "autonuma-benchmark.time.user_time",
            "autonuma-benchmark.time.elapsed_time", "autonuma-benchmark.time.elapsed_time.max"}
    return _KNOWN_KEYS


def _check_name(name: str, ln: int, last: bool) -> None:
    """Refuse a stat name numalab would misread: a cut-off key (a truncated report, e.g.
    ``autonuma-benchmark.numa01.second``), a key of the ``autonuma-benchmark`` namespace that
    names no test of the benchmark or no ``/usr/bin/time`` stat, or a mistyping of a key numalab
    reads (``proc-vmstat.numa_hint_faultz``, ``autonuma-benchmrk.numa01.seconds``;
    :mod:`.vocabulary`)."""
    group, _, rest = name.partition(".")
    if group == "autonuma-benchmark":
        m = _SECONDS.match(name)
        if m:
            _known(ln, name, m.group(1), vocabulary.lkp_workloads(), "names no autonuma-benchmark test")
        elif rest.startswith("time."):
            _known(ln, name, rest[5:], vocabulary.LKP_TIME_STATS, "names no /usr/bin/time stat")
        else:
            raise _err(ln, f"stat {name!r} is not an autonuma-benchmark key (.<test>.seconds or .time.*): "
                           "truncated report?")
    else:
        close = vocabulary.near(group, ("autonuma-benchmark",)) or vocabulary.near(group, ("proc-vmstat",), cap=1)
        if close:
            raise _err(ln, f"stat {name!r}: its group {group!r} is a mistyping of {close!r}?")
    if group == "proc-vmstat":
        close = vocabulary.near(rest, _VMSTAT_SOURCE)
        if close:
            raise _err(ln, f"stat {name!r}: the counter {rest!r} is a mistyping of {close!r}?")
    elif group != "autonuma-benchmark":
        close = vocabulary.near(name, _read_keys())
        if close:
            raise _err(ln, f"stat {name!r} is a mistyping of {close!r}?")
    if last and name not in _known_keys() and any(k.startswith(name) for k in _known_keys()):
        raise _err(ln, f"stat {name!r} ends the text without a line end and is the start of "
                       f"{next(k for k in sorted(_known_keys()) if k.startswith(name))!r}: truncated report?")


@functools.lru_cache(maxsize=None)
def _read_keys() -> tuple[str, ...]:
    """Every key :func:`read_lkp` reads into a variable of its own name (elsp, syst, user, the
    vmstat counters)."""
    return (*(f"autonuma-benchmark.{w}.seconds" for w in vocabulary.lkp_workloads()),
            *(f"autonuma-benchmark.time.{t}" for t in vocabulary.LKP_TIME_STATS),
            *(f"proc-vmstat.{v}" for v in _VMSTAT_SOURCE))


def _known(ln, name, part, known, why):
    if part not in known:
        close = vocabulary.near(part, known)
        hint = f" (did you mean {close!r}?)" if close else ""
        raise _err(ln, f"stat {name!r} {why}{hint}; allowed: {', '.join(known)}")


def _lkp_records(tokens, k, ends_text=False):
    """[(stat name, means, ±pcts, changes, lineno)] from the token stream of the stat lines
    (a mail client may have wrapped a line anywhere between fields). ``ends_text``: the last
    line is the end of the text with no line end (a cut-off name is then suspect)."""
    records = []
    seen: dict[str, int] = {}
    kinds: dict[str, bool] = {}
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
        return _finite(tok, ln, what)

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
            changes.append(_finite(tok.rstrip("%"), ln, f"the %change of commit {j + 1}"))
            means.append(value(f"the value of commit {j + 1}"))
            pms.append(plusminus())
        name, ln = take("the stat name")
        if _NUMBER.match(name) or _CHANGE.match(name) or name.startswith("±"):
            raise _err(ln, f"expected the stat name, got {name!r} (too many columns for {k} commits?)")
        _check_name(name, ln, ends_text and pos == len(tokens))
        absolute = stats.lkp_is_absolute(name)
        if any(f == absolute for f in pct_flags):
            raise _err(ln, f"stat {name!r}: its change should be printed {'without' if absolute else 'with'} '%'")
        if name in seen:
            raise _err(ln, f"stat {name!r} appears twice (first on line {seen[name]})")
        seen[name] = ln
        var, w = _lkp_var(name)
        if kinds.setdefault(var, w is not None) != (w is not None):
            raise _err(ln, f"stat {name!r} mixes per-test and job-level rows for variable {var!r}")
        records.append((name, means, pms, changes, start_line))
    return records


def _finite(tok: str, ln: int, what: str) -> float:
    """A printed value as a float: finite, or ``nan`` (what :func:`lkp` prints for a stat with
    no usable run); ``inf`` and overflowing exponents (``1e999``) are refused."""
    v = float(tok)
    if math.isinf(v):
        raise _err(ln, f"{what} is {tok!r}, not a finite number")
    return v


def _lkp_group_header(lines, id_line, k):
    """The optional ``====`` block above the column ids, as a dict (or None)."""
    j = id_line - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    gap = id_line - 1 - j  # blank lines between the commit list and the column ids
    commits = []
    while j >= 0 and lines[j].startswith("  ") and lines[j].strip():
        commits.append(lines[j][2:])
        j -= 1
    commits.reverse()
    if j < 0 or not re.fullmatch(r"\S+: ?", lines[j]) or not commits:
        return None
    if len(commits) == 1 and j >= 1 and lines[j - 1] == "=" * 89:
        # the axes header with no `commit:` list: "====", "<axes>:", "  <values>", ""
        _check_head(lines, j - 1, id_line)
        return {"axes": lines[j].rstrip()[:-1], "values": commits[0], "compare": None, "commits": None}
    compare = lines[j].rstrip()[:-1]
    # whether "commit:" ends with a space: the robot prints one, and so may a hand-made
    # table whose other head lines are trimmed (the 2026 reply in tests/data/README.md)
    compare_space = lines[j].endswith(" ")
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
    _check_head(lines, j - 2, id_line)
    out = {"axes": axes, "values": values, "compare": compare, "commits": joined, "compare_space": compare_space}
    if gap != 1:
        out["gap"] = gap
    return out


def _check_head(lines, start, end) -> None:
    """The group header's lines hold no control character (they are printed back)."""
    for i in range(start, end):
        _check_line(i + 1, lines[i], "group header line")


def _var_attrs(var: str, key: str) -> dict:
    """{name suffix: attrs} of the three variables one LKP stat is read into."""
    pct_units = "1" if stats.lkp_is_absolute(key) else "%"
    return {
        "": {**_attrs_for(var), "lkp_stat": "mean over runs"},
        "_stddev_pct": {"units": "%", "long_name": f"population stddev of {var} over runs, as printed (truncated; "
                                                   "NaN = not shown, <= 2 % or one run)"},
        "_change": {"units": pct_units, "long_name": f"change of {var} against the base commit, as printed"},
    }


def _lkp_dataset(ids, records, header, notes=(), trimmed=False):
    k = len(ids)
    per_var: dict[str, dict] = {}
    workloads: list[str] = []
    order = []
    for name, means, pms, changes, ln in records:  # names checked by _lkp_records
        order.append(name)
        var, w = _lkp_var(name)
        if w is not None and w not in workloads:
            workloads.append(w)
        entry = per_var.setdefault(var, {"per_test": w is not None, "rows": {}, "line": ln, "key": name})
        entry["rows"][w] = (means, pms, changes)
    variables = {}
    for var, entry in per_var.items():
        if entry["per_test"]:
            arr = np.full((3, k, len(workloads)), np.nan)
            for w, (m, p, c) in entry["rows"].items():
                arr[:, :, workloads.index(w)] = [m, p, c]
            dims = ("kernel", "workload")
        else:
            arr = np.array(entry["rows"][None], dtype=float)
            dims = ("kernel",)
        for part, (suffix, attrs) in enumerate(_var_attrs(var, entry["key"]).items()):
            variables[var + suffix] = (dims, arr[part], attrs)
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
    if notes:
        ds.attrs["lkp_notes"] = json.dumps(notes)
    if trimmed:
        ds.attrs["lkp_trimmed"] = 1
    return ds

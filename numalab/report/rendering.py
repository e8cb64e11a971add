"""Reports that render: the community's text, and an HTML table for notebooks.

:func:`numalab.report.mmtests` and :func:`numalab.report.lkp` return a :class:`Report`: a
``str`` holding exactly the text the formats define (``print`` it, write it to a file, compare
it with a real report), whose ``_repr_html_`` is a table a notebook can show without wrapping
the numbers: one column per kernel/policy with its full name, row labels that stay in view when
the table scrolls sideways (sticky), the significance mark of mmtests as a highlighted cell, and
the monitor tables below. :class:`TextTable` shows long fixed-column text (``numalab.tracing``'s
``format_runs``) as a scrolling table.

The HTML is built from the text itself (so it can never say something the text does not) and
holds no random ids, so stored notebook outputs stay stable. If the text cannot be read as a
table (an unexpected layout), the HTML is the text in a scrolling ``<pre>`` box.
"""

from __future__ import annotations

import html
import re

__all__ = ["Report", "TextTable", "trace_table"]

_CSS = (
    "<style>"
    ".numalab-report{overflow:auto;max-width:100%;max-height:38em;border:1px solid #ddd}"
    ".numalab-report table{border-collapse:separate;border-spacing:0;font-variant-numeric:tabular-nums;"
    "font-size:12px;margin:0}"
    ".numalab-report th,.numalab-report td{white-space:nowrap;padding:2px 8px;text-align:right;"
    "border-bottom:1px solid #eee;background:#fff}"
    ".numalab-report thead th{position:sticky;top:0;z-index:2;background:#f4f4f4;text-align:center}"
    ".numalab-report th.numalab-rowlabel{position:sticky;left:0;z-index:1;text-align:left;background:#fafafa}"
    ".numalab-report thead th.numalab-rowlabel{z-index:3;background:#f4f4f4}"
    ".numalab-report td.numalab-sig{background:#fff3c4;font-weight:bold}"
    ".numalab-report .numalab-pct{color:#555}"
    ".numalab-report caption{text-align:left;font-weight:bold;padding:4px 2px;caption-side:top}"
    ".numalab-report pre{white-space:pre;margin:0;padding:4px;font-size:12px}"
    "</style>"
)

_NUM = r"-?(?:\d+\.\d+|nan|inf)"
_CELL = re.compile(rf"({_NUM})\s*([(*])\s*({_NUM})%([)*])", re.I)


def _esc(x) -> str:
    return html.escape(str(x))


def _pre(text: str) -> str:
    return f'<div class="numalab-report">{_CSS}<pre>{_esc(text)}</pre></div>'


class Report(str):
    """The text of a report (``str(report)`` is byte for byte what the format prints) that
    renders as an HTML table in a notebook. ``kind`` is "mmtests" or "lkp"; ``columns`` the
    kernel/policy names in column order (baseline first)."""

    def __new__(cls, text: str, *, kind: str, columns):
        obj = super().__new__(cls, text)
        obj.kind = kind
        obj.columns = [str(c) for c in columns]
        return obj

    def __reduce__(self):  # pickles (and copies) as the plain text
        return (str, (str(self),))

    def _repr_pretty_(self, p, cycle):  # IPython's text/plain: the report, not its repr
        p.text(str(self))

    def _repr_html_(self) -> str:
        try:
            body = _mmtests_html(str(self), self.columns) if self.kind == "mmtests" else _lkp_html(str(self), self.columns)
        except (ValueError, IndexError):
            body = None
        return body if body is not None else _pre(str(self))


# --------------------------------------------------------------------------------------------
# mmtests


def _head(first: list[str], columns) -> str:
    cells = "".join(f'<th class="numalab-rowlabel">{_esc(h)}</th>' for h in first)
    return f"<thead><tr>{cells}" + "".join(f"<th>{_esc(c)}</th>" for c in columns) + "</tr></thead>"


def _mmtests_html(text: str, columns) -> str | None:
    k = len(columns)
    lines = text.splitlines()
    title = ""
    main, monitors, current = [], [], None
    for line in lines:
        cells = _CELL.findall(line)
        if len(cells) == k:
            m = re.match(r"^(\S+)\s+(\S+)\s", line)
            if not m:
                return None
            main.append((m.group(1), m.group(2), cells))
            continue
        m = re.match(rf"^(Duration|Ops)\s+(.*?)((?:\s+{_NUM}){{{k}}})\s*$", line, re.I)
        if m and not _CELL.search(line):
            if current is None or current[0] != m.group(1):
                current = (m.group(1), [])
                monitors.append(current)
            current[1].append((m.group(2).strip(), m.group(3).split()))
            continue
        if not main and line.strip() and not title and not line.startswith(" "):
            title = line.strip()
    if not main:
        return None
    rows = []
    for label, op, cells in main:
        tds = []
        for j, (value, open_, pct, _close) in enumerate(cells):
            sig = open_ == "*"
            mark = f"*{pct}%*" if sig else f"({pct}%)"
            cls = ' class="numalab-sig" title="significant (mmtests)"' if sig else ""
            tds.append(f'<td{cls} data-col="{_esc(columns[j])}">{_esc(value)} '
                       f'<span class="numalab-pct">{_esc(mark)}</span></td>')
        rows.append(f'<tr><th class="numalab-rowlabel">{_esc(label)}&nbsp;&nbsp;{_esc(op)}</th>{"".join(tds)}</tr>')
    caption = f"<caption>{_esc(title)}</caption>" if title else ""
    out = [f'<table class="numalab-mmtests">{caption}{_head([""], columns)}<tbody>{"".join(rows)}</tbody></table>']
    for name, block in monitors:
        trs = "".join(
            f'<tr><th class="numalab-rowlabel">{_esc(name)} {_esc(label)}</th>'
            + "".join(f"<td>{_esc(v)}</td>" for v in values) + "</tr>"
            for label, values in block)
        out.append(f'<table class="numalab-monitor">{_head([name], columns)}<tbody>{trs}</tbody></table>')
    note = ('<div style="font-size:11px;color:#555;padding:2px 4px">percentages against the first column '
            '(positive = better for times); highlighted <b>*x%*</b>: significant by mmtests\' test; '
            '<code>print()</code> the report for the exact text</div>')
    return f'<div class="numalab-report">{_CSS}{"<br>".join(out)}</div>{note}'


# --------------------------------------------------------------------------------------------
# LKP


def _lkp_html(text: str, columns) -> str | None:
    lines = text.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.startswith("-" * 16 + " ")) + 3
    except StopIteration:
        return None
    k = len(columns)
    width = 16 + 28 * (k - 1)
    rows = []
    for line in lines[start:]:
        if not line.strip():
            continue
        if len(line) < width + 2:
            return None
        fields = [(line[:10], line[10:16], None)]
        for j in range(k - 1):
            seg = line[16 + 28 * j: 16 + 28 * (j + 1)]
            fields.append((seg[12:22], seg[22:28], seg[:12]))
        key = line[width:].strip()
        tds = []
        for j, (value, pm, change) in enumerate(fields):
            if change is not None:
                tds.append(f'<td class="numalab-pct">{_esc(change.strip())}</td>')
            tds.append(f'<td data-col="{_esc(columns[j])}">{_esc(value.strip())}'
                       f'<span class="numalab-pct">{_esc(pm.strip() and " " + pm.strip())}</span></td>')
        rows.append(f'<tr><th class="numalab-rowlabel">{_esc(key)}</th>{"".join(tds)}</tr>')
    if not rows:
        return None
    head = ['<th class="numalab-rowlabel"></th>', f"<th>{_esc(columns[0])}<br>mean ±%stddev</th>"]
    for c in columns[1:]:
        head += ["<th>%change</th>", f"<th>{_esc(c)}<br>mean ±%stddev</th>"]
    table = (f'<table class="numalab-lkp"><thead><tr>{"".join(head)}</tr></thead>'
             f'<tbody>{"".join(rows)}</tbody></table>')
    note = ('<div style="font-size:11px;color:#555;padding:2px 4px">%change against the first column '
            '(LKP\'s sign: negative = smaller); ± shown when the stddev exceeds 2 % of the mean; '
            '<code>print()</code> the report for the exact text</div>')
    return f'<div class="numalab-report">{_CSS}{table}</div>{note}'


# --------------------------------------------------------------------------------------------
# long fixed-column text


class TextTable(str):
    """Fixed-column text (a caption line starting with ``#``, a header line, one row per line)
    that renders as a scrolling HTML table: ``columns`` names the fields; each row is split on
    whitespace into ``len(columns)`` fields, the last one keeping the rest of the line. ``str()``
    is the text unchanged."""

    def __new__(cls, text: str, columns):
        obj = super().__new__(cls, text)
        obj.columns = [str(c) for c in columns]
        return obj

    def __reduce__(self):
        return (str, (str(self),))

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    def _repr_html_(self) -> str:
        n = len(self.columns)
        blocks, caption, rows = [], "", []

        def flush():
            if caption or rows:
                head = "".join(f"<th>{_esc(c)}</th>" for c in self.columns)
                body = "".join(
                    "<tr>" + "".join(
                        # the last column (the VMAs a run reached) wraps instead of running off the box
                        (f'<td style="text-align:left;white-space:normal;min-width:32em">{_esc(f)}</td>' if j == n - 1
                         else f'<td style="text-align:right">{_esc(f)}</td>')
                        for j, f in enumerate(r)) + "</tr>" for r in rows)
                cap = f"<caption>{_esc(caption)}</caption>" if caption else ""
                blocks.append(f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

        for line in str(self).splitlines():
            if line.startswith("#"):
                flush()
                caption, rows = line.lstrip("# ").strip(), []
            elif not line.strip() or _is_header(line, self.columns):
                continue
            else:
                fields = line.split(None, n - 1)
                if len(fields) != n:
                    return _pre(str(self))
                rows.append(fields)
        flush()
        if not blocks:
            return _pre(str(self))
        return f'<div class="numalab-report">{_CSS}{"".join(blocks)}</div>'


def _is_header(line: str, columns) -> bool:
    return line.split()[:1] == columns[0].split()[:1] and all(c.split()[0] in line for c in columns)


#: the columns of ``numalab.tracing.format_runs``
TRACE_COLUMNS = ("t (s)", "seed", "mm", "thread", "tid", "seq", "offset (MiB)", "ptes",
                 "VMAs reached (kind:decision)")


def trace_table(text) -> TextTable:
    """``format_runs(trace)`` text as a scrolling table (``print`` it for the plain text)."""
    return TextTable(str(text), TRACE_COLUMNS)

"""What the explorers show: the figures of :mod:`.compute`'s results, PNG bytes and the HTML
summary table."""

from __future__ import annotations

import html
import io

import numpy as np
import xarray as xr

from .. import plots
from .compute import pid_hash_summary


def figure_png(fig) -> bytes:
    """PNG bytes of ``fig`` drawn under the package style (what the explorers display).

    When ``savefig`` would change nothing of the figure (dpi, face colour and bbox as the
    style's), the Agg canvas prints it directly: the same bytes, without ``savefig``'s extra
    draw before printing (run for a layout engine; about 0.03 s of a 0.15 s full-size figure)."""
    import matplotlib as mpl
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_rgba

    buf = io.BytesIO()
    with plots.style():
        rc = mpl.rcParams
        plain = (fig.dpi == rc["savefig.dpi"] and rc["savefig.bbox"] in (None, "standard")
                 and rc["savefig.edgecolor"] == "auto" and rc["savefig.transparent"] is False
                 and to_rgba(fig.get_facecolor()) == to_rgba(rc["savefig.facecolor"]))
        if plain:
            FigureCanvasAgg(fig).print_png(buf)
        else:
            fig.savefig(buf, format="png")
    return buf.getvalue()


def summary_html(rows: dict, *, title: str = "", columns=None) -> str:
    """An HTML table of ``rows`` (name -> value, or name -> list of values when ``columns``
    names the columns). Each value sits in a ``<td class="numalab-value" data-key=NAME
    data-col=COLUMN>`` so a browser test can read it back."""
    esc = html.escape
    head = ""
    if columns is not None:
        head = "<tr><th></th>" + "".join(f'<th style="text-align:left">{esc(str(c))}</th>' for c in columns) + "</tr>"
    body = []
    for k, v in rows.items():
        values = v if columns is not None else [v]
        cols = columns if columns is not None else [""]
        tds = "".join(f'<td class="numalab-value" data-key="{esc(str(k))}" data-col="{esc(str(c))}" '
                      f'style="padding-right:1em">{esc(_fmt(x))}</td>' for c, x in zip(cols, values))
        body.append(f'<tr><th style="text-align:left;padding-right:1em">{esc(str(k))}</th>{tds}</tr>')
    caption = f"<b>{esc(title)}</b>" if title else ""
    return f'<div class="numalab-summary">{caption}<table>{head}{"".join(body)}</table></div>'


def _fmt(v) -> str:
    """A summary number as shown: thousands grouped from 1000 on, two decimals from 1 on (an
    Amean of 39.62 s next to a -0.37 % change must show the 0.15 s it moved), three significant
    figures below 1."""
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v):
            return "n/a"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.2f}" if abs(v) >= 1 or v == 0 else f"{v:.3g}"
    return str(v)


def pid_hash_figure(threads: int, width: int = 64, first_tid: int = 4100):
    """Bar chart: how many of the ``threads`` TIDs land on each bit of the map."""
    from ..hashing import pid_bit

    summary = pid_hash_summary(threads, width, first_tid)
    bits = pid_bit(np.arange(first_tid, first_tid + threads, dtype=np.uint32), width=width)
    counts = np.bincount(bits, minlength=int(width))
    with plots.style():
        fig, axes = plots._figure(None, figsize=(6.4, 2.6))
        a = axes[0, 0]
        a.bar(np.arange(int(width)), counts, width=0.85, color=np.where(counts > 1, "#D55E00", "#0072B2"))
        a.set_xlim(-1, int(width))
        a.set_xlabel(f"bit of pids_active (hash_32(tid, {int(np.log2(int(width)))}))")
        a.set_ylabel("threads on the bit")
        a.set_title(f"{threads} TIDs from {first_tid}: {summary['distinct_bits']} distinct bits, "
                    f"{summary['collisions']} collisions")
    return fig


def decision_figure(ds: xr.Dataset, p: int):
    """Decision matrix of pass ``p`` (left) and the windows it saw (right, scanner's bit outlined)."""
    from matplotlib.figure import Figure

    from ..hashing import pid_bit

    with plots.style():
        fig = Figure(figsize=(11.0, 4.2))
        left, right = fig.subplots(1, 2, width_ratios=[1.1, 1])
    m = ds["decision"].isel({"pass": p})
    plots.decision_matrix(m, ax=left, title=f"pass {p}: decision per scanning task")
    scanner = int(ds["scanner"][p])
    plots.pid_windows(ds["bits"].isel({"pass": p}), ax=right,
                      highlight=int(pid_bit(np.uint32(scanner), width=ds.sizes["bit"])),
                      title=f"pids_active (scanner tid {scanner}'s bit outlined)")
    return fig

"""Figures of the futex model (to move into :mod:`numalab.plots`; pure functions, ``ax=None``
in, Figure out, no ``plt.show()``)."""

from __future__ import annotations

import numpy as np

from .errors import NumalabValueError

__all__ = ["plot_futex_sweep"]

_COLORS = {"classic": "tab:gray", "numa": "tab:blue", "private": "tab:orange"}
_STYLES = ["-", "--", ":", "-."]


def plot_futex_sweep(ds, ax=None, *, var: str = "ops_per_s_per_thread"):
    """Throughput against hash buckets, one line per kernel mode (and thread count).

    ``ds`` is a :func:`numalab.futex.sweep` Dataset with a ``buckets`` dim (optionally
    ``mode`` and ``threads`` dims). Lines are the mean over seeds, the band spans the seeds'
    min-max. Returns the matplotlib Figure.
    """
    if "buckets" not in getattr(ds, "dims", {}):
        raise NumalabValueError("ds has no 'buckets' dimension; allowed: a futex.sweep Dataset swept over buckets")
    if var not in ds:
        raise NumalabValueError(f"var={var!r} is not in ds; allowed: {', '.join(map(str, ds.data_vars))}")
    if ax is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7, 4.5), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    da = ds[var]
    modes = list(ds["mode"].values) if "mode" in da.dims else [None]
    threads = list(ds["threads"].values) if "threads" in da.dims else [None]
    x = np.asarray(ds["buckets"].values, dtype=float)
    for mi, m in enumerate(modes):
        for ti, t in enumerate(threads):
            sel = {}
            if m is not None:
                sel["mode"] = m
            if t is not None:
                sel["threads"] = t
            d = da.sel(sel)
            y = d.mean("seed").values if "seed" in d.dims else d.values
            label = " ".join(s for s in (str(m) if m is not None else "",
                                         f"{t} threads" if t is not None else "") if s)
            color = _COLORS.get(str(m), f"C{mi}")
            ax.plot(x, y, _STYLES[ti % len(_STYLES)], color=color, marker="o", ms=3, label=label or None)
            if "seed" in d.dims and d.sizes["seed"] > 1:
                ax.fill_between(x, d.min("seed").values, d.max("seed").values, color=color, alpha=0.15, lw=0)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("hash buckets (private: slots; classic: table; numa: per node)")
    ax.set_ylabel(f"{da.attrs.get('long_name', var).split('(')[0].strip()} [{da.attrs.get('units', '')}]")
    topo = ds.attrs.get("topology_name", "")
    ax.set_title(f"{ds.attrs.get('workload', 'futex')} on {topo}".strip())
    ax.grid(True, which="major", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    return fig

"""Figures for numalab results: pure functions, ``ax=None`` in, :class:`~matplotlib.figure.Figure` out.

Every plotter takes labelled data (an :class:`xarray.Dataset` / ``DataArray`` with the names of
``notes/CONTRACTS.md``) and an optional ``ax``; with ``ax=None`` it makes a new Figure that is
*not* registered with pyplot (no global figure list, nothing to close, nothing shown behind the
caller's back), draws, and returns it. Nothing here calls ``plt.show()``.

The package style (``numalab.mplstyle``: bundled DejaVu Sans, fixed size and DPI, colour-blind
safe colours) is applied with :func:`style`, a context manager, so a user's global
``rcParams`` are never touched. Use :func:`save` to write a figure for publication: PNG, PDF or
SVG by the file's suffix, at a chosen ``dpi``, fonts embedded, with the same style.

matplotlib is imported lazily (inside the functions), so ``import numalab`` stays cheap.

Plotters
--------
decision_matrix        task x VMA heatmap of the scan-filter decision, coloured by reason
pid_bitmap             distinct bits / collisions of hashed TIDs vs thread count (64, 128 bits)
pid_windows            the pids_active windows of each VMA, newest first, bit by bit
convergence            pages per node per process over time, and the local fraction
skip_reasons           mean count of each ``skip_<reason>`` per policy
history_sweep          elsp / syst vs history length N, one panel per workload
tradeoff               false skips vs idle scans along N, one line per profile
fidelity               published vs simulated %change per row, with the acceptance band
scan_heatmap           damo-style: per VMA and time bin, the scanner's decision, the PTEs it
                       changed and the hinting faults taken (numalab.engine.scanmap.scan_map)
futex_buckets          futex ops/s per thread vs number of hash buckets, one line per mode
futex_published        published perf bench futex hash curves against the model's predictions
samples                mmtests-style box + strip plot of the per-seed samples per policy
paired_change          per-seed %change against a baseline policy, mean with its paired confidence
                       interval (ratio scale for counts), * where it excludes 0, and the runs a
                       real machine needs to see it (the effect, not the levels)
"""

from __future__ import annotations

import contextlib
import functools
import numbers
from pathlib import Path

import numpy as np
import xarray as xr

from .errors import NumalabValueError, check_choice, check_int

__all__ = [
    "STYLE",
    "style",
    "save",
    "SAVE_FORMATS",
    "REASON_COLOURS",
    "pid_bit_occupancy",
    "decision_matrix",
    "pid_bitmap",
    "pid_windows",
    "convergence",
    "skip_reasons",
    "history_sweep",
    "history_mechanism",
    "tradeoff",
    "fidelity",
    "fidelity_machines",
    "fidelity_bands",
    "futex_buckets",
    "futex_threads",
    "futex_published",
    "samples",
    "paired_change",
    "scan_heatmap",
]

#: The package style sheet (shipped as package data).
STYLE = Path(__file__).with_name("numalab.mplstyle")

#: Fixed colour per scan-filter decision (policy.REASONS names), so a reason keeps its colour
#: whichever subset a matrix shows. Skips are warm/grey, scans (allowed) are blue/green.
REASON_COLOURS = {
    # skipped (the kernel's sched_skip_vma_numa reasons)
    "unsuitable": "#8c8c8c",
    "shared_ro": "#bdbdbd",
    "inaccessible": "#5a5a5a",
    "scan_delay": "#E69F00",
    "pid_inactive": "#D55E00",
    "seq_completed": "#CC79A7",
    "disjoint_wait": "#F0C47A",
    # scanned: the rule that let the VMA through
    "early_passes": "#56B4E9",
    "own_pid": "#0072B2",
    "hot": "#009E73",
    "shared": "#7fd3b4",
    "ignore_pid_inactive": "#1f3f8f",
    "starvation": "#9e9ac8",
    "disjoint_select": "#3d9970",
    "forced": "#000000",
    "unfiltered": "#a6cee3",
}
#: the spare colours of decisions without a fixed one (a policy's own rules): cool ones for
#: scans, warm ones for skips, as the fixed colours are
_SPARE_SCAN = ("#6a3d9a", "#33a02c", "#1f78b4", "#cab2d6", "#80cdc1", "#35978f")
_SPARE_SKIP = ("#b15928", "#e31a1c", "#fb9a99", "#ff7f00", "#8c510a", "#f46d43")
#: the heatmap's colours for decisions without a fixed one, scan or skip alike
_SPARE = ("#b15928", "#6a3d9a", "#ff7f00", "#33a02c", "#e31a1c", "#1f78b4", "#fb9a99", "#cab2d6")


@contextlib.contextmanager
def style():
    """Apply numalab's style for the duration of a ``with`` block; rcParams are restored after."""
    import matplotlib as mpl

    with contextlib.ExitStack() as stack:
        with mpl._api.suppress_matplotlib_deprecation_warning():  # the defaults hold deprecated keys, as in rc_file
            stack.enter_context(mpl.rc_context(rc=_style_rc()))
        yield


@functools.lru_cache(maxsize=1)
def _style_rc() -> dict:
    """The rcParams ``mpl.rc_context(fname=STYLE)`` sets (``rc_file``: matplotlib's defaults
    updated from the file, the style blacklist left out), read once: parsing the file took
    2.5 ms per ``with style()``, several of them per explorer figure."""
    import matplotlib as mpl

    with mpl._api.suppress_matplotlib_deprecation_warning():  # as rc_file imports it
        from matplotlib.style.core import STYLE_BLACKLIST
        rc = mpl.rc_params_from_file(str(STYLE), use_default_template=True)
    return {k: rc[k] for k in rc if k not in STYLE_BLACKLIST}


#: formats :func:`save` writes, by file suffix
SAVE_FORMATS = ("png", "pdf", "svg")
#: how each format keeps its text: TrueType fonts embedded in PDF/PS (type 42, editable and
#: accepted by publishers, where matplotlib's default type 3 is not), glyphs as paths in SVG
#: (no font needed to view it), PNG pixels
_EMBED_FONTS = {"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "path"}


def save(fig, path, *, dpi=None, metadata=None, **kwargs) -> Path:
    """Write ``fig`` to ``path`` under the package style, in the format its suffix names
    (``.png``, ``.pdf`` or ``.svg``; no suffix: PNG), for publication.

    ``dpi`` sets the resolution of PNGs and of the images inside vector formats (default: the
    style's 100; 300 for print); fonts are embedded (TrueType in PDF, outlines in SVG) so the
    file renders the same everywhere; PDF and SVG carry no creation date, so the same figure
    gives the same bytes. Written through a temporary name and ``os.replace``: no half-written
    image is ever left behind. Extra keywords go to ``Figure.savefig``. Returns the path."""
    import matplotlib as mpl

    from .storage import atomic_write

    path = Path(path)
    fmt = check_choice("format (the file suffix)", kwargs.pop("format", path.suffix.lstrip(".").lower() or "png"),
                       SAVE_FORMATS)
    if dpi is not None:
        dpi = check_int("dpi", dpi, lo=10, hi=2400)
    if not hasattr(fig, "savefig"):
        raise NumalabValueError(f"fig is a {type(fig).__name__}; allowed: a matplotlib Figure")
    meta = {"CreationDate": None} if fmt == "pdf" else {"Date": None} if fmt == "svg" else {}
    meta.update(metadata or {})

    if dpi is not None:
        kwargs["dpi"] = dpi

    def write(tmp):
        with style(), mpl.rc_context(_EMBED_FONTS):
            fig.savefig(tmp, format=fmt, metadata=meta, **kwargs)

    return atomic_write(path, write)


# ---------------------------------------------------------------------------------------------
# helpers


def _figure(ax, nrows=1, ncols=1, *, figsize=None, **subplot_kw):
    """``(fig, axes)``: the caller's axes (any array shape ``nrows x ncols``) or a fresh
    pyplot-free Figure with that grid."""
    from matplotlib.figure import Figure

    if ax is None:
        fig = Figure(figsize=figsize)
        axes = fig.subplots(nrows, ncols, squeeze=False, **subplot_kw)
        return fig, axes
    axes = np.asarray(ax, dtype=object)
    if axes.size != nrows * ncols:
        raise NumalabValueError(
            f"ax holds {axes.size} Axes; allowed: None or {nrows * ncols} Axes "
            f"({nrows} row(s) x {ncols} column(s))"
        )
    axes = axes.reshape(nrows, ncols)
    return axes.flat[0].figure, axes


def _as_dataarray(data, var, name="data"):
    if isinstance(data, xr.Dataset):
        if var not in data.data_vars:
            check_choice(f"{name} variable", var, list(map(str, data.data_vars)))
        return data[var]
    if isinstance(data, xr.DataArray):
        return data
    raise NumalabValueError(f"{name} is a {type(data).__name__}; allowed: an xarray Dataset or DataArray")


def _check_dims(da, required, optional=("seed",), what="data"):
    missing = [d for d in required if d not in da.dims]
    extra = [d for d in da.dims if d not in required and d not in optional]
    if missing or extra:
        raise NumalabValueError(
            f"{what} has dims {tuple(da.dims)}; allowed: {tuple(required)} plus optionally "
            f"{tuple(optional)}" + (f" -- select {extra} first, e.g. .sel({extra[0]}=...)" if extra else "")
        )


def _mean_std(da, dim="seed"):
    """Mean and sample standard deviation (mmtests ``Stddev``, ddof=1) over ``dim``; a single
    sample has no spread (0)."""
    if dim not in da.dims:
        return da.astype(float), xr.zeros_like(da, dtype=float)
    n = da.sizes[dim]
    mean = da.mean(dim)
    std = da.std(dim, ddof=1) if n > 1 else xr.zeros_like(mean)
    return mean, std


def _label(da, fallback):
    name = str(da.attrs.get("long_name") or da.name or fallback)
    if len(name) > 40:  # an axis label, not a docstring: drop the parenthetical, else use the name
        name = name.split(" (")[0]
        name = name if len(name) <= 40 else str(da.name or fallback).replace("_per_s", "/s").replace("_", " ")
    units = da.attrs.get("units")
    return f"{name} [{units}]" if units and units != "1" else str(name)


def _ticklabels(values):
    return [str(v.item() if hasattr(v, "item") else v) for v in np.asarray(values, dtype=object)]


def _reason_names(da):
    """Reason names of a decision matrix: string values as they are, or int codes mapped
    through ``attrs['reasons']`` (or numalab.policy.REASONS)."""
    values = np.asarray(da.values)
    if values.dtype.kind in "US" or values.dtype == object:
        return values.astype(str)
    if values.dtype.kind not in "iu":
        raise NumalabValueError(
            f"decision matrix has dtype {values.dtype}; allowed: reason names (str) or int codes"
        )
    reasons = _listed_reasons(da)
    if reasons is None:
        from .policy import REASONS as reasons
    reasons = np.asarray(list(reasons), dtype=str)
    if values.size and (values.min() < 0 or values.max() >= len(reasons)):
        raise NumalabValueError(
            f"decision matrix holds codes {int(values.min())}..{int(values.max())}; allowed: 0..{len(reasons) - 1}"
        )
    return reasons[values]


def _listed_reasons(da):
    """``attrs['reasons']`` as a list of names (None when absent)."""
    reasons = da.attrs.get("reasons")
    if isinstance(reasons, str):  # e.g. read back from netCDF as JSON or CF flag_meanings
        import json
        import re

        reasons = json.loads(reasons) if reasons.startswith("[") else re.split(r"[,\s]+", reasons.strip())
    return None if reasons is None else list(reasons)


def _skip_reasons(da=None):
    """The skip decisions: from ``attrs['reasons']`` and ``attrs['allowed_codes']`` when the
    matrix has them (a policy's own rules included), else numalab's built-in ones."""
    listed = None if da is None else _listed_reasons(da)
    allowed = None if da is None else da.attrs.get("allowed_codes")
    if listed is not None and allowed is not None:
        ok = {int(c) for c in np.atleast_1d(allowed)}
        return tuple(r for i, r in enumerate(listed) if i not in ok)
    from .policy import SKIP_REASONS

    return tuple(SKIP_REASONS)


# ---------------------------------------------------------------------------------------------
# decision matrix


def decision_matrix(matrix, ax=None, *, title=None):
    """Heatmap of the scan-filter decision for every (task, VMA) pair, coloured by reason.

    Parameters
    ----------
    matrix : xarray.DataArray, dims ("task", "vma")
        Reason names (str) or int codes (names in ``attrs['reasons']``), as returned by
        ``numalab.policy.decision_matrix`` -- which mirrors ``vma_is_accessed()`` /
        ``task_numa_work()`` (kernel/sched/fair.c) evaluated for each task as the scanner.
        Select one replica first if there is a ``replica`` dim.
    ax : matplotlib Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    if not isinstance(matrix, xr.DataArray):
        raise NumalabValueError(f"matrix is a {type(matrix).__name__}; allowed: an xarray DataArray")
    _check_dims(matrix, ("task", "vma"), optional=(), what="matrix")
    matrix = matrix.transpose("task", "vma")
    names = _reason_names(matrix)
    skips = set(_skip_reasons(matrix))
    order = list(REASON_COLOURS) + sorted(set(names.ravel()) - set(REASON_COLOURS))
    present = [r for r in order if r in set(names.ravel())]
    spare_scan, spare_skip = iter(_SPARE_SCAN * 8), iter(_SPARE_SKIP * 8)
    colours = [REASON_COLOURS.get(r) or next(spare_skip if r in skips else spare_scan) for r in present]
    codes = np.vectorize({r: i for i, r in enumerate(present)}.__getitem__, otypes=[int])(names) if names.size else names
    with style():
        fig, axes = _figure(ax)
        a = axes[0, 0]
        a.grid(False)
        a.imshow(codes, cmap=ListedColormap(colours or ["white"]), vmin=-0.5, vmax=max(len(present), 1) - 0.5,
                 aspect="auto", interpolation="nearest")
        ntask, nvma = codes.shape
        a.set_xticks(np.arange(nvma), _ticklabels(matrix["vma"].values) if "vma" in matrix.coords else None)
        ylabels = matrix["tid"] if "tid" in matrix.coords and matrix["tid"].dims == ("task",) else (
            matrix["task"] if "task" in matrix.coords else None)
        a.set_yticks(np.arange(ntask), _ticklabels(ylabels.values) if ylabels is not None else None)
        if nvma > 24:
            a.xaxis.set_major_locator(_max_n_locator(12))
        if ntask > 32:
            a.yaxis.set_major_locator(_max_n_locator(16))
        a.tick_params(axis="x", labelrotation=90 if nvma > 8 else 0)
        a.set_xlabel("VMA")
        a.set_ylabel("scanning task (tid)" if ylabels is not None and ylabels.name == "tid" else "scanning task")
        a.set_xticks(np.arange(nvma + 1) - 0.5, minor=True)
        a.set_yticks(np.arange(ntask + 1) - 0.5, minor=True)
        if ntask * nvma <= 4096:
            a.grid(which="minor", color="white", linewidth=0.5)
        a.tick_params(which="minor", length=0)
        handles = [Patch(facecolor=c, edgecolor="none",
                         label=("skip: " if r in skips else "scan: ") + r) for r, c in zip(present, colours)]
        a.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="decision")
        if title is None:
            policy = matrix.attrs.get("policy")
            title = f"scan-filter decision ({policy})" if policy else "scan-filter decision"
        a.set_title(title)
    return fig


def _max_n_locator(n):
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(n, integer=True)


# ---------------------------------------------------------------------------------------------
# PID bitmap occupancy


def pid_bit_occupancy(threads, *, widths=(64, 128), draws: int = 64, seed: int = 0,
                      pid_max: int = 4194304) -> xr.Dataset:
    """Distinct bits set when T threads each set their bit in an access-PID map.

    Each thread sets ``hash_32(tid, log2(width))`` (``vma_set_access_pid_bit()``,
    include/linux/mm.h; kernel-numa-balancing.md §2.1). Two TID layouts:
    ``"consecutive"`` -- T TIDs ``t0 .. t0+T-1`` as a freshly started multi-threaded process
    gets them, with ``t0`` drawn uniformly; ``"random"`` -- T TIDs drawn uniformly from
    ``[300, pid_max)`` (a long-running box; duplicates have probability < T**2 / pid_max and are
    kept, their effect on the count is negligible).

    Parameters
    ----------
    threads : sequence of int >= 1
    widths : sequence of 64 / 128 [bits]
    draws : int, number of random starting TIDs / TID sets per point
    seed : int, numpy Generator seed (draw order: per width, per layout, per T)
    pid_max : int, ``/proc/sys/kernel/pid_max`` (4194304 on 64-bit distributions)

    Returns
    -------
    xarray.Dataset with dims ("width", "tids", "threads", "draw") holding ``distinct_bits``
    (int), plus ``collisions = threads - distinct_bits`` and ``occupancy = distinct_bits/width``
    -- the probability that a thread that never touched the VMA still passes the PID test.
    """
    from .hashing import pid_bit

    threads = [check_int("threads", t, lo=1, hi=65536) for t in np.atleast_1d(threads).tolist()]
    widths = [int(w) for w in np.atleast_1d(widths).tolist()]
    draws = check_int("draws", draws, lo=1, hi=100000)
    seed = check_int("seed", seed, lo=0)
    pid_max = check_int("pid_max", pid_max, lo=max(threads) + 301, hi=2**32 - 1)
    rng = np.random.default_rng(seed)
    layouts = ("consecutive", "random")
    out = np.zeros((len(widths), 2, len(threads), draws), dtype=np.int64)
    for wi, width in enumerate(widths):
        for li, layout in enumerate(layouts):
            for ti, t in enumerate(threads):
                if layout == "consecutive":
                    t0 = rng.integers(300, pid_max - t, size=(draws, 1))
                    tids = t0 + np.arange(t)
                else:
                    tids = rng.integers(300, pid_max, size=(draws, t))
                bits = pid_bit(tids.astype(np.uint32), width=width)
                seen = np.zeros((draws, width), dtype=bool)
                seen[np.arange(draws)[:, None], bits] = True
                out[wi, li, ti] = seen.sum(axis=1)
    coords = {"width": widths, "tids": list(layouts), "threads": threads, "draw": np.arange(draws)}
    distinct = xr.DataArray(out, dims=("width", "tids", "threads", "draw"), coords=coords, attrs={
        "units": "1", "long_name": "distinct bits set in pids_active", "kernel_name": "pids_active"})
    ds = xr.Dataset({"distinct_bits": distinct})
    ds["collisions"] = (ds["threads"] - distinct).assign_attrs(
        units="1", long_name="threads sharing a bit with an earlier thread")
    ds["occupancy"] = (distinct / ds["width"]).assign_attrs(
        units="1", long_name="fraction of the map set (P[an outsider passes the PID test])")
    ds.attrs.update(hash="hash_32(tid, log2(width))", pid_max=pid_max, seed=seed)
    return ds


def pid_bitmap(occupancy=None, ax=None, *, kind: str = "distinct_bits", threads=None):
    """Distinct hashed-TID bits (or collisions) vs thread count, for 64- and 128-bit maps.

    Parameters
    ----------
    occupancy : xarray.Dataset from :func:`pid_bit_occupancy`, optional
        Computed with defaults (T = 1..256) if omitted.
    kind : "distinct_bits" | "collisions" | "occupancy"
    threads : thread counts to compute when ``occupancy`` is omitted.

    Lines are the mean over draws; the shaded band is min..max.
    """
    kind = check_choice("kind", kind, ("distinct_bits", "collisions", "occupancy"))
    if occupancy is None:
        if threads is None:
            threads = [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256]
        occupancy = pid_bit_occupancy(threads)
    da = _as_dataarray(occupancy, kind, "occupancy")
    _check_dims(da, ("width", "tids", "threads"), optional=("draw",), what=kind)
    with style():
        fig, axes = _figure(ax)
        a = axes[0, 0]
        t = da["threads"].values
        styles = {"consecutive": "-", "random": "--"}
        colours = {64: "#0072B2", 128: "#D55E00"}
        for width in da["width"].values.tolist():
            for layout in da["tids"].values.tolist():
                sub = da.sel(width=width, tids=layout)
                mean = sub.mean("draw") if "draw" in sub.dims else sub
                c = colours.get(width)
                a.plot(t, mean, styles.get(layout, ":"), color=c, label=f"{width}-bit map, {layout} TIDs")
                if "draw" in sub.dims:
                    a.fill_between(t, sub.min("draw"), sub.max("draw"), color=c, alpha=0.15, linewidth=0)
        if kind == "distinct_bits":
            for i, width in enumerate(da["width"].values.tolist()):
                a.plot(t, np.minimum(t, width), ":", color="#888888",
                       label="no collision: min(T, map bits)" if i == 0 else None)
                a.axhline(width, color=colours.get(width, "#888888"), linewidth=0.8, alpha=0.6)
        _log2_axis(a)
        a.set_xlabel("threads T touching the VMA")
        a.set_ylabel({"distinct_bits": "distinct bits set", "collisions": "threads colliding (T - distinct bits)",
                      "occupancy": "P[outsider passes the PID test]"}[kind])
        a.set_title("access-PID map: hash_32(tid, 6 | 7) with T threads")
        a.legend(loc="upper left")
    return fig


def pid_windows(bits, ax=None, *, highlight=None, title=None):
    """The access-PID history of each VMA: one row per window (newest first), one column per
    bit of ``pids_active`` (``hash_32(tid, 6|7)``); a set bit is a dark cell.

    Parameters
    ----------
    bits : xarray.DataArray of bool, dims ("vma", "window", "bit"); window 0 = the newest
        (the one ``vma_set_access_pid_bit()`` writes to).
    highlight : int or sequence of int, optional -- bit numbers to outline (e.g. the scanner's).
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Rectangle

    if not isinstance(bits, xr.DataArray):
        raise NumalabValueError(f"bits is a {type(bits).__name__}; allowed: an xarray DataArray")
    _check_dims(bits, ("vma", "window", "bit"), optional=(), what="bits")
    bits = bits.transpose("vma", "window", "bit")
    nvma, nwin, nbit = bits.shape
    # age shades: newest window darkest; 0 = clear
    shade = np.where(bits.values, (nwin - np.arange(nwin))[None, :, None], 0).reshape(nvma * nwin, nbit)
    colours = ["#ffffff"] + [mpl_colour for mpl_colour in _blues(nwin)]
    with style():
        fig, axes = _figure(ax, figsize=(6.4, 0.9 + 0.16 * nvma * nwin))
        a = axes[0, 0]
        a.grid(False)
        a.imshow(shade, cmap=ListedColormap(colours), vmin=-0.5, vmax=nwin + 0.5, aspect="auto",
                 interpolation="nearest")
        for v in range(1, nvma):
            a.axhline(v * nwin - 0.5, color="#444444", linewidth=0.8)
        a.set_yticks(np.arange(nvma) * nwin + (nwin - 1) / 2, _ticklabels(bits["vma"].values))
        a.set_xticks(np.arange(0, nbit + 1, 8 if nbit <= 64 else 16) - 0.5,
                     [str(b) for b in range(0, nbit + 1, 8 if nbit <= 64 else 16)])
        a.set_xlabel(f"bit of pids_active (hash_32(tid, {int(np.log2(nbit))}))")
        a.set_ylabel(f"VMA ({nwin} window(s) each, newest on top)")
        for b in np.atleast_1d(highlight if highlight is not None else []).tolist():
            a.add_patch(Rectangle((b - 0.5, -0.5), 1, nvma * nwin, fill=False, edgecolor="#D55E00", linewidth=1.2))
        a.set_title(title or "access-PID windows per VMA")
    return fig


def _blues(n):
    import matplotlib as mpl

    cmap = mpl.colormaps["Blues"]
    return [mpl.colors.to_hex(cmap(0.35 + 0.6 * (i + 1) / n)) for i in range(n)]


# ---------------------------------------------------------------------------------------------
# convergence


def convergence(series, ax=None, *, pages: str = "pages_node", local: str = "local_fraction",
                process_dim: str = "process", node_dim: str = "node"):
    """Pages per node per process over time (top) and the local fraction (bottom).

    Parameters
    ----------
    series : xarray.Dataset with ``pages`` (dims time, process, node [pages]) and ``local``
        (dims time[, process], fraction of hinting faults or pages local); a ``seed`` dim is
        averaged. Select one policy first.
    ax : two Axes (top, bottom), optional
    """
    if not isinstance(series, xr.Dataset):
        raise NumalabValueError(f"series is a {type(series).__name__}; allowed: an xarray Dataset")
    p = _as_dataarray(series, pages, "series")
    _check_dims(p, ("time", process_dim, node_dim), what=pages)
    loc = _as_dataarray(series, local, "series")
    _check_dims(loc, ("time",), optional=("seed", process_dim), what=local)
    if "seed" in p.dims:
        p = p.mean("seed")
    if "seed" in loc.dims:
        loc = loc.mean("seed")
    with style():
        fig, axes = _figure(ax, 2, 1, figsize=(6.4, 5.2), sharex=True, height_ratios=[2, 1])
        top, bottom = axes[0, 0], axes[1, 0]
        time = p["time"].values
        dashes = ["-", "--", ":", "-."]
        cycle = [c["color"] for c in _prop_cycle()]
        procs = p[process_dim].values.tolist()
        for i, proc in enumerate(procs):
            for j, node in enumerate(p[node_dim].values.tolist()):
                top.plot(time, p.sel({process_dim: proc, node_dim: node}), dashes[j % 4],
                         color=cycle[i % len(cycle)], label=f"{process_dim} {proc}, node {node}")
        top.set_ylabel(f"resident pages on node [{p.attrs.get('units', 'pages')}]")
        top.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), ncols=1)
        top.set_title("convergence: where each process's memory sits")
        if process_dim in loc.dims:
            for i, proc in enumerate(loc[process_dim].values.tolist()):
                bottom.plot(time, loc.sel({process_dim: proc}), color=cycle[i % len(cycle)])
        else:
            bottom.plot(time, loc, color="#000000")
        bottom.axhline(0.9, color="#888888", linewidth=0.8, linestyle=":")
        bottom.annotate("90 % local", (1.0, 0.9), xycoords=("axes fraction", "data"), xytext=(-3, -9),
                        textcoords="offset points", ha="right", fontsize=7, color="#666666")
        bottom.set_ylim(0, 1.02)
        bottom.set_ylabel("local fraction")
        units = p["time"].attrs.get("units", "s")
        bottom.set_xlabel(f"simulated time [{units}]")
    return fig


def _log2_axis(a):
    """A log2 x axis labelled with plain integers (1, 2, 4 ... rather than 2^k)."""
    from matplotlib.ticker import FuncFormatter

    a.set_xscale("log", base=2)
    a.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))


def _plain_axis(axis):
    """Tick labels as the numbers themselves: no offset text (``1e-5``, ``+3.96e1``) far from
    them when the values are nearly equal."""
    from matplotlib.ticker import ScalarFormatter

    fmt = ScalarFormatter(useOffset=False)
    fmt.set_scientific(False)
    axis.set_major_formatter(fmt)


def _si_axis(axis):
    """Tick labels like 250k, 4M instead of an offset text (1e6) far from the numbers."""
    from matplotlib.ticker import EngFormatter

    axis.set_major_formatter(EngFormatter(sep=""))


def _prop_cycle():
    import matplotlib as mpl

    return list(mpl.rcParams["axes.prop_cycle"])


# ---------------------------------------------------------------------------------------------
# skip reasons


def skip_reasons(ds, ax=None, *, by: str = "policy", normalise: bool = False):
    """Mean count of each ``skip_<reason>`` variable (``sched_skip_vma_numa`` events by reason)
    per ``by`` value, as grouped horizontal bars with stddev over seeds.

    Parameters
    ----------
    ds : xarray.Dataset with ``skip_<reason>`` variables, dims (by, seed)
    normalise : divide each policy's counts by its total (share of skips)
    """
    if not isinstance(ds, xr.Dataset):
        raise NumalabValueError(f"ds is a {type(ds).__name__}; allowed: an xarray Dataset")
    names = [v for v in ds.data_vars if str(v).startswith("skip_")]
    if not names:
        raise NumalabValueError("ds has no skip_<reason> variables; allowed: a numalab.simulate() Dataset")
    stacked = xr.concat([ds[v].astype(float) for v in names], dim=xr.DataArray(
        [str(v).removeprefix("skip_") for v in names], dims="reason", name="reason"))
    _check_dims(stacked, ("reason", by), what="skip_<reason>")
    if normalise:
        stacked = stacked / stacked.sum("reason").where(lambda t: t > 0)
    mean = stacked.mean("seed") if "seed" in stacked.dims else stacked
    low = stacked.min("seed") if "seed" in stacked.dims else stacked
    high = stacked.max("seed") if "seed" in stacked.dims else stacked
    reasons = mean["reason"].values.tolist()
    groups = mean[by].values.tolist()
    with style():
        fig, axes = _figure(ax, figsize=(6.4, 1.2 + 0.35 * len(reasons) * max(1, len(groups)) ** 0.5))
        a = axes[0, 0]
        height = 0.8 / max(len(groups), 1)
        y = np.arange(len(reasons))
        for gi, g in enumerate(groups):
            m = mean.sel({by: g}).values
            spread = np.stack([m - low.sel({by: g}).values, high.sel({by: g}).values - m])
            a.barh(y + (gi - (len(groups) - 1) / 2) * height, m, height,
                   xerr=np.where(np.isfinite(spread), spread, 0.0), label=str(g))
        a.set_yticks(y, reasons)
        a.invert_yaxis()
        a.set_xlabel("share of skipped VMA visits" if normalise else "skipped VMA visits per run (mean; whiskers: min-max over seeds)")
        a.set_title("why the scanner skipped VMAs (sched_skip_vma_numa)")
        a.legend(title=by, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        a.grid(axis="y", visible=False)
    return fig


# ---------------------------------------------------------------------------------------------
# history-length sweep


def _numeric(values) -> np.ndarray:
    """bool per entry: a number (a history length N) rather than a word ("adaptive", "profile")."""
    return np.array([isinstance(v, numbers.Number) or str(v).lstrip("-").isdigit()
                     for v in np.asarray(values, dtype=object).tolist()], dtype=bool)


def _positions(values):
    """Categorical x positions; a gap before non-numeric entries (e.g. "adaptive")."""
    labels = _ticklabels(values)
    x, pos = [], 0.0
    numeric = _numeric(values)
    for i, is_num in enumerate(numeric):
        if i and numeric[i - 1] and not is_num:
            pos += 0.5
        x.append(pos)
        pos += 1
    return np.asarray(x), labels


def _history_panel_labels(a, r, c, rows, workload, da, v, x, ticks):
    """The labels of panel (row ``r``, column ``c``) of a variables x workloads grid against N:
    the workload on the top row, the variable (with units) in the first column, the N ticks on
    the bottom row."""
    if r == 0:
        a.set_title(str(workload))
    if c == 0:
        label = _label(da, v)
        a.set_ylabel(label if len(label) <= 24 else f"{v} [{da.attrs.get('units', '')}]".replace(" []", ""))
    if r == rows - 1:
        a.set_xticks(x, ticks)
        a.set_xlabel("history length N")


def history_sweep(ds, ax=None, *, variables=("elsp", "syst"), history_dim: str = "history"):
    """elsp / syst vs access-PID history length N (``NR_ACCESS_PID_HIST``), mean ± stddev over
    seeds, one column per workload and one row per variable.

    Parameters
    ----------
    ds : xarray.Dataset with dims (workload, history, seed); ``history`` holds N values and
        may hold "adaptive" (drawn after a gap).
    ax : array of len(variables) x n_workloads Axes, optional
    """
    if isinstance(variables, str):
        variables = (variables,)
    das = [_as_dataarray(ds, v, "ds") for v in variables]
    for v, da in zip(variables, das):
        _check_dims(da, ("workload", history_dim), what=v)
    workloads = das[0]["workload"].values.tolist()
    x, labels = _positions(das[0][history_dim].values)
    with style():
        fig, axes = _figure(ax, len(variables), len(workloads),
                            figsize=(min(2.6 * len(workloads) + 0.6, 12), 2.4 * len(variables) + 0.5),
                            sharex=True)
        for r, (v, da) in enumerate(zip(variables, das)):
            mean, std = _mean_std(da)
            for c, w in enumerate(workloads):
                a = axes[r, c]
                m, s = mean.sel(workload=w).values, std.sel(workload=w).values
                colour = _prop_cycle()[r % 8]["color"]
                num = _numeric(da[history_dim].values)
                # fixed N as a connected line; "adaptive" & co. as separate points (not an N)
                a.errorbar(x[num], m[num], yerr=s[num], marker="o", color=colour)
                if (~num).any():
                    a.errorbar(x[~num], m[~num], yerr=s[~num], marker="s", linestyle="none", color=colour)
                best = int(np.nanargmin(m)) if np.isfinite(m).any() else None
                if best is not None:
                    # filled: the lowest mean is significantly lower (mmtests t-test) than every other
                    # N; hollow: a tie with at least one of them
                    a.plot(x[best], m[best], "*", markersize=10, zorder=5, color="#000000",
                           markerfacecolor="#000000" if _clear_best(da.sel(workload=w), history_dim, best)
                           else "none")
                _plain_axis(a.yaxis)
                _history_panel_labels(a, r, c, len(variables), w, da, v, x, labels)
        fig.suptitle("PID-history length sweep (mean ± stddev over seeds; ★ lowest mean, "
                     "hollow when not significantly lower than another N)")
    return fig


#: the links from the history length to the run time (numalab.engine.history_stats)
HISTORY_MECHANISM = ("pids_per_window", "pid_pass_rate", "scan_coverage", "convergence_time", "elsp")


def history_mechanism(ds, ax=None, *, variables=HISTORY_MECHANISM, history_dim: str = "history",
                      by: str = "topology"):
    """How the access-PID history length N acts, link by link: the distinct PIDs a buffer
    window records, the own-PID test's pass rate, the scan coverage per pass, the time to
    converge and the run time, against N; one column per workload, one line per ``by`` value
    (a preset), mean over seeds.

    Parameters
    ----------
    ds : xarray.Dataset with dims (workload, history, seed) and optionally ``by`` (e.g. a
        ``numalab.sweep`` over workload x topology x history); the variables of
        :mod:`numalab.engine.history_stats`.
    ax : array of len(variables) x n_workloads Axes, optional
    """
    if isinstance(variables, str):
        variables = (variables,)
    das = [_as_dataarray(ds, v, "ds") for v in variables]
    for v, da in zip(variables, das):
        _check_dims(da, ("workload", history_dim), optional=("seed", by), what=v)
    workloads = das[0]["workload"].values.tolist()
    groups = das[0][by].values.tolist() if by in das[0].dims else [None]
    num = _numeric(das[0][history_dim].values)
    x = das[0][history_dim].values[num].astype(float)
    colours = [c["color"] for c in _prop_cycle()]
    with style():
        fig, axes = _figure(ax, len(variables), len(workloads),
                            figsize=(min(2.6 * len(workloads) + 1.8, 13), 2.0 * len(variables) + 0.8),
                            sharex=True)
        for r, (v, da) in enumerate(zip(variables, das)):
            mean = da.mean("seed") if "seed" in da.dims else da
            for c, w in enumerate(workloads):
                a = axes[r, c]
                for k, g in enumerate(groups):
                    m = mean.sel(workload=w) if g is None else mean.sel({"workload": w, by: g})
                    a.plot(x, m.values[num], marker="o", markersize=3, color=colours[k % len(colours)],
                           label=None if g is None else str(g))
                _history_panel_labels(a, r, c, len(variables), w, da, v, x, [str(int(n)) for n in x])
        if groups != [None]:
            axes[0, -1].legend(fontsize="x-small", loc="best")
        fig.suptitle("How the PID-history length acts: PIDs a window records -> own-PID test passes -> "
                     "scan coverage -> convergence (mean over seeds)")
    return fig


def _clear_best(da, dim, best) -> bool:
    """True when the mean at index ``best`` of ``dim`` is lower than every other one by mmtests'
    2023 t-test (p < 0.10); without seeds there is no test and the mark is hollow."""
    from . import stats

    if "seed" not in da.dims or da.sizes["seed"] < 2:
        return False
    x = da.transpose(dim, "seed").values.astype(float)
    m, sd, n = stats.amean(x), stats.stddev(x), stats.count(x)
    others = [i for i in range(x.shape[0]) if i != best]
    sig = stats.ttest_significant(m[best], sd[best], n[best], m[others], sd[others], n[others])
    return bool(np.all(sig & (m[others] > m[best])))


# ---------------------------------------------------------------------------------------------
# false skips vs idle scans


def tradeoff(ds, ax=None, *, x: str = "idle_scans", y: str = "false_skips", along: str = "history",
             hue: str = "profile"):
    """The scan filter's trade-off: false skips (skipped as pid_inactive though the scanner had
    touched the VMA) against idle scans (scanned, then no hinting fault), one line per ``hue``
    value through the numeric ``along`` values (N = 1..16), mean over seeds, one panel per
    workload; non-numeric values (``"adaptive"``) are drawn as stars off the line.

    Parameters
    ----------
    ds : xarray.Dataset with ``x`` and ``y`` variables, dims (along[, hue][, workload][, seed])
    """
    dx, dy = _as_dataarray(ds, x, "ds"), _as_dataarray(ds, y, "ds")
    optional = ("seed", hue, "workload")
    _check_dims(dx, (along,), optional=optional, what=x)
    _check_dims(dy, (along,), optional=optional, what=y)
    mx, my = _mean_std(dx)[0], _mean_std(dy)[0]
    workloads = mx["workload"].values.tolist() if "workload" in mx.dims else [None]
    hues = mx[hue].values.tolist() if hue in mx.dims else [None]
    with style():
        fig, axes = _figure(ax, 1, len(workloads), figsize=(min(3.6 * len(workloads) + 0.8, 12), 3.8))
        for c, w in enumerate(workloads):
            a = axes[0, c]
            texts = []
            for h in hues:
                sel = {k: v for k, v in (("workload", w), (hue, h)) if v is not None}
                px, py = mx.sel(sel), my.sel(sel)
                num = _numeric(px[along].values)
                labels = _ticklabels(px[along].values)
                line, = a.plot(px.values[num], py.values[num], marker="o", label=str(h) if h is not None else None)
                for i in np.flatnonzero(~num):  # "adaptive" is not a point on the N curve
                    a.plot(px.values[i], py.values[i], "*", markersize=10, color=line.get_color())
                # one label per distinct point, naming every N (and rule) that lands there: points
                # that coincide share "N=4-8, adaptive" instead of printing their labels on top of each other
                for xy, text in _point_labels(px.values, py.values, labels, num):
                    texts.append(a.annotate(text, xy, textcoords="offset points", xytext=(5, 3),
                                            fontsize=7, color=line.get_color()))
            a.set_xlabel(_label(dx, x))
            if c == 0:
                a.set_ylabel(_label(dy, y))
            a.set_title(str(w) if w is not None else "false skips vs idle scans")
            _declutter(fig, texts)
            if hues != [None] and c == 0:
                a.legend(title=hue)
    return fig


def _declutter(fig, texts, step_pt: float = 2.0, tries: int = 40):
    """Move each annotation up (in ``step_pt`` point steps) until it overlaps no annotation placed
    before it, so labels of nearby points stay readable; the points themselves do not move."""
    if not texts:
        return
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    fig.draw_without_rendering()  # lay the figure out first: extents are only known after a draw
    renderer = canvas.get_renderer()
    placed = []
    for t in texts:
        for _ in range(tries):
            box = t.get_window_extent(renderer)
            if not any(box.overlaps(p) for p in placed):
                break
            dx, dy = t.xyann
            t.xyann = (dx, dy + step_pt)
        placed.append(t.get_window_extent(renderer))


def _point_labels(x, y, labels, numeric, most: int = 8):
    """[((x, y), text)]: the distinct points of a trade-off curve, each labelled with every N of
    ``labels`` drawn there (consecutive Ns as a range, ``N=4-8``) and the non-numeric entries
    (``adaptive``); with more than ``most`` distinct points only the ends of the N curve and the
    non-numeric entries are labelled."""
    groups: dict = {}
    for i in range(len(labels)):
        if np.isfinite(x[i]) and np.isfinite(y[i]):
            groups.setdefault((round(float(x[i]), 9), round(float(y[i]), 9)), []).append(i)
    idx = np.flatnonzero(numeric)
    ends = {int(idx[0]), int(idx[-1])} if idx.size else set()
    out = []
    for xy, members in groups.items():
        if len(groups) > most and not (set(members) & ends or any(not numeric[i] for i in members)):
            continue
        nums = [i for i in members if numeric[i]]
        runs, start = [], None
        for j, i in enumerate(nums):  # consecutive positions along the curve -> one range
            if start is None:
                start = i
            if j + 1 == len(nums) or nums[j + 1] != i + 1:
                runs.append(labels[start] if start == i else f"{labels[start]}\u2013{labels[i]}")
                start = None
        parts = ([f"N={', '.join(runs)}"] if runs else []) + [labels[i] for i in members if not numeric[i]]
        out.append((xy, ", ".join(parts)))
    return out


# ---------------------------------------------------------------------------------------------
# published vs simulated


def acceptance_band(published_pct):
    """The calibration rule (reference/calibration.md): |%change| >= 5 must keep its sign and
    lie within a factor of 2 -> [p/2, 2p]; smaller changes must stay within +-7 %."""
    p = np.asarray(published_pct, dtype=float)
    lo = np.where(np.abs(p) >= 5, np.minimum(p / 2, 2 * p), -7.0)
    hi = np.where(np.abs(p) >= 5, np.maximum(p / 2, 2 * p), 7.0)
    return lo, hi


def fidelity(published, simulated, ax=None, *, error=None, band: bool = True, title=None):
    """Published vs simulated %change per row (e.g. per workload and commit pair).

    Parameters
    ----------
    published : xarray.DataArray, 1-D [%]: the kernel test robot's %change per row
    simulated : xarray.DataArray [%], same row dim; if it has a ``seed`` dim the mean is drawn
        with the stddev over seeds as error bar, otherwise pass ``error``.
    band : shade the acceptance interval of :func:`acceptance_band`.
    """
    if not isinstance(published, xr.DataArray) or published.ndim != 1:
        raise NumalabValueError("published must be a 1-D xarray DataArray of %change per row")
    row = published.dims[0]
    if not isinstance(simulated, xr.DataArray) or row not in simulated.dims:
        raise NumalabValueError(f"simulated must be an xarray DataArray with the row dim {row!r}")
    _check_dims(simulated, (row,), what="simulated")
    mean, std = _mean_std(simulated.sel({row: published[row]}))
    if error is not None:
        std = xr.DataArray(np.broadcast_to(np.asarray(error, float), mean.shape), dims=mean.dims)
    labels = _ticklabels(published[row].values)
    y = np.arange(len(labels))
    with style():
        fig, axes = _figure(ax, figsize=(6.4, 1.0 + 0.45 * len(labels)))
        a = axes[0, 0]
        if band:
            lo, hi = acceptance_band(published.values)
            for i in range(len(labels)):
                a.fill_betweenx([i - 0.35, i + 0.35], lo[i], hi[i], color="#009E73", alpha=0.15, linewidth=0,
                                label="acceptance band" if i == 0 else None)
        a.axvline(0, color="#444444", linewidth=0.8)
        a.plot(published.values, y, "D", color="#000000", label="published (LKP)")
        a.errorbar(mean.values, y, xerr=std.values, fmt="o", color="#D55E00",
                   label="simulated (mean ± stddev)")
        a.set_yticks(y, labels)
        a.invert_yaxis()
        a.grid(axis="y", visible=False)
        a.set_xlabel("%change of elapsed time (negative = faster)")
        a.set_title(title or "published vs simulated")
        fig.legend(loc="outside lower center", ncols=3)
    return fig


def _rectangle(xy, w, h):
    from matplotlib.patches import Rectangle

    return Rectangle(xy, w, h, fill=False, edgecolor="#56B4E9", linewidth=0.8)


def fidelity_machines(published, simulated, ax=None, *, error=None, machine: str = "machine", label_misses=True,
                      title=None):
    """Every published row in one scatter: published %change (x) against simulated (y), one
    marker per machine, with the calibration rule drawn -- the factor-2 wedge of the same sign
    for |published| >= 5 % and the ±7 % box for smaller changes (:func:`acceptance_band`).
    A point inside the shaded region is reproduced; points outside are numbered and listed beside
    the axes with their row label.

    Parameters
    ----------
    published : xarray.DataArray, 1-D [%] over a row dim, with a coordinate ``machine`` along it
    simulated : xarray.DataArray [%], same row dim; a ``seed`` dim gives the mean and stddev
        (error bars), otherwise pass ``error`` (per row).
    machine : name of the coordinate that says which machine each row was measured on.
    """
    if not isinstance(published, xr.DataArray) or published.ndim != 1:
        raise NumalabValueError("published must be a 1-D xarray DataArray of %change per row")
    row = published.dims[0]
    if machine not in published.coords or published[machine].dims != (row,):
        raise NumalabValueError(f"published needs a coordinate {machine!r} along {row!r} (the machine of each row)")
    if not isinstance(simulated, xr.DataArray) or row not in simulated.dims:
        raise NumalabValueError(f"simulated must be an xarray DataArray with the row dim {row!r}")
    _check_dims(simulated, (row,), optional=("seed",), what="simulated")
    mean, std = _mean_std(simulated.sel({row: published[row]}))
    if error is not None:
        std = xr.DataArray(np.broadcast_to(np.asarray(error, float), mean.shape), dims=mean.dims)
    x = np.asarray(published.values, float)
    y = np.asarray(mean.values, float)
    lo, hi = acceptance_band(x)
    inside = (y >= lo) & (y <= hi)
    machines = list(dict.fromkeys(_ticklabels(published[machine].values)))
    of = np.array(_ticklabels(published[machine].values))
    markers = ["o", "s", "^", "D", "v", "P", "X"]
    with style():
        fig, axes = _figure(ax, figsize=(10.0, 6.0))
        a = axes[0, 0]
        finite = np.isfinite(y)
        span = max(10.0, float(np.nanmax(np.abs(np.concatenate([x, y[finite]])))) * 1.1 if x.size else 10.0)
        # the rule: factor-2 wedges of the published sign beyond |p| >= 5, the +-7 % box inside
        for sgn in (1, -1):
            px = sgn * np.linspace(5, span, 50)
            a.fill_between(px, px / 2, np.clip(2 * px, -span, span), color="#009E73", alpha=0.15, linewidth=0,
                           label="reproduced: same sign, within 2x" if sgn == 1 else None)
        a.fill_between([-5, 5], [-7, -7], [7, 7], color="#56B4E9", alpha=0.25, linewidth=0,
                       label="reproduced: |published| < 5 %, simulated within ±7 %")
        a.plot([-span, span], [-span, span], color="#444444", linewidth=0.8, linestyle="--", label="simulated = published")
        a.axhline(0, color="#999999", linewidth=0.5)
        a.axvline(0, color="#999999", linewidth=0.5)
        cycle = [c["color"] for c in _prop_cycle()]
        for i, m in enumerate(machines):
            sel = of == m
            n_ok = int((inside & sel).sum())
            a.errorbar(x[sel], y[sel], yerr=np.asarray(std.values, float)[sel], fmt=markers[i % len(markers)],
                       color=cycle[i % len(cycle)], markersize=6, capsize=2, linewidth=0.8,
                       label=f"{m}: {n_ok} of {int(sel.sum())} reproduced")
        a.add_patch(_rectangle((-5, -7), 10, 14))
        misses = np.flatnonzero(~inside & finite) if label_misses else np.array([], int)
        # misses that fall on (nearly) the same spot share one label ("6,7"), so no number
        # is printed over another (the v6.8 huge and small PTE update rows coincide)
        spots: list[list] = []
        near = 0.03 * span
        for n, k in enumerate(misses, 1):
            for spot in spots:
                if abs(spot[0] - x[k]) < near and abs(spot[1] - y[k]) < near:
                    spot[2].append(n)
                    break
            else:
                spots.append([x[k], y[k], [n]])
        for sx, sy, ns in spots:
            a.annotate(",".join(map(str, ns)), (sx, sy), xytext=(4, 3), textcoords="offset points", fontsize=7,
                       color="#333333")
        if misses.size:
            names = _ticklabels(published[row].values[misses])
            a.text(1.02, 1.0, "outside the rule:\n" + "\n".join(f"{n}  {t}" for n, t in enumerate(names, 1)),
                   transform=a.transAxes, va="top", ha="left", fontsize=6.5, family="monospace")
        a.set_xlim(-span, span)
        a.set_ylim(-span, span)
        a.set_xlabel("published %change (kernel test robot)")
        a.set_ylabel("simulated %change (numalab, mean ± stddev over seeds)")
        a.set_title(title or f"published vs simulated: {int(inside.sum())} of {x.size} rows reproduced")
        a.legend(loc="upper left", fontsize=7)
    return fig


def _row_label(row) -> str:
    metric = row["metric"].removeprefix("autonuma-benchmark.").removesuffix(".seconds").removeprefix("proc-vmstat.")
    return f"{row['table'].removeprefix('lkp-')}: {metric}"


def fidelity_bands(rows, ax=None, *, label=None, title=None):
    """Every judged row with its uncertainty band (:mod:`numalab.fidelity.bands`): left the
    %change rows (published ◆, simulated mean ●, the strict rule's interval as a thin line, the
    range of the simulated mean over the box of plausible constants as a thick bar), right the
    base-column seconds as simulated / published (log scale, the published rule's factor 2 and
    the strict rule's 25 % marked). A wide bar is a constant worth measuring; a published value
    outside every bar is a mechanism the model lacks.

    Parameters
    ----------
    rows : list of dict, the rows of :func:`numalab.fidelity.compare` / ``fidelity.csv`` (with
        ``band_lo``/``band_hi``; rows without a band are drawn without the bar).
    ax : two Axes (changes, base seconds) or None.
    label : callable row -> str for the tick labels (default: table and test).
    """
    from .fidelity.rules import NOT_JUDGED, REPRODUCED, ROBUST, counts, interval, is_change

    rows = [r for r in rows if r.get("verdict") != NOT_JUDGED]
    if not rows:
        raise NumalabValueError("rows is empty; allowed: the judged rows of numalab.fidelity.compare")
    label = label or _row_label
    changes = [r for r in rows if is_change(r)]
    bases = [r for r in rows if not is_change(r)]
    n = max(len(changes), len(bases), 1)
    with style():
        fig, axes = _figure(ax, 1, 2, figsize=(12.0, 1.2 + 0.2 * n))
        for a, part, kind in ((axes[0, 0], changes, "change"), (axes[0, 1], bases, "base")):
            _band_panel(a, part, kind, label, interval, REPRODUCED, ROBUST)
        c = counts(rows)
        robust = f"{c['robust']} of {c['not_fitted']} rows robust" if c["robust"] is not None else "no bands"
        fig.suptitle(title or f"published vs simulated with the range over the uncertainty box: {robust}, "
                              f"{c['strict']} strict, {c['published']} by the published rule "
                              f"(the {c['fitted']} rows fitted constants were set from not counted)", fontsize=9)
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=4, fontsize=7)
    return fig


def _band_panel(a, rows, kind, label, interval, reproduced, robust):
    y = np.arange(len(rows))
    pub = np.array([r["published"] for r in rows], float)
    mean = np.array([r["simulated_mean"] for r in rows], float)
    lo = np.array([r.get("band_lo", r["simulated_mean"]) for r in rows], float)
    hi = np.array([r.get("band_hi", r["simulated_mean"]) for r in rows], float)
    if kind == "base":   # seconds as simulated / published
        from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

        mean, lo, hi, pub = mean / pub, lo / pub, hi / pub, np.ones_like(pub)
        a.set_xscale("log")
        a.xaxis.set_major_locator(FixedLocator([0.25, 0.5, 0.75, 1.0, 1.25, 2.0, 4.0]))
        a.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        a.xaxis.set_minor_locator(NullLocator())
        for x0, x1, alpha in ((0.5, 2.0, 0.10), (0.75, 1.25, 0.18)):
            a.axvspan(x0, x1, color="#009E73", alpha=alpha, linewidth=0)
        a.set_xlabel("simulated / published seconds (light: factor 2, dark: 25 %)")
    else:
        ilo, ihi = np.array([interval(r) for r in rows], float).T if rows else (np.array([]), np.array([]))
        a.hlines(y, ilo, ihi, color="#D55E00", linewidth=0.8, label="strict interval (seed spread + band)")
        a.axvline(0, color="#444444", linewidth=0.8)
        a.set_xlabel("%change (negative = faster / fewer)")
    a.hlines(y, lo, hi, color="#E69F00", linewidth=5, alpha=0.6, label="range over the uncertainty box")
    a.plot(mean, y, "o", color="#D55E00", markersize=4, label="simulated mean (default constants)")
    a.plot(pub, y, "D", color="#000000", markersize=4, label="published")
    for i, r in enumerate(rows):
        mark = "R" if r.get("robust") == robust else ("✓" if r["verdict"] == reproduced else "✗")
        a.annotate(mark, (1.0, i), xycoords=("axes fraction", "data"), xytext=(3, 0), textcoords="offset points",
                   va="center", fontsize=6)
    a.set_yticks(y, [label(r) + ("" if kind == "base" else f" ({r['quantity'].split()[1]})")
                     + (" [fitted]" if r.get("fitted") else "") for r in rows], fontsize=6)
    a.set_ylim(len(rows) - 0.5, -0.5)
    a.grid(axis="y", visible=False)
    a.set_title({"change": "%change rows", "base": "base seconds"}[kind] + " (R robust, ✓ published rule, ✗ miss)",
                fontsize=8)


# ---------------------------------------------------------------------------------------------
# where the scanner went (damo-style)


def _heat_rows(ds, by):
    """(row of each VMA index, row labels, tick positions, tick labels) for :func:`scan_heatmap`:
    one row per VMA in index (address) order, ticked once per run of equal kinds, or one row per
    kind."""
    kinds = [str(k) for k in ds.attrs.get("vma_kinds") or []]
    if not kinds:  # a plain scan_trace Dataset: the VMAs it visited
        vma, kind = ds["vma"].values, ds["vma_kind"].values
        kinds = ["?"] * (int(vma.max()) + 1 if vma.size else 0)
        for v, k in zip(vma.tolist(), kind.tolist()):
            kinds[v] = str(k)
    mm = [int(m) for m in ds.attrs.get("vma_mm") or [0] * len(kinds)]
    if len(set(mm)) > 1:  # several processes: say whose VMA a row is
        kinds = [f"p{m} {k}" for m, k in zip(mm, kinds)]
    if by == "kind":
        names = list(dict.fromkeys(kinds))
        return np.array([names.index(k) for k in kinds]), names, np.arange(len(names)), names
    ticks, labels, i = [], [], 0
    while i < len(kinds):
        j = i
        while j + 1 < len(kinds) and kinds[j + 1] == kinds[i]:
            j += 1
        ticks.append((i + j) / 2)
        labels.append(kinds[i] if j == i else f"{kinds[i]} ×{j - i + 1}")
        i = j + 1
    return np.arange(len(kinds)), kinds, np.asarray(ticks), labels


def scan_heatmap(trace, ax=None, *, seed=None, by: str = "vma", bins: int = 60):
    """Where the scanner went, damo-style: per VMA (rows, in address order) and time bin
    (columns) of one seed's run, the decision ``task_numa_work`` took most often there (scanned
    by which rule, or skipped for which ``sched_skip_vma_numa`` reason; blank: not visited), the
    base pages it made PROT_NONE and the NUMA hinting faults the VMA took.

    Parameters
    ----------
    trace : the Dataset of :func:`numalab.engine.scanmap.scan_map` (all three panels) or of
        :func:`numalab.scan_trace` (the decisions only: a trace has the PTEs per run, not per VMA,
        and no faults)
    seed : which seed (default: the first)
    by : "vma" (one row per VMA) or "kind" (one row per VMA kind: stacks, buffer, text, ...)
    bins : time bins over the run
    ax : 1-D array of as many Axes as panels, optional
    """
    from matplotlib.colors import ListedColormap, LogNorm
    from matplotlib.patches import Patch

    if not isinstance(trace, xr.Dataset) or "visit_run" not in trace:
        raise NumalabValueError("trace is not a scan trace; allowed: numalab.scan_trace(...) or scan_map(...)")
    by = check_choice("by", by, ("vma", "kind"))
    bins = check_int("bins", bins, lo=2, hi=2000)
    seeds = [int(x) for x in trace.attrs.get("seeds", np.unique(trace["seed"].values))]
    seed = seeds[0] if seed is None else seed
    if seed not in seeds:
        raise NumalabValueError(f"seed={seed!r} is not in the trace; allowed: {', '.join(map(str, seeds))}")
    row_of, rows, ticks, tick_labels = _heat_rows(trace, by)
    runs = np.flatnonzero(trace["seed"].values == seed)
    keep = np.isin(trace["visit_run"].values, runs)
    t_visit = trace["t"].values[trace["visit_run"].values[keep]]
    r_visit = row_of[trace["vma"].values[keep]]
    reason = trace["reason"].values[keep].astype(str)
    mapped = "fault_t" in trace
    end = float(trace.attrs["elsp"][seeds.index(seed)]) if "elsp" in trace.attrs else float(t_visit.max(initial=1.0))
    edges = np.linspace(0.0, max(end, float(t_visit.max(initial=0.0))) * (1 + 1e-9), bins + 1)
    col = np.clip(np.searchsorted(edges, t_visit, side="right") - 1, 0, bins - 1)
    order = list(REASON_COLOURS) + sorted(set(reason) - set(REASON_COLOURS))
    present = [r for r in order if r in set(reason)]
    code = np.array([present.index(r) for r in reason], dtype=int) if reason.size else np.zeros(0, int)
    counts = np.zeros((len(rows), bins, max(len(present), 1)))
    np.add.at(counts, (r_visit, col, code), 1)
    decision = np.where(counts.sum(-1) > 0, counts.argmax(-1), np.nan)
    panels = [("decision", decision, "")]
    if mapped:
        pte = np.zeros((len(rows), bins))
        np.add.at(pte, (r_visit, col), trace["visit_pte_updates"].values[keep])
        fk = trace["fault_seed"].values == seed
        faults = np.zeros((len(rows), bins))
        fcol = np.clip(np.searchsorted(edges, trace["fault_t"].values[fk], side="right") - 1, 0, bins - 1)
        np.add.at(faults, (row_of[trace["fault_vma"].values[fk]], fcol), trace["fault_count"].values[fk])
        panels += [("base pages made PROT_NONE (numa_pte_updates)", pte, "pages per bin"),
                   ("NUMA hinting faults (numa_hint_faults)", faults, "faults per bin")]
    skips = set(_skip_reasons())
    spare = iter(_SPARE * 4)
    colours = [REASON_COLOURS.get(r) or next(spare) for r in present]
    extent = (edges[0], edges[-1], len(rows) - 0.5, -0.5)
    with style():
        fig, axes = _figure(None if ax is None else np.asarray(ax).reshape(-1, 1), len(panels), 1,
                            figsize=(10.0, 0.8 + (min(0.11 * len(rows), 4.5) + 0.5) * len(panels)),
                            sharex=True)
        for i, (name, grid, unit) in enumerate(panels):
            a = axes[i, 0]
            a.grid(False)
            if name == "decision":
                a.imshow(grid, cmap=ListedColormap(colours or ["white"]), vmin=-0.5, vmax=max(len(present), 1) - 0.5,
                         aspect="auto", interpolation="nearest", extent=extent)
                handles = [Patch(facecolor=c, edgecolor="none", label=("skip: " if r in skips else "scan: ") + r)
                           for r, c in zip(present, colours)]
                a.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="most frequent decision")
                a.set_title(f"{trace.attrs.get('workload', '')} under {trace.attrs.get('policy', '')}, seed {seed}: "
                            f"task_numa_work's decision per VMA and {(edges[1] - edges[0]):.2g} s", fontsize="medium")
            else:
                shown = np.where(grid > 0, grid, np.nan)
                top = np.nanmax(shown) if np.isfinite(shown).any() else 1.0
                im = a.imshow(shown, cmap="viridis", norm=LogNorm(vmin=1, vmax=max(top, 2)), aspect="auto",
                              interpolation="nearest", extent=extent)
                fig.colorbar(im, ax=a, label=unit, pad=0.01)
                a.set_title(name, fontsize="medium", loc="left")
            a.set_yticks(ticks, tick_labels)
            a.tick_params(axis="y", labelsize=6 if len(ticks) > 16 else 8)
            a.set_ylabel("VMA (address order)" if by == "vma" else "VMA kind")
        axes[-1, 0].set_xlabel("time [s]")
    return fig


# ---------------------------------------------------------------------------------------------
# futex


def futex_buckets(ds, ax=None, *, var: str = "ops_per_s_per_thread", buckets_dim: str = "buckets",
                  mode_dim: str = "mode", threads_dim: str = "threads"):
    """Futex throughput per thread vs number of hash buckets (log2 axis), one colour per kernel
    mode (global / FUTEX2_NUMA per-node / private hash) and one line style per thread count
    when there is a ``threads`` dim; mean ± stddev over seeds.

    Parameters
    ----------
    ds : xarray.Dataset with ``var`` over dims (buckets, mode[, threads][, seed]), as
        :func:`numalab.futex.sweep` returns it.
    """
    da = _as_dataarray(ds, var, "ds")
    _check_dims(da, (buckets_dim, mode_dim), optional=("seed", threads_dim), what=var)
    mean, std = _mean_std(da)
    b = np.asarray(da[buckets_dim].values, dtype=float)
    threads = mean[threads_dim].values.tolist() if threads_dim in mean.dims else [None]
    dashes = ["-", "--", ":", "-."]
    with style():
        fig, axes = _figure(ax)
        a = axes[0, 0]
        cycle = [c["color"] for c in _prop_cycle()]
        for i, m in enumerate(mean[mode_dim].values.tolist()):
            for j, t in enumerate(threads):
                sel = {mode_dim: m, **({threads_dim: t} if t is not None else {})}
                a.errorbar(b, mean.sel(sel).values, yerr=std.sel(sel).values, marker="o", color=cycle[i % len(cycle)],
                           linestyle=dashes[j % 4], label=str(m) if t is None else f"{m}, {t} threads")
        _log2_axis(a)
        _si_axis(a.yaxis)
        a.set_xlabel("hash buckets")
        a.set_ylabel(_label(da, var))
        fixed = futex_threads(ds) if threads == [None] else None
        a.set_title("futex hash: throughput per thread vs buckets" + (f", {fixed} threads" if fixed else ""))
        a.legend(title=mode_dim if threads == [None] else f"{mode_dim}, {threads_dim}")
    return fig


def futex_threads(ds):
    """The thread count of a futex sweep without a ``threads`` dim: its ``threads`` coordinate,
    else the ``threads`` parameter it was run with, else (None: perf bench's default) every CPU
    of its topology; None if the Dataset does not say."""
    import json

    if "threads" in getattr(ds, "coords", {}) and ds["threads"].ndim == 0:
        return int(ds["threads"])
    attrs = getattr(ds, "attrs", {})
    try:
        t = json.loads(attrs.get("parameters", "{}")).get("threads")
    except (TypeError, ValueError, AttributeError):
        t = None
    if isinstance(t, int):
        return t
    if "topology_nodes" in attrs and "topology_cpus_per_node" in attrs:
        return int(attrs["topology_nodes"]) * int(attrs["topology_cpus_per_node"])
    return None


def futex_published(published, models=None, ax=None, *, var: str = "ops_per_s_per_thread"):
    """Published ``perf bench futex hash`` curves (markers, one colour per thread count) and
    model predictions for the same rows (one line style per model), ops/s per thread vs
    buckets on a log2 axis; the global-hash rows (buckets 0) are left out. The legend sits
    outside the axes, clear of the data.

    Parameters
    ----------
    published : xarray.Dataset over ``row`` with ``var`` and coordinates ``threads`` and
        ``buckets``, as :func:`numalab.data.load` returns for a ``futex-*`` table.
    models : dict of label -> array of predictions aligned with ``published.row`` (e.g.
        :func:`numalab.futex.predict` of the same rows), or None.
    """
    da = _as_dataarray(published, var, "published")
    _check_dims(da, ("row",), what=var)
    for c in ("threads", "buckets"):
        if c not in published.coords:
            raise NumalabValueError(f"published has no {c!r} coordinate; allowed: a Dataset from nl.data.load('futex-...')")
    models = dict(models or {})
    for label, m in models.items():
        if np.shape(m) != da.shape:
            raise NumalabValueError(f"models[{label!r}] has shape {np.shape(m)}; allowed: one value per row {da.shape}")
    threads = published["threads"].values
    buckets = published["buckets"].values.astype(float)
    y = da.values
    styles = ["--", ":", "-.", "-"]
    with style():
        fig, axes = _figure(ax, figsize=(7.5, 4.2) if ax is None else None)
        a = axes[0, 0]
        cycle = [c["color"] for c in _prop_cycle()]
        for i, t in enumerate(sorted(set(threads.tolist()), reverse=True)):
            sel = (threads == t) & (buckets > 0)
            order = np.argsort(buckets[sel])
            col = cycle[i % len(cycle)]
            a.plot(buckets[sel][order], y[sel][order], marker="o", linestyle="none", color=col,
                   label=f"published, {t} threads")
            for j, (label, m) in enumerate(models.items()):
                a.plot(buckets[sel][order], np.asarray(m)[sel][order], linestyle=styles[j % len(styles)], color=col,
                       label=f"{label}, {t} threads")
        _log2_axis(a)
        _si_axis(a.yaxis)
        a.set_xlabel("hash buckets (perf bench -b)")
        a.set_ylabel(_label(da, var))
        title = published.attrs.get("machine", "")
        a.set_title("perf bench futex hash" + (f": {title}" if title else ""), fontsize="medium")
        # outside the axes, right of the data (the figure's layout engine makes room for it)
        a.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize="small")
    return fig


# ---------------------------------------------------------------------------------------------
# mmtests-style samples


def samples(ds, ax=None, *, var: str = "elsp", by: str = "policy"):
    """Box plot of the per-seed samples of ``var`` per ``by`` value with every sample drawn as a
    point (deterministic jitter) and the Amean as a diamond -- the distribution behind an mmtests
    ``Min / Amean / Max`` row. One panel per workload if there is a ``workload`` dim.

    Parameters
    ----------
    ds : xarray.Dataset or DataArray, dims (by, seed[, workload])
    """
    da = _as_dataarray(ds, var, "ds")
    _check_dims(da, (by, "seed"), optional=("workload",), what=var)
    workloads = da["workload"].values.tolist() if "workload" in da.dims else [None]
    groups = da[by].values.tolist()
    jitter = (np.random.default_rng(0).random(da.sizes["seed"]) - 0.5) * 0.3
    with style():
        fig, axes = _figure(ax, 1, len(workloads), figsize=(min(1.0 + 0.9 * len(groups) * len(workloads) + 1.5, 12), 3.8))
        cycle = [c["color"] for c in _prop_cycle()]
        for c, w in enumerate(workloads):
            a = axes[0, c]
            sub = da.sel(workload=w) if w is not None else da
            data = [sub.sel({by: g}).values.astype(float) for g in groups]
            data = [d[np.isfinite(d)] for d in data]
            x = np.arange(1, len(groups) + 1)
            a.boxplot(data, positions=x, widths=0.55, whis=(0, 100), showfliers=False,
                      medianprops={"color": "#444444"}, boxprops={"color": "#444444"},
                      whiskerprops={"color": "#444444"}, capprops={"color": "#444444"})
            for i, d in enumerate(data):
                a.plot(x[i] + jitter[: d.size], d, "o", color=cycle[i % len(cycle)], alpha=0.7, markersize=3.5)
                if d.size:
                    a.plot(x[i], d.mean(), "D", color="#000000", markersize=5, zorder=5)
            a.set_xticks(x, [str(g) for g in groups])
            _plain_axis(a.yaxis)
            a.tick_params(axis="x", labelrotation=30 if len(groups) > 3 else 0)
            a.set_title(str(w) if w is not None else f"{var} samples per {by}")
            if c == 0:
                a.set_ylabel(f"{var} [{da.attrs.get('units', 's')}], lower is better" if var in ("elsp", "syst")
                             else _label(da, var))
            a.grid(axis="x", visible=False)
    return fig


# ---------------------------------------------------------------------------------------------
# paired effects


def _is_count(da) -> bool:
    """A count (visits, faults, pages, ...): non-negative whole numbers not measured in seconds."""
    v = np.asarray(da.values, dtype=float)
    v = v[np.isfinite(v)]
    return da.attrs.get("units") not in ("s", "%") and v.size > 0 and bool(np.all(v >= 0) and np.all(v == np.round(v)))


#: %changes the ratio axis may label, most telling first (halving, doubling, ...)
_RATIO_TICKS = (0, -50, 100, -90, 900, -75, 300, -25, 33, -99, -95, -80, 50, 200, 25, -10, 10)


def _ratio_axis(a):
    """A %change axis on the log-ratio scale: position log(1 + pct/100), ticks labelled in %
    (-90, -50, 0, +100, ...), so -100 % is infinitely far and halving equals doubling."""
    from matplotlib.ticker import FuncFormatter, Locator, NullLocator

    class RatioTicks(Locator):
        """Ticks from :data:`_RATIO_TICKS`, at least a seventh of the axis apart."""

        def __call__(self):
            lo, hi = sorted(self.axis.get_view_interval())
            r0, r1 = np.log1p(max(lo, -99.99) / 100.0), np.log1p(hi / 100.0)
            keep = []
            for t in _RATIO_TICKS:
                r = np.log1p(t / 100.0)
                if r0 <= r <= r1 and all(abs(r - np.log1p(k / 100.0)) >= (r1 - r0) / 7 for k in keep):
                    keep.append(t)
            return sorted(keep)

    a.set_xscale("function", functions=(lambda p: np.log1p(np.asarray(p) / 100.0),
                                        lambda r: 100.0 * np.expm1(np.asarray(r))))
    a.xaxis.set_major_locator(RatioTicks())
    a.xaxis.set_minor_locator(NullLocator())
    a.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:+.0f}%" if v else "0"))


def paired_change(ds, ax=None, *, variables=("elsp",), along: str = "history", baseline=None,
                  by: str = "workload", ci: float = 0.95, method: str = "t", era: str = "2023",
                  scale: str = "auto", runs: bool = True):
    """The effect of each policy against ``baseline``, one statistic per figure: per-seed %change
    (points) and its mean with the paired ``ci`` confidence interval (bar), ``*`` where that
    interval excludes 0; one row per variable and one panel per ``by`` value (workload).

    Times are drawn on a linear %change axis; counts (false skips, faults, pages: whole numbers
    >= 0) on a ratio scale, with the interval of the geometric-mean change
    (:func:`numalab.stats.paired_change` ``scale="log"``), so no interval reaches below -100 %.
    With ``runs`` each row also says how many runs per kernel a real machine would need to see
    the change at ``ci`` (:func:`numalab.stats.runs_needed`, from the levels' seed spread).

    Seeds are common random numbers across policies, so the per-seed difference is what tells
    policies apart when their levels overlap. (mmtests' own asterisk, a t-test on the levels, is
    what ``nl.report.mmtests`` marks; it is not this figure's statistic.)

    Parameters
    ----------
    ds : xarray.Dataset with ``variables`` over dims (along, seed[, by])
    variables : variable names, one row each (e.g. ("elsp", "syst"))
    along : the compared dim ("history", "policy", ...); baseline: its value to compare with
        (default: the first)
    scale : "auto" (ratio scale for counts, linear otherwise), "linear" or "log"
    ci, method, era : see :func:`numalab.stats.paired_change`
    ax : array of len(variables) x n_by Axes, optional
    """
    from . import stats

    if isinstance(variables, str):
        variables = (variables,)
    scale = check_choice("scale", scale, ("auto", "linear", "log"))
    das = [_as_dataarray(ds, v, "ds") for v in variables]
    for v, da in zip(variables, das):
        _check_dims(da, (along, "seed"), optional=(by,), what=v)
    groups = das[0][by].values.tolist() if by in das[0].dims else [None]
    names = _ticklabels(das[0][along].values)
    base = names[0] if baseline is None else check_choice("baseline", str(baseline), names)
    others = [n for n in names if n != base]
    y = np.arange(len(others))
    jitter = (np.random.default_rng(0).random(das[0].sizes["seed"]) - 0.5) * 0.36
    cycle = [c["color"] for c in _prop_cycle()]
    prefix = "N=" if along == "history" else ""
    with style():
        fig, axes = _figure(ax, len(variables), len(groups),
                            figsize=(min(3.1 * len(groups) + 1.4, 12), 1.1 + (0.45 * len(others) + 0.9) * len(variables)),
                            sharey=True)
        for r, (v, da) in enumerate(zip(variables, das)):
            da = da.assign_coords({along: names})
            log = scale == "log" or (scale == "auto" and _is_count(da))
            eff = stats.paired_change(da, along, base, ci=ci, method=method, era=era, scale="log" if log else "linear")
            for c, g in enumerate(groups):
                a = axes[r, c]
                e = eff.sel({by: g}) if g is not None else eff
                if log:
                    _ratio_axis(a)
                else:
                    _plain_axis(a.xaxis)
                a.axvline(0, color="#444444", linewidth=0.8)
                for i, name in enumerate(others):
                    _paired_row(a, e.sel({along: name}), y[i], jitter, cycle[i % len(cycle)], runs)
                a.set_yticks(y, [f"{prefix}{n}" for n in others])
                a.set_ylim(len(others) - 0.5, -0.5)
                a.grid(axis="y", visible=False)
                a.set_xlabel(f"{v}: %change vs {prefix}{base}" + (" (ratio scale)" if log else ""))
                if r == 0 and g is not None:
                    a.set_title(str(g))
        how = f"{ci:.0%} {'t' if method == 't' else 'bootstrap'} interval of the per-seed %change"
        fig.suptitle(f"effect against {prefix}{base} (negative = lower): seeds (dots), mean ◆ with {how}\n"
                     f"(counts: geometric mean, ratio scale); * the interval excludes 0"
                     + (f"; n = runs per kernel a real machine needs to see it ({ci:.0%}, power 0.8)" if runs else ""),
                     fontsize="medium")
    return fig


def _paired_row(a, e, y, jitter, colour, runs):
    """One compared policy of :func:`paired_change`: its seeds, mean, interval, mark and run count."""
    pts = e["pct"].values.astype(float)
    ok = np.isfinite(pts)
    a.plot(pts[ok], y + jitter[: pts.size][ok], "o", color=colour, alpha=0.45, markersize=3.5)
    m, lo, hi = (float(e[k]) for k in ("mean", "lo", "hi"))
    if np.isfinite(lo):
        a.errorbar([m], [y], xerr=[[m - lo], [hi - m]], fmt="D", color="#000000", markersize=5, capsize=3, zorder=5)
    else:
        a.plot([m], [y], "D", color="#000000", markersize=5, zorder=5)
    end = max(hi if np.isfinite(hi) else m, np.nanmax(pts) if ok.any() else m)
    if bool(e["resolved"]):
        a.annotate("*", (hi if np.isfinite(hi) else m, y), textcoords="offset points", xytext=(5, -4), fontsize=12,
                   fontweight="bold")
    if runs:
        n = float(e["runs"])
        text = f"n={n:,.0f}" if np.isfinite(n) else "n>100k" if m != 0 else ""
        a.annotate(text, (1.0, y), xycoords=("axes fraction", "data"), textcoords="offset points", xytext=(3, -3),
                   fontsize=7, color="#555555", annotation_clip=False)
    return end

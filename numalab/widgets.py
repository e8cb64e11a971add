"""ipywidgets explorers: turn a knob, see what the kernel would do.

Each explorer is a thin binding of controls to **pure functions** defined in this module (and
tested without a browser): a ``*_run``/``*_passes`` function computes a Dataset from plain
values, a ``*_summary`` function turns it into the numbers shown, and a ``numalab.plots``
function draws the figure. The explorer only

* reads its controls (:attr:`Explorer.params`),
* computes what is missing -- results are cached per input (per seed where seeds are a knob),
  so moving one control re-runs only the points that changed,
* shows a progress bar while it runs, then the summary (an HTML table) and a PNG figure.

Explorers
---------
PidHashExplorer         threads, map width, first TID -> distinct bits of hash_32(tid, 6|7)
DecisionMatrixExplorer  step through scan passes of a small process and watch windows rotate
FutexExplorer           futex mode, buckets, threads, nodes -> ops/s per thread vs buckets
HistoryExplorer         workload, topology, profile, history N, threads, seeds -> mmtests-like
                        table and figures from numalab.simulate

Display an explorer by making it the last expression of a cell; ``explorer.widget`` is the
ipywidgets box, ``explorer.controls`` the controls by name, ``explorer.result`` the last
computed result and ``explorer.runs`` how many points were computed (cache misses).
"""

from __future__ import annotations

import functools
import html
import io

import numpy as np
import xarray as xr

from . import plots
from .errors import NumalabValueError, check_choice, check_int

__all__ = [
    "Explorer",
    "PidHashExplorer",
    "DecisionMatrixExplorer",
    "FutexExplorer",
    "HistoryExplorer",
    "pid_hash_summary",
    "pid_hash_figure",
    "decision_passes",
    "decision_summary",
    "decision_figure",
    "futex_run",
    "futex_summary",
    "history_run",
    "history_policy",
    "history_summary",
    "adaptive_rules",
    "summary_html",
    "adaptive_available",
    "figure_png",
]


def figure_png(fig) -> bytes:
    """PNG bytes of ``fig`` drawn under the package style (what the explorers display)."""
    buf = io.BytesIO()
    with plots.style():
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
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v):
            return "n/a"
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"
    return str(v)


# =============================================================================================
# pure functions: PID hash

def pid_hash_summary(threads: int, width: int = 64, first_tid: int = 4100) -> dict:
    """What ``threads`` consecutive TIDs ``first_tid, first_tid+1, ...`` do to one access-PID map.

    Each sets bit ``hash_32(tid, log2(width))`` (``vma_set_access_pid_bit()``). Returns a dict:
    ``distinct_bits`` (popcount of the map), ``collisions`` (threads sharing a bit with an
    earlier one), ``p_outsider`` (fraction of the map set: the chance that a thread that never
    touched the VMA passes the PID test).
    """
    from .hashing import pid_bit

    threads = check_int("threads", threads, lo=1, hi=1 << 16)
    first_tid = check_int("first_tid", first_tid, lo=1, hi=2**32 - 1 - threads)
    bits = pid_bit(np.arange(first_tid, first_tid + threads, dtype=np.uint32), width=width)
    distinct = int(np.unique(bits).size)
    return {"threads": threads, "width": int(width), "distinct_bits": distinct,
            "collisions": threads - distinct, "p_outsider": round(distinct / int(width), 4)}


def pid_hash_figure(threads: int, width: int = 64, first_tid: int = 4100):
    """Bar chart: how many of the ``threads`` TIDs land on each bit of the map."""
    from .hashing import pid_bit

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


# =============================================================================================
# pure functions: decision matrix over scan passes

PATTERNS = ("disjoint", "phase-change")


def _vma_layout(threads: int):
    names = ["buffer"] + [f"stack{i}" for i in range(threads)] + ["init-only"]
    return names


def _touch_prob(pattern: str, threads: int, p: int, passes: int) -> np.ndarray:
    """(T, V) probability that thread t faults in VMA v during pass p (if v is scanned)."""
    names = _vma_layout(threads)
    prob = np.zeros((threads, len(names)))
    prob[:, 0] = 0.6  # the shared buffer: every thread, now and then
    own = np.arange(threads)
    if pattern == "phase-change" and p >= passes // 2:
        own = (own + 1) % threads  # each thread moves on to its neighbour's data
    prob[np.arange(threads), 1 + own] = 0.95
    if p < 2:
        prob[0, -1] = 1.0  # the main thread initialises a VMA nobody uses afterwards
    return prob


def decision_passes(profile: str = "6.12", *, history=None, threads: int = 4, passes: int = 12,
                    rotate_every: int = 4, pattern: str = "disjoint", seed: int = 0,
                    first_tid: int = 4100) -> xr.Dataset:
    """Replay ``passes`` scan passes of one small process through a policy's scan filter.

    The process: ``threads`` threads (consecutive TIDs from ``first_tid``), a shared buffer
    VMA, one stack VMA per thread and a VMA only the main thread initialises (passes 0-1).
    Pass ``p`` (``mm->numa_scan_seq = p``, scan delay already elapsed):

    1. if a window rotation is due (every ``rotate_every`` passes, ``VMA_PID_RESET_PERIOD`` =
       4 x scan delay at the 1 s minimum scan period) and ``policy.rotate_before_access``
       (v6.7+), rotate every VMA's history (``history.rotate``);
    2. evaluate ``vma_is_accessed()`` for every thread as the scanner (the task x VMA matrix of
       ``policy.decision_matrix``); the pass's scanner is thread ``p % threads`` -- threads
       take turns winning ``task_numa_work``'s cmpxchg on ``numa_next_scan``;
    3. rotation due but not moved up (v6.4-v6.6): rotate the VMAs the scanner scanned;
    4. only VMAs the scanner scanned are PROT_NONE, so only they take hinting faults: every
       thread touching a scanned VMA (``pattern``, drawn with ``seed``) sets its bit in the
       current window (``history.set_pid_bits``). Skipped VMAs collect no bits -- the feedback
       that locks a thread out of memory it uses (a "false skip").

    Returns
    -------
    xarray.Dataset, dims ("pass", "task", "vma", "window", "bit"):
    ``decision`` (pass, task, vma) int8 reason codes (attrs ``reasons``), ``scanner`` (pass)
    tid, ``scanned`` (pass, vma) bool, ``touched`` (pass, task, vma) bool (ground truth: would
    have faulted had the VMA been scanned), ``bits`` (pass, vma, window, bit) bool -- the
    history the decision saw, window 0 newest.
    """
    from .history import empty, rotate, set_pid_bits
    from .policy import REASONS, Policy, decide, decision_matrix

    pattern = check_choice("pattern", pattern, PATTERNS)
    threads = check_int("threads", threads, lo=1, hi=64)
    passes = check_int("passes", passes, lo=1, hi=200)
    rotate_every = check_int("rotate_every", rotate_every, lo=1, hi=64)
    seed = check_int("seed", seed, lo=0)
    pol = Policy.profile(profile) if history is None else Policy.profile(profile, history=history)
    names = _vma_layout(threads)
    nvma = len(names)
    tids = np.arange(first_tid, first_tid + threads, dtype=np.uint32)
    pids, idx = empty((nvma,), pol.windows, pol.width)
    vm_start = (np.arange(nvma) + 1) * 8192  # pages; 32 MiB apart
    vm_end = vm_start + 4096
    prev_scan_seq = np.full(nvma, -1)  # v6.7: a new VMA's state starts at seq - 1
    select = np.zeros(nvma, np.int64)
    rng = np.random.default_rng(seed)
    out_dec = np.zeros((passes, threads, nvma), np.int8)
    out_bits = np.zeros((passes, nvma, pol.windows, pol.width), bool)
    out_scanner = np.zeros(passes, np.int64)
    out_scanned = np.zeros((passes, nvma), bool)
    out_touched = np.zeros((passes, threads, nvma), bool)
    for p in range(passes):
        due = p > 0 and p % rotate_every == 0
        if due and pol.rotate_before_access:
            rotate(pids, idx, rotation=pol.rotation)
        state = dict(pids_active=pids, idx=idx, numa_scan_seq=p, start_scan_seq=np.zeros(nvma),
                     prev_scan_seq=prev_scan_seq, scan_offset=0, vm_start=vm_start, vm_end=vm_end,
                     next_scan=np.zeros(nvma), now=p * 1000, nr_threads=threads, vma_scan_select=select)
        out_dec[p] = decision_matrix(pol, tids=tids, **state).values
        out_bits[p] = _age_ordered_bits(pids, idx, pol)
        scanner = p % threads
        allowed, _reason, select = decide(pol, scanner_tid=np.uint32(tids[scanner]), **state)
        select = np.asarray(select if select is not None else np.zeros(nvma), dtype=np.int64)
        if due and not pol.rotate_before_access:
            rotate(pids, idx, np.asarray(allowed, bool), rotation=pol.rotation)
        touched = rng.random((threads, nvma)) < _touch_prob(pattern, threads, p, passes)
        faults = touched & allowed[None, :]
        t_idx, v_idx = np.nonzero(faults)
        set_pid_bits(pids, idx, (v_idx,), tids[t_idx], width=pol.width, rotation=pol.rotation)
        prev_scan_seq = np.where(allowed, p, prev_scan_seq)
        out_scanner[p], out_scanned[p], out_touched[p] = tids[scanner], allowed, touched
    ds = xr.Dataset(
        {
            "decision": (("pass", "task", "vma"), out_dec, {
                "long_name": "scan decision of task_numa_work for (scanning task, VMA)", "units": "1",
                "kernel_name": "sched_skip_vma_numa.reason", "reasons": list(REASONS), "policy": pol.name}),
            "scanner": ("pass", out_scanner, {"long_name": "tid of the thread that ran task_numa_work", "units": "1"}),
            "scanned": (("pass", "vma"), out_scanned, {"long_name": "VMA scanned (made PROT_NONE) this pass", "units": "1"}),
            "touched": (("pass", "task", "vma"), out_touched, {"long_name": "thread accessed the VMA this pass (ground truth)", "units": "1"}),
            "bits": (("pass", "vma", "window", "bit"), out_bits, {
                "long_name": "pids_active bits seen by the decision, window 0 newest", "units": "1",
                "kernel_name": "vma_numab_state.pids_active"}),
        },
        coords={"pass": np.arange(passes), "task": np.arange(threads), "tid": ("task", tids.astype(np.int64)),
                "vma": names, "window": np.arange(pol.windows), "bit": np.arange(pol.width)},
        attrs={"policy": pol.name, "policy_json": pol.to_json(), "pattern": pattern, "seed": seed,
               "rotate_every": rotate_every},
    )
    return ds


def _age_ordered_bits(pids, idx, pol) -> np.ndarray:
    """(V, W, width) bool, window 0 = newest (shift: W-1 is newest; ring: idx is newest)."""
    w = pol.windows
    if pol.rotation == "shift":
        order = np.broadcast_to(np.arange(w)[::-1], (pids.shape[0], w))
    else:
        order = (idx[:, None] - np.arange(w)[None, :]) % w
    aged = np.take_along_axis(pids, order[:, :, None], axis=1)  # (V, W, words)
    le = np.ascontiguousarray(aged, dtype="<u8")
    return np.unpackbits(le.view(np.uint8), axis=-1, bitorder="little").astype(bool)


def decision_summary(ds: xr.Dataset, p: int) -> dict:
    """Numbers of pass ``p``: the scanner, how many VMAs it scanned / skipped, and the false
    skips in passes 0..p: VMAs the scanner skipped as ``pid_inactive`` although it accessed
    them in that pass (issue 9's definition, with the pass as the span) -- the access could
    not fault, so its bit stays absent and the skip repeats."""
    from .policy import CODE

    p = check_int("pass", p, lo=0, hi=ds.sizes["pass"] - 1)
    scanner = int(ds["scanner"][p])
    task = int(np.nonzero(ds["tid"].values == scanner)[0][0])
    codes = ds["decision"].values[: p + 1, :, :]
    rows = np.arange(p + 1)
    who = np.array([int(np.nonzero(ds["tid"].values == int(s))[0][0]) for s in ds["scanner"].values[: p + 1]])
    inactive = codes[rows, who] == CODE["pid_inactive"]  # (pass, vma) as the scanner decided
    false_skips = int((inactive & ds["touched"].values[rows, who]).sum())
    return {
        "pass (numa_scan_seq)": p,
        "scanner tid": scanner,
        "VMAs scanned": int(ds["scanned"][p].sum()),
        "VMAs skipped": int((~ds["scanned"][p]).sum()),
        "VMAs passing on the scanner's own bit": int((codes[p, task] == CODE["own_pid"]).sum()),
        "false skips so far": false_skips,
    }


def decision_figure(ds: xr.Dataset, p: int):
    """Decision matrix of pass ``p`` (left) and the windows it saw (right, scanner's bit outlined)."""
    from matplotlib.figure import Figure

    from .hashing import pid_bit

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


# =============================================================================================
# pure functions: futex

FUTEX_BUCKETS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


def futex_run(mode: str, buckets, threads: int, nodes: int, *, topology: str = "2s-128", seeds=(0,)) -> xr.Dataset:
    """``perf bench futex hash -t threads`` on ``topology`` with ``nodes`` nodes, in kernel
    ``mode`` ("classic", "numa", "private"), for each bucket count in ``buckets`` (private
    slots in "private" mode, the what-if table size otherwise) -> Dataset dims (buckets, seed)
    from :func:`numalab.futex.sweep`."""
    from . import futex
    from .topology import Topology

    check_choice("mode", mode, futex.MODES)
    topo = Topology.preset(topology, nodes=check_int("nodes", nodes, lo=1, hi=64))
    buckets = [check_int("buckets", b, lo=2) for b in np.atleast_1d(buckets).tolist()]
    ds = futex.sweep(buckets=buckets, mode=mode, threads=check_int("threads", threads, lo=1, hi=topo.ncpus),
                     seeds=list(seeds), topology=topo)
    return ds.squeeze([d for d in ("threads",) if d in ds.dims], drop=True)


def futex_summary(ds: xr.Dataset, buckets: int) -> dict:
    """Mean over seeds at ``buckets``: ops/s per thread (perf bench's 'Averaged ... operations/sec'),
    bucket utilisation and hash collisions."""
    point = ds.sel(buckets=buckets)
    return {
        "buckets": int(buckets),
        "ops/s per thread": float(point["ops_per_s_per_thread"].mean()),
        "ops/s (all threads)": float(point["ops_per_s"].mean()),
        "hb-lock utilisation": float(point["bucket_utilisation"].mean()),
        "futexes colliding": float(point["collisions"].mean()),
    }


# =============================================================================================
# pure functions: history-length runs (numalab.simulate)

@functools.cache
def adaptive_available() -> bool:
    """True once ``Policy(history="adaptive")`` exists *and* the engine runs it (checked with a
    2-thread, 64 MiB numa02 of 200 loops -- long enough to pass the early scan passes, about
    0.3 s; the answer is cached)."""
    from .policy import Policy

    try:
        pol = Policy(history="adaptive")
    except (NumalabValueError, TypeError):
        return False
    try:
        from .engine import simulate
        from .workloads import workload

        simulate(workload("numa02", "2s-ivb-40", threads=2, size_bytes=64 << 20, loops=200), [pol], seeds=[0])
    except (NumalabValueError, ImportError, TypeError):
        return False
    return True


def adaptive_rules() -> list[str]:
    """The adaptive-history rules ``Policy(history="adaptive", adapt=...)`` accepts (empty
    until numalab.adaptive exists)."""
    if not adaptive_available():
        return []
    from .adaptive import ADAPT_RULES

    return list(ADAPT_RULES)


def history_policy(profile: str, history):
    """The policy of a (profile, N) choice: N = "profile" keeps the profile's own length,
    an int sets ``NR_ACCESS_PID_HIST``, "adaptive" / "adaptive:<rule>" picks an adaptive rule."""
    from .policy import Policy

    if history in (None, "profile"):
        return Policy.profile(profile)
    if isinstance(history, str) and history.startswith("adaptive"):
        rule = history.partition(":")[2]
        return Policy.profile(profile, history="adaptive", **({"adapt": rule} if rule else {}))
    return Policy.profile(profile, history=history)


#: small defaults so an explorer answers in about a second per run
HISTORY_WORKLOAD_OPTIONS = {"size_bytes": 512 << 20}


def history_run(workload: str, topology: str, profile: str, history, threads, seed: int, *,
                workload_options=None, **engine_options) -> xr.Dataset:
    """One seed of ``numalab.simulate(workload, [policy], seeds=[seed])``.

    ``threads`` (per process; "default"/None keeps the workload's own count) and
    ``workload_options`` (e.g. ``size_bytes``, ``loops``) go to ``numalab.workload``;
    ``engine_options`` to ``numalab.simulate``."""
    from .engine import simulate
    from .workloads import workload as make

    overrides = dict(workload_options or {})
    if threads not in (None, "default"):
        overrides["threads"] = int(threads)
    wl = make(workload, topology, **overrides)
    return simulate(wl, [history_policy(profile, history)], seeds=[int(seed)], **engine_options)


def history_summary(ds: xr.Dataset) -> dict:
    """mmtests-like numbers over the seeds of a one-policy run: Amean and Stddev of elsp/syst,
    the vmstat counters and the filter-quality metrics (means)."""
    rows = {"seeds": int(ds.sizes.get("seed", 1))}
    for v in ("elsp", "syst"):
        if v in ds:
            x = ds[v].values.astype(float).ravel()
            rows[f"{v} Amean [s]"] = float(x.mean())
            rows[f"{v} Stddev [s]"] = float(x.std(ddof=1)) if x.size > 1 else 0.0
    for v in ("numa_hint_faults", "numa_hint_faults_local", "numa_pages_migrated", "false_skips", "idle_scans"):
        if v in ds:
            rows[v] = float(ds[v].mean())
    return rows


def _concat(datasets, dim):
    """Concatenate one-seed / one-policy results along ``dim``; time series of different
    lengths are padded with NaN (outer join), attrs of the first kept."""
    return xr.concat(datasets, dim=dim, join="outer", data_vars="all", coords="different",
                     compat="equals", combine_attrs="override")


# =============================================================================================
# the explorer machinery


class Explorer:
    """Base class: ``controls`` (name -> ipywidget), a cache of computed points, a progress bar,
    an HTML summary and a PNG figure. Subclasses define :meth:`compute` and :meth:`render`."""

    title = ""

    def __init__(self, controls: dict):
        import ipywidgets as w

        self.controls = controls
        self.cache: dict = {}
        self.runs = 0
        self.result = None
        self.error = None
        self.progress = w.IntProgress(value=0, min=0, max=1, description="", layout=w.Layout(width="220px", visibility="hidden"))
        self.status = w.HTML(value="")
        self.summary = w.HTML(value="")
        self.summary.add_class("numalab-summary")
        self.figure = w.Image(format="png", layout=w.Layout(max_width="100%", height="auto"))
        boxes = [w.HBox(list(controls.values())[i:i + 3]) for i in range(0, len(controls), 3)]
        header = [w.HTML(f"<b>{html.escape(self.title)}</b>")] if self.title else []
        self.widget = w.VBox([*header, *boxes, w.HBox([self.progress, self.status]), self.summary, self.figure])
        self.widget.add_class(f"numalab-{type(self).__name__.lower()}")
        for c in controls.values():
            c.observe(self._on_change, names="value")
        self.update()

    # ---- to override
    def compute(self, params: dict):  # pragma: no cover - abstract
        raise NotImplementedError

    def render(self, result, params: dict):  # pragma: no cover - abstract
        raise NotImplementedError

    # ---- machinery
    @property
    def params(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def cached(self, key, fn):
        """``fn()`` once per ``key``; counts cache misses in :attr:`runs`."""
        if key not in self.cache:
            self.cache[key] = fn()
            self.runs += 1
        return self.cache[key]

    def _progress(self, done: int, total: int, what: str = "") -> None:
        self.progress.max = max(total, 1)
        self.progress.value = done
        self.progress.layout.visibility = "visible" if done < total else "hidden"
        self.status.value = f"running {what} {done + 1}/{total} ..." if done < total else ""

    def update(self) -> None:
        """Recompute what is missing for the current controls and redraw."""
        params = self.params
        try:
            result = self.compute(params)
            rows, fig, *columns = self.render(result, params)
        except NumalabValueError as exc:  # a knob combination the model refuses: say so, keep going
            self.error = str(exc)
            self.progress.layout.visibility = "hidden"
            self.status.value = f'<span style="color:#b00">{html.escape(str(exc))}</span>'
            return
        self.error = None
        self.result = result
        self.summary.value = summary_html(rows, title=self.summary_title(params),
                                          columns=columns[0] if columns else None)
        self.figure.value = figure_png(fig)
        self.figure.width = str(int(round(fig.get_figwidth() * fig.dpi)))  # natural size, no upscaling
        self.status.value = ""

    def summary_title(self, params) -> str:
        return ", ".join(f"{k}={v}" for k, v in params.items())

    def _on_change(self, _change) -> None:
        self.update()

    def set(self, **values) -> "Explorer":
        """Set several controls at once, recomputing once (for notebooks and tests)."""
        for c in self.controls.values():
            c.unobserve(self._on_change, names="value")
        try:
            for k, v in values.items():
                check_choice("control", k, list(self.controls))
                self.controls[k].value = v
        finally:
            for c in self.controls.values():
                c.observe(self._on_change, names="value")
        self.update()
        return self

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


class PidHashExplorer(Explorer):
    """How many distinct ``pids_active`` bits do T threads with consecutive TIDs set?"""

    title = "Access-PID hash: hash_32(tid, 6 | 7)"

    def __init__(self, threads: int = 16, width: int = 64, first_tid: int = 4100):
        import ipywidgets as w

        super().__init__({
            "threads": w.IntSlider(value=threads, min=1, max=256, description="threads", continuous_update=False),
            "width": w.Dropdown(options=[64, 128], value=width, description="map bits"),
            "first_tid": w.BoundedIntText(value=first_tid, min=1, max=4194303, description="first tid"),
        })

    def compute(self, params):
        key = (params["threads"], params["width"], params["first_tid"])
        return self.cached(key, lambda: pid_hash_summary(*key))

    def render(self, result, params):
        return result, pid_hash_figure(params["threads"], params["width"], params["first_tid"])


class DecisionMatrixExplorer(Explorer):
    """Step through scan passes of a small process and watch the PID windows rotate.

    Controls: profile, history N, threads, access pattern, ``rotation`` (passes between window
    rotations), ``scan pass`` and seed.

    The replay (:func:`decision_passes`) is computed once per (profile, N, threads, pattern,
    rotation period, seed); moving the ``pass`` slider only redraws."""

    title = "Scan filter, pass by pass"

    def __init__(self, profile: str = "6.12", history="profile", threads: int = 4, passes: int = 12,
                 pattern: str = "disjoint", rotate_every: int = 4, seed: int = 0):
        import ipywidgets as w

        from .policy import Policy

        self.passes = check_int("passes", passes, lo=1, hi=200)
        super().__init__({
            "profile": w.Dropdown(options=Policy.profiles(), value=profile, description="profile"),
            "history": w.Dropdown(options=["profile", 1, 2, 3, 4, 6, 8], value=history, description="history N"),
            "threads": w.IntSlider(value=threads, min=1, max=16, description="threads", continuous_update=False),
            "pattern": w.Dropdown(options=list(PATTERNS), value=pattern, description="access"),
            "rotate_every": w.IntSlider(value=rotate_every, min=1, max=8, description="rotation",
                                        continuous_update=False),
            "pass": w.IntSlider(value=0, min=0, max=self.passes - 1, description="scan pass", continuous_update=True),
            "seed": w.BoundedIntText(value=seed, min=0, max=2**31 - 1, description="seed"),
        })

    def compute(self, params):
        key = (params["profile"], params["history"], params["threads"], params["pattern"],
               params["rotate_every"], params["seed"])
        history = None if params["history"] == "profile" else params["history"]
        return self.cached(key, lambda: decision_passes(
            params["profile"], history=history, threads=params["threads"], passes=self.passes,
            rotate_every=params["rotate_every"], pattern=params["pattern"], seed=params["seed"]))

    def render(self, ds, params):
        return decision_summary(ds, params["pass"]), decision_figure(ds, params["pass"])


class FutexExplorer(Explorer):
    """perf bench futex hash: ops/s per thread vs hash buckets for one kernel mode.

    Points are cached per (mode, buckets, threads, nodes, topology, seed): changing ``buckets``
    highlights another point of a curve already computed; changing ``threads`` computes one
    new curve."""

    title = "Futex hash buckets (perf bench futex hash)"

    def __init__(self, mode: str = "private", buckets: int = 256, threads: int = 16, nodes: int = 2,
                 topology: str = "2s-128", seeds: int = 2):
        import ipywidgets as w

        from . import futex

        self.topology = topology
        super().__init__({
            "mode": w.Dropdown(options=list(futex.MODES), value=mode, description="mode"),
            "buckets": w.Dropdown(options=list(FUTEX_BUCKETS), value=buckets, description="buckets"),
            "threads": w.IntSlider(value=threads, min=1, max=128, description="threads", continuous_update=False),
            "nodes": w.Dropdown(options=[1, 2, 4, 8], value=nodes, description="nodes"),
            "seeds": w.IntSlider(value=seeds, min=1, max=8, description="seeds", continuous_update=False),
        })

    def compute(self, params):
        base = (params["mode"], params["threads"], params["nodes"], self.topology)
        wanted = [(b, s) for b in FUTEX_BUCKETS for s in range(params["seeds"])]
        missing = [(b, s) for b, s in wanted if base + (b, s) not in self.cache]
        if missing:
            seeds = sorted({s for _, s in missing})
            buckets = sorted({b for b, _ in missing})
            self._progress(0, 1, "futex sweep")
            ds = futex_run(params["mode"], buckets, params["threads"], params["nodes"],
                           topology=self.topology, seeds=seeds)
            for b in buckets:
                for s in seeds:
                    self.cache.setdefault(base + (b, s), ds.sel(buckets=[b], seed=[s]))
            self.runs += len(missing)
            self._progress(1, 1)
        return xr.combine_by_coords([self.cache[base + k] for k in wanted])

    def render(self, ds, params):
        fig = plots.futex_buckets(ds.expand_dims(mode=[params["mode"]]))
        ax = fig.axes[0]
        y = ds["ops_per_s_per_thread"].sel(buckets=params["buckets"]).mean()
        ax.plot([params["buckets"]], [float(y)], "o", markersize=11, markerfacecolor="none",
                markeredgecolor="#000000", zorder=6)
        ax.set_title(f"{params['mode']}: {params['threads']} threads, {params['nodes']} nodes")
        return futex_summary(ds, params["buckets"]), fig


class HistoryExplorer(Explorer):
    """A workload under one policy with history length N, next to the profile's own N.

    Runs are cached per (workload, topology, policy, threads, seed): raising ``seeds`` from 2
    to 3 runs one more seed of each policy; changing N runs only the new policy."""

    title = "PID-history length (numalab.simulate)"

    def __init__(self, workload: str = "numa01_THREAD_ALLOC", topology: str = "2s-ivb-40", profile: str = "6.12",
                 history=4, threads=8, seeds: int = 2, *, workload_options=None, **engine_options):
        import ipywidgets as w

        from .policy import Policy
        from .topology import Topology
        from .workloads import workloads

        self.workload_options = dict(HISTORY_WORKLOAD_OPTIONS if workload_options is None else workload_options)
        self.engine_options = engine_options
        options = ["profile", 1, 2, 3, 4, 6, 8, 12, 16] + [f"adaptive:{r}" for r in adaptive_rules()]
        names = [n for n in workloads() if n.startswith("numa0") and "BIND" not in n] or workloads()
        super().__init__({
            "workload": w.Dropdown(options=names, value=workload, description="workload"),
            "topology": w.Dropdown(options=Topology.presets(), value=topology, description="topology"),
            "profile": w.Dropdown(options=Policy.profiles(), value=profile, description="profile"),
            "history": w.Dropdown(options=options, value=history, description="history N"),
            "threads": w.Dropdown(options=["default", 2, 4, 8, 16, 32, 64], value=threads, description="threads"),
            "seeds": w.IntSlider(value=seeds, min=1, max=8, description="seeds", continuous_update=False),
        })

    def compute(self, params):
        choices = ["profile"]
        if history_policy(params["profile"], params["history"]) != history_policy(params["profile"], "profile"):
            choices.append(params["history"])  # N equal to the profile's own: nothing to compare
        todo = [(h, s) for h in choices for s in range(params["seeds"])]
        base = (params["workload"], params["topology"], params["profile"], params["threads"])
        missing = [k for k in todo if base + k not in self.cache]
        for i, (h, s) in enumerate(missing):
            self._progress(i, len(missing), f"N={h} seed {s}:")
            self.cached(base + (h, s), lambda h=h, s=s: history_run(
                params["workload"], params["topology"], params["profile"], h, params["threads"], s,
                workload_options=self.workload_options, **self.engine_options))
        self._progress(1, 1)
        # runs of different seeds end at different times: pad the time series (outer join)
        return {h: _concat([self.cache[base + (h, s)] for s in range(params["seeds"])], "seed") for h in choices}

    def render(self, result, params):
        from matplotlib.figure import Figure

        names = [str(ds["policy"].values[0]) if "policy" in ds.coords else str(h) for h, ds in result.items()]
        per = [history_summary(ds) for ds in result.values()]
        rows = {k: [p.get(k, float("nan")) for p in per] for k in per[0]}
        merged = _concat(list(result.values()), "policy")
        with plots.style():
            fig = Figure(figsize=(11.0, 3.6))
            left, right = fig.subplots(1, 2, width_ratios=[1, 1.4])
        plots.samples(merged, ax=left, var="elsp")
        if any(str(v).startswith("skip_") for v in merged.data_vars):
            plots.skip_reasons(merged, ax=right)
        else:  # pragma: no cover - every engine Dataset has skip_<reason>
            right.set_visible(False)
        return rows, fig, names

"""The ipywidgets explorers: controls bound to the pure functions of :mod:`.compute` and the
figures of :mod:`.display`, with a per-input cache, staged answers and a static snapshot.

How an update runs (:meth:`Explorer.update`):

1. :meth:`Explorer.validate` turns a knob combination the model refuses into a plain-language
   message that *replaces* the figure (no API wording, no stale figure left on screen);
2. :meth:`Explorer.stages` lists the answers to show: e.g. a first answer from 2 seeds, then the
   full one. Each stage computes only what the cache lacks;
3. in a live kernel (``live=True``, the default inside Jupyter) the first view and every knob
   change are handed to one worker thread: the first answer is drawn as soon as it is ready,
   refined after, and a newer change supersedes the run in flight at its next chunk (its
   finished chunks stay cached). Building a live explorer returns at once; displaying it puts
   the widget on screen with its progress bar moving and waits for the refined view
   (:attr:`Snapshot.display_waits`). Outside a kernel (tests, scripts) updates run
   synchronously and only the last stage is drawn.

Displayed in a notebook, an explorer shows the live widget *and* a static snapshot of its last
view (:mod:`.snapshot`). Its "export" button writes the view to files (:mod:`.export`).
Invalid constructor arguments raise :class:`~numalab.errors.NumalabValueError` naming the
control and the values it allows.
"""

from __future__ import annotations

import html
import threading
import time

import numpy as np
import xarray as xr

from .. import plots
from ..errors import NumalabValueError, check_choice, check_int
from .compute import (
    FUTEX_BUCKETS,
    PATTERNS,
    _concat,
    adaptive_rules,
    decision_passes,
    decision_summary,
    futex_run,
    futex_summary,
    history_run,
    history_summary,
    pid_hash_summary,
)
from .display import _fmt, decision_figure, figure_png, pid_hash_figure, summary_html
from .export import export_view, register
from .pool import SeedPool, pool_size
from .snapshot import Snapshot, live_css


class _Superseded(Exception):
    """A newer knob change arrived: stop this run at a chunk boundary."""


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def _option(explorer: str, name: str, value, options):
    """``value`` if it is one of a Dropdown's ``options`` (values, or ``(label, value)`` pairs),
    else a NumalabValueError naming the explorer, the control and the allowed values (ipywidgets
    itself raises a bare TraitError); a string spelling an option (``"8"`` for 8) is accepted."""
    values = [o[1] if isinstance(o, tuple) else o for o in options]
    names = [str(v) for v in values]
    if not isinstance(value, bool) and str(value) in names:
        return values[names.index(str(value))]
    raise NumalabValueError(f"{explorer}: {name}={value!r} is not an option; allowed: {', '.join(names)}")


def _int(explorer: str, name: str, value, lo: int, hi: int) -> int:
    """``value`` as an int within a slider's ``[lo, hi]`` (ipywidgets would clip it silently)."""
    return check_int(f"{explorer}: {name}", value, lo=lo, hi=hi)


#: seconds after an explorer's final answer (or a refusal) at which the widgets showing it send
#: their state to the page again. A page that loads its widgets' states from the kernel (Voila's
#: first view of ``numalab explore``, a browser reload in JupyterLab) drops every update that
#: reaches it while it does: ipywidgets 8's manager asks for all states, then registers each
#: widget's channel, and an update arriving between the two finds no channel and is discarded,
#: never sent again. An answer finished at that moment stayed "preliminary, refining ..." on the
#: page while the kernel held the final one (browser trace: tests/test_browser.py,
#: test_update_sent_while_the_page_loads_reaches_it). Sending the same state again heals it; it
#: costs one message per widget (the figure's PNG included) per answer.
RESEND_AFTER_S = (1.0, 4.0)


def _resend(widgets) -> None:
    """Send each widget's current state to the page again (a no-op once it is closed)."""
    for wdg in widgets:
        try:
            wdg.send_state()  # ipywidgets sends nothing for a closed widget (no comm)
        except Exception:  # noqa: BLE001 - a closed comm or a stopped kernel: nothing to heal
            pass


def _resend_later(ex) -> None:
    """Send live explorer ``ex``'s view widgets again :data:`RESEND_AFTER_S` seconds from now (an
    update may have been dropped by a page loading the widgets' states at that moment)."""
    if not ex.live:
        return
    view = (ex.summary, ex.figure, ex.message, ex.status, ex.progress,
            ex.figure.layout, ex.message.layout, ex.progress.layout)
    for delay in RESEND_AFTER_S:
        t = threading.Timer(delay, _resend, args=(view,))
        t.daemon = True
        t.start()


class Explorer(Snapshot):
    """Base class: ``controls`` (name -> ipywidget), a cache of computed points, a progress bar,
    an HTML summary, a PNG figure and an "export" button. Subclasses define :meth:`compute` and
    :meth:`render`, and may define :meth:`stages`, :meth:`validate`, :meth:`notes`,
    :attr:`tooltips` and (for the export) :meth:`to_dataset` / :meth:`from_dataset`.

    ``timings`` lists, per shown answer, ``{"stage", "stages", "seconds", "cpu_seconds", "params"}``:
    seconds from the knob change (or the explorer's creation) to the new figure, and the CPU
    seconds spent on it by the updating thread and the worker processes (:meth:`worker_cpu`)
    together (what ``benchmarks/bench_explorers.py`` reports; wall time depends on the machine's
    load)."""

    title = ""
    #: control name -> tooltip, in the kernel's words
    tooltips: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        register(cls)  # reopen() / regenerate() find an exported view's explorer by its name

    def __init__(self, controls: dict, *, live: bool | None = None):
        import ipywidgets as w

        self.controls = controls
        self.cache: dict = {}
        self.runs = 0
        self.result = None
        self.error = None
        self.notes_shown: list[str] = []
        self.timings: list[dict] = []
        self.rows: dict = {}
        self.live = _in_kernel() if live is None else bool(live)
        self._gen = 0
        self._running = 0
        self._shown_gen = 0
        self._t_run = None
        self._cv = threading.Condition()
        self._pending = None
        self._busy = False
        self._worker = None
        self._fig = None
        uid = self._new_uid()
        for name, c in controls.items():
            tip = self.tooltips.get(name)
            if tip:
                c.tooltip = tip
        self.progress = w.IntProgress(value=0, min=0, max=1, description="", layout=w.Layout(width="220px", visibility="hidden"))
        self.status = w.HTML(value="")
        self.status.add_class("numalab-status")
        self.export_button = w.Button(description="export", icon="download", layout=w.Layout(width="auto"),
                                      tooltip="write this view to numalab-exports/: the figure (PDF, SVG, PNG), "
                                              "its parameters (view.json) and its Dataset (data.nc)")
        self.export_button.on_click(lambda _b: self._export_clicked())
        self.summary = w.HTML(value="")
        self.summary.add_class("numalab-summary")
        self.message = w.HTML(value="", layout=w.Layout(display="none"))
        self.message.add_class("numalab-message")
        self.figure = w.Image(format="png", layout=w.Layout(max_width="100%", height="auto"))
        boxes = [w.HBox(list(controls.values())[i:i + 3]) for i in range(0, len(controls), 3)]
        header = w.HTML(f"<b>{html.escape(self.title)}</b>{live_css(uid)}")
        header.add_class("numalab-live")
        header.add_class(f"numalab-live-{uid}")
        self.widget = w.VBox([header, *boxes, w.HBox([self.export_button, self.progress, self.status]),
                              self.summary, self.message, self.figure])
        self.widget.add_class(f"numalab-{type(self).__name__.lower()}")
        for c in controls.values():
            c.observe(self._on_change, names="value")
        if self.live:
            # in a kernel: return at once; the worker draws the first answer, then the refined one
            self.status.value = "starting ..."
            self.submit()
        else:
            self.update()

    # ---- to override
    def compute(self, params: dict, stage=None):  # pragma: no cover - abstract
        raise NotImplementedError

    def render(self, result, params: dict):  # pragma: no cover - abstract
        raise NotImplementedError

    def stages(self, params: dict) -> list:
        """The answers to show in turn (each passed to :meth:`compute` as ``stage``)."""
        return [None]

    def validate(self, params: dict) -> str | None:
        """A plain-language reason why the model cannot answer ``params``, or None."""
        return None

    def notes(self, result, params: dict) -> list[str]:
        """Plain-language remarks shown under the summary (e.g. what a striking number means)."""
        return []

    def to_dataset(self, result) -> xr.Dataset:
        """The result as one Dataset (what the export writes to ``data.nc``): a Dataset as it is,
        a dict of numbers as scalar variables."""
        if isinstance(result, xr.Dataset):
            return result
        if isinstance(result, dict):
            return xr.Dataset({str(k): ((), v) for k, v in result.items()})
        raise NumalabValueError(f"{type(self).__name__} result of type {type(result).__name__} has no Dataset form")

    @classmethod
    def from_dataset(cls, ds: xr.Dataset):
        """The inverse of :meth:`to_dataset` (what :func:`.export.regenerate` renders)."""
        if all(ds[v].ndim == 0 for v in ds.data_vars) and ds.data_vars:
            return {k: ds[k].item() for k in ds.data_vars}
        return ds

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

    def check_superseded(self) -> None:
        """Raise :class:`_Superseded` when a newer change is waiting (call between chunks)."""
        if self.live and (self._running != self._gen or (self._quiet and self._pending is not None)):
            raise _Superseded

    _quiet = False

    def _progress(self, done: int, total: int, what: str = "") -> None:
        if self._quiet:
            return  # computing ahead in idle time: nothing to show
        self.progress.max = max(total, 1)
        self.progress.value = done
        self.progress.layout.visibility = "visible" if done < total else "hidden"
        if done >= total:
            self.status.value = ""
            return
        # live: the seconds since the change, so a long first answer visibly makes progress
        took = f", {time.perf_counter() - self._t_run:.0f} s" if self.live and self._t_run is not None else ""
        self.status.value = f"running {what} {done + 1}/{total}{took} ..."

    def update(self) -> None:
        """Recompute what is missing for the current controls and redraw (synchronously)."""
        with self._cv:
            self._gen += 1
            gen = self._gen
        self._run(gen, self.params, t0=time.perf_counter(), draw_all=False)

    def _run(self, gen: int, params: dict, *, t0: float, draw_all: bool) -> None:
        self._running = gen
        self._t_run = t0
        c0, w0 = time.thread_time(), self.worker_cpu()
        reason = self.validate(params)
        if reason:
            self.cancel_work()
            self._refuse(reason)
            self._mark_shown(gen)
            return
        stages = self.stages(params)
        if not draw_all:
            stages = stages[-1:]  # synchronous: compute the final answer in as few engine calls as possible
        for i, stage in enumerate(stages):
            last = i == len(stages) - 1
            try:
                result = self.compute(params, stage)
                if not (last or draw_all):
                    continue
                self.check_superseded()
                rows, fig, *columns = self.render(result, params)
                self.check_superseded()
            except _Superseded:
                return
            except NumalabValueError as exc:  # a combination the model refuses: say so instead of a figure
                self._refuse(self.explain(exc, params))
                self._mark_shown(gen)
                return
            self._show(result, rows, fig, columns[0] if columns else None, params,
                       refining=not last, stage=stage, nstages=len(stages))
            self.timings.append({"stage": i, "stages": len(stages), "seconds": time.perf_counter() - t0,
                                 "cpu_seconds": time.thread_time() - c0 + self.worker_cpu() - w0,
                                 "params": dict(params)})
            self._mark_shown(gen)

    def _mark_shown(self, gen: int) -> None:
        with self._cv:
            self._shown_gen = gen
            self._cv.notify_all()

    def worker_cpu(self) -> float:
        """CPU seconds spent so far by worker processes computing for this explorer."""
        return 0.0

    def cancel_work(self) -> None:
        """Stop computing for a view nobody waits for any more (a refused combination)."""

    def explain(self, exc: Exception, params: dict) -> str:
        """The message shown for a refused combination (override for plainer words)."""
        text = str(exc)
        return "The model cannot run this combination: " + text.split("; allowed:")[0].replace("=", " = ") + "."

    def _refuse(self, reason: str) -> None:
        self.error = reason
        self._fig = None
        self.progress.layout.visibility = "hidden"
        self.status.value = ""
        self.summary.value = ""
        self.message.value = (f'<div style="padding:1em;border:1px solid #d8b4b4;background:#fff6f6;max-width:46em">'
                              f'{html.escape(reason)}</div>')
        self.message.layout.display = None
        self.figure.layout.display = "none"
        self._snapshot(self.message.value, None)
        _resend_later(self)

    def _show(self, result, rows, fig, columns, params, *, refining=False, stage=0, nstages=1) -> None:
        self.error = None
        self.result = result
        self.rows = {"columns": columns, "rows": rows}
        self._fig = fig
        self.notes_shown = self.notes(result, params)
        title = self.summary_title(params)
        if refining:
            title += f" -- preliminary ({self.stage_label(stage, params)}), refining ..."
        table = summary_html(rows, title=title, columns=columns)
        if self.notes_shown:
            table += "".join(f'<p class="numalab-note" style="max-width:52em;margin:0.4em 0">{html.escape(n)}</p>'
                             for n in self.notes_shown)
        png = figure_png(fig)
        self.summary.value = table
        self.figure.value = png
        self.figure.width = str(int(round(fig.get_figwidth() * fig.dpi)))  # natural size, no upscaling
        self.message.layout.display = "none"
        self.figure.layout.display = None
        if not refining:
            self.status.value = ""
            self.progress.layout.visibility = "hidden"
        else:
            self.status.value = "refining with more seeds ..."
        self._snapshot(table, png)
        if not refining:
            _resend_later(self)

    def shown_values(self) -> dict:
        """The numbers of the summary as shown (formatted), ``{row: value}`` or
        ``{row: {column: value}}`` -- what a person reads off the page."""
        rows, columns = self.rows.get("rows") or {}, self.rows.get("columns")
        if columns is None:
            return {str(k): _fmt(v) for k, v in rows.items()}
        return {str(k): {str(c): _fmt(x) for c, x in zip(columns, v)} for k, v in rows.items()}

    def export(self, directory=None, **kwargs):
        """Write the current view to files (:func:`.export.export_view`); returns the folder."""
        return export_view(self, directory, **kwargs)

    def _export_clicked(self) -> None:
        try:
            out = self.export()
        except (NumalabValueError, OSError) as exc:
            self.status.value = f'<span style="color:#a00">export failed: {html.escape(str(exc))}</span>'
            return
        self.exported = out
        self.status.value = (f'exported to <code class="numalab-exported">{html.escape(str(out))}</code> '
                             f'(figure.pdf/.svg/.png, view.json, data.nc)')

    def stage_label(self, stage, params) -> str:
        """What a preliminary answer is made of (``stage``: an item of :meth:`stages`)."""
        return f"stage {stage}"

    def summary_title(self, params) -> str:
        return ", ".join(f"{k}={v}" for k, v in params.items())

    def _on_change(self, _change) -> None:
        if self.live:
            self.submit()
        else:
            self.update()

    # ---- live mode: one worker thread, the newest request wins
    def submit(self) -> None:
        """Queue an update for the current controls (live mode); returns at once."""
        with self._cv:
            self._gen += 1
            self._pending = (self._gen, self.params, time.perf_counter())
            self._busy = True
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name=f"numalab-{type(self).__name__}", daemon=True)
                self._worker.start()
            self._cv.notify_all()
        self.status.value = "running ..."

    def _work(self) -> None:
        last = None
        while True:
            with self._cv:
                if self._pending is None and last is not None and self.prefetch_enabled:
                    self._busy = False
                    self._cv.notify_all()
                    params, last = last, None
                    self._cv.release()
                    try:
                        self._prefetch(params)
                    except Exception:  # computing ahead is best effort: never let it end the worker  # noqa: BLE001
                        pass
                    finally:
                        self._cv.acquire()
                while self._pending is None:
                    self._busy = False
                    self._cv.notify_all()
                    if not self._cv.wait(timeout=60):
                        if self._pending is None:
                            self._worker = None
                            return
                gen, params, t0 = self._pending
                self._pending = None
                self._busy = True
            try:
                self._run(gen, params, t0=t0, draw_all=True)
                last = params if self.error is None and self._gen == gen else None
            except Exception as exc:  # pragma: no cover - never leave the worker dead silently
                self._refuse(f"Unexpected error: {type(exc).__name__}: {exc}")
                self._mark_shown(gen)

    # ---- idle time: compute ahead the first answers of the likely next views
    #: in live mode, use idle time to compute the first answers of neighbouring views
    prefetch_enabled = True

    def neighbours(self, params: dict) -> list[dict]:
        """Views a person is likely to ask for next (their first answers are computed ahead)."""
        return []

    def _prefetch(self, params: dict) -> None:
        for nxt in self.neighbours(params):
            if self._pending is not None:
                return  # a real request waits: it goes first
            try:
                if self.validate(nxt) is None:
                    stage = self.stages(nxt)[0]
                    self._running = self._gen  # a new change supersedes the prefetch at its next chunk
                    self._quiet = True
                    self.compute(nxt, stage)
            except (_Superseded, NumalabValueError):
                return
            finally:
                self._quiet = False
        self.prefetched = getattr(self, "prefetched", 0) + 1

    def _option_neighbours(self, params: dict, name: str, width: int = 1) -> list[dict]:
        options = list(self.controls[name].options)
        options = [o[1] if isinstance(o, tuple) else o for o in options]
        try:
            i = options.index(params[name])
        except ValueError:
            return []
        near = [options[j] for k in range(1, width + 1) for j in (i + k, i - k) if 0 <= j < len(options)]
        return [dict(params, **{name: v}) for v in near]

    def wait(self, timeout: float = 120.0) -> bool:
        """Block until no update is queued or running (live mode); True if idle in time."""
        end = time.monotonic() + timeout
        with self._cv:
            while self._busy:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(timeout=left)
        return True

    def wait_first(self, timeout: float = 120.0) -> bool:
        """Block until the newest request has an answer on screen (preliminary or final, or a
        refusal), or nothing runs; True if so in time."""
        end = time.monotonic() + timeout
        with self._cv:
            while self._busy and self._shown_gen < self._gen:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(timeout=left)
        return True

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
        self._on_change(None)
        return self


_HISTORY_TIP = ("NR_ACCESS_PID_HIST: how many pids_active[] windows vma_is_accessed() ORs before it lets "
                "the scanning thread scan a VMA ('profile' = the profile's own: 2 in mainline, 4 in the "
                "RFCs); adaptive:<rule> lets numalab.adaptive choose it per VMA or mm while running")
_PROFILE_TIP = ("kernel rule set of vma_is_accessed() / task_numa_work(): v6.4 (PID filter), v6.7 "
                "(rotation before the test, vma_pids_forced), v6.8, v6.12 (starvation horizon), the "
                "2023 RFC patches 1-6 and the 2024 RFCs")


class PidHashExplorer(Explorer):
    """How many distinct ``pids_active`` bits do T threads with consecutive TIDs set?"""

    title = "Access-PID hash: hash_32(tid, 6 | 7)"
    tooltips = {
        "threads": "threads (consecutive TIDs) that take a hinting fault in the VMA; each sets bit "
                   "hash_32(tid, ilog2(BITS_PER_LONG)) of pids_active[] (vma_set_access_pid_bit())",
        "width": "bits per pids_active window: 64 (one unsigned long, mainline) or 128 (RFC 2024 PATCH 2, "
                 "NR_PID_ARRAY 2, hash_32(tid, 7))",
        "first_tid": "TID of the first thread (the main thread's current->pid); pthread_create() hands "
                     "the next threads consecutive TIDs",
    }

    def __init__(self, threads: int = 16, width: int = 64, first_tid: int = 4100, *, live=None):
        import ipywidgets as w

        me = type(self).__name__
        super().__init__({
            "threads": w.IntSlider(value=_int(me, "threads", threads, 1, 256), min=1, max=256, description="threads",
                                   continuous_update=False),
            "width": w.Dropdown(options=[64, 128], value=_option(me, "width", width, [64, 128]), description="map bits"),
            "first_tid": w.BoundedIntText(value=_int(me, "first_tid", first_tid, 1, 4194303), min=1, max=4194303,
                                          description="first tid"),
        }, live=live)

    def compute(self, params, stage=None):
        key = (params["threads"], params["width"], params["first_tid"])
        return self.cached(key, lambda: pid_hash_summary(*key))

    def render(self, result, params):
        return result, pid_hash_figure(params["threads"], params["width"], params["first_tid"])


class DecisionMatrixExplorer(Explorer):
    """Step through scan passes of a small process and watch the PID windows rotate.

    Controls: profile, history N, threads, access pattern, ``rotation`` (passes between window
    rotations), ``scan pass`` and seed.

    ``profile`` may be any policy -- a text or a :class:`numalab.policy.Policy`, e.g. one with a
    rule of your own (``Policy(history=4, rules=[..., my_rule])``); it and the ``policies``
    given join the profile menu under their names; ``scan_pass`` is the pass shown first. The
    replay (:func:`decision_passes`) is
    computed once per (profile, N, threads, pattern, rotation period, seed); moving the
    ``pass`` slider only redraws."""

    title = "Scan filter, pass by pass"
    tooltips = {
        "profile": _PROFILE_TIP,
        "history": _HISTORY_TIP,
        "threads": "threads of the small process; each has its own 8 MiB stack VMA and shares the buffer VMA",
        "pattern": "disjoint: each thread keeps to its own stack and the shared buffer; phase-change: halfway "
                   "through, every thread moves on to its neighbour's stack",
        "rotate_every": "scan passes between window rotations (pids_active[0] = pids_active[1]; "
                        "pids_active[1] = 0): VMA_PID_RESET_PERIOD = 4 * sysctl_numa_balancing_scan_delay, "
                        "4 passes at the 1 s minimum scan period",
        "pass": "mm->numa_scan_seq of the pass shown (moving it only redraws)",
        "seed": "numpy Generator seed of the threads' accesses",
    }

    def __init__(self, profile="6.12", history="profile", threads: int = 4, passes: int = 12,
                 pattern: str = "disjoint", rotate_every: int = 4, seed: int = 0, *, scan_pass: int = 0,
                 policies=(), live=None):
        import ipywidgets as w

        from ..policy import Policy

        self.passes = check_int("passes", passes, lo=1, hi=200)
        own = [Policy.parse(p) for p in (profile, *policies) if not (isinstance(p, str) and p in Policy.profiles())]
        self._policies = {p.name: p for p in own}  # menu name -> the policy (user rules and all)
        value = profile if isinstance(profile, str) and profile in Policy.profiles() else Policy.parse(profile).name
        super().__init__({
            "profile": w.Dropdown(options=[*self._policies, *Policy.profiles()], value=value, description="profile"),
            "history": w.Dropdown(options=["profile", 1, 2, 3, 4, 6, 8], value=history, description="history N"),
            "threads": w.IntSlider(value=threads, min=1, max=16, description="threads", continuous_update=False),
            "pattern": w.Dropdown(options=list(PATTERNS), value=pattern, description="access"),
            "rotate_every": w.IntSlider(value=rotate_every, min=1, max=8, description="rotation",
                                        continuous_update=False),
            "pass": w.IntSlider(value=check_int("scan_pass", scan_pass, lo=0, hi=self.passes - 1), min=0,
                                max=self.passes - 1, description="scan pass", continuous_update=True),
            "seed": w.BoundedIntText(value=seed, min=0, max=2**31 - 1, description="seed"),
        }, live=live)

    def compute(self, params, stage=None):
        key = (params["profile"], params["history"], params["threads"], params["pattern"],
               params["rotate_every"], params["seed"])
        return self.cached(key, lambda: decision_passes(
            self._policies.get(params["profile"], params["profile"]), history=params["history"],
            threads=params["threads"], passes=self.passes,
            rotate_every=params["rotate_every"], pattern=params["pattern"], seed=params["seed"]))

    def render(self, ds, params):
        return decision_summary(ds, params["pass"]), decision_figure(ds, params["pass"])


class FutexExplorer(Explorer):
    """perf bench futex hash: ops/s per thread vs hash buckets for one kernel mode.

    One curve (every bucket count of :data:`FUTEX_BUCKETS`) is solved per (mode, threads,
    nodes, topology, seed) and cached: changing ``buckets`` highlights another point of a curve
    already computed; changing ``threads`` computes one new curve per seed -- seed 0 first (the
    first answer), the other seeds after."""

    title = "Futex hash buckets (perf bench futex hash)"
    tooltips = {
        "mode": "classic: one global futex_queues[] hash (<= v6.15); numa: FUTEX2_NUMA, one table per node "
                "(futex_queues[node][hash & futex_hashmask]); private: the process's own hash "
                "(v6.16, prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS, n))",
        "buckets": "hash buckets: futex_hashmask + 1 of the global/per-node table, or the private hash's "
                   "slots (a power of two)",
        "threads": "perf bench futex hash -t: worker threads, each locking its own futexes",
        "nodes": "NUMA nodes of the machine (num_possible_nodes()); another value than the preset's is a "
                 "what-if machine with that many nodes of the preset's CPUs per node",
        "seeds": "independent runs; the first answer uses seed 0, the others refine it",
    }

    def __init__(self, mode: str = "private", buckets: int = 256, threads: int = 16, nodes=None,
                 topology: str = "2s-128", seeds: int = 2, *, live=None):
        import ipywidgets as w

        from .. import futex
        from ..topology import Topology

        me = type(self).__name__
        self.topology = topology
        try:
            self._preset = Topology.coerce(topology)  # a preset or a topology file
        except NumalabValueError as exc:
            raise NumalabValueError(f"{me}: topology: {exc}") from None
        self._preset.uniform("cpus_per_node")          # the futex model: one kind of node
        nodes = self._preset.nodes if nodes is None else nodes
        node_options = sorted({1, 2, 4, 8, self._preset.nodes})
        ncpus = self._preset.ncpus
        super().__init__({
            "mode": w.Dropdown(options=list(futex.MODES), value=_option(me, "mode", mode, futex.MODES),
                               description="mode"),
            "buckets": w.Dropdown(options=list(FUTEX_BUCKETS), value=_option(me, "buckets", buckets, FUTEX_BUCKETS),
                                  description="buckets"),
            "threads": w.IntSlider(value=_int(me, "threads", threads, 1, ncpus), min=1, max=ncpus,
                                   description="threads", continuous_update=False),
            "nodes": w.Dropdown(options=node_options, value=_option(me, "nodes", nodes, node_options),
                                description="nodes"),
            "seeds": w.IntSlider(value=_int(me, "seeds", seeds, 1, 8), min=1, max=8, description="seeds",
                                 continuous_update=False),
        }, live=live)

    def validate(self, params):
        cpus = params["nodes"] * self._preset.cpus_per_node
        if params["threads"] > cpus:
            return (f"{params['threads']} threads need {params['threads']} CPUs, but {self.topology} with "
                    f"{params['nodes']} node(s) of {self._preset.cpus_per_node} CPUs has only {cpus}: "
                    f"lower threads to {cpus} or choose more nodes.")
        return None

    def explain(self, exc, params):  # pragma: no cover - validate() catches the known cases
        return "The futex model cannot run this combination: " + str(exc).split("; allowed:")[0] + "."

    def stages(self, params):
        n = params["seeds"]
        base = (params["mode"], params["threads"], params["nodes"], self.topology)
        if all(base + (s,) in self.cache for s in range(n)):
            return [n]  # nothing to compute: draw the final answer at once
        if base + (0,) not in self.cache:
            return ["coarse", n]  # every other bucket count of seed 0 first
        return [1, n]

    def stage_label(self, stage, params):
        return "seed 0, every other bucket count" if stage == "coarse" else "seed 0"

    def neighbours(self, params):
        # the other kernel modes, then the thread counts a slider step away
        modes = [dict(params, mode=m) for m in self.controls["mode"].options if m != params["mode"]]
        near = [dict(params, threads=t) for t in (params["threads"] * 2, params["threads"] // 2)
                if 1 <= t <= self.controls["threads"].max]
        return modes + near

    def _coarse(self, params):
        buckets = sorted(set(FUTEX_BUCKETS[::2]) | {params["buckets"]})
        key = (params["mode"], params["threads"], params["nodes"], self.topology, "coarse", tuple(buckets))
        if key not in self.cache:
            self.cache[key] = futex_run(params["mode"], buckets, params["threads"], params["nodes"],
                                        topology=self.topology, seeds=[0])
        return self.cache[key]

    def _curve(self, base, s):
        key = base + (s,)
        if key not in self.cache:
            self.cache[key] = futex_run(base[0], list(FUTEX_BUCKETS), base[1], base[2],
                                        topology=self.topology, seeds=[s])
            self.runs += len(FUTEX_BUCKETS)
        return self.cache[key]

    def compute(self, params, stage=None):
        if stage == "coarse":
            self._progress(0, 1, "seed 0 (coarse):")
            ds = self._coarse(params)
            self._progress(1, 1)
            return ds
        n = params["seeds"] if stage is None else stage
        base = (params["mode"], params["threads"], params["nodes"], self.topology)
        missing = [s for s in range(n) if base + (s,) not in self.cache]
        for i, s in enumerate(missing):
            self.check_superseded()
            self._progress(i, len(missing), f"seed {s}:")
            self._curve(base, s)
        self._progress(1, 1)
        curves = [self.cache[base + (s,)] for s in range(n)]
        return curves[0] if n == 1 else xr.concat(curves, dim="seed")

    def notes(self, ds, params):
        if params["nodes"] != self._preset.nodes:
            return [f"{self.topology} has {self._preset.nodes} nodes; nodes = {params['nodes']} models a what-if "
                    f"machine of {params['nodes']} nodes x {self._preset.cpus_per_node} CPUs "
                    f"({params['nodes'] * self._preset.cpus_per_node} CPUs), not the preset re-split."]
        return []

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

    Runs are cached per (workload, topology, profile, N, threads, seed) and computed in batches
    of seeds (one engine call per policy and chunk): raising ``seeds`` from 2 to 3 runs one more
    seed of each policy; changing N runs only the new policy. In live mode the first answer comes
    from seed 0 (one engine call per new policy, about half the time of 8 seeds), shown as
    preliminary, then the other seeds refine it, at most 4 per engine call.

    In live mode the engine calls run on a :class:`.pool.SeedPool` of worker processes (one per
    CPU, ``workers=`` to choose; none with one CPU), started when the explorer is built: each new
    policy's seed 0 runs on a core of its own, the other seeds are queued behind them at once, and
    a newer knob change cancels the calls it does not need mid-run. The numbers are those of
    :func:`history_run` in this process, whichever pool and batch a seed ran in."""

    title = "PID-history length (numalab.simulate)"
    #: seeds of the first answer, and seeds per engine call after it
    first_seeds = 1
    chunk = 4
    #: seeds per engine call on the pool (a newer change cancels a call mid-run, so chunks can be long)
    pool_chunk = 8
    #: let idle workers build the workload layouts of the views a topology / workload change away
    #: (0.2-0.4 s each at full size, otherwise paid by that change's first answer)
    layouts_ahead = True
    tooltips = {
        "history": _HISTORY_TIP,
        "workload": "autonuma-benchmark test (mmtests autonumabench): numa01 = 2 processes sharing one buffer; "
                    "numa01_THREAD_ALLOC (NUMA01_THREADLOCAL) = each thread its own slice of it; numa02 = one "
                    "process, per-thread slices; _SMT = half the threads",
        "topology": "machine preset (nl.Topology.presets()): nodes, CPUs, SLIT distances, bandwidths",
        "profile": _PROFILE_TIP,
        "threads": "threads per process ('default' = the benchmark's own: one per CPU)",
        "seeds": "runs per policy (mmtests iterations); seed s draws the same random stream under both policies, "
                 "so the per-seed difference is paired",
    }

    def __init__(self, workload: str = "numa01_THREAD_ALLOC", topology: str = "2s-128", profile: str = "6.12",
                 history=8, threads="default", seeds: int = 8, *, workload_options=None, live=None,
                 workers=None, **engine_options):
        import ipywidgets as w

        from ..policy import Policy
        from ..topology import Topology, check_topology
        from ..workloads import workloads

        # full size by default; pass workload_options=HISTORY_WORKLOAD_OPTIONS (512 MiB) for quick views
        self.workload_options = dict(workload_options or {})
        self.engine_options = engine_options
        options = ["profile", 1, 2, 3, 4, 6, 8, 12, 16] + [f"adaptive:{r}" for r in adaptive_rules()]
        names = [n for n in workloads() if n.startswith("numa0") and "BIND" not in n] or workloads()
        me = type(self).__name__
        # a topology file joins the presets (checked, named by its path and digest: a changed file
        # is a new machine); it is labelled by the topology's name
        try:
            topology = check_topology("topology", topology)
        except NumalabValueError as exc:            # name the explorer, as every control does
            raise NumalabValueError(f"{me}: {exc}") from None
        self._topologies = [*Topology.presets(), *([topology] if topology not in Topology.presets() else [])]
        labels = [(t if t in Topology.presets() else Topology.coerce(t).name, t) for t in self._topologies]
        thread_options = ["default", 2, 4, 8, 16, 32, 64]
        values = dict(history=_option(me, "history", history, options), workload=_option(me, "workload", workload, names),
                      topology=topology,
                      profile=_option(me, "profile", profile, Policy.profiles()),
                      threads=_option(me, "threads", "default" if threads is None else threads, thread_options),
                      seeds=_int(me, "seeds", seeds, 1, 8))
        live_now = _in_kernel() if live is None else bool(live)
        size = pool_size(workers) if (workers is not None or live_now) else 0
        self.pool = SeedPool(self._store, size).start() if size else None
        super().__init__({
            "history": w.Dropdown(options=options, value=values["history"], description="history N"),
            "workload": w.Dropdown(options=names, value=values["workload"], description="workload"),
            "topology": w.Dropdown(options=labels, value=values["topology"], description="topology"),
            "profile": w.Dropdown(options=Policy.profiles(), value=values["profile"], description="profile"),
            "threads": w.Dropdown(options=thread_options, value=values["threads"], description="threads"),
            "seeds": w.IntSlider(value=values["seeds"], min=1, max=8, description="seeds", continuous_update=False),
        }, live=live)

    def validate(self, params):
        from ..topology import Topology

        t = params["threads"]
        if t not in (None, "default"):
            topo = Topology.coerce(params["topology"])
            if int(t) > topo.ncpus:
                return (f"{t} threads per process is more than {params['topology']}'s {topo.ncpus} CPUs; "
                        f"choose at most {topo.ncpus} or 'default'.")
        return None

    def explain(self, exc, params):
        return ("The model cannot run this combination (" + ", ".join(f"{k} = {v}" for k, v in params.items())
                + "): " + str(exc).split("; allowed:")[0] + ".")

    def _choices(self, params):
        from ..policy import Policy

        choices = ["profile"]
        if Policy.parse(params["profile"], history=params["history"]) != Policy.parse(params["profile"]):
            choices.append(params["history"])  # N equal to the profile's own: nothing to compare
        return choices

    def stages(self, params):
        n = params["seeds"]
        base = (params["workload"], params["topology"], params["profile"], params["threads"])
        cached = all(base + (h, s) in self.cache for h in self._choices(params) for s in range(n))
        return [self.first_seeds, n] if n > self.first_seeds and not cached else [n]

    def stage_label(self, stage, params):
        return f"{stage} seed{'s' if stage > 1 else ''} of {params['seeds']}"

    def neighbours(self, params):
        # the first control: the history lengths next to the one shown
        return [p for p in self._option_neighbours(params, "history", 2) if not str(p["history"]).startswith("adaptive")]

    def compute(self, params, stage=None):
        n = params["seeds"] if stage is None else stage
        choices = self._choices(params)
        base = (params["workload"], params["topology"], params["profile"], params["threads"])
        if self.pool is None:
            self._compute_here(params, choices, base, n)
        else:
            self._compute_pooled(params, choices, base, n)
        # runs of different seeds end at different times: pad the time series (outer join); the
        # joined Dataset is kept too, so going back to a view costs only its figure
        out = {}
        for h in choices:
            key = ("joined",) + base + (h, n)
            if key not in self.cache:
                self.cache[key] = _concat([self.cache[base + (h, s)] for s in range(n)], "seed")
            out[h] = self.cache[key]
        return out

    def _compute_here(self, params, choices, base, n):
        """The missing runs in this process, one engine call per policy and chunk of seeds."""
        todo = [(h, [s for s in range(n) if base + (h, s) not in self.cache]) for h in choices]
        todo = [(h, m) for h, m in todo if m]
        total = sum(len(m) for _, m in todo)
        done = 0
        for h, missing in todo:
            for i in range(0, len(missing), self.chunk):
                self.check_superseded()
                part = missing[i:i + self.chunk]
                label = f"{part[0]}" if len(part) == 1 else f"{part[0]}-{part[-1]}"
                self._progress(done, total, f"N={h} seed{'s' if len(part) > 1 else ''} {label}:")
                ds = history_run(params["workload"], params["topology"], params["profile"], h, params["threads"],
                                 part, workload_options=self.workload_options, **self.engine_options)
                for s in part:
                    self.cache[base + (h, s)] = ds.sel(seed=[s])
                self.runs += len(part)
                done += len(part)
        self._progress(1, 1)

    def _compute_pooled(self, params, choices, base, n):
        """Run the missing seeds ``0..n-1`` of each policy on the pool and wait for them: one seed
        per engine call for a preliminary stage (side by side on the cores), else the seeds of
        each policy in as few calls as keep every core busy. Nothing of a later stage is queued
        yet: the preliminary answer has the cores to itself, then its figure the parent's.
        Runs already in flight that this view needs (now or for its final answer) are kept, not
        repeated; the others are cancelled."""
        running = {k for k in self.pool.running_keys()
                   if k[:4] == base and k[4] in choices and min(k[5]) < max(n, params["seeds"])}
        tasks = [(k, None, None, None) for k in running]
        tasks += self._pool_tasks(params, choices, base, n, running, single=n < params["seeds"])
        self.pool.plan(tasks)
        label = f"{'preliminary, ' if n < params['seeds'] else ''}{n} seed{'s' if n > 1 else ''} on {self.pool.size} cores:"
        need = [t[0] for t in tasks if min(t[0][5]) < n]
        self.pool.wait(need, check=self.check_superseded, on_progress=lambda d, t: self._progress(d, t, label))
        if n == params["seeds"] and not self._quiet and self.layouts_ahead:
            self.pool.build_ahead(self._layouts_near(params))

    def _pool_tasks(self, params, choices, base, n, running=(), *, single=False):
        """Pool tasks for the seeds ``0..n-1`` of each policy that are neither cached nor
        ``running``: one seed per task if ``single``, else as few tasks as keep every core busy."""
        covered = {(k[4], s) for k in running for s in k[5]}
        todo = {h: [s for s in range(n) if base + (h, s) not in self.cache and (h, s) not in covered]
                for h in choices}
        size = 1 if single else -(-sum(map(len, todo.values())) // self.pool.size)
        size = max(1, min(self.pool_chunk, size))
        kwargs = dict(workload_options=self.workload_options, **self.engine_options)
        return [(base + (h, tuple(r[i:i + size])), history_run,
                 (params["workload"], params["topology"], params["profile"], h, params["threads"], r[i:i + size]), kwargs)
                for h, r in todo.items() for i in range(0, len(r), size)]

    def _prefetch(self, params):
        """Computing ahead on the pool: every neighbour's first answer planned at once, so the
        cores share them (in this process: one after the other, as the base class does)."""
        if self.pool is None:
            return super()._prefetch(params)
        tasks = []
        for nxt in self.neighbours(params):
            if self.validate(nxt) is None:
                base = (nxt["workload"], nxt["topology"], nxt["profile"], nxt["threads"])
                tasks += self._pool_tasks(nxt, self._choices(nxt), base, self.stages(nxt)[0], single=True)
        if self._pending is not None:
            return None
        self._running, self._quiet = self._gen, True  # a new change supersedes this at once
        try:
            self.pool.plan(tasks)
            self.pool.wait([t[0] for t in tasks], check=self.check_superseded)
        except (_Superseded, NumalabValueError):
            return None
        finally:
            self._quiet = False
        self.prefetched = getattr(self, "prefetched", 0) + 1
        return None

    def _layouts_near(self, params):
        """The workload layouts of the views one ``topology`` or ``workload`` change away."""
        over = dict(self.workload_options)
        if params["threads"] not in (None, "default"):
            over["threads"] = int(params["threads"])
        over = tuple(sorted(over.items()))
        near = [(params["workload"], t, over) for t in self._topologies if t != params["topology"]]
        return near + [(w, params["topology"], over) for w in self.controls["workload"].options
                       if w != params["workload"]]

    def _store(self, key, ds):
        """A pool task's result: one engine call of policy ``key[4]`` over seeds ``key[5]``."""
        base, h = key[:4], key[4]
        for s in key[5]:
            self.cache[base + (h, s)] = ds.sel(seed=[s])
        self.runs += len(key[5])

    def worker_cpu(self):
        return self.pool.cpu_seconds if self.pool is not None else 0.0

    def cancel_work(self):
        if self.pool is not None:
            self.pool.plan([])

    def notes(self, result, params):
        from ..interpret import STARVATION, starvation_evidence, starved

        return [f"{p}: {starvation_evidence(ds, p)} -- {STARVATION}" for ds in result.values() for p in starved(ds)]

    def to_dataset(self, result):
        """The shown policies along ``policy`` (as the figure draws them); attrs ``view_keys``
        holds the history choices (JSON) so :meth:`from_dataset` restores the dict."""
        import json

        return _concat(list(result.values()), "policy").assign_attrs(view_keys=json.dumps(list(result)))

    @classmethod
    def from_dataset(cls, ds):
        import json

        return {k: ds.isel(policy=[i]) for i, k in enumerate(json.loads(ds.attrs["view_keys"]))}

    def render(self, result, params):
        from matplotlib.figure import Figure

        names = [str(ds["policy"].values[0]) if "policy" in ds.coords else str(h) for h, ds in result.items()]
        per = [history_summary(ds) for ds in result.values()]
        rows = {k: [p.get(k, float("nan")) for p in per] for k in per[0]}
        merged = _concat(list(result.values()), "policy")
        if len(names) == 2 and merged.sizes.get("seed", 1) > 1:
            from ..stats import paired_change

            eff = paired_change(merged["elsp"].assign_coords(policy=names), "policy")
            m, lo, hi, runs = (float(eff[k].values[1]) for k in ("mean", "lo", "hi", "runs"))
            mark = " *" if bool(eff["resolved"].values[1]) else ""
            rows["elsp %change vs profile, per seed (95% CI; * excludes 0)"] = [
                "baseline", f"{m:+.2f}% [{lo:+.2f}, {hi:+.2f}]{mark}" if np.isfinite(lo) else f"{m:+.2f}% (no interval yet)"]
            rows["runs per kernel a real machine needs to see it (95%, power 0.8)"] = [
                "", f"{runs:,.0f}" if np.isfinite(runs) else "none: no change" if m == 0 else "more than 100,000"]
        with plots.style():
            fig = Figure(figsize=(11.0, 3.6))
            left, right = fig.subplots(1, 2, width_ratios=[1, 1.4])
        plots.samples(merged, ax=left, var="elsp")
        if any(str(v).startswith("skip_") for v in merged.data_vars):
            plots.skip_reasons(merged, ax=right)
        else:  # pragma: no cover - every engine Dataset has skip_<reason>
            right.set_visible(False)
        return rows, fig, names

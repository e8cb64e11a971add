"""The ipywidgets explorers: controls bound to the pure functions of :mod:`.compute` and the
figures of :mod:`.display`, with a per-input cache and a progress bar."""

from __future__ import annotations

import html

import xarray as xr

from .. import plots
from ..errors import NumalabValueError, check_choice, check_int
from .compute import (
    FUTEX_BUCKETS,
    HISTORY_WORKLOAD_OPTIONS,
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
from .display import decision_figure, figure_png, pid_hash_figure, summary_html


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

        from ..policy import Policy

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
        return self.cached(key, lambda: decision_passes(
            params["profile"], history=params["history"], threads=params["threads"], passes=self.passes,
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

        from .. import futex

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

        from ..policy import Policy
        from ..topology import Topology
        from ..workloads import workloads

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
        from ..policy import Policy

        choices = ["profile"]
        if Policy.parse(params["profile"], history=params["history"]) != Policy.parse(params["profile"]):
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

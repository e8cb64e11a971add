"""ipywidgets explorers: turn a knob, see what the kernel would do.

Each explorer is a thin binding of controls to **pure functions** (:mod:`.compute`, tested
without a browser): a ``*_run``/``*_passes`` function computes a Dataset from plain
values, a ``*_summary`` function turns it into the numbers shown, and a ``numalab.plots``
function draws the figure (:mod:`.display`). The explorer only

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
computed result and ``explorer.runs`` how many points were computed (cache misses). Its
"export" button (``explorer.export()``) writes the view's figure (PDF, SVG, PNG), parameters
(JSON) and Dataset (NetCDF); ``regenerate(folder)`` redraws the figure from them and
``reopen(folder)`` builds the explorer again at that view.

Modules: :mod:`.compute` (the pure functions: Datasets and summary numbers), :mod:`.display`
(figures, PNG bytes and the HTML summary table), :mod:`.explorers` (the ipywidgets classes),
:mod:`.snapshot` (the static snapshot a saved notebook shows), :mod:`.export` (views as files).
"""

from __future__ import annotations

from .compute import (
    FUTEX_BUCKETS,
    HISTORY_WORKLOAD_OPTIONS,
    PATTERNS,
    adaptive_available,
    adaptive_rules,
    decision_passes,
    decision_summary,
    futex_run,
    futex_summary,
    history_policy,
    history_run,
    history_summary,
    pid_hash_summary,
)
from .display import _fmt, decision_figure, figure_png, pid_hash_figure, summary_html
from .explorers import DecisionMatrixExplorer, Explorer, FutexExplorer, HistoryExplorer, PidHashExplorer
from .export import export_view, regenerate, reopen

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
    "export_view",
    "regenerate",
    "reopen",
]

"""The scan period, compiled: :mod:`numalab.engine.scan_period` for one replica.

Kernel functions (spec §3.5): ``task_scan_min`` / ``task_scan_start`` / ``task_scan_max`` and
``update_task_scan_period``. Periods in ms (int64), as in the numpy module.
"""

from __future__ import annotations

from ._nb import jit

__all__ = ["task_scan_min"]


@jit
def task_scan_min(L, m):
    """task_scan_min (ms) of a thread of mm ``m``: at most ~10 scan windows per second (1000 ms
    / (2560 MB / scan_size)), at least the sysctl minimum spread over the mm's scan windows."""
    windows = 2560 // L.scan_size_mb if L.scan_size_mb < 2560 else 1
    floor = 1000 // windows
    return max(floor, L.scan_period_min_ms // L.nr_scan_windows[m])

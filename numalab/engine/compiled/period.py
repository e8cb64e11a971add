"""The scan period, compiled: :mod:`numalab.engine.scan_period` for one replica.

Kernel functions (spec §3.5): ``task_scan_min`` / ``task_scan_start`` / ``task_scan_max`` (the
sysctl bounds scaled by ``task_nr_scan_windows`` and, for a task in a numa group, by the group's
size and shared / private fault ratio) and ``update_task_scan_period``. Periods in ms (int64),
as in the numpy module. The group terms read the group sums of the scratch (``X.gm``,
``X.gsize`` of replica ``r``), which the caller keeps current (:func:`.groups.group_stats`),
as the numpy callers pass ``group_stats(b)``.
"""

from __future__ import annotations

import math

import numpy as np

from ._nb import inner, jit
from .numsum import psum

#: a helper of the batch's named tuples called only from compiled code: no CPython / cfunc
#: wrapper (unboxing a hundred fields is most of such a function's compile time)

__all__ = ["task_scan_min", "shared_scale", "task_scan_start", "task_scan_max", "update_task_scan_period"]


@inner
def task_scan_min(L, m):
    """task_scan_min (ms) of a thread of mm ``m``: at most ~10 scan windows per second (1000 ms
    / (2560 MB / scan_size)), at least the sysctl minimum spread over the mm's scan windows."""
    windows = 2560 // L.scan_size_mb if L.scan_size_mb < 2560 else 1
    floor = 1000 // windows
    return max(floor, L.scan_period_min_ms // L.nr_scan_windows[m])


@jit
def shared_scale(gid, gm, gsize, r, t, base):
    """scan_period.shared_scale for grouped task ``t``: ``base`` scaled by the group's size and
    its shared / (private + shared) fault ratio. numpy sums ``gm[r, g, :, p]`` of a fancy-indexed
    (n, N) copy over its last axis: :func:`.numsum.psum` over the nodes (pairwise at 8 nodes)."""
    g = gid[r, t]
    N = gm.shape[2]
    col = np.empty((2, N))                       # numpy's fancy-indexed rows are contiguous
    for n in range(N):
        col[0, n] = gm[r, g, n, 0]
        col[1, n] = gm[r, g, n, 1]
    s = math.floor(psum(col[0]))
    p = math.floor(psum(col[1]))
    return base * gsize[r, g] * (s + 1) // (p + s + 1)


@inner
def task_scan_start(L, S, X, r, t):
    """scan_period.task_scan_start (ms) of task ``t`` of replica ``r``."""
    smin = task_scan_min(L, L.thread_mm[t])
    if S.gid[r, t] < 0:
        return smin
    return max(smin, shared_scale(S.gid, X.gm, X.gsize, r, t, smin))


@inner
def task_scan_max(L, S, X, r, t):
    """scan_period.task_scan_max (ms) of task ``t`` of replica ``r``."""
    m = L.thread_mm[t]
    smin = task_scan_min(L, m)
    smax = L.scan_period_max_ms // L.nr_scan_windows[m]
    if S.gid[r, t] >= 0:
        smax = max(smax, shared_scale(S.gid, X.gm, X.gsize, r, t, smax))
    return max(smin, smax)


@inner
def update_task_scan_period(L, S, X, r, k, t, shared, private):
    """scan_period.update_task_scan_period for task ``t`` after its placement; ``shared`` /
    ``private`` the faults of the window just folded in (base pages; numpy holds them as exact
    floats, so integer arithmetic gives its values). Off with option ``scan_period_adapt``."""
    if not L.scan_period_adapt:
        return
    remote = S.numa_faults_locality[r, t, 0]
    local_ = S.numa_faults_locality[r, t, 1]
    failed = S.numa_faults_locality[r, t, 2]
    m = L.thread_mm[t]
    smin = task_scan_min(L, m)
    smax = S.numa_scan_period_max[r, t]
    per = S.numa_scan_period[r, t]
    slow = (local_ + shared == 0) or (failed > 0)
    if slow:
        # early return: double, numa_next_scan pushed (numpy's b.now is the step's start)
        new = min(smax, 2 * per)
    else:
        slot = -(-per // 10)
        lr = local_ * 10 // max(local_ + remote, 1)
        ps = private * 10 // max(private + shared, 1)
        if ps >= 7:
            diff = max(ps - 7, 1) * slot
        elif lr >= 7:
            diff = max(lr - 7, 1) * slot
        else:
            diff = -(7 - max(lr, ps)) * slot
        new = min(max(per + diff, smin), max(smin, smax))
    S.numa_scan_period[r, t] = new
    if slow:
        S.mm_next_scan[r, m] = X.times[k] + L.dt + new / 1000.0
    if not slow or not L.sticky_locality:
        # the sticky path keeps numa_faults_locality[] (option sticky_locality)
        S.numa_faults_locality[r, t, 0] = 0
        S.numa_faults_locality[r, t, 1] = 0
        S.numa_faults_locality[r, t, 2] = 0

"""The scan period: how often a task runs ``task_numa_work``.

Kernel functions modelled (spec §3.5): ``task_scan_min`` / ``task_scan_start`` /
``task_scan_max`` (the sysctl bounds scaled by ``task_nr_scan_windows`` and, for a task in a
numa group, by the group's size and private/shared fault ratio), and
``update_task_scan_period`` (after each placement: double the period when the last window saw
no local or shared faults or a failed migration, else step it by tenths toward more or less
scanning from the local and private fault ratios). Periods in ms.
"""

from __future__ import annotations

import numpy as np

from .state import flat

__all__ = ["task_scan_min", "task_scan_start", "task_scan_max", "update_task_scan_period"]


def task_scan_min(b, mm_of_t):
    """task_scan_min (ms) of threads whose mm is ``mm_of_t``: at most ~10 scan windows per
    second (1000 ms / (2560 MB / scan_size)), at least the sysctl minimum spread over the
    mm's scan windows."""
    o = b.o
    windows = 2560 // o.scan_size_mb if o.scan_size_mb < 2560 else 1
    floor = 1000 // windows
    return np.maximum(floor, o.scan_period_min_ms // b.lay.nr_scan_windows[mm_of_t])


def shared_scale(b, base, gm, size, sel):
    """``base`` scaled for a grouped task: by the group's size and its shared / (private +
    shared) fault ratio (tasks sharing memory scan it together, so each scans less often)."""
    r, t = sel
    g = b.groups.gid[r, t]
    s = np.floor(gm[r, g, :, 0].sum(axis=-1)).astype(np.int64)
    p = np.floor(gm[r, g, :, 1].sum(axis=-1)).astype(np.int64)
    return base * size[r, g] * (s + 1) // (p + s + 1)


def task_scan_start(b, sel, gm, size):
    """task_scan_start (ms) of tasks ``sel`` = (replicas, threads)."""
    r, t = sel
    smin = task_scan_min(b, b.lay.thread_mm[t])
    ing = b.groups.gid[r, t] >= 0
    if not np.count_nonzero(ing):
        return smin
    per = np.where(ing, shared_scale(b, smin, gm, size, sel), smin)
    return np.maximum(smin, per)


def task_scan_max(b, sel, gm, size):
    """task_scan_max (ms) of tasks ``sel`` = (replicas, threads)."""
    r, t = sel
    smin = task_scan_min(b, b.lay.thread_mm[t])
    nrw = b.lay.nr_scan_windows[b.lay.thread_mm[t]]
    smax = b.o.scan_period_max_ms // nrw
    ing = b.groups.gid[r, t] >= 0
    if np.count_nonzero(ing):
        smax = np.where(ing, np.maximum(smax, shared_scale(b, smax, gm, size, sel)), smax)
    return np.maximum(smin, smax)


def update_task_scan_period(b, r, t, shared, private, gm, gsize):
    """update_task_scan_period for tasks (r, t) after their placement; ``shared`` / ``private``
    the faults of the window just folded in (base pages). Off with option
    ``scan_period_adapt=False``: the period then keeps the value ``task_scan_start`` (or a
    cross-node move's reset) gave it, and numa_faults_locality[] is never cleared."""
    if not b.o.scan_period_adapt:
        return
    rt = r * b.lay.T + t                                  # flat (r, t): 1-D takes and puts
    loc = flat(b.numa.numa_faults_locality, 3)[rt]
    remote, local_, failed = loc[:, 0], loc[:, 1], loc[:, 2]
    mm = b.lay.thread_mm[t]
    smin = task_scan_min(b, mm)
    smax = b.numa.numa_scan_period_max.take(rt)
    per = b.numa.numa_scan_period.take(rt)
    slow = (local_ + shared == 0) | (failed > 0)
    # early return: double, numa_next_scan pushed, locality kept (sticky) or cleared (fix)
    doubled = np.minimum(smax, 2 * per)
    slot = -(-per // 10)
    lr = local_ * 10 // np.maximum(local_ + remote, 1)
    ps = private * 10 // np.maximum(private + shared, 1)
    diff = np.where(ps >= 7, np.maximum(ps - 7, 1) * slot,
                    np.where(lr >= 7, np.maximum(lr - 7, 1) * slot, -(7 - np.maximum(lr, ps)) * slot))
    # np.clip's bounds, lo <= hi (np.clip is defined as this and costs a Python wrapper more)
    adj = np.minimum(np.maximum(per + diff, smin), np.maximum(smin, smax))
    new = np.where(slow, doubled, adj).astype(np.int64)
    flat(b.numa.numa_scan_period)[rt] = new
    if np.count_nonzero(slow):
        flat(b.mm.numa_next_scan)[r[slow] * b.lay.M + mm[slow]] = b.now + b.dt + new[slow] / 1000.0
    clear = ~slow | (not b.o.sticky_locality)
    flat(b.numa.numa_faults_locality, 3)[rt[clear]] = 0

"""Numa groups: tasks that share memory are grouped, and placement then follows the group's
fault statistics.

Kernel functions modelled (spec §5.6): ``task_numa_group`` (a shared fault -- the faulting
task is not ``last_cpupid``'s -- creates the task's group if it has none and joins the group
of the task behind ``last_cpupid`` when that one is bigger, same mm), the group sums of
``numa_faults`` that ``task_numa_placement`` and the migrate filter read (``group_faults``,
``group_faults_cpu``), and ``numa_group->active_nodes`` (nodes with more than a third of the
busiest node's CPU faults).
"""

from __future__ import annotations

import numpy as np

__all__ = ["group_stats", "group_sums", "group_node_sums", "group_stats_rows", "active_nodes", "join_groups"]


def group_stats(b):
    """Group sums of member statistics: (R, T(gid), N, 2) mem and cpu, and sizes (R, T).
    Cached until fault statistics or group membership change."""
    if b.groups.stats is None:
        b.groups.stats = _group_stats(b)
    return b.groups.stats


def _group_stats(b):
    R, T, N = b.R, b.lay.T, b.lay.N
    gm, gc, size = group_sums(b, b.groups.gid, b.numa.faults_mem, b.numa.faults_cpu)
    return gm.reshape(R, T, N, 2), gc.reshape(R, T, N, 2), size


def group_sums(b, g, f_mem, f_cpu):
    """Per-group sums of the member statistics of the replicas of ``g`` (n, T): flat
    (n*T, 2N) mem and cpu, and the sizes (n, T). One bincount per array over (group,
    column) bins; each bin adds its members in thread order."""
    n, T = g.shape
    N2 = 2 * b.lay.N
    has = g >= 0
    flat = (np.arange(n)[:, None] * T + np.where(has, g, 0)).ravel()
    w = has.ravel().astype(float)
    key = (flat[:, None] * N2 + np.arange(N2)[None, :]).ravel()
    gm = np.bincount(key, weights=(f_mem.reshape(n * T, N2) * w[:, None]).ravel(), minlength=n * T * N2)
    gc = np.bincount(key, weights=(f_cpu.reshape(n * T, N2) * w[:, None]).ravel(), minlength=n * T * N2)
    size = np.bincount(flat, weights=w, minlength=n * T).reshape(n, T).astype(np.int64)
    return gm.reshape(n * T, N2), gc.reshape(n * T, N2), size


def group_node_sums(b, gm, gc):
    """``gm.sum(-1)``, ``gc.sum(-1)`` (R, T, N), cached for the current group_stats arrays."""
    c = b.groups.node_sums
    if c is None or c[0] is not gm or c[1] is not gc:
        c = b.groups.node_sums = (gm, gc, gm.sum(axis=-1), gc.sum(axis=-1))
    return c[2], c[3]


def group_stats_rows(b, rows):
    """group_stats after the fault statistics of replicas ``rows`` changed (membership
    unchanged): those rows are recomputed as :func:`_group_stats` does (same sums in the same
    order), into new arrays -- references to the old ones keep their values. The cached
    node sums follow row by row."""
    if b.groups.stats is None:
        return group_stats(b)
    gm0, gc0, size = b.groups.stats
    n, T, N = rows.size, b.lay.T, b.lay.N
    gm_r, gc_r, _ = group_sums(b, b.groups.gid[rows], b.numa.faults_mem[rows], b.numa.faults_cpu[rows])
    gm, gc = gm0.copy(), gc0.copy()
    gm[rows] = gm_r.reshape(n, T, N, 2)
    gc[rows] = gc_r.reshape(n, T, N, 2)
    c = b.groups.node_sums
    if c is not None and c[0] is gm0 and c[1] is gc0:
        sm, sc = c[2].copy(), c[3].copy()
        sm[rows] = gm[rows].sum(axis=-1)
        sc[rows] = gc[rows].sum(axis=-1)
        b.groups.node_sums = (gm, gc, sm, sc)
    b.groups.stats = (gm, gc, size)
    return b.groups.stats


def active_nodes(b, gc):
    """(R, T(gid), N) bool: ``numa_group->active_nodes`` -- nodes whose CPU faults exceed a
    third of the group's busiest node's (``NUMA_GROUP_ACTIVE`` = 3 in kernel terms)."""
    tot = gc.sum(axis=-1)                                                  # (R, G, N)
    mx = tot.max(axis=-1, keepdims=True)
    return 3 * tot > mx


def join_groups(b, sr, st_, lt, last8):
    """task_numa_group for the step's shared faults -- replica ``sr``, faulting thread ``st_``,
    the thread behind the folio's last_cpupid ``lt`` (-1: none) and its pid bits ``last8``: a
    task without a group creates its own; then it joins the last accessor's group when that
    one is bigger (ties: the lower gid), in the same mm, and last_cpupid's pid bits still name
    that task. The first qualifying fault of each task wins (simultaneous semantics)."""
    T = b.lay.T
    create = b.groups.gid[sr, st_] < 0
    if np.count_nonzero(create):
        b.groups.gid[sr[create], st_[create]] = st_[create]
        b.groups.stats = None
    gm, gc, gsize = group_stats(b)
    ok = lt >= 0
    lt0 = np.where(ok, lt, 0)
    lg = np.where(ok, b.groups.gid[sr, lt0], -1)
    my = b.groups.gid[sr, st_]
    same_mm = b.lay.thread_mm[lt0] == b.lay.thread_mm[st_]
    lgz = np.where(lg >= 0, lg, 0)
    bigger = (gsize[sr, my] < gsize[sr, lgz]) | ((gsize[sr, my] == gsize[sr, lgz]) & (my > lg))
    join = ok & (lg >= 0) & (lg != my) & same_mm & bigger & (b.tasks.pid8[sr, lt0] == last8)
    if np.count_nonzero(join):
        jr, jt, jg = sr[join], st_[join], lg[join]
        key = jr * T + jt
        _, first = np.unique(key, return_index=True)
        b.groups.gid[jr[first], jt[first]] = jg[first]
        np.add.at(b.counters.events["group_joins"], jr[first], 1)
        b.groups.stats = None

"""Numa groups, compiled: :mod:`numalab.engine.groups` for one replica.

Kernel functions (spec §5.6): the group sums of ``numa_faults`` (``group_faults``,
``group_faults_cpu``) that placement, the scan period and the migrate filter read,
``numa_group->active_nodes`` and ``task_numa_group`` (create, then join the bigger group).

The numpy engine caches the sums (``b.groups.stats``) and recomputes them when fault
statistics or membership change (after joins, ``group_stats_rows`` after placement); a cached
value always equals a fresh computation, so here they are recomputed into the scratch
(``X.gm``, ``X.gc``, ``X.gsize`` of replica ``r``) at each moment numpy reads them.
"""

from __future__ import annotations

import numpy as np

from ...counters import COUNTER_NAMES
from ._nb import inner, jit

__all__ = ["group_stats", "node_sum", "active_node", "join_groups"]

C_GROUP_JOINS = COUNTER_NAMES.index("group_joins")

# columns of handle.handle_faults' per-fault record that join_groups reads
F_T, F_PRIV, F_LAST8, F_LTASK = 0, 5, 6, 7

#: a helper of the batch's named tuples called only from compiled code: no CPython / cfunc
#: wrapper (unboxing a hundred fields is most of such a function's compile time)


@jit
def group_stats(gid, faults_mem, faults_cpu, gm, gc, gsize, r):
    """groups.group_stats of replica ``r`` (``gid`` S.gid, ``faults_*`` S's, into ``gm``, ``gc``
    X.gm / X.gc (R, T(gid), N, 2) and ``gsize`` X.gsize): np.bincount's sums, each bin from 0.0
    adding its members in thread order (a non-member adds 0.0 to group 0's bins: no change)."""
    T, N = gid.shape[1], gm.shape[2]
    for g in range(T):
        gsize[r, g] = 0
        for n in range(N):
            for p in range(2):
                gm[r, g, n, p] = 0.0
                gc[r, g, n, p] = 0.0
    for t in range(T):
        g = gid[r, t]
        if g < 0:
            continue
        gsize[r, g] += 1
        for n in range(N):
            for p in range(2):
                gm[r, g, n, p] += faults_mem[r, t, n, p]
                gc[r, g, n, p] += faults_cpu[r, t, n, p]


@jit
def node_sum(a, r, i, n):
    """``a[r, i, n].sum()`` of an (R, T, N, 2) array: the ``x.sum(axis=-1)`` over one node's
    (shared, private) pair of groups.group_node_sums, active_nodes and placement's scores --
    :func:`.numsum.psum` of two elements, written out (no array view to type)."""
    return 0.0 + ((0.0 + a[r, i, n, 0]) + a[r, i, n, 1])


@jit
def active_node(gc, r, g, n):
    """groups.active_nodes for group ``g`` of replica ``r`` (``gc`` X.gc): (is node ``n``
    active, how many nodes are) -- CPU faults above a third of the busiest node's (np.max:
    NaN propagates)."""
    N = gc.shape[2]
    mx = -np.inf
    for m in range(N):
        x = node_sum(gc, r, g, m)
        if np.isnan(x):
            mx = x
            break
        if x > mx:
            mx = x
    nact = 0
    for m in range(N):
        if 3 * node_sum(gc, r, g, m) > mx:
            nact += 1
    return 3 * node_sum(gc, r, g, n) > mx, nact


@inner
def join_groups(L, S, X, r, F, nf):
    """groups.join_groups for replica ``r``'s shared faults (rows of the per-fault record
    ``F[:nf]`` with ``F_PRIV`` 0): each faulting task without a group creates its own; then it
    joins the group of the task behind the folio's last_cpupid when that one is bigger (ties:
    the lower gid), same mm, pid bits still naming it. Every join is decided on the memberships
    after the creations, before any join; the first qualifying fault of a task wins."""
    T = L.T
    for i in range(nf):
        if F[i, F_PRIV] == 0:
            t = F[i, F_T]
            if S.gid[r, t] < 0:
                S.gid[r, t] = t
    group_stats(S.gid, S.faults_mem, S.faults_cpu, X.gm, X.gc, X.gsize, r)   # sizes after the creations
    target = np.full(T, -1, dtype=np.int64)
    for i in range(nf):
        if F[i, F_PRIV] != 0:
            continue
        t, lt = F[i, F_T], F[i, F_LTASK]
        if lt < 0 or target[t] >= 0:
            continue
        lg = S.gid[r, lt]
        my = S.gid[r, t]
        if lg < 0 or lg == my or L.thread_mm[lt] != L.thread_mm[t] or S.pid8[r, lt] != F[i, F_LAST8]:
            continue
        if X.gsize[r, my] < X.gsize[r, lg] or (X.gsize[r, my] == X.gsize[r, lg] and my > lg):
            target[t] = lg
    for t in range(T):
        if target[t] >= 0:
            S.gid[r, t] = target[t]
            S.events[r, C_GROUP_JOINS] += 1

"""Hinting faults handled, compiled: the second half of :mod:`numalab.engine.faults` and
:mod:`numalab.engine.memory`'s moves, for one replica.

Kernel functions (spec §5): ``do_numa_page`` / ``do_huge_pmd_numa_page`` (+1
``numa_hint_faults`` per folio, ``_local`` when already local), ``vma_set_access_pid_bit``,
``mpol_misplaced`` -> ``should_numa_migrate_memory`` (the two-stage ``last_cpupid`` filter,
then the numa-group CPU / memory ratio test; option ``migrate_filter``),
``migrate_misplaced_folio`` with ``migrate_balanced_pgdat`` (a full target node fails:
``TNF_MIGRATE_FAIL``), and ``task_numa_fault`` (numa groups :mod:`.groups`,
``task_numa_placement`` :mod:`.placement`, the fault buffers and ``numa_faults_locality``).

The step's faults are the detect phase's ``X.f_region[r, :X.nfaults[r]]`` / ``X.f_thread``
(region order, ``prot_none`` already cleared), handled at the step's end ``X.times[k + 1]``.
numpy handles them as arrays, each stage over all faults before the next; a stage here is a
loop over the faults in region order that reads what numpy's reads: the folio's node and
``last_cpupid`` before the fault, each node's room at the start of the batch.
:func:`numa_migrate_preferred` and :func:`lb_moves` (the next two phases) are
:mod:`.placement`'s.
"""

from __future__ import annotations

import numpy as np

from ...counters import COUNTER_NAMES
from ...workloads import PH_INIT
from . import adapt
from ._nb import inner, jit
from .groups import active_node, group_stats, join_groups, node_sum
from .placement import lb_moves, numa_migrate_preferred, task_numa_placement

__all__ = ["handle_faults", "record_hint_fault", "should_migrate", "group_ratio", "migrate", "task_numa_fault",
           "numa_migrate_preferred", "lb_moves"]

NO_NODE = -1
PID_UNSET = 0xFF
C_HINT = COUNTER_NAMES.index("numa_hint_faults")
C_HINT_LOCAL = COUNTER_NAMES.index("numa_hint_faults_local")
C_MIGRATED = COUNTER_NAMES.index("numa_pages_migrated")
C_MIGRATE_FAIL = COUNTER_NAMES.index("numa_migrate_fail")

# the per-fault record (int64 columns): faulting thread, its node, the node its memory is on
# after the fault, resident base pages, local, private, last_cpupid's pid bits and thread (as
# read before the filter), failed migration (groups.py reads F_T, F_PRIV, F_LAST8, F_LTASK)
F_T, F_CN, F_MEM, F_PAGES, F_LOCAL, F_PRIV, F_LAST8, F_LTASK, F_FAILED = range(9)
NF = 9

#: a helper of the batch's named tuples called only from compiled code: no CPython / cfunc
#: wrapper (unboxing a hundred fields is most of such a function's compile time)


@inner
def handle_faults(L, Q, S, X, r, k):
    """faults.handle_faults for replica ``r``'s faults of step ``k`` (do_numa_page): record each,
    run the migrate filter, migrate what fits (migrate_balanced: candidates claim room on
    their target node in fault order against the residency at the start of the batch, a failed
    one still claims), update last_cpupid, charge the kernel time; then task_numa_fault."""
    nf = X.nfaults[r]
    if nf == 0:
        return
    N = L.N
    now = X.times[k + 1]
    F = np.empty((nf, NF), dtype=np.int64)
    free0 = np.empty(N, dtype=np.int64)          # memory.node_free at the start of the batch
    claimed = np.zeros(N, dtype=np.int64)
    for n in range(N):
        free0[n] = L.node_cap[n] - S.node_pages[r, n]
    stats = False                                # X's group sums computed (for the filter)
    for i in range(nf):
        q, t = X.f_region[r, i], X.f_thread[r, i]
        cn, fn = S.node[r, t], S.r_node[r, q]
        pages = L.region_present[q]
        local = fn == cn
        inc = record_hint_fault(L, Q, S, r, q, t, local)
        kt = L.hint_fault_us * 1e-6 * inc
        last8, lnode, ltask = S.last_pid8[r, q], S.last_node[r, q], S.last_task[r, q]
        my8 = S.pid8[r, t]
        check, want, ratio = should_migrate(L, S, r, t, cn, local, last8, lnode, my8)
        if ratio:
            # the numa-group ratio test reads the sums at the start of the batch (the loop
            # changes no fault statistic and no membership: computed at its first use)
            if not stats:
                group_stats(S.gid, S.faults_mem, S.faults_cpu, X.gm, X.gc, X.gsize, r)
                stats = True
            want = group_ratio(X.gm, X.gc, r, S.gid[r, t], cn, fn)
        failed = False
        if want:
            claimed[cn] += pages
            failed = claimed[cn] > free0[cn]
        F[i, F_PRIV] = (not S.last_set[r, q]) or last8 == my8
        if check:                                # the filter records the new accessor
            S.last_pid8[r, q] = my8
            S.last_set[r, q] = True
            S.last_node[r, q] = cn
            S.last_task[r, q] = t
        mem = fn
        if want and not failed:
            migrate(L, S, r, q, cn)
            S.events[r, C_MIGRATED] += pages
            kt = kt + (pages * 4096 / (L.migrate_GBps * 1e9) + L.migrate_folio_us * 1e-6)
            mem = cn
        S.kdebt[r, t] += kt
        S.ksys[r, t] += kt
        S.syst[r] += kt
        F[i, F_T], F[i, F_CN], F[i, F_MEM], F[i, F_PAGES] = t, cn, mem, pages
        F[i, F_LOCAL], F[i, F_LAST8], F[i, F_LTASK], F[i, F_FAILED] = local, last8, ltask, failed
    task_numa_fault(L, S, X, r, k, F, nf, now)


@inner
def record_hint_fault(L, Q, S, r, q, t, local):
    """faults.record_hint_faults for one fault of thread ``t`` on region ``q``: the task's PID bit
    in the VMA's current window when it has numab state (ring: ``pids_idx % W``, shift:
    ``W - 1``), the VMA's faulted flag, the vmstat counters. Returns the count increment."""
    v = L.region_vma[q]
    if Q.numab_state and S.has_state[r, v]:
        W = S.pids_active.shape[2]
        window = S.pids_idx[r, v] % W if Q.ring else W - 1
        S.pids_active[r, v, window, S.tid_word[r, t]] |= S.tid_mask[r, t]
        adapt.on_fault(Q, S, r, v)
    S.faulted[r, v] = True
    inc = L.fault_inc[q]
    S.events[r, C_HINT] += inc
    if local:
        S.events[r, C_HINT_LOCAL] += inc
    return inc


@inner
def should_migrate(L, S, r, t, cn, local, last8, lnode, my8):
    """faults.should_migrate for one fault: ``(check, want, ratio)`` -- the filter runs (no bind
    policy, folio remote), it says migrate (option ``migrate_filter`` off: every checked fault),
    and the numa-group ratio test decides instead (:func:`group_ratio`: grouped, not the last
    accessor, second stage passed)."""
    bindp = (S.phase[r, t] == PH_INIT and L.init_bind[t]) or L.mem_bind[t]
    check = not bindp and not local
    if not check or not L.migrate_filter:
        return check, check, False
    unset = last8 == PID_UNSET
    mine = last8 == my8
    early = (S.numa_preferred_nid[r, t] == NO_NODE or S.numa_scan_seq[r, t] <= 4) and (unset or mine)
    second_stage_fail = not unset and lnode != cn
    want = early or (not second_stage_fail and (mine or S.gid[r, t] < 0))
    return True, want, not want and not second_stage_fail


@jit
def group_ratio(gm, gc, r, g, cn, fn):
    """should_numa_migrate_memory's numa-group test (faults.should_migrate): migrate when the
    group's CPU faults on the task's node ``cn`` exceed 3x those on the folio's node ``fn``, or
    its CPU / memory fault ratio is over 4/3 of the folio node's (group_node_sums, X's)."""
    gcd, gcs = node_sum(gc, r, g, cn), node_sum(gc, r, g, fn)
    gmd, gms = node_sum(gm, r, g, cn), node_sum(gm, r, g, fn)
    return (gcd > 3 * gcs) or (3 * gcd * gms > 4 * gcs * gmd)


@inner
def migrate(L, S, r, q, dst):
    """memory.migrate of region ``q`` of replica ``r`` to node ``dst``: its node, the class and
    node counts, the replica's rates marked for a refresh (the caller checked the room)."""
    src = S.r_node[r, q]
    S.r_node[r, q] = dst
    S.dirty[r] = True
    c = L.region_class[q]
    S.cls_node[r, c, src] -= 1
    S.cls_node[r, c, dst] += 1
    pages = L.region_present[q]
    S.node_pages[r, src] -= pages
    S.node_pages[r, dst] += pages


@inner
def task_numa_fault(L, S, X, r, k, F, nf, now):
    """faults.task_numa_fault for the fault records ``F[:nf]``: numa groups (option
    ``numa_groups``), task_numa_placement for the faulting tasks whose retry time passed (once
    per task, before this batch's faults reach the buffers), then the buffers and
    numa_faults_locality (a shared remote fault between two active nodes of a multi-node group
    counts local) and the failed migrations."""
    T = L.T
    if L.numa_groups:
        for i in range(nf):
            if F[i, F_PRIV] == 0:
                join_groups(L, S, X, r, F, nf)
                break
    seen = np.zeros(T, dtype=np.bool_)
    for i in range(nf):
        seen[F[i, F_T]] = True
    due = np.empty(T, dtype=np.int64)
    ndue = 0
    for t in range(T):
        if seen[t] and now > S.numa_migrate_retry[r, t]:
            due[ndue] = t
            ndue += 1
    if ndue:
        # the sums after this batch's joins
        group_stats(S.gid, S.faults_mem, S.faults_cpu, X.gm, X.gc, X.gsize, r)
        task_numa_placement(L, S, X, r, k, due[:ndue], now)
    stats = False
    for i in range(nf):
        t, cn, mem, pages = F[i, F_T], F[i, F_CN], F[i, F_MEM], F[i, F_PAGES]
        priv = F[i, F_PRIV]
        flocal = F[i, F_LOCAL] != 0
        g = S.gid[r, t]
        if priv == 0 and not flocal and g >= 0:
            if not stats:                        # the sums after placement
                group_stats(S.gid, S.faults_mem, S.faults_cpu, X.gm, X.gc, X.gsize, r)
                stats = True
            act_cn, nact = active_node(X.gc, r, g, cn)
            act_mem, _ = active_node(X.gc, r, g, mem)
            flocal = nact > 1 and act_cn and act_mem
        S.buf_mem[r, t, mem, priv] += pages
        S.buf_cpu[r, t, cn, priv] += pages
        S.numa_faults_locality[r, t, 1 if flocal else 0] += pages
        if F[i, F_FAILED]:
            S.numa_faults_locality[r, t, 2] += pages
            S.events[r, C_MIGRATE_FAIL] += 1
        S.has_faults[r, t] = True

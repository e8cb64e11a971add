"""Task placement, compiled: :mod:`numalab.engine.placement` and :mod:`numalab.engine.balance`
for one replica.

Kernel functions (spec §5.5, §3.5): ``task_numa_placement`` (once per scan sequence: fold the
fault buffers into the decayed ``numa_faults``, pick ``numa_preferred_nid`` from the task's or
its group's memory faults, ``update_task_scan_period``), ``numa_migrate_preferred`` (into an
idle CPU of the preferred node, else ``task_numa_compare``'s best swap partner via
``migrate_swap``; option ``task_swaps``), ``update_scan_period`` on a cross-node move
(``migrate_task_rq_fair``), and the load balancer's rare cross-node pulls (``load_balance`` ->
``detach_task``; option ``lb_migrate_hz``).
"""

from __future__ import annotations

import numpy as np

from ...counters import COUNTER_NAMES
from ...workloads import PH_INIT, PH_LOOP
from ..placement import SMALLIMP
from ._nb import inner, jit
from .groups import group_stats, node_sum
from .numsum import psum
from .period import task_scan_max, task_scan_start, update_task_scan_period

__all__ = ["task_numa_placement", "shares", "numa_migrate_preferred", "task_swap", "move_task", "lb_moves",
           "refill_task", "lb_partner"]

NO_NODE = -1
C_TASK_MIGRATIONS = COUNTER_NAMES.index("task_migrations")
C_NUMA_STICKS = COUNTER_NAMES.index("numa_sticks")
C_LB_MIGRATIONS = COUNTER_NAMES.index("lb_migrations")
C_SCAN_PERIOD_RESETS = COUNTER_NAMES.index("scan_period_resets")

#: a helper of the batch's named tuples called only from compiled code: no CPython / cfunc
#: wrapper (unboxing a hundred fields is most of such a function's compile time)


@inner
def _fold(L, S, r, t, now):
    """task_numa_placement's fold of task ``t``'s fault buffers into its decayed numa_faults
    (``f += buf - f / 2``; the CPU faults weighted by the runtime share of the period and the
    window's locality total), the buffers cleared. Returns the window's (shared, private)
    memory faults (``ftypes``: exact integers, numpy's float sum of them)."""
    N = L.N
    total = float(S.numa_faults_locality[r, t, 0] + S.numa_faults_locality[r, t, 1])
    run_now = S.runtime[r, t]
    runtime = run_now - S.last_sum_exec_runtime[r, t]
    period = now - S.last_task_numa_placement[r, t]
    S.last_sum_exec_runtime[r, t] = run_now
    S.last_task_numa_placement[r, t] = now
    f = 65536.0 * runtime / (period + 1e-9)
    shared = 0
    private = 0
    for n in range(N):
        shared += S.buf_mem[r, t, n, 0]
        private += S.buf_mem[r, t, n, 1]
        for p in range(2):
            bm = float(S.buf_mem[r, t, n, p])
            bc = float(S.buf_cpu[r, t, n, p])
            w = f * bc / (total + 1.0)
            fm = S.faults_mem[r, t, n, p]
            S.faults_mem[r, t, n, p] = fm + (bm - fm / 2)
            fc = S.faults_cpu[r, t, n, p]
            S.faults_cpu[r, t, n, p] = fc + (w - fc / 2)
            S.buf_mem[r, t, n, p] = 0
            S.buf_cpu[r, t, n, p] = 0
    return shared, private


@inner
def _preferred(L, S, X, r, t):
    """task_numa_placement's choice for task ``t`` (after the fold and the group sums): the
    node of most memory faults, its group's if grouped (np.argmax: the first of equals, NaN
    first), set when positive; a CPU-less node becomes its nearest node with CPUs."""
    g = S.gid[r, t]
    best = 0
    best_s = 0.0
    for n in range(L.N):
        s = node_sum(X.gm, r, g, n) if g >= 0 else node_sum(S.faults_mem, r, t, n)
        if n == 0 or (s > best_s and not np.isnan(best_s)) or (np.isnan(s) and not np.isnan(best_s)):
            best, best_s = n, s
    if best_s > 0:
        S.numa_preferred_nid[r, t] = L.nearest_cpu_node[best]


@inner
def task_numa_placement(L, S, X, r, k, due, now):
    """placement.task_numa_placement for the tasks ``due`` (ascending) of replica ``r``
    at ``now``, with ``X``'s group sums current (after the fault batch's joins). As numpy,
    evaluated together: the scan maxima from the sums before any fold, the preferred nodes
    from the sums after all of them have folded; then each due task's retry time and its
    numa_migrate_preferred request (``X.want``)."""
    ndue = due.shape[0]
    go = np.empty(ndue, dtype=np.int64)
    ftypes = np.empty((ndue, 2), dtype=np.int64)
    ngo = 0
    for i in range(ndue):
        t = due[i]
        seq = S.mm_scan_seq[r, L.thread_mm[t]]
        if S.numa_scan_seq[r, t] != seq:            # placement once per sequence
            S.numa_scan_seq[r, t] = seq
            S.numa_scan_period_max[r, t] = task_scan_max(L, S, X, r, t)
            go[ngo] = t
            ngo += 1
    if ngo:
        for j in range(ngo):
            ftypes[j, 0], ftypes[j, 1] = _fold(L, S, r, go[j], now)
        # group_stats_rows: the sums after all the folds
        group_stats(S.gid, S.faults_mem, S.faults_cpu, X.gm, X.gc, X.gsize, r)
        for j in range(ngo):
            _preferred(L, S, X, r, go[j])
        for j in range(ngo):
            update_task_scan_period(L, S, X, r, k, go[j], ftypes[j, 0], ftypes[j, 1])
    # numa_migrate_preferred: rate-limited by numa_migrate_retry, served after the faults
    for i in range(ndue):
        t = due[i]
        S.numa_migrate_retry[r, t] = now + min(1.0, S.numa_scan_period[r, t] / 16.0 / 1000.0)
        pref = S.numa_preferred_nid[r, t]
        if pref != NO_NODE and S.node[r, t] != pref and L.cpu_bind[t] < 0:
            X.want[r, t] = True


@jit
def _running(phase, r, t):
    """progress.running_mask: the thread is on a CPU (init or loop phase)."""
    ph = phase[r, t]
    return ph == PH_INIT or ph == PH_LOOP


@jit
def shares(gid, faults_mem, gm, r):
    """numa_migrate_preferred's per-task node scores of replica ``r`` (T, N): fault shares of
    the group if grouped, else the task's own (``sc``), and the task's own (``own_n``) -- each
    ``x / max(x.sum(-1), 1e-9)`` of a contiguous (.., N) array (:func:`.numsum.psum` over the
    nodes, pairwise at 8)."""
    T, N = faults_mem.shape[1], faults_mem.shape[2]
    own = np.empty((T, N))
    sc = np.empty((T, N))
    for t in range(T):
        g = gid[r, t]
        for n in range(N):
            own[t, n] = node_sum(faults_mem, r, t, n)
            sc[t, n] = node_sum(gm, r, g, n) if g >= 0 else own[t, n]
    for t in range(T):
        so = max(psum(own[t]), 1e-9)
        ss = max(psum(sc[t]), 1e-9)
        for n in range(N):
            own[t, n] = own[t, n] / so
            sc[t, n] = sc[t, n] / ss
    return sc, own


@inner
def numa_migrate_preferred(L, Q, S, X, r, k):
    """placement.numa_migrate_preferred: serve replica ``r``'s requests (``X.want[r]``, then
    cleared) in increasing ``u_task`` (stable: ties to the lower index): into an idle CPU of the
    preferred node (running tasks < its CPUs), else a swap (:func:`task_swap`)."""
    T, N = L.T, L.N
    ncand = 0
    cand = np.empty(T, dtype=np.int64)
    anyw = False
    for t in range(T):
        if X.want[r, t]:
            anyw = True
            X.want[r, t] = False
            if _running(S.phase, r, t):
                cand[ncand] = t
                ncand += 1
    if not anyw:
        return
    base = 2 * L.K
    u = X.draws[r, k]
    for i in range(1, ncand):                    # insertion sort: stable by u_task
        t = cand[i]
        j = i - 1
        while j >= 0 and u[base + cand[j]] > u[base + t]:
            cand[j + 1] = cand[j]
            j -= 1
        cand[j + 1] = t
    group_stats(S.gid, S.faults_mem, S.faults_cpu, X.gm, X.gc, X.gsize, r)
    sc, own_n = shares(S.gid, S.faults_mem, X.gm, r)
    running = np.zeros(T, dtype=np.bool_)
    load = np.zeros(N, dtype=np.int64)
    for t in range(T):
        if _running(S.phase, r, t):
            running[t] = True
            load[S.node[r, t]] += 1
    moved = np.zeros(T, dtype=np.bool_)
    for i in range(ncand):
        t = cand[i]
        if moved[t]:
            continue
        a, dst = S.node[r, t], S.numa_preferred_nid[r, t]
        spare = load[dst] < L.node_cpus[dst]
        if spare and (not L.numa_maymove or maymove(load[dst], load[a], L.node_cpus[dst])):
            if move_task(L, S, X, r, t, dst):
                S.events[r, C_TASK_MIGRATIONS] += 1
            load[a] -= 1
            load[dst] += 1
            moved[t] = True
        else:
            q = np.int64(-1)
            if L.task_swaps:
                q = task_swap(S.node, S.gid, S.numa_preferred_nid, L.cpu_bind, L.stick_numa, r, t, a, dst,
                              running, moved, sc, own_n, spare and L.numa_maymove)
            if q >= 0:                           # migrate_swap
                if move_task(L, S, X, r, t, dst):
                    S.events[r, C_TASK_MIGRATIONS] += 1
                if move_task(L, S, X, r, q, a):
                    S.events[r, C_TASK_MIGRATIONS] += 1
                moved[t] = True
                moved[q] = True
            else:                                # no CPU found: sched_stick_numa
                S.events[r, C_NUMA_STICKS] += 1
                if L.stick_numa and S.gid[r, t] >= 0:
                    S.numa_preferred_nid[r, t] = a   # a grouped task sticks: sched_setnuma to its node


@jit
def maymove(dst_running, src_running, dst_cpus):
    """placement.maymove: task_numa_find_cpu's maymove into an idle CPU, equal task loads."""
    return dst_running < src_running or (dst_running == src_running and dst_running + 1 <= max(1, dst_cpus >> 3))


@jit
def task_swap(node, gid, pref, cpu_bind, kernel, r, t, a, dst, running, moved, sc, own_n, spare):
    """placement.task_swap's choice (task_numa_compare): the running, unmoved, unbound task on
    ``dst`` whose swap with ``t`` (on ``a``) gains most (np.argmax: the first of equals, NaN
    first; tasks of one group compare their own shares ``own_n``, others ``sc``), if the gain is
    positive; else -1 (``S.node``, ``S.gid``, ``S.numa_preferred_nid``, ``L.cpu_bind``). With
    ``kernel`` (option ``stick_numa``) the gain and bar are task_numa_compare's
    (placement.task_swap); with ``spare`` a partner of ``t``'s own group (or two ungrouped tasks)
    is skipped."""
    gt = gid[r, t]
    bj = np.int64(-1)                            # not a literal: one type for the caller's calls
    best = 0.0
    for q in range(node.shape[1]):
        if node[r, q] != dst or not running[q] or moved[q] or cpu_bind[q] >= 0:
            continue
        if spare and gid[r, q] == gt:
            continue
        same = gid[r, q] == gt and gt >= 0
        if same:
            tot = (own_n[t, dst] - own_n[t, a]) + (own_n[q, a] - own_n[q, dst])
        elif kernel and not (gid[r, q] >= 0 and gt >= 0):
            tot = (sc[t, dst] - sc[t, a]) + (own_n[q, a] - own_n[q, dst])
        else:
            tot = (sc[t, dst] - sc[t, a]) + (sc[q, a] - sc[q, dst])
        if kernel:
            if same:
                tot = tot - tot / 16
            if pref[r, q] == dst:
                tot = tot - tot / 16
            if pref[r, q] == a:
                tot = tot + tot / 8
        if bj < 0 or (tot > best and not np.isnan(best)) or (np.isnan(tot) and not np.isnan(best)):
            bj, best = q, tot
    if bj >= 0 and (best > 0 if not kernel else best >= SMALLIMP):
        return bj
    return np.int64(-1)


@inner
def move_task(L, S, X, r, t, dst):
    """placement.move_task: ``update_scan_period`` (a task with faults leaving its preferred
    node, or any cross-node move before its first placement, restarts at task_scan_start; ``X``'s
    group sums current), then the move and its cost. Returns whether it moved (``src != dst``):
    the caller counts it in ``task_migrations`` or ``lb_migrations`` (numpy's ``lb`` flag)."""
    src = S.node[r, t]
    if src == dst:
        return False
    if S.has_faults[r, t]:
        pref = S.numa_preferred_nid[r, t]
        reset = True
        if S.numa_scan_seq[r, t] != 0:
            if dst == pref or (pref != NO_NODE and src != pref):
                reset = False
        if reset:
            S.numa_scan_period[r, t] = task_scan_start(L, S, X, r, t)
            S.events[r, C_SCAN_PERIOD_RESETS] += 1
    S.node[r, t] = dst
    S.dirty[r] = True
    kt = L.task_migration_us * 1e-6
    S.kdebt[r, t] += kt
    S.ksys[r, t] += kt
    S.syst[r] += kt
    return True


@inner
def lb_moves(L, Q, S, X, r, k):
    """balance.lb_moves: a running, unbound task with ``u_lb[t] < p = lb_migrate_hz * dt`` is
    pulled to the k-th other node with CPUs (``v = u_lb / p``, ``k = floor(v (N - 1))``), and
    when that node is full its ``floor(w n)``-th running unbound task comes back (a swap);
    tasks in index order, loads from the start of the phase updated by the plain moves."""
    p = L.lb_migrate_hz * L.dt
    nc = L.cpu_nodes.shape[0]
    if p <= 0 or nc < 2:
        return
    T = L.T
    base = 2 * L.K + T
    u = X.draws[r, k]
    live = not S.done[r]
    nev = 0
    for t in range(T):
        if u[base + t] < p and live and _running(S.phase, r, t) and L.cpu_bind[t] < 0:
            nev += 1
    if nev == 0:
        return
    # the sums update_scan_period's task_scan_start reads
    group_stats(S.gid, S.faults_mem, S.faults_cpu, X.gm, X.gc, X.gsize, r)
    load = np.zeros(L.N, dtype=np.int64)
    for t in range(T):
        if live and _running(S.phase, r, t):
            load[S.node[r, t]] += 1
    for t in range(T):
        if not (u[base + t] < p and live and _running(S.phase, r, t) and L.cpu_bind[t] < 0):
            continue
        v = u[base + t] / p
        a = S.node[r, t]
        x = v * (nc - 1)
        kk = min(int(x), nc - 2)
        w = x - kk
        dst = L.cpu_nodes[kk] if L.cpu_nodes[kk] < a else L.cpu_nodes[kk + 1]
        if load[dst] < L.node_cpus[dst]:
            if move_task(L, S, X, r, t, dst):
                S.events[r, C_LB_MIGRATIONS] += 1
            load[a] -= 1
            load[dst] += 1
            continue
        j = lb_partner(S.node, S.phase, L.cpu_bind, r, dst, w, live)
        if j >= 0 and L.lb_refill_locality:
            j = refill_task(S.numa_preferred_nid, r, t, j, dst)
        if j >= 0:                               # a swap: t to dst, j back to a
            if move_task(L, S, X, r, t, dst):
                S.events[r, C_LB_MIGRATIONS] += 1
            if move_task(L, S, X, r, j, a):
                S.events[r, C_LB_MIGRATIONS] += 1


@jit
def refill_task(pref, r, t, j, dst):
    """balance.refill_task (option ``lb_refill_locality``): ``t`` comes back when the resident
    ``j`` prefers ``dst`` and ``t`` does not, else ``j`` (``S.numa_preferred_nid``)."""
    if pref[r, j] == dst and pref[r, t] != dst:
        return t
    return j


@jit
def lb_partner(node, phase, cpu_bind, r, dst, w, live):
    """balance.lb_moves onto a full node: the ``floor(w n)``-th (index order) of the ``n``
    running unbound tasks on ``dst``, pulled back in exchange; -1 when there is none."""
    nq = 0
    for j in range(node.shape[1]):
        if node[r, j] == dst and live and _running(phase, r, j) and cpu_bind[j] < 0:
            nq += 1
    pick = min(int(w * nq), nq - 1)
    for j in range(node.shape[1]):
        if node[r, j] == dst and live and _running(phase, r, j) and cpu_bind[j] < 0:
            if pick == 0:
                return j
            pick -= 1
    return -1

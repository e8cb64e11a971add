"""Task placement: where a task wants to run, and moving it there.

Kernel functions modelled (spec §5.5, §3.5): ``task_numa_placement`` (once per scan
sequence: fold the fault buffers into the decayed ``numa_faults``, pick
``numa_preferred_nid`` from the task's or its group's memory faults, then
``update_task_scan_period``), ``numa_migrate_preferred`` (rate-limited by
``numa_migrate_retry``; served at the end of the step: into an idle CPU of the preferred node,
else ``task_numa_compare``'s best swap partner -- option ``task_swaps`` -- via
``migrate_swap``; option ``stick_numa``: that function's SMALLIMP bar and adjustments, and
``task_numa_migrate``'s ``sched_setnuma`` of a grouped task that found nothing), and
``update_scan_period`` on every cross-node move (``migrate_task_rq_fair``), which is shared
with the load balancer (:mod:`.balance`).
"""

from __future__ import annotations

import numpy as np

from .groups import group_stats, group_stats_rows
from .progress import running_mask
from .scan_period import task_scan_max, task_scan_start, update_task_scan_period
from .state import NO_NODE, flat

__all__ = ["task_numa_placement", "numa_migrate_preferred", "task_swap", "move_task", "SMALLIMP",
           "compare_adjust"]


def task_numa_placement(b, ctx, r, t, now, gm, gc, gsize):
    """task_numa_placement (spec §5.5) for tasks (r, t) at ``now`` (s), then their
    numa_migrate_preferred request (recorded in ``ctx.want``, served by
    :func:`numa_migrate_preferred` at the end of the step)."""
    T, N = b.lay.T, b.lay.N
    nm = b.numa
    rt = r * T + t                                      # flat (r, t): 1-D takes and puts
    seq = b.mm.numa_scan_seq.take(r * b.lay.M + b.lay.thread_mm[t])
    go = nm.numa_scan_seq.take(rt) != seq
    # numa_migrate_preferred runs regardless; placement only once per sequence
    if np.count_nonzero(go):
        r2, t2, rt2 = r[go], t[go], rt[go]
        flat(nm.numa_scan_seq)[rt2] = seq[go]
        flat(nm.numa_scan_period_max)[rt2] = task_scan_max(b, (r2, t2), gm, gsize)
        loc = flat(nm.numa_faults_locality, 3)[rt2]
        total = (loc[:, 0] + loc[:, 1]).astype(float)
        run_now = b.tasks.runtime.take(rt2)
        runtime = run_now - nm.last_sum_exec_runtime.take(rt2)
        period = now - nm.last_task_numa_placement.take(rt2)
        flat(nm.last_sum_exec_runtime)[rt2] = run_now
        flat(nm.last_task_numa_placement)[rt2] = now
        buf_mem, buf_cpu = flat(nm.buf_mem, N, 2), flat(nm.buf_cpu, N, 2)
        faults_mem, faults_cpu = flat(nm.faults_mem, N, 2), flat(nm.faults_cpu, N, 2)
        bm = buf_mem[rt2].astype(float)                                    # (n, N, 2)
        bc = buf_cpu[rt2].astype(float)
        ftypes = bm.sum(axis=1)                                            # (n, 2): shared, private
        w = (65536.0 * runtime / (period + 1e-9))[:, None, None] * bc / (total + 1)[:, None, None]
        fm = faults_mem[rt2]
        fm += bm - fm / 2
        faults_mem[rt2] = fm
        faults_cpu[rt2] += w - faults_cpu[rt2] / 2
        buf_mem[rt2] = 0
        buf_cpu[rt2] = 0
        gm, gc, gsize = group_stats_rows(b, np.unique(r2))
        g = b.groups.gid.take(rt2)
        ing = g >= 0
        own = fm.sum(axis=-1)                                              # (n, N)
        score = np.where(ing[:, None], gm.reshape(-1, N, 2)[r2 * T + np.where(ing, g, 0)].sum(axis=-1), own)
        best = score.argmax(axis=1)                                        # lowest nid wins ties
        setp = score[np.arange(rt2.size), best] > 0
        # a CPU-less choice becomes its nearest node with CPUs (5c7b1aaf139d, v5.18)
        best = b.topo.nearest_cpu_node.take(best)
        flat(nm.numa_preferred_nid)[rt2[setp]] = best[setp]
        update_task_scan_period(b, r2, t2, ftypes[:, 0], ftypes[:, 1], gm, gsize)
    # numa_migrate_preferred
    per = nm.numa_scan_period.take(rt)
    flat(nm.numa_migrate_retry)[rt] = now + np.minimum(1.0, per / 16.0 / 1000.0)
    pref = nm.numa_preferred_nid.take(rt)
    want = (pref != NO_NODE) & (b.tasks.node.take(rt) != pref) & (b.wl.cpu_bind[t] < 0)
    if ctx.want is None:
        ctx.want = np.zeros((b.R, T), dtype=bool)
    flat(ctx.want)[rt[want]] = True


def numa_migrate_preferred(b, ctx):
    """Serve the step's numa_migrate_preferred requests (``ctx.want``), per replica in the
    order of ``ctx.u_task``: a task moves into an idle CPU of its preferred node, else swaps
    with the task there that gains most (:func:`task_swap`)."""
    want = ctx.want
    if want is None or not want.any():
        return
    ctx.want = None
    R, T, N = b.R, b.lay.T, b.lay.N
    u_task = ctx.u_task
    cap = b.lay.node_cpus
    running = running_mask(b)
    gm, gc, gsize = group_stats(b)
    # per-task node score: group fault share if grouped, else own
    own = b.numa.faults_mem.sum(axis=-1)
    grp = np.take_along_axis(gm.sum(axis=-1), np.where(b.groups.gid >= 0, b.groups.gid, 0)[:, :, None], axis=1)
    sc = np.where((b.groups.gid >= 0)[:, :, None], grp, own)
    scores = (sc / np.maximum(sc.sum(axis=-1, keepdims=True), 1e-9), own / np.maximum(own.sum(axis=-1, keepdims=True), 1e-9))
    moved = np.zeros((R, T), dtype=bool)
    load = np.stack([((b.tasks.node == n) & running).sum(axis=1) for n in range(N)], axis=1)
    for r in np.flatnonzero(want.any(axis=1)).tolist():
        cand = np.flatnonzero(want[r] & running[r])
        cand = cand[np.argsort(u_task[r, cand], kind="stable")]
        for t in cand.tolist():
            if moved[r, t]:
                continue
            a, dst = int(b.tasks.node[r, t]), int(b.numa.numa_preferred_nid[r, t])
            spare = load[r, dst] < cap[dst]               # an idle CPU on the preferred node
            if spare and (not b.o.numa_maymove or maymove(load[r, dst], load[r, a], cap[dst])):
                move_task(b, r, t, dst)
                load[r, a] -= 1
                load[r, dst] += 1
                moved[r, t] = True
            elif not (b.o.task_swaps and task_swap(b, r, t, a, dst, running, moved, scores,
                                                   spare=spare and b.o.numa_maymove)):
                # no CPU found: the kernel's sched_stick_numa; a grouped task sticks and prefers
                # the node it is on (task_numa_migrate's sched_setnuma to the source node)
                b.counters.events["numa_sticks"][r] += 1
                if b.o.stick_numa and b.groups.gid[r, t] >= 0:
                    b.numa.numa_preferred_nid[r, t] = a


#: task_numa_compare's bar for a swap (option ``stick_numa``): SMALLIMP, 30 on its 1000 scale
SMALLIMP = 0.03


def maymove(dst_running, src_running, dst_cpus):
    """task_numa_find_cpu's ``maymove`` for a move into an idle CPU of a node with spare capacity
    (option ``numa_maymove``), with equal task loads: allowed when the destination runs fewer
    tasks than the source (``src_running`` counts the mover; load_too_imbalanced), or as many
    and fewer than ``imb_numa_nr`` (adjust_numa_imbalance; an eighth of ``dst_cpus``, at least 1,
    as build_sched_domains sets it for one LLC per node)."""
    return dst_running < src_running or (dst_running == src_running and dst_running + 1 <= max(1, dst_cpus >> 3))


def compare_adjust(imp, same, pref_q, a, dst):
    """task_numa_compare's adjustments of swap gains ``imp`` (fault shares, one per partner on
    ``dst``, the task being on ``a``): less 1/16 for a partner of the task's own group (``same``),
    less 1/16 more for a partner already on its preferred node, plus 1/8 for one whose preferred
    node (``pref_q``) is ``a``."""
    imp = np.where(same, imp - imp / 16, imp)
    imp = np.where(pref_q == dst, imp - imp / 16, imp)
    return np.where(pref_q == a, imp + imp / 8, imp)


def task_swap(b, r, t, a, dst, running, moved, scores, spare=False):
    """task_numa_compare + migrate_swap: swap task ``t`` (on node ``a``) with the task on
    ``dst`` that gains most from going to ``a``, if the pair gains. ``scores`` = (group-or-own,
    own) normalised fault shares (R, T, N); tasks of one group compare their own shares.
    With option ``stick_numa`` the gain is task_numa_compare's: a partner of another group is
    weighed by its group's shares only when ``t`` has a group too, a swap inside a group loses
    1/16, a partner already on its preferred node 1/16 more, one whose preferred node is ``a``
    gains 1/8, and the best must reach :data:`SMALLIMP`. With ``spare`` (the destination has an
    idle CPU; option ``numa_maymove``) a partner of ``t``'s own group, or an ungrouped partner of
    an ungrouped ``t``, is not considered (task_numa_compare). Returns whether it swapped."""
    sc, own_n = scores
    ok = (b.tasks.node[r] == dst) & running[r] & ~moved[r] & (b.wl.cpu_bind < 0)
    if spare:
        ok &= b.groups.gid[r] != b.groups.gid[r, t]
    q = np.flatnonzero(ok)
    if q.size == 0:
        return False
    gq, gt = b.groups.gid[r, q], b.groups.gid[r, t]
    same = (gq == gt) & (gt >= 0)
    kernel = b.o.stick_numa
    by_group = (gq >= 0) & (gt >= 0) if kernel else np.ones(q.size, dtype=bool)
    sq = np.where((same | ~by_group)[:, None], own_n[r, q], sc[r, q])
    gain_q = sq[:, a] - sq[:, dst]
    st = np.where(same, own_n[r, t, dst] - own_n[r, t, a], sc[r, t, dst] - sc[r, t, a])
    tot = st + gain_q
    if kernel:
        tot = compare_adjust(tot, same, b.numa.numa_preferred_nid[r, q], a, dst)
    j = int(np.argmax(tot))
    if tot[j] >= SMALLIMP if kernel else tot[j] > 0:
        move_task(b, r, t, dst)
        move_task(b, r, int(q[j]), a)
        moved[r, t] = moved[r, q[j]] = True
        return True
    return False


def move_task(b, r, t, dst, lb=False):
    """Move task ``t`` of replica ``r`` to node ``dst``: ``update_scan_period`` (spec §3.5),
    then the move's cost; counted in ``task_migrations`` (NUMA placement) or
    ``lb_migrations`` (load balancer)."""
    src = int(b.tasks.node[r, t])
    if src == dst:
        return
    # update_scan_period (spec §3.5)
    if b.numa.has_faults[r, t]:
        pref = int(b.numa.numa_preferred_nid[r, t])
        reset = True
        if b.numa.numa_scan_seq[r, t]:
            if dst == pref or (pref != NO_NODE and src != pref):
                reset = False
        if reset:
            gm, gc, gsize = group_stats(b)
            rr, tt = np.array([r]), np.array([t])
            b.numa.numa_scan_period[r, t] = int(task_scan_start(b, (rr, tt), gm, gsize)[0])
            b.counters.events["scan_period_resets"][r] += 1
    b.tasks.node[r, t] = dst
    b.rates.dirty[r] = True
    kt = b.costs.task_migration_us * 1e-6
    b.tasks.kdebt[r, t] += kt
    b.tasks.ksys[r, t] += kt
    b.counters.syst[r] += kt
    b.counters.events["lb_migrations" if lb else "task_migrations"][r] += 1

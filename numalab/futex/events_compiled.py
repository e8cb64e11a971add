"""The discrete-event loop of :mod:`numalab.futex.events`, compiled with numba (optional).

The numpy loop of :class:`~numalab.futex.events._EventRun` advances every point by one event
per numpy step; its cost is the fixed overhead of ~60 small array operations per step (about
240 us for 3 points, 2026-12-02), whatever the batch, and a perf-bench point needs
``2 x threads x ops`` events. Points never share a station, so the same events can be taken
point after point, each event in scalar arithmetic: this module does exactly that, in the
same order of floating-point operations, so its results are bit-identical to the numpy loop
(``tests/test_futex_compiled.py`` checks it on random networks). The numpy loop stays the
oracle and the fallback: :func:`available` is False without numba, or with
``NUMALAB_JIT=0`` in the environment.

Spots where the numpy loop computes a blend for every event of a step when *some* event
of the step needs it (``batch``, ``sort``, ``forward``): a blend with weight 0 or factor 1
returns its input exactly for finite prices, so the scalar loop applies the blend only where
its weight says so.
"""

from __future__ import annotations

import numpy as np

from ..jit import available

__all__ = ["available", "run_events"]

_KERNEL = None


def _compile():
    import numba

    @numba.njit(cache=True, nogil=True)
    def events(table, t_next, stage, bucket, ref, start, thr_nf, thr_buckets, thr_ref, done_ops,
               t_warm, t_last, Et, Es, think, cpu, node, line, line_busy, cold, selfc, sib, l1,
               last_st, last_end, rider, carried, cap, st_home, st_batch, st_core, st_sort, st_px, st_xnode, st_forward,
               st_lines_busy, st_lines, st_base, st_point, free_at, node_until, holder, busy, visits, t_start,
               t_end, ops, warmup):
        P, Tmax = table.shape
        U = free_at.size
        for p in range(P):
            while True:
                # the point's earliest arrival (first of equal times, as np.argmin)
                jj = 0
                a = t_next[p, 0]
                for j in range(1, Tmax):
                    if t_next[p, j] < a:
                        a = t_next[p, j]
                        jj = j
                g = table[p, jj]
                stg = stage[g]
                st = ref[g] if stg == 0 else bucket[g]
                ts = t_start[p]
                # serve: the line's cost from where it is (line_cost), then the service
                held = a < free_at[st]
                prev = holder[st]
                hs = st_home[st]
                pn = node[max(prev, 0)]
                cost = line_busy[g, pn, hs] if held else line[g, pn, hs]
                if prev == g:
                    cost = selfc[g]
                for i in range(sib.shape[1] if l1[g] else 0):   # a thread on my core: our L1
                    if prev >= 0 and sib[g, i] == prev:
                        cost = selfc[g]
                if prev < 0:
                    cost = cold[g, hs]
                nd = node[g]
                if st_batch[st] != 0.0 and held and node_until[st, nd] > a:
                    cost = st_batch[st] * line[g, nd, hs] + (1.0 - st_batch[st]) * cost
                sort = st_sort[st]
                if sort != 0.0 and held:
                    px = st_px[st]
                    srt = (1.0 - px) * line[g, nd, hs] + px * st_xnode[st, nd]
                    cost = (1.0 - sort) * cost + sort * srt
                if st_forward[st] != 1.0 and held:
                    cost = st_forward[st] * cost
                nl = st_lines_busy[st] if held else st_lines[st]
                s = (st_base[st] * cpu[g] + nl * cost) * Es[g, done_ops[g], stg]
                b = a if a > free_at[st] else free_at[st]
                c = b + s
                after, on = np.inf, -1   # riding along with an SMT sibling's pending RMW (the earliest)
                for i in range(sib.shape[1] if st_core[st] != 0.0 else 0):
                    m = sib[g, i]
                    if m >= 0 and last_st[m] == st and a < last_end[m] < after and not rider[m] and carried[m] < cap[g]:
                        after, on = last_end[m], m
                if st_core[st] != 0.0:
                    carried[g], rider[g] = 0, after < np.inf
                if after < np.inf:
                    carried[on] += 1
                    b = after
                    c = b + (st_base[st] * cpu[g] + nl * selfc[g]) * Es[g, done_ops[g], stg]
                if c >= free_at[st]:
                    holder[st] = g
                    free_at[st] = c
                last_st[g] = st
                last_end[g] = c
                if c > node_until[st, nd]:
                    node_until[st, nd] = c
                bt = b if b > ts else ts
                if c - bt > 0.0:
                    busy[st] += c - bt
                if c > ts:
                    visits[st] += 1.0
                if stg == 0:   # on to the bucket right after the refcount line
                    stage[g] = 1
                    t_next[p, jj] = c
                    continue
                # complete: count the op, open the window, next keys and think time
                done_ops[g] += 1
                n = done_ops[g]
                if n == warmup:
                    t_warm[g] = c
                t_last[g] = c
                if n == warmup and np.isinf(t_start[p]):
                    t_start[p] = c
                    for u in range(U):
                        if st_point[u] == p and free_at[u] - c > 0.0:
                            busy[u] += free_at[u] - c
                col = (start[g] + n) % thr_nf[g]
                bucket[g] = thr_buckets[g, col]
                ref[g] = thr_ref[g, col]
                stage[g] = 0 if ref[g] >= 0 else 1
                t_next[p, jj] = c + think[g] * Et[g, n]
                if n >= ops:
                    t_end[p] = c
                    break

    return events


def run_events(run) -> None:
    """Run every point of ``run`` (an :class:`~numalab.futex.events._EventRun` in its
    initial state) to its stop, in place; the state afterwards is the numpy loop's."""
    global _KERNEL
    if _KERNEL is None:
        _KERNEL = _compile()
    net = run.net
    _KERNEL(run.table, run.t_next, run.stage, run.bucket, run.ref, run.start, net.thr_nf, net.thr_buckets,
            net.thr_ref, run.done_ops, run.t_warm, run.t_last, run.Et, run.Es, run.think, run.cpu, run.node,
            run.line, run.line_busy, run.cold, run.selfc, run.sib, run.l1, run.last_st, run.last_end,
            run.rider, run.carried, run.cap, net.st_home,
            net.st_batch, net.st_core, net.st_sort, net.st_px,
            net.st_xnode, net.st_forward, net.st_lines_busy, net.st_lines, net.st_base, net.st_point,
            run.free_at, run.node_until, run.holder, run.busy, run.visits, run.t_start, run.t_end,
            run.ops, run.warmup)
    run.live[:] = False

"""Progress, compiled: :mod:`numalab.engine.progress` and :func:`numalab.costs.progress_rates`
for one replica, plus the replica's share of :meth:`numalab.engine.Batch.begin_step` and
:meth:`~numalab.engine.Batch.end_step`.

Kernel counterpart: none directly -- the workload side (autonuma-benchmark's ``bzero`` loops)
and the scheduler's accounting the NUMA code reads (``se.sum_exec_runtime`` as ``runtime``, the
kernel time a task owes as ``kdebt``). Phases (``fn(L, Q, S, X, r, k)``): :func:`begin_step`,
:func:`run_threads` (:func:`refresh`, :func:`record_locality`, :func:`advance`),
:func:`end_step`; :func:`progress_rates` is costs.progress_rates / costs._coherent_rates for one
replica's row, callable on its own.

Every float operation is the numpy engine's, in its order: a numpy sum over a last axis is
:func:`.numsum.psum`, over another axis :func:`.numsum.seqsum` (but a (R, T, 1) array summed over
T is summed as a last axis: numpy drops the axis of length 1), bincount and cumsum a plain loop.
``np.maximum`` / ``np.minimum`` are :func:`_maximum` / :func:`_minimum` (a NaN propagates).

The helpers take arrays, not the named tuples, and :func:`refresh` / :func:`record_locality` are
inlined: numba spends seconds on every function compiled with (L, Q, S, X) as arguments.
"""

from __future__ import annotations

import numpy as np

from ...workloads import PH_DONE, PH_INIT, PH_LOOP, PH_WAIT
from ._nb import inner, jit
from .numsum import psum, seqsum

__all__ = ["begin_step", "refresh", "record_locality", "run_threads", "advance", "end_step", "progress_rates",
           "thread_frac", "cumulative_rates"]

#: the coherence fixed point's rounds (costs._coherent_rates' ``iterations``)
COHERENT_ROUNDS = 40


@jit(inline="always")
def _maximum(a, b):
    """np.maximum of two floats: a NaN propagates, ties give ``a`` (numpy's scalar loop)."""
    if a >= b or a != a:
        return a
    return b


@jit(inline="always")
def _minimum(a, b):
    """np.minimum of two floats: a NaN propagates, ties give ``a``."""
    if a <= b or a != a:
        return a
    return b


# ------------------------------------------------------------------------------ progress_rates
@jit
def _thread_bw(lat, cores, smt, thread_bw, smt_share, node, running):
    """progress_rates' setup: each thread's streaming rate ``tbw`` (T,) (thread_bw_GBps of its
    node, shared with an SMT sibling when its node runs more threads than cores) and ``rel``
    (N, N) = latency[a, a] / latency[a, n] (bandwidth ∝ 1/latency)."""
    T, N = node.shape[0], lat.shape[0]
    rel = np.empty((N, N))
    for a in range(N):
        for n in range(N):
            rel[a, n] = lat[a, a] / lat[a, n]
    k = np.zeros(N)                       # running threads per node (bincount: exact counts)
    for t in range(T):
        if running[t]:
            k[node[t]] += 1.0
    smtf = np.empty(N)
    for n in range(N):
        # np.clip(2.0 * (k - c), 0.0, k) = minimum(maximum(x, 0.0), k)
        sharing = _minimum(_maximum(2.0 * (k[n] - cores[n]), 0.0), k[n]) if smt[n] > 1 else 0.0
        smtf[n] = (k[n] - sharing + sharing * smt_share) / _maximum(k[n], 1.0) if k[n] > 0 else 1.0
    tbw = np.empty(T)
    for t in range(T):
        tbw[t] = (thread_bw[node[t]] * 1e9) * smtf[node[t]]
    return tbw, rel


@jit
def _link_ratio(load, route, link_cap, link_eff, ratio):
    """costs._link_load then the saturation of every link direction into ``ratio`` (L,): each
    pair's ``load`` [a, n] added onto its route a -> n, then n -> a (a write's two ways), pairs in
    row-major order (numpy's bincount over costs.link_incidence(topo)["both"])."""
    N = load.shape[0]
    H = route.shape[2]
    for d in range(ratio.shape[0]):
        ratio[d] = 0.0
    for a in range(N):
        for n in range(N):
            for k in range(H):
                d = route[a, n, k]
                if d >= 0:
                    ratio[d] += load[a, n]
            for k in range(H):
                d = route[n, a, k]
                if d >= 0:
                    ratio[d] += load[a, n]
    for d in range(ratio.shape[0]):
        ratio[d] = _maximum(1.0, ratio[d] / ((link_cap[d] * 1e9) * link_eff))


@jit
def _route_max(factor, route, a, n, both):
    """costs._route_max for the pair (a, n): the largest ``factor`` over the route a -> n (and
    n -> a with ``both``), 1.0 for none."""
    m = 1.0
    for k in range(route.shape[2]):
        d = route[a, n, k]
        if d >= 0:
            m = _maximum(m, factor[d])
    if both:
        for k in range(route.shape[2]):
            d = route[n, a, k]
            if d >= 0:
                m = _maximum(m, factor[d])
    return m


@jit
def _closed_rates(node_bw, link_bw, link_cap, route, write_eff, link_eff, both, node, frac, running, tbw, rel, out):
    """costs.progress_rates' closed form: unconstrained speeds, then each memory controller's
    and each link's saturation factor from them, then the speeds at those factors."""
    T, N = frac.shape
    bw = np.empty((T, N))
    s = np.empty(T)
    for t in range(T):
        u = 0.0                           # `u += tpb[:, :, n]` node after node
        for n in range(N):
            bw[t, n] = tbw[t] * rel[node[t], n]
            u += frac[t, n] / bw[t, n]
        s[t] = 1.0 / _maximum(u, 1e-30) if running[t] else 0.0
    buf = np.empty(T)
    sigma = np.empty(N)                   # by memory node: (s * frac_t).sum(axis=2) / cap
    for n in range(N):
        for t in range(T):
            buf[t] = s[t] * frac[t, n]
        sigma[n] = _maximum(1.0, psum(buf) / ((node_bw[n] * 1e9) * write_eff[n]))
    load = np.zeros((N, N))               # [cpu node a, memory node n]; a == n: no link
    for a in range(N):
        for n in range(N):
            if a == n:
                continue
            for t in range(T):            # s_on: s of the threads on a, 0.0 elsewhere
                buf[t] = (s[t] if node[t] == a else 0.0) * frac[t, n]
            load[a, n] = psum(buf)
    slink = np.empty((N, N))              # a write from a to n uses both directions
    if both:                              # every link direction its routes cross, both senses
        ratio = np.empty(link_cap.shape[0])
        _link_ratio(load, route, link_cap, link_eff, ratio)
        for a in range(N):
            for n in range(N):
                slink[a, n] = _route_max(ratio, route, a, n, True)
    else:                                 # 0.5.0: two lines on the direction a -> n only
        for a in range(N):
            for n in range(N):
                slink[a, n] = _maximum(1.0, load[a, n] / (((link_bw[n] * 1e9) * link_eff) * 0.5))
    for t in range(T):
        u2 = 0.0
        for n in range(N):
            sl = 1.0 if n == node[t] else slink[node[t], n]
            u2 += frac[t, n] * _maximum(sigma[n], sl) / bw[t, n]
        out[t] = 1.0 / _maximum(u2, 1e-30) if running[t] else 0.0


@jit
def _coherent_shares(node, init, thread_mm, N, both):
    """costs._coherent_rates' per-process counts: ``cs`` (T,) the share of a thread's bytes that
    reaches DRAM (1 / n_p for an init thread of process p), ``pull`` (T, N) the share it takes
    from node b's caches ((1 - 1 / n_p) k_pb / (n_p - 1), remote nodes only; k_pb / (n_p - 1) with
    ``both`` False, the 0.5.0 accounting). Processes are disjoint sets of
    threads, so numpy's loop over them in np.unique order sets each thread once."""
    T = node.shape[0]
    M = 0
    for t in range(T):
        M = max(M, thread_mm[t] + 1)
    n_p = np.zeros(M, dtype=np.int64)
    k_pb = np.zeros((M, N), dtype=np.int64)
    for t in range(T):
        if init[t]:
            n_p[thread_mm[t]] += 1
            k_pb[thread_mm[t], node[t]] += 1
    cs = np.ones(T)
    pull = np.zeros((T, N))
    for t in range(T):
        if init[t]:
            p = thread_mm[t]
            cs[t] = 1.0 / max(n_p[p], 1)
            for b in range(N):
                if node[t] != b:
                    if both:
                        pull[t, b] = (1.0 - cs[t]) * (k_pb[p, b] / max(n_p[p] - 1, 1))
                    else:
                        pull[t, b] = k_pb[p, b] / max(n_p[p] - 1, 1)
    return cs, pull


@jit
def _coherent_speeds(F, G, node, frac, a, cs, pull, running, both, s):
    """costs._coherent_rates' ``speeds(F, G)``: each thread's speed at controller factors ``F``
    and link direction factors ``G`` [x -> y] (its memory-bound bytes, both directions when
    remote, and its cache-to-cache pulls, into its node), into ``s``; with ``both`` False ``G``
    is 0.5.0's pair resource [cpu node, memory node]."""
    T, N = frac.shape
    buf = np.empty(N)
    for t in range(T):
        at = node[t]
        for n in range(N):
            buf[n] = pull[t, n] * ((G[n, at] if both else G[at, n]) - 1.0)
        peer = 1.0 + psum(buf)
        for n in range(N):
            g_in = G[n, at] if both else G[at, n]     # 0.5.0: G[a, n] is the pair resource
            fac = _maximum(F[n], _maximum(G[at, n], g_in) if at != n else 1.0)
            fac = _maximum(1.0 + cs[t] * (fac - 1.0), peer)
            buf[n] = frac[t, n] * a[t, n] * fac
        U = psum(buf)
        s[t] = 1.0 / _maximum(U, 1e-30) if running[t] else 0.0


@jit
def _column_sum(x, n, buf):
    """``x.sum(axis=1)`` of numpy's (R, T, N) at column ``n`` of one replica's (T, N) ``x``: in
    thread order from the first, but numpy's pairwise sum when N == 1 (the axis of length 1 is
    dropped and T becomes the contiguous one)."""
    for t in range(x.shape[0]):
        buf[t] = x[t, n]
    if x.shape[1] == 1:
        return psum(buf)
    return seqsum(buf)


@jit
def _coherent_rates(node_bw, link_bw, link_cap, route, write_eff, link_eff, both, node, frac, running, tbw, rel, init,
                    thread_mm, out):
    """costs._coherent_rates for one replica: the fixed point (COHERENT_ROUNDS rounds) of the
    controller factors F and link factors G while threads are in a shared init sweep."""
    T, N = frac.shape
    a = np.empty((T, N))                  # s/byte unconstrained: 1.0 / (tbw * relt)
    for t in range(T):
        for n in range(N):
            a[t, n] = 1.0 / (tbw[t] * rel[node[t], n])
    cs, pull = _coherent_shares(node, init, thread_mm, N, both)
    F = np.ones(N)
    G = np.ones((N, N))                   # route x -> y's factor (0.5.0: the pair resource [a, n])
    Gd = np.ones(link_cap.shape[0])       # per link direction (both)
    dl = np.empty(link_cap.shape[0])
    s = np.empty(T)
    dram = np.empty((T, N))
    out_ = np.empty((T, N))               # write-backs [node of t -> n]
    inflow = np.empty((T, N))             # memory reads and pulls [b -> node of t]
    out_sum = np.empty((N, N))
    in_sum = np.empty((N, N))
    col = np.empty(T)
    for _ in range(COHERENT_ROUNDS):
        _coherent_speeds(F, G, node, frac, a, cs, pull, running, both, s)
        for t in range(T):
            for n in range(N):
                dram[t, n] = s[t] * frac[t, n] * cs[t]
                out_[t, n] = dram[t, n] if node[t] != n else 0.0
                inflow[t, n] = out_[t, n] + s[t] * pull[t, n]
        for n in range(N):
            F[n] = _maximum(1.0, F[n] * _column_sum(dram, n, col) / ((node_bw[n] * 1e9) * write_eff[n]))
        for x in range(N):
            for y in range(N):
                for t in range(T):        # np.where(on, inflow / out, 0.0) over all threads
                    col[t] = inflow[t, y] if node[t] == x else 0.0
                in_sum[x, y] = psum(col) if N == 1 else seqsum(col)
                if both:
                    for t in range(T):
                        col[t] = out_[t, y] if node[t] == x else 0.0
                    out_sum[x, y] = psum(col) if N == 1 else seqsum(col)
        if both:                          # pair x -> y's transfers onto every direction of its route
            for d in range(dl.shape[0]):
                dl[d] = 0.0
            H = route.shape[2]
            for x in range(N):
                for y in range(N):
                    traffic = out_sum[x, y] + in_sum[y, x]
                    for k in range(H):
                        d = route[x, y, k]
                        if d >= 0:
                            dl[d] += traffic
            for d in range(dl.shape[0]):
                Gd[d] = _maximum(1.0, Gd[d] * dl[d] / ((link_cap[d] * 1e9) * link_eff))
            for x in range(N):
                for y in range(N):
                    G[x, y] = _route_max(Gd, route, x, y, False)
        else:
            for x in range(N):
                for y in range(N):        # 0.5.0: the pair [a, n], two lines each
                    cap_y = (link_bw[y] * 1e9) * link_eff
                    G[x, y] = _maximum(1.0, G[x, y] * in_sum[x, y] / (cap_y * 0.5))
    _coherent_speeds(F, G, node, frac, a, cs, pull, running, both, out)


@jit
def progress_rates(lat, cores, smt, thread_bw, node_bw, link_bw, link_cap, route, smt_share, write_eff, link_eff, both,
                   node, frac, running, shared_init, thread_mm, out):
    """costs.progress_rates for one replica: write speed (bytes/s) of each thread into ``out``
    (T,), 0.0 for a thread not running. Topology arrays (``lat`` latency_ns (N, N), per node
    ``cores``, ``smt``, ``thread_bw`` / ``node_bw`` / ``link_bw`` GB/s, ``link_cap`` GB/s per link
    direction and ``route`` (Topology.link_cap_GBps / link_route), ``write_eff`` the
    topology's write_efficiency), Costs' ``smt_share`` and ``link_write_efficiency``, the option
    ``link_both_directions`` (``both``); the replica's ``node`` (T,), ``frac`` (T, N),
    ``running`` (T,); ``shared_init`` (T,) bool (all False: numpy's None) and ``thread_mm`` (T,):
    a running thread in a shared init makes it costs._coherent_rates."""
    tbw, rel = _thread_bw(lat, cores, smt, thread_bw, smt_share, node, running)
    T = node.shape[0]
    init = np.empty(T, dtype=np.bool_)
    coherent = False
    for t in range(T):
        init[t] = shared_init[t] and running[t]
        coherent = coherent or init[t]
    if coherent:
        _coherent_rates(node_bw, link_bw, link_cap, route, write_eff, link_eff, both, node, frac, running, tbw, rel,
                        init, thread_mm, out)
    else:
        _closed_rates(node_bw, link_bw, link_cap, route, write_eff, link_eff, both, node, frac, running, tbw, rel, out)


# ------------------------------------------------------------------------------ refresh
@jit
def thread_frac(entry_thread, entry_phase, entry_class, entry_share, phase, cls_node, node, frac):
    """progress.thread_frac for one replica (the layout's access entries; the replica's phase,
    cls_node and node), into ``frac`` (T, N): each thread's bytes per node from the entries of
    its current phase (np.bincount per (thread, node) bin: entry order from
    0.0; the entries of the other phase add 0.0), normalised by their psum over nodes; a thread
    with no bytes counts as local (1.0 at its node)."""
    T, N = frac.shape
    frac[:, :] = 0.0
    for e in range(entry_thread.shape[0]):
        t = entry_thread[e]
        ph = entry_phase[e]
        if phase[t] != ph or (ph != PH_INIT and ph != PH_LOOP):
            continue
        c = entry_class[e]
        for n in range(N):
            frac[t, n] += entry_share[e] * cls_node[c, n]
    for t in range(T):
        tot = psum(frac[t])
        for n in range(N):
            if tot > 0:
                frac[t, n] = frac[t, n] / tot
            else:
                frac[t, n] = 1.0 if n == node[t] else 0.0


@jit
def cumulative_rates(entry_thread, entry_phase, entry_touch_per_byte, entry_fixed_hz, cls_start, cls_end, phase,
                     done, speed, cum, lam_c):
    """progress.cumulative_rates and the class rates for one replica: ``cum`` (E + 1,) the
    running sum of the entries' touch rates (speed * touch_per_byte + fixed_hz while the entry's
    thread is in the entry's phase and the replica is not done; 0.0 otherwise, which numpy leaves
    out of its cumsum: x + 0.0 == x), ``lam_c`` (C,) = cum[end] - cum[start]."""
    cum[0] = 0.0
    for e in range(entry_thread.shape[0]):
        t = entry_thread[e]
        ph = entry_phase[e]
        if not done and phase[t] == ph and (ph == PH_INIT or ph == PH_LOOP):
            rate = speed[t] * entry_touch_per_byte[e] + entry_fixed_hz[e]
            # np.cumsum starts from its first element (no 0.0 + in front of it)
            cum[e + 1] = rate if e == 0 else cum[e] + rate
        else:
            cum[e + 1] = cum[e]
    for c in range(cls_start.shape[0]):
        lam_c[c] = cum[cls_end[c]] - cum[cls_start[c]]


@inner
def refresh(L, Q, S, X, r):
    """progress.refresh for replica ``r`` when its rates are dirty: node shares (S.frac),
    speeds (S.speed, coherent while a running thread is in a bound init and the option
    init_coherence is on), touch rates (S.cum, S.lam_c); the locality increments go stale."""
    if not S.dirty[r]:
        return
    T = L.T
    phase, done = S.phase[r], S.done[r]
    thread_frac(L.entry_thread, L.entry_phase, L.entry_class, L.entry_share, phase, S.cls_node[r], S.node[r],
                S.frac[r])
    running = np.empty(T, dtype=np.bool_)
    shared_init = np.empty(T, dtype=np.bool_)
    for t in range(T):
        running[t] = (phase[t] == PH_INIT or phase[t] == PH_LOOP) and not done
        shared_init[t] = L.init_coherence and phase[t] == PH_INIT and L.init_bind[t]
    progress_rates(L.latency_ns, L.node_cores, L.node_smt, L.thread_bw_GBps, L.node_bw_GBps, L.link_bw_GBps,
                   L.link_cap_GBps, L.link_route, L.smt_share, L.write_efficiency, L.link_write_efficiency, L.link_both_directions, S.node[r],
                   S.frac[r], running,
                   shared_init, L.thread_mm, S.speed[r])
    cumulative_rates(L.entry_thread, L.entry_phase, L.entry_touch_per_byte, L.entry_fixed_hz, L.cls_start,
                     L.cls_end, phase, done, S.speed[r], S.cum[r], S.lam_c[r])
    S.dirty[r] = False
    S.conv_stale[r] = True
    X.step_local_ok[r] = False


# ------------------------------------------------------------------------------ the phases
@inner
def begin_step(L, Q, S, X, r, k):
    """Batch.begin_step for replica ``r``: who runs this step (init or loop phase, replica not
    done), no protection slot used, no placement request."""
    live = not S.done[r]
    for t in range(L.T):
        ph = S.phase[r, t]
        X.running[r, t] = (ph == PH_INIT or ph == PH_LOOP) and live
        X.want[r, t] = False
    X.slot[r] = 0


@inner
def record_locality(L, S, X, r):
    """progress.record_locality / locality_increments for replica ``r``: add the step's local
    and total written bytes (psum over threads of speed * frac at the thread's node, and of
    speed, times dt), computed once per refresh."""
    if not X.step_local_ok[r]:
        speed, frac, node = S.speed[r], S.frac[r], S.node[r]
        buf = np.empty(L.T)
        for t in range(L.T):
            buf[t] = speed[t] * frac[t, node[t]]
        X.step_local[r, 0] = psum(buf) * L.dt
        X.step_local[r, 1] = psum(speed) * L.dt
        X.step_local_ok[r] = True
    S.local_acc[r] += X.step_local[r, 0]
    S.local_w[r] += X.step_local[r, 1]


@jit
def advance(dt, t0, phase_bytes, main_of_thread, running, used_k, speed, phase, bytes_left, finish):
    """progress.advance for one replica's rows: each running thread writes speed * (dt - used_k)
    bytes; a thread whose phase runs out finishes at the exact instant (init -> loop carries the
    rest of the step at the same speed); workers waiting for a finished main thread start their
    loop. Returns whether a phase changed (the replica's rates go dirty). (Setting a waiting
    worker to loop in place is numpy's all-at-once test: only a main thread's PH_DONE counts.)"""
    changed = False
    T = phase.shape[0]
    for t in range(T):
        if not running[t]:
            continue
        sp, bl, used = speed[t], bytes_left[t], used_k[t]
        work = dt - used
        left = bl - sp * work
        if left <= 0:
            spent = _maximum(bl, 0.0) / _maximum(sp, 1e-30) if sp > 0 else 0.0
            tfin = t0 + used + spent
            leftover = _maximum(work - spent, 0.0)
            if phase[t] == PH_INIT and phase_bytes[t, 1] > 0:
                phase[t] = PH_LOOP
                left = phase_bytes[t, 1] - leftover * sp
                finish[t] = np.nan
            else:
                phase[t] = PH_DONE
                left = 0.0
                finish[t] = tfin
            changed = True
        bytes_left[t] = left
    for t in range(T):
        if phase[t] == PH_WAIT and phase[main_of_thread[t]] == PH_DONE:
            phase[t] = PH_LOOP
            changed = True
    return changed


@inner
def run_threads(L, Q, S, X, r, k):
    """progress.run_threads for replica ``r``, step ``k``: refresh, record locality, pay kernel
    debt first (used_k = min(kdebt, dt): no user progress meanwhile), accrue runtime, keep each
    thread's phase and bytes left before its progress (X.phase0, X.left0: the fault phase's
    first-arrival clock) and write the bytes."""
    dt = L.dt
    refresh(L, Q, S, X, r)
    record_locality(L, S, X, r)
    for t in range(L.T):
        used = _minimum(S.kdebt[r, t], dt)
        S.kdebt[r, t] -= used
        X.used_k[r, t] = used
        S.runtime[r, t] += dt if X.running[r, t] else 0.0
        X.phase0[r, t] = S.phase[r, t]
        X.left0[r, t] = S.bytes_left[r, t]
    if advance(dt, X.times[k], L.phase_bytes, L.main_of_thread, X.running[r], X.used_k[r], S.speed[r], S.phase[r],
               S.bytes_left[r], S.finish[r]):
        S.dirty[r] = True


@inner
def end_step(L, Q, S, X, r, k):
    """Batch.end_step for replica ``r`` (the clock and the invariants are the loop's): a live
    replica whose threads are all done becomes done, elapsed = np.nanmax(finish) + the harness
    overhead, and its rates are refreshed (to zero) next step. ``done`` changes only here, so
    ``not S.done[r]`` is the step's ``live``."""
    if S.done[r]:
        return
    for t in range(L.T):
        if S.phase[r, t] != PH_DONE:
            return
    m = np.nan
    for t in range(L.T):                  # np.nanmax: NaN only when every finish is NaN
        x = S.finish[r, t]
        if x == x and (m != m or x > m):
            m = x
    S.elsp[r] = m + L.harness_overhead_s
    S.done[r] = True
    S.dirty[r] = True

"""Discrete-event simulation of the futex network (:mod:`numalab.futex.events`).

:func:`simulate` is vectorised over replicas (one event per replica per numpy step,
per-thread pre-drawn random streams so a seed's result does not depend on the batch; each
thread takes its keys in cyclic order from a random first one). It applies the service rule
of :mod:`numalab.futex.costs` literally: an arrival that finds the station busy is served
with the contended line count, one that finds it idle with ``lines_per_op``, each line pull
priced from the station's actual last holder. The scalar oracle it is checked against is
``numalab.reference.futex``.
"""

from __future__ import annotations

import numpy as np

from .. import libm
from ..errors import NumalabValueError, check_choice
from . import events_compiled
from .stations import Network

__all__ = ["simulate"]

def _thread_streams(net: Network, seeds: np.ndarray, thr_point: np.ndarray, ops: int, dist: str):
    """Every thread's pre-drawn random stream, drawn per point in thread order from
    ``Generator((seed, 0xF07E))``: the factors [1, mean 1] of its think times ``Et``
    (T, ops + 1) and of its two visits' service times ``Es`` (T, ops + 1, 2) -- Exp(1) draws,
    or 1 for ``dist="deterministic"`` -- and its first key ``start`` (T,), an index into
    its cyclic key order. Returns ``(Et, Es, start)``."""
    T = thr_point.size
    Et = np.ones((T, ops + 1))
    Es = np.ones((T, ops + 1, 2))
    start = np.zeros(T, dtype=np.int64)
    for p in range(net.n_points):
        idx = np.flatnonzero(thr_point == p)
        g = np.random.default_rng((int(seeds[p]), 0xF07E))
        # the Exp(1) factors as the C library computes -log1p(-u): the same bits on every CPU
        # (numpy's own log1p loop differs in the last bit where it has AVX-512; numalab.libm)
        draws, exp1 = libm.uniforms_and_exp1(g, (idx.size, ops + 1, 4))
        start[idx] = (draws[:, 0, 0] * net.thr_nf[idx]).astype(np.int64)
        if dist == "exponential":
            Et[idx] = exp1[..., 1]
            Es[idx] = exp1[..., 2:4]
    return Et, Es, start


def _point_threads(thr_point: np.ndarray, P: int) -> np.ndarray:
    """(P, Tmax) table of each point's global thread ids in thread order, -1 padding."""
    T = thr_point.size
    Tmax = np.bincount(thr_point, minlength=P).max()
    order = np.argsort(thr_point, kind="stable")
    slot = np.arange(T) - np.searchsorted(thr_point[order], thr_point[order])
    table = np.full((P, Tmax), -1, dtype=np.int64)
    table[thr_point[order], slot] = order
    return table


class _EventRun:
    """The state of one :func:`simulate` run, flat over its points' threads (T), stations (U)
    and points (P). Per thread: its prices (``think`` [ns], ``cpu`` slowdown, ``node``,
    handoff costs ``line`` (T, holder node, home node) [ns], cold fetch ``cold`` (T, home
    node) [ns], L2 hit ``selfc`` [ns]), its random streams, the station of its next visit
    (``ref`` refcount line, then ``bucket``; ``stage`` 0 / 1), its next arrival time
    ``t_next`` (P, Tmax) [ns] and its ``done_ops``, ``t_warm``, ``t_last`` [ns]. Per station:
    ``free_at`` [ns] when the lock is next free, the last ``holder`` (-1: a cold line), its
    ``busy`` time in the window [ns] and ``visits``. Per point: the utilisation window
    ``t_start`` .. ``t_end`` [ns] and ``live``."""

    def __init__(self, net: Network, seeds: np.ndarray, ops: int, warmup: int, dist: str):
        """Per-thread prices and streams of ``net``, every thread before its first arrival
        (after one think time), every line cold, every window not yet open."""
        self.net, self.ops, self.warmup = net, ops, warmup
        P = net.n_points
        self.thr_point = thr_point = net.cls_point[net.thr_cls]
        T = thr_point.size
        self.Et, self.Es, self.start = _thread_streams(net, seeds, thr_point, ops, dist)
        self.table = table = _point_threads(thr_point, P)
        self.think = net.cls_think[net.thr_cls]
        self.cpu = net.cls_cpu[net.thr_cls]
        self.node = net.cls_node[net.thr_cls]
        self.line = net.cls_line[net.thr_cls]   # (T, holder node, home node)
        self.line_busy = net.cls_line_busy[net.thr_cls]
        self.cold = net.cls_cold[net.thr_cls]   # (T, home node)
        self.selfc = net.cls_self[net.thr_cls]
        self.sib = net.thr_sib                  # (T, smax) the other threads on my core
        self.l1 = net.cls_l1[net.thr_cls] != 0.0   # ... which share my L1/L2
        self.bucket, self.ref = self.keys(np.arange(T), np.zeros(T, dtype=np.int64))
        self.stage = np.where(self.ref >= 0, 0, 1)
        self.t_next = np.full((P, table.shape[1]), np.inf)
        self.t_next[table >= 0] = (self.think * self.Et[:, 0])[table[table >= 0]]
        self.done_ops = np.zeros(T, dtype=np.int64)
        self.t_warm = np.zeros(T)
        self.t_last = np.zeros(T)
        U = net.st_home.size
        self.free_at = np.zeros(U)
        # per (station, node): when the last request of that node there completes (node
        # batching of contended atomic lines, :meth:`serve`)
        self.node_until = np.full((U, net.cls_line.shape[1]), -np.inf)
        self.holder = np.full(U, -1, dtype=np.int64)
        # each thread's latest service: its station and end [ns] (SMT batching, :meth:`serve`)
        self.last_st = np.full(T, -1, dtype=np.int64)
        self.last_end = np.full(T, -np.inf)
        # ... whether it rode a sibling's, and how many rode it: a queued RMW carries at most
        # the core's other hardware threads (smt - 1; more threads time-share the core)
        self.rider = np.zeros(T, dtype=bool)
        self.carried = np.zeros(T, dtype=np.int64)
        self.cap = np.array([p[0].smt - 1 for p in net.points], dtype=np.int64)[thr_point]
        self.busy = np.zeros(U)
        self.visits = np.zeros(U)
        self.t_start = np.full(P, np.inf)   # utilisation window of each point
        self.t_end = np.zeros(P)
        self.live = np.ones(P, dtype=bool)

    def keys(self, g, j):
        """Stations of thread ``g``'s ``j``-th op: its bucket and its refcount line (-1:
        none). The thread takes its keys in a fixed cyclic order from a random first key
        (perf bench's ``for (i = 0; i < nfutexes; i++)`` loop, started at a random phase)."""
        col = (self.start[g] + j) % self.net.thr_nf[g]
        return self.net.thr_buckets[g, col], self.net.thr_ref[g, col]

    def step(self) -> None:
        """Advance every live point by its earliest event: a thread arriving at a station."""
        pl = np.flatnonzero(self.live)
        jj = np.argmin(self.t_next[pl], axis=1)
        a = self.t_next[pl, jj]
        g = self.table[pl, jj]
        stg = self.stage[g]
        st = np.where(stg == 0, self.ref[g], self.bucket[g])
        c = self.serve(g, st, stg, a, self.t_start[pl])
        fin = stg == 1
        # not finished: go on to the bucket right after the refcount line
        self.stage[g[~fin]] = 1
        self.t_next[pl[~fin], jj[~fin]] = c[~fin]
        self.complete(pl[fin], jj[fin], g[fin], c[fin])

    def line_cost(self, g, st, held):
        """Cost [ns] for thread ``g`` of getting station ``st``'s line from where it is: an
        L2 hit if ``g`` or another thread on its core (the shared L1/L2) held it last, the DRAM
        fetch from its home node if nobody did, else the handoff from the last holder's node
        (``held``: the lock is held, the holder takes the line back while this thread asks for
        it, so a cross-node handoff pays the conflict round trip)."""
        prev = self.holder[st]
        hs = self.net.st_home[st]
        pn = self.node[np.maximum(prev, 0)]
        handoff = np.where(held, self.line_busy[g, pn, hs], self.line[g, pn, hs])
        mate = ((self.sib[g] == prev[:, None]) & (prev[:, None] >= 0)).any(axis=1)
        mine = (prev == g) | (self.l1[g] & mate)
        cost = np.where(mine, self.selfc[g], handoff)
        return np.where(prev < 0, self.cold[g, hs], cost)   # first touch: from the home's DRAM

    def serve(self, g, st, stg, a, ts):
        """FCFS service of thread ``g`` arriving at ``a`` [ns] at station ``st`` (visit
        ``stg`` of its op): from ``max(a, free_at)`` for ``cpu * st_base`` plus the line
        pulls (``st_lines_busy`` if the lock is held on arrival, else ``st_lines``) times
        :meth:`line_cost`, scaled by its service draw; on an atomic line with SMT batching a
        thread that finds an RMW of a sibling on its core pending there rides it instead
        (:meth:`riders`): it ends after that one by its own L1 hits. Books the station's busy
        time after the window start ``ts`` [ns]. Returns the completion times [ns]."""
        net = self.net
        held = a < self.free_at[st]                         # the lock is held on arrival
        cost = self.line_cost(g, st, held)
        nd = self.node[g]
        batch = net.st_batch[st]
        if np.any(batch):
            # a contended atomic line goes to the next queued request of the node that has it
            # first: with a request of my node ahead of me, the line comes from my node
            mine = held & (self.node_until[st, nd] > a)
            cost = np.where(mine, batch * self.line[g, nd, net.st_home[st]] + (1.0 - batch) * cost, cost)
        sort = net.st_sort[st]
        if np.any(sort):
            # a persistent lock's round sorted by node: the handoff crosses nodes only at a
            # boundary of the round's runs (st_px of them), else it comes from my node
            srt = (1.0 - net.st_px[st]) * self.line[g, nd, net.st_home[st]] + net.st_px[st] * net.st_xnode[st, nd]
            cost = np.where(held, (1.0 - sort) * cost + sort * srt, cost)
        fwd = net.st_forward[st]
        if np.any(fwd != 1.0):
            # an atomic line found busy is forwarded: the request was queued when it came free
            cost = np.where(held, fwd * cost, cost)
        nl = np.where(held, net.st_lines_busy[st], net.st_lines[st])
        n_done = self.done_ops[g]
        s = (net.st_base[st] * self.cpu[g] + nl * cost) * self.Es[g, n_done, stg]
        b = np.maximum(a, self.free_at[st])
        c = b + s
        riding = self.riders(g, st, a)
        if riding is not None:
            # my RMW rides along with a pending one of an SMT sibling: the line comes to our
            # shared L1 for it and mine completes right after, an L1/L2 hit, ahead of the
            # requests queued behind the sibling's
            ride, after, on = riding
            b = np.where(ride, after, b)
            c = np.where(ride, b + (net.st_base[st] * self.cpu[g] + nl * self.selfc[g]) * self.Es[g, n_done, stg], c)
            self.carried[g] = 0
            np.add.at(self.carried, on[ride], 1)
            self.rider[g] = ride
        # (a queued visit always ends last; a rider only when nobody queued behind its sibling)
        last = c >= self.free_at[st]
        self.free_at[st] = np.maximum(self.free_at[st], c)
        self.holder[st] = np.where(last, g, self.holder[st])
        self.node_until[st, nd] = np.maximum(self.node_until[st, nd], c)
        self.last_st[g], self.last_end[g] = st, c
        self.busy[st] += np.maximum(c - np.maximum(b, ts), 0.0)
        self.visits[st] += c > ts
        return c

    def riders(self, g, st, a):
        """``(ride, after, on)``: which of threads ``g`` arriving at ``a`` [ns] at stations
        ``st`` find a request of an SMT sibling on their core pending there (a station with
        ``st_core`` = 1: an atomic line) that can take one more rider (it did not ride itself,
        and fewer than ``smt - 1`` rode it), the earliest such sibling's end [ns], where they
        ride, and that sibling; None when no station of the step has SMT batching."""
        core = self.net.st_core[st]
        if not np.any(core):
            return None
        mates = self.sib[g]
        m = np.maximum(mates, 0)
        pending = ((mates >= 0) & (self.last_st[m] == st[:, None]) & (self.last_end[m] > a[:, None])
                   & ~self.rider[m] & (self.carried[m] < self.cap[g][:, None]))
        end = np.where(pending, self.last_end[m], np.inf)
        first = end.argmin(axis=1)
        rows = np.arange(g.size)
        return pending.any(axis=1) & (core != 0.0), end[rows, first], m[rows, first]

    def complete(self, pf, jf, gf, cf) -> None:
        """Threads ``gf`` (slots ``jf`` of points ``pf``) complete an op at ``cf`` [ns]: count
        it, open a point's utilisation window at its first ``warmup``-th completion, draw the
        next op's keys and think time, and stop a point at its first ``ops``-th completion."""
        done_ops, warmup = self.done_ops, self.warmup
        done_ops[gf] += 1
        n = done_ops[gf]
        self.t_warm[gf] = np.where(n == warmup, cf, self.t_warm[gf])
        self.t_last[gf] = cf
        opening = (n == warmup) & np.isinf(self.t_start[pf])
        if opening.any():  # open these points' windows; count the work already queued past the start
            self.t_start[pf[opening]] = cf[opening]
            on = np.isin(self.net.st_point, pf[opening])
            self.busy[on] += np.maximum(self.free_at[on] - self.t_start[self.net.st_point[on]], 0.0)
        nb, nr = self.keys(gf, n)
        self.bucket[gf], self.ref[gf] = nb, nr
        self.stage[gf] = np.where(nr >= 0, 0, 1)
        self.t_next[pf, jf] = cf + self.think[gf] * self.Et[gf, n]
        stop = pf[n >= self.ops]
        self.t_end[stop] = cf[n >= self.ops]
        self.live[stop] = False

    def result(self) -> dict:
        """:func:`simulate`'s answer: each thread's rate [ops/ns] from its ``warmup``-th to
        its last completion, and each station's utilisation over its point's window (busy
        time / window length) with the visits that weigh it. A thread that is not counted
        (a futex_numa lock thread, asleep in nanosleep most of the time) and did fewer than
        ``warmup + 2`` operations is measured over the whole run instead."""
        measured = self.done_ops - self.warmup
        counted = self.net.cls_counted[self.net.thr_cls]
        if np.any((measured < 2) & counted):
            raise NumalabValueError(
                f"ops={self.ops} leaves a thread with fewer than {self.warmup + 2} operations; allowed: raise ops"
            )
        few = measured < 2
        rate = np.empty(measured.size)
        rate[few] = self.done_ops[few] / self.t_end[self.thr_point[few]]
        rate[~few] = measured[~few] / (self.t_last - self.t_warm)[~few]
        # close each window: busy time and visits scheduled beyond the stopping completion
        te = self.t_end[self.net.st_point]
        busy = self.busy - np.maximum(self.free_at - te, 0.0)
        rho = busy / (te - self.t_start[self.net.st_point])
        return dict(rate=rate, ops=self.done_ops, thr_point=self.thr_point, rho=rho, visits=self.visits)


def simulate(net: Network, seeds, *, ops: int = 400, warmup: int = 50, dist: str = "exponential",
             kernel: str = "auto") -> dict:
    """Discrete-event simulation of the network, vectorised over points (one per seed).

    Each step advances every unfinished point by its earliest event (a thread arriving at a
    station); FCFS service starts at ``max(arrival, station free)``. Thread j of a point
    draws its think times, service factors and key choices from its own pre-drawn stream
    (``Generator((seed, 0xF07E))``), so the result of a seed does not depend on the batch.
    ``dist="exponential"`` scales think and service by Exp(1) draws (the MVA's assumption);
    ``"deterministic"`` uses the means. A point stops when a thread has done ``ops``
    operations; each thread's rate is measured from its ``warmup``-th to its last completion.
    A line's first visit costs the DRAM fetch ``cls_cold`` from its home node; later visits
    the handoff ``cls_line`` from the previous holder's node (or ``cls_self``), pulled
    ``st_lines`` times if the station is idle on arrival, ``st_lines_busy`` times if busy.

    Station utilisation is measured over each point's window, from the first time one of
    its threads reaches ``warmup`` completions to the stopping completion: busy time clipped
    to the window / window length (``rho``, (U,)); ``visits`` (U,) counts the services
    scheduled before the stop that end after the window opened (weights for averaging).

    ``kernel``: ``"numpy"`` (one event per point per numpy step; the oracle), ``"numba"`` (the
    same events point after point, compiled: :mod:`numalab.futex.events_compiled`, bit-identical)
    or ``"auto"`` (numba where it is installed, else numpy).

    Returns dict with ``rate`` (T,) per-thread ops/ns, ``ops`` (T,) completed, ``thr_point``,
    ``rho`` and ``visits``.
    """
    check_choice("dist", dist, ("exponential", "deterministic"))
    check_choice("kernel", kernel, ("auto", "numpy", "numba"))
    compiled = kernel != "numpy" and events_compiled.available()
    if kernel == "numba" and not compiled:
        raise NumalabValueError("kernel='numba' needs numba (pip install 'numalab[fast]') and NUMALAB_JIT unset or 1; "
                                "allowed: 'auto', 'numpy'")
    if net.cls_think is None:
        raise NumalabValueError("network has no prices; allowed: a Network from network() or .with_costs()")
    seeds = np.atleast_1d(np.asarray(seeds, dtype=np.int64))
    P = net.n_points
    if seeds.size != P:
        raise NumalabValueError(f"seeds has {seeds.size} entries; allowed: one per network point ({P})")
    if np.all(net.thr_buckets < 0):
        raise NumalabValueError("network was built with keep_threads=False; allowed: network(..., keep_threads=True)")
    run = _EventRun(net, seeds, ops, warmup, dist)
    if compiled:
        events_compiled.run_events(run)
    else:
        while run.live.any():
            run.step()
    return run.result()

"""The closed queueing network of futex operations (:mod:`numalab.futex.stations`).

Stations are the hb locks of the buckets somebody uses (``futex_hash_bucket.lock``, FCFS) and,
in the 6.16 ``rcuref`` private-hash variant, each process's reference-count line
(``futex_private_hash.users``); classes are groups of interchangeable threads (same process,
role, node and core load). The network is built in two steps: :func:`network` routes every
thread's keys to stations (structure: what depends on the seed's hash) and prices them with a
:class:`~numalab.futex.costs.FutexCosts`; :meth:`Network.with_costs` re-prices the same
structure (what :func:`~numalab.futex.calibrate` iterates). Identical stations of a large
table are merged (``st_mult``), so the MVA solves each kind once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .costs import (FutexCosts, active_cores, clock_factor, coerce_costs, contended_matrix, core_load, core_of,
                    handoff_matrix, smt_slowdown)
from .workloads import ROLE_LOCK, Routing

__all__ = ["Network", "network"]

@dataclass(frozen=True, eq=False)
class Network:
    """A batch of independent closed networks ("points"), in flat arrays.

    Structure (from the routings; costs-free):
    classes (K): ``cls_point``, ``cls_n`` threads, ``cls_node``, ``cls_proc``, ``cls_counted``,
    ``cls_load`` busy threads on the class's cores, ``cls_active`` busy cores in the class's package
    (its clock, :func:`~numalab.futex.costs.core_clock_ghz`), ``cls_lock`` futex_numa lock threads,
    ``cls_gup`` / ``cls_pref`` fractions of ops on shared futexes / private-table keys,
    ``cls_sib`` busy threads of the same process on the core of one of the class's threads,
    itself excluded (averaged: the SMT siblings whose pending refcount RMW its own can ride);
    entries (E, one per class x station visited): ``ent_cls``, ``ent_station``, ``ent_visit``
    (visits per op of one thread of the class, averaged), ``ent_self`` (visit-weighted mean of
    a visiting thread's own visits per op: P(previous holder is me) = x * ent_self / arrivals),
    ``ent_sib`` (the visits per op there of the other threads on the cores of the class's
    threads, per thread of the class: a line one of them held last is in the shared L1);
    stations (U): ``st_is_bucket`` (else a refcount line), ``st_home`` node holding the
    station's line, ``st_point``, ``st_mult`` how many identical stations the row stands for
    (``network(..., keep_threads=False)`` merges the stations of a point whose visitors and
    weights are the same: the MVA then solves each kind once); per point ``pt_collisions``
    futexes sharing a bucket with another (distinct futexes - occupied buckets);
    threads (for the DES): ``thr_cls``, ``thr_buckets`` (T, fmax), ``thr_nf``, ``thr_ref``
    (T, fmax) station of the refcount line per key (-1 = none), ``thr_sib`` (T, smax) the other
    threads on the thread's physical core (-1 = none).

    Prices (from a :class:`FutexCosts`, :meth:`with_costs`): ``cls_think`` Z [ns], ``cls_cpu``
    slowdown of the class's CPU work (SMT sharing times the clock factor), ``cls_line`` (K,
    nodes, nodes) handoff cost from a holder on node i of a line homed on node h,
    ``cls_line_busy`` the same for a pull that meets other queued requests (cross-node pulls pay
    the conflict round trip, :func:`~numalab.futex.costs.contended_matrix`), ``cls_cold`` (K,
    nodes) DRAM fetch of a cold line homed on h, ``cls_self``, ``cls_l1`` 1 where the threads on
    a core share its L1/L2 (a line a core-mate held last costs ``cls_self``; ``smt_shared_l1``);
    ``st_base`` CPU work with the lock held, ``st_lines`` / ``st_lines_busy`` line pulls per
    visit of an idle / a held station, ``st_batch`` the weight of node batching on a contended
    atomic line (the refcount lines; 0 for the hb locks, which hand over in queue order),
    ``st_core`` 1 where an RMW rides a pending one of an SMT sibling on its core (the refcount
    lines with ``smt_shared_l1`` on; 0 for the hb locks), ``st_forward`` the fraction of a line
    transfer a visit that finds it busy pays (``atomic_forward`` for the atomic lines, 1 for the
    locks); for an hb lock whose visitors visit nothing else (``st_persist``), ``st_sort`` the
    weight of its node-sorted FIFO round, ``st_px`` the share of its handoffs that cross nodes
    in a sorted round and ``st_xnode`` (U, nodes) the mean contended cross-node pull to a
    visitor on node j from the other nodes' visitors [ns].
    """

    cls_point: np.ndarray
    cls_n: np.ndarray
    cls_node: np.ndarray
    cls_proc: np.ndarray
    cls_counted: np.ndarray
    cls_load: np.ndarray
    cls_active: np.ndarray
    cls_lock: np.ndarray
    cls_gup: np.ndarray
    cls_pref: np.ndarray
    cls_sib: np.ndarray
    ent_cls: np.ndarray
    ent_station: np.ndarray
    ent_visit: np.ndarray
    ent_self: np.ndarray
    ent_sib: np.ndarray
    st_is_bucket: np.ndarray
    st_home: np.ndarray
    st_point: np.ndarray
    st_mult: np.ndarray
    st_persist: np.ndarray
    pt_collisions: np.ndarray
    thr_cls: np.ndarray
    thr_buckets: np.ndarray
    thr_nf: np.ndarray
    thr_ref: np.ndarray
    thr_sib: np.ndarray
    n_points: int
    points: tuple            # per point: (topology, refcount, sleep_ns)
    cls_think: np.ndarray = None
    cls_cpu: np.ndarray = None
    cls_line: np.ndarray = None
    cls_line_busy: np.ndarray = None
    cls_cold: np.ndarray = None
    cls_self: np.ndarray = None
    cls_l1: np.ndarray = None
    st_base: np.ndarray = None
    st_lines: np.ndarray = None
    st_lines_busy: np.ndarray = None
    st_batch: np.ndarray = None
    st_core: np.ndarray = None
    st_forward: np.ndarray = None
    st_sort: np.ndarray = None
    st_px: np.ndarray = None
    st_xnode: np.ndarray = None

    def with_costs(self, costs: FutexCosts | dict | None = None) -> "Network":
        """The same structure priced with ``costs`` (cheap: no routing, no key counting)."""
        costs = coerce_costs(costs)
        nmax = max(p[0].nodes for p in self.points)
        K = self.cls_n.size
        think = np.empty(K)
        cpu = np.empty(K)
        line = np.zeros((K, nmax, nmax))
        line_busy = np.zeros((K, nmax, nmax))
        cold = np.zeros((K, nmax))
        selfc = np.empty(K)
        l1 = np.empty(K)
        st_base = np.zeros(self.st_is_bucket.size)
        st_lines = np.empty(self.st_is_bucket.size)
        st_busy = np.empty(self.st_is_bucket.size)
        st_batch = np.zeros(self.st_is_bucket.size)
        st_core = np.zeros(self.st_is_bucket.size)
        st_fwd = np.ones(self.st_is_bucket.size)
        st_sort, st_px, st_xnode = self._sorted_rounds(costs, nmax)
        cb = np.searchsorted(self.cls_point, np.arange(self.n_points + 1))
        sb = np.searchsorted(self.st_point, np.arange(self.n_points + 1))
        for p, (topo, refcount, sleep_ns) in enumerate(self.points):
            c = costs.resolve(topo)
            ks, us = slice(cb[p], cb[p + 1]), slice(sb[p], sb[p + 1])
            # SMT sharing of the core, and the node's clock against the one the costs are stated at
            k = clock_factor(topo, c, self.cls_active[ks])
            f = smt_slowdown(self.cls_load[ks], topo.smt, c.smt_gain) * k
            z = (c.syscall_ns + c.futex_path_ns + c.hash_ns + 2.0 * c.atomic_ns + c.user_ns
                 + c.gup_ns * self.cls_gup[ks])
            if refcount == "percpu":
                z = z + c.percpu_ref_ns * self.cls_pref[ks]
            # futex_numa lock thread: two nanosleep() calls per lock/unlock cycle
            nap = 2.0 * (sleep_ns + c.timer_slack_ns)
            z = np.where(self.cls_lock[ks], f * (z + 2.0 * c.syscall_ns) + nap, f * z)
            think[ks], cpu[ks] = z, f
            C, lat = handoff_matrix(topo, c)
            n = topo.nodes
            node = self.cls_node[ks]
            line[ks, :n, :n] = np.moveaxis(C[:, node, :], 1, 0)   # (K, holder node i, home h)
            line_busy[ks, :n, :n] = np.moveaxis(contended_matrix(topo, c)[:, node, :], 1, 0)
            cold[ks, :n] = lat[node]
            selfc[ks] = c.line_self_ns * k        # an L2 hit: core cycles
            l1[ks] = c.smt_shared_l1
            bucket = self.st_is_bucket[us]
            st_base[us] = np.where(bucket, c.critical_section_ns, 0.0)
            st_lines[us] = np.where(bucket, c.lines_per_op, c.rcuref_lines)
            st_busy[us] = np.where(bucket, c.lines_contended, c.rcuref_lines)
            st_batch[us] = np.where(bucket, 0.0, c.atomic_node_batching)
            st_core[us] = np.where(bucket, 0.0, c.smt_shared_l1)
            st_fwd[us] = np.where(bucket, 1.0, c.atomic_forward)
        return replace(self, cls_think=think, cls_cpu=cpu, cls_line=line, cls_line_busy=line_busy, cls_cold=cold,
                       cls_self=selfc, cls_l1=l1,
                       st_base=st_base, st_lines=st_lines, st_lines_busy=st_busy, st_batch=st_batch,
                       st_core=st_core,
                       st_forward=st_fwd, st_sort=st_sort, st_px=st_px, st_xnode=st_xnode)

    def _sorted_rounds(self, costs: FutexCosts, nmax: int):
        """``st_sort``, ``st_px``, ``st_xnode`` (see the class docstring) of every station: a
        persistent lock's round sorted by node crosses nodes ``(nodes with busy visitors) /
        (busy visitors)`` of its handoffs, each from one of the other nodes' visitors (the mean
        of their contended pulls, conflict round trip included)."""
        U = self.st_is_bucket.size
        ec, es = self.ent_cls, self.ent_station
        cnt = np.bincount(es * nmax + self.cls_node[ec], weights=self.cls_n[ec] * ~self.cls_lock[ec],
                          minlength=U * nmax).reshape(U, nmax)
        nodes = (cnt > 0).sum(axis=1)
        px = np.where(nodes >= 2, nodes / np.maximum(cnt.sum(axis=1), 1.0), 0.0)
        xnode = np.zeros((U, nmax))
        sort = np.zeros(U)
        sb = np.searchsorted(self.st_point, np.arange(self.n_points + 1))
        for p, (topo, _refcount, _sleep) in enumerate(self.points):
            us = slice(sb[p], sb[p + 1])
            n = topo.nodes
            c = costs.resolve(topo)
            w = cnt[us, :n]                                               # (u, i)
            off = 1.0 - np.eye(n)                                         # (i, j): other nodes
            den = w @ off                                                 # (u, j)
            num = np.einsum("ui,iju,ij->uj", w, contended_matrix(topo, c)[:, :, self.st_home[us]], off)
            xnode[us, :n] = np.where(den > 0, num / np.maximum(den, 1e-300), 0.0)
            sort[us] = c.queue_node_sorting * self.st_persist[us]
        return sort, px, xnode


def _point_structure(rt: Routing, keep_threads: bool) -> dict:
    """Per-point class/entry/station arrays (local ids), only the stations someone visits."""
    w = rt.workload
    topo = w.topology
    T = w.threads
    lock = w.thread_role == ROLE_LOCK
    busy = ~lock
    load = core_load(topo, w.thread_cpu, busy)
    tb = rt.thread_buckets
    valid = tb >= 0
    dense = bool(valid.all())          # no padding (perf bench): skip the masks
    nf = np.full(T, tb.shape[1]) if dense else valid.sum(axis=1)
    # class = (process, role, node, core load): threads that differ only in which keys they hash,
    # interchangeable when each spreads over many buckets. With few keys a thread they are not:
    # its own bucket is no other class member's, which a class's averaged visits would hide
    # (one key a thread, a private hash of 256 slots: the MVA 2.5x below the simulation), so
    # then every thread is a class of its own (PER_THREAD_KEYS, docs/futex.md)
    if nf.max() <= PER_THREAD_KEYS:
        ckey = np.arange(T)
    else:
        ckey = ((w.thread_proc * 2 + w.thread_role) * topo.nodes + rt.thread_node) * (load.max() + 1) + load
    ukeys, first, thr_cls = np.unique(ckey, return_index=True, return_inverse=True)
    thr_cls = thr_cls.reshape(-1)
    K = ukeys.size
    cls_n = np.bincount(thr_cls, minlength=K).astype(float)
    wgt = 1.0 / np.maximum(nf, 1)
    priv_frac = (rt.thread_private if dense else rt.thread_private & valid).sum(axis=1) * wgt
    if w.fx_private.all():
        gup_frac = np.zeros(T)
    else:
        gup_frac = ((~w.fx_private[np.maximum(w.thread_futexes, 0)]) & valid).sum(axis=1) * wgt
    use_ref = w.mode.private_tables and w.refcount == "rcuref"
    nb = rt.n_buckets
    nproc = w.processes
    # stations: the buckets somebody uses (tables are mostly empty), then the refcount lines
    seen = np.zeros(nb + 1, dtype=bool)
    seen[tb.reshape(-1) if dense else tb[valid]] = True
    used = np.flatnonzero(seen[:nb])
    remap = np.full(nb, -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    nu = used.size
    tbl = remap[tb] if dense else np.where(valid, remap[np.where(valid, tb, 0)], -1)
    if use_ref:
        ref_used = np.unique(w.thread_proc[(rt.thread_private & valid).any(axis=1)])
        ref_id = np.full(nproc, -1, dtype=np.int64)
        ref_id[ref_used] = nu + np.arange(ref_used.size)
        tr = np.where(rt.thread_private & valid, ref_id[w.thread_proc][:, None], -1)
    else:
        ref_used = np.zeros(0, dtype=np.int64)
        tr = np.full(tb.shape, -1, dtype=np.int64)
    U = nu + ref_used.size
    # (class, station) visit weights W and self-shares A2 = sum over threads of w_tu^2, where
    # w_tu = (thread t's keys in u) / nf_t: count one thread's equal stations (sorted rows)
    full = tbl if not use_ref else np.concatenate([tbl, tr], axis=1)
    if T * U <= _DENSE_MAX:
        W, A2 = _weights_dense(full, thr_cls, wgt, K, U, dense and not use_ref)
    else:
        W, A2 = _weights_sorted(full, thr_cls, wgt, K, U, dense and not use_ref)
    ue = np.flatnonzero(W)
    W, A2 = W[ue], A2[ue]
    ent_cls, ent_st = ue // U, ue % U
    # collisions: distinct futexes hashed minus the buckets they occupy
    if dense and tb.size == w.fx_proc.size and np.array_equal(w.thread_futexes.reshape(-1), np.arange(tb.size)):
        n_hashed = tb.size                      # perf bench: every futex once, in order
    else:
        hashed = np.zeros(w.fx_proc.size, dtype=bool)
        hashed[w.thread_futexes[valid]] = True
        n_hashed = int(hashed.sum())
    collisions = n_hashed - nu
    # the refcount line lives in the private hash, allocated on the process's node
    proc_home = np.asarray(rt.layout.private_home or (0,) * nproc, dtype=np.int64)
    st_home = np.concatenate([rt.layout.bucket_home(used), proc_home[ref_used]]).astype(np.int64)
    out = dict(
        cls_n=cls_n, cls_node=rt.thread_node[first], cls_proc=w.thread_proc[first],
        cls_counted=~lock[first], cls_load=load[first],
        cls_active=active_cores(topo, w.thread_cpu, busy)[rt.thread_node[first]], cls_lock=lock[first],
        cls_gup=np.bincount(thr_cls, weights=gup_frac, minlength=K) / cls_n,
        cls_pref=np.bincount(thr_cls, weights=priv_frac, minlength=K) / cls_n,
        ent_cls=ent_cls, ent_station=ent_st, ent_visit=W / cls_n[ent_cls], ent_self=A2 / W,
        st_is_bucket=np.arange(U) < nu, st_home=st_home, st_mult=np.ones(U),
        st_persist=_persistent_locks(ent_st, W / cls_n[ent_cls], U, nu),
        pt_collisions=np.array([collisions]), thr_cls=thr_cls, thr_nf=nf,
    )
    out["cls_sib"], mates = _siblings(w, busy, thr_cls, cls_n)
    out["ent_sib"] = _mate_visits(full, wgt, mates, thr_cls, U, ue) / cls_n[ent_cls]
    if keep_threads:
        out["thr_buckets"], out["thr_ref"], out["thr_sib"] = tbl, tr, mates
    else:
        out["thr_buckets"] = out["thr_ref"] = out["thr_sib"] = np.full((T, 1), -1, dtype=np.int64)
        if U > _MERGE_MIN:
            _merge_stations(out, K, U)
    return out


def _siblings(w, busy: np.ndarray, thr_cls: np.ndarray, cls_n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The SMT siblings whose pending RMW on the process's refcount line a thread's own can ride
    (FutexCosts.smt_shared_l1): per class (K,) the mean number of busy threads of the
    same process on a member's core, itself excluded, at most the core's other hardware threads
    (``cls_sib``, the MVA's), and per thread
    (T, smax) the other threads on its physical core, -1 padded (``thr_sib``, the DES's)."""
    topo = w.topology
    core = core_of(topo, w.thread_cpu)
    mate = core * w.processes + w.thread_proc
    same = np.bincount(mate[busy], minlength=topo.nodes * topo.cores_per_node * w.processes)[mate] - busy
    # beyond the core's other hardware threads the rest time-share it: they cannot have an RMW
    # issued at the same moment, and a queued RMW carries at most smt - 1 riders
    same = np.minimum(same, topo.smt - 1)
    cls_sib = np.bincount(thr_cls, weights=same, minlength=cls_n.size) / cls_n
    T = core.size
    order = np.argsort(core, kind="stable")
    cnt = np.bincount(core)
    pos = np.empty(T, dtype=np.int64)
    pos[order] = np.arange(T) - (np.cumsum(cnt) - cnt)[core[order]]
    grid = np.full((cnt.size, max(int(cnt.max()), 1)), -1, dtype=np.int64)
    grid[core, pos] = np.arange(T)
    mates = grid[core]
    return cls_sib, np.where(mates == np.arange(T)[:, None], -1, mates)


def _mate_visits(full, wgt, mates, thr_cls, U: int, ue: np.ndarray) -> np.ndarray:
    """(E,) for each entry ``ue`` (class * U + station, sorted) the visits per op to the station
    of the other threads on the cores of the class's threads, summed over the class: how often a
    line there was last held in the class's own L1 (:func:`_point_structure`'s ``ent_sib``)."""
    out = np.zeros(ue.size)
    for j in range(mates.shape[1]):
        t = np.flatnonzero(mates[:, j] >= 0)
        m = mates[t, j]
        st = full[m]                                       # (n, F) the mates' stations
        ok = st >= 0
        key = ((thr_cls[t].astype(np.int64) * U)[:, None] + st)[ok]
        idx = np.minimum(np.searchsorted(ue, key), ue.size - 1)
        hit = ue[idx] == key                               # stations the class visits itself
        wt = np.broadcast_to(wgt[m][:, None], st.shape)[ok]
        out += np.bincount(idx[hit], weights=wt[hit], minlength=ue.size)
    return out


def _persistent_locks(ent_st, visit, U: int, nu: int) -> np.ndarray:
    """(U,) True for an hb lock every visiting class spends all its ops at (each visitor's one
    futex hashes there): its FIFO order persists from round to round."""
    partial = np.bincount(ent_st, weights=(visit < 1.0 - 1e-9).astype(float), minlength=U)
    return (partial == 0) & (np.arange(U) < nu)


#: (thread, station) pairs up to which one dense bincount beats sorting each thread's stations
_DENSE_MAX = 1 << 18
#: at most this many keys a thread, the MVA gives every thread a class of its own (_point_structure).
#: MVA against the simulation, 2s-128 / 2s-ivb-40, 22-43 threads, 16-64 buckets, 2 seeds: one key a
#: thread 72-250 % off aggregated, 1-2 % per thread; 8 keys 33-48 % / 16-20 %; 16 keys 9-14 % /
#: 6 %; 32 keys 1-6 % / 0-5 %; from 64 the two agree and per-thread classes cost up to 90x the
#: time (224 threads x 1024 keys: 1.2 s against 0.013 s)
PER_THREAD_KEYS = 32


def _weights_dense(full, thr_cls, wgt, K, U, nopad):
    """``W = sum_t w_tu`` and ``A2 = sum_t w_tu^2`` per (class, station), flat over K * U, where
    ``w_tu`` = thread t's keys in station u times its key weight: count (thread, station)."""
    T = full.shape[0]
    rows = np.broadcast_to(np.arange(T, dtype=np.int64)[:, None] * U, full.shape)
    flat = (rows + full).reshape(-1)
    if not nopad:
        flat = flat[full.reshape(-1) >= 0]
    cnt = np.bincount(flat, minlength=T * U).reshape(T, U) * wgt[:, None]
    # per (class, station): the sums over the class's threads, added in thread order by one
    # bincount each (a one-hot matrix product would leave the order to the BLAS kernel the CPU
    # selects, and with it the last bit of a sum of weights 1/nf)
    bins = ((thr_cls.astype(np.int64) * U)[:, None] + np.arange(U)).reshape(-1)
    return (np.bincount(bins, weights=cnt.reshape(-1), minlength=K * U),
            np.bincount(bins, weights=(cnt * cnt).reshape(-1), minlength=K * U))


def _weights_sorted(full, thr_cls, wgt, K, U, nopad):
    """:func:`_weights_dense` for large tables: sort each thread's stations; a run of m equal
    stations in one row adds m w to W and m^2 w^2 = sum_j (2j + 1) w^2 to A2 (j = 0 .. m-1
    along the run). Repeats are rare in a large table, so they are found sparsely."""
    srt = np.sort(full.astype(np.int32 if U < 2**31 else np.int64), axis=1)
    fmax = srt.shape[1]
    flat = (srt + (thr_cls.astype(np.int64) * U)[:, None]).reshape(-1)   # class * U + station
    ok = (srt >= 0).reshape(-1)
    dup = np.flatnonzero((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)) if fmax > 1 else np.zeros(0, int)
    pos = dup + dup // (fmax - 1) + 1 if dup.size else dup              # flat index of the repeat
    if dup.size:
        chain = np.ones(dup.size, dtype=bool)
        chain[1:] = np.diff(pos) != 1                                   # a new run of repeats
        run0 = np.maximum.accumulate(np.where(chain, np.arange(dup.size), 0))
        j = np.arange(dup.size) - run0 + 1
    else:
        j = np.zeros(0)
    keys = flat if nopad else flat[ok]
    if np.all(wgt == wgt[0]):   # one weight for every key (perf bench): count, then scale
        cnt = np.bincount(keys, minlength=K * U).astype(float)
        W = cnt * wgt[0]
        A2 = (cnt + np.bincount(flat[pos], weights=2.0 * j, minlength=K * U)) * wgt[0] ** 2
    else:
        row_w = np.repeat(wgt, fmax)
        W = np.bincount(keys, weights=row_w[ok], minlength=K * U)
        A2 = np.bincount(keys, weights=row_w[ok] ** 2, minlength=K * U) + np.bincount(
            flat[pos], weights=2.0 * j * row_w[pos] ** 2, minlength=K * U)
    return W, A2


#: merge identical stations of a point only above this many (below it the MVA is cheap anyway)
_MERGE_MIN = 4096


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, elementwise on uint64 (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _merge_stations(part: dict, K: int, U: int) -> None:
    """In place: stations of one point with the same home, kind and (class, W, A2, mates'
    visits) visitors become one row with ``st_mult`` = how many they were. A 64-bit hash of each station's row
    groups them; every group is then checked row by row, so a hash collision only costs the
    merge, never a wrong answer."""
    ec, es = part["ent_cls"], part["ent_station"]
    vis = np.zeros((U, K))
    own = np.zeros((U, K))
    mate = np.zeros((U, K))
    vis[es, ec] = part["ent_visit"]
    own[es, ec] = part["ent_self"]
    mate[es, ec] = part["ent_sib"]
    rows = np.concatenate([vis, own, mate, part["st_home"][:, None].astype(float),
                           part["st_is_bucket"][:, None].astype(float),
                           part["st_persist"][:, None].astype(float)], axis=1)
    bits = np.ascontiguousarray(rows).view(np.uint64)
    salt = _mix64(np.arange(1, rows.shape[1] + 1, dtype=np.uint64))
    # mix every value first (the float bits of k / 1024 end in zeros: a plain weighted sum of
    # them would collide all the time), then add the columns (wrapping)
    h = _mix64(bits ^ salt).sum(axis=1, dtype=np.uint64)
    _, rep, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    if not np.array_equal(bits, bits[rep[inv]]):
        return                               # a hash collision: keep this point unmerged
    keep = np.zeros(U, dtype=bool)
    keep[rep] = True
    mult = np.bincount(inv, minlength=rep.size).astype(float)
    on = keep[es]
    part["ent_cls"], part["ent_station"] = ec[on], inv[es[on]]
    part["ent_visit"], part["ent_self"] = part["ent_visit"][on], part["ent_self"][on]
    part["ent_sib"] = part["ent_sib"][on]
    part["st_home"], part["st_is_bucket"] = part["st_home"][rep], part["st_is_bucket"][rep]
    part["st_persist"] = part["st_persist"][rep]
    part["st_mult"] = mult


def network(routings: list[Routing], costs: FutexCosts | None = None, *, keep_threads: bool = True) -> Network:
    """Batch the per-seed routings of one or many configurations into one priced :class:`Network`.

    ``keep_threads=False`` drops the per-thread bucket lists (only the DES needs them)."""
    costs = coerce_costs(costs)
    parts = [_point_structure(rt, keep_threads) for rt in routings]
    fmax = max(p["thr_buckets"].shape[1] for p in parts)
    K_off = np.cumsum([0] + [p["cls_n"].size for p in parts])
    T_off = np.cumsum([0] + [p["thr_cls"].size for p in parts])
    smax = max(p["thr_sib"].shape[1] for p in parts)
    U_off = np.cumsum([0] + [p["st_home"].size for p in parts])
    out = {k: [] for k in parts[0]}
    out["cls_point"], out["st_point"] = [], []
    for i, p in enumerate(parts):
        for k, v in p.items():
            if k in ("ent_cls", "thr_cls"):
                v = v + K_off[i]
            elif k == "ent_station":
                v = v + U_off[i]
            elif k in ("thr_buckets", "thr_ref"):
                v = np.where(v >= 0, v + U_off[i], -1)
                if v.shape[1] < fmax:
                    v = np.pad(v, ((0, 0), (0, fmax - v.shape[1])), constant_values=-1)
            elif k == "thr_sib":
                v = np.where(v >= 0, v + T_off[i], -1)
                if v.shape[1] < smax:
                    v = np.pad(v, ((0, 0), (0, smax - v.shape[1])), constant_values=-1)
            out[k].append(v)
        out["cls_point"].append(np.full(p["cls_n"].size, i))
        out["st_point"].append(np.full(p["st_home"].size, i))
    arrays = {k: np.concatenate(v) for k, v in out.items()}
    points = tuple((rt.workload.topology, rt.workload.refcount, float(rt.workload.sleep_ns)) for rt in routings)
    return Network(n_points=len(parts), points=points, **arrays).with_costs(costs)

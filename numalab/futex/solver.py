"""Contention solver for futex hash buckets (:mod:`numalab.futex.solver`).

The system (spec §7.3, equations and sources in ``docs/futex.md``): a closed network. Each
thread loops "think" (user work, syscall entry/exit, the futex path, key and hash, two
atomics: a delay ``Z``) then visits
the FCFS server of the bucket its futex hashes to (the hb spinlock: ``futex_q_lock`` ...
``futex_q_unlock`` of ``futex_wait_setup``'s wrong-value path), and in the 6.16 ``rcuref``
private-hash variant first the per-process reference-count line. A visit's service time is

    s = cpu * hold + n_lines * c

* ``hold`` (``critical_section_ns``) is the CPU work done with the lock held, and ``cpu``
  the thread's SMT slowdown (:func:`smt_slowdown`: 1 alone on its core, ``n / (1 + g (n-1))``
  with n busy hardware threads on the core); the think time ``Z`` is scaled the same way.
* ``n_lines`` is how many times the bucket's cache line must be pulled to this CPU:
  ``lines_per_op`` (1) when the bucket is idle on arrival -- the ``waiters`` increment takes
  the line, the lock, the value check, the decrement and the unlock then hit in L1 -- and
  ``lines_contended`` (5) when the arrival finds the lock held: every access of the op
  (waiters increment, the queued spinlock's fast-path cmpxchg, the acquisition at the head
  of the queue, waiters decrement, unlock) then finds the line in another CPU's cache. A
  saturated bucket therefore serves one op per ``hold + lines_contended * L``, and a lock
  handed between sockets pays the remote transfer on each of those pulls.
* ``c`` is the cost of getting the bucket's line (:func:`handoff_matrix`) from where it is:

  - ``line_self_ns`` -- this very thread held it last: an L2 hit;
  - DRAM -- nobody held it yet (a cold line): ``Topology.latency_ns[node(j), h]`` from its
    home node h. A line once touched stays cached (the workloads touch at most a few thousand
    bucket lines per thread); the first touch only matters before the warm-up ends;
  - cache-to-cache from another core: ``L[node(p), node(j)]`` (the Topology's same-node /
    cross-node line transfer latency, SLIT-interpolated, :func:`line_matrix`) plus, with
    ``home_lookup`` (default 1), a trip to the home node's directory when h is neither
    node(p) nor node(j): ``home_lookup * (latency_ns[node(j), h] - latency_ns[node(j),
    node(j)])``, the interconnect part of a remote memory access (home-snoop / directory
    coherence: AMD's probe filter, Intel's home snoop with directory; ``home_lookup=0``
    models a source-snoop machine whose inclusive LLC answers without the home).

Two solutions of the same network:

* :func:`mva` -- approximate (Bard-Schweitzer) mean-value analysis with one class per group of
  interchangeable threads (same process, node, role and core load), exact per-bucket visit
  weights, per-thread self-shares (a bucket used by one thread alone costs only self hits;
  keys are visited in a fixed cyclic order, so a shared line is usually gone by the time a
  thread comes back: ``docs/futex.md``, "Who held the line last"),
  the arrival's probability of finding the lock held by others for the contended line count,
  and with ``scv`` < 1 a residual-service correction for non-exponential service;
* :func:`simulate` -- a discrete-event simulation vectorised over replicas (one event per
  replica per numpy step, per-thread pre-drawn random streams so a seed's result does not
  depend on the batch; each thread takes its keys in cyclic order from a random first one);
  an arrival that finds the station busy is served with the contended
  line count, one that finds it idle with ``lines_per_op``.

Where the two apply alike. MVA rests on the arrival theorem of product-form (BCMP) networks,
whose FCFS stations need exponential service: ``dist="exponential"`` in the simulation. Even
then the MVA here is approximate -- Schweitzer's fixed point, and a service time that depends
on the previous holder and on the queue (a mean-field mix) is outside product form -- so the
two agree within 5% on throughput (tests/test_futex_solver.py), not exactly.

The network is built in two steps: :func:`network` routes every thread's keys to stations
(structure: what depends on the seed's hash) and prices them with a :class:`FutexCosts`;
:meth:`Network.with_costs` re-prices the same structure (what :func:`calibrate` iterates).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

import numpy as np

from ..errors import NumalabValueError, check_choice, check_number, coerce_dataclass
from ..topology import Topology
from .workloads import ROLE_LOCK, Routing

__all__ = ["FutexCosts", "Network", "network", "mva", "simulate", "line_matrix", "handoff_matrix",
           "smt_slowdown", "core_load", "COST_NAMES"]


@dataclass(frozen=True)
class FutexCosts:
    """Hardware cost constants of one futex operation [ns]. Defaults are documented figures
    (``docs/futex.md`` lists each with its source), NOT fitted to published benchmark
    results; every one can be overridden. The line latencies come from the Topology.

    syscall_ns : 100
        Syscall entry + exit of a null syscall on an x86-64 server core without
        speculative-execution mitigations: lmbench ``lat_syscall null`` / a ``getpid`` loop
        measure about 0.1 us (roughly 300 ns with KPTI + retpoline on Meltdown-affected
        Intel parts, which this default does not assume).
    hash_ns : 15
        ``get_futex_key`` for a private futex (``access_ok`` only) plus ``jhash2`` of 4 words
        (about 40 ALU instructions, lookup3 "mix"/"final"), at ~3 GHz.
    futex_path_ns : 15
        The rest of the futex syscall's own path: ``do_futex`` dispatch, ``futex_wait`` /
        ``futex_wait_setup`` bookkeeping (``futex_q`` initialisation, flag and timeout checks,
        the -EAGAIN return): some 50 branchy kernel instructions at ~1 per cycle, ~3 GHz.
    atomic_ns : 7
        One uncontended locked read-modify-write on a line already in L1 (``lock xadd`` /
        ``lock cmpxchg``): ~18-20 cycles on Intel cores from Sandy Bridge to Skylake (Agner
        Fog's instruction tables), ~7 ns at 2.7 GHz. An op does two outside the lock (the
        ``waiters`` increment with its full barrier, ``spin_lock``'s cmpxchg); the ones inside
        are in ``critical_section_ns``. The transfer of the line itself is counted apart.
    user_ns : 2
        The benchmark's own loop per operation (an index increment and a branch).
    critical_section_ns : 25
        CPU work with the hb lock held on the fail-fast WAIT path: the user-word read
        (``futex_get_value_locked``, an L1 hit), the compare, ``atomic_dec`` of ``waiters``
        and the unlock store; a locked RMW costs ~20 cycles on Intel cores (Agner Fog's
        instruction tables). Line transfers are counted apart (``lines_*``).
    lines_per_op : 1
        Bucket-line pulls per visit of an idle bucket: ``atomic_inc(waiters)`` brings the
        line in exclusive state; the lock, the value check, the decrement and the unlock
        then hit in L1 (spec §1.5 order of operations).
    lines_contended : 5
        Bucket-line pulls per visit that finds the lock held: the waiters increment, the
        queued spinlock's fast-path ``cmpxchg`` (which needs the line exclusive even when it
        fails), the acquisition at the head of the queue after the holder's release, and
        the waiters decrement and unlock store after the queue's arrivals and the spinning
        head pulled the line away -- each finds the line in another CPU's cache (spec §1.6
        "2-4 per op" counts the four futex accesses; the fifth is qspinlock's).
    line_self_ns : 4
        Touching a line this thread held last and which is still in its L2 (a thread cycles
        through up to 1024 bucket lines, 64 KiB, more than L1D): ~12-14 cycles L2 latency
        (Intel 64 and IA-32 Optimization Reference Manual, Sandy Bridge to Skylake-SP).
    line_same_node_ns, line_remote_ns : None
        Cache-to-cache transfer within a node / across the interconnect; ``None`` takes the
        Topology's ``line_same_node_ns`` / ``line_remote_ns`` (Intel MLC c2c latencies and
        Molka et al., PACT 2009, give ~40-60 ns on-socket and ~100-170 ns cross-socket).
    home_lookup : 1
        Whether (1) or not (0) a cache-to-cache handoff of a bucket line consults the line's
        home node when that node is neither the holder's nor the requester's (home-snoop /
        directory protocol; see the module docstring); fractions in between weight the
        extra trip. The trip itself costs the Topology's remote - local DRAM latency.
    smt_gain : 0.25
        Extra throughput a core gets from each additional busy hardware thread: two
        hyperthreads together run 1.25x one (Intel's "up to 30%" for Hyper-Threading, Marr
        et al., Intel Technology Journal 6(1), 2002), so each runs 1.6x slower than alone.
        CPU work (think time, hold time) of a thread whose core also runs another busy
        thread is scaled by :func:`smt_slowdown`; line transfers are not.
    rcuref_lines : 2
        ``rcuref_get`` + ``rcuref_put`` of the 6.16 private hash: two RMWs on one per-process
        line per op (spec §4.4), served as one visit of ``rcuref_lines`` transfers.
    percpu_ref_ns : 2
        6.17 per-CPU reference: ``this_cpu_inc`` + ``this_cpu_dec``, no shared line.
    gup_ns : 60
        Shared (non-PRIVATE) futexes: ``get_user_pages_fast`` page walk plus the folio
        reference get/put on an uncontended line (one per-thread page in perf bench -S).
    timer_slack_ns : 50000
        Default ``timer_slack_ns`` of a normal task (prctl PR_SET_TIMERSLACK, 50 us): a
        non-zero ``nanosleep`` lasts at least its request plus the slack.
    """

    syscall_ns: float = 100.0
    hash_ns: float = 15.0
    futex_path_ns: float = 15.0
    atomic_ns: float = 7.0
    user_ns: float = 2.0
    critical_section_ns: float = 25.0
    lines_per_op: float = 1.0
    lines_contended: float = 5.0
    line_self_ns: float = 4.0
    line_same_node_ns: float | None = None
    line_remote_ns: float | None = None
    home_lookup: float = 1.0
    smt_gain: float = 0.25
    rcuref_lines: float = 2.0
    percpu_ref_ns: float = 2.0
    gup_ns: float = 60.0
    timer_slack_ns: float = 50000.0

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if v is not None:
                check_number(f.name, v, lo=0.0, hi=1.0 if f.name in ("home_lookup", "smt_gain") else None)

    def resolve(self, topology: Topology) -> "FutexCosts":
        """Fill the line latencies from ``topology`` where they are None."""
        return replace(
            self,
            line_same_node_ns=topology.line_same_node_ns if self.line_same_node_ns is None else self.line_same_node_ns,
            line_remote_ns=topology.line_remote_ns if self.line_remote_ns is None else self.line_remote_ns,
        )

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


COST_NAMES = tuple(f.name for f in fields(FutexCosts))


def coerce_costs(costs) -> FutexCosts:
    """None -> defaults, a FutexCosts -> itself, a dict -> FutexCosts(**dict) (unknown keys refused)."""
    return coerce_dataclass(FutexCosts, costs, "costs")


def line_matrix(topology: Topology, costs: FutexCosts) -> np.ndarray:
    """Line transfer latency from a holder on node i to a CPU on node j, ``(nodes, nodes)`` ns:
    same-node on the diagonal, ``line_remote_ns`` at the largest SLIT distance, linear in
    between (Genoa NPS4's 11/12 quadrant distances cost a little more than local)."""
    c = costs.resolve(topology)
    d = topology.distance_matrix.astype(float)
    dmax = d.max()
    frac = np.zeros_like(d) if dmax <= 10 else (d - 10.0) / (dmax - 10.0)
    return c.line_same_node_ns + frac * (c.line_remote_ns - c.line_same_node_ns)


def handoff_matrix(topology: Topology, costs: FutexCosts) -> tuple[np.ndarray, np.ndarray]:
    """Bucket-line fetch costs [ns] of the module docstring's rule.

    Returns ``(C, cold)``: ``C[i, j, h]`` the cache-to-cache handoff from a holder on node i to
    a CPU on node j of a line homed on node h, ``(nodes, nodes, nodes)``; ``cold[j, h]`` the
    DRAM fetch of a never-touched line, ``Topology.latency_ns`` ``(nodes, nodes)``."""
    c = costs.resolve(topology)
    L = line_matrix(topology, c)
    lat = topology.latency_ns
    n = topology.nodes
    i, j, h = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")
    # the home's directory is on the way unless it sits on the holder's or the requester's node
    third = (h != i) & (h != j)
    trip = lat[j, h] - lat[j, j]
    return L[i, j] + c.home_lookup * third * trip, lat.copy()


def core_load(topology: Topology, thread_cpu, busy) -> np.ndarray:
    """Busy threads on each thread's physical core (itself included), ``(T,)``.

    CPUs are numbered node by node (``Topology.cpu_node``); within a node the first
    ``cores_per_node`` CPUs are distinct cores and the next ones their SMT siblings (the
    order Linux enumerates Intel and AMD server CPUs in), so CPU k of a node sits on core
    ``k % cores_per_node``. ``busy``: threads that run all the time (a futex_numa lock thread
    that sleeps in nanosleep does not load its core)."""
    cpu = np.asarray(thread_cpu, dtype=np.int64)
    cpn, cores = topology.cpus_per_node, topology.cores_per_node
    core = (cpu // cpn) * cores + (cpu % cpn) % cores
    busy = np.asarray(busy, dtype=bool)
    n = np.bincount(core[busy], minlength=topology.nodes * cores)[core]
    return n + ~busy  # a thread always counts itself


def smt_slowdown(load, smt: int, gain: float) -> np.ndarray:
    """How much slower a thread's CPU work runs with ``load`` busy threads on its core of
    ``smt`` hardware threads: ``n / (1 + gain * (min(n, smt) - 1))`` (1 alone; 1.6 for two
    hyperthreads at gain 0.25; beyond ``smt`` threads the core is time-shared)."""
    n = np.maximum(np.asarray(load, dtype=float), 1.0)
    return n / (1.0 + gain * (np.minimum(n, smt) - 1.0))


@dataclass(frozen=True, eq=False)
class Network:
    """A batch of independent closed networks ("points"), in flat arrays.

    Structure (from the routings; costs-free):
    classes (K): ``cls_point``, ``cls_n`` threads, ``cls_node``, ``cls_proc``, ``cls_counted``,
    ``cls_load`` busy threads on the class's cores, ``cls_lock`` futex_numa lock threads,
    ``cls_gup`` / ``cls_pref`` fractions of ops on shared futexes / private-table keys;
    entries (E, one per class x station visited): ``ent_cls``, ``ent_station``, ``ent_visit``
    (visits per op of one thread of the class, averaged), ``ent_self`` (visit-weighted mean of
    a visiting thread's own visits per op: P(previous holder is me) = x * ent_self / arrivals);
    stations (U): ``st_is_bucket`` (else a refcount line), ``st_home`` node holding the
    station's line, ``st_point``, ``st_mult`` how many identical stations the row stands for
    (``network(..., keep_threads=False)`` merges the stations of a point whose visitors and
    weights are the same: the MVA then solves each kind once); per point ``pt_collisions``
    futexes sharing a bucket with another (distinct futexes - occupied buckets);
    threads (for the DES): ``thr_cls``, ``thr_buckets`` (T, fmax), ``thr_nf``, ``thr_ref``
    (T, fmax) station of the refcount line per key (-1 = none).

    Prices (from a :class:`FutexCosts`, :meth:`with_costs`): ``cls_think`` Z [ns],
    ``cls_cpu`` SMT slowdown of the class's CPU work, ``cls_line`` (K, nodes, nodes) handoff
    cost from a holder on node i of a line homed on node h, ``cls_cold`` (K, nodes) DRAM fetch
    of a cold line homed on h, ``cls_self``; ``st_base`` CPU work with the lock held,
    ``st_lines`` / ``st_lines_busy`` line pulls per visit of an idle / a held station.
    """

    cls_point: np.ndarray
    cls_n: np.ndarray
    cls_node: np.ndarray
    cls_proc: np.ndarray
    cls_counted: np.ndarray
    cls_load: np.ndarray
    cls_lock: np.ndarray
    cls_gup: np.ndarray
    cls_pref: np.ndarray
    ent_cls: np.ndarray
    ent_station: np.ndarray
    ent_visit: np.ndarray
    ent_self: np.ndarray
    st_is_bucket: np.ndarray
    st_home: np.ndarray
    st_point: np.ndarray
    st_mult: np.ndarray
    pt_collisions: np.ndarray
    thr_cls: np.ndarray
    thr_buckets: np.ndarray
    thr_nf: np.ndarray
    thr_ref: np.ndarray
    n_points: int
    points: tuple            # per point: (topology, refcount, sleep_ns)
    cls_think: np.ndarray = None
    cls_cpu: np.ndarray = None
    cls_line: np.ndarray = None
    cls_cold: np.ndarray = None
    cls_self: np.ndarray = None
    st_base: np.ndarray = None
    st_lines: np.ndarray = None
    st_lines_busy: np.ndarray = None

    def with_costs(self, costs: FutexCosts | dict | None = None) -> "Network":
        """The same structure priced with ``costs`` (cheap: no routing, no key counting)."""
        costs = coerce_costs(costs)
        nmax = max(p[0].nodes for p in self.points)
        K = self.cls_n.size
        think = np.empty(K)
        cpu = np.empty(K)
        line = np.zeros((K, nmax, nmax))
        cold = np.zeros((K, nmax))
        selfc = np.empty(K)
        st_base = np.zeros(self.st_is_bucket.size)
        st_lines = np.empty(self.st_is_bucket.size)
        st_busy = np.empty(self.st_is_bucket.size)
        cb = np.searchsorted(self.cls_point, np.arange(self.n_points + 1))
        sb = np.searchsorted(self.st_point, np.arange(self.n_points + 1))
        for p, (topo, refcount, sleep_ns) in enumerate(self.points):
            c = costs.resolve(topo)
            ks, us = slice(cb[p], cb[p + 1]), slice(sb[p], sb[p + 1])
            f = smt_slowdown(self.cls_load[ks], topo.smt, c.smt_gain)
            z = (c.syscall_ns + c.futex_path_ns + c.hash_ns + 2.0 * c.atomic_ns + c.user_ns
                 + c.gup_ns * self.cls_gup[ks])
            if refcount == "percpu":
                z = z + c.percpu_ref_ns * self.cls_pref[ks]
            # futex_numa lock thread: two nanosleep() calls per lock/unlock cycle
            nap = 2.0 * (sleep_ns + (c.timer_slack_ns if sleep_ns > 0 else 0.0))
            z = np.where(self.cls_lock[ks], f * (z + 2.0 * c.syscall_ns) + nap, f * z)
            think[ks], cpu[ks] = z, f
            C, lat = handoff_matrix(topo, c)
            n = topo.nodes
            node = self.cls_node[ks]
            line[ks, :n, :n] = np.moveaxis(C[:, node, :], 1, 0)   # (K, holder node i, home h)
            cold[ks, :n] = lat[node]
            selfc[ks] = c.line_self_ns
            bucket = self.st_is_bucket[us]
            st_base[us] = np.where(bucket, c.critical_section_ns, 0.0)
            st_lines[us] = np.where(bucket, c.lines_per_op, c.rcuref_lines)
            st_busy[us] = np.where(bucket, c.lines_contended, c.rcuref_lines)
        return replace(self, cls_think=think, cls_cpu=cpu, cls_line=line, cls_cold=cold, cls_self=selfc,
                       st_base=st_base, st_lines=st_lines, st_lines_busy=st_busy)


def _point_structure(rt: Routing, keep_threads: bool) -> dict:
    """Per-point class/entry/station arrays (local ids), only the stations someone visits."""
    w = rt.workload
    topo = w.topology
    T = w.threads
    lock = w.thread_role == ROLE_LOCK
    busy = ~lock | (w.sleep_ns == 0)
    load = core_load(topo, w.thread_cpu, busy)
    # class = (process, role, node, core load): threads that differ only in which keys they hash
    ckey = ((w.thread_proc * 2 + w.thread_role) * topo.nodes + rt.thread_node) * (load.max() + 1) + load
    ukeys, first, thr_cls = np.unique(ckey, return_index=True, return_inverse=True)
    thr_cls = thr_cls.reshape(-1)
    K = ukeys.size
    cls_n = np.bincount(thr_cls, minlength=K).astype(float)
    tb = rt.thread_buckets
    valid = tb >= 0
    dense = bool(valid.all())          # no padding (perf bench): skip the masks
    nf = np.full(T, tb.shape[1]) if dense else valid.sum(axis=1)
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
        cls_counted=~lock[first], cls_load=load[first], cls_lock=lock[first],
        cls_gup=np.bincount(thr_cls, weights=gup_frac, minlength=K) / cls_n,
        cls_pref=np.bincount(thr_cls, weights=priv_frac, minlength=K) / cls_n,
        ent_cls=ent_cls, ent_station=ent_st, ent_visit=W / cls_n[ent_cls], ent_self=A2 / W,
        st_is_bucket=np.arange(U) < nu, st_home=st_home, st_mult=np.ones(U),
        pt_collisions=np.array([collisions]), thr_cls=thr_cls, thr_nf=nf,
    )
    if keep_threads:
        out["thr_buckets"], out["thr_ref"] = tbl, tr
    else:
        out["thr_buckets"] = out["thr_ref"] = np.full((T, 1), -1, dtype=np.int64)
        if U > _MERGE_MIN:
            _merge_stations(out, K, U)
    return out


#: (thread, station) pairs up to which one dense bincount beats sorting each thread's stations
_DENSE_MAX = 1 << 18


def _weights_dense(full, thr_cls, wgt, K, U, nopad):
    """``W = sum_t w_tu`` and ``A2 = sum_t w_tu^2`` per (class, station), flat over K * U, where
    ``w_tu`` = thread t's keys in station u times its key weight: count (thread, station)."""
    T = full.shape[0]
    rows = np.broadcast_to(np.arange(T, dtype=np.int64)[:, None] * U, full.shape)
    flat = (rows + full).reshape(-1)
    if not nopad:
        flat = flat[full.reshape(-1) >= 0]
    cnt = np.bincount(flat, minlength=T * U).reshape(T, U) * wgt[:, None]
    member = (thr_cls[None, :] == np.arange(K)[:, None]).astype(float)   # (K, T) one-hot
    return (member @ cnt).reshape(-1), (member @ (cnt * cnt)).reshape(-1)


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
    """In place: stations of one point with the same home, kind and (class, W, A2) visitors
    become one row with ``st_mult`` = how many they were. A 64-bit hash of each station's row
    groups them; every group is then checked row by row, so a hash collision only costs the
    merge, never a wrong answer."""
    ec, es = part["ent_cls"], part["ent_station"]
    vis = np.zeros((U, K))
    own = np.zeros((U, K))
    vis[es, ec] = part["ent_visit"]
    own[es, ec] = part["ent_self"]
    rows = np.concatenate([vis, own, part["st_home"][:, None].astype(float),
                           part["st_is_bucket"][:, None].astype(float)], axis=1)
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
    part["st_home"], part["st_is_bucket"] = part["st_home"][rep], part["st_is_bucket"][rep]
    part["st_mult"] = mult


def network(routings: list[Routing], costs: FutexCosts | None = None, *, keep_threads: bool = True) -> Network:
    """Batch the per-seed routings of one or many configurations into one priced :class:`Network`.

    ``keep_threads=False`` drops the per-thread bucket lists (only the DES needs them)."""
    costs = coerce_costs(costs)
    parts = [_point_structure(rt, keep_threads) for rt in routings]
    fmax = max(p["thr_buckets"].shape[1] for p in parts)
    K_off = np.cumsum([0] + [p["cls_n"].size for p in parts])
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
            out[k].append(v)
        out["cls_point"].append(np.full(p["cls_n"].size, i))
        out["st_point"].append(np.full(p["st_home"].size, i))
    arrays = {k: np.concatenate(v) for k, v in out.items()}
    points = tuple((rt.workload.topology, rt.workload.refcount, float(rt.workload.sleep_ns)) for rt in routings)
    return Network(n_points=len(parts), points=points, **arrays).with_costs(costs)


def _uncontended_service(net: Network) -> tuple[np.ndarray, np.ndarray]:
    """Per entry (E,): the CPU work done with the lock held, ``cpu_k * st_base`` [ns], and the
    service time of a visit that finds the line where this thread left it, that work plus
    ``st_lines`` L2 hits ``cls_self`` [ns] (``s0``: no queue, no handoff)."""
    ek, eu = net.ent_cls, net.ent_station
    base_all = net.st_base[eu] * net.cls_cpu[ek]
    s0_all = base_all + net.st_lines[eu] * net.cls_self[ek]
    return base_all, s0_all


def _solo_entries(net: Network, s0_all: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Entries (E,) of the stations visited by one thread alone -- such a station never queues
    and always hands the line back to its one visitor, so its response time is ``s0`` exactly
    and it leaves the fixed point (most of a large table) -- and the time per op [ns] those
    visits add to each class's think time, ``sum m_e v_e s0_e`` (K,)."""
    ek, eu = net.ent_cls, net.ent_station
    U, K = net.st_home.size, net.cls_n.size
    n_ent = np.bincount(eu, minlength=U)[eu]
    solo = (n_ent == 1) & np.isclose(net.ent_self, net.ent_visit * net.cls_n[ek], rtol=1e-9, atol=0.0)
    mult_all = net.st_mult[eu]   # identical stations a row stands for: the class visits each
    fixed = np.bincount(ek[solo], weights=(mult_all * net.ent_visit * s0_all)[solo], minlength=K)
    return solo, fixed


def _shared_entries(net: Network, live: np.ndarray, base_all: np.ndarray, s0_all: np.ndarray) -> dict:
    """The constants of the fixed point's entries ``live`` (the shared stations'), (E,) each:
    class ``k``, visits per op ``v``, self-share ``a``, visits per op of all the merged copies
    ``vm``, station ``u`` (an index into ``used``, the stations they visit), the class's
    ``node``, the handoff cost [ns] of the station's line from a holder on each node ``line``
    (E, nodes) and from one on the class's own node ``line_own``, the L2 hit ``self`` [ns],
    the CPU work held ``base`` [ns], line pulls per idle / held visit ``lines`` /
    ``lines_busy``, the uncontended service ``s0`` [ns], the class's threads ``n`` and
    ``point``."""
    ek, eu = net.ent_cls, net.ent_station
    mult_all = net.st_mult[eu]
    k, v = ek[live], net.ent_visit[live]
    used, u = np.unique(eu[live], return_inverse=True)
    u = u.reshape(-1)
    node_k = net.cls_node[k]
    line_k = net.cls_line[k, :, net.st_home[eu[live]]]   # (E, nmax): holder node i, this home
    return dict(k=k, v=v, a=net.ent_self[live], vm=v * mult_all[live], used=used, u=u, node=node_k,
                line=line_k, line_own=line_k[np.arange(k.size), node_k], self=net.cls_self[k],
                base=base_all[live], lines=net.st_lines[used][u], lines_busy=net.st_lines_busy[used][u],
                s0=s0_all[live], n=net.cls_n[k], point=net.cls_point[k])


def _working_set(q: dict, sel: np.ndarray, nmax: int) -> tuple[dict, np.ndarray]:
    """The entries ``sel`` of :func:`_shared_entries`' ``q`` (those of the points still
    iterating) with their stations renumbered: returns the subset, with ``uu`` its station
    index, ``nu`` the station count and ``un`` = station * nmax + the arrival's node (one
    (station, holder node) bincount), and ``su``, the stations' indices in ``q["used"]``."""
    su, uu = np.unique(q["u"][sel], return_inverse=True)
    uu = uu.reshape(-1)
    w = {name: q[name][sel] for name in ("k", "v", "a", "vm", "n", "line", "self", "base", "lines",
                                         "lines_busy", "line_own", "point")}
    w.update(uu=uu, nu=su.size, un=uu * nmax + q["node"][sel])   # arrivals by holder node
    return w, su


def _schweitzer_step(w: dict, x, R, s, rho, on, think, resid: float, K: int, nmax: int):
    """One pass of the fixed point over the working set ``w`` (:func:`_working_set`) at
    per-thread throughputs ``x`` (K,) [ops/ns]: the service times ``s`` [ns] and response
    times ``R`` [ns] of the entries where ``on`` (the others keep theirs), the stations'
    utilisation ``rho`` and the throughputs they imply, ``x_new`` (K,) [ops/ns].
    Returns ``(x_new, R, s, rho)``."""
    uu, nu_ = w["uu"], w["nu"]
    xk = x[w["k"]]
    lam = w["n"] * xk * w["v"]
    Lam = np.bincount(uu, weights=lam, minlength=nu_)
    Ai = np.bincount(w["un"], weights=lam, minlength=nu_ * nmax).reshape(nu_, nmax)
    other_sum = np.einsum("ei,ei->e", Ai[uu], w["line"])
    own = xk * w["a"]
    Lu = np.maximum(Lam[uu], 1e-300)
    # FCFS: an arrival that finds the lock busy follows the last thread queued before
    # it (never itself); one that finds it idle follows the last holder (maybe itself)
    busy = np.clip(rho[uu] - own * s, 0.0, 1.0)
    other_sum = np.maximum(other_sum - own * w["line_own"], 0.0)
    # the line is still mine only if no other thread came by since my last visit.
    # Keys are visited in a fixed cyclic order, so I come back after m = 1 / a ops:
    # for m large that window is nearly fixed and so are the others' (periodic
    # visitors: P = 1 - r, r = their visits per mine); for m = 1 it is one random
    # cycle (P = 1 / (1 + r), as for memoryless visits); in between, mixed by 1 / m
    others = np.maximum(Lu - own, 1e-300)
    r = others / np.maximum(own, 1e-300)
    fm = np.minimum(w["a"], 1.0)
    pself = (1.0 - fm) * np.clip(1.0 - r, 0.0, 1.0) + fm / (1.0 + r)
    c_other = other_sum / others
    s_idle = w["base"] + w["lines"] * (pself * w["self"] + (1.0 - pself) * c_other)
    s_busy = w["base"] + w["lines_busy"] * c_other
    s = np.where(on, busy * s_busy + (1.0 - busy) * s_idle, s)
    rho = np.bincount(uu, weights=lam * s, minlength=nu_)
    # the work an arrival finds: the queued jobs, each of which found the lock held
    # (so is served with the contended line count), plus the residual of the one in
    # service (E[S^2] / 2E[S] of the busy/idle mix, E[S^2] = (1 + scv) s^2 per type)
    per = (R - s) * s_busy + resid * (busy * s_busy ** 2 + (1.0 - busy) * s_idle ** 2)
    work = np.bincount(uu, weights=lam * per, minlength=nu_)
    R = np.where(on, s + np.maximum(work[uu] - own * per, 0.0), R)
    x_new = 1.0 / (think + np.bincount(w["k"], weights=w["vm"] * R, minlength=K))
    return x_new, R, s, rho


def _mva_result(net: Network, live, s0_all, s, R, x, it: int) -> dict:
    """:func:`mva`'s answer: every entry's service and response time [ns] (``s0`` for the
    solo ones), the per-thread throughput ``x`` [ops/ns] and each station's utilisation
    ``rho`` = its arrivals' ``sum lam_e s_e`` (U,)."""
    ek, eu = net.ent_cls, net.ent_station
    s_all, R_all = s0_all.copy(), s0_all.copy()
    s_all[live], R_all[live] = s, R
    lam = net.cls_n[ek] * x[ek] * net.ent_visit
    rho = np.bincount(eu, weights=lam * s_all, minlength=net.st_home.size)
    return dict(x=x, R=R_all, s=s_all, rho=rho, iterations=it)


def mva(net: Network, *, tol: float = 1e-8, max_iter: int = 10000, damping: float = 0.0,
        scv: float = 1.0, start: dict | None = None) -> dict:
    """Approximate MVA (Bard-Schweitzer, one customer removed = the arriving thread itself).

    Fixed point over per-thread throughput ``x_k`` [ops/ns] of each class k:
    arrivals ``lam_e = n_k x_k v_e``; the arriving thread finds the lock held by others with
    probability ``b_e = rho_u - x_k a_e s_e`` (station utilisation minus its own share);
    then it follows another thread (mean handoff cost ``c_o`` over the other visitors' nodes,
    weighted by their arrivals) and pulls the line ``lines_contended`` times; else it follows
    the last holder -- itself with probability
    ``p_self = (1 - a) max(0, 1 - r) + a / (1 + r)``, ``r`` = the others' visits per own visit
    (keys in a fixed cyclic order: a thread returns after ``1/a`` ops; see docs/futex.md) --
    and pulls the line ``lines_per_op`` times:
    ``s_busy = cpu_k base + n_busy c_o``, ``s_idle = cpu_k base + n_idle (p_self c_self +
    (1 - p_self) c_o)``, ``s_e = b_e s_busy + (1 - b_e) s_idle``.
    It waits for the work present minus its own share; ``R_e = s_e + wait``;
    ``x_k = 1 / (Z_k + sum_e m_e v_e R_e)`` (``m_e``: merged identical stations).

    The work present is ``sum_e' lam_e' [(R_e' - s_e') s_busy_e' + (1 + scv) / 2 (b_e'
    s_busy_e'^2 + (1 - b_e') s_idle_e'^2)]``: the queued jobs, each of which found the lock
    held and so is served with the contended line count, plus the residual of the one in
    service, ``E[S^2] / 2E[S]`` of the busy/idle mix with ``E[S^2] = (1 + scv) s^2`` per kind
    for service of squared coefficient of variation ``scv`` (Reiser's residual-service
    approximation; ``scv=1`` exponential, the product-form case; ``scv=0`` fixed times).

    Points stop on their own (relative change of every class's ``x`` below ``tol``), so a
    point's answer does not depend on its batch; converged points leave the working set.

    ``start``: a previous result of this function on the same network structure (e.g. with
    other prices) to start the iteration from; default: no queueing.

    Returns dict with ``x`` (K,) ops/ns per thread, ``R`` (E,), ``s`` (E,), ``rho`` (U,)
    station utilisation and ``iterations``.
    """
    check_number("scv", scv, lo=0.0)
    if net.cls_think is None:
        raise NumalabValueError("network has no prices; allowed: a Network from network() or .with_costs()")
    resid = (1.0 + scv) / 2.0
    K, nmax = net.cls_n.size, net.cls_line.shape[1]
    base_all, s0_all = _uncontended_service(net)
    solo, fixed = _solo_entries(net, s0_all)
    live = np.flatnonzero(~solo)
    q = _shared_entries(net, live, base_all, s0_all)
    think = net.cls_think + fixed
    if start is None:
        x = 1.0 / (think + np.bincount(q["k"], weights=q["vm"] * q["s0"], minlength=K))
        R, s, rho = q["s0"].copy(), q["s0"].copy(), np.zeros(q["used"].size)
    else:
        x = np.asarray(start["x"], dtype=float).copy()
        R, s, rho = start["R"][live], start["s"][live], start["rho"][q["used"]]
    active = np.ones(net.n_points, dtype=bool)
    per_point = np.bincount(q["point"], minlength=net.n_points)
    it = 0
    while True:
        # the working set: entries (and their stations) of the points still iterating; a
        # point's arithmetic is the same in any working set, so its answer does not change
        sel = np.flatnonzero(active[q["point"]])
        w, su = _working_set(q, sel, nmax)
        Rw, sw, rw = R[sel], s[sel], rho[su]
        while it < max_iter:
            it += 1
            x_new, Rw, sw, rw = _schweitzer_step(w, x, Rw, sw, rw, active[w["point"]], think, resid, K, nmax)
            # each point stops on its own, so a point's answer does not depend on its batch
            delta = np.zeros(net.n_points)
            np.maximum.at(delta, net.cls_point, np.abs(x_new - x) / x_new)
            moving = active[net.cls_point]
            x = np.where(moving, damping * x + (1.0 - damping) * x_new, x)
            active &= delta >= tol
            if not active.any() or per_point @ active < sel.size // 2:
                break
        R[sel], s[sel], rho[su] = Rw, sw, rw
        if not active.any() or it >= max_iter:
            break
    return _mva_result(net, live, s0_all, s, R, x, it)


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
        draws = g.random((idx.size, ops + 1, 4))
        start[idx] = (draws[:, 0, 0] * net.thr_nf[idx]).astype(np.int64)
        if dist == "exponential":
            Et[idx] = -np.log1p(-draws[..., 1])
            Es[idx] = -np.log1p(-draws[..., 2:4])
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
        self.cold = net.cls_cold[net.thr_cls]   # (T, home node)
        self.selfc = net.cls_self[net.thr_cls]
        self.bucket, self.ref = self.keys(np.arange(T), np.zeros(T, dtype=np.int64))
        self.stage = np.where(self.ref >= 0, 0, 1)
        self.t_next = np.full((P, table.shape[1]), np.inf)
        self.t_next[table >= 0] = (self.think * self.Et[:, 0])[table[table >= 0]]
        self.done_ops = np.zeros(T, dtype=np.int64)
        self.t_warm = np.zeros(T)
        self.t_last = np.zeros(T)
        U = net.st_home.size
        self.free_at = np.zeros(U)
        self.holder = np.full(U, -1, dtype=np.int64)
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

    def line_cost(self, g, st):
        """Cost [ns] for thread ``g`` of getting station ``st``'s line from where it is: an
        L2 hit if ``g`` held it last, the DRAM fetch from its home node if nobody did, else
        the handoff from the last holder's node."""
        prev = self.holder[st]
        hs = self.net.st_home[st]
        cost = np.where(prev == g, self.selfc[g], self.line[g, self.node[np.maximum(prev, 0)], hs])
        return np.where(prev < 0, self.cold[g, hs], cost)   # first touch: from the home's DRAM

    def serve(self, g, st, stg, a, ts):
        """FCFS service of thread ``g`` arriving at ``a`` [ns] at station ``st`` (visit
        ``stg`` of its op): from ``max(a, free_at)`` for ``cpu * st_base`` plus the line
        pulls (``st_lines_busy`` if the lock is held on arrival, else ``st_lines``) times
        :meth:`line_cost`, scaled by its service draw; books the station's busy time after
        the window start ``ts`` [ns]. Returns the completion times [ns]."""
        net = self.net
        cost = self.line_cost(g, st)
        held = a < self.free_at[st]                         # the lock is held on arrival
        nl = np.where(held, net.st_lines_busy[st], net.st_lines[st])
        n_done = self.done_ops[g]
        s = (net.st_base[st] * self.cpu[g] + nl * cost) * self.Es[g, n_done, stg]
        b = np.maximum(a, self.free_at[st])
        c = b + s
        self.free_at[st] = c
        self.holder[st] = g
        self.busy[st] += np.maximum(c - np.maximum(b, ts), 0.0)
        self.visits[st] += c > ts
        return c

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
        time / window length) with the visits that weigh it."""
        measured = self.done_ops - self.warmup
        if np.any(measured < 2):
            raise NumalabValueError(
                f"ops={self.ops} leaves a thread with fewer than {self.warmup + 2} operations; allowed: raise ops"
            )
        rate = measured / (self.t_last - self.t_warm)
        # close each window: busy time and visits scheduled beyond the stopping completion
        te = self.t_end[self.net.st_point]
        busy = self.busy - np.maximum(self.free_at - te, 0.0)
        rho = busy / (te - self.t_start[self.net.st_point])
        return dict(rate=rate, ops=self.done_ops, thr_point=self.thr_point, rho=rho, visits=self.visits)


def simulate(net: Network, seeds, *, ops: int = 400, warmup: int = 50, dist: str = "exponential") -> dict:
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

    Returns dict with ``rate`` (T,) per-thread ops/ns, ``ops`` (T,) completed, ``thr_point``,
    ``rho`` and ``visits``.
    """
    check_choice("dist", dist, ("exponential", "deterministic"))
    if net.cls_think is None:
        raise NumalabValueError("network has no prices; allowed: a Network from network() or .with_costs()")
    seeds = np.atleast_1d(np.asarray(seeds, dtype=np.int64))
    P = net.n_points
    if seeds.size != P:
        raise NumalabValueError(f"seeds has {seeds.size} entries; allowed: one per network point ({P})")
    if np.all(net.thr_buckets < 0):
        raise NumalabValueError("network was built with keep_threads=False; allowed: network(..., keep_threads=True)")
    run = _EventRun(net, seeds, ops, warmup, dist)
    while run.live.any():
        run.step()
    return run.result()

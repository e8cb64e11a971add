"""Contention solver for futex hash buckets (:mod:`numalab.futex.solver`).

The system (spec §7.3): a closed network. Each thread loops "think" (user work, syscall
entry/exit, hashing: a delay ``Z``) then visits the FCFS server of the bucket its futex hashes
to (the hb spinlock: ``futex_q_lock`` ... ``futex_q_unlock`` of ``futex_wait_setup``'s
wrong-value path), and in the 6.16 ``rcuref`` private-hash variant first the per-process
reference-count line (``futex_private_hash_get/put``). A visit's service time is

    s = base + lines * c(previous holder p -> this CPU j, bucket memory home h)

where ``c`` is the cost of getting the bucket's cache line (:func:`handoff_matrix`):

* ``line_self_ns`` -- p is this very thread: the line is still in its L1/L2;
* DRAM -- no previous holder (the first access to the bucket, a cold line): the line comes
  from the home node's memory at ``Topology.latency_ns[node(j), h]`` (local or remote DRAM).
  Rule: a line once touched stays cached (in some core's cache) for the rest of the run -- the
  workloads modelled touch at most a few thousand bucket lines per thread, which fit in L2,
  so idle-time eviction is not modelled; in steady state the DRAM term only enters through
  the per-bucket first touch, which the simulations' warm-up discards;
* cache-to-cache -- p ran on another core: ``L[node(p), node(j)]`` (the topology's
  same-node / cross-node transfer latency, SLIT-interpolated, :func:`line_matrix`) plus, with
  ``home_lookup`` (default 1), a trip to the home node's directory when h is neither node(p)
  nor node(j): ``home_lookup * (latency_ns[node(j), h] - latency_ns[node(j), node(j)])``, the
  interconnect part of a remote memory access. This is a home-snoop / directory coherence
  protocol (AMD Zen's probe filter at the home memory controller; Intel Xeon's Home Snoop
  mode with a directory, the directory protocol of Skylake-SP and later): an ownership request
  that misses the requester's own caches is resolved by the line's home agent, so a
  same-node handoff of a line homed on a remote node is a "3-hop" transfer requester -> home
  -> owner -> requester. A cross-node handoff whose home is the holder's or the requester's
  node passes the home anyway and pays only ``L``. ``home_lookup=0`` models a source-snoop
  machine whose inclusive LLC serves same-node handoffs without asking the home (the "Early
  Snoop" BIOS mode of Ivy Bridge-EP / Haswell-EP); the spec (§3.4) leaves the seed machine's
  SKU, hence its snoop mode, UNVERIFIED.

Two solutions of the same network:

* :func:`mva` -- approximate (Bard-Schweitzer) mean-value analysis with one class per group of
  interchangeable threads (same process, node and role), exact per-bucket visit weights, and
  per-thread self-shares so a bucket used by one thread alone costs only self hits; with
  ``scv`` < 1 a residual-service correction (the job in service has a mean residual
  ``s (1 + scv) / 2``, not ``s``) for non-exponential service;
* :func:`simulate` -- a discrete-event simulation vectorised over replicas (one event per
  replica per numpy step, per-thread pre-drawn random streams so a seed's result does not
  depend on the batch).

Where the two apply alike. MVA rests on the arrival theorem of product-form (BCMP) networks,
whose FCFS stations need exponential service: ``dist="exponential"`` in the simulation. Even
then the MVA here is approximate -- Schweitzer's fixed point, and a service time that depends
on the previous holder (a mean-field mix of handoff costs) is outside product form -- so the
two agree within 5% on throughput (tests/test_futex_solver.py), not exactly. With fixed
("deterministic") times the product-form assumption fails; the residual-service correction
(``mva(..., scv=0.0)``) brings the gap back near the exponential one (see the tests).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

import numpy as np

from ..errors import NumalabValueError, check_choice, check_number, coerce_dataclass
from .workloads import ROLE_LOCK, Routing
from ..topology import Topology

__all__ = ["FutexCosts", "Network", "network", "mva", "simulate", "line_matrix", "handoff_matrix", "COST_NAMES"]


@dataclass(frozen=True)
class FutexCosts:
    """Hardware cost constants of one futex operation [ns]. Defaults are documented figures,
    NOT fitted to published benchmark results; every one can be overridden.

    syscall_ns : 100
        Syscall entry + exit on a modern x86-64 server: lmbench ``lat_syscall null`` measures
        about 0.05-0.1 us without speculative-execution mitigations, more with PTI.
    hash_ns : 15
        ``get_futex_key`` for a private futex (``access_ok`` only) plus ``jhash2`` of 4 words
        (about 40 ALU instructions, lookup3 "mix"/"final"), at ~3 GHz.
    user_ns : 2
        The benchmark's own loop per operation (an index increment and a branch).
    critical_section_ns : 25
        Work with the hb lock held on the fail-fast WAIT path: read the user word
        (``futex_get_value_locked``, an L1 hit), ``atomic_dec`` of ``waiters`` and the unlock
        store; a locked RMW costs ~20 cycles on Intel cores (Agner Fog's instruction tables).
    lines_per_op : 2
        Bucket cache-line transfers per contended visit: ``atomic_inc(waiters)`` before and
        the lock acquisition pull the line (spec §1.6: 2-4 per op).
    line_self_ns : 2
        Touching a line still in this core's L1/L2 (the same thread was the last holder).
    line_same_node_ns, line_remote_ns : None
        Cache-to-cache transfer within a node / across the interconnect; ``None`` takes the
        Topology's ``line_same_node_ns`` / ``line_remote_ns`` (Intel MLC c2c latencies and
        Molka et al., PACT 2009, give ~40-60 ns on-socket and ~100-170 ns cross-socket).
    home_lookup : 1
        Whether (1) or not (0) a cache-to-cache handoff of a bucket line consults the line's
        home node when that node is neither the holder's nor the requester's (home-snoop /
        directory protocol; see the module docstring); fractions in between weight the
        extra trip. The trip itself costs the Topology's remote - local DRAM latency.
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
    user_ns: float = 2.0
    critical_section_ns: float = 25.0
    lines_per_op: float = 2.0
    line_self_ns: float = 2.0
    line_same_node_ns: float | None = None
    line_remote_ns: float | None = None
    home_lookup: float = 1.0
    rcuref_lines: float = 2.0
    percpu_ref_ns: float = 2.0
    gup_ns: float = 60.0
    timer_slack_ns: float = 50000.0

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if v is not None:
                check_number(f.name, v, lo=0.0, hi=1.0 if f.name == "home_lookup" else None)

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


@dataclass(frozen=True, eq=False)
class Network:
    """A batch of independent closed networks ("points"), in flat arrays.

    Classes (K): ``cls_point``, ``cls_n`` threads, ``cls_think`` Z [ns], ``cls_node``,
    ``cls_line`` (K, nodes, nodes) handoff cost from a holder on node i of a line homed on
    node h [ns], ``cls_cold`` (K, nodes) DRAM fetch of a cold line homed on h [ns],
    ``cls_self`` [ns].
    Entries (E, one per class x station visited): ``ent_cls``, ``ent_station``, ``ent_visit``
    (visits per op of one thread of the class, averaged), ``ent_self`` (visit-weighted mean of a
    visiting thread's own visits per op: P(previous holder is me) = x * ent_self / arrivals).
    Stations (U): ``st_base`` [ns], ``st_lines``, ``st_is_bucket``, ``st_home`` node holding
    the station's line (bucket memory; the private hash's node for a refcount line).
    Threads (T, for the DES):
    ``thr_cls``, ``thr_point``, ``thr_buckets`` (T, fmax), ``thr_nf``, ``thr_ref`` (T, fmax)
    station of the refcount line per key (-1 = none).
    """

    cls_point: np.ndarray
    cls_n: np.ndarray
    cls_think: np.ndarray
    cls_node: np.ndarray
    cls_line: np.ndarray
    cls_cold: np.ndarray
    cls_self: np.ndarray
    cls_counted: np.ndarray
    cls_proc: np.ndarray
    ent_cls: np.ndarray
    ent_station: np.ndarray
    ent_visit: np.ndarray
    ent_self: np.ndarray
    st_base: np.ndarray
    st_lines: np.ndarray
    st_is_bucket: np.ndarray
    st_home: np.ndarray
    st_point: np.ndarray
    thr_cls: np.ndarray
    thr_buckets: np.ndarray
    thr_nf: np.ndarray
    thr_ref: np.ndarray
    n_points: int
    st_keys: np.ndarray  # keys (distinct futexes) hashed to each station, for collision counts


def _thread_classes(rt: Routing) -> dict:
    """Group interchangeable threads: class = (process, role, node), threads that differ only
    in which keys they hash. ``thr_cls`` (T,) class of each thread; per class (K,): ``cls_n``
    threads, ``cls_node``, ``cls_proc`` and ``cls_lock`` (a futex_numa lock thread)."""
    w = rt.workload
    ckey = (w.thread_proc * 2 + w.thread_role) * w.topology.nodes + rt.thread_node
    ukeys, thr_cls = np.unique(ckey, return_inverse=True)
    first = np.unique(thr_cls, return_index=True)[1]
    return dict(thr_cls=thr_cls, cls_n=np.bincount(thr_cls, minlength=ukeys.size).astype(float),
                cls_node=rt.thread_node[first], cls_proc=w.thread_proc[first],
                cls_lock=(w.thread_role == ROLE_LOCK)[first])


def _think_ns(rt: Routing, c: FutexCosts, wgt: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Mean think time Z of each thread [ns]: syscall, hashing and user work, the page walk of
    its shared keys, the per-CPU reference of its private keys, and a lock thread's sleeps."""
    w = rt.workload
    priv_frac = (wgt * rt.thread_private).sum(axis=1)
    if w.fx_private.all():
        shared_frac = np.zeros(w.threads)
    else:
        shared_frac = (wgt * (~w.fx_private[np.maximum(w.thread_futexes, 0)] & valid)).sum(axis=1)
    think = c.syscall_ns + c.hash_ns + c.user_ns + c.gup_ns * shared_frac
    if w.refcount == "percpu":
        think = think + c.percpu_ref_ns * priv_frac
    # futex_numa lock thread: two nanosleep() calls per lock/unlock cycle
    sleep = 2.0 * (c.syscall_ns + w.sleep_ns + (c.timer_slack_ns if w.sleep_ns > 0 else 0.0))
    return np.where(w.thread_role == ROLE_LOCK, think + sleep, think)


def _uses_refcount_line(w) -> bool:
    """The 6.16 ``rcuref`` private hash: one shared reference-count line per process."""
    return w.mode == "private" and w.refcount == "rcuref"


def _stations(rt: Routing, c: FutexCosts) -> dict:
    """The point's FCFS stations: its ``n_buckets`` buckets, then (``rcuref``) one refcount line
    per process; ``st_base`` [ns], ``st_lines``, ``st_is_bucket``, ``st_home`` node of the line."""
    w = rt.workload
    nb = rt.n_buckets
    nproc = w.processes
    U = nb + (nproc if _uses_refcount_line(w) else 0)
    st_base = np.concatenate([np.full(nb, c.critical_section_ns), np.zeros(U - nb)])
    st_lines = np.concatenate([np.full(nb, c.lines_per_op), np.full(U - nb, c.rcuref_lines)])
    # the refcount line lives in the private hash, allocated on the process's node
    proc_home = np.asarray(rt.layout.private_home or (0,) * nproc, dtype=np.int64)
    st_home = np.concatenate([rt.layout.bucket_home(np.arange(nb)), proc_home[: U - nb]]).astype(np.int64)
    return dict(st_base=st_base, st_lines=st_lines, st_is_bucket=np.arange(U) < nb, st_home=st_home)


def _visits(rt: Routing, wgt: np.ndarray, valid: np.ndarray):
    """Flat (thread, station, weight) visit records of the keys, plus a refcount-line visit per
    private key (``rcuref``); and ``thr_ref`` (T, fmax) the refcount station per key (-1 none)."""
    w = rt.workload
    tb = rt.thread_buckets
    T = w.threads
    if valid.all():  # the common case: no padding, skip the boolean gathers
        rows = np.repeat(np.arange(T), tb.shape[1])
        stn = tb.reshape(-1)
        ww = np.repeat(wgt[:, 0], tb.shape[1])
    else:
        rows = np.broadcast_to(np.arange(T)[:, None], tb.shape)[valid]
        stn = tb[valid]
        ww = wgt[valid]
    if _uses_refcount_line(w):
        tr = np.where(rt.thread_private, rt.n_buckets + w.thread_proc[:, None], -1)
        rv = tr[valid] >= 0
        rows = np.concatenate([rows, rows[rv]])
        stn = np.concatenate([stn, tr[valid][rv]])
        ww = np.concatenate([ww, ww[rv]])
    else:
        tr = np.full(tb.shape, -1, dtype=np.int64)
    return rows, stn, ww, tr


def _class_station_weights(rt, thr_cls, K, U, rows, stn, ww, wgt, valid, tr):
    """Per (class, station) key ``W = sum_t w_tu`` (visits per op of the class's threads) and
    ``A2 = sum_t w_tu^2`` (the self-share numerator), flat over ``K * U``."""
    T = rt.workload.threads
    if T * U <= (1 << 19):  # dense (thread, station) accumulation beats sorting for small tables
        tw = np.bincount(rows.astype(np.int64) * U + stn, weights=ww, minlength=T * U)
        nz = np.flatnonzero(tw)
        t_of, s_of, w_ts = nz // U, nz % U, tw[nz]
        ekey = thr_cls[t_of].astype(np.int64) * U + s_of
        W = np.bincount(ekey, weights=w_ts, minlength=K * U)
        A2 = np.bincount(ekey, weights=w_ts * w_ts, minlength=K * U)
        return W, A2
    ekey = thr_cls[rows].astype(np.int64) * U + stn
    W = np.bincount(ekey, weights=ww, minlength=K * U)
    A2 = np.bincount(ekey, weights=ww * ww, minlength=K * U)
    _add_repeat_pairs(A2, rt, thr_cls, U, wgt, valid, tr)
    return W, A2


def _add_repeat_pairs(A2, rt, thr_cls, U, wgt, valid, tr) -> None:
    """Sparse path of :func:`_class_station_weights`, in place:
    sum_t w_tu^2 = sum_t sum_keys w^2 + 2 * w^2 * (pairs of one thread's keys in u);
    sort each thread's stations and count equal neighbours (runs)."""
    tb = rt.thread_buckets
    T = rt.workload.threads
    full = np.where(valid, tb, -1)
    if _uses_refcount_line(rt.workload):
        full = np.concatenate([full, np.where(valid & rt.thread_private, tr, -1)], axis=1)
    srt = np.sort(full, axis=1)
    eq = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)
    if eq.any():
        pos = np.arange(srt.shape[1])
        start = np.where(np.concatenate([np.ones((T, 1), bool), ~eq], axis=1), pos, 0)
        start = np.maximum.accumulate(start, axis=1)
        before = (pos - start)[:, 1:][eq]  # earlier equal keys of the same thread
        r_i = np.broadcast_to(np.arange(T)[:, None], eq.shape)[eq]
        wk = wgt[r_i, 0]
        A2 += np.bincount(thr_cls[r_i].astype(np.int64) * U + srt[:, 1:][eq],
                          weights=2.0 * before * wk * wk, minlength=A2.size)


def _station_keys(rt: Routing, valid: np.ndarray, U: int) -> np.ndarray:
    """Distinct futexes hashed to each station (U,), for the collision count."""
    w = rt.workload
    fx_b = np.full(w.fx_proc.size, -1, dtype=np.int64)
    fx_b[w.thread_futexes[valid]] = rt.thread_buckets[valid]
    return np.bincount(fx_b[fx_b >= 0], minlength=U)


def _point_arrays(rt: Routing, costs: FutexCosts) -> dict:
    """Per-point class/entry/station arrays (local ids) of :class:`Network`."""
    topo = rt.workload.topology
    c = costs.resolve(topo)
    cls = _thread_classes(rt)
    thr_cls, cls_n, cls_node = cls["thr_cls"], cls["cls_n"], cls["cls_node"]
    K = cls_n.size
    # each thread spreads its operations evenly over its keys
    valid = rt.thread_buckets >= 0
    nf = valid.sum(axis=1)
    wgt = np.where(valid, 1.0 / np.maximum(nf, 1)[:, None], 0.0)
    cls_think = np.bincount(thr_cls, weights=_think_ns(rt, c, wgt, valid), minlength=K) / cls_n
    C, cold = handoff_matrix(topo, c)
    st = _stations(rt, c)
    U = st["st_base"].size
    rows, stn, ww, tr = _visits(rt, wgt, valid)
    W, A2 = _class_station_weights(rt, thr_cls, K, U, rows, stn, ww, wgt, valid, tr)
    ue = np.flatnonzero(W)
    W, A2 = W[ue], A2[ue]
    ent_cls, ent_st = ue // U, ue % U
    return dict(
        cls_n=cls_n, cls_think=cls_think, cls_node=cls_node,
        cls_line=np.moveaxis(C[:, cls_node, :], 1, 0),  # (K, i, h): holder node i -> class node, home h
        cls_cold=cold[cls_node],                        # (K, h)
        cls_self=np.full(K, c.line_self_ns), cls_counted=~cls["cls_lock"], cls_proc=cls["cls_proc"],
        ent_cls=ent_cls, ent_station=ent_st, ent_visit=W / cls_n[ent_cls], ent_self=A2 / W,
        **st, thr_cls=thr_cls, thr_buckets=rt.thread_buckets, thr_nf=nf, thr_ref=tr,
        st_keys=_station_keys(rt, valid, U),
    )


def network(routings: list[Routing], costs: FutexCosts | None = None, *, keep_threads: bool = True) -> Network:
    """Batch the per-seed routings of one or many configurations into one :class:`Network`.

    ``keep_threads=False`` drops the per-thread bucket lists (only the DES needs them)."""
    costs = coerce_costs(costs)
    parts = [_point_arrays(rt, costs) for rt in routings]
    if not keep_threads:
        for p in parts:
            p["thr_buckets"] = p["thr_buckets"][:, :1]
            p["thr_ref"] = p["thr_ref"][:, :1]
    nmax = max(p["cls_line"].shape[1] for p in parts)
    fmax = max(p["thr_buckets"].shape[1] for p in parts)
    K_off = np.cumsum([0] + [p["cls_n"].size for p in parts])
    U_off = np.cumsum([0] + [p["st_base"].size for p in parts])
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
                v = np.pad(v, ((0, 0), (0, fmax - v.shape[1])), constant_values=-1)
            elif k == "cls_line":
                v = np.pad(v, ((0, 0), (0, nmax - v.shape[1]), (0, nmax - v.shape[2])))
            elif k == "cls_cold":
                v = np.pad(v, ((0, 0), (0, nmax - v.shape[1])))
            out[k].append(v)
        out["cls_point"].append(np.full(p["cls_n"].size, i))
        out["st_point"].append(np.full(p["st_base"].size, i))
    arrays = {k: np.concatenate(v) for k, v in out.items()}
    # keep only the stations somebody visits (tables are mostly empty at large sizes)
    used, inv = np.unique(arrays["ent_station"], return_inverse=True)
    remap = np.full(arrays["st_base"].size, -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    arrays["ent_station"] = inv.reshape(-1)
    for k in ("st_base", "st_lines", "st_is_bucket", "st_home", "st_point", "st_keys"):
        arrays[k] = arrays[k][used]
    for k in ("thr_buckets", "thr_ref"):
        arrays[k] = np.where(arrays[k] >= 0, remap[np.maximum(arrays[k], 0)], -1)
    return Network(n_points=len(parts), **arrays)


def mva(net: Network, *, tol: float = 1e-6, max_iter: int = 2000, damping: float = 0.0,
        scv: float = 1.0) -> dict:
    """Approximate MVA (Bard-Schweitzer, one customer removed = the arriving thread itself).

    Fixed point over per-thread throughput ``x_k`` [ops/ns] of each class k:
    arrivals ``lam_e = n_k x_k v_e``; the arriving thread finds the previous holder was itself
    with probability ``x_k a_e / Lam_u``, else a thread of node i with probability
    ``(Lam_ui - own) / Lam_u``, giving its mean service ``s_e`` (handoff cost from node i for
    the station's home node, :func:`handoff_matrix`); it waits for the work present minus its
    own share; ``R_e = s_e + wait``; ``x_k = 1 / (Z_k + sum_e v_e R_e)``.

    The work present is ``sum_e' lam_e' s_e' ((R_e' - s_e') + s_e' (1 + scv) / 2)``: the queued
    jobs' full services plus the residual of the one in service, whose mean is
    ``s (1 + scv) / 2`` for service of squared coefficient of variation ``scv`` (Reiser's
    residual-service approximation). ``scv=1`` (exponential, the product-form case) gives the
    plain Schweitzer ``sum lam R s``; ``scv=0`` is for fixed service times.

    Returns dict with ``x`` (K,) ops/ns per thread, ``R`` (E,), ``s`` (E,), ``rho`` (U,)
    station utilisation and ``iterations``.
    """
    check_number("scv", scv, lo=0.0)
    resid = (1.0 + scv) / 2.0
    U, K = net.st_base.size, net.cls_n.size
    nmax = net.cls_line.shape[1]
    s0_all = net.st_base[net.ent_station] + net.st_lines[net.ent_station] * net.cls_self[net.ent_cls]
    # a station visited by one thread alone never queues and always hands the line to itself:
    # its response time is s0 exactly, so it leaves the fixed point (most of a large table)
    n_ent = np.bincount(net.ent_station, minlength=U)[net.ent_station]
    solo = (n_ent == 1) & np.isclose(net.ent_self, net.ent_visit * net.cls_n[net.ent_cls], rtol=1e-9, atol=0.0)
    fixed = np.bincount(net.ent_cls[solo], weights=(net.ent_visit * s0_all)[solo], minlength=K)
    live = ~solo
    k, v, a = net.ent_cls[live], net.ent_visit[live], net.ent_self[live]
    used, u = np.unique(net.ent_station[live], return_inverse=True)
    u = u.reshape(-1)
    Ul = used.size
    node_k = net.cls_node[k]
    line_k = net.cls_line[k, :, net.st_home[net.ent_station[live]]]   # (E, nmax): holder node i, this home
    self_k = net.cls_self[k]
    base, lines = net.st_base[used][u], net.st_lines[used][u]
    s0 = base + lines * self_k
    think = net.cls_think + fixed
    x = 1.0 / (think + np.bincount(k, weights=v * s0, minlength=K))
    R = s0.copy()
    s = s0
    ar = np.arange(k.size)
    line_own = line_k[ar, node_k]
    rho = np.zeros(Ul)
    active = np.ones(net.n_points, dtype=bool)
    ent_point = net.cls_point[k]
    it = 0
    for it in range(1, max_iter + 1):
        xk = x[k]
        lam = net.cls_n[k] * xk * v
        Lam = np.bincount(u, weights=lam, minlength=Ul)
        other_sum = np.zeros(k.size)
        for i in range(nmax):  # arrivals from holders on node i, times the transfer cost
            Ai = np.bincount(u, weights=lam * (node_k == i), minlength=Ul)
            other_sum += Ai[u] * line_k[:, i]
        own = xk * a
        Lu = np.maximum(Lam[u], 1e-300)
        # FCFS: an arrival that finds the lock busy follows the last thread queued before it
        # (never itself); one that finds it idle follows the last holder (maybe itself)
        busy = np.clip(rho[u] - own * s, 0.0, 1.0)
        other_sum = np.maximum(other_sum - own * line_own, 0.0)
        pself = np.minimum(own / Lu, 1.0)
        others = np.maximum(Lu - own, 1e-300)
        cost = busy * other_sum / others + (1.0 - busy) * (pself * self_k + other_sum / Lu)
        ent_on = active[ent_point]
        s = np.where(ent_on, base + lines * cost, s)
        rho = np.bincount(u, weights=lam * s, minlength=Ul)
        # queued jobs' whole services + the residual service of the one being served
        per = s * ((R - s) + s * resid)
        work = np.bincount(u, weights=lam * per, minlength=Ul)
        R = np.where(ent_on, s + np.maximum(work[u] - own * per, 0.0), R)
        x_new = 1.0 / (think + np.bincount(k, weights=v * R, minlength=K))
        # each point stops on its own, so a point's answer does not depend on its batch
        delta = np.zeros(net.n_points)
        np.maximum.at(delta, net.cls_point, np.abs(x_new - x) / x_new)
        moving = active[net.cls_point]
        x = np.where(moving, damping * x + (1.0 - damping) * x_new, x)
        active &= delta >= tol
        if not active.any():
            break
    s_all, R_all = s0_all.copy(), s0_all.copy()
    s_all[live], R_all[live] = s, R
    k, u, v, s, R = net.ent_cls, net.ent_station, net.ent_visit, s_all, R_all
    lam = net.cls_n[k] * x[k] * v
    rho = np.bincount(u, weights=lam * s, minlength=U)
    return dict(x=x, R=R, s=s, rho=rho, iterations=it)


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
    the handoff ``cls_line`` from the previous holder's node (or ``cls_self``).

    Station utilisation is measured over each point's window, from the first time one of
    its threads reaches ``warmup`` completions to the stopping completion: busy time clipped
    to the window / window length (``rho``, (U,)); ``visits`` (U,) counts the services
    scheduled before the stop that end after the window opened (weights for averaging).

    Returns dict with ``rate`` (T,) per-thread ops/ns, ``ops`` (T,) completed, ``thr_point``,
    ``rho`` and ``visits``.
    """
    check_choice("dist", dist, ("exponential", "deterministic"))
    seeds = np.atleast_1d(np.asarray(seeds, dtype=np.int64))
    P = net.n_points
    if seeds.size != P:
        raise NumalabValueError(f"seeds has {seeds.size} entries; allowed: one per network point ({P})")
    thr_point = net.cls_point[net.thr_cls]
    streams = _draw_streams(thr_point, seeds, ops, dist)
    ev = _run_events(net, _thread_table(thr_point, P), streams, ops, warmup)
    measured = ev["done_ops"] - warmup
    if np.any(measured < 2):
        raise NumalabValueError(
            f"ops={ops} leaves a thread with fewer than {warmup + 2} operations; allowed: raise ops"
        )
    rate = measured / (ev["t_last"] - ev["t_warm"])
    # close each window: busy time and visits scheduled beyond the stopping completion
    te = ev["t_end"][net.st_point]
    busy = ev["busy"] - np.maximum(ev["free_at"] - te, 0.0)
    rho = busy / (te - ev["t_start"][net.st_point])
    return dict(rate=rate, ops=ev["done_ops"], thr_point=thr_point, rho=rho, visits=ev["visits"])


def _draw_streams(thr_point: np.ndarray, seeds: np.ndarray, ops: int, dist: str) -> dict:
    """Every thread's pre-drawn random stream, drawn per point in thread order from
    ``Generator((seed, 0xF07E))``: ``Uc`` (T, ops+1) key choices, ``Et`` (T, ops+1) think and
    ``Es`` (T, ops+1, 2) service factors (refcount line, bucket); all ones if deterministic."""
    T = thr_point.size
    Et = np.ones((T, ops + 1))
    Es = np.ones((T, ops + 1, 2))
    Uc = np.zeros((T, ops + 1))
    for p in range(seeds.size):
        idx = np.flatnonzero(thr_point == p)
        g = np.random.default_rng((int(seeds[p]), 0xF07E))
        draws = g.random((idx.size, ops + 1, 4))
        Uc[idx] = draws[..., 0]
        if dist == "exponential":
            Et[idx] = -np.log1p(-draws[..., 1])
            Es[idx] = -np.log1p(-draws[..., 2:4])
    return dict(Uc=Uc, Et=Et, Es=Es)


def _thread_table(thr_point: np.ndarray, P: int) -> np.ndarray:
    """(P, Tmax) table of the global thread ids of each point, -1 padding."""
    T = thr_point.size
    Tmax = np.bincount(thr_point, minlength=P).max()
    order = np.argsort(thr_point, kind="stable")
    slot = np.arange(T) - np.searchsorted(thr_point[order], thr_point[order])
    table = np.full((P, Tmax), -1, dtype=np.int64)
    table[thr_point[order], slot] = order
    return table


def _pick(net: Network, Uc: np.ndarray, g: np.ndarray, j: np.ndarray):
    """Bucket and refcount station of operation ``j`` of threads ``g`` (a uniform key choice)."""
    nf = net.thr_nf
    col = np.minimum((Uc[g, j] * nf[g]).astype(np.int64), nf[g] - 1)
    return net.thr_buckets[g, col], net.thr_ref[g, col]


def _run_events(net: Network, table: np.ndarray, streams: dict, ops: int, warmup: int) -> dict:
    """The event loop of :func:`simulate`: each step serves the earliest arrival of every live
    point, until a thread of the point completes ``ops`` operations. Returns the per-thread
    ``done_ops``, ``t_warm``, ``t_last``, per-station ``busy``, ``visits``, ``free_at`` and the
    per-point utilisation window ``t_start``, ``t_end``."""
    Uc, Et, Es = streams["Uc"], streams["Et"], streams["Es"]
    P = table.shape[0]
    T = net.thr_cls.size
    think = net.cls_think[net.thr_cls]
    node = net.cls_node[net.thr_cls]
    line = net.cls_line[net.thr_cls]   # (T, holder node, home node)
    cold = net.cls_cold[net.thr_cls]   # (T, home node)
    home = net.st_home
    selfc = net.cls_self[net.thr_cls]
    bucket, ref = _pick(net, Uc, np.arange(T), np.zeros(T, dtype=np.int64))
    stage = np.where(ref >= 0, 0, 1)
    t_next = np.full((P, table.shape[1]), np.inf)
    t_next[table >= 0] = (think * Et[:, 0])[table[table >= 0]]
    done_ops = np.zeros(T, dtype=np.int64)
    t_warm = np.zeros(T)
    t_last = np.zeros(T)
    free_at = np.zeros(net.st_base.size)
    holder = np.full(net.st_base.size, -1, dtype=np.int64)
    busy = np.zeros(net.st_base.size)
    visits = np.zeros(net.st_base.size)
    t_start = np.full(P, np.inf)   # utilisation window of each point
    t_end = np.zeros(P)
    live = np.ones(P, dtype=bool)
    pts = np.arange(P)
    while live.any():
        pl = pts[live]
        jj = np.argmin(t_next[pl], axis=1)
        a = t_next[pl, jj]
        g = table[pl, jj]
        stg = stage[g]
        st = np.where(stg == 0, ref[g], bucket[g])
        prev = holder[st]
        hs = home[st]
        cost = np.where(prev == g, selfc[g], line[g, node[np.maximum(prev, 0)], hs])
        cost = np.where(prev < 0, cold[g, hs], cost)   # first touch: from the home's DRAM
        n_done = done_ops[g]
        s = (net.st_base[st] + net.st_lines[st] * cost) * Es[g, n_done, stg]
        b = np.maximum(a, free_at[st])
        c = b + s
        free_at[st] = c
        holder[st] = g
        ts = t_start[pl]
        busy[st] += np.maximum(c - np.maximum(b, ts), 0.0)
        visits[st] += c > ts
        fin = stg == 1
        # not finished: go on to the bucket right after the refcount line
        gn = g[~fin]
        stage[gn] = 1
        t_next[pl[~fin], jj[~fin]] = c[~fin]
        gf, cf = g[fin], c[fin]
        done_ops[gf] += 1
        n = done_ops[gf]
        t_warm[gf] = np.where(n == warmup, cf, t_warm[gf])
        t_last[gf] = cf
        opening = (n == warmup) & np.isinf(t_start[pl[fin]])
        if opening.any():  # open these points' windows; count the work already queued past the start
            t_start[pl[fin][opening]] = cf[opening]
            on = np.isin(net.st_point, pl[fin][opening])
            busy[on] += np.maximum(free_at[on] - t_start[net.st_point[on]], 0.0)
        nb, nr = _pick(net, Uc, gf, n)
        bucket[gf], ref[gf] = nb, nr
        stage[gf] = np.where(nr >= 0, 0, 1)
        t_next[pl[fin], jj[fin]] = cf + think[gf] * Et[gf, n]
        stop = pl[fin][n >= ops]
        t_end[stop] = cf[n >= ops]
        live[stop] = False
    return dict(done_ops=done_ops, t_warm=t_warm, t_last=t_last, busy=busy, visits=visits,
                free_at=free_at, t_start=t_start, t_end=t_end)

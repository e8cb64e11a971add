"""Approximate mean-value analysis of the futex network (:mod:`numalab.futex.meanvalue`).

:func:`mva` is Bard-Schweitzer MVA with one class per group of interchangeable threads (same
process, node, role and core load), exact per-bucket visit weights, per-thread self-shares (a
bucket used by one thread alone costs only self hits; keys are visited in a fixed cyclic
order, so a shared line is usually gone by the time a thread comes back: ``docs/futex.md``,
"Who held the line last"), the arrival's probability of finding the lock held by others for
the contended line count, and with ``scv`` < 1 a residual-service correction for
non-exponential service.

MVA rests on the arrival theorem of product-form (BCMP) networks, whose FCFS stations need
exponential service (``dist="exponential"`` in :func:`~numalab.futex.events.simulate`). Even
then the MVA here is approximate -- Schweitzer's fixed point, and a service time that depends
on the previous holder and on the queue (a mean-field mix) is outside product form -- so the
two agree within 5% on throughput (tests/test_futex_solver.py), not exactly.
"""

from __future__ import annotations

import numpy as np

from .. import libm
from ..errors import NumalabValueError, check_number
from .stations import Network

__all__ = ["mva"]

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
    (E, nodes) and from one on the class's own node ``line_own`` (``line_busy_own`` for a pull
    that meets queued requests), the L2 hit ``self`` [ns],
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
    busy_k = net.cls_line_busy[k, :, net.st_home[eu[live]]]
    return dict(k=k, v=v, a=net.ent_self[live], vm=v * mult_all[live], used=used, u=u, node=node_k,
                line=line_k, line_busy=busy_k, line_own=line_k[np.arange(k.size), node_k],
                line_busy_own=busy_k[np.arange(k.size), node_k], self=net.cls_self[k],
                base=base_all[live], lines=net.st_lines[used][u], lines_busy=net.st_lines_busy[used][u],
                batch=net.st_batch[used][u], core=net.st_core[used][u], sib=net.cls_sib[k],
                mate=net.ent_sib[live] * net.cls_l1[k],
                fwd=net.st_forward[used][u], sort=net.st_sort[used][u],
                px=net.st_px[used][u], xnode=net.st_xnode[eu[live], node_k], s0=s0_all[live], n=net.cls_n[k],
                point=net.cls_point[k])


def _working_set(q: dict, sel: np.ndarray, nmax: int) -> tuple[dict, np.ndarray]:
    """The entries ``sel`` of :func:`_shared_entries`' ``q`` (those of the points still
    iterating) with their stations renumbered: returns the subset, with ``uu`` its station
    index, ``nu`` the station count and ``un`` = station * nmax + the arrival's node (one
    (station, holder node) bincount), and ``su``, the stations' indices in ``q["used"]``."""
    su, uu = np.unique(q["u"][sel], return_inverse=True)
    uu = uu.reshape(-1)
    w = {name: q[name][sel] for name in ("k", "v", "a", "vm", "n", "line", "line_busy", "self", "base", "lines",
                                         "lines_busy", "batch", "core", "sib", "mate", "fwd", "sort", "px", "xnode",
                                         "line_own", "line_busy_own", "node", "point")}
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
    lam_all = w["n"] * xk * w["v"]
    # on an atomic line with SMT batching (core = 1) a visit that finds a sibling's RMW there
    # rides along with it; only the others queue. One busy sibling of the process is there
    # with probability x v R, its mean number there (at most one request a thread), as long as
    # their visits are independent. Riding pairs them up: the two leave together and come
    # back together, the first queues and the second rides, so at most sib / (1 + sib) of the
    # visits ride (one of a core's requests per line visit queues)
    sib = w["sib"]
    ride = w["core"] * np.minimum(sib * np.minimum(xk * w["v"] * R, 1.0), sib / (1.0 + sib))
    lam = lam_all * (1.0 - ride)
    Lam = np.bincount(uu, weights=lam, minlength=nu_)
    Ai = np.bincount(w["un"], weights=lam, minlength=nu_ * nmax).reshape(nu_, nmax)
    other_sum = np.einsum("ei,ei->e", Ai[uu], w["line"])
    own = xk * w["a"] * (1.0 - ride)
    Lu = np.maximum(Lam[uu], 1e-300)
    # FCFS: an arrival that finds the lock busy follows the last thread queued before
    # it (never itself); one that finds it idle follows the last holder (maybe itself)
    busy = np.clip(rho[uu] - own * s, 0.0, 1.0)
    other_sum = np.maximum(other_sum - own * w["line_own"], 0.0)
    # a line that a thread on my own core held last is in our shared L1: its arrivals (their
    # throughput taken as mine) cost the L1 hit instead of the same-node transfer
    mates = xk * w["mate"] * (1.0 - ride)
    other_sum = np.maximum(other_sum - mates * (w["line_own"] - w["self"]), 0.0)
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
    # a pull that finds the lock held meets the holder's own requests for the line (it takes
    # it back for the decrement and the unlock): cross-node ones pay the conflict round trip
    busy_sum = np.maximum(np.einsum("ei,ei->e", Ai[uu], w["line_busy"]) - own * w["line_own"]
                          - mates * (w["line_busy_own"] - w["self"]), 0.0)
    s_busy = w["base"] + w["lines_busy"] * _busy_line_cost(w, uu, nu_, nmax, lam, own, R, busy_sum / others)
    s = np.where(on, busy * s_busy + (1.0 - busy) * s_idle, s)
    s_ride = w["base"] + w["lines_busy"] * w["self"]      # right after the sibling's, from our L1
    rho = np.bincount(uu, weights=lam * s + (lam_all - lam) * s_ride, minlength=nu_)
    # the work an arrival finds: the queued jobs, each of which found the lock held
    # (so is served with the contended line count), plus the residual of the one in
    # service (E[S^2] / 2E[S] of the busy/idle mix, E[S^2] = (1 + scv) s^2 per type)
    per = (R - s) * s_busy + resid * (busy * s_busy ** 2 + (1.0 - busy) * s_idle ** 2)
    work = np.bincount(uu, weights=lam * per, minlength=nu_)
    R = np.where(on, s + np.maximum(work[uu] - own * per, 0.0), R)
    # a rider waits out the rest of its sibling's visit (its residual, resid * R) and its own
    R_mix = R + ride * ((resid - 1.0) * R + s_ride)
    x_new = 1.0 / (think + np.bincount(w["k"], weights=w["vm"] * R_mix, minlength=K))
    return x_new, R, s, rho


def _busy_line_cost(w: dict, uu, nu_: int, nmax: int, lam, own, R, c_other):
    """Line cost [ns] of a visit that finds the station busy, (E,): from the other visitors'
    mix ``c_other`` (a lock hands over in queue order); on a persistent lock (``sort``) from the visitor's own
    node but at the round's run boundaries (``px``); on a contended atomic line (``batch``
    > 0) from the visitor's own node when a request of its node is there already -- present
    with probability ``1 - exp(-q)``, ``q`` = the mean number of the node's other requests at
    the station (``lam R`` summed over the node's visitors, less the visitor's own) -- and
    forwarded (``fwd`` of a transfer: the request was queued already)."""
    if np.any(w["sort"]):
        # a persistent lock's round sorted by node: a handoff crosses nodes only at a boundary
        sorted_cost = (1.0 - w["px"]) * w["line_own"] + w["px"] * w["xnode"]
        c_other = (1.0 - w["sort"]) * c_other + w["sort"] * sorted_cost
    if not np.any(w["batch"]):
        return w["fwd"] * c_other
    present = np.bincount(w["un"], weights=lam * R, minlength=nu_ * nmax).reshape(nu_, nmax)
    q = np.maximum(present[uu, w["node"]] - own * R, 0.0)
    p_node = w["batch"] * -libm.expm1(-q)         # the C library's expm1: the same bits on every CPU
    return w["fwd"] * (p_node * w["line_own"] + (1.0 - p_node) * c_other)


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
    weighted by their arrivals; the arrivals of the threads on its own core, ``ent_sib``, at the
    L1/L2 hit ``c_self``: the core's caches are shared) and pulls the line ``lines_contended`` times; else it follows
    the last holder -- itself with probability
    ``p_self = (1 - a) max(0, 1 - r) + a / (1 + r)``, ``r`` = the others' visits per own visit
    (keys in a fixed cyclic order: a thread returns after ``1/a`` ops; see docs/futex.md) --
    and pulls the line ``lines_per_op`` times:
    ``s_busy = cpu_k base + n_busy c_o``, ``s_idle = cpu_k base + n_idle (p_self c_self +
    (1 - p_self) c_o)``, ``s_e = b_e s_busy + (1 - b_e) s_idle``.
    It waits for the work present minus its own share; ``R_e = s_e + wait``;
    ``x_k = 1 / (Z_k + sum_e m_e v_e R_e)`` (``m_e``: merged identical stations). On a refcount
    line with SMT batching (``st_core``) a visit rides a pending RMW of a busy sibling of its
    core with probability ``min(sib x v R, sib / (1 + sib))`` (:func:`_schweitzer_step`): it
    does not queue, waits out the sibling's residual and pays its own L1 hits.

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

"""Hinting faults: a PROT_NONE region is touched, the task takes a NUMA hinting fault, the
page may migrate to the faulting task's node, and the fault is recorded for placement.

Kernel functions modelled (spec §5): ``do_numa_page`` / ``do_huge_pmd_numa_page`` (the
fault; +1 ``numa_hint_faults`` per folio, ``numa_hint_faults_local`` when already local),
``vma_set_access_pid_bit`` (the faulting task's bit in the VMA's current ``pids_active``
window), ``numa_migrate_check`` -> ``mpol_misplaced`` -> ``should_numa_migrate_memory`` (the
two-stage filter on the 8-bit ``last_cpupid``, then the numa-group CPU/memory ratio test;
option ``migrate_filter``), ``migrate_misplaced_folio`` with ``migrate_balanced_pgdat`` (a
full target node fails: ``TNF_MIGRATE_FAIL``), and ``task_numa_fault`` (numa groups,
``task_numa_placement`` when ``numa_migrate_retry`` passed, the fault buffers and
``numa_faults_locality``).

When a region faults, and who takes the fault:

* **Sweeps: the first writer to reach it** (:func:`sweep_faults`). A thread writing its byte
  range in order (autonuma-benchmark's ``bzero`` sweeps) reaches a PROT_NONE region when its
  sweep position passes the region's first byte. Only that first thread takes the hinting
  fault: ``do_huge_pmd_numa_page`` / ``do_numa_page`` restore the entry, and a writer arriving
  behind it finds the PMD changed (the "is the PTE/PMD still the same" check fails, spec §2.2)
  and records nothing -- no PID bit, no fault statistics. So consecutive protected huge pages
  are faulted by the same writer until it meets the next writer ahead, and a window of the
  VMA's ``pids_active`` records that few distinct PIDs. Each step, every sweep's position
  advances by the bytes it wrote (after the kernel time it owed), and a protected region of
  a class written only by sweeps faults in the step some writer crosses it, taken by the
  writer that crosses it first (ties: the lower thread index).
* **Fixed-rate touches: a Poisson clock** (stacks, globals: written on every call, in no
  order): each protected region of such a class adds ``lambda_c dt`` to its hazard and faults
  in the step the hazard reaches its Exp(1) threshold; the faulting thread is the class entry
  where ``selector * lambda_c`` falls in the cumulative touch rates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..workloads import PH_INIT, PH_LOOP, REGION_BYTES
from . import memory
from .groups import active_nodes, group_node_sums, group_stats, join_groups
from .placement import task_numa_placement
from .state import NO_NODE, PID_UNSET, flat

__all__ = ["hinting_faults", "poisson_faults", "sweep_faults", "sweep_pieces", "sweep_horizon", "swept_protected",
           "handle_faults", "record_hint_faults", "should_migrate", "migrate_balanced", "migrate_folios", "task_numa_fault",
           "step_hazard", "pid_window", "FaultBatch"]


@dataclass
class FaultBatch:
    """The step's hinting faults, sorted by (replica, region), one entry per fault: replica
    ``fr``, region ``freg``, faulting thread ``ft``; flat indices ``rt`` = r*T + t, ``rq`` =
    r*NR + region and ``rv`` = r*V + vma (1-D takes, puts and ufunc.at are much cheaper than
    their multi-index forms); the VMA ``fv``, the task's node ``cn``, the folio's node ``fn``
    and its resident base pages ``pages``."""

    fr: np.ndarray
    freg: np.ndarray
    ft: np.ndarray
    rt: np.ndarray
    rq: np.ndarray
    rv: np.ndarray
    fv: np.ndarray
    cn: np.ndarray
    fn: np.ndarray
    pages: np.ndarray

    @classmethod
    def of(cls, b, fr, freg, ft):
        rt = fr * b.lay.T + ft
        rq = fr * b.lay.NR + freg
        fv = b.lay.region_vma[freg]
        return cls(fr=fr, freg=freg, ft=ft, rt=rt, rq=rq, rv=fr * b.lay.V + fv, fv=fv, cn=b.tasks.node.take(rt),
                   fn=b.regions.node.take(rq), pages=b.lay.region_present[freg])


def hinting_faults(b, ctx):
    """The step's fault phase: the protected regions of sweep classes fault when a writer's
    sweep crosses them (:func:`sweep_faults`), the others by their hazard clock
    (:func:`poisson_faults`). Faults are handled at the step's end time, sorted by (replica,
    region)."""
    if b.prot.idx.size == 0:
        return
    pq, pt = poisson_faults(b)
    sq, st = sweep_faults(b, ctx)
    if pq.size + sq.size == 0:
        return
    q = np.concatenate([pq, sq])
    ft = np.concatenate([pt, st])
    order = np.argsort(q, kind="stable")
    q, ft = q[order], ft[order]
    keep = np.ones(b.prot.idx.size, dtype=bool)
    keep[np.searchsorted(b.prot.idx, q)] = False
    b.prot.idx = b.prot.idx[keep]
    b.prot.lam = b.prot.lam[keep]
    b.prot.thresh = b.prot.thresh[keep]
    fr, freg = np.divmod(q, b.lay.NR)
    b.regions.prot_none[fr, freg] = False
    handle_faults(b, ctx, fr, freg, ft, ctx.t1)


def poisson_faults(b):
    """The hazard clock of the protected regions whose class is not a sweep class: each adds
    ``lambda_c * dt`` (rates of the step's start) and faults in the step its hazard reaches its
    Exp(1) threshold (an inhomogeneous Poisson first touch); the faulting thread is drawn in
    proportion to the entries' touch rates. Returns the faulting regions' flat indices
    ``r * NR + region`` (sorted) and threads."""
    wl = b.wl
    NR, C = b.lay.NR, b.lay.C
    cum, lam_c = b.rates.cum, b.rates.lam_c                                  # rates at the step's start
    pi = b.prot.idx
    none = np.zeros(0, dtype=np.int64)
    hz = b.regions.hazard.ravel()                      # flat views: 1-D takes are cheaper
    h = hz[pi] + step_hazard(b)
    hz[pi] = h
    hit = h >= b.prot.thresh
    if not np.count_nonzero(hit):  # most steps: no threshold reached (then lam > 0 need not be tested)
        return none, none
    lam = lam_c.take(b.prot.lam)
    hit &= (b.prot.step_hazard > 0)
    if not np.count_nonzero(hit):
        return none, none
    hi = np.flatnonzero(hit)
    hi = hi[~b.outcome.done[pi[hi] // NR]]
    if hi.size == 0:
        return none, none
    fr, freg = np.divmod(pi[hi], NR)
    fc = b.lay.region_class[freg]
    a, z = b.lay.cls_start[fc], b.lay.cls_end[fc]
    row = fr * (b.lay.E + 1)                           # flat (r, 0) of cum: 1-D takes are cheaper
    target = cum.take(row + a) + b.regions.selector[fr, freg] * lam[hi]
    # the entry whose cumulative-rate interval holds the target (searchsorted within the
    # class's segment, written as a count so it is row-wise and batch-independent)
    # only as many columns as the widest faulting class needs (the rest are masked anyway)
    width = int((z - a).max())
    if width <= 1:
        e = a
    else:
        j = np.arange(width - 1)
        pos = np.minimum(a[:, None] + 1 + j[None, :], b.lay.E)
        le = (cum.take(row[:, None] + pos) <= target[:, None]) & (j[None, :] < (z - a - 1)[:, None])
        e = a + np.count_nonzero(le, axis=1)
    return pi[hi], wl.entry_thread[e]


def _position(init_bytes, loop_bytes, phase, left, sweep_phase):
    """A sweep's position in bytes of its phase: the bytes of the phase written so far
    (``phase_bytes - bytes_left``), plus the thread's ``sweep_phase`` in its loop."""
    pbt = np.where(phase == PH_INIT, init_bytes, loop_bytes)
    return pbt - left + np.where(phase == PH_LOOP, sweep_phase, 0.0)


def sweep_pieces(b, ctx):
    """Where every thread's sweep went this step, as up to two pieces per thread (R, T): the
    phase it started the step in (``ph_a``; its position ``x_a`` in bytes of that phase, bytes
    written ``w_a``, from ``tau_a`` s into the step, after the kernel time it owed) and, for a
    thread whose init ended in the step, the start of its loop (``w_b`` bytes from position 0
    at ``tau_b``). Loop positions include the thread's sweep phase. Returns
    ``(ph_a, x_a, w_a, tau_a, x_b, w_b, tau_b, speed)``."""
    pb = b.wl.phase_bytes
    ph0, left0, used_k = ctx.phase0, ctx.left0, ctx.used_k
    ph1, left1 = b.tasks.phase, b.tasks.bytes_left
    speed = b.rates.speed
    writing = ctx.running & ((ph0 == PH_INIT) | (ph0 == PH_LOOP))
    same = ph1 == ph0
    x_a = _position(pb[None, :, 0], pb[None, :, 1], ph0, left0, b.tasks.sweep_phase)
    w_a = np.where(writing, np.where(same, left0 - left1, np.maximum(left0, 0.0)), 0.0)
    switched = writing & (ph0 == PH_INIT) & (ph1 == PH_LOOP)
    w_b = np.where(switched, pb[None, :, 1] - left1, 0.0)
    tau_b = used_k + np.maximum(left0, 0.0) / np.maximum(speed, 1e-30)
    return ph0, x_a, w_a, used_k, b.tasks.sweep_phase, w_b, tau_b, speed


def sweep_faults(b, ctx):
    """First arrival (module docstring): the protected regions of sweep classes that a writer's
    sweep crossed this step, each taken by the writer that crossed it first. A region ``k`` of
    a segment (``Workload.seg_*``) lies at ``p = sigma + max(0, k * 2 MiB - lo)`` in its
    thread's sweep of ``range`` bytes; a sweep piece that starts at position ``x`` (mod range)
    and writes ``w`` bytes crosses it ``d = (p - x) mod range`` bytes in, when ``d < w``, at
    ``tau + d / speed`` (:func:`_first_crossings`). Returns the faulting regions' flat
    indices (sorted) and threads."""
    lay = b.lay
    none = np.zeros(0, dtype=np.int64)
    if lay.S == 0 or ctx.phase0 is None:
        return none, none
    pidx = swept_protected(b)
    # most steps: no protected region of a sweep class (a scan's new ones are crossed within
    # a step or two by numa01's hundreds of writers), so nothing for the search to find
    if pidx.size == 0:
        return none, none
    pieces = sweep_pieces(b, ctx)
    # a thread's init ended in the step: the first piece of its loop as well (rare)
    rs, ss, rt, x, tau, wp = _live_pieces(b, pieces, general=bool(np.count_nonzero(pieces[5])))
    if rs.size == 0:
        return none, none
    return _first_crossings(b, pidx, (rs, ss, rt), x, tau, wp, pieces[7])


def _live_pieces(b, pieces, general):
    """The (replica, segment) pieces of :func:`sweep_pieces`' arrays that wrote bytes: ``rs``,
    ``ss``, flat thread ``rt``, start ``x``, time ``tau`` and bytes ``wp`` of each. ``general``
    takes a loop's first piece into account (needed when a thread's init ended in the step);
    without it only the phase each thread started the step in, which gives the same pieces
    when no init ended (tests/test_engine_fastpaths.py)."""
    ph_a, x_a, w_a, tau_a, x_b, w_b, tau_b, _ = pieces
    lay = b.lay
    st, T = lay.seg_thread, lay.T
    # per (replica, segment): the piece of the segment's phase
    use_a = ph_a[:, st] == lay.seg_phase[None, :]
    if general:
        use_b = ~use_a & (lay.seg_phase[None, :] == PH_LOOP) & (w_b[:, st] > 0)
        w = np.where(use_a, w_a[:, st], np.where(use_b, w_b[:, st], 0.0))
        w = np.where(b.outcome.done[:, None], 0.0, w)
        rs, ss = np.nonzero(w > 0)
        rt = rs * T + st[ss]
        ua = use_a[rs, ss]
        return rs, ss, rt, np.where(ua, x_a.take(rt), x_b.take(rt)), np.where(ua, tau_a.take(rt), tau_b.take(rt)), \
            w[rs, ss]
    # every piece is of the phase its thread started the step in (w_a is 0 where the thread
    # does not run, so in every finished replica)
    rs, ss = np.nonzero(use_a & (w_a[:, st] > 0))
    rt = rs * T + st[ss]
    return rs, ss, rt, x_a.take(rt), tau_a.take(rt), w_a.take(rt)


def _first_crossings(b, pidx, pieces, x, tau, wp, speed):
    """The regions of ``pidx`` that the sweep pieces ``(rs, ss, rt)`` (replica, segment, flat
    thread; from position ``x`` at ``tau``, ``wp`` bytes) cross, each with the piece's thread
    that reaches it first (ties: the lower thread index) -- :func:`sweep_faults`'s search."""
    lay = b.lay
    none = np.zeros(0, dtype=np.int64)
    rs, ss, rt = pieces
    rng_ = lay.seg_range[ss]
    a = np.mod(x, rng_)
    sig, lo = lay.seg_sigma[ss], lay.seg_lo[ss]
    end = sig + (lay.seg_hi[ss] - lo)
    kf, kl = lay.seg_kfirst[ss], lay.seg_klast[ss]
    base = rs * lay.NR + lay.seg_region0[ss]
    full = wp >= rng_
    # the swept positions [a, a + w) mod range, cut to the segment: two intervals at most, the
    # second ([sigma, v2)) only where the piece passed the end of its range
    u = np.where(full, sig, np.maximum(a, sig))
    v = np.where(full, end, np.minimum(a + wp, end))
    v2 = np.where(full, sig, np.minimum(a + wp - rng_, end))
    piece = np.arange(ss.size)
    wrap = np.flatnonzero(sig < v2)
    if wrap.size:
        u, v, piece = np.concatenate([u, sig[wrap]]), np.concatenate([v, v2[wrap]]), np.concatenate([piece, wrap])
        sig, lo, kf, kl, base = sig[piece], lo[piece], kf[piece], kl[piece], base[piece]

    k0 = np.maximum(_region_at(u, sig, lo, kf) - 1, kf)
    k1 = np.minimum(_region_at(v, sig, lo, kf) + 1, kl + 1)
    keep = np.flatnonzero((u < v) & (k1 > k0))           # the intervals that hold a region
    i0 = np.searchsorted(pidx, (base + k0)[keep])
    n = np.maximum(np.searchsorted(pidx, (base + k1)[keep]), i0) - i0
    tot = int(n.sum())
    if tot == 0:
        return none, none
    j = np.repeat(piece[keep], n)                         # the piece of each candidate region
    q = pidx[np.arange(tot) - np.repeat(np.cumsum(n) - n, n) + np.repeat(i0, n)]
    reg = q - rs[j] * lay.NR
    d = _bytes_ahead(lay, ss[j], reg, a[j])
    hit = d < wp[j]                                      # (pidx holds sweep classes only)
    if not np.count_nonzero(hit):
        return none, none
    q, j, d = q[hit], j[hit], d[hit]
    when = tau[j] + d / np.maximum(speed.take(rt[j]), 1e-30)
    thread = lay.seg_thread[ss[j]]
    order = np.lexsort((thread, when, q))
    q, thread = q[order], thread[order]
    first = np.ones(q.size, dtype=bool)
    first[1:] = q[1:] != q[:-1]
    return q[first], thread[first]


def _region_at(xx, sig, lo, kf):
    """The first region of each segment (``seg_sigma`` ``sig``, ``seg_lo`` ``lo``,
    ``seg_kfirst`` ``kf``) whose crossing position is >= ``xx``, widened by one (the ceil may be
    one region off either way): the bound :func:`_first_crossings` and :func:`_ahead` search from."""
    k = np.ceil((xx - sig + lo) / REGION_BYTES).astype(np.int64)
    return np.where(xx <= sig, kf, np.maximum(kf + 1, k))


def _bytes_ahead(lay, seg, reg, a):
    """Bytes a sweep standing at position ``a`` (mod its range) of segment ``seg`` writes before
    it reaches region ``reg`` of that segment: region ``k`` lies at ``sigma + max(0, k * 2 MiB -
    lo)`` in the sweep (``Workload.seg_*``)."""
    k = reg - lay.seg_region0[seg]
    p = lay.seg_sigma[seg] + np.maximum(0.0, k * float(REGION_BYTES) - lay.seg_lo[seg])
    return np.mod(p - a, lay.seg_range[seg])


def swept_protected(b):
    """The protected regions of sweep classes (``prot.idx`` where ``Layout.cls_sweep``), the
    only ones a sweep faults (:func:`sweep_faults`); sorted, kept for the ``prot.idx`` array it
    was taken from (a new protected set is a new array)."""
    if b.prot.sweep_idx_of is not b.prot.idx:
        pidx = b.prot.idx
        b.prot.sweep_idx = pidx[b.lay.cls_sweep[b.prot.lam % b.lay.C]]   # lam: r * C + class
        b.prot.sweep_idx_of = pidx
    return b.prot.sweep_idx


def _sweep_positions(b, phase, left, running):
    """The live sweeps of a state -- (replica, segment) pairs ``rs``, ``ss`` of the running
    threads' segments of their phase -- and each one's position ``a`` (mod its range), by
    :func:`_position` as :func:`sweep_pieces` finds a piece's start."""
    lay = b.lay
    st = lay.seg_thread
    live = running[:, st] & (phase[:, st] == lay.seg_phase[None, :]) & ~b.outcome.done[:, None]
    rs, ss = np.nonzero(live)
    tt = st[ss]
    pb = b.wl.phase_bytes
    x = _position(pb[tt, 0], pb[tt, 1], lay.seg_phase[ss], left[rs, tt], b.tasks.sweep_phase[rs, tt])
    return rs, ss, np.mod(x, lay.seg_range[ss])


def _ahead(b, pidx, rs, ss, a):
    """Bytes the sweeps standing at ``a`` of segments ``ss`` (replicas ``rs``) write before they
    reach a region of ``pidx`` (sorted flat indices) of their segment, ``inf`` if it has none:
    the least :func:`_bytes_ahead` over them. Positions grow with the region index, so the
    least is that of the first region at or after ``a`` or, if none, of the segment's first
    protected region (the sweep wraps); the first one is found by :func:`_region_at`, as
    :func:`sweep_faults` finds its bounds, whose ceil may be one region off either way, so the
    first three protected regions from one region before it are the candidates."""
    lay = b.lay
    sig, lo, kf = lay.seg_sigma[ss], lay.seg_lo[ss], lay.seg_kfirst[ss]
    base = rs * lay.NR + lay.seg_region0[ss]
    first = np.searchsorted(pidx, base + kf)
    stop = np.searchsorted(pidx, base + lay.seg_klast[ss] + 1)
    at = np.searchsorted(pidx, base + np.maximum(_region_at(a, sig, lo, kf) - 1, kf))
    cand = np.stack([first, at, at + 1, at + 2], axis=1)                   # (n, 4) positions in pidx
    ok = cand < stop[:, None]
    reg = pidx[np.minimum(cand, pidx.size - 1)] - (rs * lay.NR)[:, None]
    d = _bytes_ahead(lay, ss[:, None], reg, a[:, None])
    return np.where(ok, d, np.inf).min(axis=1)


def sweep_horizon(b, running):
    """``(R, T)`` bytes each running thread's sweep can still write, from where it stands,
    before it reaches a protected region of a sweep class in its current phase: the step whose
    bytes pass this crosses one (:func:`sweep_faults`, the same positions); ``inf`` where none
    lies ahead. :func:`numalab.engine.quiet.plan` ends a quiet stretch before it."""
    out = np.full((b.R, b.lay.T), np.inf)
    if b.lay.S == 0 or b.prot.idx.size == 0:
        return out
    pidx = swept_protected(b)
    if pidx.size == 0:
        return out
    rs, ss, a = _sweep_positions(b, b.tasks.phase, b.tasks.bytes_left, running)
    if rs.size:
        np.minimum.at(out, (rs, b.lay.seg_thread[ss]), _ahead(b, pidx, rs, ss, a))
    return out


def step_hazard(b):
    """``lambda_c * dt`` of each protected region (aligned with ``prot.idx``; 0 for a sweep
    class's regions, which fault by position, :func:`sweep_faults`): the same from
    step to step until the rates are refreshed or the protected set changes (a new ``lam``
    array), so computed once for them. ``prot.lam`` (flat (replica, class) index) and
    ``prot.thresh`` are kept aligned with ``prot.idx``."""
    if b.prot.step_hazard_of is not b.prot.lam:
        # a sweep class has no hazard: its regions fault by sweep position (sweep_faults)
        lam = b.rates.lam_c.take(b.prot.lam)
        b.prot.step_hazard = np.where(b.lay.cls_sweep[b.prot.lam % b.lay.C], 0.0, lam) * b.dt
        b.prot.step_hazard_of = b.prot.lam
    return b.prot.step_hazard


def handle_faults(b, ctx, fr, freg, ft, now):
    """do_numa_page for a batch of faults (sorted by replica, region) at ``now`` (s): record
    them, run the migrate filter, migrate what fits, charge the kernel time, then
    task_numa_fault."""
    f = FaultBatch.of(b, fr, freg, ft)
    inc, local = record_hint_faults(b, f)
    kt = b.costs.hint_fault_us * 1e-6 * inc
    # last_cpupid as read before the filter
    rg = b.regions
    last = (rg.last_pid8.take(f.rq), rg.last_set.take(f.rq), rg.last_node.take(f.rq), rg.last_task.take(f.rq))
    my8 = b.tasks.pid8.take(f.rt)
    check, want_mig = should_migrate(b, f, local, last, my8)
    migrate, failed = migrate_balanced(b, f, want_mig)
    # the filter records the new accessor (only when it ran)
    if np.count_nonzero(check):
        rqc = f.rq[check]
        flat(rg.last_pid8)[rqc] = my8[check]
        flat(rg.last_set)[rqc] = True
        flat(rg.last_node)[rqc] = f.cn[check]
        flat(rg.last_task)[rqc] = ft[check]
    kt = migrate_folios(b, f, migrate, kt)
    mem_node = np.where(migrate, f.cn, f.fn)
    np.add.at(flat(b.tasks.kdebt), f.rt, kt)
    np.add.at(flat(b.tasks.ksys), f.rt, kt)
    np.add.at(b.counters.syst, fr, kt)
    task_numa_fault(b, ctx, f, now, local, last, my8, mem_node, failed)


def record_hint_faults(b, f):
    """The fault itself: the faulting task's bit in the VMA's current PID window (when the VMA
    has numab state), the VMA's faulted flag, the adaptive rule's fault hook, and the vmstat
    counters. Returns (count increment per fault, local per fault)."""
    fr, fv = f.fr, f.fv
    # PID bit, when the VMA has numab state (history.set_pid_bits without its argument
    # checks: the indices are the engine's own)
    if b.pol.numab_state:
        hs = b.vmas.has_state.take(f.rv)
        n = np.count_nonzero(hs)
        if n:
            if n == hs.size:                              # the usual case: every VMA has state
                hr, hv, rv, rth = fr, fv, f.rv, f.rt
            else:
                hr, hv, rv, rth = fr[hs], fv[hs], f.rv[hs], f.rt[hs]
            word, mask = b.tasks.tid_word.take(rth), b.tasks.tid_mask.take(rth)
            W, words = b.vmas.pids_active.shape[-2:]
            window = _window_at(b, rv)
            np.bitwise_or.at(flat(b.vmas.pids_active), (rv * W + window) * words + word, mask)
            b.vmas.adapt = b.rule.on_fault(b.vmas.adapt, (hr, hv))
    flat(b.vmas.faulted)[f.rv] = True
    inc = b.lay.fault_inc[f.freg]
    local = f.fn == f.cn
    np.add.at(b.counters.events["numa_hint_faults"], fr, inc)
    np.add.at(b.counters.events["numa_hint_faults_local"], fr, np.where(local, inc, 0))
    return inc, local


def should_migrate(b, f, local, last, my8):
    """mpol_misplaced + should_numa_migrate_memory: ``check`` (the filter runs: the task has
    no bind policy and the folio is remote) and ``want`` (the filter says migrate). With
    option ``migrate_filter=False`` every checked fault wants to migrate (last_cpupid is still
    recorded: numa groups read it)."""
    wl = b.wl
    T, N = b.lay.T, b.lay.N
    fr, ft, rt, cn, fn = f.fr, f.ft, f.rt, f.cn, f.fn
    last8, _, lnode, _ = last
    # mpol_misplaced: bind task policy -> no; local -> not misplaced (no cpupid refresh)
    bindp = ((b.tasks.phase.take(rt) == PH_INIT) & wl.init_bind[ft]) | wl.mem_bind[ft]
    check = ~bindp & ~local
    if not b.o.migrate_filter or not np.count_nonzero(check):
        return check, check
    # two-stage filter (should_numa_migrate_memory)
    unset = last8 == PID_UNSET
    mine = last8 == my8
    early = ((b.numa.numa_preferred_nid.take(rt) == NO_NODE) | (b.numa.numa_scan_seq.take(rt) <= 4)) & (unset | mine)
    second_stage_fail = ~unset & (lnode != cn)
    g = b.groups.gid.take(rt)
    want = early | (~second_stage_fail & (mine | (g < 0)))
    # the numa-group CPU / memory ratio test decides the rest (grouped, not mine, stage 2 passed)
    need = check & ~want & ~second_stage_fail
    if np.count_nonzero(need):
        gm, gc, _ = group_stats(b)
        gm_n, gc_n = group_node_sums(b, gm, gc)              # (R, T, N): private + shared
        rg = (fr[need] * T + g[need]) * N
        dst, src = rg + cn[need], rg + fn[need]
        gcpu_dst, gcpu_src = gc_n.take(dst), gc_n.take(src)
        gmem_dst, gmem_src = gm_n.take(dst), gm_n.take(src)
        want[need] = (gcpu_dst > 3 * gcpu_src) | (3 * gcpu_dst * gmem_src > 4 * gcpu_src * gmem_dst)
    return check, check & want


def migrate_balanced(b, f, want_mig):
    """migrate_balanced_pgdat: the target node must have room; candidates take room in fault
    order (a failed candidate still counts), a full node fails the migration. Returns
    (migrate, failed) per fault."""
    fr, cn, pages = f.fr, f.cn, f.pages
    N = b.lay.N
    migrate, failed = want_mig, np.zeros_like(want_mig)
    # every candidate fits when every node has room for all of them (the usual case)
    if np.count_nonzero(want_mig) and np.count_nonzero(memory.node_free(b) < pages[want_mig].sum()):
        key = np.where(want_mig, fr * N + cn, -1)
        order = np.argsort(key, kind="stable")
        ks, pg = key[order], np.where(want_mig, pages, 0)[order]
        csum = np.cumsum(pg)
        start = np.searchsorted(ks, ks, side="left")
        before = csum - pg - np.where(start > 0, csum[np.maximum(start - 1, 0)], 0)
        cum_incl = np.empty_like(csum)
        cum_incl[order] = before + pg
        fits = cum_incl <= memory.node_free(b)[fr, cn]
        migrate = want_mig & fits
        failed = want_mig & ~fits
    return migrate, failed


def migrate_folios(b, f, migrate, kt):
    """migrate_misplaced_folio for the faults that migrate: the folio moves to the faulting
    task's node; returns the kernel time per fault with the copy added (s)."""
    if np.count_nonzero(migrate):
        pages = f.pages
        mr = f.fr[migrate]
        memory.migrate(b, mr, f.freg[migrate], f.cn[migrate])
        np.add.at(b.counters.events["numa_pages_migrated"], mr, pages[migrate])
        kt = kt + np.where(migrate, b.costs.migrate_time_s(pages, 1), 0.0)
    return kt


def task_numa_fault(b, ctx, f, now, local, last, my8, mem_node, failed):
    """task_numa_fault: numa groups (option ``numa_groups``), task_numa_placement (once per
    task per step, when its retry time has passed, before this step's faults are added),
    then the fault buffers and numa_faults_locality (a shared remote fault between two of the
    group's active nodes counts as local)."""
    R, T, N = b.R, b.lay.T, b.lay.N
    fr, ft, rt, cn, pages = f.fr, f.ft, f.rt, f.cn, f.pages
    last8, lset, _, ltask = last
    priv = ~lset | (last8 == my8)
    shared_f = ~priv
    if b.o.numa_groups and np.count_nonzero(shared_f):
        join_groups(b, fr[shared_f], ft[shared_f], ltask[shared_f], last8[shared_f])
    seen = np.zeros(R * T, dtype=bool)
    seen[rt] = True
    uk = np.flatnonzero(seen)                                   # np.unique(fr * T + ft)
    due = now > b.numa.numa_migrate_retry.take(uk)
    if np.count_nonzero(due):
        gm, gc, gsize = group_stats(b)                          # after this batch's joins
        pr_, pt_ = np.divmod(uk[due], T)
        task_numa_placement(b, ctx, pr_, pt_, now, gm, gc, gsize)
    # buffers
    flocal = local.copy()
    gid_f = b.groups.gid.take(rt)
    ing2 = gid_f >= 0
    if (shared_f & ~flocal & ing2).any():
        gm, gc, gsize = group_stats(b)
        active = active_nodes(b, gc)                                  # (R, T(gid), N)
        gid = np.where(ing2, gid_f, 0)
        nact = active[fr, gid].sum(axis=-1)
        relabel = shared_f & ~flocal & ing2 & (nact > 1) & active[fr, gid, cn] & active[fr, gid, mem_node]
        flocal = flocal | relabel
    p_i = priv.astype(np.int64)
    np.add.at(flat(b.numa.buf_mem), (rt * N + mem_node) * 2 + p_i, pages)
    np.add.at(flat(b.numa.buf_cpu), (rt * N + cn) * 2 + p_i, pages)
    np.add.at(flat(b.numa.numa_faults_locality), rt * 3 + flocal, pages)
    if np.count_nonzero(failed):
        np.add.at(flat(b.numa.numa_faults_locality), rt[failed] * 3 + 2, pages[failed])
        np.add.at(b.counters.events["numa_migrate_fail"], fr[failed], 1)
    flat(b.numa.has_faults)[rt] = True


def pid_window(b, r, v):
    """The window hinting faults of VMAs (r, v) write to (history.current_window_index)."""
    return _window_at(b, r * b.lay.V + v)


def _window_at(b, rv):
    """:func:`pid_window` of the VMAs at flat (replica, VMA) indices ``rv``."""
    if b.pol.rotation == "shift":
        return np.full(rv.shape, b.pol.windows - 1, dtype=np.int64)
    return np.mod(b.vmas.pids_idx.take(rv), b.pol.windows).astype(np.int64)

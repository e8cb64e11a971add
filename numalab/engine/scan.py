"""Scanning: ``task_tick_numa`` triggers and ``task_numa_work`` runs -- the VMA walk that
makes memory PROT_NONE so that the next touches take hinting faults.

Kernel functions modelled (spec §3.2-§3.4): ``task_tick_numa`` (a thread whose runtime passes
``node_stamp + numa_scan_period`` triggers; per mm the earliest trigger at or after
``numa_next_scan`` wins the cmpxchg, ties by ``u_task``), ``task_numa_work`` (walk the VMAs
from ``numa_scan_offset``; lazily create ``vma_numab_state``; rotate ``pids_active`` windows;
decide each VMA with :func:`numalab.policy.decide_unchecked` -- ``vma_is_accessed`` and the
profile's rules -- and the adaptive rule's hooks; ``change_prot_numa`` within the
``scan_size`` budget and the 8x virtual cap; ``reset_ptenuma_scan`` at the end of the address
space; the v6.7 ``vma_pids_forced`` retry), and ``sched_skip_vma_numa`` (the reason of every
visited VMA, counted and traced).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from .. import history as hist
from .. import libm
from ..errors import EngineInvariantError
from ..policy import ALLOWED, CODE, decide_unchecked, unfiltered_reasons
from ..scanview import ScanView
from ..workloads import INACCESSIBLE, PH_INIT, REGION_PAGES, SHARED_RO, UNSUITABLE
from . import history_stats
from .scan_period import task_scan_min

__all__ = ["scan_trigger", "tick_triggers", "queue_tick", "jiffies", "task_numa_work", "evaluate", "walk",
           "commit_visits", "Evaluation", "WalkResult", "TICK_S"]

TICK_S = 1e-3              # HZ=1000 (the LKP rhel-8.3 config)


@dataclass
class Evaluation:
    """Tentative per-VMA decisions of one task_numa_work evaluation: mm ``m``, the scanning
    ``rows`` (replicas), their ``scanner`` threads and times ``now`` (s), ``forced`` (the v6.7
    retry), the VMAs from position ``lo`` of the mm on; ``allowed``/``reason`` (n, Vm - lo),
    ``st`` the tentative numab state of those VMAs (lazy init and rotation applied; ``visit``
    the adaptive rule's view) that the walk commits for the VMAs it reaches."""

    m: int
    rows: np.ndarray
    scanner: np.ndarray
    now: np.ndarray
    forced: bool
    lo: int
    allowed: np.ndarray
    reason: np.ndarray
    st: dict


@dataclass
class WalkResult:
    """One replica's walk: kernel seconds, whether the forced retry is due, the scan budget
    and virtual cap left (pages)."""

    ktime: float
    retry: bool
    budget: int
    virt: int


def _rotate(pids, pidx, mask, rotation):
    """history.rotate on the masked entries only (gathered, rotated whole, written back)."""
    sel = np.nonzero(mask)
    sub, subidx = pids[sel], pidx[sel]
    hist.rotate(sub, subidx, None, rotation=rotation)
    pids[sel] = sub
    pidx[sel] = subidx


def jiffies(t_s):
    """``t_s`` (s) on the tick grid: the kernel keeps ``next_scan`` and ``pids_active_reset`` in
    jiffies, so a VMA whose scan delay ends at the tick of a pass is scanned in it
    (``time_before(jiffies, next_scan)`` is false on equal jiffies). Sums of float seconds
    (3.002 + 1.0 = 4.002000000000001 > 4.002) would delay it by a whole pass instead."""
    return np.round(np.asarray(t_s) / TICK_S) * TICK_S


def _seconds(t_s):
    """tick_clock=False (the 0.7.0 engine): VMA timestamps as float seconds."""
    return t_s


def tick_triggers(t0, dt, thresh, before, period_s):
    """task_tick_numa's triggers in the step (t0, t0 + dt] of a thread whose runtime was
    ``before`` at t0 and grows with the wall clock: ``(cross, n)``, the tick of its first
    trigger and how many consecutive ticks trigger (arrays, ticks as floats).

    The first is the tick at which the runtime passes ``thresh = node_stamp + period`` (ticks
    make ties, as in the kernel), or the step's first tick for a thread already past it.
    Each trigger adds ``period_s`` to node_stamp, and the runtime grows a tick per tick, so the
    thread triggers at ticks ``cross, cross + 1, ...`` while its runtime there exceeds the
    advanced threshold: ``ceil(lag / (period - tick))`` ticks for a lag at ``cross``, at least
    one and no more than the step's ticks left. A thread that is not behind triggers once."""
    cross = np.ceil((t0 + np.maximum(thresh - before, 0.0)) / TICK_S - 1e-6)
    lag = (before + (cross * TICK_S - t0)) - thresh        # runtime past thresh at that tick
    last = np.floor((t0 + dt) / TICK_S + 1e-6)
    n = np.minimum(np.ceil(lag / np.maximum(period_s - TICK_S, TICK_S)), last - cross + 1)
    return cross, np.maximum(n, 1.0)


def queue_tick(cross, n, nxt):
    """The tick at which a thread triggering at ticks ``cross .. cross + n - 1`` queues
    task_numa_work -- its first trigger at or after ``nxt`` (its mm's numa_next_scan, in
    ticks) -- and whether there is one in the step: ``(tick, queued)``."""
    at = np.maximum(cross, nxt)
    return at, at <= cross + (n - 1)


def scan_trigger(b, ctx):
    """The step's scan phase: task_tick_numa for every running thread, then task_numa_work
    of each mm's winner; its kernel time is charged to the scanner (and 32x to its
    node_stamp, as task_numa_work does).

    task_tick_numa runs at every tick: a thread whose runtime is past ``node_stamp + period``
    triggers (node_stamp advances by that period) and queues the work if its mm's
    ``numa_next_scan`` has come. One still behind after a trigger -- its period was just
    shortened (``update_scan_period``'s reset, ``update_task_scan_period``) -- triggers again
    at the next tick, so it catches up a period per tick and can win at any of those ticks
    (:func:`tick_triggers`)."""
    t0, running, u_task = ctx.t0, ctx.running, ctx.u_task
    period_s = b.numa.numa_scan_period / 1000.0
    thresh = b.numa.node_stamp + period_s
    # CPU time grows at 1 s/s while running: the crossing instant within this step
    trig = running & (b.tasks.runtime > thresh)
    if not np.count_nonzero(trig):
        return
    before = b.tasks.runtime - np.where(running, b.dt, 0.0)
    first = trig & (b.numa.node_stamp == 0)
    if b.o.tick_clock:
        cross, n = tick_triggers(t0, b.dt, thresh, before, period_s)
        # node_stamp advances by the period it was compared with; a process's first thread
        # (node_stamp 0, never triggered) then takes task_scan_start as its period, which is
        # task_scan_min for a task in no numa group (task_tick_numa reads the period before it
        # assigns it)
        b.numa.node_stamp = np.where(trig, b.numa.node_stamp + n * period_s, b.numa.node_stamp)
        if np.count_nonzero(first):
            r0, t0_ = np.nonzero(first)
            b.numa.numa_scan_period[r0, t0_] = task_scan_min(b, b.lay.thread_mm[t0_])
    else:   # tick_clock=False, the 0.7.0 engine: one trigger per step, the first period first
        cross, n = np.ceil((t0 + (thresh - before)) / TICK_S - 1e-6), 1.0
        if np.count_nonzero(first):
            r0, t0_ = np.nonzero(first)
            b.numa.numa_scan_period[r0, t0_] = task_scan_min(b, b.lay.thread_mm[t0_])
            period_s = b.numa.numa_scan_period / 1000.0
        b.numa.node_stamp = np.where(trig, b.numa.node_stamp + period_s, b.numa.node_stamp)
    # a trigger passes its threshold within the step (runtime - dt <= thresh < runtime) or is
    # behind it from the step's first tick, so its ticks are at most ceil((t0 + dt) / tick):
    # none is eligible while every mm's numa_next_scan lies more than a few ticks beyond the
    # step (most triggers only advance node_stamp)
    if t0 + b.dt + 3 * TICK_S < b.mm.numa_next_scan.min():
        return
    # eligible triggers of every mm at once (a scan of mm m changes no other mm's
    # numa_next_scan), then the mms that have any, in index order: a thread queues the work
    # at its first trigger tick at or after numa_next_scan
    nxt = np.round(b.mm.numa_next_scan / TICK_S)[:, b.lay.thread_mm]     # (R, T) ticks
    at, queued = queue_tick(cross, n, nxt)
    elig_all = trig & queued
    if not np.count_nonzero(elig_all):
        return
    if b.lay.M == 1:
        mms = [0]
    else:
        mms = np.flatnonzero(elig_all.any(axis=0) @ b.lay.thread_mm_onehot).tolist()
    for m in mms:
        elig = elig_all & b.lay.in_mm[m]
        rows = np.flatnonzero(elig.any(axis=1))
        if rows.size == 0:
            continue
        key = np.where(elig[rows], at[rows], np.inf)
        best = key.min(axis=1, keepdims=True)
        tie = np.where(key == best, u_task[rows], np.inf)
        winner = tie.argmin(axis=1)
        when = best[:, 0] * TICK_S
        # CAS: numa_next_scan = now + winner's period; the winner lets others win next
        b.mm.numa_next_scan[rows, m] = when + b.numa.numa_scan_period[rows, winner] / 1000.0
        b.numa.node_stamp[rows, winner] += 2 * TICK_S
        ktime = task_numa_work(b, ctx, rows, m, winner, when)
        # task_numa_work's own cost: charged to the scanner, and 32x to its node_stamp
        b.tasks.kdebt[rows, winner] += ktime
        b.tasks.ksys[rows, winner] += ktime
        b.counters.syst[rows] += ktime
        b.numa.node_stamp[rows, winner] += 32 * ktime


def vgather(b, arr, rows, m, lo):
    """``arr[rows][:, vmas of mm m from position lo]`` as one gather (a copy)."""
    sel = b.lay.mm_vsel[m]
    if sel is not None:
        return arr[rows, sel[0] + lo:sel[1]]
    return arr[rows[:, None], b.lay.mm_vmas[m][lo:][None, :]]


def vma_flags(b, rows, m, scanner, lo):
    """The VMA flag tests of decide for the mm's VMAs from position ``lo``: (unsuitable,
    shared_ro, inaccessible), each None (= all False) when no VMA from ``lo`` on has it; a
    scanner under an MPOL_BIND task policy (no MOF) finds every VMA unsuitable
    (vma_policy_mof)."""
    binds = ((b.tasks.phase[rows, scanner] == PH_INIT) & b.wl.init_bind[scanner]) | b.wl.mem_bind[scanner]
    flags = b.lay.mm_flags[m]
    unsuitable = shared_ro = inacc = None
    if flags[UNSUITABLE][1] >= lo or binds.any():
        unsuitable = flags[UNSUITABLE][0][lo:][None, :] | binds[:, None]
    if flags[SHARED_RO][1] >= lo:
        shared_ro = flags[SHARED_RO][0][lo:]
    if flags[INACCESSIBLE][1] >= lo:
        inacc = flags[INACCESSIBLE][0][lo:]
    return unsuitable, shared_ro, inacc


def evaluate(b, rows, m, scanner, now, forced, lo=0) -> Evaluation:
    """Tentative per-VMA state and decisions for the scanning rows, for the mm's VMAs from
    position ``lo`` on (no walk of these rows starts earlier): shape (n, Vm - lo)."""
    vm = b.lay.mm_vmas[m][lo:]
    n, nv = rows.size, vm.size
    now_v = np.asarray(now, dtype=float)
    if now_v.shape != (n,):
        now_v = np.broadcast_to(now_v, (n,))
    unsuitable, shared_ro, inacc = vma_flags(b, rows, m, scanner, lo)
    pids = vgather(b, b.vmas.pids_active, rows, m, lo)
    pidx = vgather(b, b.vmas.pids_idx, rows, m, lo)
    st = dict(has=vgather(b, b.vmas.has_state, rows, m, lo), next_scan=vgather(b, b.vmas.next_scan, rows, m, lo),
              reset=vgather(b, b.vmas.pids_active_reset, rows, m, lo),
              start_seq=vgather(b, b.vmas.start_scan_seq, rows, m, lo),
              prev_seq=vgather(b, b.vmas.prev_scan_seq, rows, m, lo),
              select=vgather(b, b.vmas.scan_select, rows, m, lo), pids=pids, pidx=pidx)
    if b.pol.numab_state:
        allowed, reason = _decide_numab(b, rows, m, scanner, now_v, forced, lo, st, (unsuitable, shared_ro, inacc))
    else:
        reason = unfiltered_reasons((n, nv), unsuitable=unsuitable, shared_ro=shared_ro, inaccessible=inacc)
        allowed = ALLOWED[reason]
    return Evaluation(m=m, rows=rows, scanner=scanner, now=now_v, forced=bool(forced), lo=lo, allowed=allowed,
                      reason=reason, st=st)


def _decide_numab(b, rows, m, scanner, now_v, forced, lo, st, flags):
    """v6.4+: lazy vma_numab_state creation, the scan delay, the pids_active rotation (before
    or after the access test, per profile), the decision and the adaptive rule's hooks; ``st``
    is updated in place. Returns (allowed, reason)."""
    pol, o, rule = b.pol, b.o, b.rule
    unsuitable, shared_ro, inacc = flags
    bad = None
    for f in flags:
        if f is not None:
            bad = f if bad is None else bad | f
    suit = np.True_ if bad is None else ~bad
    now = now_v[:, None]
    seq = b.mm.numa_scan_seq[rows, m]
    off = b.mm.numa_scan_offset[rows, m]
    pids, pidx, has = st["pids"], st["pidx"], st["has"]
    tid = b.tasks.tid[rows, scanner].astype(np.uint32)
    new = suit & ~has
    delay = o.scan_delay_ms / 1000.0
    jiffies_ = jiffies if o.tick_clock else _seconds
    if bool(new.any()):
        st["next_scan"] = np.where(new, jiffies_(now + delay), st["next_scan"])
        st["reset"] = np.where(new, jiffies_(st["next_scan"] + 4 * delay), st["reset"])
        st["start_seq"] = np.where(new, seq[:, None], st["start_seq"])
        st["prev_seq"] = np.where(new, seq[:, None] - 1, st["prev_seq"])
        st["select"] = np.where(new, 0, st["select"])
        pids[new] = 0
        pidx[new] = 0
        st["has"] = has | new
    st["init"] = new
    seq_on = (seq != 0)[:, None]
    not_delayed = suit & ~(seq_on & (now < st["next_scan"]))
    due = not_delayed & seq_on & (now > st["reset"])
    b.vmas.adapt, visit = rule.begin_pass(b.vmas.adapt, gather=lambda arr: vgather(b, arr, rows, m, lo), new=new,
                                          seen=not_delayed & st["has"], rows=rows, m=m,
                                          numa_scan_seq=b.mm.numa_scan_seq, nr_threads=b.lay.nr_threads)
    reset_ms = 4 * o.scan_delay_ms
    if pol.rotate_before_access and due.any():
        _rotate(pids, pidx, due, pol.rotation)
        st["reset"] = np.where(due, jiffies_(st["reset"] + 4 * delay), st["reset"])
        visit = rule.on_rotate(visit, due, now_ms=now * 1000.0, reset_period_ms=reset_ms)
    wa = rule.windows_active(b.vmas.adapt, visit, rows, m)
    st["windows_active"] = wa
    allowed, reason, sel = decide_unchecked(pol, ScanView(
        pids_active=pids, idx=pidx, scanner_tid=tid[:, None], numa_scan_seq=seq[:, None],
        start_scan_seq=st["start_seq"], prev_scan_seq=st["prev_seq"], scan_offset=off[:, None],
        vm_start=b.lay.mm_vstart[m][lo:], next_scan=st["next_scan"] * 1000.0,
        now=now * 1000.0, nr_threads=b.lay.nr_threads[m],
        forced=bool(forced), vma_scan_select=st["select"],
        vm_end=b.lay.mm_vend[m][lo:],
        unsuitable=unsuitable, shared_ro=shared_ro, inaccessible=inacc, windows_active=wa,
        rotation=pol.rotation, width=pol.width))
    visit = rule.after_decide(visit, pids_active=pids, idx=pidx, scanner_tid=tid, windows_active=wa, reason=reason,
                              allowed=allowed, rotation=pol.rotation, width=pol.width)
    if not pol.rotate_before_access:
        due2 = due & allowed
        if np.count_nonzero(due2):
            _rotate(pids, pidx, due2, pol.rotation)
            st["reset"] = np.where(due2, jiffies_(st["reset"] + 4 * delay), st["reset"])
            visit = rule.on_rotate(visit, due2, now_ms=now * 1000.0, reset_period_ms=reset_ms)
    st["visit"] = visit
    if sel is not None:
        st["select"] = np.asarray(sel, dtype=np.int64)
    return allowed, reason


def task_numa_work(b, ctx, rows, m, scanner, when):
    """task_numa_work for mm ``m`` in ``rows`` run by thread ``scanner`` (per row) at ``when``
    (s). Returns the kernel seconds of each run."""
    vend = b.lay.mm_vend_l[m]
    ktime = np.zeros(rows.size)
    ctx.new_prot = []
    b.counters.events["scan_runs"][rows] += 1
    if b.tracer is not None:
        b.tracer.run_begin(b, rows, m, scanner, when)
    # the first VMA ending after the offset; none -> reset_ptenuma_scan first
    last_end = vend[-1]
    off = b.mm.numa_scan_offset[rows, m]
    wrap = off >= last_end
    if np.count_nonzero(wrap):
        b.mm.numa_scan_seq[rows[wrap], m] += 1
        b.mm.numa_scan_offset[rows[wrap], m] = 0
    now = when
    vend_a = b.lay.mm_vend[m]
    lo = int(np.searchsorted(vend_a, b.mm.numa_scan_offset[rows, m].min(), side="right"))
    ev = evaluate(b, rows, m, scanner, now, False, lo)
    budget0 = b.lay.scan_size_pages
    retry = []
    for i in range(rows.size):
        out = walk(b, ctx, ev, i, budget=budget0, virt=8 * budget0)
        ktime[i] += out.ktime
        if out.retry:
            retry.append((i, out.budget, out.virt))
    if retry:
        # v6.7 vma_pids_forced: one more VMA without the PID test, from mm_offset
        ii = np.array([x[0] for x in retry])
        rr = rows[ii]
        past = b.mm.numa_scan_offset[rr, m] >= last_end
        b.mm.numa_scan_seq[rr[past], m] += 1
        b.mm.numa_scan_offset[rr[past], m] = 0
        lo2 = int(np.searchsorted(vend_a, b.mm.numa_scan_offset[rr, m].min(), side="right"))
        ev2 = evaluate(b, rr, m, scanner[ii], now[ii], True, lo2)
        for j, (i, b_left, v_left) in enumerate(retry):
            ktime[i] += walk(b, ctx, ev2, j, budget=b_left, virt=v_left).ktime
    if ctx.new_prot:
        _index_protected(b, ctx.new_prot)
    if b.tracer is not None:
        b.tracer.run_end(b, rows, m, ktime, rows[[i for i, _, _ in retry]] if retry else rows[:0])
    return ktime


def _index_protected(b, new_prot):
    """Merge the regions this task_numa_work call protected into the sorted PROT_NONE index."""
    new = np.concatenate(new_prot)
    allidx = np.concatenate([b.prot.idx, new])
    order = np.argsort(allidx, kind="stable")          # the sorted flat index (unique)
    b.prot.idx = allidx[order]
    b.prot.lam = np.concatenate([b.prot.lam, b.prot.class_index(b.lay, new)])[order]
    b.prot.thresh = np.concatenate([b.prot.thresh, b.regions.thresh.take(new)])[order]


def walk(b, ctx, ev, i, *, budget, virt) -> WalkResult:
    """The VMA loop of task_numa_work for row ``i`` of the evaluation ``ev`` (spec §3.2) with
    ``budget`` pages of scan_size and ``virt`` pages of the virtual cap left; commits the
    state of every VMA it visits.

    Skipped VMAs change nothing but counters, so the loop steps over the allowed VMAs
    only and books the skipped ones of the visited range ``[k0, k_end)`` at once."""
    m, lo, forced = ev.m, ev.lo, ev.forced
    r, scanner = int(ev.rows[i]), int(ev.scanner[i])
    vm, vstart, vend = b.lay.mm_vmas[m], b.lay.mm_vstart_l[m], b.lay.mm_vend_l[m]
    numab = b.pol.numab_state
    seq = int(b.mm.numa_scan_seq[r, m])
    start = int(b.mm.numa_scan_offset[r, m])
    k0 = bisect_right(vend, start)
    pte = huge = 0
    virt_walked = 0
    changed_runs = 0
    stopped = broke = False
    newly = []
    completed_v = []
    k_end = len(vm)
    present, is_huge, prot_r = b.lay.region_present, b.lay.region_huge, b.regions.prot_none[r]
    scanned, faulted, idle = b.vmas.scanned, b.vmas.faulted, b.counters.events["idle_scans"]
    for k in (np.flatnonzero(ev.allowed[i, k0 - lo:]) + k0).tolist():
        v = int(vm[k])
        # idle-scan bookkeeping: the previous scan of this VMA took no fault since
        if scanned[r, v] and not faulted[r, v]:
            idle[r] += 1
        scanned[r, v] = False
        faulted[r, v] = False
        vs, ve = vstart[k], vend[k]
        s = max(start, vs)
        ra, rb = b.lay.vma_first_l[v], b.lay.vma_first_l[v + 1]
        completed = False
        while True:   # change_prot_numa in budget-sized chunks
            end = min(-(-(s + budget) // REGION_PAGES) * REGION_PAGES, ve)
            # regions of this chunk: [s, end) is region-aligned (VMAs start on 2 MiB)
            q0 = ra + (s - vs) // REGION_PAGES
            q1 = min(ra + -(-(end - vs) // REGION_PAGES), rb)
            chg = (present[q0:q1] > 0) & ~prot_r[q0:q1]
            if np.count_nonzero(chg):
                idx = np.flatnonzero(chg) + q0
                prot_r[idx] = True
                newly.append(idx)
                pte += int(present[idx].sum())
                huge += int(is_huge[idx].sum())
                budget -= end - s
                changed_runs = 1
                scanned[r, v] = True
            virt -= end - s
            virt_walked += end - s
            s = end
            if budget <= 0 or virt <= 0:
                stopped = True
                break
            if end == ve:
                completed = True
                break
        start = s
        if stopped:
            broke, k_end = True, k + 1
            break
        if completed and numab:
            completed_v.append(v)
        if forced:
            broke, k_end = True, k + 1
            break
    pids_skipped = k_end > k0 and book_visits(b, ev, i, r, scanner, k0, k_end)
    if k_end > k0 and completed_v:
        b.vmas.prev_scan_seq[r, completed_v] = seq
    ran_off = not broke
    retry = ran_off and not forced and pids_skipped and b.pol.forced_one
    if not ran_off:
        b.mm.numa_scan_offset[r, m] = start
    elif not retry:
        b.mm.numa_scan_seq[r, m] += 1
        b.mm.numa_scan_offset[r, m] = 0
    if newly:
        arm_fault_clocks(b, ctx, r, np.concatenate(newly) if len(newly) > 1 else newly[0])
    b.counters.events["numa_pte_updates"][r] += pte
    b.counters.events["numa_huge_pte_updates"][r] += huge
    kt = b.costs.scan_time_s(pte, huge, virt_walked, changed_runs)
    return WalkResult(kt, retry, budget, virt)


def book_visits(b, ev, i, r, scanner, k0, k_end):
    """Every VMA of positions ``[k0, k_end)`` the walk reached counts its reason
    (sched_skip_vma_numa); a seq_completed skip moves numa_scan_offset past the VMA; PID skips
    of VMAs the scanner writes are false skips (ground truth); the tentative numab state of
    the visited VMAs is committed. Returns whether a PID test skipped a VMA."""
    m, lo = ev.m, ev.lo
    seg = ev.reason[i, k0 - lo:k_end - lo]
    if b.tracer is not None:
        b.tracer.visits(b, r, m, k0, k_end, seg, int(b.mm.numa_scan_offset[r, m]), ev.forced)
    b.counters.reasons[r] += np.bincount(seg, minlength=b.counters.reasons.shape[1])
    sc = np.flatnonzero(seg == CODE["seq_completed"])
    if sc.size:
        b.mm.numa_scan_offset[r, m] = b.lay.mm_vend_l[m][k0 + int(sc[-1])]
    pid_skip = b.pol.decisions.pid_skip[seg]  # pid_inactive, disjoint_wait, a skip rule of vma_is_accessed()
    pids_skipped = bool(pid_skip.any())
    if pids_skipped:
        # ground truth: the scanner writes this VMA in its current phase
        vs_ = b.lay.mm_vmas[m][k0:k_end][pid_skip]
        nfs = int(np.count_nonzero(b.lay.writes_vma[scanner, b.tasks.phase[r, scanner], vs_]))
        if nfs:
            b.counters.events["false_skips"][r] += nfs
    if b.pol.numab_state:
        history_stats.record_visits(b, ev, i, r, scanner, k0, k_end)
        commit_visits(b, r, m, k0, k_end, ev.st, i, lo)
    return pids_skipped


def arm_fault_clocks(b, ctx, r, idx):
    """Regions ``idx`` of replica ``r`` just became PROT_NONE: each takes the step's next
    (threshold, selector) pair of ``ctx.u_prot`` -- an Exp(1) hazard threshold and the uniform
    that picks the faulting thread -- and joins the step's new protections."""
    k0 = int(ctx.slot[r])
    k1 = k0 + idx.size
    if k1 > b.lay.K:
        raise EngineInvariantError(f"{k1} regions protected in one step; the draw bound K={b.lay.K}")
    u = ctx.u_prot[r, k0:k1]
    ctx.slot[r] = k1
    b.regions.thresh[r, idx] = libm.exp1(u[:, 0])    # the reference's math.log1p, bit for bit
    b.regions.hazard[r, idx] = 0.0
    b.regions.selector[r, idx] = u[:, 1]
    ctx.new_prot.append(r * b.lay.NR + idx)
    history_stats.record_protections(b, r, idx)


def commit_visits(b, r, m, k0, k1, st, i, lo=0):
    """Make the tentative numab state of the visited VMAs (positions ``[k0, k1)`` of mm
    ``m``) real (lazy init, rotation, select counter, the adaptive rule's updates). ``prev_scan_seq`` of completed VMAs
    is written by the walk itself."""
    sel = b.lay.mm_vsel[m]
    varr = b.lay.mm_vmas[m][k0:k1]
    v = slice(sel[0] + k0, sel[0] + k1) if sel is not None else varr
    ks = slice(k0 - lo, k1 - lo)
    b.vmas.prev_scan_seq[r, v] = np.where(st["init"][i, ks], st["prev_seq"][i, ks], b.vmas.prev_scan_seq[r, v])
    b.vmas.has_state[r, v] = st["has"][i, ks]
    b.vmas.next_scan[r, v] = st["next_scan"][i, ks]
    b.vmas.pids_active_reset[r, v] = st["reset"][i, ks]
    b.vmas.start_scan_seq[r, v] = st["start_seq"][i, ks]
    b.vmas.scan_select[r, v] = st["select"][i, ks]
    b.vmas.pids_active[r, v] = st["pids"][i, ks]
    b.vmas.pids_idx[r, v] = st["pidx"][i, ks]
    b.rule.commit(b.vmas.adapt, st["visit"], r=r, m=m, v=v, vmas=varr, i=i, cols=ks, pids_active=b.vmas.pids_active)

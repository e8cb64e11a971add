"""Scanning, compiled: :mod:`numalab.engine.scan` and :mod:`numalab.engine.history_stats` for one
replica.

Kernel functions (spec §3.1-§3.4): ``task_tick_numa`` (:func:`scan_trigger`: a running thread
whose runtime passes ``node_stamp + numa_scan_period`` triggers; per mm the earliest crossing
tick at or after ``numa_next_scan`` wins, ties by ``u_task``), ``task_numa_work``
(:func:`task_numa_work`: ``reset_ptenuma_scan``, the VMA walk from ``numa_scan_offset`` with
``change_prot_numa`` in budget-sized chunks, the v6.7 ``vma_pids_forced`` retry) and
``sched_skip_vma_numa`` (every visited VMA's reason counted).

The numpy engine decides every VMA of the mm tentatively against the state before the walk and
commits the tentative state of the VMAs the walk reaches. A VMA's decision reads only its own
``vma_numab_state`` and the mm's state as it was before the walk (``numa_scan_seq``,
``numa_scan_offset``: :func:`walk` keeps them), and the walk changes no other VMA's numab state,
so deciding each VMA when the walk reaches it -- and writing its state at once -- gives the same
state (:func:`visit`). The numab state of VMAs the walk does not reach is left alone, as there.

Only :func:`scan_trigger` (the phase) is callable from Python; the others are ``decide.inner``
functions (no CPython wrapper: unboxing the named tuples in one costs seconds of compile time),
for compiled callers.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import EngineInvariantError
from ...workloads import INACCESSIBLE, PH_INIT, REGION_PAGES, SHARED_RO, UNSUITABLE
from ._nb import inner
from . import adapt
from .decide import current_window_index, decide_vma, rotate, union_has, unfiltered_reason, window_weight
from .period import task_scan_min
from .state import CNT

__all__ = ["scan_trigger", "task_numa_work", "walk", "visit", "arm_fault_clocks", "scan_time_s", "TICK_S"]

TICK_S = 1e-3              # HZ=1000 (scan.TICK_S)

_SCAN_RUNS, _IDLE_SCANS, _FALSE_SKIPS = CNT["scan_runs"], CNT["idle_scans"], CNT["false_skips"]
_PTE_UPDATES, _HUGE_PTE_UPDATES = CNT["numa_pte_updates"], CNT["numa_huge_pte_updates"]
_PID_WINDOWS, _PID_WINDOW_BITS = CNT["pid_windows"], CNT["pid_window_bits"]
_PID_TESTS, _PID_TEST_PASSES = CNT["pid_tests"], CNT["pid_test_passes"]
_BUFFER_PROTECTIONS = CNT["buffer_protections"]


# ------------------------------------------------------------------------------ task_tick_numa
@inner
def _crossings(L, S, X, r, k, trig, cross, ntick):
    """The triggers of scan.scan_trigger: ``trig`` (running and runtime past ``node_stamp +
    period``), each thread's first trigger tick ``cross`` and its consecutive trigger ticks
    ``ntick`` (scan.tick_triggers: a thread behind its threshold catches up a period per
    tick), from the period it was compared with; then ``node_stamp += ntick * period`` and a
    process's first trigger's period (task_scan_min)."""
    t0, dt = X.times[k], L.dt
    last = np.floor((t0 + dt) / TICK_S + 1e-6)
    for t in range(L.T):
        per = S.numa_scan_period[r, t] / 1000.0
        thresh = S.node_stamp[r, t] + per
        running = X.running[r, t]
        trig[t] = running and S.runtime[r, t] > thresh
        before = S.runtime[r, t] - (dt if running else 0.0)
        if not L.tick_clock:               # the 0.7.0 engine: one trigger, its crossing tick
            cross[t] = np.ceil((t0 + (thresh - before)) / TICK_S - 1e-6)
            ntick[t] = 1.0
            continue
        c = np.ceil((t0 + max(thresh - before, 0.0)) / TICK_S - 1e-6)
        cross[t] = c
        lag = (before + (c * TICK_S - t0)) - thresh
        n = min(np.ceil(lag / max(per - TICK_S, TICK_S)), last - c + 1)
        ntick[t] = max(n, 1.0)
    for t in range(L.T):
        if trig[t]:
            first = S.node_stamp[r, t] == 0
            if not L.tick_clock:
                if first:
                    S.numa_scan_period[r, t] = task_scan_min(L, L.thread_mm[t])
                S.node_stamp[r, t] = S.node_stamp[r, t] + S.numa_scan_period[r, t] / 1000.0
                continue
            S.node_stamp[r, t] = S.node_stamp[r, t] + ntick[t] * (S.numa_scan_period[r, t] / 1000.0)
            if first:                      # a process's first trigger: its period is task_scan_min next
                S.numa_scan_period[r, t] = task_scan_min(L, L.thread_mm[t])


@inner
def scan_trigger(L, Q, S, X, r, k):
    """scan.scan_trigger for replica ``r`` in step ``k``: task_tick_numa for every running
    thread, then, per mm in index order, task_numa_work of its winner (the smallest tick at
    which a trigger finds ``numa_next_scan`` come, ties the smallest ``u_task``); its kernel
    time is charged to the scanner's kdebt and ksys, to syst, and 32x to its node_stamp."""
    T = L.T
    any_trig = False
    for t in range(T):
        if X.running[r, t] and S.runtime[r, t] > S.node_stamp[r, t] + S.numa_scan_period[r, t] / 1000.0:
            any_trig = True
            break
    if not any_trig:
        return
    trig = np.zeros(T, dtype=np.bool_)
    cross = np.empty(T)
    ntick = np.empty(T)
    _crossings(L, S, X, r, k, trig, cross, ntick)
    # no crossing tick can reach a numa_next_scan more than a few ticks beyond the step (the
    # numpy engine's shortcut, exact: it only skips what would find no eligible trigger)
    nmin = np.inf
    for m in range(L.M):
        nmin = min(nmin, S.mm_next_scan[r, m])
    if X.times[k] + L.dt + 3 * TICK_S < nmin:
        return
    ut = 2 * L.K                       # u_task[t] = draws[r, k, 2K + t]
    for m in range(L.M):
        nxt = np.rint(S.mm_next_scan[r, m] / TICK_S)     # np.round: half to even
        win, best, bu = np.int64(-1), np.inf, np.inf    # np.int64: no literal -1 type to compile for
        for t in range(T):
            if trig[t] and L.thread_mm[t] == m:
                at = max(cross[t], nxt)                  # its first trigger tick at or after nxt
                if at > cross[t] + (ntick[t] - 1):
                    continue
                u = X.draws[r, k, ut + t]
                if win < 0 or at < best or (at == best and u < bu):
                    win, best, bu = t, at, u
        if win < 0:
            continue
        when = best * TICK_S
        # CAS: numa_next_scan = now + winner's period; the winner lets others win next
        S.mm_next_scan[r, m] = when + S.numa_scan_period[r, win] / 1000.0
        S.node_stamp[r, win] += 2 * TICK_S
        kt = task_numa_work(L, Q, S, X, r, k, m, win, when)
        S.kdebt[r, win] += kt
        S.ksys[r, win] += kt
        S.syst[r] += kt
        S.node_stamp[r, win] += 32 * kt


# ------------------------------------------------------------------------------ task_numa_work
@inner
def task_numa_work(L, Q, S, X, r, k, m, scanner, when):
    """scan.task_numa_work for mm ``m`` of replica ``r`` run by thread ``scanner`` at ``when``
    (s): reset_ptenuma_scan at the end of the address space, the walk with the scan_size
    budget and the 8x virtual cap, and the v6.7 forced retry (one more VMA without the PID
    test, with what is left of both). Returns the kernel seconds."""
    S.events[r, _SCAN_RUNS] += 1
    last_end = L.vma_end[L.mm_vfirst[m + 1] - 1]
    if S.mm_scan_offset[r, m] >= last_end:
        S.mm_scan_seq[r, m] += 1
        S.mm_scan_offset[r, m] = 0
    budget = L.scan_size_pages
    virt = 8 * budget
    ktime = 0.0
    forced = False
    while True:   # the walk, then at most one forced retry (a forced walk never asks for one)
        kt, retry, budget, virt = walk(L, Q, S, X, r, k, m, scanner, when, forced, budget, virt)
        ktime += kt
        if not retry:
            return ktime
        # v6.7 vma_pids_forced: one more VMA without the PID test, from numa_scan_offset
        forced = True
        if S.mm_scan_offset[r, m] >= last_end:
            S.mm_scan_seq[r, m] += 1
            S.mm_scan_offset[r, m] = 0


@inner
def walk(L, Q, S, X, r, k, m, scanner, now, forced, budget, virt):
    """scan.walk (with book_visits) for replica ``r``: the VMAs from the first ending after
    ``numa_scan_offset``, each decided (:func:`visit`) and counted; an allowed one is changed
    by :func:`change_prot_numa`. Returns (kernel seconds, whether the forced retry is due,
    budget left, virtual cap left)."""
    seq = S.mm_scan_seq[r, m]
    start = S.mm_scan_offset[r, m]
    off = start                        # the decisions read numa_scan_offset as it was before the walk
    adapt.begin_walk(Q, S, L, r, m)    # popcount: a pass has ended since the count was chosen
    vl = L.mm_vfirst[m + 1]
    k0 = L.mm_vfirst[m]
    while k0 < vl and L.vma_end[k0] <= start:      # bisect_right(vend, start)
        k0 += 1
    ph = S.phase[r, scanner]
    # a scanner under an MPOL_BIND task policy finds every VMA unsuitable (vma_policy_mof)
    binds = (ph == PH_INIT and L.init_bind[scanner]) or L.mem_bind[scanner]
    pte = huge = walked = changed = 0
    broke = pids_skipped = False
    sc_end = -1
    for v in range(k0, vl):
        code = visit(L, Q, S, r, m, v, scanner, now, seq, off, forced, binds)
        S.reasons[r, code] += 1
        if code == Q.code_seq_completed:           # a seq_completed skip moves the offset past it
            sc_end = L.vma_end[v]
        if Q.dec_pid_skip[code]:
            pids_skipped = True
            if L.writes_vma[scanner, ph, v]:       # ground truth: the scanner writes it
                S.events[r, _FALSE_SKIPS] += 1
        if not Q.dec_allowed[code]:
            continue
        # idle-scan bookkeeping: the previous scan of this VMA took no fault since
        if S.scanned[r, v] and not S.faulted[r, v]:
            S.events[r, _IDLE_SCANS] += 1
        S.scanned[r, v] = False
        S.faulted[r, v] = False
        start, budget, virt, done, p, h, w, c = change_prot_numa(L, S, X, r, k, v, max(start, L.vma_start[v]),
                                                                  budget, virt)
        pte += p
        huge += h
        walked += w
        changed |= c
        if done < 0:                   # budget or virtual cap spent
            broke = True
            break
        if done > 0 and Q.numab_state:
            S.prev_scan_seq[r, v] = seq
        if forced:
            broke = True
            break
    if sc_end >= 0:
        S.mm_scan_offset[r, m] = sc_end
    retry = not broke and not forced and pids_skipped and Q.forced_one
    if broke:
        S.mm_scan_offset[r, m] = start
    elif not retry:
        S.mm_scan_seq[r, m] += 1
        S.mm_scan_offset[r, m] = 0
    S.events[r, _PTE_UPDATES] += pte
    S.events[r, _HUGE_PTE_UPDATES] += huge
    return scan_time_s(L, pte, huge, walked, changed), retry, budget, virt


@inner
def change_prot_numa(L, S, X, r, k, v, s, budget, virt):
    """The chunks of scan.walk in VMA ``v`` from page ``s``: ``[s, min(roundup(s + budget,
    512), vm_end))`` each; its populated regions not yet PROT_NONE become PROT_NONE (and get
    their fault clocks); a chunk that changed any costs budget, every chunk virtual cap.
    Returns (page reached, budget, virt, done: -1 stopped / 1 completed the VMA, PTEs, PMDs,
    pages walked, changed 0/1)."""
    vs, ve = L.vma_start[v], L.vma_end[v]
    ra, rb = L.vma_first[v], L.vma_first[v + 1]
    pte = huge = walked = changed = 0
    while True:
        end = min(-(-(s + budget) // REGION_PAGES) * REGION_PAGES, ve)
        # regions of this chunk: [s, end) is region-aligned (VMAs start on 2 MiB)
        q0 = ra + (s - vs) // REGION_PAGES
        q1 = min(ra + -(-(end - vs) // REGION_PAGES), rb)
        n = 0
        for q in range(q0, q1):
            if L.region_present[q] > 0 and not S.prot_none[r, q]:
                S.prot_none[r, q] = True
                arm_fault_clocks(L, S, X, r, k, q)
                pte += L.region_present[q]
                if L.region_huge[q]:
                    huge += 1
                n += 1
        if n:
            budget -= end - s
            changed = 1
            S.scanned[r, v] = True
        virt -= end - s
        walked += end - s
        s = end
        if budget <= 0 or virt <= 0:
            return s, budget, virt, -1, pte, huge, walked, changed
        if end == ve:
            return s, budget, virt, 1, pte, huge, walked, changed


@inner
def arm_fault_clocks(L, S, X, r, k, q):
    """scan.arm_fault_clocks of one region ``q`` just made PROT_NONE: the step's next
    (threshold, selector) pair of ``u_prot`` -- ``thresh = -log1p(-u)`` (libm.exp1: numba's
    math.log1p is the C library's) -- hazard 0; history_stats.record_protections."""
    j = X.slot[r]
    if j >= L.K:
        raise EngineInvariantError("more regions protected in one step than the draw bound K")
    X.slot[r] = j + 1
    S.thresh[r, q] = -math.log1p(-X.draws[r, k, 2 * j])
    S.hazard[r, q] = 0.0
    S.selector[r, q] = X.draws[r, k, 2 * j + 1]
    if L.region_buffer[q]:
        S.events[r, _BUFFER_PROTECTIONS] += 1


@inner
def scan_time_s(L, pte_pages, huge_pmds, virt_pages, changed_chunk):
    """costs.Costs.scan_time_s: kernel seconds of one walk (the same operations in the same order)."""
    small = pte_pages - 512 * huge_pmds
    return (small * L.pte_update_ns + huge_pmds * L.pmd_update_ns) * 1e-9 \
        + virt_pages * (4096 / 2**20) * L.scan_virt_ns_per_mb * 1e-9 \
        + changed_chunk * L.scan_run_us * 1e-6


# ------------------------------------------------------------------------------ one VMA's visit
@inner
def visit(L, Q, S, r, m, v, scanner, now, seq, off, forced, binds):
    """scan.evaluate, history_stats.record_visits and scan.commit_visits for VMA ``v``, which
    the walk reached: the flag tests, and (v6.4+) the lazy vma_numab_state creation, the scan
    delay, the pids_active rotation before or after the decision (only when allowed), the
    decision and the select counter, written to the VMA's state. Returns the reason code."""
    vcode = L.vma_code[v]
    unsuitable = vcode == UNSUITABLE or binds
    shared_ro = vcode == SHARED_RO
    inacc = vcode == INACCESSIBLE
    if not Q.numab_state:
        return unfiltered_reason(Q, unsuitable, shared_ro, inacc)
    pids = S.pids_active[r, v]
    suit = not (unsuitable or shared_ro or inacc)
    old_has, old_reset = S.has_state[r, v], S.pids_active_reset[r, v]
    delay = L.scan_delay_ms / 1000.0
    if suit and not old_has:           # lazy vma_numab_state creation (kzalloc'ed windows)
        S.next_scan[r, v] = _jiffies(now + delay, L.tick_clock)
        S.pids_active_reset[r, v] = _jiffies(S.next_scan[r, v] + 4 * delay, L.tick_clock)
        S.start_scan_seq[r, v] = seq
        S.prev_scan_seq[r, v] = seq - 1
        S.scan_select[r, v] = 0
        pids[:, :] = 0
        S.pids_idx[r, v] = 0
        S.has_state[r, v] = True
        adapt.reset_vma(Q, S, r, v)
    next_scan = S.next_scan[r, v]
    seq_on = seq != 0
    not_delayed = suit and not (seq_on and now < next_scan)
    due = not_delayed and seq_on and now > S.pids_active_reset[r, v]
    word, mask = S.tid_word[r, scanner], S.tid_mask[r, scanner]
    bits = 0
    if due and Q.rotate_before_access:
        bits = _rotate(Q, pids, S.pids_idx, S.pids_active_reset, r, v, delay, L.tick_clock)
        adapt.on_rotate(Q, S, L, r, v, now)
    wa = adapt.windows_active(Q, S, r, m, v)
    code, sel = decide_vma(Q, pids, S.pids_idx[r, v], wa, word, mask, seq, S.start_scan_seq[r, v],
                           S.prev_scan_seq[r, v], off, L.vma_start[v], L.vma_end[v], next_scan * 1000.0,
                           now * 1000.0, L.nr_threads[m], forced, S.scan_select[r, v], unsuitable, shared_ro,
                           inacc)
    adapt.after_decide(Q, S, r, v, pids, S.pids_idx[r, v], word, mask, wa, code)
    if due and not Q.rotate_before_access and Q.dec_allowed[code]:   # v6.4-v6.6: allowed VMAs only
        bits = _rotate(Q, pids, S.pids_idx, S.pids_active_reset, r, v, delay, L.tick_clock)
        adapt.on_rotate(Q, S, L, r, v, now)
    S.scan_select[r, v] = sel
    if not_delayed and S.has_state[r, v]:
        adapt.after_visit(Q, S, r, m, pids)
    if L.vma_buffer[v]:
        _record_visit(Q, S.events, S.has_state, S.pids_active_reset, r, v, pids, S.pids_idx[r, v], wa, word, mask,
                      code, old_has, old_reset, bits)
    return code


@inner
def _jiffies(t_s, tick_clock):
    """scan.jiffies (``t_s`` on the tick grid), or the float seconds of tick_clock=False."""
    if tick_clock:
        return np.rint(t_s / TICK_S) * TICK_S
    return t_s


@inner
def _rotate(Q, pids, pids_idx, pids_active_reset, r, v, delay, tick_clock):
    """The due rotation of VMA ``v``'s windows (history.rotate) and its next reset
    (``+ 4 * scan_delay``); returns the bits of the window that stopped being the current one."""
    pidx = pids_idx[r, v]
    bits = window_weight(Q, pids, current_window_index(Q, pidx))
    pids_idx[r, v] = rotate(Q, pids, pidx)
    pids_active_reset[r, v] = _jiffies(pids_active_reset[r, v] + 4 * delay, tick_clock)
    return bits


@inner
def _record_visit(Q, events, has_state, pids_active_reset, r, v, pids, pidx, wa, word, mask, code, old_has, old_reset,
                  bits):
    """history_stats.record_visits of one buffer VMA's visit: a retired window (the VMA had
    its state and its reset moved on) and its bits; the own-PID test of a visit that reached
    the access test (policies with own_pid), passed when the scanner's bit is in the union of
    the ``wa`` windows the test ORed."""
    if old_has and pids_active_reset[r, v] > old_reset:
        events[r, _PID_WINDOWS] += 1
        events[r, _PID_WINDOW_BITS] += bits
    if Q.own_pid and has_state[r, v] and not Q.dec_before_test[code]:
        events[r, _PID_TESTS] += 1
        if union_has(Q, pids, pidx, wa, word, mask):
            events[r, _PID_TEST_PASSES] += 1

"""Quiet steps: stretches of steps in which no kernel event can happen, taken in one go.

Kernel counterpart: none -- this is the engine's own bookkeeping. Most steps of a run are
quiet: no ``task_tick_numa`` that starts ``task_numa_work`` or sets a first scan period, no
hinting fault (no protected region's hazard reaches its threshold, no sweep reaches a protected
region of its class: first arrival), no thread ending its
phase, no load-balancer pull, no replica whose rates need a refresh. In such a step
:meth:`.batch.Batch.step` only

* consumes its row of draws (:func:`.batch.draws`; the fixed shapes keep the stream the same),
* pays kernel debt, accrues ``runtime`` and writes bytes (:func:`.progress.run_threads`),
* advances ``node_stamp`` by the scan period of each thread that triggers without scanning
  (:func:`.scan.scan_trigger`: its crossing tick is before its mm's ``numa_next_scan``),
* adds ``lambda_c * dt`` to every protected region's hazard (:func:`.faults.hinting_faults`),
* adds the step's local and total written bytes to the locality series
  (:func:`.progress.record_locality`),
* advances the clock.

:func:`skip` makes exactly these updates for ``k`` steps: each is a running sum of increments
that stay the same from step to step (the rates hold until a refresh), added one step after
another in the same order, so the state after it is bit for bit the state ``k`` calls of
``Batch.step`` leave. :func:`plan` decides how many of the coming steps are quiet from the
closed forms (steps = distance / increment), with a margin that bounds the rounding of the
running sums: a step it cannot prove quiet ends the stretch and is run as a normal step, so the
margin costs speed, never a result.
"""

from __future__ import annotations

import math

import numpy as np

from ..workloads import PH_DONE, PH_WAIT
from .faults import step_hazard, sweep_horizon
from .observe import check_invariants
from .progress import locality_increments, running_mask
from .scan import TICK_S

__all__ = ["plan", "skip", "QuietPlan", "TRIGGER_ROUNDS"]

#: trigger rounds a plan follows per thread (a thread whose scan period is a few steps long
#: triggers several times in a stretch); the stretch ends before a later trigger
TRIGGER_ROUNDS = 3
#: rounding bound of a running sum of k terms, per term and unit of its largest value: each
#: addition rounds by at most 2**-53 of its result; 2**-50 leaves a factor 8
_ULP_BOUND = 2.0 ** -50
#: slack, in steps, around a closed-form crossing (the division itself rounds)
_SLACK = 1e-6


class QuietPlan:
    """``k`` quiet steps as :func:`skip` takes them (``cut``: an event ends them, not the run
    loop's next sample or the block of draws): the clock after each (``times``), the
    running threads (``running``), the per-step increments of the running sums (``inc``: the
    hazards of the ``P`` protected regions, then runtime, bytes left, local and total written
    bytes; ``first_bytes`` the bytes increments of the steps in which kernel debt is still
    paid) and the state the sums do not cover (``kdebt``, ``node_stamp`` after the stretch)."""

    __slots__ = ("k", "cut", "times", "running", "P", "inc", "first_bytes", "kdebt", "node_stamp")

    def __init__(self, k, times, running, P, inc, first_bytes, kdebt, node_stamp):
        self.k, self.cut, self.times, self.running, self.P = k, k < len(times), times[:k], running, P
        self.inc, self.first_bytes, self.kdebt, self.node_stamp = inc, first_bytes, kdebt, node_stamp


def _quiet_steps(dist, inc, err) -> int:
    """Steps that certainly pass before a running sum growing by ``inc`` (> 0) per step has
    grown by ``dist``, when the sum may be off its closed form by ``err``: the steps ``j <
    (dist - err) / inc``."""
    if not dist.size:
        return 1 << 30
    m = float(((dist - err) / inc).min())
    return (1 << 30) if m > (1 << 30) else max(0, math.ceil(m - _SLACK) - 1)


def plan(b, next_sample) -> QuietPlan | None:
    """How many of the coming steps are quiet -- at most those up to the run loop's next
    sample (``next_sample``) or stop, and the rows of draws left in the block -- and what they
    add; None when the next step is not provably quiet."""
    if np.count_nonzero(b.rates.dirty):                   # a refresh is due
        return None
    tasks = b.tasks
    running = running_mask(b) & ~b.outcome.done[:, None]
    if _trigger_ends(b, running):
        return None
    times = b._coming_times(next_sample)
    k = len(times)
    dt = b.dt
    # hinting faults (the most frequent event, so first): a protected region of a live
    # replica whose class is touched reaches its threshold
    P = b.prot.idx.size
    if P:
        s, can = _hazard_increments(b)
        if can.size:
            th, sc = b.prot.thresh[can], s[can]
            h = b.regions.hazard.ravel()[b.prot.idx[can]]
            k = min(k, _quiet_steps(th - h, sc, (k + 1) * _ULP_BOUND * (float(th.max()) + float(sc.max()))))
            if k < 1:
                return None
    k, node_stamp = _triggers(b, running, times, k)
    if k < 1:
        return None
    # the load balancer: any pull drawn (lb_moves' first test) ends the stretch
    d = b.draw
    p = b.o.lb_migrate_hz * dt
    if p > 0 and b.lay.N > 1:
        pulls = (d.block[:, d.pos:d.pos + k, 2 * b.lay.K + b.lay.T:] < p).any(axis=(0, 2))
        if pulls.any():
            k = int(pulls.argmax())
            if k < 1:
                return None
    # a waiting worker whose main thread is done starts this step (progress.advance)
    wait = tasks.phase == PH_WAIT
    if np.count_nonzero(wait) and np.count_nonzero(wait & (tasks.phase[:, b.lay.main_of_thread] == PH_DONE)):
        return None
    # a thread whose phase bytes run out ends its phase (progress.advance); a step writes at
    # most speed * dt bytes (kernel debt only shortens its work time)
    speed = b.rates.speed
    steady = np.where(running, dt, 0.0)                       # dt - 0.0 once the debt is paid
    d_bytes = speed * steady
    if np.count_nonzero(running):
        left, db = tasks.bytes_left[running], d_bytes[running]
        if not np.all(db > 0):
            return None
        k = min(k, _quiet_steps(left, db, (k + 1) * _ULP_BOUND * float(left.max())))
        if k < 1:
            return None
        # first arrival: a sweep that reaches a protected region of its class faults there
        # (faults.sweep_faults); the stretch ends before the step whose bytes pass it
        if P and b.lay.S:
            ahead = sweep_horizon(b, running)[running]
            near = np.isfinite(ahead)
            if np.count_nonzero(near):
                err = (k + 1) * _ULP_BOUND * (float(left.max()) + float(b.lay.seg_range.max())) + 1.0
                k = min(k, _quiet_steps(ahead[near], db[near], err))
                if k < 1:
                    return None
    # kernel debt is paid first (progress.run_threads): the bytes of its steps
    kd, first = tasks.kdebt, []
    while len(first) < k and np.count_nonzero(kd):
        used = np.minimum(kd, dt)
        kd = kd - used
        first.append(-(speed * np.where(running, dt - used, 0.0)))
    inc_local, inc_w = locality_increments(b)
    inc = np.concatenate([s if P else np.zeros(0), steady.ravel(), -d_bytes.ravel(), inc_local, inc_w])
    return QuietPlan(k, times, running, P, inc, first, kd, node_stamp(k))


def _hazard_increments(b):
    """The protected regions' per-step hazard ``lambda_c * dt`` (:func:`.faults.step_hazard`)
    and the positions of those that can fault (class touched, replica live), cached with it
    (a refresh, a new protected set or a finished replica renews both)."""
    s = step_hazard(b)
    if b.prot.quiet_can_of is not s:
        # a sweep class's regions have no hazard (they fault by position: sweep_horizon)
        b.prot.quiet_can = np.flatnonzero((s > 0) & ~b.outcome.done[b.prot.idx // b.lay.NR])
        b.prot.quiet_can_of = s
    return s, b.prot.quiet_can


def _trigger_ends(b, running):
    """Whether :func:`_triggers` would end any stretch before its first step, found with a
    few whole-array operations (about 40 % of the plans on numa01_THREAD_ALLOC fail there,
    after the gathers and the first round): a running thread whose runtime has already passed
    ``node_stamp + numa_scan_period`` (its first possible step is <= 0), or one that passes it
    within the coming step while its mm's ``numa_next_scan`` has come (its trigger starts
    task_numa_work, or cannot be placed for certain: either ends the stretch at 0)."""
    ahead = (b.numa.node_stamp + b.numa.numa_scan_period / 1000.0) - b.tasks.runtime
    if np.count_nonzero(running & (ahead <= 0)):
        return True
    due = b.mm.numa_next_scan <= b.now                                   # (R, M)
    if not np.count_nonzero(due):
        return False
    # within the step: ahead < dt, less a thousandth for the rounding _triggers allows for
    return bool(np.count_nonzero(running & (ahead < 0.999 * b.dt) & due[:, b.lay.thread_mm]))


def _triggers(b, running, times, k):
    """task_tick_numa over the stretch (:func:`.scan.scan_trigger`'s comparisons): a running
    thread triggers in the step its runtime passes ``node_stamp + numa_scan_period``, and its
    node_stamp advances by the period. The stretch ends before a trigger that starts
    task_numa_work (its crossing tick at or after its mm's ``numa_next_scan``), sets a first
    period (node_stamp 0), or cannot be placed in one step for certain, and before a thread's
    trigger beyond :data:`TRIGGER_ROUNDS`. Returns the quiet steps and a function giving
    node_stamp after the first ``k`` of them."""
    dt, rt0 = b.dt, b.tasks.runtime
    nstamp = b.numa.node_stamp
    per = b.numa.numa_scan_period / 1000.0
    n_run = np.count_nonzero(running)
    if not n_run:
        return k, lambda kk: nstamp
    rr, tt = np.nonzero(running)
    r0, st0, pr = rt0[rr, tt], nstamp[rr, tt], per[rr, tt]
    err = (len(times) + 1) * _ULP_BOUND * (float(r0.max()) + len(times) * dt)
    nxt = np.round(b.mm.numa_next_scan / TICK_S)[rr, b.lay.thread_mm[tt]]
    starts = np.array([b.now] + times[:-1])                               # each step's t0
    stamp, fired = st0, []
    for rnd in range(TRIGGER_ROUNDS + 1):
        thresh = stamp + pr
        lo = np.ceil((thresh - r0 - err) / dt - _SLACK)          # first step it may trigger in
        soon = lo <= k
        if not np.count_nonzero(soon):
            break
        if rnd == TRIGGER_ROUNDS:
            k = min(k, int(lo[soon].min()) - 1)
            break
        hi = np.floor((thresh - r0 + err) / dt + _SLACK) + 1     # first step it surely has
        sure = soon & (hi == lo) & (lo >= 1)
        if np.count_nonzero(soon & ~sure):
            k = min(k, int(lo[soon & ~sure].min()) - 1)
        j = lo.astype(np.int64)
        if np.count_nonzero(sure):
            js = j[sure]
            before = (r0[sure] + js * dt) - dt                    # runtime - dt at that step
            cross = np.ceil((starts[js - 1] + (thresh[sure] - before)) / TICK_S - 1e-6)
            # off the exact crossing tick by far less than a tick: a margin of one
            scans = (cross >= nxt[sure] - 1) | (stamp[sure] == 0)
            if np.count_nonzero(scans):
                k = min(k, int(js[scans].min()) - 1)
        if k < 1:
            return 0, None
        fired.append(np.where(sure, j, 1 << 30))
        stamp = np.where(sure, stamp + pr, stamp)

    def stamp_after(kk):
        if not fired:
            return nstamp
        st = st0
        for j in fired:
            st = np.where(j <= kk, st + pr, st)
        out = nstamp.copy()
        out[rr, tt] = st
        return out
    return k, stamp_after


def skip(b, q: QuietPlan):
    """Advance ``b`` over the ``q.k`` quiet steps of the plan: the state the steps one by one
    leave (draws consumed, progress, node_stamp, hazards, locality, clock, and the invariants
    when a check falls in the stretch)."""
    k, P, RT, R = q.k, q.P, b.tasks.runtime.size, b.R
    x = np.concatenate([b.regions.hazard.ravel()[b.prot.idx] if P else np.zeros(0), b.tasks.runtime.ravel(),
                        b.tasks.bytes_left.ravel(), b.obs.local_acc, b.obs.local_w])
    for j in range(k):                             # one addition per step, as the steps make them
        if j < len(q.first_bytes):
            inc = q.inc.copy()
            inc[P + RT:P + 2 * RT] = q.first_bytes[j].ravel()
            x += inc
        else:
            x += q.inc
    if P:
        hz = b.regions.hazard.ravel()
        hz[b.prot.idx] = x[:P]
    shape = b.tasks.runtime.shape
    b.tasks.runtime[...] = x[P:P + RT].reshape(shape)
    b.tasks.bytes_left = np.where(q.running, x[P + RT:P + 2 * RT].reshape(shape), b.tasks.bytes_left)
    b.obs.local_acc[...] = x[P + 2 * RT:P + 2 * RT + R]
    b.obs.local_w[...] = x[P + 2 * RT + R:]
    b.tasks.kdebt[...] = q.kdebt
    b.numa.node_stamp = q.node_stamp
    b.draw.pos += k
    before = b.steps
    b.steps += k
    b.now = q.times[-1]
    if b.o.check_invariants and b.steps // 20 != before // 20:
        check_invariants(b)                      # the state it checks is that of the check's step

"""Progress: threads run and write their bytes at the speed their memory placement allows.

Kernel counterpart: none directly -- this is the workload side (``bzero`` loops of
autonuma-benchmark) plus the scheduler's accounting the NUMA code reads: ``se.sum_exec_runtime``
(``runtime``, which ``task_tick_numa`` compares with ``node_stamp``) and the kernel time a task
owes for its scans, faults and migrations (``kdebt``: no user progress while it is paid).
Speeds come from :func:`numalab.costs.progress_rates`, which treats numa01's bound init sweeps
(every worker of a process zero-writing the same buffer together) as cache-coherence traffic
(option ``init_coherence``); the per-entry touch rates they give drive the hinting faults
(:mod:`.faults`).
"""

from __future__ import annotations

import numpy as np

from ..costs import progress_rates
from ..workloads import PH_DONE, PH_INIT, PH_LOOP, PH_WAIT

__all__ = ["running_mask", "thread_frac", "live_entry_rates", "cumulative_rates", "refresh", "advance", "locality_increments",
           "record_locality", "run_threads"]


def running_mask(b):
    """(R, T) bool: the thread is on a CPU (init or loop phase)."""
    return (b.tasks.phase == PH_INIT) | (b.tasks.phase == PH_LOOP)


def thread_frac(b, rows):
    """(n, T, N): share of each thread's written bytes on each node (active phase), for
    the replicas ``rows``. Only entries of phases some thread of these rows is in are
    looked at (after numa01's init, its whole-buffer entries drop out)."""
    T, N, C = b.lay.T, b.lay.N, b.lay.C
    n_ = rows.size
    phase = b.tasks.phase[rows]
    out = np.zeros((n_, T, N))
    for ph, (_, et, e_share, _, _, _) in b.lay.phase_arrays.items():
        if not (phase == ph).any():
            continue
        tn_cols, cn_cols = b.lay.phase_node_cols[ph]                                # (Ep, N)
        e_active = phase[:, et] == ph                                               # (n, Ep)
        share = e_active * e_share[None, :]
        cn = b.regions.cls_node.take((rows * (C * N))[:, None, None] + cn_cols)        # (n, Ep, N)
        # one bincount over (row, thread, node) bins: each bin adds its entries in entry order
        bins = (np.arange(n_) * (T * N))[:, None, None] + tn_cols
        out += np.bincount(bins.ravel(), weights=(share[:, :, None] * cn).ravel(),
                           minlength=n_ * T * N).reshape(n_, T, N)
    tot = out.sum(axis=2, keepdims=True)
    # a thread with no bytes (stack-only) counts as local
    loc = np.eye(N).take(b.tasks.node[rows], axis=0)                          # 1.0 at the thread's node
    return np.where(tot > 0, out / np.where(tot > 0, tot, 1.0), loc)


def live_entry_rates(b, rows, speed):
    """Touch rates of one region of the entry's class by the entry's thread, 1/s (0 unless the
    thread is running in the entry's phase), for the entries of the phases some thread of
    ``rows`` is in (every other entry's rate is 0.0): the set of those phases (a key of
    ``Layout.phase_set_entries``, None when no thread is in one), and the (n, k) rates of its k
    entries in entry order."""
    phase = b.tasks.phase[rows]
    phases = tuple(ph for ph in b.lay.phase_arrays if (phase == ph).any())
    if not phases:
        return None, np.zeros((rows.size, 0))
    live = ~b.outcome.done[rows][:, None]
    ent, places, _ = b.lay.phase_set_entries[phases]
    rates = np.zeros((rows.size, ent.size))
    for ph in phases:
        _, et, _, _, e_tpb, e_fhz = b.lay.phase_arrays[ph]
        active = (phase[:, et] == ph) & live
        rates[:, places[ph]] = np.where(active, speed[:, et] * e_tpb[None, :] + e_fhz[None, :], 0.0)
    return phases, rates


def cumulative_rates(b, rows, speed):
    """(n, E + 1) running sum of every entry's touch rate (:func:`live_entry_rates`), 0 first (the
    cumulative-rate intervals the faulting entry is picked from). Entries of phases no thread
    of these rows is in have rate 0.0 and leave the running sum as it is, so the sum runs over
    the other entries only -- the same additions in the same order -- and each partial sum is
    repeated over the entries skipped after it (numa01's whole-buffer init entries, 97% of the
    entries on 2s-224-spr, drop out after the init)."""
    phases, rates = live_entry_rates(b, rows, speed)
    if phases is None:
        return np.zeros((rows.size, b.lay.E + 1))
    partial = np.zeros((rows.size, rates.shape[1] + 1))
    np.cumsum(rates, axis=1, out=partial[:, 1:])
    return np.repeat(partial, b.lay.phase_set_entries[phases][2], axis=1)


def refresh(b):
    """Recompute speeds, node shares and touch rates of the replicas whose placement,
    phases or memory changed since the last step (row-wise: batch-independent)."""
    if not np.count_nonzero(b.rates.dirty):  # most steps
        return
    rows = np.flatnonzero(b.rates.dirty)
    running = running_mask(b)[rows] & ~b.outcome.done[rows][:, None]
    frac = thread_frac(b, rows)
    # numa01's workers sweep their buffer together in the bound init: coherence traffic
    shared_init = (b.tasks.phase[rows] == PH_INIT) & b.wl.init_bind[None, :] if b.o.init_coherence else None
    speed = progress_rates(b.costs, b.topo, b.tasks.node[rows], frac, running, shared_init, b.wl.thread_mm,
                           both_directions=b.o.link_both_directions)
    b.rates.frac[rows] = frac
    b.rates.speed[rows] = speed
    cum = cumulative_rates(b, rows, speed)
    b.rates.cum[rows] = cum
    b.rates.lam_c[rows] = cum[:, b.lay.cls_end] - cum[:, b.lay.cls_start]
    b.prot.step_hazard_of = None                      # the protected regions' lambda_c * dt changed
    b.rates.dirty[rows] = False
    b.rates.step_local = None
    b.obs.conv_stale[rows] = True


def advance(b, speed, work_t, used_k, t0, running):
    """Write ``speed * work_t`` bytes per running thread; threads whose phase ends this step
    finish at the exact instant (init -> loop carries the rest of the step); workers whose main
    thread finished its init start their loop."""
    done_bytes = speed * work_t
    left = b.tasks.bytes_left - done_bytes
    fin = running & (left <= 0)
    if np.count_nonzero(fin):
        r, t = np.nonzero(fin)
        spent = np.where(speed[r, t] > 0, np.maximum(b.tasks.bytes_left[r, t], 0.0) / np.maximum(speed[r, t], 1e-30),
                         0.0)
        tfin = t0 + used_k[r, t] + spent
        leftover = np.maximum(work_t[r, t] - spent, 0.0)
        ph = b.tasks.phase[r, t]
        nxt_loop = (ph == PH_INIT) & (b.wl.phase_bytes[t, 1] > 0)
        # init -> loop carries the rest of the step at the same speed
        b.tasks.phase[r, t] = np.where(nxt_loop, PH_LOOP, PH_DONE)
        left[r, t] = np.where(nxt_loop, b.wl.phase_bytes[t, 1] - leftover * speed[r, t], 0.0)
        b.tasks.finish[r, t] = np.where(nxt_loop, np.nan, tfin)
        b.rates.dirty[r] = True
    b.tasks.bytes_left = np.where(running, left, b.tasks.bytes_left)
    # workers waiting for their main thread's init
    wait = b.tasks.phase == PH_WAIT
    if np.count_nonzero(wait):
        main_done = b.tasks.phase[:, b.lay.main_of_thread] == PH_DONE
        go = wait & main_done
        b.tasks.phase[go] = PH_LOOP
        b.rates.dirty[go.any(axis=1)] = True


def locality_increments(b):
    """The (local, total) bytes every step writes, (R,) each, at the current rates. They
    depend only on speeds, shares and nodes, which change only with a refresh (a task move
    marks its replica dirty): computed once per refresh."""
    if b.rates.step_local is None:
        speed = b.rates.speed
        loc = b.rates.frac.take(b.rates.rt_base + b.tasks.node)              # frac[r, t, node[r, t]]
        b.rates.step_local = ((speed * loc).sum(axis=1) * b.dt, speed.sum(axis=1) * b.dt)
    return b.rates.step_local


def record_locality(b, speed, frac):
    """Accumulate the step's local and total written bytes (the ``local_fraction`` series;
    ``speed`` and ``frac`` are the batch's current rates, :func:`locality_increments`)."""
    inc_local, inc_w = locality_increments(b)
    b.obs.local_acc += inc_local
    b.obs.local_w += inc_w


def run_threads(b, ctx):
    """The step's progress phase: refresh the speeds of changed replicas, record locality,
    pay kernel debt first (a thread owing kernel time makes no user progress for it), accrue
    runtime and write bytes."""
    dt = b.dt
    running = ctx.running
    refresh(b)
    speed, frac = b.rates.speed, b.rates.frac
    record_locality(b, speed, frac)
    used_k = np.minimum(b.tasks.kdebt, dt)
    b.tasks.kdebt -= used_k
    work_t = np.where(running, dt - used_k, 0.0)
    b.tasks.runtime += np.where(running, dt, 0.0)
    # where each sweep was before this step's bytes (the fault phase's first-arrival clock)
    ctx.phase0, ctx.left0, ctx.used_k = b.tasks.phase.copy(), b.tasks.bytes_left, used_k
    advance(b, speed, work_t, used_k, ctx.t0, running)

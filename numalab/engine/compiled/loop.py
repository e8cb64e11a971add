"""The compiled step and run: :meth:`numalab.engine.Batch.step` and :meth:`~numalab.engine.Batch.run`
with the phases of this package.

:func:`advance` takes every replica through the steps of one call (up to the next time-series
sample), each step the kernel's order of events, one phase call per mechanism, as in the numpy
engine; replica after replica: replicas are independent, so the order in which
their steps are taken does not change a number. :func:`run` is the run loop around it, in
Python: the samples, the invariants and the draws stay numpy's own code.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..observe import check_invariants, sample
from ._nb import compile_lock, inner, jit
from .decide import pack_policy
from .detect import detect_faults
from .handle import handle_faults, lb_moves, numa_migrate_preferred
from .progress import begin_step, end_step, run_threads
from .scan import scan_trigger
from .state import make_scratch, pack_layout, pack_state
from .structs import make_lay, make_pol, make_scr, make_st

__all__ = ["advance", "run", "call_phase", "PHASES"]

#: the phases of a step, in order (:func:`call_phase` takes one by its index)
PHASES = ("begin_step", "run_threads", "scan_trigger", "detect_faults", "handle_faults", "numa_migrate_preferred",
          "lb_moves", "end_step")

#: the most steps one compiled call takes (its uniforms, (replicas, steps, 2K + 2T), are drawn
#: ahead; ~1 s of simulated time at the default dt, so a call costs milliseconds)
CALL_STEPS = 64
#: the numpy run loop checks the invariants every this many steps (Batch.end_step)
INVARIANT_STEPS = 20


@jit
def advance(Lt, Qt, St, Xt):
    """Take every replica through the steps of scratch ``Xt`` (named tuples of :mod:`.state`
    in, structs inside: :mod:`.structs`); returns how many steps the batch took."""
    return _advance(make_lay(Lt), make_pol(Qt), make_st(St), make_scr(Xt))


@jit
def call_phase(phase, Lt, Qt, St, Xt, r, k):
    """Phase ``PHASES[phase]`` of replica ``r`` at step ``k`` from Python (the phase tests)."""
    L, Q, S, X = make_lay(Lt), make_pol(Qt), make_st(St), make_scr(Xt)
    if phase == 0:
        begin_step(L, Q, S, X, r, k)
    elif phase == 1:
        run_threads(L, Q, S, X, r, k)
    elif phase == 2:
        scan_trigger(L, Q, S, X, r, k)
    elif phase == 3:
        detect_faults(L, Q, S, X, r, k)
    elif phase == 4:
        handle_faults(L, Q, S, X, r, k)
    elif phase == 5:
        numa_migrate_preferred(L, Q, S, X, r, k)
    elif phase == 6:
        lb_moves(L, Q, S, X, r, k)
    else:
        end_step(L, Q, S, X, r, k)


@inner
def _advance(L, Q, S, X):
    """Take every replica through the call's steps; returns how many steps the batch took.

    The numpy run loop stops stepping when every replica is done, and steps a finished replica
    (whose threads no longer run) as long as another one runs. So each replica is first taken
    up to its end or the call's last step; if all are then done, the batch stopped at the
    latest of those ends, and the replicas that finished earlier take the steps up to it."""
    R = S.done.shape[0]
    steps = X.times.shape[0] - 1
    at = np.zeros(R, dtype=np.int64)
    stop = steps
    for second in (False, True):
        for r in range(R):
            k = at[r]
            while k < stop and (second or not S.done[r]):
                # one step: the order of events of numalab.engine.Batch.step (one call site, so
                # that numba compiles the engine's steps into this function once)
                begin_step(L, Q, S, X, r, k)
                run_threads(L, Q, S, X, r, k)             # threads run and write; kernel debt paid
                scan_trigger(L, Q, S, X, r, k)            # task_tick_numa -> task_numa_work
                detect_faults(L, Q, S, X, r, k)           # which PROT_NONE regions are touched, by whom
                handle_faults(L, Q, S, X, r, k)           # do_numa_page -> migrate -> task_numa_fault
                numa_migrate_preferred(L, Q, S, X, r, k)  # moves and swaps to the preferred node
                lb_moves(L, Q, S, X, r, k)                # the load balancer's cross-node pulls
                end_step(L, Q, S, X, r, k)                # the run's end
                k += 1
            at[r] = k
        if not S.done.all():
            break
        stop = at.max()
    return stop


def _coming_times(b, next_sample):
    """The clock at the start of each coming step and after the last: up to the first step end
    at which the numpy run loop samples or stops (its clock adds ``dt`` step after step), and at
    most :data:`CALL_STEPS` steps (a call's uniforms are drawn ahead: a sample interval of
    thousands of steps would hold them all in memory)."""
    times = [b.now]
    t, stop, dt, max_time = b.now, next_sample - 1e-9, b.dt, b.o.max_time
    while len(times) <= CALL_STEPS:
        t = t + dt
        times.append(t)
        if t >= stop or t >= max_time:
            break
    return times


def _sync(b):
    """After a compiled call: the numpy engine's caches of the state it changed are dropped, and
    the PROT_NONE index is rebuilt from the regions (the invariants read it)."""
    b.prot.replace(np.flatnonzero(b.regions.prot_none.ravel()), b.lay, b.regions.thresh)
    b.groups.stats = None
    b.groups.node_sums = None
    b.rates.step_local = None


#: written to stderr when a run compiles the engine (numba's cache holds no engine yet: the
#: first compiled run of an install), not when it loads it
COMPILING = ("numalab: compiling the NUMA-balancing engine with numba, once per install (about half a minute; "
             "NUMALAB_JIT=0 runs the numpy engine instead) ...")


def run(b):
    """:meth:`numalab.engine.Batch.run` with compiled steps: the same samples at the same
    times, the same draws (each replica's Generator yields one step's uniforms per step), the
    same end."""
    if b.draw.block is not None or b.steps:
        raise ValueError("the compiled engine runs a batch from its start")
    L, Q = pack_layout(b), pack_policy(b)
    S = pack_state(b)
    res = b.o.time_resolution
    next_sample = 0.0
    while np.count_nonzero(b.outcome.done) < b.outcome.done.size:
        if b.now >= next_sample - 1e-9:
            sample(b)
            next_sample += res
        if b.now >= b.o.max_time:
            break
        times = _coming_times(b, next_sample)
        X = make_scratch(b, times)
        for i, g in enumerate(b.rng):
            g.random(out=X.draws[i])
        before = b.steps
        # the first call may compile the engine: once across the processes that start together
        with compile_lock(advance, COMPILING) if before == 0 else contextlib.nullcontext():
            taken = int(advance(L, Q, S, X))
        b.now = times[taken]
        b.steps += taken
        _sync(b)
        if b.o.check_invariants and b.steps // INVARIANT_STEPS > before // INVARIANT_STEPS:
            check_invariants(b)
        if taken < len(times) - 1:
            break
    sample(b)
    if b.o.check_invariants:
        check_invariants(b)
    b.outcome.finished = b.outcome.done.copy()
    b.outcome.elsp = np.where(b.outcome.done, b.outcome.elsp, b.now)
    return b

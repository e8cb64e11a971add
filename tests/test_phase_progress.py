"""numalab.engine.progress alone: threads accrue runtime and write bytes at their speed, kernel
debt is paid before user progress, a phase ends at its exact instant, waiting workers start."""

import numpy as np
import pytest

from _phase_helpers import quiet_step, tiny_batch, workers
from numalab.engine import progress
from numalab.workloads import PH_DONE, PH_LOOP, PH_WAIT


def test_running_threads_accrue_runtime_and_write_at_their_speed():
    b, wl = tiny_batch()
    ctx = quiet_step(b)
    ctx.running = progress.running_mask(b)
    left0 = b.tasks.bytes_left.copy()
    b.tasks.kdebt[0, 1] = 0.02                       # thread 1 owes 20 ms of kernel time
    progress.run_threads(b, ctx)
    w = workers(wl)
    np.testing.assert_array_equal(b.tasks.runtime[0, w], b.dt)
    assert b.tasks.runtime[0, 0] == 0.0              # the main thread is done
    speed = b.rates.speed[0]
    assert (speed[w] > 0).all()
    assert b.tasks.bytes_left[0, 1] == pytest.approx(left0[0, 1] - speed[1] * (b.dt - 0.02))
    assert b.tasks.bytes_left[0, 2] == pytest.approx(left0[0, 2] - speed[2] * b.dt)
    assert b.tasks.kdebt[0, 1] == 0.0


def test_a_phase_ends_at_its_instant_and_waiting_workers_start():
    b, wl = tiny_batch()
    ctx = quiet_step(b)
    ctx.running = progress.running_mask(b)
    progress.refresh(b)
    s = b.rates.speed[0, 1]
    b.tasks.bytes_left[0, 1] = s * b.dt / 4          # a quarter of a step's work left
    progress.run_threads(b, ctx)
    assert b.tasks.phase[0, 1] == PH_DONE
    assert b.tasks.finish[0, 1] == pytest.approx(b.now + b.dt / 4)
    # a worker waiting for its main thread starts its loop once the main thread is done
    b2, _ = tiny_batch()
    b2.tasks.phase[0, 2] = PH_WAIT
    ctx2 = quiet_step(b2)
    ctx2.running = progress.running_mask(b2)
    progress.run_threads(b2, ctx2)
    assert b2.tasks.phase[0, 2] == PH_LOOP


def test_thread_frac_follows_the_regions_nodes():
    b, wl = tiny_batch()
    frac = progress.thread_frac(b, np.array([0]))
    np.testing.assert_allclose(frac.sum(axis=2), 1.0)
    # thread 1 writes regions 12, 13 (its chunk of the buffer, first-touched on node 0)
    before = frac[0, 1, 0]
    b.regions.cls_node[0, 8] = [0, 2]                # both regions of class 8 move to node 1
    after = progress.thread_frac(b, np.array([0]))[0, 1, 0]
    assert after < before

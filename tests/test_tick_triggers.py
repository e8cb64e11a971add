"""task_tick_numa tick by tick against the engine's closed form, and the per-VMA timestamps in
jiffies (numalab.engine.scan.tick_triggers, scan.jiffies; docs/fidelity.md "0.7.1").

The kernel runs task_tick_numa at every tick: a thread whose CPU time is past ``node_stamp +
numa_scan_period`` triggers, adds the period to node_stamp and queues task_numa_work when its
mm's ``numa_next_scan`` has come; a thread still behind triggers again at the next tick. The
engine steps dt at a time and counts those ticks in closed form."""

import numpy as np

from numalab.engine import make_batch
from numalab.engine import scan
from numalab.engine.scan import TICK_S, jiffies, queue_tick, tick_triggers
from numalab.policy import Policy
from numalab.topology import Topology
from numalab.workloads import from_access_matrix

from test_engine_reference import run_both_and_compare


def ticks_of_the_kernel(t0, dt, node_stamp, period_s, before):
    """The ticks in the step at which task_tick_numa triggers (spec §3.1, literally): the
    runtime at tick j is ``before + (j * tick - t0)``."""
    j0 = int(np.ceil(t0 / TICK_S - 1e-6))
    j1 = int(np.floor((t0 + dt) / TICK_S + 1e-6))
    fired = []
    for j in range(j0, j1 + 1):
        if before + (j * TICK_S - t0) > node_stamp + period_s:
            node_stamp += period_s
            fired.append(j)
    return fired


def test_closed_form_counts_the_kernels_ticks():
    """Random steps, threads on time and threads behind by up to a minute (a period just
    shortened by a reset), periods from the 100 ms floor to the 60 s maximum: the first trigger
    tick and the number of consecutive triggering ticks are the kernel's."""
    rng = np.random.default_rng(7)
    dt = 0.05
    checked = behind = later = 0
    for _ in range(4000):
        t0 = rng.integers(20, 20000) * dt
        period_s = rng.integers(100, 60000) / 1000.0
        before = t0 * rng.uniform(0.2, 1.0)
        thresh = before + rng.choice([rng.uniform(-dt, dt), -rng.uniform(0, 60.0)])
        node_stamp = thresh - period_s
        runtime = before + dt
        if not runtime > thresh:
            continue
        # a threshold within a millionth of a tick of a tick is the closed form's rounding slack
        y = (t0 + thresh - before) / TICK_S
        if thresh > before and abs(y - round(y)) < 1e-5:
            continue
        fired = ticks_of_the_kernel(t0, dt, node_stamp, period_s, before)
        cross, n = tick_triggers(np.array([t0]), dt, np.array([thresh]), np.array([before]),
                                 np.array([period_s]))
        assert fired, (t0, thresh, before)
        # the consecutive run from the first trigger; a thread that ends it less than a step
        # short of its next threshold crosses that again later in the step, which the engine
        # takes at the next step's first tick (a slip of under dt)
        run = 1
        while run < len(fired) and fired[run] == fired[0] + run:
            run += 1
        later += len(fired) > run
        fired = fired[:run]
        assert int(cross[0]) == fired[0]
        assert int(n[0]) == len(fired), (t0, period_s, thresh - before, fired)
        # the mm's numa_next_scan anywhere around the step: the work is queued at the first
        # triggering tick at or after it, if any (then the thread can win the cmpxchg there)
        nxt = fired[0] + int(rng.integers(-5, len(fired) + 5))
        at, queued = queue_tick(cross, n, np.array([float(nxt)]))
        kernel = [j for j in fired if j >= nxt]
        assert bool(queued[0]) == bool(kernel)
        if kernel:
            assert int(at[0]) == kernel[0]
        checked += 1
        behind += len(fired) > 1
    assert checked > 3000 and behind > 500 and later < checked // 20


def test_vma_timestamps_are_jiffies():
    """next_scan and pids_active_reset sit exactly on the tick grid in every engine, so a scan
    delay that ends at a pass's tick lets that pass scan, as ``time_before`` on equal jiffies
    does. In float seconds 3.002 + 1.0 lies above 4.002 and would delay it a whole pass."""
    assert 3002 * TICK_S + 1.0 > 4002 * TICK_S                 # the float sum the kernel never makes
    assert not (4002 * TICK_S < jiffies(3002 * TICK_S + 1.0))
    topo = Topology(nodes=2, cpus_per_node=4, smt=2, name="tiny")
    wl = from_access_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]]), topology=topo,
                            chunk_bytes=4 << 20, loops=60000)
    for kernel in ("numpy", "auto"):
        b = make_batch(wl, Policy.profile("6.12"), [0, 1], kernel=kernel, max_time=12.0).run()
        has = b.vmas.has_state
        assert has.any()
        for arr in (b.vmas.next_scan[has], b.vmas.pids_active_reset[has]):
            assert np.array_equal(arr, np.round(arr / TICK_S) * TICK_S), kernel


def test_reference_agrees_while_threads_catch_up():
    """A 4 MB scan size puts task_scan_min's floor at 1 ms, under a step, and the load
    balancer's frequent pulls reset periods (update_scan_period): threads fall behind their
    thresholds and catch up; the engine and the scalar reference still agree exactly."""
    topo = Topology(nodes=2, cpus_per_node=4, smt=2, name="tiny")
    wl = from_access_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]]), topology=topo,
                            chunk_bytes=4 << 20, loops=60000)
    behind = []
    orig = scan.scan_trigger

    def counting(b, ctx):
        thresh = b.numa.node_stamp + b.numa.numa_scan_period / 1000.0
        before = b.tasks.runtime - np.where(ctx.running, b.dt, 0.0)
        behind.append(int(np.count_nonzero(ctx.running & (thresh < before - 1e-9))))
        return orig(b, ctx)

    scan.scan_trigger = counting
    try:
        run_both_and_compare(wl, Policy.profile("6.12"), 3,
                             dict(max_time=8.0, lb_migrate_hz=4.0, scan_size_mb=4), kernel="numpy")
    finally:
        scan.scan_trigger = orig
    assert sum(behind) > 0

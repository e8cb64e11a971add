"""numalab.engine.placement, .scan_period and .balance alone: task_numa_placement picks the
preferred node from the fault buffers, numa_migrate_preferred moves into an idle CPU or swaps
(option task_swaps), update_task_scan_period doubles on the slow path, the balancer pulls."""

import numpy as np

from _phase_helpers import quiet_step, tiny_batch
from numalab.engine import groups, placement, scan_period
from numalab.engine.state import NO_NODE


def _place(b, t, now=1.0):
    ctx = quiet_step(b)
    gm, gc, gsize = groups.group_stats(b)
    placement.task_numa_placement(b, ctx, np.array([0]), np.array([t]), now, gm, gc, gsize)
    return ctx


def test_placement_prefers_the_node_of_the_faults_and_requests_a_move():
    b, wl = tiny_batch()
    t = 1
    b.mm.numa_scan_seq[0, 0] = 1                       # a new sequence: placement runs
    b.numa.buf_mem[0, t, 0, 1] = 4096                  # private faults on node 0's memory
    b.tasks.node[0, t] = 1
    ctx = _place(b, t)
    assert b.numa.numa_preferred_nid[0, t] == 0
    assert b.numa.faults_mem[0, t, 0, 1] == 4096 and b.numa.buf_mem[0, t].sum() == 0
    assert ctx.want[0, t]                              # numa_migrate_preferred requested
    assert b.numa.numa_migrate_retry[0, t] > 1.0
    b.tasks.node[0, 2] = 1                             # the other worker on node 1 too
    placement.numa_migrate_preferred(b, ctx)           # node 0 is idle: a move
    assert b.tasks.node[0, t] == 0 and b.cnt["task_migrations"][0] == 1


def _idle_cpu_request(numa_maymove, other_node):
    # 4 CPUs a node (imb_numa_nr 1): worker 1 on node 1 prefers node 0, which has idle CPUs;
    # worker 2 (ungrouped, like worker 1) runs on ``other_node``
    b, wl = tiny_batch(numa_maymove=numa_maymove)
    b.tasks.node[0] = [0, 1, other_node]
    b.numa.numa_preferred_nid[0] = [NO_NODE, 0, NO_NODE]
    return _request(b, 1)


def test_maymove_refuses_an_idle_cpu_that_would_unbalance_the_nodes():
    """Option numa_maymove (task_numa_find_cpu): with one task on each node, moving the second
    to the first's node leaves 2 against 0, beyond imb_numa_nr (1 on 4 CPUs a node): no move,
    and no swap with the other ungrouped task (node_has_spare), so it sticks; with both on node 1
    the move balances and goes ahead; without the option any idle CPU is taken."""
    stuck = _idle_cpu_request(True, 0)
    assert stuck.tasks.node[0].tolist() == [0, 1, 0]
    assert stuck.cnt["task_migrations"][0] == 0 and stuck.cnt["numa_sticks"][0] == 1
    assert _idle_cpu_request(True, 1).tasks.node[0].tolist() == [0, 0, 1]
    assert _idle_cpu_request(False, 0).tasks.node[0].tolist() == [0, 0, 0]


def test_maymove_as_the_kernel_counts_it():
    """placement.maymove: fewer tasks on the destination than on the source (the mover counted
    there), or as many and below imb_numa_nr = max(1, cpus / 8)."""
    assert placement.maymove(0, 2, 4) and not placement.maymove(1, 1, 4) and not placement.maymove(2, 1, 64)
    assert placement.maymove(7, 7, 64) and not placement.maymove(8, 8, 64)       # imb_numa_nr 8
    assert placement.maymove(3, 4, 8) and not placement.maymove(4, 4, 8)         # imb_numa_nr 1


def _full_node_swap(task_swaps):
    # two CPUs per node, all busy: t=1 on node 1 wants node 0, t=3 on node 0 wants node 1
    b, wl = tiny_batch(rates=((1.0,), (1.0,), (1.0,), (1.0,)), cpus_per_node=2, task_swaps=task_swaps)
    b.tasks.node[0] = [0, 1, 1, 0, 0]
    b.numa.numa_preferred_nid[0] = [NO_NODE, 0, NO_NODE, 1, NO_NODE]
    b.numa.faults_mem[0, 1, 0, 1] = 10.0
    b.numa.faults_mem[0, 3, 1, 1] = 10.0
    b.numa.faults_mem[0, 4, 0, 1] = 10.0
    b.numa.faults_mem[0, 2, 1, 1] = 10.0
    return _request(b, 1)


def _request(b, t):
    """Task ``t``'s numa_migrate_preferred request, served."""
    ctx = quiet_step(b)
    ctx.want = np.zeros(b.tasks.node.shape, dtype=bool)
    ctx.want[0, t] = True
    placement.numa_migrate_preferred(b, ctx)
    return b


def test_a_full_preferred_node_means_a_swap_unless_swaps_are_off():
    on = _full_node_swap(True)
    assert on.tasks.node[0].tolist() == [0, 0, 1, 1, 0] and on.cnt["task_migrations"][0] == 2
    off = _full_node_swap(False)
    assert off.tasks.node[0].tolist() == [0, 1, 1, 0, 0] and off.cnt["task_migrations"][0] == 0


def test_update_task_scan_period_doubles_without_local_or_shared_faults():
    b, wl = tiny_batch()
    r, t = np.array([0]), np.array([1])
    b.numa.numa_scan_period[0, 1] = 1000
    b.numa.numa_faults_locality[0, 1] = [512, 0, 0]          # only remote, private faults
    gm, gc, gsize = groups.group_stats(b)
    scan_period.update_task_scan_period(b, r, t, np.array([0]), np.array([512]), gm, gsize)
    assert b.numa.numa_scan_period[0, 1] == 2000
    # all local: the period shrinks toward task_scan_min
    b.numa.numa_faults_locality[0, 1] = [0, 512, 0]
    scan_period.update_task_scan_period(b, r, t, np.array([0]), np.array([512]), gm, gsize)
    assert b.numa.numa_scan_period[0, 1] > 2000            # private 100 %: scan less often
    off, _ = tiny_batch(scan_period_adapt=False)
    off.numa.numa_faults_locality[0, 1] = [512, 0, 0]
    p0 = int(off.numa.numa_scan_period[0, 1])
    scan_period.update_task_scan_period(off, r, t, np.array([0]), np.array([512]), gm, gsize)
    assert off.numa.numa_scan_period[0, 1] == p0


def test_task_scan_bounds_follow_the_sysctls():
    b, wl = tiny_batch(scan_period_min_ms=2000, scan_period_max_ms=4000)
    sel = (np.array([0]), np.array([1]))
    gm, gc, gsize = groups.group_stats(b)
    smin = int(scan_period.task_scan_min(b, b.lay.thread_mm[[1]])[0])
    assert smin == 2000                               # one scan window: the sysctl itself
    assert int(scan_period.task_scan_start(b, sel, gm, gsize)[0]) == smin
    assert int(scan_period.task_scan_max(b, sel, gm, gsize)[0]) == 4000


def _grouped_request(stick_numa, t_shares, q_pref=NO_NODE):
    # two CPUs per node, all busy; t=1 (node 1) and t=3 (node 0) in one numa group; t=1 prefers
    # node 0 with its own fault shares t_shares (node 0, node 1); t=3's own faults are even
    b, wl = tiny_batch(rates=((1.0,), (1.0,), (1.0,), (1.0,)), cpus_per_node=2, stick_numa=stick_numa)
    b.tasks.node[0] = [0, 1, 1, 0, 0]
    b.groups.gid[0] = [-1, 1, -1, 1, -1]
    b.numa.numa_preferred_nid[0] = [NO_NODE, 0, NO_NODE, q_pref, NO_NODE]
    b.numa.faults_mem[0, 1, :, 1] = np.array(t_shares) * 1000.0
    b.numa.faults_mem[0, 3, :, 1] = 500.0
    return _request(b, 1)


def test_task_numa_compare_needs_smallimp_and_a_grouped_task_that_finds_nothing_sticks():
    """Option stick_numa: a swap inside a group gains t's own share difference plus its partner's,
    less 1/16; below SMALLIMP (0.03) there is no swap and the grouped task makes its own node its
    preferred node (sched_setnuma); without the option any positive gain swaps."""
    small = (0.51, 0.49)                               # a gain of 0.02: 0.01875 after the 1/16
    off = _grouped_request(False, small)
    assert off.tasks.node[0].tolist() == [0, 0, 1, 1, 0] and off.numa.numa_preferred_nid[0, 1] == 0
    on = _grouped_request(True, small)
    assert on.tasks.node[0].tolist() == [0, 1, 1, 0, 0] and on.cnt["task_migrations"][0] == 0
    assert on.numa.numa_preferred_nid[0, 1] == 1       # stuck: it now prefers where it is
    big = _grouped_request(True, (0.6, 0.4))           # 0.2 - 0.2/16: a swap, the preference kept
    assert big.tasks.node[0].tolist() == [0, 0, 1, 1, 0] and big.numa.numa_preferred_nid[0, 1] == 0
    # a partner that wants to go to node 1 adds 1/8: 0.032 * 15/16 * 9/8 = 0.03375 reaches the bar,
    # while a partner already on its preferred node loses 1/16 more: 0.032 * 15/16 * 15/16 does not
    edge = (0.516, 0.484)
    assert _grouped_request(True, edge, q_pref=1).tasks.node[0, 1] == 0
    assert _grouped_request(True, edge, q_pref=0).tasks.node[0, 1] == 1


def test_a_request_that_finds_no_cpu_is_counted_as_the_kernels_stick():
    """numa_sticks counts sched_stick_numa: every request whose task_numa_migrate found neither an
    idle CPU nor a swap partner, grouped or not and with either setting of stick_numa; a swap or a
    move is not one."""
    assert _grouped_request(True, (0.51, 0.49)).cnt["numa_sticks"][0] == 1      # below SMALLIMP
    assert _grouped_request(False, (0.51, 0.49)).cnt["numa_sticks"][0] == 0     # any gain swaps
    assert _grouped_request(True, (0.6, 0.4)).cnt["numa_sticks"][0] == 0        # a swap
    # a loss for both (t's share is higher where it is): no swap even without the bar
    lost = _grouped_request(False, (0.4, 0.6))
    assert lost.tasks.node[0].tolist() == [0, 1, 1, 0, 0] and lost.cnt["numa_sticks"][0] == 1
    assert lost.numa.numa_preferred_nid[0, 1] == 0     # without stick_numa the preference stays

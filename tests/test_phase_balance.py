"""numalab.engine.balance alone: the load balancer's cross-node pulls (option lb_migrate_hz),
and update_scan_period on a cross-node move (numalab.engine.placement.move_task)."""

import numpy as np
import pytest

import numalab as nl
from numalab.engine import balance, groups, make_batch, placement, scan_period
from numalab.policy import Policy
from numalab.topology import Topology

TOPO = Topology.preset("2s-ivb-40")
MiB = 1 << 20


@pytest.fixture(scope="module")
def small02():
    return nl.workload("numa02", TOPO, size_bytes=256 * MiB, loops=300)


def test_load_balancer_pull_onto_a_full_node_is_a_swap():
    """With no free CPU on the target node the pulled task's place is taken by the
    floor(w * n)-th running task there (w = the event's uniform rescaled), which moves back."""
    from numalab.engine.progress import running_mask
    from numalab.workloads import PH_DONE, from_access_matrix

    topo = Topology(nodes=2, cpus_per_node=2, smt=2, name="tiny")
    wl = from_access_matrix(np.ones((4, 1)), topology=topo, chunk_bytes=4 * MiB, loops=20000)
    b = make_batch(wl, Policy.profile("6.12"), [0], lb_migrate_hz=1.0)
    assert running_mask(b)[0].tolist() == [False, True, True, True, True]   # the main thread waits
    b.tasks.node[0] = [0, 0, 0, 1, 1]
    p = 1.0 * b.dt
    u = np.ones((1, 5))
    u[0, 1] = p * 0.75                      # task 1 is pulled; w = 0.75 -> the 2nd of tasks {3, 4}
    balance.lb_moves(b, u)
    assert b.tasks.node[0].tolist() == [0, 1, 0, 1, 0]
    assert b.cnt["lb_migrations"][0] == 2
    b.tasks.node[0] = [0, 0, 0, 1, 1]
    b.tasks.phase[0, 4] = PH_DONE                 # task 4 done: a free CPU on node 1, a single move
    u[0, 1] = p * 0.25
    balance.lb_moves(b, u)
    assert b.tasks.node[0].tolist()[1:4] == [1, 0, 1] and b.cnt["lb_migrations"][0] == 3


def test_load_balancer_move_resets_the_scan_period_only_away_from_the_preferred_node(small02):
    """update_scan_period (spec §3.5): a task with faults, past its first sequence, that is moved
    off its preferred node restarts at task_scan_start; moved onto it, it keeps its period."""
    b = make_batch(small02, Policy.profile("6.12"), [0])
    t = 1
    b.numa.has_faults[0, t] = True
    b.numa.numa_scan_seq[0, t] = 3
    home = int(b.tasks.node[0, t])
    away = 1 - home
    b.numa.numa_preferred_nid[0, t] = home
    b.numa.numa_scan_period[0, t] = 7777
    gm, gc, gsize = groups.group_stats(b)
    start = int(scan_period.task_scan_start(b, (np.array([0]), np.array([t])), gm, gsize)[0])
    assert start != 7777
    placement.move_task(b, 0, t, away, lb=True)
    assert b.numa.numa_scan_period[0, t] == start and b.cnt["scan_period_resets"][0] == 1
    b.numa.numa_scan_period[0, t] = 7777
    placement.move_task(b, 0, t, home, lb=True)                       # back onto the preferred node: no reset
    assert b.numa.numa_scan_period[0, t] == 7777 and b.cnt["scan_period_resets"][0] == 1
    assert b.cnt["lb_migrations"][0] == 2 and b.cnt["task_migrations"][0] == 0

"""numalab.engine.groups alone: task_numa_group on shared faults, and the group sums."""

import numpy as np

from _phase_helpers import tiny_batch
from numalab.engine import groups


def test_shared_fault_creates_a_group_then_joins_the_bigger_one():
    b, wl = tiny_batch(rates=((1.0,), (1.0,), (1.0,)))
    # thread 2 faults on a folio whose last_cpupid names thread 1: both get a group
    groups.join_groups(b, np.array([0]), np.array([2]), np.array([1]), b.tasks.pid8[0, [1]])
    assert b.groups.gid[0, 2] == 2 and b.cnt["group_joins"][0] == 0      # created, thread 1 has none
    b.groups.gid[0, 1] = 1
    b.groups.gid[0, 3] = 1                                               # group 1 has two members
    b.groups.stats = None
    groups.join_groups(b, np.array([0]), np.array([2]), np.array([1]), b.tasks.pid8[0, [1]])
    assert b.groups.gid[0, 2] == 1 and b.cnt["group_joins"][0] == 1
    gm, gc, size = groups.group_stats(b)
    assert size[0, 1] == 3


def test_no_join_when_last_cpupid_no_longer_names_the_task():
    b, wl = tiny_batch(rates=((1.0,), (1.0,)))
    b.groups.gid[0, 1] = 1
    b.groups.gid[0, 2] = 2
    stale = (b.tasks.pid8[0, [1]] + 1) & 0xFF
    groups.join_groups(b, np.array([0]), np.array([2]), np.array([1]), stale)
    assert b.groups.gid[0, 2] == 2 and b.cnt["group_joins"][0] == 0


def test_group_sums_add_the_members_faults():
    b, wl = tiny_batch(rates=((1.0,), (1.0,)))
    b.groups.gid[0, 1:] = 1
    b.numa.faults_mem[0, 1, 0, 1] = 3.0
    b.numa.faults_mem[0, 2, 0, 1] = 4.0
    gm, gc, size = groups.group_stats(b)
    assert gm[0, 1, 0, 1] == 7.0 and size[0, 1] == 2
    active = groups.active_nodes(b, gc)
    assert active.shape == (1, b.lay.T, b.lay.N)

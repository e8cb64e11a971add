"""numalab.engine.faults alone: a protected region whose hazard reaches its threshold faults;
the fault sets the PID bit, counts vmstat events, passes the two-stage filter, migrates when the
target node has room and fails when it is full, and fills the task's fault buffers."""

import numpy as np

from _phase_helpers import quiet_step, tiny_batch
from numalab.engine import faults, progress
from numalab.engine.state import PID_UNSET

BUF = (12, 13)        # thread 1's chunk of the buffer: two THPs first-touched on node 0


def _protect(b, regions, thresh=0.0, selector=0.0):
    """Make ``regions`` of replica 0 PROT_NONE with the given fault clock."""
    b.regions.prot_none[0, list(regions)] = True
    b.regions.thresh[0, list(regions)] = thresh
    b.regions.selector[0, list(regions)] = selector
    b.prot.idx = np.asarray(regions, dtype=np.int64)          # replica 0: flat index = region
    faults.sync_prot(b)


def _fault(b, regions, **kw):
    progress.refresh(b)
    _protect(b, regions, **kw)
    ctx = quiet_step(b)
    faults.hinting_faults(b, ctx)
    return ctx


def test_a_region_faults_when_its_hazard_reaches_the_threshold():
    b, wl = tiny_batch()
    _fault(b, [BUF[0]], thresh=1e9)                   # far threshold: no fault yet
    assert b.cnt["numa_hint_faults"][0] == 0 and b.regions.prot_none[0, BUF[0]]
    assert b.regions.hazard[0, BUF[0]] > 0
    b2, _ = tiny_batch()
    _fault(b2, [BUF[0]])
    assert b2.cnt["numa_hint_faults"][0] == 1                   # one fault per THP
    assert not b2.regions.prot_none[0, BUF[0]] and b2.prot.idx.size == 0


def test_first_fault_migrates_to_the_faulting_node_and_records_last_cpupid():
    b, wl = tiny_batch()
    assert b.tasks.node[0, 1] == 1 and b.regions.node[0, BUF[0]] == 0
    assert b.regions.last_pid8[0, BUF[0]] == PID_UNSET
    _fault(b, [BUF[0]])
    # the early stage of should_numa_migrate_memory: no preferred node, last_cpupid unset
    assert b.regions.node[0, BUF[0]] == 1
    assert b.cnt["numa_pages_migrated"][0] == 512 and b.cnt["numa_hint_faults_local"][0] == 0
    assert b.regions.last_pid8[0, BUF[0]] == b.tasks.pid8[0, 1] and b.regions.last_node[0, BUF[0]] == 1
    assert b.numa.buf_mem[0, 1, 1, 1] == 512 and b.numa.buf_cpu[0, 1, 1, 1] == 512   # private fault
    assert b.numa.has_faults[0, 1]
    assert b.regions.node_pages[0].sum() == b.regions.total_pages[0]


def test_a_full_target_node_fails_the_migration():
    b, wl = tiny_batch()
    b.lay.node_cap = b.lay.node_cap.copy()
    b.lay.node_cap[1] = b.regions.node_pages[0, 1]         # node 1 cannot take a page more
    _fault(b, [BUF[0]])
    assert b.regions.node[0, BUF[0]] == 0 and b.cnt["numa_pages_migrated"][0] == 0
    assert b.cnt["numa_migrate_fail"][0] == 1
    assert b.numa.numa_faults_locality[0, 1, 2] == 512


def test_fault_sets_the_pid_bit_of_a_vma_with_state():
    b, wl = tiny_batch(profile="6.12")
    v = int(wl.region_vma[BUF[0]])
    b.vmas.has_state[0, v] = True
    _fault(b, [BUF[0]])
    word, mask = int(b.tasks.tid_word[0, 1]), b.tasks.tid_mask[0, 1]
    window = faults.pid_window(b, np.array([0]), np.array([v]))[0]
    assert b.vmas.pids_active[0, v, window, word] & mask
    assert b.vmas.faulted[0, v]

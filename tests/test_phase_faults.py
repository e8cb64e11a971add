"""numalab.engine.faults alone: a protected region of a swept buffer faults when a writer's
sweep crosses it, taken by the first writer to reach it; a fixed-rate region (a stack) faults
when its hazard reaches its threshold; the fault sets the PID bit, counts vmstat events, passes the two-stage filter, migrates when the
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
    b.prot.replace(regions, b.lay, b.regions.thresh)          # replica 0: flat index = region


def _fault(b, regions, **kw):
    """Protect ``regions``, run one step's progress (the writers' sweeps advance) and the
    fault phase."""
    progress.refresh(b)
    _protect(b, regions, **kw)
    ctx = quiet_step(b)
    progress.run_threads(b, ctx)
    faults.hinting_faults(b, ctx)
    return ctx


def _stack_region(b, wl, thread):
    """The populated region of ``thread``'s stack (a fixed-rate class: the Poisson clock)."""
    v = [i for i, k in enumerate(wl.vma_kind) if k == "stack"][thread - 1]
    return int(np.flatnonzero((wl.region_vma == v) & (wl.region_present > 0))[0])


def test_a_fixed_rate_region_faults_when_its_hazard_reaches_the_threshold():
    b, wl = tiny_batch()
    q = _stack_region(b, wl, 1)
    assert not b.lay.cls_sweep[wl.region_class[q]]
    _fault(b, [q], thresh=1e9)                        # far threshold: no fault yet
    assert b.cnt["numa_hint_faults"][0] == 0 and b.regions.prot_none[0, q]
    assert b.regions.hazard[0, q] > 0
    b2, _ = tiny_batch()
    _fault(b2, [q])
    assert b2.cnt["numa_hint_faults"][0] == b2.lay.fault_inc[q]    # its base pages: not a THP
    assert not b2.regions.prot_none[0, q] and b2.prot.idx.size == 0


def test_a_swept_region_faults_when_its_writer_crosses_it():
    b, wl = tiny_batch()
    assert b.lay.cls_sweep[wl.region_class[BUF[0]]]
    # the hazard clock plays no part: an unreachable threshold still faults when the sweep passes
    _fault(b, [BUF[0]], thresh=1e9)
    assert b.cnt["numa_hint_faults"][0] == 1                   # one fault per THP
    assert not b.regions.prot_none[0, BUF[0]] and b.prot.idx.size == 0
    assert b.regions.last_task[0, BUF[0]] == 1                 # its only writer


def test_a_swept_region_the_writer_has_not_reached_stays_protected():
    b, wl = tiny_batch()
    progress.refresh(b)
    _protect(b, [BUF[1]])
    ctx = quiet_step(b)
    # thread 1 sweeps its 4 MiB chunk (two THPs) from its start: stop it before the second
    b.tasks.bytes_left[0, 1] = b.wl.phase_bytes[1, 1]
    b.rates.speed[0, 1] = (1 << 20) / b.dt                     # 1 MiB this step
    b.rates.dirty[0] = False
    progress.run_threads(b, ctx)
    faults.hinting_faults(b, ctx)
    assert b.cnt["numa_hint_faults"][0] == 0 and b.regions.prot_none[0, BUF[1]]
    ctx = quiet_step(b)
    b.rates.speed[0, 1] = (2 << 20) / b.dt                     # the next 2 MiB reach it
    progress.run_threads(b, ctx)
    faults.hinting_faults(b, ctx)
    assert b.cnt["numa_hint_faults"][0] == 1 and not b.regions.prot_none[0, BUF[1]]


def test_the_first_writer_to_arrive_takes_a_shared_regions_fault(monkeypatch):
    # two threads write the same chunk; the one nearest behind the region reaches it first
    b, wl = tiny_batch(rates=((1.0,), (1.0,)))
    buf = [int(q) for q in np.flatnonzero(np.array(wl.vma_kind)[wl.region_vma] == "buffer")]
    assert b.lay.loop_shared[1] and b.lay.loop_shared[2]
    progress.refresh(b)
    _protect(b, buf)
    ctx = quiet_step(b)
    R = b.wl.phase_bytes[1, 1]
    # thread 1 is 1 MiB before the chunk's second THP, thread 2 just past its start
    b.tasks.sweep_phase[0, 1], b.tasks.sweep_phase[0, 2] = 1 << 20, (2 << 20) + 1
    b.tasks.bytes_left[0, 1:3] = R
    b.rates.speed[0, 1:3] = (3 << 20) / b.dt                     # each writes 3 MiB this step
    b.rates.dirty[0] = False
    taken = {}
    handle = faults.handle_faults
    monkeypatch.setattr(faults, "handle_faults",
                        lambda b_, ctx_, fr, freg, ft, now: (taken.update(zip(freg.tolist(), ft.tolist())),
                                                            handle(b_, ctx_, fr, freg, ft, now)))
    progress.run_threads(b, ctx)
    faults.hinting_faults(b, ctx)
    # THP 0 (at 0) is crossed by thread 2 only (it wraps to 0 after 2 MiB - 1 bytes; thread 1
    # starts at 1 MiB, past it); THP 1 (at 2 MiB) by thread 1 after 1 MiB, thread 2 never
    assert taken == {buf[0]: 2, buf[1]: 1}


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

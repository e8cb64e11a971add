"""numalab.engine.scan alone: task_tick_numa's trigger and winner, and task_numa_work's walk
(protection within the budget, numa_scan_offset / numa_scan_seq, the decision per VMA)."""

import numpy as np

import numalab as nl
from _phase_helpers import quiet_step, tiny_batch, workers
from numalab.engine import observe, scan
from numalab.engine.state import Protected
from numalab.reasons import CODE, REASONS


def test_pre64_walk_protects_every_populated_region_and_ends_the_pass():
    b, wl = tiny_batch(profile="pre-6.4")
    ctx = quiet_step(b)
    scan.task_numa_work(b, ctx, np.array([0]), 0, np.array([1]), np.array([1.0]))
    populated = (b.lay.region_present > 0) & ~np.isin(b.lay.region_vma, np.flatnonzero(wl.vma_code != 0))
    assert b.regions.prot_none[0].sum() == populated.sum()
    assert b.cnt["numa_pte_updates"][0] == b.lay.region_present[b.regions.prot_none[0]].sum()
    assert b.counters.reasons[0, CODE["unfiltered"]] > 0
    assert b.mm.numa_scan_seq[0, 0] == 1 and b.mm.numa_scan_offset[0, 0] == 0     # reset_ptenuma_scan
    assert b.cnt["scan_runs"][0] == 1
    observe.check_invariants(b)                      # the PROT_NONE index is in sync


def test_budget_stops_the_walk_mid_address_space():
    b, wl = tiny_batch(profile="pre-6.4", scan_size_mb=4)      # 1024 pages: two 2 MiB regions
    ctx = quiet_step(b)
    scan.task_numa_work(b, ctx, np.array([0]), 0, np.array([1]), np.array([1.0]))
    assert 0 < b.mm.numa_scan_offset[0, 0] < wl.vma_end[-1]
    assert b.mm.numa_scan_seq[0, 0] == 0
    assert b.cnt["numa_pte_updates"][0] <= 1024 + 512


def test_first_visits_create_numab_state_and_the_scan_delay_skips():
    b, wl = tiny_batch(profile="6.12")
    ctx = quiet_step(b)
    b.mm.numa_scan_seq[0, 0] = 3                     # past the early passes
    scan.task_numa_work(b, ctx, np.array([0]), 0, np.array([1]), np.array([1.0]))
    assert b.vmas.has_state[0].any()
    # lazily created state starts with the scan delay: nothing is protected on the first visit
    assert b.counters.reasons[0, REASONS.index("scan_delay")] > 0
    assert b.cnt["numa_pte_updates"][0] == 0


def test_trigger_runs_task_numa_work_for_the_earliest_thread():
    b, wl = tiny_batch(profile="pre-6.4")
    ctx = quiet_step(b)
    w = workers(wl)
    # both pass node_stamp + numa_scan_period in the middle of this step, on the same tick
    b.tasks.runtime[0, w] = b.numa.node_stamp[0, w] + b.numa.numa_scan_period[0, w] / 1000.0 + b.dt / 2
    b.mm.numa_next_scan[0, 0] = 0.0
    ctx.u_task[0, w] = [0.9, 0.1]                    # a tie on the tick: the lower u_task wins
    scan.scan_trigger(b, ctx)
    assert b.cnt["scan_runs"][0] == 1
    assert b.tasks.kdebt[0, 2] > 0 and b.tasks.kdebt[0, 1] == 0     # thread 2 scanned and pays
    assert b.mm.numa_next_scan[0, 0] > 0


# ---- moved from tests/test_engine.py (false skips and idle scans are booked by the walk)
def _one_process_batch(profile):
    b, wl = tiny_batch(profile=profile)               # everyone in the loop phase, main done
    buf = [v for v in range(wl.nvmas) if wl.vma_kind[v] == "buffer"][0]
    return b, wl, buf


def test_false_skip_is_a_pid_skip_of_a_vma_the_scanner_writes():
    b, wl, buf = _one_process_batch("6.4")
    scanner = int(np.flatnonzero(~wl.thread_main)[0])
    # past the early passes, every VMA's state exists, empty windows, no scan delay
    b.mm.numa_scan_seq[0, 0] = 5
    b.vmas.has_state[0] = True
    b.vmas.next_scan[0] = 0.0
    b.vmas.pids_active_reset[0] = 1e9
    b.vmas.start_scan_seq[0] = 0
    scan.task_numa_work(b, quiet_step(b), np.array([0]), 0, np.array([scanner]), np.array([10.0]))
    stacks = sum(1 for v in range(wl.nvmas) if wl.vma_kind[v] == "stack")
    skipped = int(b.counters.reasons[0, list(nl.policy.REASONS).index("pid_inactive")])
    # every suitable VMA fails the PID test; the scanner writes the buffer, its stack and the
    # data/libc_data globals -- those skips are false, the other thread's stack and the
    # main thread's VMAs are not
    assert skipped > stacks
    writes = {v for v in range(wl.nvmas) if b.lay.writes_vma[scanner, 2, v]}
    assert buf in writes
    assert int(b.cnt["false_skips"][0]) == len(writes)
    assert int(b.cnt["numa_pte_updates"][0]) == 0


def test_idle_scan_counts_a_rescan_without_faults():
    b, wl, buf = _one_process_batch("pre-6.4")
    scanner = int(np.flatnonzero(~wl.thread_main)[0])
    ctx = quiet_step(b)
    scan.task_numa_work(b, ctx, np.array([0]), 0, np.array([scanner]), np.array([1.0]))
    assert int(b.cnt["numa_huge_pte_updates"][0]) == 4     # the 8 MiB buffer: 4 THPs
    assert int(b.cnt["idle_scans"][0]) == 0
    # nothing faulted; unprotect so the next pass finds work again, then rescan
    b.regions.prot_none[:] = False
    b.prot = Protected.empty()
    ctx.slot[:] = 0
    scan.task_numa_work(b, ctx, np.array([0]), 0, np.array([scanner]), np.array([2.0]))
    scanned_vmas = int(b.vmas.scanned[0].sum())
    assert int(b.cnt["idle_scans"][0]) == scanned_vmas > 0

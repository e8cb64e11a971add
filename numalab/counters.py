"""Every per-run counter of a simulated run, in one table: name, units, meaning, and the kernel
or harness name it mirrors.

Pure data (no numpy, no xarray): the engine allocates its counters from :data:`COUNTERS`
(``numalab.engine.state.Counters``), the Dataset layer (``numalab.engine.results``) takes the
variables' attrs from it, and the CLI, report and widget layers read their labels from it.

Columns:

* ``units`` / ``long_name``: the CF attrs of the Dataset variable;
* ``kernel_name``: the kernel counter or tracepoint the value mirrors (``/proc/vmstat`` name,
  ``numa_faults_locality[]`` slot, ...), None when the value is the model's own (ground truth
  a kernel cannot see, or engine bookkeeping);
* ``mmtests_label``: the row label of ``mmtests compare``'s "Ops" block for the vmstat
  counters (spec ``benchmarks-and-reports.md`` §4.1, as ``numalab.report`` prints them);
* ``vmstat``: the value is a ``/proc/vmstat`` event count.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Counter", "COUNTERS", "COUNTER_NAMES", "RUN_VARIABLES", "HISTORY_VARIABLES", "VARIABLE_ATTRS", "VMSTAT",
           "reason_variable", "counter"]


@dataclass(frozen=True)
class Counter:
    """One per-run variable: ``name`` (the Dataset variable), ``units``, ``long_name``,
    ``kernel_name`` (None: the model's own), ``mmtests_label`` (None: not in mmtests' Ops block),
    ``vmstat`` (a /proc/vmstat event)."""

    name: str
    units: str
    long_name: str
    kernel_name: str | None = None
    mmtests_label: str | None = None
    vmstat: bool = False

    @property
    def attrs(self) -> dict:
        """The Dataset variable's attrs: units, long_name and kernel_name when it has one."""
        out = dict(units=self.units, long_name=self.long_name)
        if self.kernel_name is not None:
            out["kernel_name"] = self.kernel_name
        return out


#: the engine's event counters (int64 per replica), in Dataset order
COUNTERS = (
    Counter("numa_pte_updates", "pages", "base pages made PROT_NONE", "numa_pte_updates",
            "NUMA base-page range updates", vmstat=True),
    Counter("numa_huge_pte_updates", "PMDs", "huge PMDs made PROT_NONE", "numa_huge_pte_updates",
            "NUMA PMD updates", vmstat=True),
    Counter("numa_hint_faults", "faults", "NUMA hinting faults", "numa_hint_faults", "NUMA hint faults",
            vmstat=True),
    Counter("numa_hint_faults_local", "faults", "NUMA hinting faults on the faulting CPU's node",
            "numa_hint_faults_local", "NUMA hint local faults %", vmstat=True),
    Counter("numa_pages_migrated", "pages", "base pages migrated by NUMA balancing", "numa_pages_migrated",
            "NUMA pages migrated", vmstat=True),
    Counter("false_skips", "visits", "VMA skipped as PID-inactive although the scanning thread writes it"),
    Counter("idle_scans", "scans", "VMA scanned whose regions took no hinting fault before its next scan"),
    Counter("scan_runs", "runs", "task_numa_work runs that won the numa_next_scan race"),
    Counter("task_migrations", "moves", "NUMA task moves and swaps between nodes",
            "numa_task_migrated + numa_task_swapped"),
    Counter("numa_sticks", "requests", "numa_migrate_preferred requests whose task_numa_migrate found no CPU "
            "on the preferred node (no idle CPU, no swap partner at or above the bar)",
            "sched_stick_numa (tracepoint)"),
    Counter("group_joins", "joins", "tasks that joined another task's numa_group"),
    Counter("numa_migrate_fail", "faults", "hinting faults whose migration failed (target node full)",
            "TNF_MIGRATE_FAIL (numa_faults_locality[2])"),
    Counter("lb_migrations", "moves", "cross-node task moves by the scheduler's load balancer "
            "(engine option lb_migrate_hz)"),
    Counter("scan_period_resets", "resets", "numa_scan_period reset to task_scan_start by a "
            "cross-node move (update_scan_period)"),
    # the access-PID history on the workload's buffer VMAs (numalab.engine.history_stats)
    Counter("pid_windows", "windows", "buffer pids_active windows retired by a rotation in task_numa_work",
            "pids_active rotation (pids_active_reset)"),
    Counter("pid_window_bits", "PIDs", "distinct hashed PIDs the retired buffer windows recorded, summed",
            "bitmap_weight(pids_active[i])"),
    Counter("pid_tests", "visits", "buffer visits that reached vma_is_accessed's access test"),
    Counter("pid_test_passes", "visits", "of those, visits whose scanning thread's bit was in the union of "
            "the windows the own-PID test ORs", "vma_is_accessed: pid_bit(current) in pids_active[*]"),
    Counter("buffer_protections", "regions", "buffer regions made PROT_NONE by change_prot_numa"),
)
COUNTER_NAMES = tuple(c.name for c in COUNTERS)
#: the vmstat counters, in mmtests' print order
VMSTAT = tuple(c.name for c in COUNTERS if c.vmstat)

#: the other per-run variables: times and the finished flag
RUN_VARIABLES = (
    Counter("elsp", "s", "elapsed time of the benchmark binary (last thread done)",
            "autonuma-benchmark.<test>.seconds"),
    Counter("syst", "s", "kernel CPU time: zeroing, scanning, hinting faults, migrations, task moves"),
    Counter("finished", "1", "1 if every thread finished before max_time"),
)

#: per-run ratios of the access-PID history's counters (numalab.engine.history_stats.summary)
HISTORY_VARIABLES = (
    Counter("pids_per_window", "PIDs", "distinct hashed PIDs one buffer window recorded before its rotation "
            "(mean over retired windows)", "bitmap_weight(pids_active[idx]) at rotation"),
    Counter("pid_pass_rate", "1", "share of buffer visits whose scanner's bit was in the windows the "
            "own-PID test ORs", "vma_is_accessed own-PID test"),
    Counter("scan_coverage", "1", "buffer regions made PROT_NONE per completed pass, as a share of the "
            "buffer's regions", "change_prot_numa per numa_scan_seq"),
)

#: variable name -> attrs, for every per-run variable but the per-reason visit counts
VARIABLE_ATTRS = {c.name: c.attrs for c in (*RUN_VARIABLES[:2], *COUNTERS, *RUN_VARIABLES[2:], *HISTORY_VARIABLES)}

_BY_NAME = {c.name: c for c in (*COUNTERS, *RUN_VARIABLES, *HISTORY_VARIABLES)}


def counter(name: str) -> Counter:
    """The table entry of a per-run variable (KeyError for an unknown name)."""
    return _BY_NAME[name]


def reason_variable(reason: str, skip: bool) -> Counter:
    """The per-run count of VMA visits decided by ``reason`` (a name of
    ``numalab.reasons.REASONS``): ``skip_<reason>`` for a skip, ``allow_<reason>`` for a rule
    that let the VMA be scanned. The skips (and NUMAB_SKIP_IGNORE_PID, traced although the VMA
    is then scanned) mirror the ``sched_skip_vma_numa`` tracepoint's reason."""
    if skip:
        name, long_name = f"skip_{reason}", f"VMAs skipped by task_numa_work, reason {reason}"
    else:
        name, long_name = f"allow_{reason}", f"VMAs scanned by task_numa_work, allowed by rule {reason}"
    traced = skip or reason == "ignore_pid_inactive"
    return Counter(name, "visits", long_name, f"sched_skip_vma_numa reason={reason}" if traced else None)

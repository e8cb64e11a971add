"""The batched, time-stepped simulation of Linux automatic NUMA balancing.

``simulate(workload, policies, seeds)`` runs, for each policy, one batch of replicas (one per
seed) whose state lives in arrays with a leading replica axis ``r``. The package is laid out
as the kernel's mechanisms (docs/engine.md has the step algorithm in full):

========================  ==============================================================
module                    models
========================  ==============================================================
``options``               the sysctls and the engine's switches (:class:`EngineOptions`)
``layout``                the static per-workload arrays (VMAs, regions, classes, phases)
``state``                 one dataclass per kernel structure (task, mm, VMA, folio, ...)
``memory``                where folios are: first touch, migration, counts and room per node
``progress``              threads running and writing (the workload side)
``scan``                  task_tick_numa, task_numa_work (the VMA walk)
``faults``                do_numa_page, should_numa_migrate_memory, task_numa_fault
``groups``                task_numa_group and the group fault sums
``placement``             task_numa_placement, numa_migrate_preferred, task swaps
``scan_period``           task_scan_min/start/max, update_task_scan_period
``balance``               the load balancer's cross-node pulls
``observe``               time series and invariants
``batch``                 :class:`Batch`: ``step()`` is the kernel's order of events
``api``                   :func:`simulate`, :func:`run_batch`, :func:`make_batch`
``results``, ``tracing``  the xarray layers: the Dataset, and the trace of task_numa_work
========================  ==============================================================
"""

from .api import coerce_policies, coerce_workload, make_batch, run_batch, simulate
from .batch import Batch
from .layout import Layout
from .options import DEFAULTS, LB_MIGRATE_HZ, SWITCHES, EngineOptions, option_fields


def __getattr__(name):
    # the xarray layers load lazily (import numalab.engine stays numpy-only)
    if name in ("scan_trace", "format_runs", "format_perf"):
        from . import tracing
        return getattr(tracing, name)
    if name in ("to_dataset", "per_run", "convergence_time", "VARIABLE_ATTRS"):
        from . import results
        return getattr(results, name)
    raise AttributeError(f"module 'numalab.engine' has no attribute {name!r}")


__all__ = ["simulate", "run_batch", "make_batch", "Batch", "Layout", "EngineOptions", "DEFAULTS", "LB_MIGRATE_HZ",
           "SWITCHES", "option_fields", "coerce_policies", "coerce_workload", "scan_trace", "format_runs",
           "format_perf", "to_dataset", "per_run", "convergence_time"]

"""The mutable state of a batch of R replicas, one dataclass per kernel structure.

Every array has a leading replica axis ``r`` (omitted in the shapes below). Units: times in s
unless the name says ``_ms``; addresses and lengths in 4 KiB pages; fault statistics in base
pages (a THP fault counts its 512). Each class holds the fields of one kernel structure:

* :class:`Tasks` -- ``task_struct`` as the scheduler sees it (pid, CPU's node, progress);
* :class:`TaskNuma` -- ``task_struct``'s ``numa_*`` fields (``task_numa_fault`` / placement);
* :class:`NumaGroups` -- ``struct numa_group`` membership (and the cached group sums);
* :class:`MmNuma` -- ``mm_struct``'s ``numa_next_scan``, ``numa_scan_offset``, ``numa_scan_seq``;
* :class:`VmaNumab` -- ``struct vma_numab_state`` (the access-PID history, v6.4+);
* :class:`Regions` -- folios: node, PROT_NONE, ``last_cpupid``, the hinting-fault clock;
* :class:`Protected` -- the index of PROT_NONE regions the fault phase walks;
* :class:`Counters` -- vmstat events and the model's own counters (:mod:`numalab.counters`);
* :class:`Outcome` -- per replica: done, elapsed, finished;
* :class:`Rates` -- speeds and touch rates cached between placement changes;
* :class:`Observations` -- the time series and their accumulators;
* :class:`Draws` -- the block of uniforms drawn ahead from each replica's Generator;
* :class:`StepContext` -- one step's scratch (draws, the protection slots, placement requests).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..counters import COUNTER_NAMES

__all__ = ["Tasks", "TaskNuma", "NumaGroups", "MmNuma", "VmaNumab", "Regions", "Protected", "Counters",
           "Outcome", "Rates", "Observations", "Draws", "StepContext", "NO_NODE", "PID_UNSET", "flat"]

NO_NODE = -1               # NUMA_NO_NODE
PID_UNSET = 0xFF           # cpupid_pid_unset(): the 8 pid bits all ones


def flat(a, *tail):
    """A view of the C-contiguous state array ``a`` with its leading axes merged into one
    (1-D, or ``(-1, *tail)``), never a copy: writes through it reach ``a`` (setting a view's
    shape raises rather than copy). 1-D takes, puts and ufunc.at, and fancy indexing of one
    axis, are several times cheaper than their multi-index forms."""
    v = a.view()
    v.shape = (-1, *tail)
    return v


@dataclass
class Tasks:
    """``task_struct`` as the scheduler and the progress model see it, (T,) per replica."""

    tid: np.ndarray          # int64: pid of the thread
    pid8: np.ndarray         # int64: tid & 0xFF, the pid bits of last_cpupid
    tid_word: np.ndarray     # int64: word of the thread's bit in pids_active (history.bit_masks)
    tid_mask: np.ndarray     # uint64: that bit
    node: np.ndarray         # int64: node of the CPU it runs on (cpu_to_node(task_cpu(p)))
    phase: np.ndarray        # int64: PH_WAIT / PH_INIT / PH_LOOP / PH_DONE
    bytes_left: np.ndarray   # float: bytes still to write in the current phase
    finish: np.ndarray       # float: s at which it finished (NaN while running)
    runtime: np.ndarray      # float: s on a CPU (se.sum_exec_runtime)
    kdebt: np.ndarray        # float: s of kernel work charged and not yet taken from its progress
    ksys: np.ndarray         # float: s of kernel work charged in total
    sweep_phase: np.ndarray  # float: bytes ahead of 0 the loop sweep starts (a shared range's independent phase)


@dataclass
class TaskNuma:
    """``task_struct``'s NUMA-balancing fields, (T,) per replica (faults (T, N, 2): [node,
    shared/private], in base pages; the ``numa_faults`` decay makes them float)."""

    node_stamp: np.ndarray               # float: s of runtime at which task_tick_numa triggers next
    numa_scan_period: np.ndarray         # int64 ms
    numa_scan_period_max: np.ndarray     # int64 ms (task_scan_max at the last placement)
    numa_scan_seq: np.ndarray            # int64: the mm's numa_scan_seq at the last placement
    numa_preferred_nid: np.ndarray       # int64 node, NO_NODE
    numa_migrate_retry: np.ndarray       # float s: next numa_migrate_preferred attempt
    has_faults: np.ndarray               # bool: p->numa_faults allocated (a fault was recorded)
    faults_mem: np.ndarray               # float (T, N, 2): numa_faults[NUMA_MEM]
    faults_cpu: np.ndarray               # float (T, N, 2): numa_faults[NUMA_CPU]
    buf_mem: np.ndarray                  # int64 (T, N, 2): numa_faults[NUMA_MEMBUF]
    buf_cpu: np.ndarray                  # int64 (T, N, 2): numa_faults[NUMA_CPUBUF]
    numa_faults_locality: np.ndarray     # int64 (T, 3): remote, local, failed migrations
    last_task_numa_placement: np.ndarray  # float s
    last_sum_exec_runtime: np.ndarray    # float s of runtime at the last placement

    @classmethod
    def fresh(cls, R, T, N, scan_delay_ms, scan_period_max_ms, node_stamp):
        f = lambda dtype=float: np.zeros((R, T), dtype=dtype)   # noqa: E731
        return cls(node_stamp=node_stamp, numa_scan_period=np.full((R, T), scan_delay_ms, dtype=np.int64),
                   numa_scan_period_max=np.full((R, T), scan_period_max_ms, dtype=np.int64),
                   numa_scan_seq=f(np.int64), numa_preferred_nid=np.full((R, T), NO_NODE, dtype=np.int64),
                   numa_migrate_retry=f(), has_faults=f(bool), faults_mem=np.zeros((R, T, N, 2)),
                   faults_cpu=np.zeros((R, T, N, 2)), buf_mem=np.zeros((R, T, N, 2), dtype=np.int64),
                   buf_cpu=np.zeros((R, T, N, 2), dtype=np.int64),
                   numa_faults_locality=np.zeros((R, T, 3), dtype=np.int64), last_task_numa_placement=f(),
                   last_sum_exec_runtime=f())


@dataclass
class NumaGroups:
    """``struct numa_group`` membership: ``gid`` (T,) int64 is the group's id (the thread index
    of the task that created it) or -1. ``stats`` caches the group sums of ``numa_faults``
    ((T(gid), N, 2) mem and cpu, sizes (T,)) until faults or membership change; ``node_sums``
    caches their sums over the private/shared axis for one ``stats``."""

    gid: np.ndarray
    stats: tuple | None = None
    node_sums: tuple | None = None


@dataclass
class MmNuma:
    """``mm_struct``'s scanner state, (M,) per replica."""

    numa_next_scan: np.ndarray    # float s: no task_numa_work run before this
    numa_scan_offset: np.ndarray  # int64 pages: where the next run resumes
    numa_scan_seq: np.ndarray     # int64: completed passes over the address space


@dataclass
class VmaNumab:
    """``struct vma_numab_state`` per VMA, (V,) per replica (v6.4+; times in s)."""

    pids_active: np.ndarray        # uint64 (V, W, words): access-PID windows
    pids_idx: np.ndarray           # int64: ring index of the current window
    has_state: np.ndarray          # bool: vma->numab_state allocated (first visit done)
    next_scan: np.ndarray          # float s: scan delay ends
    pids_active_reset: np.ndarray  # float s: next window rotation
    start_scan_seq: np.ndarray     # int64: numa_scan_seq when the state was created
    prev_scan_seq: np.ndarray      # int64: the pass that last completed the VMA (v6.7)
    scan_select: np.ndarray        # int64: RFC 2023 p2 vma_scan_select counter
    scanned: np.ndarray            # bool: scanned since its last fault (idle-scan bookkeeping)
    faulted: np.ndarray            # bool: took a hinting fault since its last scan
    adapt: dict | None = None      # adaptive history rule's state (numalab.adaptive), per VMA or mm


@dataclass
class Regions:
    """Folios (2 MiB regions), (NR,) per replica; the hinting-fault clock of a protected region
    is an Exp(1) ``thresh`` its accumulated access ``hazard`` must reach."""

    node: np.ndarray        # int64: node the folio sits on (folio_nid)
    prot_none: np.ndarray   # bool: PROT_NONE (change_prot_numa done, no fault since)
    thresh: np.ndarray      # float: Exp(1) hazard threshold while protected
    hazard: np.ndarray      # float: hazard accumulated since protected
    selector: np.ndarray    # float: uniform choosing the faulting thread
    last_pid8: np.ndarray   # int64: last_cpupid's pid bits (PID_UNSET: never)
    last_set: np.ndarray    # bool: last_cpupid was written by a hinting fault
    last_node: np.ndarray   # int64: last_cpupid's CPU's node
    last_task: np.ndarray   # int64: thread index behind last_cpupid (-1: none; ground truth)
    cls_node: np.ndarray    # int64 (C, N): regions of each access class on each node
    node_pages: np.ndarray  # int64 (N,): resident base pages per node
    total_pages: np.ndarray  # int64: base pages of the run (conserved)


@dataclass
class Protected:
    """The PROT_NONE regions as a sorted flat index ``r * NR + region`` (``idx``) with, aligned,
    the flat ``r * C + class`` of each (``lam``: where its touch rate is) and its threshold
    (``thresh``). The engine keeps the three aligned where it changes them (the scan phase
    merges new regions in, the fault phase drops the faulted ones); code outside the engine
    that sets the index whole goes through :meth:`replace`, the one path that rebuilds
    ``lam`` and ``thresh`` from it.
    ``step_hazard`` is the ``lambda_c * dt`` each adds per step, computed for the ``lam`` array
    ``step_hazard_of`` at the current rates (``progress.refresh`` drops it); ``quiet_can``
    whether each can fault (touched class, live replica), for the ``step_hazard`` array
    ``quiet_can_of`` (:mod:`.quiet`); ``sweep_idx`` the regions of sweep classes among them, for
    the ``idx`` array ``sweep_idx_of`` (``faults.swept_protected``)."""

    idx: np.ndarray
    lam: np.ndarray
    thresh: np.ndarray
    step_hazard: np.ndarray | None = None
    step_hazard_of: np.ndarray | None = None
    quiet_can: np.ndarray | None = None
    quiet_can_of: np.ndarray | None = None
    sweep_idx: np.ndarray | None = None
    sweep_idx_of: np.ndarray | None = None

    @classmethod
    def empty(cls):
        idx = np.zeros(0, dtype=np.int64)
        return cls(idx=idx, lam=np.zeros(0, dtype=np.int64), thresh=np.zeros(0))

    @staticmethod
    def class_index(lay, idx):
        """The flat ``r * C + class`` of flat region indices ``r * NR + region`` (``lam``'s
        values for an ``idx``)."""
        r, region = np.divmod(idx, lay.NR)
        return r * lay.C + lay.region_class[region]

    def replace(self, idx, lay, thresh):
        """Set the index to ``idx`` (sorted unique flat ``r * NR + region``) and rebuild
        ``lam`` from the layout's region classes and ``thresh`` from the (R, NR) threshold
        array ``thresh`` (the per-step hazards, keyed on ``lam``, follow)."""
        self.idx = np.asarray(idx, dtype=np.int64)
        self.lam = self.class_index(lay, self.idx)
        self.thresh = thresh.take(self.idx)


@dataclass
class Counters:
    """Per replica: ``events`` (name -> int64 (R,), the table of :mod:`numalab.counters`; views
    of the columns of ``table``, (R, counters) in :data:`numalab.counters.COUNTER_NAMES` order),
    ``reasons`` ((R, len(REASONS)) int64 VMA visits per decision), ``syst`` (float s of kernel
    CPU time)."""

    events: dict
    reasons: np.ndarray
    syst: np.ndarray
    table: np.ndarray | None = None

    @classmethod
    def zeros(cls, R, nreasons, syst0):
        # one (R, counters) table; ``events`` holds its columns as views (the compiled engine
        # writes the table, the numpy phases the columns: the same memory)
        table = np.zeros((R, len(COUNTER_NAMES)), dtype=np.int64)
        return cls(events={k: table[:, i] for i, k in enumerate(COUNTER_NAMES)},
                   reasons=np.zeros((R, nreasons), dtype=np.int64), syst=np.full(R, syst0), table=table)


@dataclass
class Outcome:
    """Per replica: ``done`` (every thread finished), ``elsp`` (s; NaN until done), ``finished``
    (set at the end of the run: done before max_time)."""

    done: np.ndarray
    elsp: np.ndarray
    finished: np.ndarray | None = None


@dataclass
class Rates:
    """Speeds and touch rates, recomputed only for replicas marked ``dirty`` (placement, phase
    or memory changed): ``frac`` (T, N) share of a thread's bytes on each node, ``speed`` (T,)
    bytes/s, ``cum`` (E + 1,) cumulative touch rates of the access entries (1/s), ``lam_c`` (C,)
    touch rate of one region of each class (1/s); ``rt_base`` is the flat (r, t, 0) of ``frac``;
    ``step_local`` the per-step (local, total) written-bytes increments of ``record_locality``
    for these speeds (None: to compute; every refresh that changes a row drops it)."""

    dirty: np.ndarray
    frac: np.ndarray
    speed: np.ndarray
    cum: np.ndarray
    lam_c: np.ndarray
    rt_base: np.ndarray
    step_local: tuple | None = None


@dataclass
class Observations:
    """Time series (lists of per-sample arrays, ``series_t`` their times in s) and the
    accumulators between samples: locality (written bytes local / all), hinting faults, and
    the per-(class, node) access rates of the convergence measure (``conv_stale``: rows to
    recompute)."""

    series: dict
    series_t: list
    conv_acc: np.ndarray
    conv_stale: np.ndarray
    fault_acc: np.ndarray
    local_acc: np.ndarray
    local_w: np.ndarray


@dataclass
class Draws:
    """Uniforms drawn ahead: ``block`` (R, DRAW_BLOCK, n) from each replica's Generator, ``pos``
    the next step's row."""

    block: np.ndarray | None = None
    pos: int = 0


@dataclass
class StepContext:
    """One step's scratch, passed through the phases of :meth:`Batch.step`.

    ``t0``/``t1`` the step's start and end (s); ``live`` replicas not done; ``running`` (R, T)
    threads on a CPU; the draws ``u_prot`` (R, K, 2) (threshold, selector) per region the step
    protects, ``u_task`` (R, T) and ``u_lb`` (R, T); ``slot`` (R,) how many ``u_prot`` pairs
    are used; ``new_prot`` the flat indices protected by the current task_numa_work call;
    ``want`` (R, T) numa_migrate_preferred requests (None: none); ``phase0``, ``left0`` and
    ``used_k`` (R, T): each thread's phase and bytes left before the step's progress and the
    kernel time it paid first (s) -- where its sweep was (``faults.sweep_faults``)."""

    t0: float
    t1: float
    live: np.ndarray
    running: np.ndarray
    u_prot: np.ndarray
    u_task: np.ndarray
    u_lb: np.ndarray
    slot: np.ndarray
    new_prot: list = field(default_factory=list)
    want: np.ndarray | None = None
    phase0: np.ndarray | None = None
    left0: np.ndarray | None = None
    used_k: np.ndarray | None = None

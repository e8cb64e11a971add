"""The batch as the compiled engine sees it: four named tuples of arrays and scalars.

numba compiles functions over named tuples (attribute access by name, arrays mutable in place),
so the compiled phases read and write the very arrays of :class:`numalab.engine.Batch` -- no copy
in or out -- through:

* :data:`Lay` ``L`` -- everything static for one batch: the workload's layout
  (:class:`numalab.engine.layout.Layout`), the topology's per-node figures, the engine options
  and the cost constants (each a scalar field);
* :data:`Pol` ``Q`` -- the policy: its history (windows, width, rotation) and its decision
  chain as codes (:mod:`.decide` encodes it);
* :data:`St` ``S`` -- the mutable state, every array with the leading replica axis ``r``, named
  as in :mod:`numalab.engine.state` (``S.node`` is ``b.tasks.node``, ``S.numa_scan_period`` is
  ``b.numa.numa_scan_period``; the mm's fields are ``mm_next_scan``, ``mm_scan_offset``,
  ``mm_scan_seq`` and a region's node is ``r_node``);
* :data:`Scr` ``X`` -- one call's scratch: the uniforms of the steps it takes, their clock, and
  the per-step context of :class:`numalab.engine.state.StepContext` per replica.

A compiled phase is ``phase(L, Q, S, X, r, k)``: replica ``r``, step ``k`` of the call (its
start ``X.times[k]``, end ``X.times[k + 1]``, its uniforms ``X.draws[r, k]``). Replicas are
independent, so a call takes each replica through all its steps in turn.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...counters import COUNTER_NAMES
from ...workloads import PH_INIT, PH_LOOP
from .adapt import STATE as ADAPT_STATE
from .adapt import adapt_arrays

__all__ = ["Lay", "Pol", "St", "Scr", "pack_layout", "pack_state", "make_scratch", "LAY_FIELDS", "ST_FIELDS",
           "SCR_FIELDS", "CNT"]

#: counter name -> its column in ``S.events`` (the (R, counters) table of ``Counters.table``)
CNT = {name: i for i, name in enumerate(COUNTER_NAMES)}

# ------------------------------------------------------------------------------------ static
LAY_FIELDS = (
    # sizes
    "T", "V", "NR", "N", "M", "C", "E", "K", "S", "NCPU",
    # threads (T,)
    "thread_mm", "thread_main", "main_of_thread", "phase_bytes", "init_bind", "mem_bind", "cpu_bind",
    "waits_for_main", "loop_shared", "loop_range",
    # per mm (M,); mm m's VMAs are mm_vfirst[m] .. mm_vfirst[m + 1] - 1 (address order)
    "nr_threads", "nr_scan_windows", "mm_vfirst", "mm_buffer_regions",
    # ground truth: thread writes VMA in phase (T, 4, V)
    "writes_vma",
    # VMAs (V,); regions of VMA v are vma_first[v] .. vma_first[v + 1] - 1
    "vma_start", "vma_end", "vma_code", "vma_buffer", "vma_first", "vma_mm",
    # regions (NR,)
    "region_vma", "region_class", "region_present", "region_huge", "fault_inc", "region_buffer", "region_mm",
    # classes (C,): entries cls_start[c] .. cls_end[c] - 1; sweep classes fault by first arrival
    "cls_start", "cls_end", "cls_sweep",
    # access entries (E,), sorted by class
    "entry_thread", "entry_phase", "entry_class", "entry_share", "entry_touch_per_byte", "entry_fixed_hz",
    # sweep segments (S,)
    "seg_thread", "seg_phase", "seg_lo", "seg_hi", "seg_sigma", "seg_range", "seg_region0", "seg_kfirst",
    "seg_klast",
    # topology (N,) / (N, N) / (NCPU,)
    "latency_ns", "node_cores", "node_smt", "thread_bw_GBps", "node_bw_GBps", "write_efficiency", "link_bw_GBps",
    "link_cap_GBps", "link_route", "node_cpus",
    "node_cap", "cpu_nodes", "nearest_cpu_node", "cpu_node",
    # engine options (scalars)
    "dt", "scan_delay_ms", "scan_period_min_ms", "scan_period_max_ms", "scan_size_mb", "scan_size_pages",
    "sticky_locality", "lb_migrate_hz", "lb_refill_locality", "stick_numa", "numa_maymove", "numa_groups", "task_swaps",
    "scan_period_adapt", "migrate_filter",
    "init_coherence", "link_both_directions", "tick_clock", "harness_overhead_s", "max_time",
    # cost constants (scalars; numalab.costs.Costs)
    "link_write_efficiency", "smt_share", "pte_update_ns", "pmd_update_ns", "scan_run_us",
    "scan_virt_ns_per_mb", "hint_fault_us", "migrate_GBps", "migrate_folio_us", "task_migration_us",
)
Lay = namedtuple("Lay", LAY_FIELDS)

#: the policy: its history and (filled by :func:`numalab.engine.compiled.decide.encode`, which
#: documents each field) its decision chain; a name listed here and not set by the encoder is an
#: error at pack time
POL_FIELDS = (
    "numab_state", "windows", "words", "ring", "width", "rotate_before_access", "forced_one", "own_pid",
    # the decision table, by int8 code (numalab.reasons.Decisions)
    "dec_allowed", "dec_pid_skip",
    # the chain: pre-PID-test rules, vma_is_accessed() rules, the fallback (decide.encode)
    "pre_rule", "pre_code", "pre_allow", "acc_rule", "acc_param", "acc_code", "acc_allow",
    "has_fallback", "fb_code", "fb_refuse", "early_vma", "code_scan_delay", "code_pid_inactive",
    "code_unfiltered", "code_unsuitable", "code_shared_ro", "code_inaccessible", "code_seq_completed",
    # by code: decided before the PID test is reached (history_stats' pid_tests count the others)
    "dec_before_test",
    # the adaptive history (numalab.adaptive.Adaptive; .adapt.encode): the rule (0: a fixed
    # history), whether it adapts, its bounds and parameters; by code: the visit reached
    # vma_is_accessed() (grow-shrink's "tested")
    "adapt_rule", "adapt_enabled", "ad_n_min", "ad_n_max", "ad_n_init", "ad_shrink_after", "ad_grow_others",
    "ad_bits_lo", "ad_bits_hi", "ad_threads_max", "ad_span_ms", "ad_ewma_shift", "dec_pid_test",
)
Pol = namedtuple("Pol", POL_FIELDS)

# ------------------------------------------------------------------------------------ mutable
#: (field, where it lives on the batch); every array has the leading replica axis
ST_SOURCES = (
    # Tasks
    ("tid", "tasks.tid"), ("pid8", "tasks.pid8"), ("tid_word", "tasks.tid_word"), ("tid_mask", "tasks.tid_mask"),
    ("node", "tasks.node"), ("phase", "tasks.phase"), ("bytes_left", "tasks.bytes_left"),
    ("finish", "tasks.finish"), ("runtime", "tasks.runtime"), ("kdebt", "tasks.kdebt"), ("ksys", "tasks.ksys"),
    ("sweep_phase", "tasks.sweep_phase"),
    # TaskNuma
    ("node_stamp", "numa.node_stamp"), ("numa_scan_period", "numa.numa_scan_period"),
    ("numa_scan_period_max", "numa.numa_scan_period_max"), ("numa_scan_seq", "numa.numa_scan_seq"),
    ("numa_preferred_nid", "numa.numa_preferred_nid"), ("numa_migrate_retry", "numa.numa_migrate_retry"),
    ("has_faults", "numa.has_faults"), ("faults_mem", "numa.faults_mem"), ("faults_cpu", "numa.faults_cpu"),
    ("buf_mem", "numa.buf_mem"), ("buf_cpu", "numa.buf_cpu"), ("numa_faults_locality", "numa.numa_faults_locality"),
    ("last_task_numa_placement", "numa.last_task_numa_placement"),
    ("last_sum_exec_runtime", "numa.last_sum_exec_runtime"),
    # NumaGroups
    ("gid", "groups.gid"),
    # MmNuma
    ("mm_next_scan", "mm.numa_next_scan"), ("mm_scan_offset", "mm.numa_scan_offset"),
    ("mm_scan_seq", "mm.numa_scan_seq"),
    # VmaNumab
    ("pids_active", "vmas.pids_active"), ("pids_idx", "vmas.pids_idx"), ("has_state", "vmas.has_state"),
    ("next_scan", "vmas.next_scan"), ("pids_active_reset", "vmas.pids_active_reset"),
    ("start_scan_seq", "vmas.start_scan_seq"), ("prev_scan_seq", "vmas.prev_scan_seq"),
    ("scan_select", "vmas.scan_select"), ("scanned", "vmas.scanned"), ("faulted", "vmas.faulted"),
    # Regions
    ("r_node", "regions.node"), ("prot_none", "regions.prot_none"), ("thresh", "regions.thresh"),
    ("hazard", "regions.hazard"), ("selector", "regions.selector"), ("last_pid8", "regions.last_pid8"),
    ("last_set", "regions.last_set"), ("last_node", "regions.last_node"), ("last_task", "regions.last_task"),
    ("cls_node", "regions.cls_node"), ("node_pages", "regions.node_pages"),
    # Counters
    ("events", "counters.table"), ("reasons", "counters.reasons"), ("syst", "counters.syst"),
    # Outcome
    ("done", "outcome.done"), ("elsp", "outcome.elsp"),
    # Rates
    ("dirty", "rates.dirty"), ("frac", "rates.frac"), ("speed", "rates.speed"), ("cum", "rates.cum"),
    ("lam_c", "rates.lam_c"),
    # Observations' accumulators
    ("local_acc", "obs.local_acc"), ("local_w", "obs.local_w"), ("conv_stale", "obs.conv_stale"),
)
#: the adaptive history's state (the arrays of the batch's ``vmas.adapt`` dict, :func:`.adapt.adapt_arrays`)
ADAPT_FIELDS = tuple(ADAPT_STATE)
ST_FIELDS = tuple(name for name, _ in ST_SOURCES) + ADAPT_FIELDS
St = namedtuple("St", ST_FIELDS)

# ------------------------------------------------------------------------------------ scratch
SCR_FIELDS = (
    # the call's uniforms (R, steps, 2K + 2T) and clock (steps + 1,): step k runs [times[k], times[k+1])
    "draws", "times",
    # StepContext, per replica: running threads, each thread's phase, bytes left and kernel time
    # paid before the step's progress (R, T); protection slots used (R,); placement requests (R, T)
    "running", "phase0", "left0", "used_k", "slot", "want",
    # record_locality's per-step (local, total) bytes at the current rates (R, 2), valid where
    # step_local_ok (recomputed after a refresh)
    "step_local", "step_local_ok",
    # the step's hinting faults per replica: region and thread (R, NR), how many (R,)
    "f_region", "f_thread", "nfaults",
    # group sums of numa_faults (R, T(gid), N, 2) mem and cpu, sizes (R, T)
    "gm", "gc", "gsize",
    # detect.py's first-arrival search, per replica: the protected regions of sweep classes in
    # region order (R, NSW; NSW = regions of sweep classes, at least 1) and, aligned, the thread
    # that crossed each first this step (-1: none) and when
    "sw_prot", "sw_thread", "sw_when",
)
Scr = namedtuple("Scr", SCR_FIELDS)


def _get(b, path):
    obj = b
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _readonly(a, dtype):
    """A read-only C-contiguous view (or copy) of ``a`` as ``dtype``. numba types a read-only
    array apart from a writable one, so every static array is read-only (a layout's own arrays
    are, a hand-made workload's are not): one compiled engine for both."""
    out = np.ascontiguousarray(a, dtype=dtype).view()
    out.flags.writeable = False
    return out


def pack_layout(b) -> Lay:
    """The static named tuple of batch ``b`` (workload layout, topology, options, costs). Built
    once per batch; its arrays are the layout's own (read-only by convention)."""
    lay, wl, topo, o, c = b.lay, b.wl, b.topo, b.o, b.costs
    i8 = lambda a: _readonly(a, np.int64)     # noqa: E731
    f8 = lambda a: _readonly(a, np.float64)   # noqa: E731
    bl = lambda a: _readonly(a, np.bool_)     # noqa: E731
    vfirst = np.zeros(lay.M + 1, dtype=np.int64)
    for m, vm in enumerate(lay.mm_vmas):
        if lay.mm_vsel[m] is None:
            raise ValueError("the compiled engine needs each mm's VMAs contiguous")
        vfirst[m], vfirst[m + 1] = lay.mm_vsel[m]
    vfirst = i8(vfirst)
    return Lay(
        T=lay.T, V=lay.V, NR=lay.NR, N=lay.N, M=lay.M, C=lay.C, E=lay.E, K=lay.K, S=lay.S, NCPU=topo.ncpus,
        thread_mm=i8(lay.thread_mm), thread_main=bl(wl.thread_main), main_of_thread=i8(lay.main_of_thread),
        phase_bytes=f8(wl.phase_bytes), init_bind=bl(wl.init_bind), mem_bind=bl(wl.mem_bind),
        cpu_bind=i8(wl.cpu_bind), waits_for_main=bl(wl.waits_for_main), loop_shared=bl(lay.loop_shared),
        loop_range=f8(lay.loop_range),
        nr_threads=i8(lay.nr_threads), nr_scan_windows=i8(lay.nr_scan_windows), mm_vfirst=vfirst,
        mm_buffer_regions=i8(lay.mm_buffer_regions), writes_vma=bl(lay.writes_vma),
        vma_start=i8(wl.vma_start), vma_end=i8(wl.vma_end), vma_code=i8(wl.vma_code), vma_buffer=bl(lay.vma_buffer),
        vma_first=i8(lay.vma_first), vma_mm=i8(wl.vma_mm),
        region_vma=i8(lay.region_vma), region_class=i8(lay.region_class), region_present=i8(lay.region_present),
        region_huge=bl(lay.region_huge), fault_inc=i8(lay.fault_inc), region_buffer=bl(lay.region_buffer),
        region_mm=i8(lay.region_mm),
        cls_start=i8(lay.cls_start), cls_end=i8(lay.cls_end), cls_sweep=bl(lay.cls_sweep),
        entry_thread=i8(wl.entry_thread), entry_phase=i8(wl.entry_phase), entry_class=i8(wl.entry_class),
        entry_share=f8(wl.entry_share), entry_touch_per_byte=f8(wl.entry_touch_per_byte),
        entry_fixed_hz=f8(wl.entry_fixed_hz),
        seg_thread=i8(lay.seg_thread), seg_phase=i8(lay.seg_phase), seg_lo=f8(lay.seg_lo), seg_hi=f8(lay.seg_hi),
        seg_sigma=f8(lay.seg_sigma), seg_range=f8(lay.seg_range), seg_region0=i8(lay.seg_region0),
        seg_kfirst=i8(lay.seg_kfirst), seg_klast=i8(lay.seg_klast),
        latency_ns=f8(topo.latency_ns), node_cores=i8(topo.node_cores), node_smt=i8(topo.per_node("smt")),
        thread_bw_GBps=f8(topo.per_node("thread_bw_GBps")), node_bw_GBps=f8(topo.per_node("node_bw_GBps")),
        write_efficiency=f8(topo.per_node("write_efficiency")),
        link_bw_GBps=f8(topo.per_node("link_bw_GBps")), link_cap_GBps=f8(topo.link_cap_GBps),
        link_route=i8(topo.link_route), node_cpus=i8(lay.node_cpus), node_cap=i8(lay.node_cap),
        cpu_nodes=i8(topo.cpu_nodes), nearest_cpu_node=i8(topo.nearest_cpu_node), cpu_node=i8(topo.cpu_node),
        dt=float(o.dt), scan_delay_ms=int(o.scan_delay_ms), scan_period_min_ms=int(o.scan_period_min_ms),
        scan_period_max_ms=int(o.scan_period_max_ms), scan_size_mb=int(o.scan_size_mb),
        scan_size_pages=int(lay.scan_size_pages), sticky_locality=bool(o.sticky_locality),
        lb_migrate_hz=float(o.lb_migrate_hz),
        lb_refill_locality=bool(o.lb_refill_locality), stick_numa=bool(o.stick_numa),
        numa_maymove=bool(o.numa_maymove),
        numa_groups=bool(o.numa_groups), task_swaps=bool(o.task_swaps),
        scan_period_adapt=bool(o.scan_period_adapt), migrate_filter=bool(o.migrate_filter),
        init_coherence=bool(o.init_coherence),
        link_both_directions=bool(o.link_both_directions), tick_clock=bool(o.tick_clock),
        harness_overhead_s=float(c.harness_overhead_s) if o.harness_overhead else 0.0, max_time=float(o.max_time),
        link_write_efficiency=float(c.link_write_efficiency),
        smt_share=float(c.smt_share), pte_update_ns=float(c.pte_update_ns), pmd_update_ns=float(c.pmd_update_ns),
        scan_run_us=float(c.scan_run_us), scan_virt_ns_per_mb=float(c.scan_virt_ns_per_mb),
        hint_fault_us=float(c.hint_fault_us), migrate_GBps=float(c.migrate_GBps),
        migrate_folio_us=float(c.migrate_folio_us), task_migration_us=float(c.task_migration_us),
    )


def pack_state(b) -> St:
    """The mutable named tuple of batch ``b``: its own arrays (C-contiguous, written in place)."""
    arrays = []
    for name, path in ST_SOURCES:
        a = _get(b, path)
        if not (isinstance(a, np.ndarray) and a.flags.c_contiguous and a.flags.writeable):
            raise ValueError(f"batch array {path} is not a writable C-contiguous array")
        arrays.append(a)
    ad = adapt_arrays(b)
    return St(*arrays, *(ad[f] for f in ADAPT_FIELDS))


def make_scratch(b, times) -> Scr:
    """Scratch for a call of ``len(times) - 1`` steps starting at ``times[0]`` (the draws are
    filled by the caller)."""
    R, T, N, NR = b.R, b.lay.T, b.lay.N, b.lay.NR
    steps = len(times) - 1
    n = 2 * b.lay.K + 2 * T
    nsw = max(1, int(np.count_nonzero(b.lay.cls_sweep[b.lay.region_class])))   # regions of sweep classes
    return Scr(draws=np.empty((R, steps, n)), times=np.asarray(times, dtype=np.float64),
               running=np.zeros((R, T), dtype=np.bool_), phase0=np.zeros((R, T), dtype=np.int64),
               left0=np.zeros((R, T)), used_k=np.zeros((R, T)), slot=np.zeros(R, dtype=np.int64),
               want=np.zeros((R, T), dtype=np.bool_), step_local=np.zeros((R, 2)),
               step_local_ok=np.zeros(R, dtype=np.bool_), f_region=np.zeros((R, NR), dtype=np.int64),
               f_thread=np.zeros((R, NR), dtype=np.int64), nfaults=np.zeros(R, dtype=np.int64),
               gm=np.zeros((R, T, N, 2)), gc=np.zeros((R, T, N, 2)), gsize=np.zeros((R, T), dtype=np.int64),
               sw_prot=np.zeros((R, nsw), dtype=np.int64), sw_thread=np.full((R, nsw), -1, dtype=np.int64),
               sw_when=np.zeros((R, nsw)))


#: phases a thread runs in (progress.running_mask)
RUNNING_PHASES = (PH_INIT, PH_LOOP)


# ------------------------------------------------------------------------------------ structs
def _type_expr(t) -> str:
    """The numba type ``t`` of a field as the source text that builds it (structs.py)."""
    import numba

    if isinstance(t, numba.types.Array):
        ro = ", readonly=True" if not t.mutable else ""
        dtype = "boolean" if str(t.dtype) == "bool" else str(t.dtype)
        return f'types.Array(types.{dtype}, {t.ndim}, "{t.layout}"{ro})'
    return {"int64": "types.int64", "float64": "types.float64", "bool": "types.boolean"}[str(t)]


def structs_source(L, Q, S, X) -> str:
    """The source of :mod:`.structs` for packed tuples of these types (``python -m
    numalab.engine.compiled`` prints it; ``tests/test_compiled_engine.py`` checks the
    committed module against it)."""
    import numba

    out = [STRUCTS_HEADER]
    for kind, tup in (("Lay", L), ("Pol", Q), ("St", S), ("Scr", X)):
        out.append(f"\n\n@structref.register\nclass {kind}Type(types.StructRef):\n"
                   f"    \"\"\"The struct of :data:`numalab.engine.compiled.state.{kind}`.\"\"\"\n")
        fields = "".join(f"    (\"{f}\", {_type_expr(numba.typeof(v))}),\n" for f, v in tup._asdict().items())
        out.append(f"\n\n{kind.upper()}_TYPE = {kind}Type([\n{fields}])\n")
        # a function of at most _FILL_FIELDS copies each (the package keeps functions short)
        parts = [tup._fields[i:i + _FILL_FIELDS] for i in range(0, len(tup._fields), _FILL_FIELDS)]
        if len(parts) == 1:
            assigns = "".join(f"    s.{f} = t.{f}\n" for f in parts[0])
        else:
            for i, part in enumerate(parts):
                body = "".join(f"    s.{f} = t.{f}\n" for f in part)
                out.append(f"\n\n@inner\ndef _fill_{kind.lower()}_{i}(s, t):\n"
                           f"    \"\"\"Fields {part[0]} .. {part[-1]} of a {kind} struct.\"\"\"\n{body}")
            assigns = "".join(f"    _fill_{kind.lower()}_{i}(s, t)\n" for i in range(len(parts)))
        out.append(f"\n\n@inner\ndef make_{kind.lower()}(t):\n    \"\"\"A {kind} struct of named tuple ``t``.\"\"\"\n"
                   f"    s = structref.new({kind.upper()}_TYPE)\n{assigns}    return s\n")
    return "".join(out)


#: field copies per generated function of structs.py
_FILL_FIELDS = 80


STRUCTS_HEADER = '''"""The compiled engine's four structs, GENERATED from the field lists of :mod:`.state`
(``python -m numalab.engine.compiled > numalab/engine/compiled/structs.py``; do not edit).

numba passes a named tuple to a function as every one of its arrays, so a function over the
batch's ~200 arrays takes ~200 arguments: slow to compile and to call. A struct (numba's
``StructRef``) is one pointer. The compiled phases take the structs ``L``, ``Q``, ``S``, ``X``
(fields named as the tuples' ``Lay``, ``Pol``, ``St``, ``Scr``); only the run's entry
(:func:`numalab.engine.compiled.loop.advance`) takes the named tuples, and ``make_*`` copies
them into structs (the arrays are shared, not copied).
"""

from numba.core import types
from numba.experimental import structref

from ._nb import inner

__all__ = ["LAY_TYPE", "POL_TYPE", "ST_TYPE", "SCR_TYPE", "make_lay", "make_pol", "make_st", "make_scr"]
'''


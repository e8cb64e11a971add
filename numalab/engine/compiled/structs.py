"""The compiled engine's four structs, GENERATED from the field lists of :mod:`.state`
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


@structref.register
class LayType(types.StructRef):
    """The struct of :data:`numalab.engine.compiled.state.Lay`."""


LAY_TYPE = LayType([
    ("T", types.int64),
    ("V", types.int64),
    ("NR", types.int64),
    ("N", types.int64),
    ("M", types.int64),
    ("C", types.int64),
    ("E", types.int64),
    ("K", types.int64),
    ("S", types.int64),
    ("NCPU", types.int64),
    ("thread_mm", types.Array(types.int64, 1, "C", readonly=True)),
    ("thread_main", types.Array(types.boolean, 1, "C", readonly=True)),
    ("main_of_thread", types.Array(types.int64, 1, "C", readonly=True)),
    ("phase_bytes", types.Array(types.float64, 2, "C", readonly=True)),
    ("init_bind", types.Array(types.boolean, 1, "C", readonly=True)),
    ("mem_bind", types.Array(types.boolean, 1, "C", readonly=True)),
    ("cpu_bind", types.Array(types.int64, 1, "C", readonly=True)),
    ("waits_for_main", types.Array(types.boolean, 1, "C", readonly=True)),
    ("loop_shared", types.Array(types.boolean, 1, "C", readonly=True)),
    ("loop_range", types.Array(types.float64, 1, "C", readonly=True)),
    ("nr_threads", types.Array(types.int64, 1, "C", readonly=True)),
    ("nr_scan_windows", types.Array(types.int64, 1, "C", readonly=True)),
    ("mm_vfirst", types.Array(types.int64, 1, "C", readonly=True)),
    ("mm_buffer_regions", types.Array(types.int64, 1, "C", readonly=True)),
    ("writes_vma", types.Array(types.boolean, 3, "C", readonly=True)),
    ("vma_start", types.Array(types.int64, 1, "C", readonly=True)),
    ("vma_end", types.Array(types.int64, 1, "C", readonly=True)),
    ("vma_code", types.Array(types.int64, 1, "C", readonly=True)),
    ("vma_buffer", types.Array(types.boolean, 1, "C", readonly=True)),
    ("vma_first", types.Array(types.int64, 1, "C", readonly=True)),
    ("vma_mm", types.Array(types.int64, 1, "C", readonly=True)),
    ("region_vma", types.Array(types.int64, 1, "C", readonly=True)),
    ("region_class", types.Array(types.int64, 1, "C", readonly=True)),
    ("region_present", types.Array(types.int64, 1, "C", readonly=True)),
    ("region_huge", types.Array(types.boolean, 1, "C", readonly=True)),
    ("fault_inc", types.Array(types.int64, 1, "C", readonly=True)),
    ("region_buffer", types.Array(types.boolean, 1, "C", readonly=True)),
    ("region_mm", types.Array(types.int64, 1, "C", readonly=True)),
    ("cls_start", types.Array(types.int64, 1, "C", readonly=True)),
    ("cls_end", types.Array(types.int64, 1, "C", readonly=True)),
    ("cls_sweep", types.Array(types.boolean, 1, "C", readonly=True)),
    ("entry_thread", types.Array(types.int64, 1, "C", readonly=True)),
    ("entry_phase", types.Array(types.int64, 1, "C", readonly=True)),
    ("entry_class", types.Array(types.int64, 1, "C", readonly=True)),
    ("entry_share", types.Array(types.float64, 1, "C", readonly=True)),
    ("entry_touch_per_byte", types.Array(types.float64, 1, "C", readonly=True)),
    ("entry_fixed_hz", types.Array(types.float64, 1, "C", readonly=True)),
    ("seg_thread", types.Array(types.int64, 1, "C", readonly=True)),
    ("seg_phase", types.Array(types.int64, 1, "C", readonly=True)),
    ("seg_lo", types.Array(types.float64, 1, "C", readonly=True)),
    ("seg_hi", types.Array(types.float64, 1, "C", readonly=True)),
    ("seg_sigma", types.Array(types.float64, 1, "C", readonly=True)),
    ("seg_range", types.Array(types.float64, 1, "C", readonly=True)),
    ("seg_region0", types.Array(types.int64, 1, "C", readonly=True)),
    ("seg_kfirst", types.Array(types.int64, 1, "C", readonly=True)),
    ("seg_klast", types.Array(types.int64, 1, "C", readonly=True)),
    ("latency_ns", types.Array(types.float64, 2, "C", readonly=True)),
    ("node_cores", types.Array(types.int64, 1, "C", readonly=True)),
    ("node_smt", types.Array(types.int64, 1, "C", readonly=True)),
    ("thread_bw_GBps", types.Array(types.float64, 1, "C", readonly=True)),
    ("node_bw_GBps", types.Array(types.float64, 1, "C", readonly=True)),
    ("write_efficiency", types.Array(types.float64, 1, "C", readonly=True)),
    ("link_bw_GBps", types.Array(types.float64, 1, "C", readonly=True)),
    ("link_cap_GBps", types.Array(types.float64, 1, "C", readonly=True)),
    ("link_route", types.Array(types.int64, 3, "C", readonly=True)),
    ("node_cpus", types.Array(types.int64, 1, "C", readonly=True)),
    ("node_cap", types.Array(types.int64, 1, "C", readonly=True)),
    ("cpu_nodes", types.Array(types.int64, 1, "C", readonly=True)),
    ("nearest_cpu_node", types.Array(types.int64, 1, "C", readonly=True)),
    ("cpu_node", types.Array(types.int64, 1, "C", readonly=True)),
    ("dt", types.float64),
    ("scan_delay_ms", types.int64),
    ("scan_period_min_ms", types.int64),
    ("scan_period_max_ms", types.int64),
    ("scan_size_mb", types.int64),
    ("scan_size_pages", types.int64),
    ("sticky_locality", types.boolean),
    ("lb_migrate_hz", types.float64),
    ("lb_refill_locality", types.boolean),
    ("stick_numa", types.boolean),
    ("numa_maymove", types.boolean),
    ("numa_groups", types.boolean),
    ("task_swaps", types.boolean),
    ("scan_period_adapt", types.boolean),
    ("migrate_filter", types.boolean),
    ("init_coherence", types.boolean),
    ("link_both_directions", types.boolean),
    ("tick_clock", types.boolean),
    ("harness_overhead_s", types.float64),
    ("max_time", types.float64),
    ("link_write_efficiency", types.float64),
    ("smt_share", types.float64),
    ("pte_update_ns", types.float64),
    ("pmd_update_ns", types.float64),
    ("scan_run_us", types.float64),
    ("scan_virt_ns_per_mb", types.float64),
    ("hint_fault_us", types.float64),
    ("migrate_GBps", types.float64),
    ("migrate_folio_us", types.float64),
    ("task_migration_us", types.float64),
])


@inner
def _fill_lay_0(s, t):
    """Fields T .. stick_numa of a Lay struct."""
    s.T = t.T
    s.V = t.V
    s.NR = t.NR
    s.N = t.N
    s.M = t.M
    s.C = t.C
    s.E = t.E
    s.K = t.K
    s.S = t.S
    s.NCPU = t.NCPU
    s.thread_mm = t.thread_mm
    s.thread_main = t.thread_main
    s.main_of_thread = t.main_of_thread
    s.phase_bytes = t.phase_bytes
    s.init_bind = t.init_bind
    s.mem_bind = t.mem_bind
    s.cpu_bind = t.cpu_bind
    s.waits_for_main = t.waits_for_main
    s.loop_shared = t.loop_shared
    s.loop_range = t.loop_range
    s.nr_threads = t.nr_threads
    s.nr_scan_windows = t.nr_scan_windows
    s.mm_vfirst = t.mm_vfirst
    s.mm_buffer_regions = t.mm_buffer_regions
    s.writes_vma = t.writes_vma
    s.vma_start = t.vma_start
    s.vma_end = t.vma_end
    s.vma_code = t.vma_code
    s.vma_buffer = t.vma_buffer
    s.vma_first = t.vma_first
    s.vma_mm = t.vma_mm
    s.region_vma = t.region_vma
    s.region_class = t.region_class
    s.region_present = t.region_present
    s.region_huge = t.region_huge
    s.fault_inc = t.fault_inc
    s.region_buffer = t.region_buffer
    s.region_mm = t.region_mm
    s.cls_start = t.cls_start
    s.cls_end = t.cls_end
    s.cls_sweep = t.cls_sweep
    s.entry_thread = t.entry_thread
    s.entry_phase = t.entry_phase
    s.entry_class = t.entry_class
    s.entry_share = t.entry_share
    s.entry_touch_per_byte = t.entry_touch_per_byte
    s.entry_fixed_hz = t.entry_fixed_hz
    s.seg_thread = t.seg_thread
    s.seg_phase = t.seg_phase
    s.seg_lo = t.seg_lo
    s.seg_hi = t.seg_hi
    s.seg_sigma = t.seg_sigma
    s.seg_range = t.seg_range
    s.seg_region0 = t.seg_region0
    s.seg_kfirst = t.seg_kfirst
    s.seg_klast = t.seg_klast
    s.latency_ns = t.latency_ns
    s.node_cores = t.node_cores
    s.node_smt = t.node_smt
    s.thread_bw_GBps = t.thread_bw_GBps
    s.node_bw_GBps = t.node_bw_GBps
    s.write_efficiency = t.write_efficiency
    s.link_bw_GBps = t.link_bw_GBps
    s.link_cap_GBps = t.link_cap_GBps
    s.link_route = t.link_route
    s.node_cpus = t.node_cpus
    s.node_cap = t.node_cap
    s.cpu_nodes = t.cpu_nodes
    s.nearest_cpu_node = t.nearest_cpu_node
    s.cpu_node = t.cpu_node
    s.dt = t.dt
    s.scan_delay_ms = t.scan_delay_ms
    s.scan_period_min_ms = t.scan_period_min_ms
    s.scan_period_max_ms = t.scan_period_max_ms
    s.scan_size_mb = t.scan_size_mb
    s.scan_size_pages = t.scan_size_pages
    s.sticky_locality = t.sticky_locality
    s.lb_migrate_hz = t.lb_migrate_hz
    s.lb_refill_locality = t.lb_refill_locality
    s.stick_numa = t.stick_numa


@inner
def _fill_lay_1(s, t):
    """Fields numa_maymove .. task_migration_us of a Lay struct."""
    s.numa_maymove = t.numa_maymove
    s.numa_groups = t.numa_groups
    s.task_swaps = t.task_swaps
    s.scan_period_adapt = t.scan_period_adapt
    s.migrate_filter = t.migrate_filter
    s.init_coherence = t.init_coherence
    s.link_both_directions = t.link_both_directions
    s.tick_clock = t.tick_clock
    s.harness_overhead_s = t.harness_overhead_s
    s.max_time = t.max_time
    s.link_write_efficiency = t.link_write_efficiency
    s.smt_share = t.smt_share
    s.pte_update_ns = t.pte_update_ns
    s.pmd_update_ns = t.pmd_update_ns
    s.scan_run_us = t.scan_run_us
    s.scan_virt_ns_per_mb = t.scan_virt_ns_per_mb
    s.hint_fault_us = t.hint_fault_us
    s.migrate_GBps = t.migrate_GBps
    s.migrate_folio_us = t.migrate_folio_us
    s.task_migration_us = t.task_migration_us


@inner
def make_lay(t):
    """A Lay struct of named tuple ``t``."""
    s = structref.new(LAY_TYPE)
    _fill_lay_0(s, t)
    _fill_lay_1(s, t)
    return s


@structref.register
class PolType(types.StructRef):
    """The struct of :data:`numalab.engine.compiled.state.Pol`."""


POL_TYPE = PolType([
    ("numab_state", types.boolean),
    ("windows", types.int64),
    ("words", types.int64),
    ("ring", types.boolean),
    ("width", types.int64),
    ("rotate_before_access", types.boolean),
    ("forced_one", types.boolean),
    ("own_pid", types.boolean),
    ("dec_allowed", types.Array(types.boolean, 1, "C")),
    ("dec_pid_skip", types.Array(types.boolean, 1, "C")),
    ("pre_rule", types.Array(types.int64, 1, "C")),
    ("pre_code", types.Array(types.int64, 1, "C")),
    ("pre_allow", types.Array(types.boolean, 1, "C")),
    ("acc_rule", types.Array(types.int64, 1, "C")),
    ("acc_param", types.Array(types.int64, 1, "C")),
    ("acc_code", types.Array(types.int64, 1, "C")),
    ("acc_allow", types.Array(types.boolean, 1, "C")),
    ("has_fallback", types.boolean),
    ("fb_code", types.int64),
    ("fb_refuse", types.int64),
    ("early_vma", types.boolean),
    ("code_scan_delay", types.int64),
    ("code_pid_inactive", types.int64),
    ("code_unfiltered", types.int64),
    ("code_unsuitable", types.int64),
    ("code_shared_ro", types.int64),
    ("code_inaccessible", types.int64),
    ("code_seq_completed", types.int64),
    ("dec_before_test", types.Array(types.boolean, 1, "C")),
    ("adapt_rule", types.int64),
    ("adapt_enabled", types.boolean),
    ("ad_n_min", types.int64),
    ("ad_n_max", types.int64),
    ("ad_n_init", types.int64),
    ("ad_shrink_after", types.int64),
    ("ad_grow_others", types.int64),
    ("ad_bits_lo", types.int64),
    ("ad_bits_hi", types.int64),
    ("ad_threads_max", types.int64),
    ("ad_span_ms", types.int64),
    ("ad_ewma_shift", types.int64),
    ("dec_pid_test", types.Array(types.boolean, 1, "C")),
])


@inner
def make_pol(t):
    """A Pol struct of named tuple ``t``."""
    s = structref.new(POL_TYPE)
    s.numab_state = t.numab_state
    s.windows = t.windows
    s.words = t.words
    s.ring = t.ring
    s.width = t.width
    s.rotate_before_access = t.rotate_before_access
    s.forced_one = t.forced_one
    s.own_pid = t.own_pid
    s.dec_allowed = t.dec_allowed
    s.dec_pid_skip = t.dec_pid_skip
    s.pre_rule = t.pre_rule
    s.pre_code = t.pre_code
    s.pre_allow = t.pre_allow
    s.acc_rule = t.acc_rule
    s.acc_param = t.acc_param
    s.acc_code = t.acc_code
    s.acc_allow = t.acc_allow
    s.has_fallback = t.has_fallback
    s.fb_code = t.fb_code
    s.fb_refuse = t.fb_refuse
    s.early_vma = t.early_vma
    s.code_scan_delay = t.code_scan_delay
    s.code_pid_inactive = t.code_pid_inactive
    s.code_unfiltered = t.code_unfiltered
    s.code_unsuitable = t.code_unsuitable
    s.code_shared_ro = t.code_shared_ro
    s.code_inaccessible = t.code_inaccessible
    s.code_seq_completed = t.code_seq_completed
    s.dec_before_test = t.dec_before_test
    s.adapt_rule = t.adapt_rule
    s.adapt_enabled = t.adapt_enabled
    s.ad_n_min = t.ad_n_min
    s.ad_n_max = t.ad_n_max
    s.ad_n_init = t.ad_n_init
    s.ad_shrink_after = t.ad_shrink_after
    s.ad_grow_others = t.ad_grow_others
    s.ad_bits_lo = t.ad_bits_lo
    s.ad_bits_hi = t.ad_bits_hi
    s.ad_threads_max = t.ad_threads_max
    s.ad_span_ms = t.ad_span_ms
    s.ad_ewma_shift = t.ad_ewma_shift
    s.dec_pid_test = t.dec_pid_test
    return s


@structref.register
class StType(types.StructRef):
    """The struct of :data:`numalab.engine.compiled.state.St`."""


ST_TYPE = StType([
    ("tid", types.Array(types.int64, 2, "C")),
    ("pid8", types.Array(types.int64, 2, "C")),
    ("tid_word", types.Array(types.int64, 2, "C")),
    ("tid_mask", types.Array(types.uint64, 2, "C")),
    ("node", types.Array(types.int64, 2, "C")),
    ("phase", types.Array(types.int64, 2, "C")),
    ("bytes_left", types.Array(types.float64, 2, "C")),
    ("finish", types.Array(types.float64, 2, "C")),
    ("runtime", types.Array(types.float64, 2, "C")),
    ("kdebt", types.Array(types.float64, 2, "C")),
    ("ksys", types.Array(types.float64, 2, "C")),
    ("sweep_phase", types.Array(types.float64, 2, "C")),
    ("node_stamp", types.Array(types.float64, 2, "C")),
    ("numa_scan_period", types.Array(types.int64, 2, "C")),
    ("numa_scan_period_max", types.Array(types.int64, 2, "C")),
    ("numa_scan_seq", types.Array(types.int64, 2, "C")),
    ("numa_preferred_nid", types.Array(types.int64, 2, "C")),
    ("numa_migrate_retry", types.Array(types.float64, 2, "C")),
    ("has_faults", types.Array(types.boolean, 2, "C")),
    ("faults_mem", types.Array(types.float64, 4, "C")),
    ("faults_cpu", types.Array(types.float64, 4, "C")),
    ("buf_mem", types.Array(types.int64, 4, "C")),
    ("buf_cpu", types.Array(types.int64, 4, "C")),
    ("numa_faults_locality", types.Array(types.int64, 3, "C")),
    ("last_task_numa_placement", types.Array(types.float64, 2, "C")),
    ("last_sum_exec_runtime", types.Array(types.float64, 2, "C")),
    ("gid", types.Array(types.int64, 2, "C")),
    ("mm_next_scan", types.Array(types.float64, 2, "C")),
    ("mm_scan_offset", types.Array(types.int64, 2, "C")),
    ("mm_scan_seq", types.Array(types.int64, 2, "C")),
    ("pids_active", types.Array(types.uint64, 4, "C")),
    ("pids_idx", types.Array(types.int64, 2, "C")),
    ("has_state", types.Array(types.boolean, 2, "C")),
    ("next_scan", types.Array(types.float64, 2, "C")),
    ("pids_active_reset", types.Array(types.float64, 2, "C")),
    ("start_scan_seq", types.Array(types.int64, 2, "C")),
    ("prev_scan_seq", types.Array(types.int64, 2, "C")),
    ("scan_select", types.Array(types.int64, 2, "C")),
    ("scanned", types.Array(types.boolean, 2, "C")),
    ("faulted", types.Array(types.boolean, 2, "C")),
    ("r_node", types.Array(types.int64, 2, "C")),
    ("prot_none", types.Array(types.boolean, 2, "C")),
    ("thresh", types.Array(types.float64, 2, "C")),
    ("hazard", types.Array(types.float64, 2, "C")),
    ("selector", types.Array(types.float64, 2, "C")),
    ("last_pid8", types.Array(types.int64, 2, "C")),
    ("last_set", types.Array(types.boolean, 2, "C")),
    ("last_node", types.Array(types.int64, 2, "C")),
    ("last_task", types.Array(types.int64, 2, "C")),
    ("cls_node", types.Array(types.int64, 3, "C")),
    ("node_pages", types.Array(types.int64, 2, "C")),
    ("events", types.Array(types.int64, 2, "C")),
    ("reasons", types.Array(types.int64, 2, "C")),
    ("syst", types.Array(types.float64, 1, "C")),
    ("done", types.Array(types.boolean, 1, "C")),
    ("elsp", types.Array(types.float64, 1, "C")),
    ("dirty", types.Array(types.boolean, 1, "C")),
    ("frac", types.Array(types.float64, 3, "C")),
    ("speed", types.Array(types.float64, 2, "C")),
    ("cum", types.Array(types.float64, 2, "C")),
    ("lam_c", types.Array(types.float64, 2, "C")),
    ("local_acc", types.Array(types.float64, 1, "C")),
    ("local_w", types.Array(types.float64, 1, "C")),
    ("conv_stale", types.Array(types.boolean, 1, "C")),
    ("ad_nr_hist", types.Array(types.int64, 2, "C")),
    ("ad_idle_scans", types.Array(types.int64, 2, "C")),
    ("ad_scanned", types.Array(types.boolean, 2, "C")),
    ("ad_faulted", types.Array(types.boolean, 2, "C")),
    ("ad_pids_seen", types.Array(types.uint64, 3, "C")),
    ("ad_pass_seq", types.Array(types.int64, 2, "C")),
    ("ad_last_rotate_ms", types.Array(types.int64, 2, "C")),
    ("ad_win_avg_ms", types.Array(types.int64, 2, "C")),
])


@inner
def make_st(t):
    """A St struct of named tuple ``t``."""
    s = structref.new(ST_TYPE)
    s.tid = t.tid
    s.pid8 = t.pid8
    s.tid_word = t.tid_word
    s.tid_mask = t.tid_mask
    s.node = t.node
    s.phase = t.phase
    s.bytes_left = t.bytes_left
    s.finish = t.finish
    s.runtime = t.runtime
    s.kdebt = t.kdebt
    s.ksys = t.ksys
    s.sweep_phase = t.sweep_phase
    s.node_stamp = t.node_stamp
    s.numa_scan_period = t.numa_scan_period
    s.numa_scan_period_max = t.numa_scan_period_max
    s.numa_scan_seq = t.numa_scan_seq
    s.numa_preferred_nid = t.numa_preferred_nid
    s.numa_migrate_retry = t.numa_migrate_retry
    s.has_faults = t.has_faults
    s.faults_mem = t.faults_mem
    s.faults_cpu = t.faults_cpu
    s.buf_mem = t.buf_mem
    s.buf_cpu = t.buf_cpu
    s.numa_faults_locality = t.numa_faults_locality
    s.last_task_numa_placement = t.last_task_numa_placement
    s.last_sum_exec_runtime = t.last_sum_exec_runtime
    s.gid = t.gid
    s.mm_next_scan = t.mm_next_scan
    s.mm_scan_offset = t.mm_scan_offset
    s.mm_scan_seq = t.mm_scan_seq
    s.pids_active = t.pids_active
    s.pids_idx = t.pids_idx
    s.has_state = t.has_state
    s.next_scan = t.next_scan
    s.pids_active_reset = t.pids_active_reset
    s.start_scan_seq = t.start_scan_seq
    s.prev_scan_seq = t.prev_scan_seq
    s.scan_select = t.scan_select
    s.scanned = t.scanned
    s.faulted = t.faulted
    s.r_node = t.r_node
    s.prot_none = t.prot_none
    s.thresh = t.thresh
    s.hazard = t.hazard
    s.selector = t.selector
    s.last_pid8 = t.last_pid8
    s.last_set = t.last_set
    s.last_node = t.last_node
    s.last_task = t.last_task
    s.cls_node = t.cls_node
    s.node_pages = t.node_pages
    s.events = t.events
    s.reasons = t.reasons
    s.syst = t.syst
    s.done = t.done
    s.elsp = t.elsp
    s.dirty = t.dirty
    s.frac = t.frac
    s.speed = t.speed
    s.cum = t.cum
    s.lam_c = t.lam_c
    s.local_acc = t.local_acc
    s.local_w = t.local_w
    s.conv_stale = t.conv_stale
    s.ad_nr_hist = t.ad_nr_hist
    s.ad_idle_scans = t.ad_idle_scans
    s.ad_scanned = t.ad_scanned
    s.ad_faulted = t.ad_faulted
    s.ad_pids_seen = t.ad_pids_seen
    s.ad_pass_seq = t.ad_pass_seq
    s.ad_last_rotate_ms = t.ad_last_rotate_ms
    s.ad_win_avg_ms = t.ad_win_avg_ms
    return s


@structref.register
class ScrType(types.StructRef):
    """The struct of :data:`numalab.engine.compiled.state.Scr`."""


SCR_TYPE = ScrType([
    ("draws", types.Array(types.float64, 3, "C")),
    ("times", types.Array(types.float64, 1, "C")),
    ("running", types.Array(types.boolean, 2, "C")),
    ("phase0", types.Array(types.int64, 2, "C")),
    ("left0", types.Array(types.float64, 2, "C")),
    ("used_k", types.Array(types.float64, 2, "C")),
    ("slot", types.Array(types.int64, 1, "C")),
    ("want", types.Array(types.boolean, 2, "C")),
    ("step_local", types.Array(types.float64, 2, "C")),
    ("step_local_ok", types.Array(types.boolean, 1, "C")),
    ("f_region", types.Array(types.int64, 2, "C")),
    ("f_thread", types.Array(types.int64, 2, "C")),
    ("nfaults", types.Array(types.int64, 1, "C")),
    ("gm", types.Array(types.float64, 4, "C")),
    ("gc", types.Array(types.float64, 4, "C")),
    ("gsize", types.Array(types.int64, 2, "C")),
    ("sw_prot", types.Array(types.int64, 2, "C")),
    ("sw_thread", types.Array(types.int64, 2, "C")),
    ("sw_when", types.Array(types.float64, 2, "C")),
])


@inner
def make_scr(t):
    """A Scr struct of named tuple ``t``."""
    s = structref.new(SCR_TYPE)
    s.draws = t.draws
    s.times = t.times
    s.running = t.running
    s.phase0 = t.phase0
    s.left0 = t.left0
    s.used_k = t.used_k
    s.slot = t.slot
    s.want = t.want
    s.step_local = t.step_local
    s.step_local_ok = t.step_local_ok
    s.f_region = t.f_region
    s.f_thread = t.f_thread
    s.nfaults = t.nfaults
    s.gm = t.gm
    s.gc = t.gc
    s.gsize = t.gsize
    s.sw_prot = t.sw_prot
    s.sw_thread = t.sw_thread
    s.sw_when = t.sw_when
    return s

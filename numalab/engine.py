"""The batched, time-stepped simulation of Linux automatic NUMA balancing.

``simulate(workload, policies, seeds)`` runs, for each policy, one batch of replicas (one per
seed) whose state lives in arrays with a leading replica axis ``r``. The step algorithm is
documented precisely in ``docs/engine.md``; in short, a step of ``dt`` seconds does

1. **draw** this step's random numbers, per replica, fixed shape: ``2K + 2T`` uniforms from the
   replica's own ``numpy.random.Generator`` -- ``u_prot`` (K, 2), one (threshold, selector)
   pair per region the step's scans protect, then ``u_task`` (T,), then ``u_lb`` (T,);
2. **progress**: every running thread writes at the speed :func:`numalab.costs.progress_rates`
   gives for where its bytes live, minus the kernel time it owes; phases end (init -> loop ->
   done), workers waiting for the main thread start;
3. **scan triggering** (``task_tick_numa``): threads whose CPU time passes ``node_stamp +
   numa_scan_period`` trigger; per mm the earliest trigger at or after ``numa_next_scan``
   wins (ties: lowest ``u_task``) and runs ``task_numa_work`` (spec §3.2) -- walk VMAs from
   ``numa_scan_offset``, decide each with :func:`numalab.policy.decide` (its unchecked entry
   point, the same code), protect regions within
   the 256 MB budget and the 8x virtual cap, advance offset and sequence;
4. **hinting faults** on PROT_NONE regions: a protected region of access class ``c`` adds
   ``lambda_c dt`` to its hazard and faults when the hazard reaches its Exp(1) threshold; the
   faulting thread is the class entry where ``selector * lambda_c`` falls in the cumulative
   touch rates; then the PID bit, the vmstat counters, the two-stage filter with the 8-bit
   last accessor, migration, ``task_numa_fault`` (numa groups, placement, scan period) --
   spec §5;
5. **task placement**: ``numa_migrate_preferred`` requests are served into free CPUs of the
   preferred node, then by swaps with tasks that gain from the opposite move (``u_task``
   orders the requests); then the **load balancer**'s rare cross-node pulls (``u_lb``,
   option ``lb_migrate_hz``), which, like every cross-node move, run ``update_scan_period``;
6. **invariants** and time series.

All per-replica arithmetic is elementwise or reduces over non-replica axes in a fixed order,
and the only randomness is the replica's Generator drawn in fixed shapes, so a seed's results
are identical in any batch.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from . import adaptive as AD
from . import history as hist
from .costs import Costs, progress_rates
from .counters import COUNTER_NAMES
from .errors import EngineInvariantError, NumalabValueError, check_int, check_number
from .policy import ALLOWED, CODE, REASONS, Policy, decide_unchecked, unfiltered_reasons
from .topology import Topology
from .workloads import (INIT_B, INIT_MAIN, INIT_OWNER, PH_DONE, PH_INIT, PH_LOOP, PH_WAIT, REGION_PAGES,
                        UNSUITABLE, SHARED_RO, INACCESSIBLE, Workload, workload as make_workload)

__all__ = ["simulate", "run_batch", "DEFAULTS", "LB_MIGRATE_HZ"]

NO_NODE = -1
PID_UNSET = 0xFF           # cpupid_pid_unset(): the 8 pid bits all ones
TICK_S = 1e-3              # HZ=1000 (the LKP rhel-8.3 config)
DRAW_BLOCK = 32            # steps of random numbers drawn per Generator call (same stream)

#: Cross-node pulls of a task by the scheduler's load balancer, per running task and second
#: (engine option ``lb_migrate_hz``; 0 disables). The path is load_balance -> detach_task ->
#: set_task_cpu -> migrate_task_rq_fair -> ``update_scan_period`` (spec §3.5), which resets the
#: pulled task's ``numa_scan_period`` to ``task_scan_start`` when it leaves its preferred node.
#: The benchmarks run one thread per CPU, so the balancer only pulls a benchmark thread across
#: the socket boundary when something else transiently loads a CPU (kworkers, the LKP monitors
#: and the harness's 1 s ``nmstat`` plotter) and NUMA-aware balancing (migrate_degrades_locality)
#: gives in; the place it frees is refilled by a pull the other way (a swap). Basis and limits:
#: the kernel test robot's ``perf-stat.ps.cpu-migrations`` for these RFC jobs is ~222/s on a
#: 224-CPU machine (~1 per CPU-second, all tasks and distances) -- an upper bound only; this
#: default (one cross-node pull per task every ~83 min, ~0.03/s machine-wide for 128 threads) is
#: set from one absolute number, numa01_THREAD_ALLOC's p4 seconds; see docs/fidelity.md.
LB_MIGRATE_HZ = 0.0002

#: engine options and their defaults (all recorded in the Dataset's ``parameters`` attr)
DEFAULTS = dict(
    dt=0.05,                    # s per step
    time_resolution=1.0,        # s between time-series samples
    max_time=2000.0,            # s of simulated time before giving up (recorded as unfinished)
    scan_delay_ms=1000,         # sysctl_numa_balancing_scan_delay
    scan_period_min_ms=1000,    # sysctl_numa_balancing_scan_period_min
    scan_period_max_ms=60000,   # sysctl_numa_balancing_scan_period_max
    scan_size_mb=256,           # sysctl_numa_balancing_scan_size
    lb_migrate_hz=LB_MIGRATE_HZ,  # cross-node load-balancer pulls per running task per s (LB_MIGRATE_HZ)
    sticky_locality=True,       # the early-return path of update_task_scan_period keeps locality[] (no e81ee0630837)
    thp=True,                   # anonymous 2 MiB regions are THPs
    pid_base=None,              # first pid of the run; None = drawn per seed in [pid_lo, pid_hi)
    pid_lo=2000,
    pid_hi=40000,
    init_node=None,             # node B / the main thread's node; None = drawn per seed
    check_invariants=True,
)


def _opts(options: dict) -> dict:
    unknown = sorted(set(options) - set(DEFAULTS) - {"costs", "topology"})
    if unknown:
        raise NumalabValueError(f"unknown engine option {unknown[0]!r}; allowed: "
                                f"{', '.join(sorted(DEFAULTS))}, costs, topology")
    o = dict(DEFAULTS)
    o.update({k: v for k, v in options.items() if k in DEFAULTS})
    o["dt"] = check_number("dt", o["dt"], lo=0.0, hi=0.1, lo_open=True)
    o["time_resolution"] = check_number("time_resolution", o["time_resolution"], lo=0.0, lo_open=True)
    o["max_time"] = check_number("max_time", o["max_time"], lo=0.0, lo_open=True)
    o["lb_migrate_hz"] = check_number("lb_migrate_hz", o["lb_migrate_hz"], lo=0.0, hi=1.0 / o["dt"])
    for k in ("scan_delay_ms", "scan_period_min_ms", "scan_period_max_ms", "scan_size_mb"):
        o[k] = check_int(k, o[k], lo=1)
    if o["scan_period_max_ms"] < o["scan_period_min_ms"]:
        raise NumalabValueError("scan_period_max_ms must be >= scan_period_min_ms")
    for k in ("sticky_locality", "thp", "check_invariants"):
        # bools, or 0/1 as a sweep grid stores them
        if not (isinstance(o[k], (bool, np.bool_)) or (isinstance(o[k], (int, np.integer)) and o[k] in (0, 1))):
            raise NumalabValueError(f"{k}={o[k]!r}; allowed: True or False (or 1/0)")
        o[k] = bool(o[k])
    if o["pid_base"] is not None:
        o["pid_base"] = check_int("pid_base", o["pid_base"], lo=1, hi=(1 << 22) - 1)
    o["pid_lo"] = check_int("pid_lo", o["pid_lo"], lo=1)
    o["pid_hi"] = check_int("pid_hi", o["pid_hi"], lo=o["pid_lo"] + 1, hi=(1 << 22))
    return o


def _rotate(pids, pidx, mask, rotation):
    """history.rotate on the masked entries only (gathered, rotated whole, written back)."""
    sel = np.nonzero(mask)
    sub, subidx = pids[sel], pidx[sel]
    hist.rotate(sub, subidx, None, rotation=rotation)
    pids[sel] = sub
    pidx[sel] = subidx


def _pages_by(b, key, nkeys) -> np.ndarray:
    """Resident base pages per (replica, key) for a per-(replica, region) ``key`` in
    ``[0, nkeys)``, int64 (one bincount; float sums of page counts are exact)."""
    flat = (np.arange(b.R)[:, None] * nkeys + key).ravel()
    w = np.broadcast_to(b.region_present, key.shape).ravel()
    return np.bincount(flat, weights=w, minlength=b.R * nkeys).reshape(b.R, nkeys).astype(np.int64)


def pages_by_node(b) -> np.ndarray:
    """Resident base pages per (replica, node), recounted from the regions."""
    return _pages_by(b, b.r_node, b.N)


# ====================================================================================== batch
class _Batch:
    """State of R replicas (one per seed) of one workload under one policy."""

    def __init__(self, wl: Workload, policy: Policy, seeds, o: dict, costs: Costs):
        self.wl, self.pol, self.o, self.costs = wl, policy, o, costs
        topo = self.topo = wl.topology
        self.seeds = list(seeds)
        R = self.R = len(self.seeds)
        T, V, NR, N, M = wl.nthreads, wl.nvmas, wl.nregions, topo.nodes, wl.nproc
        self.T, self.V, self.NR, self.N, self.M = T, V, NR, N, M
        self.rng = [np.random.default_rng(s) for s in self.seeds]
        self.dt = o["dt"]
        self.now = 0.0
        self.cpu_node = topo.cpu_node

        # ---- static per-workload arrays
        self.region_vma = wl.region_vma
        self.region_mm = wl.vma_mm[wl.region_vma]
        self.region_class = wl.region_class
        present = wl.region_present.copy()
        self.region_present = present
        self.region_huge = wl.region_huge & o["thp"]
        # one hinting fault counts 1 for a THP, else one per base page (4 KiB semantics)
        self.fault_inc = np.where(self.region_huge, 1, present).astype(np.int64)
        self.vma_first = np.searchsorted(wl.region_vma, np.arange(V + 1))
        self.vma_first_l = self.vma_first.tolist()
        self.mm_vmas = [np.flatnonzero(wl.vma_mm == m) for m in range(M)]
        # per mm: its VMAs as a (first, end) slice when contiguous (they are: address order per
        # process), their bounds, and each skip flag of decide with its last position (-1: none)
        self.mm_vsel = [(int(vm[0]), int(vm[0]) + vm.size)
                        if vm.size and np.array_equal(vm, np.arange(vm[0], vm[0] + vm.size)) else None
                        for vm in self.mm_vmas]
        self.mm_vstart = [wl.vma_start[vm] for vm in self.mm_vmas]
        self.mm_vend = [wl.vma_end[vm] for vm in self.mm_vmas]
        self.mm_vstart_l = [x.tolist() for x in self.mm_vstart]
        self.mm_vend_l = [x.tolist() for x in self.mm_vend]
        self.mm_flags = []
        for vm in self.mm_vmas:
            fl = {}
            for c in (UNSUITABLE, SHARED_RO, INACCESSIBLE):
                mask = wl.vma_code[vm] == c
                fl[c] = (mask, int(np.flatnonzero(mask)[-1]) if mask.any() else -1)
            self.mm_flags.append(fl)
        self._nreasons = len(REASONS)
        self.mm_rss = np.array([present[self.region_mm == m].sum() for m in range(M)], dtype=np.int64)
        self._nrw = np.array([self._nr_scan_windows(m) for m in range(M)], dtype=np.int64)
        self.C = int(wl.region_class.max()) + 1
        # access entries, sorted by class (as built); class -> [start, end) in entry order
        self.E = wl.entry_class.size
        self.cls_start = np.searchsorted(wl.entry_class, np.arange(self.C))
        self.cls_end = np.searchsorted(wl.entry_class, np.arange(self.C), side="right")
        self.max_class_entries = max(1, int((self.cls_end - self.cls_start).max()))
        self.phase_entries = {ph: np.flatnonzero(wl.entry_phase == ph) for ph in (PH_INIT, PH_LOOP)}
        # per phase: entries, their thread, share, class, touch/byte and fixed rate (gathered once)
        self.phase_arrays = {ph: (ent, wl.entry_thread[ent], wl.entry_share[ent], wl.entry_class[ent],
                                  wl.entry_touch_per_byte[ent], wl.entry_fixed_hz[ent])
                             for ph, ent in self.phase_entries.items()}
        # most regions one step's scans can protect: per mm, the budget's 2 MiB regions + 1,
        # one (partial) region per VMA, and the forced retry's VMA
        self.K = int(sum((o["scan_size_mb"] << 8) // REGION_PAGES + 2 + len(v) for v in self.mm_vmas))
        # ground truth: which thread writes which VMA in which phase
        self.writes_vma = np.zeros((T, 4, V), dtype=bool)
        ev = wl.region_vma[np.searchsorted(wl.region_class, wl.entry_class)]
        self.writes_vma[wl.entry_thread, wl.entry_phase, ev] = True
        self.thread_mm = wl.thread_mm
        self.nr_threads = np.bincount(wl.thread_mm, minlength=M)
        self._in_mm = [wl.thread_mm == m for m in range(M)]
        self._thread_mm_onehot = np.stack(self._in_mm, axis=1)              # (T, M) bool
        self._sample_sel = [(wl.thread_mm == m) & ~wl.thread_main for m in range(M)]

        # ---- per-seed draws, fixed order: init node, pid base, CPU permutation
        init_node = np.zeros(R, dtype=np.int64)
        pid_base = np.zeros(R, dtype=np.int64)
        perm = np.zeros((R, topo.ncpus), dtype=np.int64)
        for i, g in enumerate(self.rng):
            init_node[i] = g.integers(N)
            pid_base[i] = g.integers(o["pid_lo"], o["pid_hi"])
            perm[i] = g.permutation(topo.ncpus)
        if o["init_node"] is not None:
            init_node[:] = check_int("init_node", o["init_node"], lo=0, hi=N - 1)
        if o["pid_base"] is not None:
            pid_base[:] = o["pid_base"]
        init_node = init_node.astype(np.int64)
        self.init_node = init_node
        self.tid = (pid_base[:, None] + wl.thread_tid_offset[None, :]).astype(np.int64)
        self.pid8 = self.tid & 0xFF
        # each task's bit in the access-PID maps (history.bit_masks), fixed for the run
        self.tid_word, self.tid_mask = hist.bit_masks(self.tid.astype(np.uint32), policy.width)

        # ---- threads
        node = np.zeros((R, T), dtype=np.int64)
        workers = np.flatnonzero(~wl.thread_main)
        mains = np.flatnonzero(wl.thread_main)
        node[:, workers] = self.cpu_node[perm[:, np.arange(workers.size) % topo.ncpus]]
        # the main threads run on node B (numa02's first touch lands there)
        node[:, mains] = init_node[:, None]
        bound = wl.cpu_bind >= 0
        node[:, bound] = wl.cpu_bind[bound]
        self.node = node
        phase = np.where(wl.phase_bytes[:, 0] > 0, PH_INIT, np.where(wl.phase_bytes[:, 1] > 0, PH_LOOP, PH_DONE))
        phase = np.where(wl.waits_for_main, PH_WAIT, phase)
        self.phase = np.broadcast_to(phase, (R, T)).astype(np.int64).copy()
        self.bytes_left = np.where(self.phase == PH_INIT, wl.phase_bytes[:, 0], wl.phase_bytes[:, 1]).astype(float)
        self.bytes_left = np.where(self.phase == PH_DONE, 0.0, self.bytes_left)
        self.finish = np.where(self.phase == PH_DONE, 0.0, np.nan)
        self.runtime = np.zeros((R, T))
        # clone staggers each new thread's first trigger by 2 ticks (init_numa_balancing)
        self.node_stamp = np.where(wl.thread_main, 0.0, 2 * TICK_S)[None, :].repeat(R, 0)
        self.scan_period = np.full((R, T), o["scan_delay_ms"], dtype=np.int64)
        self.period_max = np.full((R, T), o["scan_period_max_ms"], dtype=np.int64)
        self.task_seq = np.zeros((R, T), dtype=np.int64)
        self.preferred = np.full((R, T), NO_NODE, dtype=np.int64)
        self.migrate_retry = np.zeros((R, T))
        self.has_faults = np.zeros((R, T), dtype=bool)
        self.f_mem = np.zeros((R, T, N, 2))
        self.f_cpu = np.zeros((R, T, N, 2))
        self.b_mem = np.zeros((R, T, N, 2), dtype=np.int64)
        self.b_cpu = np.zeros((R, T, N, 2), dtype=np.int64)
        self.locality = np.zeros((R, T, 3), dtype=np.int64)
        self.last_place_t = np.zeros((R, T))
        self.last_place_run = np.zeros((R, T))
        self.group = np.full((R, T), -1, dtype=np.int64)
        self.kdebt = np.zeros((R, T))
        self.ksys = np.zeros((R, T))

        # ---- mm
        self.mm_next_scan = np.full((R, M), o["scan_delay_ms"] / 1000.0)
        self.mm_offset = np.zeros((R, M), dtype=np.int64)
        self.mm_seq = np.zeros((R, M), dtype=np.int64)

        # ---- VMAs (numab state)
        W = policy.windows
        self.pids, self.pidx = hist.empty((R, V), W, policy.width)
        self.has_state = np.zeros((R, V), dtype=bool)
        self.v_next_scan = np.zeros((R, V))
        self.v_reset = np.zeros((R, V))
        self.v_start_seq = np.zeros((R, V), dtype=np.int64)
        self.v_prev_seq = np.zeros((R, V), dtype=np.int64)
        self.v_select = np.zeros((R, V), dtype=np.int64)
        self.v_scanned = np.zeros((R, V), dtype=bool)    # idle-scan bookkeeping
        self.v_faulted = np.zeros((R, V), dtype=bool)
        # adaptive history (numalab.adaptive): per-VMA or per-mm state
        a = policy.adapt
        self.ad = None if a is None else AD.init_state(a, (R, M) if a.scope == "mm" else (R, V))
        self.v_code = wl.vma_code

        # ---- regions
        init = np.broadcast_to(wl.region_init, (R, NR)).copy()
        init = np.where(init == INIT_B, init_node[:, None], init)
        main_node = node[:, mains[0]] if mains.size else np.zeros(R, dtype=np.int64)
        init = np.where(init == INIT_MAIN, main_node[:, None], init)
        # owner: the first thread writing the region's class, else the mm's main thread
        owner = np.full(self.C, -1, dtype=np.int64)
        first = self.cls_start < self.cls_end
        owner[first] = wl.entry_thread[self.cls_start[first]]
        own_r = owner[wl.region_class]
        mm_main = np.array([mains[wl.thread_mm[mains] == m][0] if (wl.thread_mm[mains] == m).any() else 0
                            for m in range(M)], dtype=np.int64)
        own_r = np.where(own_r < 0, mm_main[self.region_mm], own_r)
        init = np.where(init == INIT_OWNER, node[:, own_r], init)
        self.r_node = init.astype(np.int64)
        self.prot = np.zeros((R, NR), dtype=bool)
        # resident pages per node, and what a node can take (migrate_balanced_pgdat)
        self.node_pages = np.stack([((self.r_node == n) * present[None, :]).sum(axis=1) for n in range(N)], axis=1)
        self.node_cap = int(topo.mem_per_node_GiB * (1 << 30) // 4096)
        self.prot_idx = np.zeros(0, dtype=np.int64)           # flat r*NR + region, sorted
        self.prot_lam = np.zeros(0, dtype=np.int64)           # aligned: flat r*C + class of the region
        self.prot_thresh = np.zeros(0)                        # aligned: r_thresh of the region
        self._prot_of = self.prot_idx                         # the prot_idx they are aligned with
        self.r_thresh = np.zeros((R, NR))                     # Exp(1) hazard threshold while protected
        self.r_hazard = np.zeros((R, NR))                     # hazard accumulated since protected
        self.r_sel = np.zeros((R, NR))                        # uniform choosing the faulting thread
        self.last_pid8 = np.full((R, NR), PID_UNSET, dtype=np.int64)
        self.last_set = np.zeros((R, NR), dtype=bool)
        self.last_node = np.zeros((R, NR), dtype=np.int64)
        self.last_task = np.full((R, NR), -1, dtype=np.int64)
        # regions per (class, node) -- the node split of each access class
        self.cls_node = np.zeros((R, self.C, N), dtype=np.int64)
        for n in range(N):
            self.cls_node[:, :, n] = np.stack([np.bincount(wl.region_class, weights=(init[i] == n), minlength=self.C)
                                               for i in range(R)]).astype(np.int64)

        # ---- counters
        self.cnt = {k: np.zeros(R, dtype=np.int64) for k in COUNTER_NAMES}
        self.reasons = np.zeros((R, len(REASONS)), dtype=np.int64)
        self.syst = np.full(R, wl.zero_bytes_init / (costs.zero_GBps * 1e9))
        self.done = np.zeros(R, dtype=bool)
        self.elsp = np.full(R, np.nan)
        self.series = {k: [] for k in ("pages_node", "local_fraction", "scan_period", "faults",
                                        "converged_fraction")}
        self.series_t = []
        # the samples count pages per (class, node) from cls_node when every region of a class
        # has the same resident pages and lies in one mm (true of every built-in workload);
        # otherwise they recount the regions
        cls_pp = np.zeros(self.C)                                  # pages of one region, per class
        cls_pp[wl.region_class] = present
        cls_mm = np.zeros(self.C, dtype=np.int64)
        cls_mm[wl.region_class] = self.region_mm
        uniform = np.array_equal(cls_pp[wl.region_class], present) and \
            np.array_equal(cls_mm[wl.region_class], self.region_mm)
        self._cls_pp = cls_pp if uniform else None
        self._cls_mm = cls_mm if uniform else None
        self._conv_acc = np.zeros((R, self.C, N))                  # access rate per (class, node)
        self._conv_stale = np.ones(R, dtype=bool)
        self._fault_acc = np.zeros(R, dtype=np.int64)
        self._local_acc = np.zeros(R)
        self._local_w = np.zeros(R)
        self.total_pages = (present[None, :] * np.ones((R, 1), dtype=np.int64)).sum(axis=1)
        self.steps = 0
        self._want = None
        self._block = None
        self._block_pos = 0
        self._gs = None
        self._gs_sum = None
        # optional observer of task_numa_work runs and VMA visits (numalab.tracing); it only
        # reads engine state, so a traced run gives the same numbers as an untraced one
        self.tracer = None
        self.dirty = np.ones(R, dtype=bool)
        self.frac = np.zeros((R, T, N))
        self._rt_base = np.arange(R * T, dtype=np.int64).reshape(R, T) * N   # flat (r, t, 0) of frac
        self.speed = np.zeros((R, T))
        self.cum = np.zeros((R, self.E + 1))
        self.lam_c = np.zeros((R, self.C))

    # ------------------------------------------------------------------ helpers
    def running(self):
        return (self.phase == PH_INIT) | (self.phase == PH_LOOP)

    def thread_frac(self, rows):
        """(n, T, N): share of each thread's written bytes on each node (active phase), for
        the replicas ``rows``. Only entries of phases some thread of these rows is in are
        looked at (after numa01's init, its whole-buffer entries drop out)."""
        T, N = self.T, self.N
        n_ = rows.size
        phase = self.phase[rows]
        out = np.zeros((n_, T, N))
        for ph, (_, et, e_share, e_class, _, _) in self.phase_arrays.items():
            if not (phase == ph).any():
                continue
            e_active = phase[:, et] == ph                                               # (n, Ep)
            idx = (np.arange(n_)[:, None] * T + et[None, :]).ravel()
            share = e_active * e_share[None, :]
            cn = self.cls_node[rows[:, None], e_class[None, :]]                         # (n, Ep, N)
            for n in range(N):
                out[:, :, n] += np.bincount(idx, weights=(share * cn[:, :, n]).ravel(),
                                            minlength=n_ * T).reshape(n_, T)
        tot = out.sum(axis=2, keepdims=True)
        # a thread with no bytes (stack-only) counts as local
        loc = (np.arange(N)[None, None, :] == self.node[rows][:, :, None]).astype(float)
        return np.where(tot > 0, out / np.where(tot > 0, tot, 1.0), loc)

    def entry_rates(self, rows, speed):
        """(n, E) touch rate of one region of the entry's class by the entry's thread, 1/s
        (0 unless the thread is running in the entry's phase)."""
        phase = self.phase[rows]
        live = ~self.done[rows][:, None]
        out = np.zeros((rows.size, self.E))
        for ph, (ent, et, _, _, e_tpb, e_fhz) in self.phase_arrays.items():
            if not (phase == ph).any():
                continue
            active = (phase[:, et] == ph) & live
            out[:, ent] = np.where(active, speed[:, et] * e_tpb[None, :] + e_fhz[None, :], 0.0)
        return out

    def refresh(self):
        """Recompute speeds, node shares and touch rates of the replicas whose placement,
        phases or memory changed since the last step (row-wise: batch-independent)."""
        rows = np.flatnonzero(self.dirty)
        if rows.size == 0:
            return
        running = self.running()[rows] & ~self.done[rows][:, None]
        frac = self.thread_frac(rows)
        speed = progress_rates(self.costs, self.topo, self.node[rows], frac, running)
        self.frac[rows] = frac
        self.speed[rows] = speed
        rates = self.entry_rates(rows, speed)
        cum = np.zeros((rows.size, self.E + 1))
        np.cumsum(rates, axis=1, out=cum[:, 1:])
        self.cum[rows] = cum
        self.lam_c[rows] = cum[:, self.cls_end] - cum[:, self.cls_start]
        self.dirty[rows] = False
        self._conv_stale[rows] = True

    def bind_policy(self):
        """(R, T) task runs under an MPOL_BIND task policy (no MOF): its faults do not migrate
        and, when it scans, every VMA is unsuitable (vma_policy_mof)."""
        return ((self.phase == PH_INIT) & self.wl.init_bind[None, :]) | self.wl.mem_bind[None, :]

    # ------------------------------------------------------------------ scan period (§3.5)
    def _nr_scan_windows(self, m):
        per = self.o["scan_size_mb"] << 8
        rss = self.mm_rss[m] or per
        return -(-rss // per)

    def task_scan_min(self, mm_of_t):
        o = self.o
        windows = 2560 // o["scan_size_mb"] if o["scan_size_mb"] < 2560 else 1
        floor = 1000 // windows
        return np.maximum(floor, o["scan_period_min_ms"] // self._nrw[mm_of_t])

    def group_stats(self):
        """Group sums of member statistics: (R, T(gid), N, 2) mem and cpu, and sizes (R, T).
        Cached until fault statistics or group membership change."""
        if self._gs is None:
            self._gs = self._group_stats()
        return self._gs

    def _group_stats(self):
        R, T, N = self.R, self.T, self.N
        gm, gc, size = self._group_sums(self.group, self.f_mem, self.f_cpu)
        return gm.reshape(R, T, N, 2), gc.reshape(R, T, N, 2), size

    def _group_sums(self, g, f_mem, f_cpu):
        """Per-group sums of the member statistics of the replicas of ``g`` (n, T): flat
        (n*T, 2N) mem and cpu, and the sizes (n, T). One bincount per array over (group,
        column) bins; each bin adds its members in thread order."""
        n, T = g.shape
        N2 = 2 * self.N
        has = g >= 0
        flat = (np.arange(n)[:, None] * T + np.where(has, g, 0)).ravel()
        w = has.ravel().astype(float)
        key = (flat[:, None] * N2 + np.arange(N2)[None, :]).ravel()
        gm = np.bincount(key, weights=(f_mem.reshape(n * T, N2) * w[:, None]).ravel(), minlength=n * T * N2)
        gc = np.bincount(key, weights=(f_cpu.reshape(n * T, N2) * w[:, None]).ravel(), minlength=n * T * N2)
        size = np.bincount(flat, weights=w, minlength=n * T).reshape(n, T).astype(np.int64)
        return gm.reshape(n * T, N2), gc.reshape(n * T, N2), size

    def _group_node_sums(self, gm, gc):
        """``gm.sum(-1)``, ``gc.sum(-1)`` (R, T, N), cached for the current group_stats arrays."""
        c = self._gs_sum
        if c is None or c[0] is not gm or c[1] is not gc:
            c = self._gs_sum = (gm, gc, gm.sum(axis=-1), gc.sum(axis=-1))
        return c[2], c[3]

    def _group_stats_rows(self, rows):
        """group_stats after the fault statistics of replicas ``rows`` changed (membership
        unchanged): those rows are recomputed as :meth:`_group_stats` does (same sums in the same
        order), into new arrays -- references to the old ones keep their values. The cached
        node sums follow row by row."""
        if self._gs is None:
            return self.group_stats()
        gm0, gc0, size = self._gs
        n, T, N = rows.size, self.T, self.N
        gm_r, gc_r, _ = self._group_sums(self.group[rows], self.f_mem[rows], self.f_cpu[rows])
        gm, gc = gm0.copy(), gc0.copy()
        gm[rows] = gm_r.reshape(n, T, N, 2)
        gc[rows] = gc_r.reshape(n, T, N, 2)
        c = self._gs_sum
        if c is not None and c[0] is gm0 and c[1] is gc0:
            sm, sc = c[2].copy(), c[3].copy()
            sm[rows] = gm[rows].sum(axis=-1)
            sc[rows] = gc[rows].sum(axis=-1)
            self._gs_sum = (gm, gc, sm, sc)
        self._gs = (gm, gc, size)
        return self._gs

    def _shared_scale(self, base, gm, size, sel):
        r, t = sel
        g = self.group[r, t]
        s = np.floor(gm[r, g, :, 0].sum(axis=-1)).astype(np.int64)
        p = np.floor(gm[r, g, :, 1].sum(axis=-1)).astype(np.int64)
        return base * size[r, g] * (s + 1) // (p + s + 1)

    def task_scan_start(self, sel, gm, size):
        r, t = sel
        smin = self.task_scan_min(self.thread_mm[t])
        ing = self.group[r, t] >= 0
        if not ing.any():
            return smin
        per = np.where(ing, self._shared_scale(smin, gm, size, sel) if True else smin, smin)
        return np.maximum(smin, per)

    def task_scan_max(self, sel, gm, size):
        r, t = sel
        smin = self.task_scan_min(self.thread_mm[t])
        nrw = self._nrw[self.thread_mm[t]]
        smax = self.o["scan_period_max_ms"] // nrw
        ing = self.group[r, t] >= 0
        if ing.any():
            smax = np.where(ing, np.maximum(smax, self._shared_scale(smax, gm, size, sel)), smax)
        return np.maximum(smin, smax)

    # ------------------------------------------------------------------ one step
    def step(self):
        R = self.R
        dt = self.dt
        t0 = self.now
        t1 = t0 + dt
        live = ~self.done
        # 1. draws (fixed order and shapes for every replica, finished or not)
        u_prot, u_task, u_lb = self.draws()
        self._u_prot = u_prot
        self._slot = np.zeros(R, dtype=np.int64)

        # 2. progress
        running = self.running() & live[:, None]
        self.refresh()
        speed, frac = self.speed, self.frac
        self._record_locality(speed, frac)
        used_k = np.minimum(self.kdebt, dt)
        self.kdebt -= used_k
        work_t = np.where(running, dt - used_k, 0.0)
        self.runtime += np.where(running, dt, 0.0)
        self._advance(speed, work_t, used_k, t0, running)

        # 3. scan triggering and task_numa_work
        self._scan_trigger(t0, t1, running, u_task)

        # 4. hinting faults on protected regions
        self._faults(speed, t1)

        # 5. task placement
        self._move_tasks(u_task, t1)
        # 5b. the load balancer's cross-node moves
        self._lb_moves(u_lb)

        self.now = t1
        self.steps += 1
        newly = live & ~self.running().any(axis=1) & np.all(self.phase == PH_DONE, axis=1)
        if newly.any():
            self.elsp[newly] = np.nanmax(self.finish[newly], axis=1) + self.costs.harness_overhead_s
            self.done |= newly
            self.dirty |= newly
        if self.o["check_invariants"] and self.steps % 20 == 0:
            self._check()

    def draws(self):
        """This step's random numbers: per replica, ``2*K + T`` float64 uniforms from its own
        Generator -- ``u_prot`` (K, 2): one (threshold, selector) pair for each region the
        step's scans make PROT_NONE, in protection order (K bounds what one step can protect);
        then ``u_task`` (T,). Drawn in blocks of ``DRAW_BLOCK`` steps (one ``random((k, n))``
        call), which yields exactly the same stream as one ``random(n)`` call per step: a
        float64 uniform takes one 64-bit output."""
        K, T = self.K, self.T
        n = 2 * K + 2 * T
        if self._block is None or self._block_pos >= self._block.shape[1]:
            if self._block is None:
                self._block = np.empty((self.R, DRAW_BLOCK, n))                     # (R, k, n), reused
            for i, g in enumerate(self.rng):
                g.random(out=self._block[i])
            self._block_pos = 0
        b = self._block[:, self._block_pos]
        self._block_pos += 1
        return b[:, :2 * K].reshape(self.R, K, 2), b[:, 2 * K:2 * K + T], b[:, 2 * K + T:]

    # ---- 2. progress
    def _advance(self, speed, work_t, used_k, t0, running):
        done_bytes = speed * work_t
        left = self.bytes_left - done_bytes
        fin = running & (left <= 0)
        if fin.any():
            r, t = np.nonzero(fin)
            spent = np.where(speed[r, t] > 0, np.maximum(self.bytes_left[r, t], 0.0) / np.maximum(speed[r, t], 1e-30),
                             0.0)
            tfin = t0 + used_k[r, t] + spent
            leftover = np.maximum(work_t[r, t] - spent, 0.0)
            ph = self.phase[r, t]
            nxt_loop = (ph == PH_INIT) & (self.wl.phase_bytes[t, 1] > 0)
            # init -> loop carries the rest of the step at the same speed
            self.phase[r, t] = np.where(nxt_loop, PH_LOOP, PH_DONE)
            left[r, t] = np.where(nxt_loop, self.wl.phase_bytes[t, 1] - leftover * speed[r, t], 0.0)
            self.finish[r, t] = np.where(nxt_loop, np.nan, tfin)
            self.dirty[r] = True
        self.bytes_left = np.where(running, left, self.bytes_left)
        # workers waiting for their main thread's init
        wait = self.phase == PH_WAIT
        if wait.any():
            mains = np.flatnonzero(self.wl.thread_main)
            main_of_mm = np.zeros(self.M, dtype=np.int64)
            main_of_mm[self.thread_mm[mains]] = mains
            main_done = self.phase[:, main_of_mm[self.thread_mm]] == PH_DONE
            go = wait & main_done
            self.phase[go] = PH_LOOP
            self.dirty[go.any(axis=1)] = True

    def _record_locality(self, speed, frac):
        loc = frac.take(self._rt_base + self.node)                # frac[r, t, node[r, t]]
        self._local_acc += (speed * loc).sum(axis=1) * self.dt
        self._local_w += speed.sum(axis=1) * self.dt

    # ---- 3. scanning
    def _scan_trigger(self, t0, t1, running, u_task):
        period_s = self.scan_period / 1000.0
        thresh = self.node_stamp + period_s
        # CPU time grows at 1 s/s while running: the crossing instant within this step
        trig = running & (self.runtime > thresh)
        if not trig.any():
            return
        before = self.runtime - np.where(running, self.dt, 0.0)
        # the tick (jiffy) at which the threshold is passed: ticks make ties, as in the kernel
        cross = np.ceil((t0 + (thresh - before)) / TICK_S - 1e-6)
        # node_stamp == 0 (a process's first thread, never triggered): its period becomes
        # task_scan_start before node_stamp advances by it (task_tick_numa)
        first = trig & (self.node_stamp == 0)
        if first.any():
            r0, t0_ = np.nonzero(first)
            self.scan_period[r0, t0_] = self.task_scan_min(self.thread_mm[t0_])
            period_s = self.scan_period / 1000.0
        self.node_stamp = np.where(trig, self.node_stamp + period_s, self.node_stamp)
        # eligible triggers of every mm at once (a scan of mm m changes no other mm's
        # numa_next_scan), then the mms that have any, in index order
        nxt = np.round(self.mm_next_scan / TICK_S)                       # (R, M) ticks
        elig_all = trig & (cross >= nxt[:, self.thread_mm])
        if not elig_all.any():
            return
        if self.M == 1:
            mms = [0]
        else:
            mms = np.flatnonzero(elig_all.any(axis=0) @ self._thread_mm_onehot).tolist()
        for m in mms:
            elig = elig_all & self._in_mm[m]
            rows = np.flatnonzero(elig.any(axis=1))
            if rows.size == 0:
                continue
            key = np.where(elig[rows], cross[rows], np.inf)
            best = key.min(axis=1, keepdims=True)
            tie = np.where(key == best, u_task[rows], np.inf)
            winner = tie.argmin(axis=1)
            when = best[:, 0] * TICK_S
            # CAS: numa_next_scan = now + winner's period; the winner lets others win next
            self.mm_next_scan[rows, m] = when + self.scan_period[rows, winner] / 1000.0
            self.node_stamp[rows, winner] += 2 * TICK_S
            ktime = self._task_numa_work(rows, m, winner, when)
            # task_numa_work's own cost: charged to the scanner, and 32x to its node_stamp
            self.kdebt[rows, winner] += ktime
            self.ksys[rows, winner] += ktime
            self.syst[rows] += ktime
            self.node_stamp[rows, winner] += 32 * ktime

    def _vgather(self, arr, rows, m, lo):
        """``arr[rows][:, vmas of mm m from position lo]`` as one gather (a copy)."""
        sel = self.mm_vsel[m]
        if sel is not None:
            return arr[rows, sel[0] + lo:sel[1]]
        return arr[rows[:, None], self.mm_vmas[m][lo:][None, :]]

    def _evaluate(self, rows, m, scanner, now, forced, lo=0):
        """Tentative per-VMA state and decisions for the scanning rows, for the mm's VMAs from
        position ``lo`` on (no walk of these rows starts earlier): shape (n, Vm - lo)."""
        pol, o = self.pol, self.o
        vm = self.mm_vmas[m][lo:]
        n, nv = rows.size, vm.size
        now_v = np.asarray(now, dtype=float)
        if now_v.shape != (n,):
            now_v = np.broadcast_to(now_v, (n,))
        now = now_v[:, None]
        seq = self.mm_seq[rows, m]
        off = self.mm_offset[rows, m]
        # VMA flags of decide: None (= all False) when no VMA from lo on has them
        binds = ((self.phase[rows, scanner] == PH_INIT) & self.wl.init_bind[scanner]) | self.wl.mem_bind[scanner]
        flags = self.mm_flags[m]
        unsuitable = shared_ro = inacc = None
        if flags[UNSUITABLE][1] >= lo or binds.any():
            unsuitable = flags[UNSUITABLE][0][lo:][None, :] | binds[:, None]
        if flags[SHARED_RO][1] >= lo:
            shared_ro = flags[SHARED_RO][0][lo:]
        if flags[INACCESSIBLE][1] >= lo:
            inacc = flags[INACCESSIBLE][0][lo:]
        bad = None
        for f in (unsuitable, shared_ro, inacc):
            if f is not None:
                bad = f if bad is None else bad | f
        suit = np.True_ if bad is None else ~bad
        has = self._vgather(self.has_state, rows, m, lo)
        pids = self._vgather(self.pids, rows, m, lo)
        pidx = self._vgather(self.pidx, rows, m, lo)
        tid = self.tid[rows, scanner].astype(np.uint32)
        st = dict(has=has, next_scan=self._vgather(self.v_next_scan, rows, m, lo),
                  reset=self._vgather(self.v_reset, rows, m, lo),
                  start_seq=self._vgather(self.v_start_seq, rows, m, lo),
                  prev_seq=self._vgather(self.v_prev_seq, rows, m, lo),
                  select=self._vgather(self.v_select, rows, m, lo), pids=pids, pidx=pidx)
        if pol.numab_state:
            new = suit & ~has
            delay = o["scan_delay_ms"] / 1000.0
            any_new = bool(new.any())
            if any_new:
                st["next_scan"] = np.where(new, now + delay, st["next_scan"])
                st["reset"] = np.where(new, st["next_scan"] + 4 * delay, st["reset"])
                st["start_seq"] = np.where(new, seq[:, None], st["start_seq"])
                st["prev_seq"] = np.where(new, seq[:, None] - 1, st["prev_seq"])
                st["select"] = np.where(new, 0, st["select"])
                pids[new] = 0
                pidx[new] = 0
                st["has"] = has | new
            st["init"] = new
            seq_on = (seq != 0)[:, None]
            not_delayed = suit & ~(seq_on & (now < st["next_scan"]))
            due = not_delayed & seq_on & (now > st["reset"])
            a, wa = pol.adapt, None
            if a is not None:
                if a.scope == "mm":   # popcount: choose at a pass boundary, before the VMA loop
                    mmask = np.zeros(self.mm_seq.shape, dtype=bool)
                    mmask[rows, m] = True
                    self.ad = AD.popcount_begin(a, self.ad, mmask, numa_scan_seq=self.mm_seq,
                                                nr_threads=np.broadcast_to(self.nr_threads, self.mm_seq.shape))
                    wa = AD.effective_windows(a, self.ad)[rows, m]
                    st["ad_seen"] = not_delayed & st["has"]
                else:
                    sad = AD.reset_state(a, {k: self._vgather(v, rows, m, lo) for k, v in self.ad.items()}, new)
            if pol.rotate_before_access and due.any():
                _rotate(pids, pidx, due, pol.rotation)
                st["reset"] = np.where(due, st["reset"] + 4 * delay, st["reset"])
                if a is not None and a.rule == "span":
                    sad = AD.span_rotate(a, sad, due, now_ms=now * 1000.0, reset_period_ms=4 * o["scan_delay_ms"])
            if a is not None and a.scope == "vma":
                wa = AD.effective_windows(a, sad)
            allowed, reason, sel = decide_unchecked(
                pol, pids_active=pids, idx=pidx, scanner_tid=tid, numa_scan_seq=seq,
                start_scan_seq=st["start_seq"], prev_scan_seq=st["prev_seq"], scan_offset=off,
                vm_start=self.mm_vstart[m][lo:], next_scan=st["next_scan"] * 1000.0,
                now=now_v * 1000.0, nr_threads=self.nr_threads[m],
                forced=bool(forced), vma_scan_select=st["select"],
                vm_end=self.mm_vend[m][lo:],
                unsuitable=unsuitable, shared_ro=shared_ro, inaccessible=inacc, windows_active=wa)
            if a is not None and a.rule == "grow-shrink":
                own, others = AD.visit_events(pids, pidx, tid, wa, rotation=pol.rotation, width=pol.width,
                                              grow_others=a.grow_others)
                sad = AD.grow_shrink_visit(a, sad, own_bit=own, others_recent=others,
                                           tested=AD.reached_pid_test(reason), scanned=allowed)
            if not pol.rotate_before_access:
                due2 = due & allowed
                if due2.any():
                    _rotate(pids, pidx, due2, pol.rotation)
                    st["reset"] = np.where(due2, st["reset"] + 4 * delay, st["reset"])
                    if a is not None and a.rule == "span":
                        sad = AD.span_rotate(a, sad, due2, now_ms=now * 1000.0,
                                             reset_period_ms=4 * o["scan_delay_ms"])
            if a is not None and a.scope == "vma":
                st["ad"] = sad
            if sel is not None:
                st["select"] = np.asarray(sel, dtype=np.int64)
        else:
            reason = unfiltered_reasons((n, nv), unsuitable=unsuitable, shared_ro=shared_ro, inaccessible=inacc)
            allowed = ALLOWED[reason]
        return allowed, reason, st

    def _task_numa_work(self, rows, m, scanner, when):
        """task_numa_work for mm ``m`` in ``rows`` run by thread ``scanner`` (per row) at ``when``.
        Returns the kernel seconds of each run."""
        vm = self.mm_vmas[m]
        vstart = self.mm_vstart_l[m]
        vend = self.mm_vend_l[m]
        ktime = np.zeros(rows.size)
        self._new_prot = []
        self.cnt["scan_runs"][rows] += 1
        if self.tracer is not None:
            self.tracer.run_begin(self, rows, m, scanner, when)
        # the first VMA ending after the offset; none -> reset_ptenuma_scan first
        last_end = vend[-1]
        off = self.mm_offset[rows, m]
        wrap = off >= last_end
        if wrap.any():
            self.mm_seq[rows[wrap], m] += 1
            self.mm_offset[rows[wrap], m] = 0
        now = when
        vend_a = self.mm_vend[m]
        lo = int(np.searchsorted(vend_a, self.mm_offset[rows, m].min(), side="right"))
        allowed, reason, st = self._evaluate(rows, m, scanner, now, False, lo)
        budget0 = self.o["scan_size_mb"] << 8
        retry = []
        for i, r in enumerate(rows.tolist()):
            out = self._walk(r, m, int(scanner[i]), vm, vstart, vend, allowed[i], reason[i], st, i, float(now[i]),
                             budget0, forced=False, budget=budget0, virt=8 * budget0, lo=lo)
            ktime[i] += out[0]
            if out[1]:
                retry.append((i, out[2], out[3]))
        if retry:
            # v6.7 vma_pids_forced: one more VMA without the PID test, from mm_offset
            ii = np.array([x[0] for x in retry])
            rr = rows[ii]
            past = self.mm_offset[rr, m] >= last_end
            self.mm_seq[rr[past], m] += 1
            self.mm_offset[rr[past], m] = 0
            lo2 = int(np.searchsorted(vend_a, self.mm_offset[rr, m].min(), side="right"))
            a2, rs2, st2 = self._evaluate(rr, m, scanner[ii], now[ii], True, lo2)
            for j, (i, b_left, v_left) in enumerate(retry):
                out2 = self._walk(int(rr[j]), m, int(scanner[i]), vm, vstart, vend, a2[j], rs2[j], st2, j,
                                  float(now[i]), budget0, forced=True, budget=b_left, virt=v_left, lo=lo2)
                ktime[i] += out2[0]
        if self._new_prot:
            self._sync_prot()
            new = np.concatenate(self._new_prot)
            nr, nq = np.divmod(new, self.NR)
            allidx = np.concatenate([self.prot_idx, new])
            order = np.argsort(allidx, kind="stable")          # the sorted flat index (unique)
            self.prot_idx = self._prot_of = allidx[order]
            self.prot_lam = np.concatenate([self.prot_lam, nr * self.C + self.region_class[nq]])[order]
            self.prot_thresh = np.concatenate([self.prot_thresh, self.r_thresh.take(new)])[order]
        if self.tracer is not None:
            self.tracer.run_end(self, rows, m, ktime, rows[[i for i, _, _ in retry]] if retry else rows[:0])
        return ktime

    def _walk(self, r, m, scanner, vm, vstart, vend, allowed, reason, st, i, now, budget0, *, forced, budget, virt,
              lo=0):
        """The VMA loop of task_numa_work for one replica (spec §3.2); commits the state of
        every VMA it visits. Returns (kernel time, whether the forced retry is due, the
        remaining budget, the remaining virtual cap).

        Skipped VMAs change nothing but counters, so the loop steps over the allowed VMAs
        only and books the skipped ones of the visited range ``[k0, k_end)`` at once."""
        pol = self.pol
        seq = int(self.mm_seq[r, m])
        start = int(self.mm_offset[r, m])
        nvm = len(vm)
        k0 = bisect_right(vend, start)
        pte = huge = 0
        virt_walked = 0
        changed_runs = 0
        stopped = broke = False
        newly = []
        completed_v = []
        k_end = nvm
        present, is_huge, prot_r = self.region_present, self.region_huge, self.prot[r]
        j0 = k0 - lo
        for k in (np.flatnonzero(allowed[j0:]) + k0).tolist():
            v = int(vm[k])
            # idle-scan bookkeeping: the previous scan of this VMA took no fault since
            if self.v_scanned[r, v] and not self.v_faulted[r, v]:
                self.cnt["idle_scans"][r] += 1
            self.v_scanned[r, v] = False
            self.v_faulted[r, v] = False
            vs, ve = vstart[k], vend[k]
            s = max(start, vs)
            ra, rb = self.vma_first_l[v], self.vma_first_l[v + 1]
            completed = False
            while True:
                end = min(-(-(s + budget) // REGION_PAGES) * REGION_PAGES, ve)
                # regions of this chunk: [s, end) is region-aligned (VMAs start on 2 MiB)
                q0 = ra + (s - vs) // REGION_PAGES
                q1 = min(ra + -(-(end - vs) // REGION_PAGES), rb)
                chg = (present[q0:q1] > 0) & ~prot_r[q0:q1]
                if chg.any():
                    idx = np.flatnonzero(chg) + q0
                    prot_r[idx] = True
                    newly.append(idx)
                    pte += int(present[idx].sum())
                    huge += int(is_huge[idx].sum())
                    budget -= end - s
                    changed_runs = 1
                    self.v_scanned[r, v] = True
                virt -= end - s
                virt_walked += end - s
                s = end
                if budget <= 0 or virt <= 0:
                    stopped = True
                    break
                if end == ve:
                    completed = True
                    break
            start = s
            if stopped:
                broke, k_end = True, k + 1
                break
            if completed and pol.numab_state:
                completed_v.append(v)
            if forced:
                broke, k_end = True, k + 1
                break
        pids_skipped = False
        if k_end > k0:
            # every visited VMA counts its reason; the skipped ones do their bookkeeping
            seg = reason[j0:k_end - lo]
            if self.tracer is not None:
                self.tracer.visits(self, r, m, k0, k_end, seg, int(self.mm_offset[r, m]), forced)
            self.reasons[r] += np.bincount(seg, minlength=self._nreasons)
            sc = np.flatnonzero(seg == CODE["seq_completed"])
            if sc.size:
                self.mm_offset[r, m] = vend[k0 + int(sc[-1])]
            pid_skip = (seg == CODE["pid_inactive"]) | (seg == CODE["disjoint_wait"])
            if pid_skip.any():
                pids_skipped = True
                # ground truth: the scanner writes this VMA in its current phase
                vs_ = vm[k0:k_end][pid_skip]
                nfs = int(np.count_nonzero(self.writes_vma[scanner, self.phase[r, scanner], vs_]))
                if nfs:
                    self.cnt["false_skips"][r] += nfs
            if pol.numab_state:
                self._commit_visits(r, m, k0, k_end, st, i, lo)
                if completed_v:
                    self.v_prev_seq[r, completed_v] = seq
        ran_off = not broke
        retry = ran_off and not forced and pids_skipped and pol.forced_one
        if not ran_off:
            self.mm_offset[r, m] = start
        elif not retry:
            self.mm_seq[r, m] += 1
            self.mm_offset[r, m] = 0
        if newly:
            idx = np.concatenate(newly) if len(newly) > 1 else newly[0]
            k0 = int(self._slot[r])
            k1 = k0 + idx.size
            if k1 > self.K:
                raise EngineInvariantError(f"{k1} regions protected in one step; the draw bound K={self.K}")
            u = self._u_prot[r, k0:k1]
            self._slot[r] = k1
            self.r_thresh[r, idx] = -np.log1p(-u[:, 0])
            self.r_hazard[r, idx] = 0.0
            self.r_sel[r, idx] = u[:, 1]
            self._new_prot.append(r * self.NR + idx)
        self.cnt["numa_pte_updates"][r] += pte
        self.cnt["numa_huge_pte_updates"][r] += huge
        kt = self.costs.scan_time_s(pte, huge, virt_walked, changed_runs)
        return kt, retry, budget, virt

    def _commit_visits(self, r, m, k0, k1, st, i, lo=0):
        """Make the tentative numab state of the visited VMAs (positions ``[k0, k1)`` of mm
        ``m``) real (lazy init, rotation, select counter). ``prev_scan_seq`` of completed VMAs
        is written by the walk itself."""
        sel = self.mm_vsel[m]
        varr = self.mm_vmas[m][k0:k1]
        v = slice(sel[0] + k0, sel[0] + k1) if sel is not None else varr
        ks = slice(k0 - lo, k1 - lo)
        self.v_prev_seq[r, v] = np.where(st["init"][i, ks], st["prev_seq"][i, ks], self.v_prev_seq[r, v])
        self.has_state[r, v] = st["has"][i, ks]
        self.v_next_scan[r, v] = st["next_scan"][i, ks]
        self.v_reset[r, v] = st["reset"][i, ks]
        self.v_start_seq[r, v] = st["start_seq"][i, ks]
        self.v_select[r, v] = st["select"][i, ks]
        self.pids[r, v] = st["pids"][i, ks]
        self.pidx[r, v] = st["pidx"][i, ks]
        if "ad" in st:                       # adaptive history, per VMA
            for key, val in st["ad"].items():
                self.ad[key][r, v] = val[i, ks]
        elif "ad_seen" in st:                # popcount: OR the visited VMAs' windows into the mm
            seen = varr[st["ad_seen"][i, ks]]
            if seen.size:
                self.ad["pids_seen"][r, m] |= np.bitwise_or.reduce(self.pids[r, seen].reshape(-1, self.pids.shape[-1]), axis=0)

    # ---- 4. faults
    def _faults(self, speed, now):
        """Protected regions accumulate hazard ``lambda_c * dt``; a region faults in the step its
        hazard reaches its Exp(1) threshold (an inhomogeneous Poisson first touch)."""
        if self.prot_idx.size == 0:
            return
        wl = self.wl
        NR = self.NR
        cum, lam_c = self.cum, self.lam_c                                  # rates at the step's start
        self._sync_prot()
        pi = self.prot_idx
        # prot_lam (flat (replica, class) index) and prot_thresh are kept aligned with prot_idx
        lam = lam_c.take(self.prot_lam)
        hz = self.r_hazard.ravel()                      # flat views: 1-D takes are cheaper
        h = hz[pi] + lam * self.dt
        hz[pi] = h
        hit = (h >= self.prot_thresh) & (lam > 0)
        if not hit.any():
            return
        hi = np.flatnonzero(hit)
        hi = hi[~self.done[pi[hi] // NR]]
        if hi.size == 0:
            return
        fr, freg = np.divmod(pi[hi], NR)
        fc = self.region_class[freg]
        target = cum[fr, self.cls_start[fc]] + self.r_sel[fr, freg] * lam[hi]
        # the entry whose cumulative-rate interval holds the target (searchsorted within the
        # class's segment, written as a count so it is row-wise and batch-independent)
        a, z = self.cls_start[fc], self.cls_end[fc]
        # only as many columns as the widest faulting class needs (the rest are masked anyway)
        width = int((z - a).max())
        if width <= 1:
            e = a
        else:
            j = np.arange(width - 1)
            pos = np.minimum(a[:, None] + 1 + j[None, :], self.E)
            le = (cum[fr[:, None], pos] <= target[:, None]) & (j[None, :] < (z - a - 1)[:, None])
            e = a + le.sum(axis=1)
        ft = wl.entry_thread[e]
        keep = np.ones(pi.size, dtype=bool)
        keep[hi] = False
        self.prot_idx = self._prot_of = pi[keep]
        self.prot_lam = self.prot_lam[keep]
        self.prot_thresh = self.prot_thresh[keep]
        self.prot[fr, freg] = False
        self._handle_faults(fr, freg, ft, now)

    def _handle_faults(self, fr, freg, ft, now):
        """numa_migrate_check + migration + task_numa_fault for a batch of faults (sorted by
        replica, region)."""
        wl = self.wl
        R, T, N = self.R, self.T, self.N
        pol = self.pol
        # flat (replica, thread) and (replica, region) indices: 1-D takes are cheaper
        rt = fr * T + ft
        rq = fr * self.NR + freg
        fv = self.region_vma[freg]
        cn = self.node.take(rt)
        fn = self.r_node.take(rq)
        pages = self.region_present[freg]
        # PID bit, when the VMA has numab state (history.set_pid_bits without its argument
        # checks: the indices are the engine's own)
        if pol.numab_state:
            hs = self.has_state.take(fr * self.V + fv)
            if hs.any():
                hr, hv = fr[hs], fv[hs]
                rth = rt[hs]
                word, mask = self.tid_word.take(rth), self.tid_mask.take(rth)
                window = self._pid_window(hr, hv)
                np.bitwise_or.at(self.pids, (hr, hv, window, word), mask)
        self.v_faulted[fr, fv] = True
        if self.ad is not None and pol.adapt.rule == "grow-shrink" and pol.numab_state and hs.any():
            self.ad = AD.grow_shrink_fault(pol.adapt, self.ad, (fr[hs], fv[hs]))
        inc = self.fault_inc[freg]
        local = fn == cn
        np.add.at(self.cnt["numa_hint_faults"], fr, inc)
        np.add.at(self.cnt["numa_hint_faults_local"], fr, np.where(local, inc, 0))
        kt = self.costs.hint_fault_us * 1e-6 * inc
        # last_cpupid as read before the filter
        last8 = self.last_pid8.take(rq)
        lset = self.last_set.take(rq)
        lnode = self.last_node.take(rq)
        ltask = self.last_task.take(rq)
        my8 = self.pid8.take(rt)
        gm, gc, gsize = self.group_stats()
        # mpol_misplaced: bind task policy -> no; local -> not misplaced (no cpupid refresh)
        bindp = ((self.phase.take(rt) == PH_INIT) & wl.init_bind[ft]) | wl.mem_bind[ft]
        check = ~bindp & ~local
        # two-stage filter (should_numa_migrate_memory)
        unset = last8 == PID_UNSET
        mine = last8 == my8
        early = ((self.preferred.take(rt) == NO_NODE) | (self.task_seq.take(rt) <= 4)) & (unset | mine)
        second_stage_fail = ~unset & (lnode != cn)
        g = self.group.take(rt)
        ing = g >= 0
        gg = np.where(ing, g, 0)
        gm_n, gc_n = self._group_node_sums(gm, gc)                  # (R, T, N): private + shared
        rg = (fr * T + gg) * N
        gcpu_dst = gc_n.take(rg + cn)
        gcpu_src = gc_n.take(rg + fn)
        gmem_dst = gm_n.take(rg + cn)
        gmem_src = gm_n.take(rg + fn)
        grp_ok = (gcpu_dst > 3 * gcpu_src) | (3 * gcpu_dst * gmem_src > 4 * gcpu_src * gmem_dst)
        want_mig = check & (early | (~second_stage_fail & (mine | ~ing | grp_ok)))
        # migrate_balanced_pgdat: the target node must have room; candidates take room in
        # fault order (a failed candidate still counts), a full node fails the migration
        migrate, failed = want_mig, np.zeros_like(want_mig)
        if want_mig.any():
            key = np.where(want_mig, fr * N + cn, -1)
            order = np.argsort(key, kind="stable")
            ks, pg = key[order], np.where(want_mig, pages, 0)[order]
            csum = np.cumsum(pg)
            start = np.searchsorted(ks, ks, side="left")
            before = csum - pg - np.where(start > 0, csum[np.maximum(start - 1, 0)], 0)
            cum_incl = np.empty_like(csum)
            cum_incl[order] = before + pg
            used = self.node_pages[fr, cn]
            fits = used + cum_incl <= self.node_cap
            migrate = want_mig & fits
            failed = want_mig & ~fits
        # the filter records the new accessor (only when it ran)
        self.last_pid8[fr[check], freg[check]] = my8[check]
        self.last_set[fr[check], freg[check]] = True
        self.last_node[fr[check], freg[check]] = cn[check]
        self.last_task[fr[check], freg[check]] = ft[check]
        # migrate
        if migrate.any():
            mr, mreg, mdst, msrc = fr[migrate], freg[migrate], cn[migrate], fn[migrate]
            self.r_node[mr, mreg] = mdst
            self.dirty[mr] = True
            cls = self.region_class[mreg]
            np.add.at(self.cls_node, (mr, cls, msrc), -1)
            np.add.at(self.cls_node, (mr, cls, mdst), 1)
            np.add.at(self.cnt["numa_pages_migrated"], mr, pages[migrate])
            np.add.at(self.node_pages, (mr, msrc), -pages[migrate])
            np.add.at(self.node_pages, (mr, mdst), pages[migrate])
            kt = kt + np.where(migrate, self.costs.migrate_time_s(pages, 1), 0.0)
        mem_node = np.where(migrate, cn, fn)
        np.add.at(self.kdebt, (fr, ft), kt)
        np.add.at(self.ksys, (fr, ft), kt)
        np.add.at(self.syst, fr, kt)
        # ---- task_numa_fault
        priv = ~lset | (last8 == my8)
        shared_f = ~priv
        # numa groups: create on the first shared fault, then join the last accessor's group
        if shared_f.any():
            sr, st_ = fr[shared_f], ft[shared_f]
            create = self.group[sr, st_] < 0
            if create.any():
                self.group[sr[create], st_[create]] = st_[create]
                self._gs = None
            gm, gc, gsize = self.group_stats()
            lt = ltask[shared_f]
            ok = lt >= 0
            lt0 = np.where(ok, lt, 0)
            lg = np.where(ok, self.group[sr, lt0], -1)
            my = self.group[sr, st_]
            same_mm = self.thread_mm[lt0] == self.thread_mm[st_]
            lgz = np.where(lg >= 0, lg, 0)
            bigger = (gsize[sr, my] < gsize[sr, lgz]) | ((gsize[sr, my] == gsize[sr, lgz]) & (my > lg))
            join = ok & (lg >= 0) & (lg != my) & same_mm & bigger & (self.pid8[sr, lt0] == last8[shared_f])
            if join.any():
                # first qualifying fault of each task wins (simultaneous semantics)
                jr, jt, jg = sr[join], st_[join], lg[join]
                key = jr * T + jt
                _, first = np.unique(key, return_index=True)
                self.group[jr[first], jt[first]] = jg[first]
                np.add.at(self.cnt["group_joins"], jr[first], 1)
                self._gs = None
            gm, gc, gsize = self.group_stats()
        # placement (task_numa_placement + numa_migrate_preferred) before this step's faults
        # are added, once per task per step, when its retry time has passed
        seen = np.zeros(R * T, dtype=bool)
        seen[rt] = True
        uk = np.flatnonzero(seen)                                   # np.unique(fr * T + ft)
        pr_, pt_ = np.divmod(uk, T)
        due = now > self.migrate_retry[pr_, pt_]
        if due.any():
            self._placement(pr_[due], pt_[due], now, gm, gc, gsize)
        # buffers
        flocal = local.copy()
        ing2 = self.group[fr, ft] >= 0
        if (shared_f & ~flocal & ing2).any():
            gm, gc, gsize = self.group_stats()
            active = self._active_nodes(gc)                                  # (R, T(gid), N)
            gid = np.where(ing2, self.group[fr, ft], 0)
            nact = active[fr, gid].sum(axis=-1)
            relabel = shared_f & ~flocal & ing2 & (nact > 1) & active[fr, gid, cn] & active[fr, gid, mem_node]
            flocal = flocal | relabel
        p_i = priv.astype(np.int64)
        np.add.at(self.b_mem, (fr, ft, mem_node, p_i), pages)
        np.add.at(self.b_cpu, (fr, ft, cn, p_i), pages)
        np.add.at(self.locality, (fr, ft, flocal.astype(np.int64)), pages)
        if failed.any():
            np.add.at(self.locality, (fr[failed], ft[failed], 2), pages[failed])
            np.add.at(self.cnt["numa_migrate_fail"], fr[failed], 1)
        self.has_faults[fr, ft] = True

    def _active_nodes(self, gc):
        tot = gc.sum(axis=-1)                                                  # (R, G, N)
        mx = tot.max(axis=-1, keepdims=True)
        return 3 * tot > mx

    def _placement(self, r, t, now, gm, gc, gsize):
        """task_numa_placement (spec §5.5) + numa_migrate_preferred for tasks (r, t)."""
        seq = self.mm_seq[r, self.thread_mm[t]]
        go = self.task_seq[r, t] != seq
        # numa_migrate_preferred runs regardless; placement only once per sequence
        r2, t2 = r[go], t[go]
        if r2.size:
            self.task_seq[r2, t2] = seq[go]
            self.period_max[r2, t2] = self.task_scan_max((r2, t2), gm, gsize)
            total = (self.locality[r2, t2, 0] + self.locality[r2, t2, 1]).astype(float)
            runtime = self.runtime[r2, t2] - self.last_place_run[r2, t2]
            period = now - self.last_place_t[r2, t2]
            self.last_place_run[r2, t2] = self.runtime[r2, t2]
            self.last_place_t[r2, t2] = now
            bm = self.b_mem[r2, t2].astype(float)                              # (n, N, 2)
            bc = self.b_cpu[r2, t2].astype(float)
            ftypes = bm.sum(axis=1)                                            # (n, 2): shared, private
            w = (65536.0 * runtime / (period + 1e-9))[:, None, None] * bc / (total + 1)[:, None, None]
            diff = bm - self.f_mem[r2, t2] / 2
            fdiff = w - self.f_cpu[r2, t2] / 2
            self.f_mem[r2, t2] += diff
            self.f_cpu[r2, t2] += fdiff
            self.b_mem[r2, t2] = 0
            self.b_cpu[r2, t2] = 0
            gm, gc, gsize = self._group_stats_rows(np.unique(r2))
            g = self.group[r2, t2]
            ing = g >= 0
            own = self.f_mem[r2, t2].sum(axis=-1)                              # (n, N)
            grp = gm[r2, np.where(ing, g, 0)].sum(axis=-1)
            score = np.where(ing[:, None], grp, own)
            best = score.argmax(axis=1)                                        # lowest nid wins ties
            bscore = score[np.arange(r2.size), best]
            setp = bscore > 0
            self.preferred[r2[setp], t2[setp]] = best[setp]
            self._update_scan_period(r2, t2, ftypes[:, 0], ftypes[:, 1], gm, gsize)
        # numa_migrate_preferred
        per = self.scan_period[r, t]
        self.migrate_retry[r, t] = now + np.minimum(1.0, per / 16.0 / 1000.0)
        want = (self.preferred[r, t] != NO_NODE) & (self.node[r, t] != self.preferred[r, t]) & \
            (self.wl.cpu_bind[t] < 0)
        if self._want is None:
            self._want = np.zeros((self.R, self.T), dtype=bool)
        self._want[r[want], t[want]] = True

    def _sync_prot(self):
        """Rebuild prot_lam / prot_thresh if prot_idx was replaced from outside the engine."""
        if self._prot_of is not self.prot_idx:
            pr, preg = np.divmod(self.prot_idx, self.NR)
            self.prot_lam = pr * self.C + self.region_class[preg]
            self.prot_thresh = self.r_thresh.take(self.prot_idx)
            self._prot_of = self.prot_idx

    def _pid_window(self, r, v):
        """The window hinting faults of VMAs (r, v) write to (history.current_window_index)."""
        if self.pol.rotation == "shift":
            return np.full(r.shape, self.pol.windows - 1, dtype=np.int64)
        return np.mod(self.pidx[r, v], self.pol.windows).astype(np.int64)

    def _update_scan_period(self, r, t, shared, private, gm, gsize):
        loc = self.locality[r, t]
        remote, local_, failed = loc[:, 0], loc[:, 1], loc[:, 2]
        smin = self.task_scan_min(self.thread_mm[t])
        smax = self.period_max[r, t]
        per = self.scan_period[r, t]
        slow = (local_ + shared == 0) | (failed > 0)
        # early return: double, numa_next_scan pushed, locality kept (sticky) or cleared (fix)
        doubled = np.minimum(smax, 2 * per)
        slot = -(-per // 10)
        lr = local_ * 10 // np.maximum(local_ + remote, 1)
        ps = private * 10 // np.maximum(private + shared, 1)
        diff = np.where(ps >= 7, np.maximum(ps - 7, 1) * slot,
                        np.where(lr >= 7, np.maximum(lr - 7, 1) * slot, -(7 - np.maximum(lr, ps)) * slot))
        adj = np.clip(per + diff, smin, np.maximum(smin, smax))
        new = np.where(slow, doubled, adj).astype(np.int64)
        self.scan_period[r, t] = new
        if slow.any():
            rs, ts = r[slow], t[slow]
            m = self.thread_mm[ts]
            self.mm_next_scan[rs, m] = self.now + self.dt + new[slow] / 1000.0
        clear = ~slow | (not self.o["sticky_locality"])
        self.locality[r[clear], t[clear]] = 0

    # ---- 5. task placement
    def _move_tasks(self, u_task, now):
        want = self._want
        if want is None or not want.any():
            return
        self._want = None
        R, T, N = self.R, self.T, self.N
        cap = self.topo.cpus_per_node
        running = self.running()
        gm, gc, gsize = self.group_stats()
        # per-task node score: group fault share if grouped, else own
        own = self.f_mem.sum(axis=-1)
        grp = np.take_along_axis(gm.sum(axis=-1), np.where(self.group >= 0, self.group, 0)[:, :, None], axis=1)
        sc = np.where((self.group >= 0)[:, :, None], grp, own)
        sc = sc / np.maximum(sc.sum(axis=-1, keepdims=True), 1e-9)
        own_n = own / np.maximum(own.sum(axis=-1, keepdims=True), 1e-9)
        moved = np.zeros((R, T), dtype=bool)
        load = np.stack([((self.node == n) & running).sum(axis=1) for n in range(N)], axis=1)
        for r in np.flatnonzero(want.any(axis=1)).tolist():
            cand = np.flatnonzero(want[r] & running[r])
            cand = cand[np.argsort(u_task[r, cand], kind="stable")]
            for t in cand.tolist():
                if moved[r, t]:
                    continue
                a, b = int(self.node[r, t]), int(self.preferred[r, t])
                if load[r, b] < cap:                       # an idle CPU on the preferred node
                    self._move(r, t, b)
                    load[r, a] -= 1
                    load[r, b] += 1
                    moved[r, t] = True
                    continue
                # swap with the task on b that gains most from going to a (task_numa_compare)
                q = np.flatnonzero((self.node[r] == b) & running[r] & ~moved[r] & (self.wl.cpu_bind < 0))
                if q.size == 0:
                    continue
                same = self.group[r, q] == self.group[r, t]
                same &= self.group[r, t] >= 0
                sq = np.where(same[:, None], own_n[r, q], sc[r, q])
                gain_q = sq[:, a] - sq[:, b]
                st = np.where(same, own_n[r, t, b] - own_n[r, t, a], sc[r, t, b] - sc[r, t, a])
                tot = st + gain_q
                j = int(np.argmax(tot))
                if tot[j] > 0:
                    self._move(r, t, b)
                    self._move(r, int(q[j]), a)
                    moved[r, t] = moved[r, q[j]] = True

    def _lb_moves(self, u_lb):
        """The load balancer's cross-node pulls (option ``lb_migrate_hz``): a running, not
        CPU-bound task ``t`` with ``u_lb[t] < p = lb_migrate_hz * dt`` is pulled to another
        node; ``v = u_lb[t] / p`` (uniform on [0, 1)) picks the node ``k = floor(v (N-1))``
        among the others and ``w = v (N-1) - k`` the task pulled back when that node has no
        free CPU (the ``floor(w * n)``-th running unbound task there, in index order). Tasks
        in increasing index order, per replica. Each move runs ``update_scan_period``."""
        p = self.o["lb_migrate_hz"] * self.dt
        if p <= 0 or self.N < 2:
            return
        running = self.running() & ~self.done[:, None]
        free = self.wl.cpu_bind < 0
        ev = running & (u_lb < p) & free[None, :]
        if not ev.any():
            return
        N, cap = self.N, self.topo.cpus_per_node
        for r in np.flatnonzero(ev.any(axis=1)).tolist():
            load = np.bincount(self.node[r][running[r]], minlength=N)
            for t in np.flatnonzero(ev[r]).tolist():
                v = float(u_lb[r, t]) / p
                a = int(self.node[r, t])
                x = v * (N - 1)
                k = min(int(x), N - 2)
                w = x - k
                dst = k if k < a else k + 1
                if load[dst] < cap:
                    self._move(r, t, dst, lb=True)
                    load[a] -= 1
                    load[dst] += 1
                    continue
                q = np.flatnonzero((self.node[r] == dst) & running[r] & free)
                if q.size == 0:
                    continue
                j = int(q[min(int(w * q.size), q.size - 1)])
                self._move(r, t, dst, lb=True)
                self._move(r, j, a, lb=True)

    def _move(self, r, t, dst, lb=False):
        """Move task ``t`` of replica ``r`` to node ``dst``: ``update_scan_period`` (spec §3.5),
        then the move's cost; counted in ``task_migrations`` (NUMA placement) or
        ``lb_migrations`` (load balancer)."""
        src = int(self.node[r, t])
        if src == dst:
            return
        # update_scan_period (spec §3.5)
        if self.has_faults[r, t]:
            pref = int(self.preferred[r, t])
            reset = True
            if self.task_seq[r, t]:
                if dst == pref or (pref != NO_NODE and src != pref):
                    reset = False
            if reset:
                gm, gc, gsize = self.group_stats()
                rr, tt = np.array([r]), np.array([t])
                self.scan_period[r, t] = int(self.task_scan_start((rr, tt), gm, gsize)[0])
                self.cnt["scan_period_resets"][r] += 1
        self.node[r, t] = dst
        self.dirty[r] = True
        kt = self.costs.task_migration_us * 1e-6
        self.kdebt[r, t] += kt
        self.ksys[r, t] += kt
        self.syst[r] += kt
        self.cnt["lb_migrations" if lb else "task_migrations"][r] += 1

    # ---- 6. invariants and series
    def _check(self):
        if (self.r_node < 0).any() or (self.r_node >= self.N).any():
            raise EngineInvariantError(f"pages not conserved at t={self.now:.3f}s: a region on no node")
        by_node = pages_by_node(self)
        pages_on = by_node.sum(axis=1)
        if (pages_on != self.total_pages).any():
            raise EngineInvariantError(f"pages not conserved at t={self.now:.3f}s: {pages_on} != {self.total_pages}")
        if (self.node_pages != by_node).any():
            raise EngineInvariantError(f"resident pages per node out of sync at t={self.now:.3f}s")
        if (self.cls_node < 0).any():
            raise EngineInvariantError(f"negative class node count at t={self.now:.3f}s")
        for k, v in self.cnt.items():
            if (v < 0).any():
                raise EngineInvariantError(f"counter {k} went negative at t={self.now:.3f}s")
        if (self.cnt["numa_hint_faults_local"] > self.cnt["numa_hint_faults"]).any():
            raise EngineInvariantError("numa_hint_faults_local > numa_hint_faults")
        if (self.reasons < 0).any() or (self.b_mem < 0).any() or (self.locality < 0).any():
            raise EngineInvariantError(f"negative fault statistics at t={self.now:.3f}s")
        if self.prot_idx.size and np.count_nonzero(self.prot) != self.prot_idx.size:
            raise EngineInvariantError("protected-region index out of sync")
        if self._prot_of is self.prot_idx:
            pr, preg = np.divmod(self.prot_idx, self.NR)
            if not (np.array_equal(self.prot_lam, pr * self.C + self.region_class[preg])
                    and np.array_equal(self.prot_thresh, self.r_thresh.take(self.prot_idx))):
                raise EngineInvariantError("protected-region rate/threshold index out of sync")
        running = self.running()
        load = np.stack([((self.node == n) & running).sum(axis=1) for n in range(self.N)], axis=1)
        if (load > self.topo.cpus_per_node).any():
            raise EngineInvariantError(f"a node runs more threads than it has CPUs at t={self.now:.3f}s")

    def sample(self):
        """Append one time-series sample (per replica)."""
        R, M, N = self.R, self.M, self.N
        if self._cls_pp is not None:
            cls_pages = self.cls_node * self._cls_pp[None, :, None]                # (R, C, N), exact
            pn = np.zeros((R, M, N))
            np.add.at(pn, (slice(None), self._cls_mm), cls_pages)
        else:
            cls_pages = None
            pn = _pages_by(self, self.region_mm[None, :] * N + self.r_node, M * N).reshape(R, M, N).astype(float)
        self.series["pages_node"].append(pn)
        lf = np.where(self._local_w > 0, self._local_acc / np.maximum(self._local_w, 1e-30), np.nan)
        self.series["local_fraction"].append(lf)
        self._local_acc[:] = 0
        self._local_w[:] = 0
        sp = np.zeros((R, M))
        for m in range(M):
            sel = self._sample_sel[m]
            sp[:, m] = self.scan_period[:, sel].mean(axis=1) if sel.any() else np.nan
        self.series["scan_period"].append(sp)
        self.series["converged_fraction"].append(self._converged_fraction(cls_pages))
        f = self.cnt["numa_hint_faults"].copy()
        self.series["faults"].append(f - self._fault_acc)
        self._fault_acc = f
        self.series_t.append(self.now)

    def _class_access(self):
        """(R, C, N): access rate of each class from threads on each node, 1/s; recomputed only
        for the replicas whose rates, phases or placement changed since the last sample."""
        R, N, C, T = self.R, self.N, self.C, self.T
        rows = np.flatnonzero(self._conv_stale | self.dirty)
        if rows.size:
            wl = self.wl
            n = rows.size
            rate = self.entry_rates(rows, self.speed[rows])                             # (n, E)
            tnode = self.node.take(rows[:, None] * T + wl.entry_thread[None, :])    # (n, E)
            key = (np.arange(n)[:, None] * C + wl.entry_class[None, :]) * N + tnode
            self._conv_acc[rows] = np.bincount(key.ravel(), weights=rate.ravel(),
                                               minlength=n * C * N).reshape(n, C, N)
            self._conv_stale[:] = False
        return self._conv_acc

    def _converged_fraction(self, cls_pages=None):
        """(R, M): share of each process's accessed pages that sit on the node most of their
        current accesses come from (ground truth the kernel cannot see; issue 9's convergence).
        Regions nobody touches in the current phase are left out; NaN when a process has none.
        ``cls_pages``: resident pages per (replica, class, node) when the classes are uniform
        (then the sums run over classes, not regions; all sums are of whole page counts, so
        exact either way)."""
        R, N, M, C = self.R, self.N, self.M, self.C
        rows = np.arange(R)
        acc = self._class_access()
        best = acc.argmax(axis=2)                                                 # (R, C)
        touched = acc.sum(axis=2) > 0                                             # (R, C)
        if cls_pages is not None:
            tot_c = np.where(touched, cls_pages.sum(axis=2), 0.0)
            good_c = np.where(touched, np.take_along_axis(cls_pages, best[:, :, None], axis=2)[:, :, 0], 0.0)
            flat = (rows[:, None] * M + self._cls_mm[None, :]).ravel()
            tot = np.bincount(flat, weights=tot_c.ravel(), minlength=R * M).reshape(R, M)
            good = np.bincount(flat, weights=good_c.ravel(), minlength=R * M).reshape(R, M)
        else:
            rc = self.region_class[None, :]
            on_best = np.take_along_axis(best, np.broadcast_to(rc, self.r_node.shape), axis=1) == self.r_node
            live = np.take_along_axis(touched, np.broadcast_to(rc, self.r_node.shape), axis=1)
            w = self.region_present[None, :] * live
            mm = np.broadcast_to(self.region_mm[None, :], self.r_node.shape)
            flat = (rows[:, None] * M + mm).ravel()
            tot = np.bincount(flat, weights=w.ravel(), minlength=R * M).reshape(R, M)
            good = np.bincount(flat, weights=(w * on_best).ravel(), minlength=R * M).reshape(R, M)
        # only while every worker of the process still runs: the last stragglers' pages say
        # little about placement, and an idle process has nothing to converge
        finished = np.stack([(self.phase[:, sel] == PH_DONE).any(axis=1) for sel in self._sample_sel], axis=1)
        return np.where((tot > 0) & ~finished, good / np.where(tot > 0, tot, 1.0), np.nan)

    def run(self):
        res = self.o["time_resolution"]
        next_sample = 0.0
        while not self.done.all():
            if self.now >= next_sample - 1e-9:
                self.sample()
                next_sample += res
            if self.now >= self.o["max_time"]:
                break
            self.step()
        self.sample()
        if self.o["check_invariants"]:
            self._check()
        # unfinished replicas: elapsed so far, flagged
        self.finished = self.done.copy()
        self.elsp = np.where(self.done, self.elsp, self.now)
        return self


# ====================================================================================== public
def make_batch(wl: Workload, policy: Policy, seeds, **options) -> _Batch:
    """One policy over ``seeds`` as one batch, set up but not run (options checked)."""
    return _Batch(wl, policy, seeds, _opts(options), Costs.coerce(options.get("costs")))


def run_batch(wl: Workload, policy: Policy, seeds, **options) -> _Batch:
    """Run one policy over ``seeds`` as one batch; returns the finished batch (arrays)."""
    return make_batch(wl, policy, seeds, **options).run()


def _coerce_workload(workload, topology):
    """A Workload, or a workload name laid out on ``topology`` (a Topology or preset name)."""
    if isinstance(workload, str):
        workload = make_workload(workload, Topology.coerce(topology))
    elif not isinstance(workload, Workload):
        raise NumalabValueError(f"workload={workload!r} must be a Workload or a name")
    if not workload.thread_main.size:
        raise NumalabValueError("workload has no threads")
    return workload


def _coerce_policies(policies):
    if isinstance(policies, (Policy, str)):
        policies = [policies]
    try:
        policies = list(policies)
    except TypeError:
        raise NumalabValueError(f"policies={policies!r} must be a Policy, a profile name or a list of them") from None
    if not policies:
        raise NumalabValueError("policies is empty; allowed: one or more Policy objects or profile names")
    out = []
    for p in policies:
        if isinstance(p, str):
            p = Policy.profile(p)
        if not isinstance(p, Policy):
            raise NumalabValueError(f"policy {p!r} must be a Policy or a profile name; allowed: {', '.join(Policy.profiles())}")
        out.append(p)
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        raise NumalabValueError(f"policies have duplicate names {names}; give each a distinct name=")
    return out


def _coerce_seeds(seeds):
    if isinstance(seeds, (bool, np.bool_)):
        raise NumalabValueError(f"seeds={seeds!r}; allowed: a positive int n (seeds 0..n-1) or a list of ints >= 0")
    if isinstance(seeds, (int, np.integer)):
        n = check_int("seeds", seeds, lo=1, hi=100000)
        return list(range(n))
    try:
        lst = [check_int("seeds", s, lo=0) for s in seeds]
    except TypeError:
        raise NumalabValueError(f"seeds={seeds!r}; allowed: a positive int n or a list of ints >= 0") from None
    if not lst:
        raise NumalabValueError("seeds is empty; allowed: a positive int n or a non-empty list of ints >= 0")
    if len(set(lst)) != len(lst):
        raise NumalabValueError(f"seeds={lst} has duplicates; allowed: distinct ints >= 0")
    return lst


def simulate(workload, policies, seeds=8, *, dt=DEFAULTS["dt"], time_resolution=DEFAULTS["time_resolution"],
             max_time=DEFAULTS["max_time"], costs=None, topology="2s-128", **options):
    """Simulate ``workload`` under each of ``policies`` for each seed.

    Parameters
    ----------
    workload : Workload or str (a name from :func:`numalab.workloads.workloads`, laid out on
        ``topology``).
    policies : Policy, profile name, or a list of them.
    seeds : int n (seeds 0..n-1) or a list of distinct ints.
    dt : step in seconds (0 < dt <= 0.1; the scan period floor is 100 ms).
    time_resolution : seconds between time-series samples.
    max_time : give up after this many simulated seconds (``finished`` = 0).
    costs : :class:`numalab.costs.Costs` or a dict of overrides.
    **options : see :data:`DEFAULTS` (sysctls ``scan_delay_ms``, ``scan_period_min_ms``,
        ``scan_period_max_ms``, ``scan_size_mb``; ``lb_migrate_hz`` (load-balancer pulls per
        task and second, :data:`LB_MIGRATE_HZ`); ``sticky_locality``; ``thp``; ``pid_base``;
        ``init_node``; ``check_invariants``).

    Returns
    -------
    xarray.Dataset with dims ("policy", "seed") and "time" (see :mod:`numalab.results`).
    """
    wl = _coerce_workload(workload, topology)
    pols = _coerce_policies(policies)
    seeds = _coerce_seeds(seeds)
    costs = Costs.coerce(costs)
    opts = dict(options, dt=dt, time_resolution=time_resolution, max_time=max_time)
    o = _opts(opts)
    batches = [_Batch(wl, p, seeds, o, costs).run() for p in pols]
    from .results import to_dataset
    return to_dataset(wl, pols, seeds, batches, o, costs)

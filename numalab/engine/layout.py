"""The static per-workload arrays: what a process's address space and its threads' accesses
look like, before anything runs. Built ONCE per ``simulate`` call (shared by every policy's
batch; nothing here is written while running).

Kernel structures they stand for: ``mm_struct``'s VMA list in address order (``vm_start``,
``vm_end`` in pages, the flags ``vma_migratable`` / ``vma_policy_mof`` / the shared read-only and
PROT_NONE checks of ``task_numa_work`` test), its ``get_mm_rss`` (for ``task_nr_scan_windows``),
the 2 MiB regions (folios: THP or not) each VMA maps, and the ground truth of which thread
writes which VMA -- the access classes of :mod:`numalab.workloads`, which the kernel never sees.
"""

from __future__ import annotations

import numpy as np

from ..reasons import REASONS
from ..workloads import INACCESSIBLE, PH_INIT, PH_LOOP, REGION_PAGES, SHARED_RO, UNSUITABLE
from .memory import capacity_pages

__all__ = ["Layout", "protect_bound"]


def protect_bound(processes: int, vmas: int, scan_size_mb: int) -> int:
    """K, the most regions one step's scans can protect: per mm, the scan budget's 2 MiB
    regions + 1, one (partial) region per VMA, and the forced retry's VMA. The one formula:
    :class:`Layout` sizes its arrays by it and the memory guard (:mod:`numalab.limits`) reads it."""
    return int(processes * ((int(scan_size_mb) << 8) // REGION_PAGES + 2) + vmas)


class Layout:
    """Static arrays of one workload under one set of engine options (``thp`` and
    ``scan_size_mb`` shape them). Sizes: ``T`` threads, ``V`` VMAs, ``NR`` regions, ``N`` nodes,
    ``M`` processes (mms), ``C`` access classes, ``E`` access entries, ``K`` the most regions one
    step's scans can protect. Addresses and lengths in 4 KiB pages; rates in 1/s."""

    def __init__(self, wl, opts):
        topo = self.topo = wl.topology
        self.wl = wl
        T, V, NR, N, M = wl.nthreads, wl.nvmas, wl.nregions, topo.nodes, wl.nproc
        self.T, self.V, self.NR, self.N, self.M = T, V, NR, N, M
        self.cpu_node = topo.cpu_node
        self._regions(wl, opts)
        self._vmas(wl)
        self.nreasons = len(REASONS)
        self.mm_rss = np.array([self.region_present[self.region_mm == m].sum() for m in range(M)], dtype=np.int64)
        self.scan_size_pages = opts.scan_size_mb << 8
        # task_nr_scan_windows: scan windows of scan_size the mm's RSS makes (at least 1)
        self.nr_scan_windows = np.array([-(-(int(rss) or self.scan_size_pages) // self.scan_size_pages)
                                         for rss in self.mm_rss], dtype=np.int64)
        self._entries(wl)
        self._sweeps(wl, opts)
        self.K = protect_bound(M, sum(len(v) for v in self.mm_vmas), opts.scan_size_mb)
        self._threads(wl)
        # per node: what its memory can take (migrate_balanced_pgdat), base pages, and how many
        # threads it can run (its CPUs; 0 on a memory-only node)
        self.node_cap = capacity_pages(topo)
        self.node_cpus = topo.node_cpus

    def _regions(self, wl, opts):
        self.region_vma = wl.region_vma
        self.region_mm = wl.vma_mm[wl.region_vma]
        self.region_class = wl.region_class
        self.region_present = wl.region_present.copy()             # resident base pages per region
        # option malloc_edges: the region standing for a malloc'd buffer's unaligned edges is base pages
        self.region_huge = wl.region_huge & opts.thp & ~(wl.region_malloc_edge & opts.malloc_edges)
        # one hinting fault counts 1 for a THP, else one per base page (4 KiB semantics)
        self.fault_inc = np.where(self.region_huge, 1, self.region_present).astype(np.int64)
        self.vma_first = np.searchsorted(wl.region_vma, np.arange(wl.nvmas + 1))
        self.vma_first_l = self.vma_first.tolist()
        self.C = int(wl.region_class.max()) + 1

    def _vmas(self, wl):
        M = wl.nproc
        self.v_code = wl.vma_code
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

    def _entries(self, wl):
        C = self.C
        # access entries, sorted by class (as built); class -> [start, end) in entry order
        self.E = wl.entry_class.size
        self.cls_start = np.searchsorted(wl.entry_class, np.arange(C))
        self.cls_end = np.searchsorted(wl.entry_class, np.arange(C), side="right")
        self.max_class_entries = max(1, int((self.cls_end - self.cls_start).max()))
        self.phase_entries = {ph: np.flatnonzero(wl.entry_phase == ph) for ph in (PH_INIT, PH_LOOP)}
        # per phase: entries, their thread, share, class, touch/byte and fixed rate (gathered once)
        self.phase_arrays = {ph: (ent, wl.entry_thread[ent], wl.entry_share[ent], wl.entry_class[ent],
                                  wl.entry_touch_per_byte[ent], wl.entry_fixed_hz[ent])
                             for ph, ent in self.phase_entries.items()}
        # per phase, (Ep, N): each entry's flat (thread, node) and (class, node) offsets
        # (progress.thread_frac's bins and its gather of cls_node)
        nodes = np.arange(self.N)
        self.phase_node_cols = {ph: (et[:, None] * self.N + nodes, ec[:, None] * self.N + nodes)
                                for ph, (_, et, _, ec, _, _) in self.phase_arrays.items()}
        # sums over the entries' touch rates (progress.cumulative_rates, observe.class_access)
        # add only the entries of phases some thread is in: the others are 0.0 and leave a sum
        # as it is. Per set of such phases: its entries (entry order), each phase's places among
        # them, and how many of the E + 1 cumulative positions each partial sum fills
        self.phase_set_entries = {}
        for phases in ((PH_INIT,), (PH_LOOP,), (PH_INIT, PH_LOOP)):
            member = np.zeros(self.E, dtype=bool)
            for ph in phases:
                member[self.phase_entries[ph]] = True
            ent = np.flatnonzero(member)
            place = np.cumsum(member) - 1                          # an entry's place in ent
            places = {ph: place[self.phase_entries[ph]] for ph in phases}
            # partial sum k fills the positions after entry ent[k-1] up to ent[k] (reading
            # ent[-1] as -1 and ent[ent.size] as E)
            repeats = np.diff(np.concatenate([[-1], ent, [self.E]]))
            self.phase_set_entries[phases] = (ent, places, repeats)
        # the samples count pages per (class, node) from cls_node when every region of a class
        # has the same resident pages and lies in one mm (true of every built-in workload);
        # otherwise (cls_pages None) they recount the regions
        present = self.region_present
        cls_pp = np.zeros(C)                                       # pages of one region, per class
        cls_pp[wl.region_class] = present
        cls_mm = np.zeros(C, dtype=np.int64)
        cls_mm[wl.region_class] = self.region_mm
        uniform = np.array_equal(cls_pp[wl.region_class], present) and \
            np.array_equal(cls_mm[wl.region_class], self.region_mm)
        self.cls_pages = cls_pp if uniform else None
        self.cls_mm = cls_mm if uniform else None

    def _sweeps(self, wl, opts):
        """The sweep segments (``Workload.seg_*``) as the fault phase reads them: per segment its
        VMA's first region (``seg_region0``), the regions it covers within the VMA
        (``seg_kfirst`` .. ``seg_klast``), and per class whether every access to it is a
        sweep (``cls_sweep``: its hinting faults are taken by the first writer to reach a
        PROT_NONE region, ``faults.sweep_faults``; the other classes, and every class with option
        ``first_arrival=False``, keep the Poisson clock).
        ``loop_shared`` (T,): the thread's loop range overlaps another thread's (numa01's
        buffer), so its sweep position is an independent phase (``Batch._seed_draws``)."""
        RB = REGION_PAGES * 4096
        self.S = wl.seg_thread.size
        self.seg_thread, self.seg_phase = wl.seg_thread, wl.seg_phase
        self.seg_lo, self.seg_hi, self.seg_sigma, self.seg_range = wl.seg_lo, wl.seg_hi, wl.seg_sigma, wl.seg_range
        self.seg_region0 = self.vma_first[wl.seg_vma]
        nreg = self.vma_first[wl.seg_vma + 1] - self.seg_region0
        self.seg_kfirst = (wl.seg_lo // RB).astype(np.int64)
        self.seg_klast = np.minimum(-(-wl.seg_hi // RB).astype(np.int64) - 1, nreg - 1)
        swept = set(zip(wl.seg_thread.tolist(), wl.seg_phase.tolist()))
        sweep_entry = np.array([wl.entry_fixed_hz[e] == 0 and (int(wl.entry_thread[e]), int(wl.entry_phase[e])) in swept
                                for e in range(self.E)], dtype=bool)
        self.cls_sweep = np.array([opts.first_arrival and self.cls_start[c] < self.cls_end[c]
                                   and bool(sweep_entry[self.cls_start[c]:self.cls_end[c]].all())
                                   for c in range(self.C)], dtype=bool)
        loop = np.flatnonzero(wl.seg_phase == PH_LOOP)
        shared = np.zeros(self.T, dtype=bool)
        for i in loop:
            o = loop[(wl.seg_vma[loop] == wl.seg_vma[i]) & (wl.seg_thread[loop] != wl.seg_thread[i])
                     & (wl.seg_lo[loop] < wl.seg_hi[i]) & (wl.seg_hi[loop] > wl.seg_lo[i])]
            if o.size:
                shared[wl.seg_thread[i]] = True
        self.loop_shared = shared
        # the workload's buffer VMAs and regions (history_stats: the PID history's counters)
        self.vma_buffer = np.array([k == "buffer" for k in wl.vma_kind], dtype=bool)
        self.region_buffer = self.vma_buffer[wl.region_vma]
        self.mm_buffer_regions = np.bincount(self.region_mm[self.region_buffer], minlength=self.M)
        # each thread's loop range (its sweep's period in bytes), 0 without a loop sweep
        self.loop_range = np.zeros(self.T)
        self.loop_range[wl.seg_thread[loop]] = wl.seg_range[loop]

    def _threads(self, wl):
        T, V, M = self.T, self.V, self.M
        # ground truth: which thread writes which VMA in which phase
        self.writes_vma = np.zeros((T, 4, V), dtype=bool)
        ev = wl.region_vma[np.searchsorted(wl.region_class, wl.entry_class)]
        self.writes_vma[wl.entry_thread, wl.entry_phase, ev] = True
        self.thread_mm = wl.thread_mm
        self.nr_threads = np.bincount(wl.thread_mm, minlength=M)
        self.in_mm = [wl.thread_mm == m for m in range(M)]
        self.thread_mm_onehot = np.stack(self.in_mm, axis=1)                  # (T, M) bool
        self.sample_sel = [(wl.thread_mm == m) & ~wl.thread_main for m in range(M)]
        self.mains = np.flatnonzero(wl.thread_main)
        self.workers = np.flatnonzero(~wl.thread_main)
        # each mm's main thread (task_numa_work's owner of the first touch); 0 if none
        self.mm_main = np.array([self.mains[wl.thread_mm[self.mains] == m][0]
                                 if (wl.thread_mm[self.mains] == m).any() else 0 for m in range(M)], dtype=np.int64)
        # per thread: its mm's main thread (workers wait for its init)
        main_of_mm = np.zeros(M, dtype=np.int64)
        main_of_mm[wl.thread_mm[self.mains]] = self.mains
        self.main_of_thread = main_of_mm[wl.thread_mm]
        # an entry's first thread per class owns the class's regions (first touch); else -1
        owner = np.full(self.C, -1, dtype=np.int64)
        first = self.cls_start < self.cls_end
        owner[first] = wl.entry_thread[self.cls_start[first]]
        own_r = owner[wl.region_class]
        self.region_owner = np.where(own_r < 0, self.mm_main[self.region_mm], own_r)

"""Workloads: the processes, threads, VMAs, memory regions and access pattern the engine runs.

A :class:`Workload` is static, batch-independent data (numpy arrays). What varies per seed
(the initial node B of autonuma-benchmark's numa01, the pid the first process gets, the
scheduler's initial spread of threads over nodes) is drawn by :mod:`numalab.engine` from the
replica's random generator.

Layout of one process (spec benchmarks-and-reports.md §1, DESIGN.md "The model"): the binary's
text (read-only file mapping, skipped as ``shared_ro``), its data and bss, the heap, one
8 MiB stack per worker thread (written only by its thread, the classic disjoint VMAs; mmap'd
top-down, so the last thread created sits lowest), the benchmark buffer as ONE anonymous VMA
(glibc serves a multi-GiB ``malloc`` with one mmap), libc's and ld.so's text (``shared_ro``)
and data, the main thread's stack and the vdso. Every VMA starts on a 2 MiB boundary so the
scanner's 2 MiB chunk rounding (``task_numa_work``) falls on region boundaries.

Memory is cut into regions of 2 MiB (512 base pages). With ``thp=True`` (default) a populated
region of an anonymous VMA is one transparent huge page: a scan of it counts 512
``numa_pte_updates`` and 1 ``numa_huge_pte_updates``, a hinting fault counts 1, a migration
512 pages. With ``thp=False`` a region stands for its base pages sampled together: the same
events count once per base page. A buffer that autonuma-benchmark ``malloc``\\ s is not
2 MiB-aligned in the process (glibc maps SIZE + 4 KiB at a page boundary), so 513 of its pages
cannot be a huge page: its first region (``region_malloc_edge``) stands for them as base pages
when the engine option ``malloc_edges`` is on (default; traced with real kernels in
``benchmarks/vm_trace.py``).

Access pattern ("interval form"): a thread in a phase writes a byte range of its process
forward and repeatedly. Regions touched by the same set of threads in the same way form an
*access class*; per class the engine keeps the touch rate and the node split. A *touch* of a
PROT_NONE region is a NUMA hinting fault; one sweep of a thread over its range touches each of
its regions once, so the touch rate of a region is the thread's write speed divided by the
bytes of its range.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from .errors import NumalabValueError, check_choice, check_int, check_memory, check_number
from .topology import Topology

__all__ = ["Workload", "workload", "workloads", "from_access_matrix", "perf_bench_numa_mem",
           "PAGE_SIZE", "REGION_PAGES", "REGION_BYTES"]

PAGE_SIZE = 4096
REGION_PAGES = 512          # one PMD: 2 MiB of 4 KiB pages (HPAGE_PMD_NR)
REGION_BYTES = REGION_PAGES * PAGE_SIZE
GiB = 1 << 30
MiB = 1 << 20

# VMA suitability codes (the first three skip reasons of task_numa_work, spec §3.2)
SUITABLE, UNSUITABLE, SHARED_RO, INACCESSIBLE = 0, 1, 2, 3

# thread phases
PH_WAIT, PH_INIT, PH_LOOP, PH_DONE = 0, 1, 2, 3
PHASE_NAMES = ("wait", "init", "loop", "done")

# initial placement of a region's memory
INIT_B, INIT_MAIN, INIT_OWNER = -1, -2, -3      # >= 0: that node

# touch rate of "hot" small mappings (stack top, globals) while the thread runs, 1/s: a
# thread's stack is written on every call, so a PROT_NONE stack page faults within a tick.
STACK_TOUCH_HZ = 1000.0
DATA_TOUCH_HZ = 50.0


@dataclass
class _Builder:
    """Accumulates VMAs, regions and access segments while a workload is laid out."""

    vmas: list = field(default_factory=list)      # dicts
    segments: list = field(default_factory=list)  # (thread, phase, vma, byte_lo, byte_hi, range_bytes, fixed_hz)
    next_page: int = 0x400000 // PAGE_SIZE

    def vma(self, mm, kind, size_bytes, *, code=SUITABLE, populated=0, huge=True, init=INIT_OWNER,
            owner=-1, malloc=False):
        """``init``: where the VMA's pages start -- an ``INIT_*`` rule, a node, or a tuple of
        nodes (the regions in equal chunks, one per node in order). ``malloc``: the mapping is
        glibc's for a large ``malloc`` (its first region stands for the base-page edges)."""
        start = -(-self.next_page // REGION_PAGES) * REGION_PAGES
        pages = max(1, -(-int(size_bytes) // PAGE_SIZE))
        v = dict(mm=mm, kind=kind, start=start, end=start + pages, code=code,
                 populated=int(populated), huge=huge, init=init, owner=owner, malloc=malloc)
        self.vmas.append(v)
        # leave a gap (guard / unmapped hole) so VMAs are not merged
        self.next_page = start + pages + REGION_PAGES
        return len(self.vmas) - 1

    def touch(self, thread, phase, vma, lo, hi, range_bytes, fixed_hz=0.0):
        self.segments.append((thread, phase, vma, int(lo), int(hi), float(range_bytes), float(fixed_hz)))


@dataclass(frozen=True, eq=False)
class Workload:
    """A workload laid out for one topology (plain arrays; see the module docstring).

    Threads ``t``: ``thread_mm``, ``thread_tid_offset`` (pid = the seed's pid base + offset),
    ``thread_main`` (the process's main thread), ``phase_bytes`` (T, 2) bytes to write in
    the init and loop phases, ``init_bind`` (init phase runs under MPOL_BIND),
    ``waits_for_main`` (worker created after the main thread's init), ``cpu_bind`` (node the
    thread is bound to, -1 = free), ``mem_bind`` (all-run MPOL_BIND, so no balancing).
    VMAs ``v``: ``vma_mm``, ``vma_start``/``vma_end`` (4 KiB pages), ``vma_code``
    (suitability), ``vma_kind``. Regions ``r``: ``region_vma``, ``region_start`` (page),
    ``region_vpages`` (virtual pages), ``region_present`` (populated base pages),
    ``region_huge``, ``region_init`` (INIT_* or a node), ``region_class``, ``region_malloc_edge``
    (the region standing for a ``malloc``'d buffer's base-page edges; engine option ``malloc_edges``).
    Access entries ``e``: ``entry_class``, ``entry_thread``, ``entry_phase``,
    ``entry_touch_per_byte`` (1/range bytes), ``entry_share`` (share of the thread's bytes
    per region of the class), ``entry_fixed_hz``.
    Sweep segments ``s`` (the byte ranges threads write in order, for the hinting-fault clock:
    the first writer to reach a PROT_NONE region takes its fault): ``seg_thread``,
    ``seg_phase``, ``seg_vma``, ``seg_lo``/``seg_hi`` (bytes from the VMA's start),
    ``seg_sigma`` (where the segment starts in its thread's sweep of ``seg_range`` bytes) and
    ``seg_range``; only a thread-phase whose segments tile its range (a true sequential sweep)
    has them.
    """

    name: str
    topology: Topology
    params: dict
    nproc: int
    thread_mm: np.ndarray
    thread_tid_offset: np.ndarray
    thread_main: np.ndarray
    phase_bytes: np.ndarray
    init_bind: np.ndarray
    waits_for_main: np.ndarray
    cpu_bind: np.ndarray
    mem_bind: np.ndarray
    vma_mm: np.ndarray
    vma_start: np.ndarray
    vma_end: np.ndarray
    vma_code: np.ndarray
    vma_kind: tuple
    region_vma: np.ndarray
    region_start: np.ndarray
    region_vpages: np.ndarray
    region_present: np.ndarray
    region_huge: np.ndarray
    region_init: np.ndarray
    region_class: np.ndarray
    region_malloc_edge: np.ndarray
    entry_class: np.ndarray
    entry_thread: np.ndarray
    entry_phase: np.ndarray
    entry_touch_per_byte: np.ndarray
    entry_share: np.ndarray
    entry_fixed_hz: np.ndarray
    seg_thread: np.ndarray
    seg_phase: np.ndarray
    seg_vma: np.ndarray
    seg_lo: np.ndarray
    seg_hi: np.ndarray
    seg_sigma: np.ndarray
    seg_range: np.ndarray
    zero_bytes_init: float = 0.0

    @property
    def nthreads(self) -> int:
        return int(self.thread_mm.shape[0])

    @property
    def nvmas(self) -> int:
        return int(self.vma_mm.shape[0])

    @property
    def nregions(self) -> int:
        return int(self.region_vma.shape[0])

    @property
    def nclasses(self) -> int:
        return int(self.entry_class.max()) + 1 if self.entry_class.size else int(self.region_class.max()) + 1

    def memory_bytes(self) -> float:
        return float(self.region_present.sum()) * PAGE_SIZE

    def to_attrs(self) -> dict:
        import json
        return {"workload": self.name, "workload_params": json.dumps(self.params, sort_keys=True, default=str)}

    def summary(self) -> str:
        return (f"{self.name} on {self.topology.name}: {self.nproc} process(es), {self.nthreads} threads, "
                f"{self.nvmas} VMAs, {self.nregions} regions of 2 MiB, "
                f"{self.memory_bytes() / GiB:.2f} GiB populated")


# --------------------------------------------------------------------------------- layout
def _process(b: _Builder, mm, nworkers, buf_bytes, *, workers_use_main_stack=False, heap_bytes=132 * 1024,
             malloc=False):
    """Lay out one process's VMAs; returns dict of VMA indices. Thread numbering inside the
    process: 0 = main, 1..nworkers = workers. ``malloc``: the buffer comes from ``malloc``
    (autonuma-benchmark), not from an aligned ``mmap``."""
    v = {}
    v["text"] = b.vma(mm, "text", 64 * 1024, code=SHARED_RO, populated=16, huge=False)
    v["data"] = b.vma(mm, "data", 8 * 1024, populated=2, huge=False)
    v["bss"] = b.vma(mm, "bss", 8 * 1024, populated=2, huge=False)
    v["heap"] = b.vma(mm, "heap", heap_bytes, populated=8, huge=False)
    b.next_page += 1 << 18  # unmapped hole between brk and the mmap area
    # thread stacks: mmap'd top-down, so worker nworkers is lowest
    v["stacks"] = [None] * nworkers
    for w in range(nworkers - 1, -1, -1):
        v["stacks"][w] = b.vma(mm, "stack", 8 * MiB, populated=4, huge=False, owner=1 + w)
    v["buffer"] = b.vma(mm, "buffer", buf_bytes, populated=-1, huge=True, init=INIT_B, malloc=malloc)
    v["libc_text"] = b.vma(mm, "libc_text", 1792 * 1024, code=SHARED_RO, populated=64, huge=False)
    v["libc_data"] = b.vma(mm, "libc_data", 32 * 1024, populated=6, huge=False)
    v["ld_text"] = b.vma(mm, "ld_text", 160 * 1024, code=SHARED_RO, populated=24, huge=False)
    v["ld_data"] = b.vma(mm, "ld_data", 16 * 1024, populated=3, huge=False)
    v["main_stack"] = b.vma(mm, "main_stack", 132 * 1024, populated=6, huge=False, owner=0)
    v["vdso"] = b.vma(mm, "vdso", 8 * 1024, code=UNSUITABLE, populated=2, huge=False)
    b.next_page += 1 << 20  # next process's address space is separate; offsets never mix
    return v


def _small_touches(b, v, thread, is_main, stack_vma):
    """Stack, globals and libc data: written while the thread runs (fixed touch rates)."""
    for ph in (PH_INIT, PH_LOOP):
        b.touch(thread, ph, stack_vma, 0, 0, 1.0, STACK_TOUCH_HZ)
        b.touch(thread, ph, v["data"], 0, 0, 1.0, DATA_TOUCH_HZ)
        b.touch(thread, ph, v["libc_data"], 0, 0, 1.0, DATA_TOUCH_HZ)
        if is_main:
            b.touch(thread, ph, v["heap"], 0, 0, 1.0, DATA_TOUCH_HZ)
            b.touch(thread, ph, v["bss"], 0, 0, 1.0, DATA_TOUCH_HZ)


def _finish(b: _Builder, name, topo, params, nproc, threads, *, zero_bytes_init=0.0) -> Workload:
    """Turn VMAs and access segments into the region and access-class arrays."""
    vmas = b.vmas
    nv = len(vmas)
    reg_vma, reg_start, reg_vp, reg_present, reg_huge, reg_init, reg_edge = [], [], [], [], [], [], []
    vma_first = np.zeros(nv + 1, dtype=np.int64)
    for i, v in enumerate(vmas):
        vma_first[i] = len(reg_vma)
        pages = v["end"] - v["start"]
        n = -(-pages // REGION_PAGES)
        pop = v["populated"]
        for k in range(n):
            vp = min(REGION_PAGES, pages - k * REGION_PAGES)
            reg_vma.append(i)
            reg_start.append(v["start"] + k * REGION_PAGES)
            reg_vp.append(vp)
            if pop < 0:
                present = vp                       # fully populated (the buffer, by its init)
            elif v["kind"] == "stack":
                present = pop if k == n - 1 else 0  # stacks grow down: only the top region is used
            else:
                present = pop if k == 0 else 0
            reg_present.append(min(present, vp))
            reg_huge.append(bool(v["huge"]) and present == REGION_PAGES)
            # glibc serves a large malloc with an mmap of the size plus its 4 KiB chunk header, at an
            # address aligned to a page, not to 2 MiB: the pages before the mapping's first 2 MiB
            # boundary and after its last one (513 together, unless the start happens to be
            # aligned: 1 in 512) cannot be a PMD-mapped huge page. One region stands for them.
            reg_edge.append(bool(v.get("malloc")) and k == 0 and n > 1)
            init = v["init"]
            # a tuple of nodes: the VMA's regions in equal chunks, one per node in order
            reg_init.append(init[(k * len(init)) // n] if isinstance(init, tuple) else init)
    vma_first[nv] = len(reg_vma)
    region_vma = np.array(reg_vma, dtype=np.int64)
    region_start = np.array(reg_start, dtype=np.int64)
    region_vpages = np.array(reg_vp, dtype=np.int64)
    region_present = np.array(reg_present, dtype=np.int64)

    region_class, ent = _region_classes(b, vmas, vma_first, region_vma, region_start, region_vpages, region_present)
    seg = _sweep_segments(b.segments)
    th = threads
    return Workload(
        name=name, topology=topo, params=params, nproc=nproc,
        thread_mm=np.array(th["mm"], dtype=np.int64),
        thread_tid_offset=np.array(th["tid_offset"], dtype=np.int64),
        thread_main=np.array(th["main"], dtype=bool),
        phase_bytes=np.array(th["phase_bytes"], dtype=float).reshape(-1, 2),
        init_bind=np.array(th["init_bind"], dtype=bool),
        waits_for_main=np.array(th["waits"], dtype=bool),
        cpu_bind=np.array(th["cpu_bind"], dtype=np.int64),
        mem_bind=np.array(th["mem_bind"], dtype=bool),
        vma_mm=np.array([v["mm"] for v in vmas], dtype=np.int64),
        vma_start=np.array([v["start"] for v in vmas], dtype=np.int64),
        vma_end=np.array([v["end"] for v in vmas], dtype=np.int64),
        vma_code=np.array([v["code"] for v in vmas], dtype=np.int8),
        vma_kind=tuple(v["kind"] for v in vmas),
        region_vma=region_vma,
        region_start=region_start,
        region_vpages=region_vpages,
        region_present=region_present,
        region_huge=np.array(reg_huge, dtype=bool),
        region_init=np.array(reg_init, dtype=np.int64),
        region_malloc_edge=np.array(reg_edge, dtype=bool),
        region_class=region_class,
        entry_class=ent[:, 0].astype(np.int64), entry_thread=ent[:, 1].astype(np.int64),
        entry_phase=ent[:, 2].astype(np.int64), entry_touch_per_byte=ent[:, 3],
        entry_share=ent[:, 4], entry_fixed_hz=ent[:, 5],
        seg_thread=seg[:, 0].astype(np.int64), seg_phase=seg[:, 1].astype(np.int64),
        seg_vma=seg[:, 2].astype(np.int64), seg_lo=seg[:, 3], seg_hi=seg[:, 4], seg_sigma=seg[:, 5],
        seg_range=seg[:, 6],
        zero_bytes_init=float(zero_bytes_init),
    )


def _region_classes(b: _Builder, vmas, vma_first, region_vma, region_start, region_vpages, region_present):
    """Each region's access class and the classes' entries.

    A region's accessors are the (thread, phase, touches per byte, share, fixed Hz) keys of the
    segments that cover it (a swept range: its bytes in the region over the range's bytes; a
    fixed-rate touch of a small mapping: its last populated region). Consecutive regions of one
    VMA with the same sorted keys share a class; a class's entries are its first region's keys
    in sorted order, as rows (class, thread, phase, touches per byte, share, fixed Hz). Built
    with one numpy pass per segment and one lexicographic sort (a segment covers thousands of
    regions: numa01's 128 threads each sweep the whole buffer)."""
    nr = len(region_vma)
    start_b = region_start * PAGE_SIZE                 # each region's bytes [start_b, end_b)
    end_b = (region_start + region_vpages) * PAGE_SIZE
    cols = ([], [], [], [], [], [])                    # region, thread, phase, k, share, hz
    for (t, ph, vi, lo, hi, range_bytes, hz) in b.segments:
        r0, r1 = int(vma_first[vi]), int(vma_first[vi + 1])
        if hz > 0:   # a small mapping's "hot" region: the populated one
            pr = np.flatnonzero(region_present[r0:r1] > 0)
            if not pr.size:
                continue
            rr = np.array([r0 + pr[-1]], dtype=np.int64)
            share = k = np.zeros(1)
            fixed = np.full(1, hz)
        else:
            base = vmas[vi]["start"] * PAGE_SIZE
            rlo = r0 + lo // REGION_BYTES
            rhi = min(r1, r0 + -(-hi // REGION_BYTES))
            if rhi <= rlo:
                continue
            rr = np.arange(rlo, rhi, dtype=np.int64)
            a = np.maximum(lo, start_b[rlo:rhi] - base)
            z = np.minimum(hi, end_b[rlo:rhi] - base)
            keep = z > a
            rr, a, z = rr[keep], a[keep], z[keep]
            share = (z - a) / range_bytes
            k = np.full(rr.size, 1.0 / range_bytes)
            fixed = np.zeros(rr.size)
        for col, v in zip(cols, (rr, np.full(rr.size, t), np.full(rr.size, ph), k, share, fixed)):
            col.append(v)
    e_r, e_t, e_ph = (np.concatenate(c).astype(np.int64) if c else np.zeros(0, dtype=np.int64) for c in cols[:3])
    e_k, e_sh, e_hz = (np.concatenate(c).astype(float) if c else np.zeros(0) for c in cols[3:])
    order = np.lexsort((e_hz, e_sh, e_k, e_ph, e_t, e_r))   # by region, then its keys as tuples sort
    e_r, e_t, e_ph, e_k, e_sh, e_hz = (x[order] for x in (e_r, e_t, e_ph, e_k, e_sh, e_hz))
    cnt = np.bincount(e_r, minlength=nr)
    first = np.concatenate([[0], np.cumsum(cnt)[:-1]])
    # a region starts a class unless it is the previous region's VMA with the same keys
    new = np.ones(nr, dtype=bool)
    if nr > 1:
        same = (region_vma[1:] == region_vma[:-1]) & (cnt[1:] == cnt[:-1])
        r_of = e_r[e_r > 0]
        idx = np.flatnonzero(e_r > 0)
        cmp = same[r_of - 1]                     # entries whose region could match the previous one
        idx, r_of = idx[cmp], r_of[cmp]
        prev = first[r_of - 1] + (idx - first[r_of])
        differ = ((e_t[idx] != e_t[prev]) | (e_ph[idx] != e_ph[prev]) | (e_k[idx] != e_k[prev])
                  | (e_sh[idx] != e_sh[prev]) | (e_hz[idx] != e_hz[prev]))
        same[np.unique(r_of[differ]) - 1] = False
        new[1:] = ~same
    region_class = np.cumsum(new).astype(np.int64) - 1
    take = new[e_r]
    ent = np.stack([region_class[e_r[take]].astype(float), e_t[take].astype(float), e_ph[take].astype(float),
                    e_k[take], e_sh[take], e_hz[take]], axis=1).reshape(-1, 6)
    return region_class, ent


def _sweep_segments(segments) -> np.ndarray:
    """The byte segments of the thread-phases that sweep their range in order: (S, 7) rows of
    (thread, phase, vma, lo, hi, sigma, range) in the order they were added. A thread-phase's
    segments tile its range when their lengths add up to its ``range_bytes``; each then starts
    at ``sigma`` = the lengths of the segments before it (the thread writes them in that order,
    as ``perf bench numa mem`` writes its global, process and thread regions). A thread that
    writes part of a chunk per loop (an access matrix's fractional rate) does not sweep: its
    regions keep the Poisson clock (``engine.faults``)."""
    by_tp: dict = {}
    for (t, ph, vi, lo, hi, range_bytes, hz) in segments:
        if hz > 0 or hi <= lo:
            continue
        by_tp.setdefault((t, ph), []).append((vi, lo, hi, range_bytes))
    rows = []
    for (t, ph), segs in by_tp.items():
        total = sum(hi - lo for _, lo, hi, _ in segs)
        if any(r != total for *_, r in segs):
            continue
        sigma = 0
        for vi, lo, hi, r in segs:
            rows.append((t, ph, vi, lo, hi, sigma, r))
            sigma += hi - lo
    rows.sort(key=lambda x: (x[0], x[1]))   # by thread, then phase; a thread-phase's own order kept
    return np.array(rows, dtype=float).reshape(-1, 7)


def _threads_table():
    return dict(mm=[], tid_offset=[], main=[], phase_bytes=[], init_bind=[], waits=[], cpu_bind=[], mem_bind=[])


def _add_thread(th, mm, tid_offset, main, init_b, loop_b, *, bind=False, waits=False, cpu_bind=-1, mem_bind=False):
    th["mm"].append(mm); th["tid_offset"].append(tid_offset); th["main"].append(main)
    th["phase_bytes"].append((float(init_b), float(loop_b))); th["init_bind"].append(bind)
    th["waits"].append(waits); th["cpu_bind"].append(cpu_bind); th["mem_bind"].append(mem_bind)
    return len(th["mm"]) - 1


# --------------------------------------------------------------------------------- autonuma-benchmark
def _numa01(topo, name, *, thread_alloc, bind_mode, threads=None, size_bytes=3 * GiB, loops=None, nproc=2):
    C = topo.ncpus
    T = threads if threads is not None else C // 2
    loops = loops if loops is not None else (1000 if thread_alloc else 50)
    b = _Builder()
    th = _threads_table()
    # NODEMASK1 = the first half of the nodes, NODEMASK2 = the rest (spec §1.1); the halves of the
    # nodes with CPUs (a process cannot be bound to the CPUs of a memory-only node)
    cpu_nodes = topo.cpu_nodes.tolist()
    half = max(1, len(cpu_nodes) // 2)
    mask1, mask2 = cpu_nodes[:half], cpu_nodes[half:]
    if bind_mode != "none" and len(cpu_nodes) < 2:
        raise NumalabValueError(
            f"workload {name!r} binds its two processes to the two halves of the nodes; topology "
            f"{topo.name!r} has {len(cpu_nodes)} node with CPUs; allowed: at least 2 nodes with CPUs (start_bench.sh refuses fewer)")
    tid = 0
    for p in range(nproc):
        # HARD_BIND: the child (p=1 after fork) gets the first half, the parent the second
        if bind_mode == "hard":
            cpus, mems = (mask2, mask2) if p == 0 else (mask1, mask1)
        elif bind_mode == "inverse":
            # the swap only works for the child (spec §1.6 observation)
            cpus, mems = (mask2, mask2) if p == 0 else (mask1, mask2)
        else:
            cpus, mems = None, None
        v = _process(b, p, T, size_bytes, malloc=True)   # numa01.c: malloc(SIZE) after the fork
        if mems is not None:
            # MPOL_BIND to the mask: a page goes to its first toucher's node. The workers of every
            # node of the mask start at the buffer's start together, so the buffer is split in
            # equal chunks, one per node of the mask (as numa02's HARD_BIND)
            b.vmas[v["buffer"]]["init"] = tuple(mems)
        S = size_bytes // T
        main = _add_thread(th, p, tid, True, 0, 0, cpu_bind=cpus[0] if cpus else -1, mem_bind=mems is not None)
        tid += 1
        _small_touches(b, v, main, True, v["main_stack"])
        for i in range(T):
            # the scheduler spreads a bound process evenly over the CPUs of its mask
            w = _add_thread(th, p, tid, False, size_bytes if bind_mode == "none" else 0,
                            (S if thread_alloc else size_bytes) * loops,
                            bind=bind_mode == "none", cpu_bind=cpus[(i * len(cpus)) // T] if cpus else -1,
                            mem_bind=mems is not None)
            tid += 1
            if bind_mode == "none":   # every thread zero-writes the whole buffer under bind-to-B
                b.touch(w, PH_INIT, v["buffer"], 0, size_bytes, size_bytes)
            lo, hi = (i * S, (i + 1) * S) if thread_alloc else (0, size_bytes)
            b.touch(w, PH_LOOP, v["buffer"], lo, hi, hi - lo)
            _small_touches(b, v, w, False, v["stacks"][i])
    params = dict(threads_per_process=T, bytes_per_process=size_bytes, loops=loops, processes=nproc,
                  thread_alloc=thread_alloc, bind=bind_mode)
    return _finish(b, name, topo, params, nproc, th, zero_bytes_init=nproc * size_bytes)


def _numa02(topo, name, *, smt, bind_mode, threads=None, size_bytes=1 * GiB, loops=800):
    C = topo.ncpus
    T = threads if threads is not None else (C // 2 if smt else C)
    S = size_bytes // T
    b = _Builder()
    th = _threads_table()
    v = _process(b, 0, T, size_bytes, malloc=True)      # numa02.c: malloc(SIZE)
    # the nodes with CPUs: numa02's bind variants put worker i and chunk i on one of them
    cpu_nodes = topo.cpu_nodes.tolist()
    N = len(cpu_nodes)
    if bind_mode == "none":
        # the main thread zero-writes the whole buffer (first touch on its node)
        main = _add_thread(th, 0, 0, True, size_bytes, 0)
        b.touch(main, PH_INIT, v["buffer"], 0, size_bytes, size_bytes)
        b.vmas[v["buffer"]]["init"] = INIT_MAIN
    else:
        main = _add_thread(th, 0, 0, True, 0, 0, mem_bind=True)
        # chunk n of the buffer lands on node n (main binds itself before zeroing chunk n)
        b.vmas[v["buffer"]]["init"] = tuple(cpu_nodes)
    _small_touches(b, v, main, True, v["main_stack"])
    for i in range(T):
        node = (i * N) // T
        if bind_mode == "inverse":
            node = ((T - 1 - i) * N) // T
        w = _add_thread(th, 0, 1 + i, False, 0, S * loops, waits=bind_mode == "none",
                        cpu_bind=-1 if bind_mode == "none" else cpu_nodes[node],
                        mem_bind=bind_mode != "none")
        b.touch(w, PH_LOOP, v["buffer"], i * S, (i + 1) * S, S)
        _small_touches(b, v, w, False, v["stacks"][i])
    return _finish(b, name, topo, dict(threads=T, bytes=size_bytes, loops=loops, smt=smt, bind=bind_mode),
                   1, th, zero_bytes_init=size_bytes)


_AUTONUMA = {
    "numa01": dict(kind="numa01", thread_alloc=False),
    "numa01_THREAD_ALLOC": dict(kind="numa01", thread_alloc=True),
    "numa02": dict(kind="numa02", smt=False),
    "numa02_SMT": dict(kind="numa02", smt=True),
}
_ALIASES = {"NUMA01_THREADLOCAL": "numa01_THREAD_ALLOC", "NUMA01": "numa01", "NUMA02": "numa02",
            "NUMA02_SMT": "numa02_SMT"}


def _names() -> list[str]:
    out = []
    for base in _AUTONUMA:
        out += [base, f"{base}_HARD_BIND", f"{base}_INVERSE_BIND"]
    return out + ["perf-bench-numa-mem", "matrix"]


def workloads() -> list[str]:
    """Names accepted by :func:`workload` (aliases: ``NUMA01_THREADLOCAL`` etc.)."""
    return _names()


def workload(name: str, topology="2s-128", **overrides) -> Workload:
    """Lay out a named workload on ``topology`` (a Topology or a preset name).

    autonuma-benchmark (spec benchmarks-and-reports.md §1.9): ``numa01``,
    ``numa01_THREAD_ALLOC`` (alias ``NUMA01_THREADLOCAL``), ``numa02``, ``numa02_SMT`` and
    their ``_HARD_BIND`` / ``_INVERSE_BIND`` variants (numa01's bind each process to one half of
    the nodes, its workers spread evenly over the half's CPUs and its buffer in equal chunks over
    the half's nodes; numa02's spread the slices over every node). Overrides: ``threads`` (per process),
    ``size_bytes`` (per process), ``loops``; numa01 also ``nproc``.
    ``perf-bench-numa-mem``: see :func:`perf_bench_numa_mem` (overrides are its arguments).
    ``matrix``: see :func:`from_access_matrix` (``matrix=`` required).

    An autonuma-benchmark workload is laid out once per (name, topology, overrides) in a
    process: a later call returns the same object, whose arrays are read-only (copy one to
    change it). The largest layouts (over 32 MiB of arrays) are built afresh each time.
    """
    topo = Topology.coerce(topology)
    if not isinstance(name, str):
        raise NumalabValueError(f"workload={name!r} must be a name; allowed: {', '.join(_names())}")
    name = _ALIASES.get(name, name)
    check_choice("workload", name, _names())
    if name == "perf-bench-numa-mem":
        return perf_bench_numa_mem(topo, **overrides)
    if name == "matrix":
        return from_access_matrix(topology=topo, **overrides)
    bind_mode = "none"
    base = name
    for suffix, mode in (("_HARD_BIND", "hard"), ("_INVERSE_BIND", "inverse")):
        if name.endswith(suffix):
            base, bind_mode = name[: -len(suffix)], mode
    spec = _AUTONUMA[base]
    allowed = {"threads", "size_bytes", "loops"} | ({"nproc"} if spec["kind"] == "numa01" else set())
    for key in overrides:
        if key not in allowed:
            raise NumalabValueError(f"override {key}= is not known for {name}; allowed: {', '.join(sorted(allowed))}")
    kw = dict(overrides)
    if "threads" in kw:
        kw["threads"] = check_int("threads", kw["threads"], lo=1, hi=4096)
    if "size_bytes" in kw:
        kw["size_bytes"] = int(check_number("size_bytes", kw["size_bytes"], lo=0, lo_open=True))
        if kw["size_bytes"] < PAGE_SIZE:
            raise NumalabValueError(f"size_bytes={kw['size_bytes']} must be at least one page ({PAGE_SIZE})")
    if "loops" in kw:
        kw["loops"] = check_int("loops", kw["loops"], lo=1)
    if "nproc" in kw:
        kw["nproc"] = check_int("nproc", kw["nproc"], lo=1, hi=64)
    _precheck(topo, name, (kw.get("nproc", 2) if spec["kind"] == "numa01" else 1)
              * kw.get("size_bytes", 3 * GiB if spec["kind"] == "numa01" else GiB))
    key = (name, topo, tuple(sorted(kw.items())))
    try:
        wl = _LAID_OUT.get(key)
    except TypeError:  # a topology with an unhashable field: laid out every time
        key = wl = None
    if wl is not None:
        _LAID_OUT.move_to_end(key)
        # an equal topology compares its fields only: the caller's own object (its source and
        # provenance, which the Dataset records) goes with the shared arrays
        return wl if wl.topology is topo else dataclasses.replace(wl, topology=topo)
    if spec["kind"] == "numa01":
        wl = _numa01(topo, name, thread_alloc=spec["thread_alloc"], bind_mode=bind_mode, **kw)
    else:
        wl = _numa02(topo, name, smt=spec["smt"], bind_mode=bind_mode, **kw)
    _check_fits(wl)
    if key is not None:
        _remember(key, wl)
    return wl


# Workloads laid out in this process, by (name, topology, overrides): a named workload is a pure
# function of those, and laying one out costs 0.02-0.3 s (numa01's 128 sweeping threads on
# 8n-genoa-nps4: 0.28 s), paid again by every simulate call, sweep batch and explorer answer
# that names it. The arrays of a remembered workload are made read-only, so one caller cannot
# change what the next one is given; the largest workloads are laid out afresh each time
# instead of being kept (a bound on what the process holds: _LAID_OUT_MAX x _LAID_OUT_BYTES).
_LAID_OUT: OrderedDict = OrderedDict()
_LAID_OUT_MAX = 16
_LAID_OUT_BYTES = 32 << 20


def _remember(key, wl: Workload) -> None:
    arrays = [getattr(wl, f.name) for f in dataclasses.fields(wl)]
    arrays = [a for a in arrays if isinstance(a, np.ndarray)]
    if sum(a.nbytes for a in arrays) > _LAID_OUT_BYTES:
        return
    for a in arrays:
        a.setflags(write=False)
    _LAID_OUT[key] = wl
    while len(_LAID_OUT) > _LAID_OUT_MAX:
        _LAID_OUT.popitem(last=False)


def _precheck(topo, name, total_bytes) -> None:
    """Refuse a memory size the topology cannot hold, or whose regions would not fit in this
    machine's memory, before laying out its regions."""
    # ~20 int64/float64 arrays over the regions while building (2 MiB regions; 4 KiB-page
    # VMAs are laid out in the same 2 MiB regions)
    check_memory("size_bytes", int(total_bytes), total_bytes / (2 << 20) * 20 * 8)
    if total_bytes / GiB > topo.mem_total_GiB:
        raise NumalabValueError(
            f"workload {name} needs {total_bytes / GiB:.1f} GiB but topology {topo.name} has "
            f"{topo.mem_total_GiB:.0f} GiB; allowed: at most {topo.mem_total_GiB:.0f} GiB (pass size_bytes=...)")


def _check_fits(wl: Workload) -> None:
    topo = wl.topology
    # the model has no oversubscribed CPUs: the workers bound to a node must fit its CPUs (a
    # numa01 HARD_BIND process on an odd node count, or more processes than halves, do not)
    bound = wl.cpu_bind[~wl.thread_main]
    per_node = np.bincount(bound[bound >= 0], minlength=topo.nodes)
    over = np.flatnonzero(per_node > topo.node_cpus)
    if over.size:
        n = int(over[0])
        cpus = int(topo.node_cpus[n])
        raise NumalabValueError(
            f"workload {wl.name!r} binds {int(per_node[n])} workers to node {n}, which has {cpus} "
            f"CPUs on topology {topo.name!r} ({topo.nodes} nodes); allowed: at most {cpus} "
            f"bound workers per node (an even number of nodes, fewer threads=... or nproc=...)")
    workers = int((~wl.thread_main).sum())
    if workers > topo.ncpus:
        raise NumalabValueError(
            f"workload {wl.name} needs {workers} worker threads but topology {topo.name} has {topo.ncpus} CPUs; "
            f"allowed: at most {topo.ncpus} threads (pass threads=...)")
    need = wl.memory_bytes() / GiB
    if need > topo.mem_total_GiB:
        raise NumalabValueError(
            f"workload {wl.name} needs {need:.1f} GiB but topology {topo.name} has {topo.mem_total_GiB:.0f} GiB; "
            f"allowed: at most {topo.mem_total_GiB:.0f} GiB (pass size_bytes=...)")
    bound = wl.region_init[wl.region_init >= 0]
    if bound.size and bound.max() >= topo.nodes:
        raise NumalabValueError(f"workload {wl.name} binds memory to node {bound.max()} of a {topo.nodes}-node topology")
    if bound.size and not topo.has_memory[bound].all():
        n = int(bound[~topo.has_memory[bound]][0])
        raise NumalabValueError(f"workload {wl.name} binds memory to node {n}, which has no memory on topology "
                                f"{topo.name!r}; allowed: nodes {np.flatnonzero(topo.has_memory).tolist()}")


def perf_bench_numa_mem(topology="2s-128", *, processes=1, threads=1, global_mb=0, process_mb=0,
                        thread_mb=0, loops=100, zero_node0=True) -> Workload:
    """A ``perf bench numa mem``-like workload (spec benchmarks-and-reports.md §1.10).

    ``-p processes -t threads -G global_mb -P process_mb -T thread_mb -l loops``: each loop a
    thread zeroes (``-Z``) the global region, then its process region, then its own thread
    region, sequentially. ``-0`` (``zero_node0=True``) allocates everything on node 0, else
    each region is first touched on its first user's node. Global memory shared across
    processes is modelled per process (no cross-mm sharing in this engine)."""
    topo = Topology.coerce(topology)
    processes = check_int("processes", processes, lo=1, hi=64)
    threads = check_int("threads", threads, lo=1, hi=4096)
    loops = check_int("loops", loops, lo=1)
    for n, val in (("global_mb", global_mb), ("process_mb", process_mb), ("thread_mb", thread_mb)):
        check_number(n, val, lo=0)
    if global_mb + process_mb + thread_mb <= 0:
        raise NumalabValueError("global_mb + process_mb + thread_mb must be > 0; allowed: sizes in MB >= 0, not all 0")
    _precheck(topo, "perf-bench-numa-mem", processes * (global_mb + process_mb + thread_mb * threads) * MiB)
    b = _Builder()
    th = _threads_table()
    tid = 0
    shared_mb = global_mb + process_mb
    for p in range(processes):
        buf = int((shared_mb + thread_mb * threads) * MiB)
        v = _process(b, p, threads, max(buf, PAGE_SIZE))
        b.vmas[v["buffer"]]["init"] = 0 if zero_node0 else INIT_OWNER
        main = _add_thread(th, p, tid, True, 0, 0)
        tid += 1
        _small_touches(b, v, main, True, v["main_stack"])
        sh = int(shared_mb * MiB)
        own = int(thread_mb * MiB)
        per_loop = sh + own
        for i in range(threads):
            w = _add_thread(th, p, tid, False, 0, per_loop * loops)
            tid += 1
            if sh:
                b.touch(w, PH_LOOP, v["buffer"], 0, sh, per_loop)
            if own:
                b.touch(w, PH_LOOP, v["buffer"], sh + i * own, sh + (i + 1) * own, per_loop)
            _small_touches(b, v, w, False, v["stacks"][i])
    wl = _finish(b, "perf-bench-numa-mem", topo,
                 dict(processes=processes, threads=threads, global_mb=global_mb, process_mb=process_mb,
                      thread_mb=thread_mb, loops=loops, zero_node0=zero_node0),
                 processes, th, zero_bytes_init=0.0)
    _check_fits(wl)
    return wl


def from_access_matrix(matrix=None, *, topology="2s-128", chunk_bytes=64 * MiB, loops=100, init_node=0,
                       name="matrix") -> Workload:
    """A one-process workload from a user's access-rate matrix.

    ``matrix[t, k]`` (threads × chunks, >= 0) is the relative write rate of thread ``t`` to
    chunk ``k`` of one anonymous buffer of ``K * chunk_bytes`` bytes: per loop, thread ``t``
    writes ``matrix[t, k] / max(matrix) * chunk_bytes`` bytes of chunk ``k``. All memory
    starts on ``init_node`` (or ``-1``: on the node of the chunk's heaviest writer)."""
    topo = Topology.coerce(topology)
    if matrix is None:
        raise NumalabValueError("matrix is required: a (threads, chunks) array of non-negative rates")
    try:
        m = np.asarray(matrix, dtype=float)
    except (TypeError, ValueError):
        raise NumalabValueError("matrix must be a 2-D array of numbers; allowed: shape (threads, chunks)") from None
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise NumalabValueError(f"matrix has shape {m.shape}; allowed: a 2-D (threads, chunks) array, both >= 1")
    if not np.all(np.isfinite(m)) or np.any(m < 0):
        raise NumalabValueError("matrix holds negative or non-finite rates; allowed: finite rates >= 0")
    if np.any(m.sum(axis=1) <= 0):
        raise NumalabValueError("matrix has a thread (row) with no accesses; allowed: every row with a rate > 0")
    chunk_bytes = int(check_number("chunk_bytes", chunk_bytes, lo=0, lo_open=True))
    if chunk_bytes % REGION_BYTES:
        raise NumalabValueError(f"chunk_bytes={chunk_bytes} must be a multiple of 2 MiB ({REGION_BYTES})")
    loops = check_int("loops", loops, lo=1)
    init_node = check_int("init_node", init_node, lo=-1, hi=topo.nodes - 1)
    T, K = m.shape
    _precheck(topo, name, K * chunk_bytes)
    if T > topo.ncpus:
        raise NumalabValueError(f"matrix has {T} threads but topology {topo.name} has {topo.ncpus} CPUs; "
                                f"allowed: at most {topo.ncpus} rows")
    b = _Builder()
    th = _threads_table()
    v = _process(b, 0, T, K * chunk_bytes)
    main = _add_thread(th, 0, 0, True, 0, 0)
    _small_touches(b, v, main, True, v["main_stack"])
    frac = m / m.max()
    for t in range(T):
        per_loop = float((frac[t] * chunk_bytes).sum())
        w = _add_thread(th, 0, 1 + t, False, 0, per_loop * loops)
        for k in range(K):
            if frac[t, k] > 0:
                # a partial write of a chunk still touches its regions each loop: spread it
                b.touch(w, PH_LOOP, v["buffer"], k * chunk_bytes, (k + 1) * chunk_bytes, per_loop / frac[t, k]
                        if frac[t, k] < 1 else per_loop)
        _small_touches(b, v, w, False, v["stacks"][t])
    wl = _finish(b, name, topo, dict(threads=T, chunks=K, chunk_bytes=chunk_bytes, loops=loops,
                                     init_node=init_node, matrix=m.round(6).tolist()), 1, th)
    init = wl.region_init.copy()
    buf = np.flatnonzero(np.array(wl.vma_kind)[wl.region_vma] == "buffer")
    if init_node >= 0:
        init[buf] = init_node
    object.__setattr__(wl, "region_init", init)
    _check_fits(wl)
    return wl


class _CallableModule(__import__("types").ModuleType):
    """``numalab.workloads`` is both this module and the function listing workload names:
    importing the submodule rebinds the package attribute to the module, so the module itself
    answers ``nl.workloads()`` (the lazy export in ``numalab/__init__.py`` is shadowed)."""

    def __call__(self):
        return workloads()


__import__("sys").modules[__name__].__class__ = _CallableModule

"""Workload layouts: the autonuma-benchmark table (spec benchmarks-and-reports.md §1.9), the
VMAs a real process has, TIDs, and bad input."""

import numpy as np
import pytest

import numalab as nl
from numalab.errors import NumalabValueError
from numalab.topology import FIELDS, Topology
from numalab.workloads import (PH_LOOP, REGION_BYTES, REGION_PAGES, SHARED_RO, from_access_matrix,
                               perf_bench_numa_mem, workload)

GiB = 1 << 30
TOPO = Topology.preset("2s-128")


def buffer_regions(wl, mm):
    kinds = np.array(wl.vma_kind)
    v = np.flatnonzero((kinds == "buffer") & (wl.vma_mm == mm))
    assert v.size == 1, "the big buffer is ONE VMA per process"
    return np.flatnonzero(wl.region_vma == v[0])


def loop_entries(wl, t):
    sel = (wl.entry_thread == t) & (wl.entry_phase == PH_LOOP) & (wl.entry_share > 0)
    return sel


def test_names_and_aliases():
    names = nl.workloads()
    for base in ("numa01", "numa01_THREAD_ALLOC", "numa02", "numa02_SMT"):
        for suffix in ("", "_HARD_BIND", "_INVERSE_BIND"):
            assert base + suffix in names
    a = nl.workload("NUMA01_THREADLOCAL", TOPO)
    b = nl.workload("numa01_THREAD_ALLOC", TOPO)
    assert a.name == b.name == "numa01_THREAD_ALLOC"
    np.testing.assert_array_equal(a.region_class, b.region_class)


@pytest.mark.parametrize("name, procs, threads, loops", [
    ("numa01", 2, 64, 50), ("numa01_THREAD_ALLOC", 2, 64, 1000), ("numa02", 1, 128, 800), ("numa02_SMT", 1, 64, 800)])
def test_table_1_9(name, procs, threads, loops):
    wl = nl.workload(name, TOPO)
    assert wl.nproc == procs
    workers = ~wl.thread_main
    assert np.bincount(wl.thread_mm[workers]).tolist() == [threads] * procs
    size = 3 * GiB if name.startswith("numa01") else 1 * GiB
    for mm in range(procs):
        regs = buffer_regions(wl, mm)
        assert wl.region_present[regs].sum() * 4096 == size
        assert wl.region_huge[regs].all()
    # loop bytes: whole buffer per pass (numa01) or the thread's slice
    per_pass = size if name == "numa01" else size // threads
    np.testing.assert_allclose(wl.phase_bytes[workers, 1], per_pass * loops)
    if name.startswith("numa01"):
        # init: every worker writes the whole buffer once, bound to node B
        np.testing.assert_allclose(wl.phase_bytes[workers, 0], size)
        assert wl.init_bind[workers].all()
        assert (wl.region_init[buffer_regions(wl, 0)] == -1).all()          # INIT_B: drawn per seed
    else:
        main = np.flatnonzero(wl.thread_main)[0]
        assert wl.phase_bytes[main, 0] == size and wl.waits_for_main[workers].all()


def test_thread_alloc_slices_are_private_and_numa01_shared():
    wl = nl.workload("numa01_THREAD_ALLOC", TOPO)
    regs = buffer_regions(wl, 0)
    S = 3 * GiB // 64
    for i, t in enumerate(np.flatnonzero((wl.thread_mm == 0) & ~wl.thread_main)[:5]):
        cls = np.unique(wl.entry_class[loop_entries(wl, t)])
        touched = np.flatnonzero(np.isin(wl.region_class, cls))
        assert touched.tolist() == regs[i * S // REGION_BYTES:(i + 1) * S // REGION_BYTES].tolist()
    wl1 = nl.workload("numa01", TOPO)
    regs1 = buffer_regions(wl1, 1)
    cls = np.unique(wl1.region_class[regs1])
    assert cls.size == 1
    writers = wl1.entry_thread[(wl1.entry_class == cls[0]) & (wl1.entry_phase == PH_LOOP)]
    assert np.array_equal(np.sort(writers), np.flatnonzero((wl1.thread_mm == 1) & ~wl1.thread_main))


def test_process_has_real_vmas_in_address_order():
    wl = nl.workload("numa01", TOPO)
    for mm in range(2):
        v = np.flatnonzero(wl.vma_mm == mm)
        kinds = [wl.vma_kind[i] for i in v]
        assert kinds.count("stack") == 64 and kinds.count("buffer") == 1
        for k in ("text", "data", "heap", "libc_text", "libc_data", "main_stack"):
            assert k in kinds
        assert np.all(wl.vma_start[v][1:] >= wl.vma_end[v][:-1])          # sorted, disjoint
        assert np.all(wl.vma_start[v] % REGION_PAGES == 0)
        assert wl.vma_code[v][kinds.index("text")] == SHARED_RO
        # one 8 MiB stack VMA per worker, written only by its own thread
        for i in [j for j, k in zip(v, kinds) if k == "stack"][:8]:
            assert (wl.vma_end[i] - wl.vma_start[i]) * 4096 == 8 << 20
            cls = np.unique(wl.region_class[wl.region_vma == i])
            writers = np.unique(wl.entry_thread[np.isin(wl.entry_class, cls)])
            assert writers.size == 1 and not wl.thread_main[writers[0]]


def test_tids_are_consecutive_per_fork_order():
    wl = nl.workload("numa01", TOPO)
    off = wl.thread_tid_offset
    assert off.tolist() == list(range(130))
    assert wl.thread_main[0] and wl.thread_main[65] and wl.thread_mm[65] == 1


def test_thp_regions_and_stacks_not_huge():
    wl = nl.workload("numa02", TOPO)
    kinds = np.array(wl.vma_kind)[wl.region_vma]
    assert not wl.region_huge[kinds == "stack"].any()
    assert wl.region_present[kinds == "stack"].sum() > 0


def test_hard_bind_places_memory_and_threads():
    wl = nl.workload("numa02_HARD_BIND", TOPO)
    regs = buffer_regions(wl, 0)
    assert set(wl.region_init[regs].tolist()) == {0, 1}
    assert (wl.cpu_bind[~wl.thread_main] >= 0).all() and wl.mem_bind.all()
    inv = nl.workload("numa02_INVERSE_BIND", TOPO)
    workers = np.flatnonzero(~inv.thread_main)
    # every worker's slice is on the other node
    for t in workers[:: 16]:
        cls = np.unique(inv.entry_class[loop_entries(inv, t)])
        nodes = np.unique(inv.region_init[np.isin(inv.region_class, cls)])
        assert nodes.tolist() != [inv.cpu_bind[t]]


@pytest.mark.parametrize("preset", ["2s-128", "4s-144", "8n-genoa-nps4"])
def test_numa01_hard_bind_binds_each_process_to_half_of_the_nodes(preset):
    topo = Topology.preset(preset)
    half = list(range(topo.nodes // 2)), list(range(topo.nodes // 2, topo.nodes))  # NODEMASK1, NODEMASK2
    for name in ("numa01_HARD_BIND", "numa01_THREAD_ALLOC_INVERSE_BIND"):
        wl = nl.workload(name, topo)
        workers = ~wl.thread_main
        per_node = np.bincount(wl.cpu_bind[workers], minlength=topo.nodes)
        assert (per_node == topo.cpus_per_node).all()              # the halves are filled evenly, no CPU twice
        for mm, (cpus, mems) in enumerate([(half[1], half[1]),
                                           (half[0], half[0] if "HARD" in name else half[1])]):
            mine = workers & (wl.thread_mm == mm)
            assert set(wl.cpu_bind[mine].tolist()) == set(cpus)
            init = wl.region_init[buffer_regions(wl, mm)]
            assert set(init.tolist()) == set(mems)                # memory on every node of the mask
            assert np.all(np.diff(init) >= 0)                      # in equal chunks, in node order
            assert abs(np.bincount(init)[mems].max() - np.bincount(init)[mems].min()) <= 1
        assert wl.mem_bind.all()


def test_numa01_hard_bind_runs_on_four_nodes():
    # used to stop with "a node runs more threads than it has CPUs" (every worker on one node)
    topo = Topology.preset("4s-144")
    hard = nl.simulate(nl.workload("numa01_HARD_BIND", topo, loops=2), "6.12", seeds=1)
    free = nl.simulate(nl.workload("numa01", topo, loops=2), "6.12", seeds=1)
    assert int(hard.numa_pages_migrated.sum()) == 0 and int(hard.numa_hint_faults.sum()) == 0
    assert float(hard.elsp.max()) < float(free.elsp.min())      # the hand placement is the faster one


@pytest.mark.parametrize("topo, kw, match", [
    (Topology(nodes=1, cpus_per_node=16), {}, "at least 2 nodes"),
    (Topology(nodes=3, cpus_per_node=16), {}, "binds 24 workers to node 0, which has 16 CPUs"),
    (TOPO, {"nproc": 3, "threads": 64}, "binds 128 workers to node 0"),
])
def test_numa01_bind_refuses_what_the_cpus_cannot_hold(topo, kw, match):
    with pytest.raises(NumalabValueError, match=match):
        nl.workload("numa01_HARD_BIND", topo, **kw)
    assert nl.workload("numa01_HARD_BIND", TOPO, nproc=3, threads=20).nproc == 3


def test_perf_bench_and_matrix():
    wl = perf_bench_numa_mem(TOPO, processes=2, threads=4, process_mb=64, thread_mb=32, loops=10)
    assert wl.nproc == 2 and (~wl.thread_main).sum() == 8
    m = np.array([[1.0, 0.0, 0.5], [0.0, 2.0, 0.0]])
    wl2 = from_access_matrix(m, topology=TOPO, chunk_bytes=8 << 20, loops=5)
    t0, t1 = np.flatnonzero(~wl2.thread_main)
    assert wl2.phase_bytes[t1, 1] > wl2.phase_bytes[t0, 1]
    regs = buffer_regions(wl2, 0)
    assert regs.size == 12 and (wl2.region_init[regs] == 0).all()
    # thread 1 writes only chunk 1
    cls = np.unique(wl2.entry_class[loop_entries(wl2, t1)])
    assert np.flatnonzero(np.isin(wl2.region_class, cls)).tolist() == regs[4:8].tolist()
    w3 = nl.workload("matrix", TOPO, matrix=m)
    assert w3.nthreads == 3


@pytest.mark.parametrize("call, needle", [
    (lambda: nl.workload("numa03", TOPO), "numa01"),
    (lambda: nl.workload("numa01", "nosuch"), "2s-128"),
    (lambda: nl.workload("numa01", TOPO, threads=100), "CPUs"),
    (lambda: nl.workload("numa01", TOPO, size_bytes=200 * GiB), "GiB"),
    (lambda: nl.workload("numa01", TOPO, size_bytes=0), "size_bytes"),
    (lambda: nl.workload("numa01", TOPO, size_bytes=-5), "size_bytes"),
    (lambda: nl.workload("numa02", TOPO, loops=0), "loops"),
    (lambda: nl.workload("numa02", TOPO, colour="red"), "colour"),
    (lambda: from_access_matrix([1.0, 2.0], topology=TOPO), "shape"),
    (lambda: from_access_matrix([[1.0, -2.0]], topology=TOPO), "negative"),
    (lambda: from_access_matrix([[0.0, 0.0]], topology=TOPO), "row"),
    (lambda: from_access_matrix(np.ones((200, 2)), topology=TOPO), "CPUs"),
    (lambda: perf_bench_numa_mem(TOPO, threads=0), "threads"),
])
def test_bad_input(call, needle):
    with pytest.raises(NumalabValueError, match=needle):
        call()


def test_sweep_segments_say_where_each_writer_is_in_its_range():
    """The hinting-fault clock of a sweep (engine.faults.sweep_faults) needs each segment's place
    in its thread's sweep: numa01 sweeps its whole buffer (init and loop), numa01_THREAD_ALLOC
    its slice in the loop, perf-bench-numa-mem the global region then its own (sigma = the
    global region's length), and an access matrix's partial chunk writes do not sweep."""
    topo = Topology(nodes=2, cpus_per_node=8, smt=2, name="t")
    wl = nl.workload("numa01", topo)
    GiB = 1 << 30
    workers = np.flatnonzero(~wl.thread_main)
    for ph in (1, PH_LOOP):
        sel = wl.seg_phase == ph
        assert sorted(wl.seg_thread[sel].tolist()) == sorted(workers.tolist())
        assert np.all(wl.seg_lo[sel] == 0) and np.all(wl.seg_hi[sel] == 3 * GiB)
        assert np.all(wl.seg_sigma[sel] == 0) and np.all(wl.seg_range[sel] == 3 * GiB)
    ta = nl.workload("numa01_THREAD_ALLOC", topo)
    loop = ta.seg_phase == PH_LOOP
    S = 3 * GiB // (topo.ncpus // 2)      # one slice per worker of a process
    assert np.all(ta.seg_hi[loop] - ta.seg_lo[loop] == S) and np.all(ta.seg_range[loop] == S)
    pb = nl.workloads.perf_bench_numa_mem(topo, threads=2, global_mb=4, thread_mb=2)
    t = int(np.flatnonzero(~pb.thread_main)[1])
    mine = np.flatnonzero(pb.seg_thread == t)
    assert pb.seg_sigma[mine].tolist() == [0.0, 4 << 20] and np.all(pb.seg_range[mine] == 6 << 20)
    m = from_access_matrix(np.array([[1.0, 0.5], [0.0, 1.0]]), topology=topo, chunk_bytes=4 << 20)
    # thread 1 writes half of chunk 1 per loop: no sweep; thread 2 sweeps chunk 1
    assert m.seg_thread.tolist() == [2]


def test_layout_marks_swept_classes_and_shared_loops():
    from numalab.engine import EngineOptions
    from numalab.engine.layout import Layout

    topo = Topology(nodes=2, cpus_per_node=8, smt=2, name="t")
    for name, shared in (("numa01", True), ("numa01_THREAD_ALLOC", False), ("numa02", False)):
        wl = nl.workload(name, topo)
        lay = Layout(wl, EngineOptions())
        kinds = np.array(wl.vma_kind)[wl.region_vma]
        buf = wl.region_class[kinds == "buffer"]
        stack = wl.region_class[(kinds == "stack") & (wl.region_present > 0)]
        assert lay.cls_sweep[buf].all() and not lay.cls_sweep[stack].any(), name
        assert lay.loop_shared[~wl.thread_main].all() == shared and not lay.loop_shared[wl.thread_main].any()
        off = Layout(wl, EngineOptions(first_arrival=False))
        assert not off.cls_sweep.any()


def test_a_named_workload_is_laid_out_once_per_arguments(monkeypatch):
    """workload() returns the same read-only layout for the same (name, topology, overrides):
    the engine, sweeps and explorers reuse it; other arguments lay out another; a caller cannot
    change what the next one gets; the cache is bounded in entries and skips the largest."""
    import numalab.workloads as wmod

    monkeypatch.setattr(wmod, "_LAID_OUT", type(wmod._LAID_OUT)())
    built = []
    real = wmod._numa02
    monkeypatch.setattr(wmod, "_numa02", lambda *a, **k: built.append(k) or real(*a, **k))
    a = workload("numa02", "2s-128", threads=8)
    assert workload("numa02", Topology.preset("2s-128"), threads=8) is a   # an equal topology object
    assert len(built) == 1
    # equal fields, another source: the arrays are shared, the caller's topology goes with them
    measured = Topology(**{k: getattr(a.topology, k) for k in (*FIELDS, "name")}, source="measured here")
    again = workload("numa02", measured, threads=8)
    assert len(built) == 1 and again.region_init is a.region_init
    assert again.topology is measured and again.topology.to_attrs()["topology_source"] == "measured here"
    assert workload("numa02", "2s-128", threads=4) is not a and len(built) == 2
    assert workload("numa02", "4s-144", threads=8) is not a and len(built) == 3
    with pytest.raises(ValueError, match="read-only"):
        a.region_init[0] = 0
    # the same numbers from the remembered layout as from a fresh one
    fresh = real(Topology.preset("2s-128"), "numa02", smt=False, bind_mode="none", threads=8)
    for f in ("region_init", "region_class", "entry_share", "seg_lo", "thread_mm"):
        np.testing.assert_array_equal(getattr(a, f), getattr(fresh, f))
    r0 = nl.simulate(a, "6.12", seeds=[1], max_time=5.0)
    r1 = nl.simulate(fresh, "6.12", seeds=[1], max_time=5.0)
    assert float(r0["numa_hint_faults"].sum()) == float(r1["numa_hint_faults"].sum())
    # bounded: the oldest goes first; a layout above the byte bound is not kept
    monkeypatch.setattr(wmod, "_LAID_OUT_MAX", 2)
    workload("numa02", "2s-128", threads=2)
    assert len(wmod._LAID_OUT) == 2 and workload("numa02", "2s-128", threads=8) is not a
    monkeypatch.setattr(wmod, "_LAID_OUT_BYTES", 1)
    big = workload("numa02", "2s-128", threads=3)
    assert workload("numa02", "2s-128", threads=3) is not big
    big.region_init[0] = big.region_init[0]   # not kept, so not made read-only

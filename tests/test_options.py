"""EngineOptions: one frozen table of the engine's options (defaults, bounds, docs), and one
off-switch per mechanism, each shown to switch off what it should."""

import dataclasses
import json

import numpy as np
import pytest

import numalab as nl
from numalab.engine import DEFAULTS, SWITCHES, EngineOptions, make_batch, run_batch, simulate
from numalab.errors import NumalabValueError
from numalab.topology import Topology

# the Ivy Bridge at the write capacity these scenarios were sized for (0.21 of its read bandwidth,
# every machine's before 0.5.0): its runs last long enough for swaps, groups and scans to happen
IVB = nl.Topology.preset("2s-ivb-40", write_efficiency=0.21)
MiB = 1 << 20


@pytest.fixture(scope="module")
def numa01():
    # numa01: two processes whose threads share one buffer -- shared faults, groups, swaps
    return nl.workload("numa01", IVB, size_bytes=256 * MiB, loops=8)


@pytest.fixture(scope="module")
def default_run(numa01):
    """numa01 under 6.12 with every default, seeds 0 and 1: the reference three tests below
    compare an off-switch (or every switch given explicitly) with. Built once; the tests only
    read its arrays."""
    return run_batch(numa01, nl.Policy.profile("6.12"), [0, 1])


def test_defaults_are_the_dataclass_and_describe_lists_every_field():
    assert DEFAULTS == EngineOptions().to_dict()
    desc = EngineOptions.describe()
    assert list(desc) == [f.name for f in dataclasses.fields(EngineOptions)] == list(DEFAULTS)
    for name, f in desc.items():
        assert f["doc"] and f["kind"] in ("bool", "int", "number"), name
        assert f["default"] == DEFAULTS[name]
    assert desc["dt"]["lo"] == 0.0 and desc["dt"]["hi"] == 0.1
    for s in SWITCHES:
        assert s in desc
    # every mechanism on by default, but the convoy (docs/fidelity.md: the tables prefer it off)
    assert [s for s in SWITCHES if not DEFAULTS[s]] == ["sweep_convoy"]


def test_options_are_frozen_checked_and_coerced():
    o = EngineOptions.coerce({"thp": 0, "scan_size_mb": 64})
    assert o.thp is False and o.scan_size_mb == 64
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.dt = 0.01
    assert EngineOptions.coerce(None) == EngineOptions() and EngineOptions.coerce(o) is o
    for bad, needle in [({"dt": 0.5}, "dt"), ({"numa_groups": "yes"}, "numa_groups"), ({"nope": 1}, "nope"),
                        ({"scan_period_min_ms": 5000, "scan_period_max_ms": 1000}, "scan_period_max_ms"),
                        ({"lb_migrate_hz": 100.0}, "lb_migrate_hz"), ({"pid_lo": 10, "pid_hi": 5}, "pid_hi")]:
        with pytest.raises(NumalabValueError, match=needle):
            EngineOptions.coerce(bad)


def test_every_option_is_recorded_in_the_dataset(numa01):
    ds = simulate(numa01, "6.12", seeds=1, max_time=1.0, numa_groups=False)
    params = json.loads(ds.attrs["parameters"])
    assert {k: params[k] for k in DEFAULTS} == {**DEFAULTS, "numa_groups": False, "max_time": 1.0}


def test_defaults_equal_every_switch_given_on(numa01, default_run):
    a = default_run
    b = run_batch(numa01, nl.Policy.profile("6.12"), [0, 1], **{s: DEFAULTS[s] for s in SWITCHES})
    np.testing.assert_array_equal(a.elsp, b.elsp)


def test_numa_groups_off_means_no_group(numa01, default_run):
    on = default_run
    off = run_batch(numa01, nl.Policy.profile("6.12"), [0, 1], numa_groups=False)
    assert on.cnt["group_joins"].sum() > 0 and (on.groups.gid >= 0).any()
    assert off.cnt["group_joins"].sum() == 0 and (off.groups.gid == -1).all()


def test_task_swaps_off_means_moves_into_idle_cpus_only(numa01):
    # every CPU of 2s-ivb-40 runs a numa01 thread until the first one finishes (~6.5 s): until
    # then a preferred-node move needs a swap
    on = run_batch(numa01, nl.Policy.profile("6.12"), [0, 1], lb_migrate_hz=0.0, max_time=6.2)
    off = run_batch(numa01, nl.Policy.profile("6.12"), [0, 1], lb_migrate_hz=0.0, task_swaps=False, max_time=6.2)
    assert not on.outcome.done.any() and not off.outcome.done.any()
    assert on.cnt["task_migrations"].sum() > 0
    assert off.cnt["task_migrations"].sum() == 0


def test_scan_period_adapt_off_keeps_the_start_period(numa01):
    from numalab.engine.scan_period import task_scan_min

    on = run_batch(numa01, nl.Policy.profile("6.12"), [0], lb_migrate_hz=0.0)
    off = run_batch(numa01, nl.Policy.profile("6.12"), [0], lb_migrate_hz=0.0, scan_period_adapt=False)
    smin = set(task_scan_min(off, off.lay.thread_mm).tolist())
    start = {DEFAULTS["scan_delay_ms"]} | smin          # never triggered, or task_scan_start
    grouped = off.groups.gid[0] >= 0
    assert set(off.numa.numa_scan_period[0][~grouped].tolist()) <= start
    assert not set(on.numa.numa_scan_period[0].tolist()) <= start
    # the early-return path's doubling never ran: no period reaches the doubled minimum
    assert off.numa.numa_scan_period.max() < 2 * min(smin) or grouped.any()


def test_migrate_filter_off_migrates_every_misplaced_fault():
    from _phase_helpers import tiny_batch
    from numalab.engine.faults import FaultBatch, should_migrate

    for flt, want in ((True, False), (False, True)):
        b, wl = tiny_batch(migrate_filter=flt)
        t = 1
        b.tasks.node[0, t] = 0
        b.regions.node[0, 0] = 1                          # region 0 remote to the task
        # last_cpupid: another task's pid bits on node 1 -> the second stage refuses
        b.numa.numa_preferred_nid[0, t] = 0
        b.numa.numa_scan_seq[0, t] = 10
        f = FaultBatch.of(b, np.array([0]), np.array([0]), np.array([t]))
        last = (np.array([(int(b.tasks.pid8[0, t]) + 1) & 0xFF]), np.array([True]), np.array([1]), np.array([2]))
        check, wants = should_migrate(b, f, np.array([False]), last, b.tasks.pid8.take(f.rt))
        assert bool(check[0]) and bool(wants[0]) is want, flt


def test_thp_off_means_no_huge_pmds(numa01):
    off = run_batch(numa01, nl.Policy.profile("6.12"), [0], thp=False, max_time=3.0)
    assert off.cnt["numa_huge_pte_updates"].sum() == 0 and off.cnt["numa_pte_updates"].sum() > 0


def test_init_coherence_off_charges_every_init_sweep_to_dram():
    # numa01_THREAD_ALLOC's workers all sweep the whole buffer in the bound init: with the
    # mechanism they finish it sooner (lines move between caches), without it each sweep is
    # DRAM traffic; numa02 has no shared init, so the switch changes nothing there
    from numalab.engine import make_batch
    from numalab.workloads import PH_INIT

    ta = nl.workload("numa01_THREAD_ALLOC", IVB, size_bytes=256 << 20)

    def init_steps(**o):
        b = make_batch(ta, nl.Policy.profile("6.12"), [0, 1], **o)
        for i in range(2000):
            b.step()
            if not ((b.tasks.phase == PH_INIT) & ta.init_bind[None, :]).any():
                return i + 1
        raise AssertionError("the init never ended")

    assert init_steps() < init_steps(init_coherence=False) / 2
    n2 = nl.workload("numa02", "2s-ivb-40")
    a = run_batch(n2, nl.Policy.profile("6.12"), [0], max_time=3.0)
    b = run_batch(n2, nl.Policy.profile("6.12"), [0], max_time=3.0, init_coherence=False)
    np.testing.assert_array_equal(a.elsp, b.elsp)
    for k in a.cnt:
        np.testing.assert_array_equal(a.cnt[k], b.cnt[k])


def test_harness_overhead_off_drops_the_cost(numa01, default_run):
    costs = {"harness_overhead_s": 5.0}
    on = run_batch(numa01, nl.Policy.profile("6.12"), [0, 1], costs=costs)
    off = run_batch(numa01, nl.Policy.profile("6.12"), [0, 1], costs=costs, harness_overhead=False)
    base = default_run
    np.testing.assert_array_equal(off.elsp, base.elsp)
    np.testing.assert_allclose(on.elsp - off.elsp, 5.0)


def test_load_balancer_off_means_no_pulls(numa01):
    off = run_batch(numa01, nl.Policy.profile("6.12"), [0, 1], lb_migrate_hz=0.0)
    hi = run_batch(numa01, nl.Policy.profile("6.12"), [0, 1], lb_migrate_hz=2.0)
    assert off.cnt["lb_migrations"].sum() == 0 and hi.cnt["lb_migrations"].sum() > 0


def test_cli_switches_come_from_the_options(tmp_path, capsys):
    from numalab.cli import main

    rc = main(["simulate", "--workload", "numa02", "--topology", "2s-ivb-40", "--profile", "6.12", "--seeds", "1",
               "--max-time", "2", "--no-numa-groups", "--option", "scan_size_mb=64", "--out", str(tmp_path / "r.nc")])
    assert rc == 0
    import xarray as xr

    with xr.open_dataset(tmp_path / "r.nc", engine="h5netcdf") as ds:
        params = json.loads(ds.attrs["parameters"])
    assert params["numa_groups"] is False and params["scan_size_mb"] == 64
    assert main(["simulate", "--workload", "numa02", "--option", "frobnicate=1"]) == 2
    assert "frobnicate" in capsys.readouterr().err


def test_first_arrival_off_lets_every_writer_of_a_shared_buffer_fault():
    # numa01's buffer is written by all of a process's workers: with first arrival only the
    # writer nearest behind a protected huge page takes its fault, so a window records far
    # fewer distinct PIDs than the process has writers; on the Poisson clock the faulting
    # thread is drawn afresh for every page and a window soon holds them all
    topo = Topology(nodes=2, cpus_per_node=16, smt=2, write_efficiency=0.21, name="t")
    wl = nl.workload("numa01", topo, size_bytes=1 << 30, loops=30)
    on = nl.simulate(wl, ["rfc2023-p3"], seeds=3, max_time=60)
    off = nl.simulate(wl, ["rfc2023-p3"], seeds=3, max_time=60, first_arrival=False)
    writers = topo.ncpus // 2
    assert float(off.pids_per_window.max()) >= 0.9 * writers
    assert float(on.pids_per_window.max()) < 0.6 * writers
    # and the own-PID test fails more often, which is what a longer history would repair
    assert float(on.pid_pass_rate.mean()) < float(off.pid_pass_rate.mean())


def test_sweep_convoy_starts_the_loops_of_a_shared_buffer_together():
    # numa01's writers leave their init sweep together: as a convoy their loops start at the
    # buffer's beginning, and the convoy's leader keeps taking the faults (first arrival), so a
    # window still records only a few of the writers
    topo = Topology(nodes=2, cpus_per_node=16, smt=2, write_efficiency=0.21, name="t")
    wl = nl.workload("numa01", topo, size_bytes=1 << 30, loops=30)
    b = make_batch(wl, nl.Policy.profile("rfc2023-p3"), [0], sweep_convoy=True)
    a = make_batch(wl, nl.Policy.profile("rfc2023-p3"), [0])
    assert b.lay.loop_shared.any() and not b.tasks.sweep_phase.any()
    assert np.count_nonzero(a.tasks.sweep_phase[0, a.lay.loop_shared]) == np.count_nonzero(a.lay.loop_shared)
    # the draws a seed makes do not move
    np.testing.assert_array_equal(a.tasks.tid, b.tasks.tid)
    np.testing.assert_array_equal(a.tasks.node, b.tasks.node)
    convoy = nl.simulate(wl, ["rfc2023-p3"], seeds=3, max_time=60, sweep_convoy=True)
    assert float(convoy.numa_hint_faults.min()) > 0
    assert float(convoy.pids_per_window.max()) < 0.6 * (topo.ncpus // 2)


@pytest.mark.parametrize("name", ["numa01_THREAD_ALLOC", "numa02"])
def test_sweep_convoy_leaves_disjoint_sweeps_alone(name):
    # each of their threads sweeps a range of its own: nothing to start together, the same run
    # bit for bit
    wl = nl.workload(name, IVB, size_bytes=256 * MiB, **({"loops": 8} if name != "numa02" else {}))
    a = run_batch(wl, nl.Policy.profile("rfc2023-p3"), [0, 1])
    b = run_batch(wl, nl.Policy.profile("rfc2023-p3"), [0, 1], sweep_convoy=True)
    assert not b.lay.loop_shared.any() and b.lay.cls_sweep.any()
    np.testing.assert_array_equal(a.elsp, b.elsp)
    for k in a.cnt:
        np.testing.assert_array_equal(a.cnt[k], b.cnt[k])


def test_malloc_edges_marks_the_first_region_of_each_malloced_buffer():
    # autonuma-benchmark mallocs its buffers (one a process); perf bench numa mem and a user's
    # access matrix lay out a 2 MiB-aligned mmap, with no edges
    for name, nproc in (("numa01", 2), ("numa01_THREAD_ALLOC", 2), ("numa02", 1), ("numa02_SMT", 1)):
        wl = nl.workload(name, IVB, size_bytes=64 * MiB, **({"loops": 2} if name.startswith("numa01") else {}))
        edge = np.flatnonzero(wl.region_malloc_edge)
        assert edge.size == nproc
        kinds = [wl.vma_kind[v] for v in wl.region_vma[edge]]
        assert kinds == ["buffer"] * nproc
        # each is the first region of its VMA, and a full 2 MiB of present pages
        first = np.searchsorted(wl.region_vma, wl.region_vma[edge])
        np.testing.assert_array_equal(first, edge)
        assert (wl.region_present[edge] == 512).all() and wl.region_huge[edge].all()
    pb = nl.workloads.perf_bench_numa_mem(IVB, threads=2, process_mb=64)
    assert not pb.region_malloc_edge.any()
    on = make_batch(nl.workload("numa02", IVB, size_bytes=64 * MiB), nl.Policy.profile("6.12"), [0])
    off = make_batch(nl.workload("numa02", IVB, size_bytes=64 * MiB), nl.Policy.profile("6.12"), [0],
                     malloc_edges=False)
    edge = np.flatnonzero(on.wl.region_malloc_edge)
    assert not on.lay.region_huge[edge].any() and off.lay.region_huge[edge].all()
    # a base-page region takes one fault per present page, a huge page one
    assert (on.lay.fault_inc[edge] == 512).all() and (off.lay.fault_inc[edge] == 1).all()
    assert np.array_equal(on.lay.region_huge[on.wl.region_malloc_edge == 0],
                          off.lay.region_huge[off.wl.region_malloc_edge == 0])


def test_malloc_edges_scans_and_faults_the_edges_page_by_page():
    # what benchmarks/vm_trace.py saw on real kernels: with malloc's buffer a scan of its edges
    # updates 512 base PTEs (numa_pte_updates beyond 512 per huge update) and each written base
    # page takes its own hinting fault, so faults run well above the huge updates
    wl = nl.workload("numa02", IVB)
    on = nl.scan_trace(wl, "6.12", seeds=0, topology=IVB, max_time=20)
    off = nl.scan_trace(wl, "6.12", seeds=0, topology=IVB, max_time=20, malloc_edges=False)
    base_on = on.pte_updates.values - 512 * on.huge_pte_updates.values
    base_off = off.pte_updates.values - 512 * off.huge_pte_updates.values
    assert base_on.max() >= 512 > base_off.max()
    runs = nl.simulate(wl, "6.12", seeds=2, topology=IVB, max_time=20)
    runs_off = nl.simulate(wl, "6.12", seeds=2, topology=IVB, max_time=20, malloc_edges=False)
    ratio = float((runs.numa_hint_faults / runs.numa_huge_pte_updates).mean())
    ratio_off = float((runs_off.numa_hint_faults / runs_off.numa_huge_pte_updates).mean())
    assert ratio > 1.5 * ratio_off

"""numalab.engine.tracing: the per-run / per-VMA trace of task_numa_work, checked against the
engine's own counters, against an untraced run, and across batch compositions."""

import re

import numpy as np
import pytest

import numalab as nl
from numalab.cli import main
from numalab.engine import run_batch
from numalab.policy import REASONS
from numalab.engine.tracing import TRACED, format_perf, format_runs, scan_trace

IVB = nl.Topology.preset("2s-ivb-40")
# small, fast cases that exercise every walk path: sequence-based early passes (6.4), the
# v6.7 forced retry and seq_completed (6.12), the RFC select counter (p4), no numab state
CASES = [
    ("numa02", "6.4"),
    ("numa02", "6.12"),
    ("numa01_THREAD_ALLOC", "6.12"),
    ("numa02", "rfc2023-p4"),
    ("numa02_SMT", "rfc2024-hot-shared"),
    ("numa02", "pre-6.4"),
]
SEEDS = [0, 3]


@pytest.fixture(scope="module", params=CASES, ids=["-".join(c) for c in CASES])
def traced(request):
    name, prof = request.param
    wl = nl.workload(name, IVB)
    ds = scan_trace(wl, prof, SEEDS, max_time=40.0)
    plain = run_batch(wl, nl.Policy.profile(prof), SEEDS, max_time=40.0)
    return ds, plain


def test_tracing_changes_nothing(traced):
    ds, plain = traced
    np.testing.assert_array_equal(ds.attrs["elsp"], plain.elsp)
    assert ds.attrs["finished"] == [int(x) for x in plain.outcome.finished]


def test_trace_agrees_with_the_engine_counters(traced):
    ds, plain = traced
    assert ds.sizes["run"] > 0
    seed_of_visit = ds.seed.values[ds.visit_run.values]
    for i, s in enumerate(SEEDS):
        runs = ds.seed.values == s
        assert runs.sum() == plain.cnt["scan_runs"][i]
        assert ds.pte_updates.values[runs].sum() == plain.cnt["numa_pte_updates"][i]
        assert ds.huge_pte_updates.values[runs].sum() == plain.cnt["numa_huge_pte_updates"][i]
        # a run that changed PTEs took kernel time for them
        assert np.all(ds.kernel_s.values[runs][ds.pte_updates.values[runs] > 0] > 0)
        # every reason counter the engine keeps is the number of traced visits with that reason
        got = np.array([np.count_nonzero((seed_of_visit == s) & (ds.reason.values == r)) for r in REASONS])
        np.testing.assert_array_equal(got, plain.counters.reasons[i])


def test_runs_chain_sequence_and_offset(traced):
    """numa_scan_seq and numa_scan_offset change only inside task_numa_work, so each run of an
    mm starts where the previous one of that mm left them, and runs are in time order."""
    ds, _ = traced
    for s in SEEDS:
        for m in np.unique(ds.mm.values):
            sel = np.flatnonzero((ds.seed.values == s) & (ds.mm.values == m))
            if sel.size < 2:
                continue
            assert np.all(np.diff(ds.t.values[sel]) > 0)
            np.testing.assert_array_equal(ds.seq_before.values[sel[1:]], ds.seq_after.values[sel[:-1]])
            np.testing.assert_array_equal(ds.offset_before.values[sel[1:]], ds.offset_after.values[sel[:-1]])
            assert np.all(ds.seq_after.values[sel] - ds.seq_before.values[sel] >= 0)


def test_visits_are_in_address_order_within_a_walk(traced):
    ds, _ = traced
    vr, start, forced = ds.visit_run.values, ds.vm_start.values, ds.forced.values
    same_walk = (vr[1:] == vr[:-1]) & (forced[1:] == forced[:-1])
    assert np.all(start[1:][same_walk] > start[:-1][same_walk])
    # the offset the tracepoint prints never lies past the VMA being visited
    assert np.all(ds.numa_scan_offset.values <= ds.vm_end.values)
    # a VMA counts as scanned exactly when its decision is not a skip
    skips = np.isin(ds.reason.values, nl.policy.SKIP_REASONS)
    np.testing.assert_array_equal(ds.scanned.values, ~skips)


def test_a_seed_traces_the_same_alone_and_in_a_batch():
    wl = nl.workload("numa02", IVB)
    both = scan_trace(wl, "rfc2023-p4", [5, 2], max_time=20.0)
    alone = scan_trace(wl, "rfc2023-p4", 2, max_time=20.0)
    runs = both.seed.values == 2
    for k in ("t", "tid", "seq_before", "seq_after", "offset_before", "offset_after", "pte_updates"):
        np.testing.assert_array_equal(both[k].values[runs], alone[k].values, err_msg=k)
    vis = runs[both.visit_run.values]
    for k in ("vma", "reason", "numa_scan_offset", "forced"):
        np.testing.assert_array_equal(both[k].values[vis], alone[k].values, err_msg=k)


def test_placement_samples_the_engine_state_and_changes_nothing():
    """scan_trace(placement=True): every thread's node, preferred node, group and fault
    statistics at each time-series sample, as the engine's own run ends with them."""
    wl = nl.workload("numa01", IVB, threads=8, loops=20)
    ds = scan_trace(wl, "6.12", [1, 4], max_time=30.0, placement=True, time_resolution=0.5)
    plain = scan_trace(wl, "6.12", [1, 4], max_time=30.0, time_resolution=0.5)
    for k in ("t", "tid", "pte_updates", "offset_after"):
        np.testing.assert_array_equal(ds[k].values, plain[k].values, err_msg=k)
    b = run_batch(wl, nl.Policy.profile("6.12"), [1, 4], max_time=30.0, time_resolution=0.5)
    R, T = len(b.seeds), b.lay.T
    assert ds.task_node.shape == (R, ds.sizes["sample"], T)
    np.testing.assert_allclose(np.diff(ds.sample_t.values[:-1]), 0.5)
    # the last sample is the engine's state at the end of the run
    np.testing.assert_array_equal(ds.task_node.values[:, -1], b.tasks.node)
    np.testing.assert_array_equal(ds.numa_preferred_nid.values[:, -1], b.numa.numa_preferred_nid)
    np.testing.assert_allclose(ds.numa_faults.values[:, -1], b.numa.faults_mem.sum(axis=-1))
    np.testing.assert_allclose(ds.numa_faults_private.values[:, -1], b.numa.faults_mem[..., 1])
    np.testing.assert_array_equal(ds.numa_scan_period.values[:, -1], b.numa.numa_scan_period)
    # a group is named by its creator's pid, as the kernel's numa_group_id; 0: no group
    gid = b.groups.gid
    want = np.where(gid >= 0, np.take_along_axis(b.tasks.tid, np.maximum(gid, 0), axis=1), 0)
    np.testing.assert_array_equal(ds.numa_group_id.values[:, -1], want)
    assert (ds.numa_group_id.values[:, -1][:, ~wl.thread_main] > 0).any()      # numa01's writers group
    assert ds.numa_group_id.attrs["kernel_name"] == "numa_group_id"
    with pytest.raises(ValueError, match="placement='yes'.*True or False"):
        scan_trace(wl, "6.12", 1, max_time=1.0, placement="yes")


def test_format_perf_matches_the_tracepoint_layout(traced):
    ds, _ = traced
    text = format_perf(ds)
    lines = text.splitlines()
    pat = re.compile(r"^ +\S+ +(\d+) \[000\] +(\d+\.\d{6}): sched:sched_skip_vma_numa: "
                     r"numa_scan_offset=([0-9A-F]+) vm_start=([0-9A-F]+) vm_end=([0-9A-F]+) reason=(\w+)$")
    assert len(lines) == np.isin(ds.reason.values, TRACED).sum()
    for line in lines:
        m = pat.match(line)
        assert m, line
        assert m.group(6) in TRACED
        assert int(m.group(4), 16) < int(m.group(5), 16)
    one = format_perf(ds, seed=SEEDS[1])
    assert len(one.splitlines()) == \
        (np.isin(ds.reason.values, TRACED) & (ds.seed.values[ds.visit_run.values] == SEEDS[1])).sum()


def test_format_runs_has_a_line_per_run(traced):
    ds, _ = traced
    text = format_runs(ds)
    assert len(text.splitlines()) == 2 + ds.sizes["run"]
    long = format_runs(ds, vmas=True)
    assert len(long.splitlines()) == 2 + ds.sizes["run"] + ds.sizes["visit"]


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="one policy"):
        scan_trace("numa02", ["6.12", "6.4"], topology=IVB)
    with pytest.raises(ValueError, match="seeds"):
        scan_trace("numa02", "6.12", -1, topology=IVB)
    with pytest.raises(ValueError, match="profile"):
        scan_trace("numa02", "6.99", topology=IVB)
    with pytest.raises(ValueError, match="scan_dely_ms"):
        scan_trace("numa02", "6.12", topology=IVB, scan_dely_ms=10)
    with pytest.raises(ValueError, match="workload"):
        scan_trace(3, "6.12")


def test_cli_trace(capsys, tmp_path):
    assert main(["trace", "--topology", "2s-ivb-40", "--max-time", "6"]) == 0
    out = capsys.readouterr().out
    assert "task_numa_work runs" in out and "stopped by --max-time" in out
    assert main(["trace", "--topology", "2s-ivb-40", "--profile", "rfc2023-p4", "--max-time", "10",
                 "--format", "perf"]) == 0
    out = capsys.readouterr().out
    assert "sched:sched_skip_vma_numa" in out
    f = tmp_path / "t.nc"
    assert main(["trace", "--topology", "2s-ivb-40", "--max-time", "3", "--out", str(f)]) == 0
    import xarray as xr

    with xr.open_dataset(f, engine="h5netcdf") as back:
        assert back.sizes["visit"] > 0 and set(np.unique(back.reason.values)) <= set(REASONS)
    assert main(["trace", "--profile", "nope"]) == 2
    assert "allowed" in capsys.readouterr().err

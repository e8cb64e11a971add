"""Issue 17, items 3 and 6: statistics that never invent numbers, parsers that refuse damaged
tables naming the line, and readers for every layout the community posts (fixtures in
tests/data/, sources in tests/data/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from numalab import report

DATA = Path(__file__).resolve().parent / "data"


def _text(name):
    return (DATA / name).read_text()


def runs(values, names=("6.1.0-vanilla", "6.1.0-numab-v1r1"), workloads=("numa01",)):
    """A runs Dataset: values[k][w] is the list of seeds' elsp of kernel k, workload w."""
    arr = np.array(values, dtype=float)
    return xr.Dataset({"elsp": (("policy", "workload", "seed"), arr), "syst": (("policy", "workload", "seed"), arr / 4)},
                      coords={"policy": list(names), "workload": list(workloads)})


def row(text, start):
    return next(line for line in text.splitlines() if line.startswith(start))


# ------------------------------------------------------------------------ NaN stays NaN (item 3)
def test_all_nan_policy_prints_nan_in_mmtests_not_zero():
    ds = runs([[[200.0, 210.0, 220.0]], [[np.nan] * 3]])
    text = report.mmtests(ds, monitors=False)
    assert row(text, "Amean     elsp-NUMA01").endswith("210.00 (   0.00%)         nan (    nan%)")
    assert row(text, "CoeffVar  elsp-NUMA01").endswith("nan (    nan%)")
    back = report.read_mmtests(text)
    assert np.isnan(back.elsp.sel(kernel="6.1.0-numab-v1r1", stat="Amean")).all()
    assert report.mmtests(back, monitors=False) == text


def test_all_nan_policy_prints_nan_in_lkp_not_minus_100():
    ds = runs([[[200.0, 210.0, 220.0]], [[np.nan] * 3]])
    line = row(report.lkp(ds), "    210.00")
    assert "-100.0%" not in line and line.split()[3:5] == ["nan%", "nan"]
    back = report.read_lkp(report.lkp(ds))
    assert np.isnan(back.elsp.values[1, 0]) and np.isnan(back.elsp_change.values[1, 0])
    assert report.lkp(back) == report.lkp(ds)


def test_one_nan_seed_is_counted_not_dropped_silently():
    ds = runs([[[200.0, 210.0, 220.0, 230.0]], [[np.nan, 180.0, 190.0, 200.0]]])
    mm = report.mmtests(ds)
    assert row(mm, "Samples   elsp-NUMA01").endswith("4.00 (   0.00%)        3.00 ( -25.00%)")
    assert row(mm, "Amean     elsp-NUMA01").split()[5] == "190.00"  # the mean of the 3 usable runs
    assert report.mmtests(report.read_mmtests(mm)) == mm
    # the Duration total of a kernel with a missing run is unknown, not the others' sum
    assert row(mm, "Duration Elapsed").split()[2:] == ["860.00", "nan"]
    lk = report.lkp(ds)
    assert "# usable runs per commit: 4/4 3/4  autonuma-benchmark.numa01.seconds" in lk
    assert report.lkp(report.read_lkp(lk)) == lk
    # no NaN: no Samples row, no note (the golden tables are unchanged)
    full = runs([[[200.0, 210.0]], [[180.0, 190.0]]])
    assert "Samples" not in report.mmtests(full) and "usable runs" not in report.lkp(full)


# ------------------------------------------------------------------ strict parsers (item 3)
def test_truncated_lkp_block_with_a_cut_name_is_refused():
    text = _text("lkp_email_icl.txt")
    cut = text[: text.index("autonuma-benchmark.numa01.seconds") + len("autonuma-benchmark.numa01.second")]
    with pytest.raises(ValueError, match=r"line 14: stat 'autonuma-benchmark.numa01.second' .*truncated"):
        report.read_lkp(cut)
    vm = report.lkp(runs([[[1.0, 2.0]], [[3.0, 4.0]]]).assign(numa_pages_migrated=(("policy", "seed"), [[1e6, 2e6], [3e6, 4e6]])))
    with pytest.raises(ValueError, match=r"proc-vmstat.numa_pages_mig.*truncated"):
        report.read_lkp(vm[: vm.index("numa_pages_migrated") + len("numa_pages_mig")])


def test_cutting_an_lkp_block_inside_a_line_never_returns_part_of_it():
    text = _text("lkp_3commits_no_commit_list.txt")
    lines = text.split("\n")
    first = next(i for i, ln in enumerate(lines) if "%stddev" in ln) + 2
    full = report.read_lkp(text)
    start = len("\n".join(lines[:first])) + 1
    for cut in range(start, len(text.rstrip("\n"))):
        piece = text[:cut]
        if piece.endswith("\n") or text[cut] == " " or piece.endswith(" "):
            continue  # whole lines, or a cut between fields: a shorter block, read as such
        try:
            got = report.read_lkp(piece)
        except ValueError as exc:
            assert str(exc).startswith("line "), exc
            continue
        # only a cut inside a name that is no key's start can pass: never a changed number
        order = json.loads(got.attrs["lkp_order"])
        for var in ("elsp", "syst"):
            if var in got and var in full:
                a, b = got[var].values, full[var].sel(workload=got[var].workload).values if "workload" in got[var].dims else full[var].values
                assert np.array_equal(a, b, equal_nan=True), (cut, order)


def test_blank_line_inside_an_lkp_block_keeps_every_row():
    text = _text("lkp_3commits_no_commit_list.txt")
    lines = text.split("\n")
    k = next(i for i, ln in enumerate(lines) if "numa02.seconds" in ln)
    damaged = "\n".join(lines[: k + 1] + [""] + lines[k + 1:])
    got = report.read_lkp(damaged)
    assert json.loads(got.attrs["lkp_order"]) == json.loads(report.read_lkp(text).attrs["lkp_order"])
    assert "numa_pages_migrated" in got
    # prose after a blank line still ends the block
    assert "numa_hint_faults" in report.read_lkp(text + "\nDisclaimer: 12 things\n")


def test_damaged_mmtests_table_raises_naming_the_line():
    text = _text("mmtests_6kernels.txt")
    lines = text.split("\n")
    bad = lines[:10] + [lines[10][:60]] + lines[11:]
    with pytest.raises(ValueError, match=r"line 11: "):
        report.read_mmtests("\n".join(bad))
    with pytest.raises(ValueError, match=r"line \d+: truncated table"):
        report.read_mmtests("\n".join(lines[:20]))


def test_slit_distance_must_be_an_integer():
    import numalab as nl

    with pytest.raises(ValueError, match=r"distance\[0\]\[1\]=10.4 is not an integer"):
        nl.Topology(nodes=2, cpus_per_node=4, distance=[[10, 10.4], [10.4, 10]])
    with pytest.raises(ValueError, match="10..254"):
        nl.Topology(nodes=2, cpus_per_node=4, distance=[[10, 300], [300, 10]])
    assert nl.Topology(nodes=2, cpus_per_node=4, distance=[[10, 21.0], [21.0, 10]]).distance == ((10, 21), (21, 10))


# -------------------------------------------------------------------------- readers (item 6)
@pytest.mark.parametrize("name, k", [("lkp_email_icl.txt", 2), ("lkp_3commits_no_commit_list.txt", 3),
                                     ("lkp_5commits.txt", 5)])
def test_lkp_blocks_with_2_to_5_commits_round_trip(name, k):
    text = _text(name)
    ds = report.read_lkp(text)
    assert ds.sizes["kernel"] == k
    assert report.lkp(ds).rstrip("\n") == text.rstrip("\n")


def test_lkp_mail_with_several_blocks_reads_into_a_block_dim():
    ds = report.read_lkp(_text("lkp_mail_several_blocks.txt"))
    assert ds.sizes["block"] == 2
    assert ds.testcase.values[0].endswith("/lkp-icl-2sp6/numa01_THREAD_ALLOC/autonuma-benchmark")
    assert float(ds.elsp.sel(block=0, kernel="167773d1ddb5ffdd", workload="numa01_THREAD_ALLOC")) == 186.67
    assert np.isnan(ds.elsp.sel(block=0, kernel="68cfe9439a1b0e4e4f3ab7d4e7a", workload="numa01_THREAD_ALLOC"))
    first, second = report.lkp_blocks(ds)
    assert report.lkp(first) == _text("lkp_email_icl.txt")
    assert report.lkp(second).rstrip("\n") == _text("lkp_3commits_no_commit_list.txt").rstrip("\n")
    assert report.lkp(ds) == report.lkp(first) + "\n" + report.lkp(second)


@pytest.mark.parametrize("name, k", [("mmtests_3kernels_prose.txt", 3), ("mmtests_6kernels.txt", 6),
                                     ("mmtests_5kernels_2026.txt", 5)])
def test_mmtests_tables_with_3_to_6_kernels_round_trip(name, k):
    text = _text(name)
    ds = report.read_mmtests(text)
    assert ds.sizes["kernel"] == k
    out = report.mmtests(ds)
    if "prose" in name:  # the tables, without the prose between them
        tables = [p for p in text.split("\n\n") if p.split("\n")[0] == "autonumabench" or p.startswith(" ")]
        assert out.rstrip("\n").split("\n\n") == [t.rstrip("\n") for t in tables]
        assert "numa_hint_faults" in ds and ds.duration_elapsed.size == 3
    else:
        assert out == text


def test_mmtests_2015_layout_reads():
    ds = report.read_mmtests(_text("mmtests_2015.txt"))
    assert list(ds.kernel.values) == ["4.0.0-rc1-vanilla", "4.0.0-rc1-slowscan-v2r7", "3.19.0-vanilla"]
    assert list(ds.workload.values) == ["numa01", "numa01_THREAD_ALLOC", "numa02", "numa02_SMT"]
    assert float(ds.syst.sel(kernel="4.0.0-rc1-slowscan-v2r7", workload="numa01", stat="Time")) == 209.42
    assert float(ds.syst_pct.sel(kernel="4.0.0-rc1-slowscan-v2r7", workload="numa01", stat="Time")) == 65.24
    assert float(ds.elsp.sel(kernel="3.19.0-vanilla", workload="numa02_SMT", stat="Time")) == 46.95
    assert ds.duration_user.values.tolist() == [53384.29, 56093.11, 46119.12]
    assert ds.attrs["mmtests_layout"] == "pre-2019"


def test_read_vmstat_reads_proc_vmstat_and_lkp_lines():
    before = "nr_free_pages 1000\nnuma_hint_faults 10\nnuma_pages_migrated 5\n"
    after = "nr_free_pages 900\nnuma_hint_faults 110\nnuma_pages_migrated 25\n"
    ds = report.read_vmstat(before, after)
    assert int(ds.numa_hint_faults) == 100 and int(ds.numa_pages_migrated) == 20
    lkp_before = "proc-vmstat.nr_free_pages: 1000\nproc-vmstat.numa_hint_faults: 10\nproc-vmstat.numa_pages_migrated: 5\n"
    lkp_after = "proc-vmstat.nr_free_pages: 900\nproc-vmstat.numa_hint_faults: 110\nproc-vmstat.numa_pages_migrated: 25\n"
    assert report.read_vmstat(lkp_before, lkp_after).identical(ds)
    with pytest.raises(ValueError, match="after line 2"):
        report.read_vmstat(before, "nr_free_pages 900\nnuma_hint_faults x\n")


def _fold(text, width, keep_space):
    """What a mail client does to long lines: break at the last space before ``width``."""
    out = []
    for line in text.split("\n"):
        while len(line) > width:
            cut = line.rfind(" ", 0, width)
            if cut <= 0:
                break
            out.append(line[:cut].rstrip())
            line = line[cut:] if keep_space else line[cut:].lstrip()
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("width", [72, 78])
@pytest.mark.parametrize("keep_space", [True, False])
def test_mmtests_3_kernel_table_wrapped_by_a_mail_client_reads(width, keep_space):
    # issue: compare tables with three or more kernel columns did not read (their lines are
    # ~105 characters, wrapped by mail clients, headers included)
    text = _text("mmtests_6kernels.txt")
    ds = report.read_mmtests(_fold(text, width, keep_space))
    assert report.mmtests(ds) == text

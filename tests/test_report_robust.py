"""Issue 17, items 3 and 6: statistics that never invent numbers, parsers that refuse damaged
tables naming the line, and readers for every layout the community posts (fixtures in
tests/data/, sources in tests/data/README.md)."""

from __future__ import annotations

import json
import re
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


# ------------------------------------------------- readers on real posted examples (item 6)
# Each fixture is an excerpt of a real mail, as archived (tests/data/README.md: Message-ID,
# list, date, URL). The values asserted are the ones printed in the mail.

def test_real_lkp_4_commit_summary_round_trips_byte_for_byte():
    # <202309121417.53f44ad6-oliver.sang@intel.com>: the robot's hand-made 4-commit table,
    # trimmed of trailing spaces and with two blank lines above the column ids
    text = _text("lkp_4commits_spr_2023.txt")
    ds = report.read_lkp(text)
    assert list(ds.kernel.values) == ["2f88c8e802c8b128", "2a806eab1c2e1c9f0ae39dc0307",
                                      "1ef5cbb92bdb320c5eb9fdee1a8", "68cfe9439a1baa642e05883fa64"]
    last = "68cfe9439a1baa642e05883fa64"
    assert float(ds.elsp.sel(kernel=last, workload="numa01_THREAD_ALLOC")) == 40.49
    assert float(ds.elsp_change.sel(kernel=last, workload="numa01_THREAD_ALLOC")) == -46.9
    assert float(ds.elsp_stddev_pct.sel(kernel=last, workload="numa01_THREAD_ALLOC")) == 5
    assert float(ds.elsp.sel(kernel="2f88c8e802c8b128", workload="numa01_THREAD_ALLOC")) == 76.28
    assert ds["autonuma-benchmark.time.elapsed_time"].values.tolist() == [1425, 1434, 1381, 996.02]
    assert json.loads(ds.attrs["lkp_group_header"])["commits"][3] == '68cfe9439a ("sched/numa: Allow scanning of shared VMAs")'
    assert report.lkp(ds) == text


def test_real_lkp_mail_with_three_blocks_without_commit_lists():
    # <202305101547.20f4c32a-oliver.sang@intel.com>: three 2-commit summary blocks, each
    # under its own ==== header and no commit: list, prose between them
    text = _text("lkp_mail_3blocks_2023.txt")
    ds = report.read_lkp(text)
    assert ds.sizes["block"] == 3 and ds.sizes["kernel"] == 2
    assert "/lkp-spr-r02/" in str(ds.testcase.values[1]) and "/no-monitor/" in str(ds.testcase.values[2])
    new = "fc137c0ddab29b591db6a091dc6"
    assert float(ds.elsp.sel(block=0, kernel=new, workload="numa01")) == 435.43
    assert float(ds.elsp_change.sel(block=0, kernel=new, workload="numa01")) == 118.9
    assert float(ds.elsp_stddev_pct.sel(block=0, kernel="ef6a22b70f6d9044", workload="numa01")) == 7
    assert float(ds.elsp.sel(block=2, kernel=new, workload="numa01")) == 302.87
    for block in report.lkp_blocks(ds):  # each block prints back as it stands in the mail
        assert report.lkp(block).rstrip("\n") in text


def test_real_lkp_5_commits_wrapped_by_a_format_flowed_client():
    # <6b301f34-f8fe-c626-e5e5-9af5c257c5c3@linux.intel.com>: 5 columns (tags right-aligned
    # in the id line), every long line, the head lines too, wrapped by Thunderbird
    text = _text("lkp_5commits_flowed_2020.txt")
    ds = report.read_lkp(text)
    assert list(ds.kernel.values) == ["v5.8-rc3", "b6509f6a8c4313c068c69785c00", "v5.8", "v5.9-rc1", "v5.9-rc8"]
    assert ds["will-it-scale.per_thread_ops"].values.tolist() == [1652352, 1444002, 1431865, 1489323, 1502580]
    assert ds["will-it-scale.per_thread_ops_change"].values[1:].tolist() == [-12.6, -13.3, -9.9, -9.1]
    assert float(ds["will-it-scale.workload"].sel(kernel="v5.9-rc8")) == 2.885e8
    assert report.read_lkp(text, flowed=True).identical(ds)
    with pytest.raises(ValueError, match="legend"):
        report.read_lkp(text, flowed=False)


def test_real_mmtests_2015_three_kernels_with_prose_and_a_second_test():
    # <1425741651-29152-5-git-send-email-mgorman@suse.de>: no title line, prose between
    # the tables, a second compare table (xfsrepair) and vmstat rows without "Ops"
    text = _text("mmtests_2015_3kernels_slowscan.txt")
    ds = report.read_mmtests(text)
    assert list(ds.kernel.values) == ["4.0.0-rc1-vanilla", "4.0.0-rc1-slowscan-v2", "3.19.0-vanilla"]
    assert ds.attrs["mmtests_layout"] == "pre-2019" and ds.attrs["mmtests_tables"] == 2
    assert list(ds.workload.values) == ["numa01", "numa01_THREAD_ALLOC", "numa02", "numa02_SMT"]
    assert float(ds.syst.sel(kernel="4.0.0-rc1-slowscan-v2", workload="numa01", stat="Time")) == 209.42
    assert float(ds.syst_pct.sel(kernel="4.0.0-rc1-slowscan-v2", workload="numa01", stat="Time")) == 65.24
    assert float(ds.elsp_pct.sel(kernel="3.19.0-vanilla", workload="numa01", stat="Time")) == 26.08
    assert ds.duration_elapsed.values.tolist() == [1236.87, 1328.61, 1039.88]
    assert "numa_hint_faults" not in ds  # the NUMA table belongs to the xfsrepair test
    xfs = report.read_mmtests(text, table=1)
    assert xfs.attrs["mmtests_title"] == "xfsrepair"
    assert float(xfs.syst.sel(kernel="3.19.0-vanilla", workload="xfsrepair", stat="Amean")) == 202.93
    assert float(xfs.syst_pct.sel(kernel="4.0.0-rc1-slowscan-v2", workload="xfsrepair", stat="CoeffVar")) == -163.23
    assert xfs.numa_pages_migrated.values.tolist() == [71175262, 41395302, 23237799]
    # 2015's "NUMA page range updates" is the raw counter: base PTE updates + 512 per PMD
    assert (xfs.numa_pte_updates_base + 512 * xfs.numa_huge_pte_updates == xfs.numa_pte_updates).all()
    with pytest.raises(ValueError, match="2 compare table"):
        report.read_mmtests(text, table=2)


def test_real_mmtests_2015_four_kernels_run_together_names():
    # <20150309210147.GA3406@suse.de>: 4 kernels, Time User/System/Elapsed/CPU rows, monitor
    # headers whose names run together ("vanillaslowscan-v2r7protnone-v3")
    ds = report.read_mmtests(_text("mmtests_2015_4kernels_protnone.txt"))
    assert list(ds.kernel.values) == ["3.19.0-vanilla", "4.0.0-rc1-vanilla", "4.0.0-rc1-slowscan-v2r7",
                                      "4.0.0-rc1-protnone-v3"]
    assert ds.attrs["mmtests_title"] == "autonumabench"
    assert float(ds.syst_pct.sel(kernel="4.0.0-rc1-protnone-v3", workload="numa01", stat="Time")) == -278.72
    assert float(ds.CPU.sel(kernel="4.0.0-rc1-slowscan-v2r7", workload="numa02_SMT", stat="Time")) == 2017.00
    assert ds.duration_user.values.tolist() == [46119.12, 53384.29, 56093.11, 55882.82]
    assert ds.numa_hint_local_pct.values.tolist() == [61, 69, 67, 68]
    assert (ds.numa_pte_updates_base + 512 * ds.numa_huge_pte_updates == ds.numa_pte_updates).all()


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("mmtests*.txt")))
def test_every_mmtests_fixture_prints_back_and_reads_to_the_same_values(name):
    # the 2015 layout's vmstat rows ("NUMA base PTE updates", no "Ops") read, then printing
    # them back was a KeyError: the writer looked their variable up in the later labels only
    ds = report.read_mmtests(_text(name), table=0)
    again = report.read_mmtests(report.mmtests(ds))
    assert sorted(again.data_vars) == sorted(ds.data_vars)
    again = again.sel({d: ds[d].values for d in ("workload", "kernel", "stat") if d in ds.dims})
    for var in ds.data_vars:
        np.testing.assert_array_equal(again[var].values, ds[var].values, err_msg=var)


def test_real_mmtests_3_kernels_under_a_hand_written_tab_header():
    # <cover.1685506205.git.raghavendra.kt@amd.com>: title, '====' underline and a note
    # above one header line of tab-separated whole names; monitor tables without headers
    ds = report.read_mmtests(_text("mmtests_3kernels_tab_header_2023.txt"))
    assert list(ds.kernel.values) == ["base-numascan", "base", "base+fix"]
    assert ds.attrs["mmtests_title"] == "autonumabench" and ds.attrs["mmtests_layout"] == "2019-2025"
    assert float(ds.syst.sel(kernel="base", workload="numa01", stat="Amean")) == 23.97
    assert float(ds.syst_pct.sel(kernel="base", workload="numa01", stat="Amean")) == 92.02
    assert bool(ds.syst_significant.sel(kernel="base", workload="numa01", stat="Amean"))
    assert ds.duration_system.values.tolist() == [2114.31, 179.20, 481.54]
    assert ds.autonuma_cost.values.tolist() == [753952.10, 91.44, 212633.14]


def _paragraphs(text):
    return [p.strip("\n") for p in text.split("\n\n")]


def test_real_lkp_3_commit_summary_unwrapped_round_trips():
    # <agvvRNJTAtNkCVZc@xsang-OptiPlex-9020>: a hand-made 3-commit table, not wrapped, its
    # commit: list of 3 (one annotated "<---- v2"); head lines trimmed but "commit: " kept
    # its space
    text = _text("lkp_3commits_trimmed_2026.txt")
    ds = report.read_lkp(text)
    assert list(ds.kernel.values) == ["8285917d6f383aef", "01b9da291c4969354807b52956f", "8da1b1ea4344c152a3892cbb132"]
    assert ds["stress-ng.switch.ops_per_sec"].values.tolist() == [38288993, 12355813, 37987427]
    assert ds["stress-ng.switch.ops_per_sec_change"].values[1:].tolist() == [-67.7, -0.8]
    assert float(ds["stress-ng.switch.ops"].sel(kernel="01b9da291c4969354807b52956f")) == 7.408e8
    assert float(ds["stress-ng.switch.ops_stddev_pct"].sel(kernel="01b9da291c4969354807b52956f")) == 3
    assert np.isnan(ds["stress-ng.switch.ops_stddev_pct"].sel(kernel="8285917d6f383aef"))
    assert float(ds["stress-ng.switch.nanosecs_per_context_switch_mq_method_change"][1]) == 210.2
    commits = json.loads(ds.attrs["lkp_group_header"])["commits"]
    assert len(commits) == 3 and commits[2].endswith("<---- v2")
    out = report.lkp(ds)
    assert "commit: \n" in out and out.rstrip("\n") in text  # byte for byte, the block as posted


def test_real_mmtests_5_kernels_2020_with_vmstat_and_prose():
    # <20200217104402.11643-1-mgorman@techsingularity.net>: Mel Gorman's 2020 cover letter,
    # 5 kernels in the 2019+ layout, only the Hmean rows kept (the label column stays 10 wide),
    # no title, prose between the compare table and its vmstat Ops table
    text = _text("mmtests_5kernels_specjbb_2020.txt")
    ds = report.read_mmtests(text)
    assert ds.sizes["kernel"] == 5 and ds.attrs["mmtests_layout"] == "2019-2025"
    assert list(ds.kernel.values) == ["5.6.0-rc1-baseline-v3", "5.6.0-rc1-loadavg-v3", "5.6.0-rc1-lbidle-v3",
                                      "5.6.0-rc1-classify-v3", "5.6.0-rc1-stopsearch-v3"]
    tput = ds.tput.sel(stat="Hmean")
    assert tput.sel(workload="16").values.tolist() == [629817.55, 407294.29, 615606.40, 631100.16, 638695.93]
    assert float(ds.tput_pct.sel(stat="Hmean", workload="16", kernel="5.6.0-rc1-loadavg-v3")) == -35.33
    assert bool(ds.tput_significant.sel(stat="Hmean", workload="16", kernel="5.6.0-rc1-loadavg-v3"))
    assert not bool(ds.tput_significant.sel(stat="Hmean", workload="22", kernel="5.6.0-rc1-loadavg-v3"))
    assert ds.sizes["workload"] == 40
    assert ds.numa_hint_local_pct.values.tolist() == [87.05, 87.55, 80.10, 86.12, 90.95]
    assert ds.numa_pages_migrated.values.tolist() == [69473, 62504, 121893, 118715, 36968]
    # "NUMA base-page range updates" is the raw counter: PTE updates + 512 per PMD update
    assert (ds.numa_pte_updates_base + 512 * ds.numa_huge_pte_updates == ds.numa_pte_updates).all()
    out = report.mmtests(ds)  # the two tables as posted, without the prose
    assert all(p in _paragraphs(text) for p in _paragraphs(out)) and len(_paragraphs(out)) == 2


def test_real_mmtests_6_kernels_then_2_kernels_separated_by_prose():
    # <20201008090909.GP3227@techsingularity.net>: netperf-udp with 6 kernels, prose, then
    # the same test again with 2 of them
    text = _text("mmtests_6kernels_netperf_2020.txt")
    six = report.read_mmtests(text)
    assert six.attrs["mmtests_tables"] == 2 and six.sizes["kernel"] == 6
    assert six.attrs["mmtests_title"] == "netperf-udp"
    assert list(six.kernel.values) == ["5.5.0-vanilla", "5.5.0-rc2-pre-cst", "5.5.0-rc2-enable-cst",
                                       "5.9.0-rc8-vanilla", "5.9.0-rc8-disable-acpi", "5.9.0-rc8-enable-c6"]
    send = six.send.sel(stat="Hmean", workload="16384")
    assert send.values.tolist() == [28585.78, 28950.90, 25946.88, 26643.69, 30891.89, 30701.46]
    assert six.send_significant.sel(stat="Hmean", workload="16384").values.tolist() == [False, False, True, True, True, True]
    assert float(six.send_pct.sel(stat="Hmean", workload="64", kernel="5.9.0-rc8-disable-acpi")) == 19.76
    two = report.read_mmtests(text, table=1)
    assert list(two.kernel.values) == ["5.9.0-rc8-disable-acpi", "5.9.0-rc8-enable-c6"]
    assert two.send.sel(stat="Hmean", workload="3312").values.tolist() == [10677.93, 10509.41]
    assert bool(two.send_significant.sel(stat="Hmean", workload="3312", kernel="5.9.0-rc8-enable-c6"))
    for ds in (six, two):  # each prints back byte for byte as posted
        assert report.mmtests(ds).rstrip("\n") in _paragraphs(text)


def test_real_mmtests_run_together_header_names_and_rows_left_out():
    # <20211004080547.GK3959@techsingularity.net>: four 3-kernel tables; a 24-character name
    # overflows its 23-wide column and runs into the one before it
    # ("vanillasched-scalewakegran-v2r5"); the dbench4 table keeps one Stddev row only
    text = _text("mmtests_3kernels_runtogether_2021.txt")
    kb = report.read_mmtests(text)
    assert kb.attrs["mmtests_tables"] == 4 and kb.attrs["mmtests_title"] == "multi subtest kernbench"
    assert list(kb.kernel.values) == ["5.15.0-rc1-vanilla", "5.15.0-rc1-sched-scalewakegran-v2r5",
                                      "5.15.0-rc1-sched-moveforward-v1r1"]
    assert kb.syst.sel(stat="Amean", workload="80").values.tolist() == [248.57, 247.74, 232.93]
    assert kb.syst_significant.sel(stat="Amean", workload="80").values.tolist() == [False, False, True]
    assert float(kb.user_pct.sel(stat="Amean", workload="80", kernel="5.15.0-rc1-sched-moveforward-v1r1")) == 0
    rr = report.read_mmtests(text, table=1)  # its header has an extra space: read by tokens
    assert list(rr.kernel.values) == list(kb.kernel.values)
    assert rr["1"].sel(stat="Max").values.tolist() == [53019.93, 51263.38, 51263.04]
    db = report.read_mmtests(text, table=2)
    assert db.attrs["mmtests_title"] == ""
    assert db["8"].sel(stat="Amean").values.tolist() == [30.58, 30.22, 99.04]
    assert float(db["8_pct"].sel(stat="Amean", kernel="5.15.0-rc1-sched-moveforward-v1r1")) == -223.88
    d4 = report.read_mmtests(text, table=3)
    assert d4.attrs["mmtests_title"] == "dbench4 Loadfile Execution Time"
    assert float(d4["1"].sel(stat="Stddev", kernel="5.15.0-rc1-vanilla")) == 1.43
    assert np.isnan(d4["2"].sel(stat="Stddev")).all()  # not printed in the mail: no value
    for i, ds in enumerate((kb, rr, db, d4)):
        out = report.mmtests(ds).rstrip("\n")
        if i == 1:  # the rows as posted; the header as compare-kernels prints it
            assert out.split("\n")[3:] == text.split("multi subtest netperf-tcp-rr\n")[1].split("\n\n")[0].split("\n")[2:]
        else:
            assert out in _paragraphs(text)
    # rows left out are read only when the table does not end the text (else: truncated)
    table = _paragraphs(text)[-3]
    with pytest.raises(ValueError, match="truncated table"):
        report.read_mmtests(table)


# ================================================================ issue 27: the readers' rules
# Class 1: a reader knows every label it reads or refuses the line, naming it.
# Class 2: linear time and bounded memory, with a size limit and a clear error above it.
# Class 9: hand-edited mmtests headers read, and print back in the writer's own layout.

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from numalab.report.vmstat_format import _VMSTAT_SOURCE  # noqa: E402

_ROUND_TRIP_MM = ["mmtests_6kernels.txt", "mmtests_5kernels_2026.txt"]
_ROUND_TRIP_LKP = ["lkp_email_icl.txt", "lkp_5commits.txt", "lkp_4commits_spr_2023.txt"]
_PROP = dict(deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
#: replacement characters of the mutations: letters, digits, the punctuation of names, and the
#: control / invisible characters a damaged mail holds
_CHARS = list("aAzZ09_-.%:+") + ["\x00", "\x01", "\x0b", "\x0c", "\x1b", "\x1c", "\x7f", "\x85", "\u200b",
                                 "\u2028", "\ufeff"]


def _tokens(text):
    return [line.split() for line in text.split("\n") if line.strip()]


def _refused_or_read_as_written(read, write, text):
    """The reader refuses ``text`` naming a line, or reads it so that printing it back gives
    the same words on the same lines (nothing dropped, renamed, or turned into another row)."""
    try:
        ds = read(text)
    except ValueError as exc:
        assert str(exc).startswith("line ") or " line " in str(exc), exc
        return None
    assert _tokens(write(ds)) == _tokens(text)
    return ds


@settings(max_examples=120, **_PROP)
@given(name=st.sampled_from(_ROUND_TRIP_MM), data=st.data())
def test_mmtests_mutated_label_or_op_is_refused_or_read_as_written(name, data):
    text = _text(name)
    lines = text.split("\n")
    rows = [i for i, ln in enumerate(lines) if ln[:1].isalpha() and "(" in ln]
    i = data.draw(st.sampled_from(rows))
    label, op = lines[i].split()[:2]
    field = data.draw(st.sampled_from(["label", "op"]))
    start = 0 if field == "label" else lines[i].index(op, len(label))
    word = label if field == "label" else op
    pos = start + data.draw(st.integers(0, len(word) - 1))
    ch = data.draw(st.sampled_from(_CHARS))
    how = data.draw(st.sampled_from(["replace", "insert"]))
    line = lines[i][:pos] + ch + lines[i][pos + (how == "replace"):]
    if line == lines[i]:
        return
    mutated = "\n".join(lines[:i] + [line] + lines[i + 1:])
    ds = _refused_or_read_as_written(report.read_mmtests, report.mmtests, mutated)
    if not ch.isprintable():
        assert ds is None, repr(line)  # a control character in a table line is always refused


@settings(max_examples=120, **_PROP)
@given(name=st.sampled_from(_ROUND_TRIP_LKP), data=st.data())
def test_lkp_mutated_stat_name_is_refused_or_read_as_written(name, data):
    from numalab.report.lkp_format import _lkp_var

    text = _text(name)
    lines = text.split("\n")
    rows = [i for i, ln in enumerate(lines) if ln.startswith(" ") and ln.split() and ln.split()[-1][:1].isalpha()
            and "%" not in ln.split()[-1][:1]]
    rows = [i for i in rows if "." in lines[i].split()[-1]]
    i = data.draw(st.sampled_from(rows))
    key = lines[i].split()[-1]
    start = lines[i].rindex(key)
    pos = start + data.draw(st.integers(0, len(key) - 1))
    ch = data.draw(st.sampled_from(_CHARS))
    line = lines[i][:pos] + ch + lines[i][pos + 1:]
    if line == lines[i]:
        return
    mutated = "\n".join(lines[:i] + [line] + lines[i + 1:])
    ds = _refused_or_read_as_written(report.read_lkp, report.lkp, mutated)
    if ds is None:
        return
    assert ch.isprintable(), repr(line)
    interpreted = {"elsp", "syst", "user", *_VMSTAT_SOURCE}
    new_key = line.split()[-1]
    if _lkp_var(key)[0] in interpreted:  # a row numalab reads never silently becomes another stat
        assert _lkp_var(new_key)[0] in interpreted, (key, new_key)


@pytest.mark.parametrize("bad, why", [
    ("autonuma-benchmark.numa0l.seconds", "did you mean 'numa01'"),
    ("autonuma-benchmark.NUMA01.seconds", "did you mean 'numa01'"),
    ("autonuma-benchmark.time.elapsed_tme", "did you mean 'elapsed_time'"),
    ("autonuma-benchmrk.numa01.seconds", "mistyping of 'autonuma-benchmark'"),
    ("proc-vmstta.numa_hint_faults", "mistyping of 'proc-vmstat'"),
    ("proc-vmstat.numa_hint_faultz", "mistyping of 'numa_hint_faults'"),
])
def test_lkp_mistyped_key_is_refused_naming_line_and_key(bad, why):
    text = _text("lkp_email_icl.txt").replace("autonuma-benchmark.numa01.seconds", bad)
    with pytest.raises(ValueError, match=rf"line 14: stat '{re.escape(bad)}'.*{re.escape(why)}"):
        report.read_lkp(text)


def test_lkp_reader_refuses_repeated_ids_and_values_that_are_no_finite_number():
    text = _text("lkp_email_icl.txt")
    dup = text.replace("af46f3c9ca2d16485912f8b9c89", "167773d1ddb5ffdd           ")
    with pytest.raises(ValueError, match=r"line 9: commit id '167773d1ddb5ffdd' heads columns 1 and 2"):
        report.read_lkp(dup)
    for bad in ("1e999", "inf", "-inf"):
        with pytest.raises(ValueError, match=rf"line 14: .* is '{bad}', not a finite number"):
            report.read_lkp(text.replace("341.49", bad.rjust(6)))
    assert np.isnan(report.read_lkp(text.replace("341.49", "   nan")).elsp.sel(workload="numa01")[0])


def test_lkp_writer_gives_every_column_its_own_id_and_lists_the_full_names():
    long = ["6.12+N=4+rules=own_pid,hot>=1,shared>=3", "6.12+N=4+rules=own_pid,hot>=1,shared>=4"]
    ds = runs([[[200.0, 210.0]], [[180.0, 190.0]], [[170.0, 175.0]]], names=["6.4", *long])
    text = report.lkp(ds)
    ids = text.split("\n")[text.split("\n").index("----------------" + " ---------------------------" * 2 + " ") - 1]
    assert ids.split() == ["6.4", "6.12+N=4+rules=own_pid,ho~2", "6.12+N=4+rules=own_pid,ho~3"]
    assert f"  {long[0]}\n  {long[1]}\n" in text  # the commit: list holds them whole
    back = report.read_lkp(text)
    assert list(back.kernel.values) == ids.split() and report.lkp(back) == text
    assert json.loads(back.attrs["lkp_group_header"])["commits"][1:] == long
    # names that fit print as before, without a group header
    assert report.lkp(runs([[[1.0, 2.0]], [[3.0, 4.0]]])).startswith("   6.1.0-vanilla")


@settings(max_examples=60, **_PROP)
@given(names=st.lists(st.text(alphabet="ab-+=,.0123456789", min_size=1, max_size=40), min_size=2, max_size=4,
                      unique=True))
def test_lkp_writer_ids_are_unique_for_any_names(names):
    from numalab.report.lkp_format import _lkp_ids

    ids, cut = _lkp_ids(names)
    assert len(set(ids)) == len(ids)
    assert len(ids[0]) <= 16 and all(len(i) <= 27 for i in ids[1:])
    assert cut == (len(names[0]) > 16 or any(len(n) > 27 for n in names[1:]))
    assert [i for i, n in zip(ids, names) if len(n) <= (16 if n is names[0] else 27)] == \
        [n for n in names if len(n) <= (16 if n is names[0] else 27)]  # names that fit are kept


@pytest.mark.parametrize("edit, expect", [
    (lambda t: t.replace("Amean     syst-NUMA01 ", "Amaen     syst-NUMA01 ", 1), r"line 8: stat label 'Amaen'.*'Amean'"),
    (lambda t: t.replace("Amean     syst-NUMA01 ", "Hmean     syst-NUMA01 ", 1),
     r"line 8: stat label 'Hmean' has exactly the rows 'Amean' lacks"),
    (lambda t: t.replace("Amean     syst-NUMA01 ", "Amean     syst-NUMA0l ", 1), r"line 8: op 'syst-NUMA0l'.*syst-NUMA01"),
    (lambda t: t.replace("Amean     syst-NUMA01 ", "Amean     syts-NUMA01 ", 1), r"line 8: op 'syts-NUMA01'.*syst-NUMA01"),
    (lambda t: t.replace("Amean     syst-NUMA01 ", "Amean     syst-FOOBAR ", 1),
     r"line 8: op 'syst-FOOBAR' in an autonumabench table"),
    (lambda t: t.replace("Amean     syst-NUMA01 ", "Amean\x1c    syst-NUMA01 ", 1), r"line 8: .*U\+001C"),
    (lambda t: t.replace("504.13", "   inf", 1), r"line 8: .*'inf', not a finite number"),
    (lambda t: t.replace("Duration Elapsed", "Duration Elapsd  "), r"Duration row 'Elapsd'.*'Elapsed'"),
    (lambda t: t.replace("Ops NUMA hint faults ", "Ops NUMA hint faultz "), r"'NUMA hint faultz' is a mistyping"),
])
def test_mmtests_damaged_labels_are_refused_naming_the_line(edit, expect):
    text = _text("mmtests_6kernels.txt")
    assert "Duration Elapsed" in text and "Ops NUMA hint faults " in text
    with pytest.raises(ValueError, match=expect):
        report.read_mmtests(edit(text))


def test_mmtests_mistyped_op_of_another_test_taking_the_others_gap_is_refused():
    # a table of another benchmark: an op that has exactly the row its neighbour lacks
    text = _text("mmtests_3kernels_runtogether_2021.txt")
    kb = text.split("\n\n")[2].strip("\n")  # the kernbench table: user-80 / syst-80 / elsp-80
    assert kb.startswith("multi subtest kernbench")
    bad = kb.replace("Stddev    syst-80 ", "Stddev    syst-8O ")
    with pytest.raises(ValueError, match=r"op 'syst-8O' has exactly the rows 'syst-80' lacks"):
        report.read_mmtests(bad + "\n\nmore text\n")


def test_mmtests_monitor_header_must_name_the_compare_tables_kernels():
    text = _text("mmtests_6kernels.txt")
    lines = text.split("\n")
    i = next(j for j, ln in enumerate(lines) if ln.startswith("Duration")) - 1
    lines[i] = lines[i].replace("p5", "p9")
    with pytest.raises(ValueError, match=rf"line {i}: the monitor table's header .* does not name"):
        report.read_mmtests("\n".join(lines))


# ------------------------------------------------------------------- class 2: size and time
def test_report_text_over_the_size_limit_is_refused_at_once(monkeypatch):
    text = _text("lkp_email_icl.txt")
    monkeypatch.setenv("NUMALAB_MAX_REPORT_BYTES", "500")
    for read in (report.read_lkp, report.read_mmtests):
        with pytest.raises(ValueError, match=r"text holds 1009 B, more than a report reader takes \(500 B"):
            read(text)
    with pytest.raises(ValueError, match="before holds"):
        report.read_vmstat("numa_hint_faults 1\n" * 40, "numa_hint_faults 2\n")
    monkeypatch.setenv("NUMALAB_MAX_REPORT_BYTES", "inf")
    with pytest.raises(ValueError, match="NUMALAB_MAX_REPORT_BYTES='inf' is not a whole number"):
        report.read_lkp(text)


def test_mail_of_thousands_of_blocks_reads_in_one_pass():
    # issue: each block cost ~65 ms (a Dataset built and concatenated per block): a 2 MB mail
    # took 134 s. The blocks are now parsed to plain records and stacked once.
    block = _text("lkp_mail_3blocks_2023.txt")
    mail = block * 700  # 2100 blocks, 1.9 MB
    ds = report.read_lkp(mail)
    assert ds.sizes["block"] == 2100 and ds.sizes["kernel"] == 2
    one = report.read_lkp(block)
    np.testing.assert_array_equal(ds.elsp.isel(block=slice(3, 6)).values, one.elsp.values)
    assert report.lkp(report.read_lkp(mail, block=1000)) == report.lkp(report.lkp_blocks(one)[1])  # 1000 = 3 x 333 + 1
    with pytest.raises(ValueError, match=r"block=2100: the text has 2100 block\(s\)"):
        report.read_lkp(mail, block=2100)


def test_mail_whose_blocks_would_not_fit_in_memory_is_refused(monkeypatch):
    # every block comparing two other commits: the dense (block, commit) arrays grow as blocks^2
    block = _text("lkp_email_icl.txt")
    mail = "\n".join(block.replace("167773d1ddb5ffdd", f"{i:016x}").replace("af46f3c9ca2d16485912f8b9c89", f"{i:027x}")
                   for i in range(1, 400))
    monkeypatch.setenv("NUMALAB_MEMORY_LIMIT", "16M")
    with pytest.raises(ValueError, match=r"the 399 blocks x 798 commits x 4 stats of the mail make 4,776,030 cells, "
                       r"about 72.9 MiB .* limit of 16.0 MiB .*read one block at a time: read_lkp\(text, block=i\)"):
        report.read_lkp(mail)
    assert float(report.read_lkp(mail, block=5).elsp.sel(workload="numa01")[0]) == 341.49


def test_too_many_distinct_stats_are_refused(monkeypatch):
    from numalab import limits

    monkeypatch.setattr(limits, "MAX_REPORT_STATS", 4)
    with pytest.raises(ValueError, match=r"stat names: 5 distinct names, more than a report holds; allowed: at most 4"):
        report.read_lkp(_text("lkp_email_icl.txt"))
    with pytest.raises(ValueError, match="at most 4"):
        report.read_vmstat("".join(f"c{i} {i}\n" for i in range(9)), "".join(f"c{i} {i}\n" for i in range(9)))


def test_vmstat_values_past_64_bits_are_refused_not_a_traceback():
    with pytest.raises(ValueError, match=r"before line 1: expected '<counter> <integer>'"):
        report.read_vmstat("numa_hint_faults " + "9" * 30 + "\n", "numa_hint_faults 1\n")
    with pytest.raises(ValueError, match="outside a 64-bit counter"):
        report.read_vmstat(f"numa_hint_faults {2**64}\n", "numa_hint_faults 1\n")
    with pytest.raises(ValueError, match=r"after line 1: vmstat line .* U\+001C"):
        report.read_vmstat("numa_hint_faults 1\n", "numa_hint\x1cfaults 2\n")


def test_long_pathological_lines_are_refused_with_a_short_message():
    lines = _text("lkp_email_icl.txt").split("\n")
    for junk in ("1" * 200_000, "± " * 100_000, "(" * 200_000):
        with pytest.raises(ValueError) as exc:
            report.read_lkp("\n".join(lines[:12] + [junk] + lines[12:]))
        assert len(str(exc.value)) < 500


# ---------------------------------------------------------------- class 9: hand-edited headers
def _header_variants():
    text = _text("mmtests_6kernels.txt")
    lines = text.split("\n")
    names = ["v6.5-vanilla", "6.6.0-rc1-vanilla", "6.6.0-rc1-p1", "6.6.0-rc1-p3", "6.6.0-rc1-p5", "6.6.0-rc1-p6"]
    top, bottom, rows = lines[1], lines[2], lines[3:]
    sub = re.sub
    return text, {
        "tabs for runs of spaces": [lines[0], sub(r" {2,}", "\t", top), sub(r" {2,}", "\t", bottom)] + rows,
        "tabs and spaces mixed": [lines[0], "\t" + top.strip().replace("  ", "\t"), "  \t" + sub(" +", " \t", bottom.strip())] + rows,
        "a blank line above the first row": lines[:3] + [""] + rows,
        "a whitespace-only line above the first row": lines[:3] + [" \t  "] + rows,
        "two blank lines above the first row": lines[:3] + ["", "   "] + rows,
        "one line of names, tabs": [lines[0], "\t\t\t" + "\t".join(names)] + rows,
        "one line of names, spaces, then a blank line": [lines[0], "      " + "   ".join(names), ""] + rows,
        "trailing tabs and spaces": [lines[0], top + " \t", bottom + "\t"] + rows,
        "a blank line inside the table": lines[:8] + [""] + lines[8:],
    }


@pytest.mark.parametrize("variant", list(_header_variants()[1]))
def test_hand_edited_mmtests_header_reads_and_prints_in_the_writers_layout(variant):
    text, variants = _header_variants()
    ds = report.read_mmtests("\n".join(variants[variant]))
    assert list(ds.kernel.values) == list(report.read_mmtests(text).kernel.values)
    assert report.mmtests(ds) == text


def test_one_line_header_without_a_title_reads_whole_names():
    lines = _text("mmtests_6kernels.txt").split("\n\n")[0].split("\n")  # the compare table alone
    names = ["base", "patched-v2", "x", "y", "z", "w"]
    ds = report.read_mmtests("\n".join(["", "\t\t" + "\t".join(names)] + lines[3:]) + "\n")
    assert list(ds.kernel.values) == names  # not '-base', '-patched-v2' (an empty first half)

"""numalab.report: golden text from the spec's worked examples and calibration.md, round trips,
ingest of quoted/wrapped e-mails, malformed input, and the `numalab report` command."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from numalab import report, stats
from numalab.cli import main

DATA = Path(__file__).parent / "data"


def _file(name: str) -> Path:
    """A test input: the two calibration blocks are the published ones shipped in data/."""
    published = {"lkp_calibration_patch5.txt": "lkp-rfc2023-p5-vs-p4.lkp.txt",
                 "lkp_calibration_patch6.txt": "lkp-rfc2023-p6-vs-p5.lkp.txt"}
    if name in published:
        from numalab import data

        return data.data_dir() / published[name]
    return DATA / name
WORKLOADS = ["numa01", "numa01_THREAD_ALLOC", "numa02", "numa02_SMT"]
KERNELS = ["6.1.0-vanilla", "6.1.0-numab-v1r1"]
COUNTERS = ["numa_pte_updates", "numa_huge_pte_updates", "numa_hint_faults", "numa_hint_faults_local",
            "numa_pages_migrated"]


def runs(elsp=None, syst=None, kernels=KERNELS, workloads=WORKLOADS, nseed=7, fill=100.0, counters=None):
    """A Dataset shaped like simulate()'s (policy, workload, seed); `elsp`/`syst` map
    (kernel index, workload) -> samples, everything else is `fill`."""
    shape = (len(kernels), len(workloads), nseed)
    data = {}
    for name, given_ in (("elsp", elsp or {}), ("syst", syst or {})):
        arr = np.full(shape, fill)
        for (k, w), v in given_.items():
            arr[k, workloads.index(w)] = v
        data[name] = (("policy", "workload", "seed"), arr, {"units": "s"})
    for name, arr in (counters or {}).items():
        data[name] = (("policy", "workload", "seed"), np.asarray(arr), {"units": "1", "kernel_name": name})
    return xr.Dataset(data, coords={"policy": kernels, "workload": workloads, "seed": np.arange(nseed)})


def row(text, prefix):
    hits = [line for line in text.splitlines() if line.startswith(prefix)]
    assert len(hits) == 1, (prefix, text)
    return hits[0]


def spread(mean, sd, n=7):
    """n samples with exactly this mean and sample stddev: mean, then +-a pairs."""
    a = sd * np.sqrt((n - 1) / (n - 1 if n % 2 else n))
    k = (n - 1) // 2
    return np.array([mean] + [mean - a] * k + [mean + a] * k + ([] if n % 2 else [mean]))


# ---------------------------------------------------------------------------------------------
# mmtests golden output from spec §2.5 (2024-09 code: no asterisks)


def test_mmtests_header_and_rows_match_the_spec_verbatim_output():
    ds = runs(
        syst={
            (0, "numa01"): [28.72, 29.2, 29.3, 29.4, 29.5, 29.74, 40.0],
            (1, "numa01"): [28.56, 29.1, 29.2, 29.3, 29.5, 29.72, 40.0],
            (0, "numa01_THREAD_ALLOC"): [439.14] + [440.0] * 6,
            (1, "numa01_THREAD_ALLOC"): [429.11] + [430.0] * 6,
            (0, "numa02"): spread(5.0, 0.03),
            (1, "numa02"): spread(5.0, 0.04224),
        },
        elsp={
            (0, "numa01"): [292.51] * 7,
            (1, "numa01"): [306.26] * 7,
            (0, "numa01_THREAD_ALLOC"): [267.576] * 7,
            (1, "numa01_THREAD_ALLOC"): [246.484] * 7,
            (0, "numa02_SMT"): [14.52] * 7,
            (1, "numa02_SMT"): [13.5965] * 7,
        },
    )
    text = report.mmtests(ds, era="2024-09")
    lines = text.splitlines()
    assert lines[0] == "autonumabench"
    assert lines[1] == "                                                   6.1.0                  6.1.0"
    assert lines[2] == "                                                 vanilla             numab-v1r1"
    golden = [
        "Min       syst-NUMA01                   28.72 (   0.00%)       28.56 (   0.56%)",
        "Min       syst-NUMA01_THREADLOCAL      439.14 (   0.00%)      429.11 (   2.28%)",
        "Amean     elsp-NUMA01                  292.51 (   0.00%)      306.26 (  -4.70%)",
        "Amean     elsp-NUMA01_THREADLOCAL      267.58 (   0.00%)      246.48 (   7.88%)",
        "Stddev    syst-NUMA02                    0.03 (   0.00%)        0.04 ( -40.80%)",
        "BAmean-50 elsp-NUMA02_SMT               14.52 (   0.00%)       13.60 (   6.36%)",
        "BAmean-95 syst-NUMA01                   29.31 (   0.00%)       29.23 (   0.27%)",
    ]
    for g in golden:
        assert g in lines
    # stat-major order, syst ops before elsp ops, TESTs in file-name order, 8 stats x 8 ops
    body = lines[3 : 3 + 64]
    assert [b.split()[1] for b in body[:8]] == [
        f"{p}-{t}" for p in ("syst", "elsp") for t in ("NUMA01", "NUMA01_THREADLOCAL", "NUMA02", "NUMA02_SMT")
    ]
    assert [b.split()[0] for b in body[::8]] == list(stats.stat_labels())
    assert not any(line.endswith(" ") for line in body)
    assert "*" not in "\n".join(body)


def significant_smt():
    return runs(syst={(0, "numa02_SMT"): spread(0.8998, 0.011), (1, "numa02_SMT"): spread(0.86, 0.011)})


def test_mmtests_2023_marks_significant_means_with_asterisks():
    text = report.mmtests(significant_smt(), era="2023")
    assert row(text, "Amean     syst-NUMA02_SMT") == (
        "Amean     syst-NUMA02_SMT                0.90 (   0.00%)        0.86 *   4.42%*")
    # only mean rows are ever marked
    assert "*" not in row(text, "BAmean-50 syst-NUMA02_SMT")
    assert "*" not in row(text, "Min       syst-NUMA02_SMT")
    # same data, 2024-09 code: parentheses everywhere
    assert row(report.mmtests(significant_smt(), era="2024-09"), "Amean     syst-NUMA02_SMT").endswith("(   4.42%)")


def test_mmtests_2024_12_bands_need_non_overlap():
    # means 0.04 apart with s = 0.011: the t-test marks it, the +-1.96 s bands still overlap
    assert "*" not in row(report.mmtests(significant_smt(), era="2024-12"), "Amean     syst-NUMA02_SMT")
    far = runs(syst={(0, "numa02_SMT"): spread(0.90, 0.005), (1, "numa02_SMT"): spread(0.86, 0.005)})
    assert row(report.mmtests(far, era="2024-12"), "Amean     syst-NUMA02_SMT").endswith("*   4.44%*")


def test_mmtests_head_layout_matches_the_spec_row():
    ds = runs(elsp={(0, "numa02"): spread(20.05, 0.2), (1, "numa02"): spread(9.63, 0.2)})
    text = report.mmtests(ds, era="2026", monitors=False)
    assert row(text, "Amean     Elapsed-NUMA02 ") == (
        "Amean     Elapsed-NUMA02                         20.05 (   0.00%)              9.63 *  51.97%*")
    ops = [line.split()[1] for line in text.splitlines()[3:11]]
    assert ops == [f"{p}-{t}" for p in ("Elapsed", "System")
                   for t in ("NUMA01", "NUMA01_THREADLOCAL", "NUMA02", "NUMA02_SMT")]
    assert [line.split()[0] for line in text.splitlines()[3::8]] == list(stats.stat_labels(era="2026"))


def test_mmtests_header_split_quirks():
    ds = runs(kernels=["5.0.0-rc1-vanilla", "baseline"], workloads=["numa01"])
    h1, h2 = report.mmtests(ds, monitors=False).splitlines()[1:3]
    assert h1.split() == ["5.0.0-rc1", "baselin"]
    assert h2.split() == ["vanilla", "baseline"]
    back = report.read_mmtests(report.mmtests(ds))
    assert list(back.kernel.values) == ["5.0.0-rc1-vanilla", "baseline"]


def test_mmtests_baseline_moves_first_and_pct_flips():
    ds = runs(elsp={(0, "numa01"): [200.0] * 7, (1, "numa01"): [190.0] * 7}, workloads=["numa01"])
    assert row(report.mmtests(ds, era="2024-09"), "Amean     elsp-NUMA01").endswith("190.00 (   5.00%)")
    text = report.mmtests(ds, baseline="6.1.0-numab-v1r1", era="2024-09")
    assert row(text, "Amean     elsp-NUMA01").endswith("190.00 (   0.00%)      200.00 (  -5.26%)")


# ---------------------------------------------------------------------------------------------
# mmtests monitor tables (§2.6, §4.1)


def test_vmstat_ops_table_rows_and_autonuma_cost():
    c = {name: np.zeros((2, 1, 7), dtype=np.uint64) for name in COUNTERS}
    c["numa_pte_updates"][0, 0, 0] = 1_000_000
    c["numa_huge_pte_updates"][0, 0, 0] = 1000
    c["numa_hint_faults"][0, 0, :] = 100
    c["numa_hint_faults_local"][0, 0, :] = 25
    c["numa_pages_migrated"][0, 0, 0] = 5000
    ds = runs(workloads=["numa01"], counters=c)
    text = report.mmtests(ds)
    ops = {line[4:32].rstrip(): line[32:] for line in text.splitlines() if line.startswith("Ops ")}
    assert list(ops) == ["NUMA base-page range updates", "NUMA PTE updates", "NUMA PMD updates",
                         "NUMA hint faults", "NUMA hint local faults %", "NUMA hint local percent",
                         "NUMA pages migrated", "AutoNUMA cost"]
    vals = {k: [float(x) for x in v.split()] for k, v in ops.items()}
    assert vals["NUMA PTE updates"] == [1_000_000 - 512 * 1000, 0.0]
    assert vals["NUMA hint faults"] == [700.0, 0.0]
    assert vals["NUMA hint local faults %"] == [175.0, 0.0]  # the raw count, despite the '%'
    assert vals["NUMA hint local percent"] == [25.0, 100.0]  # 100 when there were no faults
    assert vals["AutoNUMA cost"] == [round((7e6 + 5000 * 700 + 19 * 5000) / 1e6, 2), 0.0]
    assert all(len(v) == 30 for v in ops.values())  # two %15.2f cells
    duration = [line for line in text.splitlines() if line.startswith("Duration")]
    assert duration == ["Duration System       700.00      700.00", "Duration Elapsed      700.00      700.00"]


# ---------------------------------------------------------------------------------------------
# mmtests round trip: format -> read -> same statistics to printed precision, same text


def unambiguous_name(name):
    """Names whose two header halves can be told apart from a name without '-' (which prints
    as name[:-1] / name) and which the -rc<digit> shift leaves alone."""
    if re.search(r"-rc[0-9]", name):
        return False
    if "-" not in name:
        return True
    a, b = name.split("-", 1)
    return not (len(b) == len(a) + 1 and b.startswith(a))


kernel_names = st.lists(
    st.from_regex(r"[0-9a-z.]{1,6}(-[0-9a-z.]{1,8}){0,2}", fullmatch=True).filter(unambiguous_name),
    min_size=2, max_size=2, unique=True,
)


@settings(max_examples=300)
@given(
    st.lists(st.floats(0.5, 5000), min_size=2 * 2 * 5, max_size=2 * 2 * 5),
    st.sampled_from(stats.ERAS),
    kernel_names,
)
def test_mmtests_round_trip(values, era, kernels):
    ds = runs(workloads=["numa01_THREAD_ALLOC", "numa02"], nseed=5, kernels=kernels)
    ds["elsp"][:] = np.reshape(values, (2, 2, 5))
    ds["syst"][:] = np.reshape(values, (2, 2, 5))[::-1] / 10
    text = report.mmtests(ds, era=era)
    back = report.read_mmtests(text)
    assert list(back.kernel.values) == kernels
    for var in ("elsp", "syst"):
        cmp = stats.mmtests_compare(ds[var], along="policy", era=era)
        cmp = cmp.rename(policy="kernel").transpose("kernel", "workload", "stat")
        dims = ("kernel", "workload", "stat")
        # printed to 2 decimals: equal within half a unit of the last place (+ float slack)
        np.testing.assert_allclose(back[var].transpose(*dims).values, cmp["value"].values, rtol=0, atol=0.0051)
        np.testing.assert_allclose(back[f"{var}_pct"].transpose(*dims).values, cmp["pct"].values, rtol=0, atol=0.0051)
        np.testing.assert_array_equal(back[f"{var}_significant"].transpose(*dims).values, cmp["significant"].values)
    assert report.mmtests(back) == text


def test_read_mmtests_quoted_and_wrapped_rows():
    text = report.mmtests(significant_smt())
    mangled = []
    for line in text.splitlines():
        if line.startswith(("Min", "Amean", "Stddev")):
            # a mail client wraps at the last space before column 60 (here inside '(   0.00%)'),
            # or, for Stddev rows, between the two cells; the first row is wrapped too
            cut = line.rindex(" ", 0, 60) if not line.startswith("Stddev") else 56
            mangled += [line[:cut], " " + line[cut:].lstrip()]
        else:
            mangled.append(line)
    quoted = "\n".join("> " + m if m else ">" for m in mangled)
    back = report.read_mmtests("Mel wrote:\n\n" + quoted + "\n")
    assert report.mmtests(back) == text


# ---------------------------------------------------------------------------------------------
# LKP golden output (calibration.md, spec §3.2/§3.3)


@pytest.mark.parametrize("name", ["lkp_calibration_patch5.txt", "lkp_calibration_patch6.txt", "lkp_email_icl.txt"])
def test_lkp_tables_round_trip_byte_for_byte(name):
    text = _file(name).read_text()
    ds = report.read_lkp(text)
    assert report.lkp(ds) == text


def test_read_lkp_dataset_representation():
    ds = report.read_lkp(_file("lkp_calibration_patch5.txt").read_text())
    assert list(ds.kernel.values) == ["167773d1ddb5ffdd", "af46f3c9ca2d16485912f8b9c89"]
    assert list(ds.workload.values) == ["numa01", "numa01_THREAD_ALLOC", "numa02"]
    assert ds.elsp.sel(kernel="167773d1ddb5ffdd", workload="numa01_THREAD_ALLOC") == 186.67
    assert ds.elsp_stddev_pct.sel(kernel="af46f3c9ca2d16485912f8b9c89", workload="numa01") == 2
    assert np.isnan(ds.elsp_stddev_pct.sel(kernel="167773d1ddb5ffdd", workload="numa01"))
    assert ds.elsp_change.sel(kernel="af46f3c9ca2d16485912f8b9c89", workload="numa02") == -33.6
    assert ds["autonuma-benchmark.time.elapsed_time"].values.tolist() == [2200.0, 1913.0]
    assert ds.elsp.attrs["units"] == "s"


def test_lkp_from_runs_matches_the_email_line():
    # two runs a +- d have population stddev d: 6.5 % and 7.5 % print as 6 and 7
    base = [186.67 * (1 - 0.065), 186.67 * (1 + 0.065)]
    new = [136.12 * (1 - 0.075), 136.12 * (1 + 0.075)]
    ds = runs(elsp={(0, "numa01_THREAD_ALLOC"): base, (1, "numa01_THREAD_ALLOC"): new},
              workloads=["numa01_THREAD_ALLOC"], nseed=2, kernels=["167773d1ddb5ffdd", "af46f3c9ca2d16485912f8b9c89"])
    text = report.lkp(ds, metric="elsp")
    assert text.splitlines()[:4] == _file("lkp_calibration_patch5.txt").read_text().splitlines()[:4]
    assert text.splitlines()[4] == (
        "    186.67 ±  6%     -27.1%     136.12 ±  7%  autonuma-benchmark.numa01_THREAD_ALLOC.seconds")


def test_lkp_names_a_cut_column_id_in_full_in_the_commit_list():
    long = ["6.4-rc-scan-delay", "6.4"]  # 17 characters: its 16-character column shows "6.4-rc-scan-dela"
    ds = runs(elsp={(0, "numa02"): [14.3, 14.3], (1, "numa02"): [13.8, 13.8]}, workloads=["numa02"], nseed=2,
              kernels=long)
    lines = report.lkp(ds, metric="elsp").splitlines()
    i = lines.index("commit: ")
    assert lines[i + 1:i + 3] == ["  6.4-rc-scan-delay", "  6.4"] and "6.4-rc-scan-dela " in lines[i + 4]
    short = runs(elsp={(0, "numa02"): [14.3, 14.3], (1, "numa02"): [13.8, 13.8]}, workloads=["numa02"], nseed=2,
                 kernels=["6.4", "6.12"])
    assert "commit:" not in report.lkp(short, metric="elsp")  # names that fit: the block as before


B = " " * 6  # an empty ± field


@pytest.mark.parametrize(
    "base, new, expect",
    [
        ([999.99, 999.99], [2200.9, 2200.9], "    999.99" + B + "    +120.1% " + "      2200" + B),
        ([2e8, 2e8], [2.534e10, 2.534e10], "     2e+08" + B + "  +12570.0% " + " 2.534e+10" + B),  # C's %g
        ([1e8, 1e8], [1e8, 1e8], " 100000000" + B + "      +0.0% " + " 100000000" + B),
        ([0.001, 0.001], [200.0, 200.0], "      0.00" + B + "    +2e+07% " + "    200.00" + B),
        ([100.0, 100.0], [98.0, 102.0], "    100.00" + B + "      +0.0% " + "    100.00" + B),  # r = 2: hidden
        ([100.0, 100.0], [97.9, 102.1], "    100.00" + B + "      +0.0% " + "    100.00" + " ±  2%"),  # r = 2.1
        ([-5.0, -3.0], [1.0, 2.0], "     -4.00" + B + "    -137.5% " + "      1.50" + " ± 33%"),  # mean < 0: no ±
        ([-1500.7, -1500.7], [0.5, 0.5], "     -1500" + B + "    -100.0% " + "      0.50" + B),  # truncation
    ],
)
def test_lkp_number_formats(base, new, expect):
    ds = runs(elsp={(0, "numa01"): base, (1, "numa01"): new}, workloads=["numa01"], nseed=2)
    line = report.lkp(ds, metric="elsp").splitlines()[4]
    assert line == expect + "  autonuma-benchmark.numa01.seconds"


def test_lkp_one_run_and_absolute_change():
    ds = runs(workloads=["numa01"], nseed=1)
    ds["cpu_util%"] = (("policy", "seed"), np.array([[0.15], [0.12]]))
    text = report.lkp(ds, metric=["elsp", "cpu_util%"])
    assert text.splitlines()[4] == "    100.00" + B + "      +0.0% " + "    100.00" + B + "  autonuma-benchmark.numa01.seconds"
    assert text.splitlines()[5] == "      0.15" + B + "      -0.0  " + "      0.12" + B + "  cpu_util%"
    assert report.read_lkp(text)["cpu_util%_change"].values[1] == -0.0


def test_lkp_group_header_for_runs():
    ds = runs(workloads=["numa02"], nseed=3).assign_attrs(topology="2s-128")
    lines = report.lkp(ds, metric="elsp", group_header=True).splitlines()
    assert lines[0] == "=" * 89
    assert lines[1:8] == ["tbox_group/test/testcase:", "  2s-128/numa02/autonuma-benchmark", "",
                          "commit: ", "  6.1.0-vanilla", "  6.1.0-numab-v1r1", ""]
    assert lines[8] == "   6.1.0-vanilla            6.1.0-numab-v1r1 "


def test_read_lkp_from_a_quoted_wrapped_email():
    text = _file("lkp_email_icl.txt").read_text()
    wrapped = text.replace("  autonuma-benchmark.numa01_THREAD_ALLOC.seconds",
                           "\nautonuma-benchmark.numa01_THREAD_ALLOC.seconds")
    wrapped = wrapped.replace("  2.204e+10", "\n  2.204e+10")
    email = "Hi,\n\nkernel test robot noticed:\n\n" + "\n".join(f"> {x}" if x else ">" for x in wrapped.split("\n"))
    ds = report.read_lkp(email + "\n\nDisclaimer: results may vary.\n")
    assert report.lkp(ds) == text


def test_lkp_rebaselined_summary_recomputes_change():
    ds = report.read_lkp(_file("lkp_calibration_patch5.txt").read_text())
    text = report.lkp(ds, baseline="af46f3c9ca2d16485912f8b9c89")
    assert "    327.42 ±  2%      +4.3%     341.49        autonuma-benchmark.numa01.seconds" in text


# ---------------------------------------------------------------------------------------------
# malformed input: ValueError naming the line, never a partial Dataset


def lines_of(name):
    return _file(name).read_text().split("\n")


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda L: L[:-2] + [L[-2].rsplit("  ", 1)[0]], r"line 8: truncated stat line: expected the stat name"),
        (lambda L: L[:5] + [L[5].replace("-27.1%", "27.1%")] + L[6:], r"line 6: expected the %change of commit 2"),
        (lambda L: L[:2] + L[3:], r"line 3: expected the legend '%stddev"),
        (lambda L: L[:4], r"line 5: expected at least one stat line"),
        (lambda L: L[:1] + L[2:], r"line 1: no LKP comparison block"),
        (lambda L: L[1:], r"line 1: expected the column-id line with 2 commit ids"),
        (lambda L: L[:5] + [L[5].replace("186.67", "x186")] + L[6:], r"line 6: expected the base commit's value"),
        (lambda L: L[:-1] + [L[4], ""], r"line 9: stat 'autonuma-benchmark.numa01.seconds' appears twice"),
        (lambda L: L[:2] + [L[2] + "     %change         %stddev"] + L[3:], r"line 3: legend has 3 columns"),
    ],
)
def test_read_lkp_errors_name_the_line(mutate, match):
    text = "\n".join(mutate(lines_of("lkp_calibration_patch5.txt")))
    with pytest.raises(ValueError, match=match):
        report.read_lkp(text)


def test_read_mmtests_errors_name_the_line():
    # the spec's excerpt elides rows with '...': not a table we can read
    excerpt = "\n".join([
        "                                                   6.1.0                  6.1.0",
        "                                                 vanilla             numab-v1r1",
        "Min       syst-NUMA01                   28.72 (   0.00%)       28.56 (   0.56%)",
        "Min       syst-NUMA01_THREADLOCAL      439.14 (   0.00%)      429.11 (   2.28%)",
        "...",
    ])
    with pytest.raises(ValueError, match=r"line 5: expected a table row"):
        report.read_mmtests(excerpt)
    full = report.mmtests(runs(workloads=["numa01"]), monitors=False).splitlines()
    with pytest.raises(ValueError, match=r"line 19: truncated table: expected a row 'BAmean-99 elsp-NUMA01'"):
        report.read_mmtests("\n".join(full[:-1]))
    bad = full[:5] + [full[5].replace("(   0.00%)", "(   0.00%") ] + full[6:]
    with pytest.raises(ValueError, match=r"line 6: expected a table row|line 6: expected '%12.2f"):
        report.read_mmtests("\n".join(bad))
    with pytest.raises(ValueError, match=r"line 1: no mmtests table"):
        report.read_mmtests("hello\nworld\n")
    monitor = report.mmtests(runs(workloads=["numa01"])).splitlines()
    cut = monitor[: monitor.index("") + 3]  # a Duration header with no rows
    with pytest.raises(ValueError, match=r"line 23: truncated monitor table: expected rows"):
        report.read_mmtests("\n".join(cut))


# ---------------------------------------------------------------------------------------------
# one sample, NaN, wrong shapes


def test_one_sample_prints_without_stddev_and_never_crashes():
    ds = runs(workloads=["numa02"], nseed=1)
    text = report.mmtests(ds, era="2023")
    assert row(text, "Stddev    syst-NUMA02") == "Stddev    syst-NUMA02" + "        0.00 (   0.00%)" * 2
    assert "±" not in report.lkp(ds)
    assert report.read_mmtests(text).syst.sel(stat="Amean").values.tolist() == [[100.0], [100.0]]


def test_nan_samples_are_missing_runs():
    ds = runs(elsp={(1, "numa01"): [np.nan, 200.0, 210.0]}, workloads=["numa01"], nseed=3)
    text = report.mmtests(ds, era="2024-09", monitors=False)
    assert row(text, "Amean     elsp-NUMA01").endswith("205.00 (-105.00%)")
    # the usable count is shown (issue 17: a NaN seed was dropped silently)
    assert row(text, "Samples   elsp-NUMA01").endswith("3.00 (   0.00%)        2.00 ( -33.33%)")
    # NaN stays NaN (issue 17: an all-NaN policy printed as 0.00 (0.00%))
    all_nan = runs(elsp={(1, "numa01"): [np.nan] * 3}, workloads=["numa01"], nseed=3)
    assert row(report.mmtests(all_nan, monitors=False), "Amean     elsp-NUMA01").endswith("nan (    nan%)")


def test_single_workload_attr_as_simulate_writes_it():
    ds = runs(workloads=["numa01_THREAD_ALLOC"]).isel(workload=0, drop=True).assign_attrs(workload="numa01_THREAD_ALLOC")
    assert "elsp-NUMA01_THREADLOCAL" in report.mmtests(ds)
    assert "autonuma-benchmark.numa01_THREAD_ALLOC.seconds" in report.lkp(ds)


def test_shape_errors_are_explained():
    ds = runs(workloads=["numa01"]).expand_dims(windows=[2, 4])
    with pytest.raises(ValueError, match=r"dims \['windows'\].*ds.sel\(windows="):
        report.mmtests(ds)
    with pytest.raises(ValueError, match="no 'workload' dim or attr"):
        report.mmtests(runs(workloads=["numa01"]).isel(workload=0, drop=True))
    with pytest.raises(ValueError, match="baseline='nope'"):
        report.lkp(runs(workloads=["numa01"]), baseline="nope")
    with pytest.raises(ValueError, match="ingested lkp summary; it holds no runs"):
        report.mmtests(report.read_lkp(_file("lkp_calibration_patch5.txt").read_text()))
    with pytest.raises(ValueError, match="ingested mmtests summary"):
        report.lkp(report.read_mmtests(report.mmtests(runs(workloads=["numa01"]))))
    with pytest.raises(ValueError, match="metric='user'"):
        report.mmtests(runs(workloads=["numa01"]).assign(user=lambda d: d.elsp), metric="user")


# ---------------------------------------------------------------------------------------------
# /proc/vmstat snapshots


def test_read_vmstat_deltas():
    before = "nr_free_pages 100\nnuma_hint_faults 10\nnuma_pages_migrated 5\n"
    after = "nr_free_pages 90\nnuma_hint_faults 25\nnuma_pages_migrated 5\n"
    ds = report.read_vmstat(before, after, kernel="6.8")
    assert ds.numa_hint_faults.values.tolist() == [15]
    assert ds.nr_free_pages.values.tolist() == [-10]
    assert ds.numa_hint_faults.attrs["kernel_name"] == "numa_hint_faults"
    assert report.read_vmstat(before, after).numa_pages_migrated.item() == 0
    with pytest.raises(ValueError, match=r"after line 2: expected '<counter> <integer>'"):
        report.read_vmstat(before, "nr_free_pages 1\nnuma_hint_faults\n")
    with pytest.raises(ValueError, match="'numa_pages_migrated' is in only one snapshot"):
        report.read_vmstat(before, "nr_free_pages 90\nnuma_hint_faults 25\n")
    with pytest.raises(ValueError, match="went backwards"):
        report.read_vmstat(after, before)


def test_name_mapping():
    assert report.mmtests_test_name("numa01_THREAD_ALLOC") == "NUMA01_THREADLOCAL"
    assert report.lkp_test_name("NUMA01_THREADLOCAL") == "numa01_THREAD_ALLOC"
    assert report.lkp_test_name("NUMA02_SMT") == "numa02_SMT"
    assert report.mmtests_test_name("my-matrix") == "my-matrix"


# ---------------------------------------------------------------------------------------------
# numalab report FILE.nc


def test_cli_report_prints_both_layouts(tmp_path, capsys):
    ds = runs(workloads=["numa01"]).isel(workload=0, drop=True)
    ds = ds.assign_attrs(workload="numa01", topology=json.dumps({"name": "2s-128"}))
    path = tmp_path / "sim.nc"
    ds.to_netcdf(path, engine="h5netcdf")
    assert main(["report", str(path), "--format", "mmtests", "--era", "2026"]) == 0
    assert capsys.readouterr().out == report.mmtests(ds, era="2026")
    assert main(["report", str(path), "--format", "lkp", "--metric", "elsp,syst", "--baseline", KERNELS[1]]) == 0
    assert capsys.readouterr().out == report.lkp(ds, metric=["elsp", "syst"], baseline=KERNELS[1])
    assert main(["report", str(tmp_path / "missing.nc")]) == 2
    assert "numalab report: error: FILE=" in capsys.readouterr().err
    assert main(["report", str(path), "--baseline", "nope"]) == 2
    assert "baseline='nope'" in capsys.readouterr().err


def test_cli_eras_match_the_library():
    from numalab.commands import report as cmd

    assert cmd.ERAS == stats.ERAS


# ---------------------------------------------------------------------------------------------
# LKP round trip from runs: format -> read -> the same statistics to printed precision


def printed(v):
    """What an LKP value cell keeps of v."""
    if abs(v) < 1000:
        return round(v, 2)
    if abs(v) > 1e8:
        return float(f"{v:.4g}")
    return float(int(v))


@settings(max_examples=300)
@given(st.lists(st.floats(0.001, 5e9), min_size=6, max_size=6), kernel_names)
def test_lkp_round_trip_from_runs(values, kernels):
    ds = runs(workloads=["numa02"], nseed=3, kernels=kernels)
    ds["elsp"][:] = np.reshape(values, (2, 1, 3))
    text = report.lkp(ds, metric="elsp")
    back = report.read_lkp(text)
    lk = stats.lkp_stats(ds.elsp.isel(workload=0))
    ids = [kernels[0][:16], kernels[1][:27]]
    assert list(back.kernel.values) == ids
    got = back.sel(workload="numa02")
    for k in range(2):
        mean, r = float(lk["mean"][k]), float(lk["stddev_pct"][k])
        assert got.elsp.values[k] == pytest.approx(printed(mean), rel=1e-12)
        assert (got.elsp_stddev_pct.values[k] == int(r)) if r > 2 else np.isnan(got.elsp_stddev_pct.values[k])
    change = float(stats.lkp_change(lk["mean"][1], lk["mean"][0]))
    expect = float(f"{change:+.2g}") if abs(change) >= 1e5 else round(change, 1)
    assert got.elsp_change.values[1] == pytest.approx(expect, abs=1e-9)
    assert report.lkp(back) == text


def test_mmtests_higher_is_better_rows():
    ds = runs(elsp={(0, "numa01"): [100.0, 200.0], (1, "numa01"): [110.0, 240.0]}, workloads=["numa01"], nseed=2)
    text = report.mmtests(ds, metric="elsp", direction="higher", era="2024-09", monitors=False)
    labels = [line.split()[0] for line in text.splitlines()[3:]]
    assert labels == ["Min", "Hmean", "Stddev", "CoeffVar", "Max", "BHmean-50", "BHmean-95", "BHmean-99"]
    h0, h1 = 2 / (1 / 100 + 1 / 200), 2 / (1 / 110 + 1 / 240)
    assert row(text, "Hmean").endswith(f"{h1:12.2f} ({100 * h1 / h0 - 100:7.2f}%)")  # pdiff
    s0, s1 = np.std([100, 200], ddof=1), np.std([110, 240], ddof=1)
    assert row(text, "Stddev").endswith(f"{s1:12.2f} ({100 - 100 * s1 / s0:7.2f}%)")  # always pndiff
    assert row(text, "BHmean-50").endswith(f"{240.0:12.2f} ({20.0:7.2f}%)")  # the highest sample is best


def test_ingested_summaries_survive_h5netcdf(tmp_path):
    lkp_text = _file("lkp_email_icl.txt").read_text()
    mm_text = report.mmtests(significant_smt())
    for name, ds, fmt, text in (("l.nc", report.read_lkp(lkp_text), report.lkp, lkp_text),
                                ("m.nc", report.read_mmtests(mm_text), report.mmtests, mm_text)):
        ds.to_netcdf(tmp_path / name, engine="h5netcdf")
        with xr.open_dataset(tmp_path / name, engine="h5netcdf") as back:
            assert fmt(back.load()) == text

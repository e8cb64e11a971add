"""The published measurements load as labelled Datasets that agree with their own CSV."""

import csv

import numpy as np
import pytest

import numalab as nl
from numalab.errors import NumalabValueError


def test_names_list_every_csv():
    names = nl.data.names()
    assert names == sorted(p.stem for p in nl.data.data_dir().glob("*.csv"))
    assert {"lkp-rfc2023-p5-vs-p4", "lkp-rfc2023-p6-vs-p5"} <= set(names)


@pytest.mark.parametrize("name", ["lkp-rfc2023-p5-vs-p4", "lkp-rfc2023-p6-vs-p5"])
def test_published_change_matches_the_printed_means(name):
    ds = nl.data.load(name)
    assert ds.elsp.dims == ("workload", "policy")
    assert list(ds.workload.values) == ["numa01", "numa01_THREAD_ALLOC", "numa02"]
    base, new = ds.policy.values
    recomputed = 100 * (ds.elsp.sel(policy=new) - ds.elsp.sel(policy=base)) / ds.elsp.sel(policy=base)
    # the robot prints %change from unrounded means: agree to the printed 0.1 % (+ rounding of the means)
    np.testing.assert_allclose(recomputed, ds.change_pct, atol=0.15)
    assert ds.elsp.attrs["units"] == "s" and ds.attrs["machine"] == "lkp-icl-2sp6"


def test_series_chain_p4_p5_p6():
    p5 = nl.data.load("lkp-rfc2023-p5-vs-p4")
    p6 = nl.data.load("lkp-rfc2023-p6-vs-p5")
    # the new column of one table is the base column of the next
    np.testing.assert_array_equal(p5.elsp.sel(policy="rfc2023-p5"), p6.elsp.sel(policy="rfc2023-p5"))
    assert p5.commit.sel(policy="rfc2023-p5").item().startswith(p6.commit.sel(policy="rfc2023-p5").item()[:16])


def test_hidden_stddev_is_nan_not_zero():
    ds = nl.data.load("lkp-rfc2023-p5-vs-p4")
    with open(nl.data.data_dir() / "lkp-rfc2023-p5-vs-p4.csv", newline="") as fh:
        rows = {r["metric"]: r for r in csv.DictReader(fh)}
    assert rows["autonuma-benchmark.numa01.seconds"]["base_stddev_pct"] == ""
    assert np.isnan(ds.elsp_stddev_pct.sel(workload="numa01", policy="rfc2023-p4"))
    assert ds.elsp_stddev_pct.sel(workload="numa01_THREAD_ALLOC", policy="rfc2023-p4") == 6


def test_unknown_table_lists_known_ones():
    with pytest.raises(NumalabValueError, match="lkp-rfc2023-p5-vs-p4"):
        nl.data.load("lkp-rfc2023-p7")


@pytest.mark.parametrize("name", ["lkp-rfc2023-p5-vs-p4", "lkp-rfc2023-p6-vs-p5"])
def test_csv_agrees_with_the_published_text_block(name):
    """data/<name>.lkp.txt is the robot's block as printed; the CSV must say the same."""
    ds = nl.data.load(name)
    text = (nl.data.data_dir() / f"{name}.lkp.txt").read_text()
    ingested = nl.report.read_lkp(text)
    assert list(ingested.kernel.values) == list(ds.commit.values)
    np.testing.assert_array_equal(ingested.elsp.sel(workload=ds.workload).values.T, ds.elsp.values)
    np.testing.assert_array_equal(np.nan_to_num(ingested.elsp_stddev_pct.sel(workload=ds.workload).values.T, nan=-1),
                                  np.nan_to_num(ds.elsp_stddev_pct.values, nan=-1))


# ------------------------------------------------------------------ every table of both calibration files

PROVENANCE = ("base_commit", "new_commit", "base_profile", "new_profile", "machine", "job", "source")
MESSAGE_IDS = {
    "lkp-csl-6.4-vs-scan-delay": "202305101547.20f4c32a-oliver.sang@intel.com",
    "lkp-spr-6.4-vs-scan-delay": "202305101547.20f4c32a-oliver.sang@intel.com",
    "lkp-csl-6.4-vs-scan-delay-monitors-off": "202305101547.20f4c32a-oliver.sang@intel.com",
    "lkp-spr-6.8-vs-6.7": "202311231611.59bca875-oliver.sang@intel.com",
    "lkp-spr-rfc2023-p1-vs-base": "202309121417.53f44ad6-oliver.sang@intel.com",
    "lkp-spr-rfc2023-p2-vs-base": "202309121417.53f44ad6-oliver.sang@intel.com",
    "lkp-spr-rfc2023-p6-vs-base": "202309121417.53f44ad6-oliver.sang@intel.com",
}


LKP_TABLES = [n for n in nl.data.names() if n.startswith("lkp-")]


@pytest.mark.parametrize("name", LKP_TABLES)
def test_every_csv_loads_with_its_provenance(name):
    with open(nl.data.data_dir() / f"{name}.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows
    for r in rows:
        assert all(r[k].strip() for k in PROVENANCE), (name, r["metric"])
        assert r["machine"] in r["job"] and r["job"].endswith("/autonuma-benchmark")
    ds = nl.data.load(name)
    from numalab.topology import PRESET_ALIASES

    assert ds.attrs["machine"] in PRESET_ALIASES
    assert set(map(str, ds.policy.values)) <= set(nl.Policy.profiles())
    assert MESSAGE_IDS.get(name, "") in ds.attrs["source"]
    for w in ds.workload.values:  # the printed %change agrees with the printed means
        b, n = (float(ds.elsp.sel(workload=w, policy=p)) for p in ds.policy.values)
        assert 100 * (n - b) / b == pytest.approx(float(ds.change_pct.sel(workload=w)), abs=0.16)


def test_the_calibration_set_is_every_row_of_both_files():
    tables = {n: nl.data.load(n) for n in LKP_TABLES}
    assert set(MESSAGE_IDS) | {"lkp-rfc2023-p5-vs-p4", "lkp-rfc2023-p6-vs-p5"} == set(tables)
    a = [t for n, t in tables.items() if "6.4-vs-scan-delay" in n]
    assert sum(t.sizes["workload"] for t in a) == 9                      # section A
    b = tables["lkp-spr-6.8-vs-6.7"]
    assert b.sizes["workload"] + sum(v.endswith("change_pct") for v in b.data_vars if v.startswith("job_")) == 8
    c = [t for n, t in tables.items() if n.startswith("lkp-spr-rfc2023-")]
    assert len(c) == 3 and all(t.sizes["workload"] == 3 and "job_time_elapsed_time" in t for t in c)  # section C


@pytest.mark.parametrize("name, workload, base, change, new", [
    # transcribed from shared/reference/calibration-intel.md
    ("lkp-csl-6.4-vs-scan-delay", "numa01", 198.95, 118.9, 435.43),
    ("lkp-spr-6.4-vs-scan-delay", "numa02_SMT", 6.41, 8.1, 6.93),
    ("lkp-csl-6.4-vs-scan-delay-monitors-off", "numa01", 203.37, 48.9, 302.87),
    ("lkp-spr-6.8-vs-6.7", "numa01_THREAD_ALLOC", 78.26, -46.2, 42.10),
    ("lkp-spr-rfc2023-p2-vs-base", "numa01_THREAD_ALLOC", 76.28, -11.7, 67.36),
    ("lkp-spr-rfc2023-p6-vs-base", "numa01", 271.01, -26.4, 199.49),
])
def test_rows_match_calibration_intel_md(name, workload, base, change, new):
    ds = nl.data.load(name)
    assert float(ds.elsp.isel(policy=0).sel(workload=workload)) == base
    assert float(ds.change_pct.sel(workload=workload)) == change
    assert float(ds.elsp.isel(policy=1).sel(workload=workload)) == new


def test_whole_job_vmstat_rows_and_stddevs():
    ds = nl.data.load("lkp-spr-6.8-vs-6.7")
    assert list(ds.policy.values) == ["6.7", "6.8"] and list(ds.commit.values) == ["d6111cf45c", "84db47ca7146"]
    assert ds.job_vmstat_numa_pages_migrated.values.tolist() == [4649420, 10511526]
    assert float(ds.job_vmstat_numa_pages_migrated_change_pct) == 126.1
    assert ds.job_vmstat_numa_pte_updates.values.tolist() == [17706681, 43778740]
    assert ds.job_vmstat_numa_hint_faults_stddev_pct.values.tolist() == [14, 6]
    assert np.isnan(ds.job_time_elapsed_time_stddev_pct.sel(policy="6.7"))   # hidden: at most 2 %
    assert ds.job_time_elapsed_time.values.tolist() == [1381, 1069]
    assert ds.attrs["job_test"] == "numa01_THREAD_ALLOC"
    # THP: every PTE update of the job is a huge PMD (512 pages each), on both kernels
    np.testing.assert_allclose(ds.job_vmstat_numa_pte_updates / ds.job_vmstat_numa_huge_pte_updates, 512, rtol=0.03)
    spr = nl.data.load("lkp-spr-6.4-vs-scan-delay")
    assert np.isnan(spr.elsp_stddev_pct.sel(workload="numa02", policy="6.4"))
    assert spr.elsp_stddev_pct.sel(workload="numa02_SMT", policy="6.4-rc-scan-delay") == 12


def test_tables_without_a_mail_block_are_typeset_from_their_csv():
    from numalab.outputs import published_block

    text = published_block("lkp-spr-rfc2023-p2-vs-base")
    ingested = nl.report.read_lkp(text)
    assert list(ingested.kernel.values) == ["2f88c8e802", "1ef5cbb92bdb3"]
    assert "-11.7%" in text and "67.36 ±  6%" in text and "autonuma-benchmark.time.elapsed_time" in text

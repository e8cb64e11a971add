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

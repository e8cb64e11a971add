"""numalab compare / nl.compare: anyone's mmtests or LKP table judged as numalab reproduce judges
the calibration set."""

import csv

import numpy as np
import pytest
import xarray as xr

import numalab as nl
from numalab import comparison, fidelity
from numalab.cli import main
from numalab.outputs import FIDELITY_COLUMNS, published_block


def _ones_sim(pub, scale_new=1.0):
    """Per-run Dataset for one table: every job test, both policies, 3 seeds; new = base x scale."""
    wls = sorted({*map(str, pub.workload.values), *fidelity.job_tests(pub)})
    rng = np.random.default_rng(0)
    base = 100.0 + rng.random((len(wls), 3))
    data = {v: (("workload", "policy", "seed"), np.stack([base, base * scale_new], axis=1))
            for v in ("elsp", *fidelity.VMSTAT_COUNTERS)}
    return xr.Dataset(data, coords={"workload": wls, "policy": [str(p) for p in pub.policy.values],
                                    "seed": [0, 1, 2]})


@pytest.mark.parametrize("name", fidelity.calibration_tables())
def test_a_published_block_reads_back_as_the_table_it_came_from(name):
    """Every calibration table, as the robot's block numalab reproduce prints: the same numbers,
    the same profiles (from the commit ids), the same rows and verdicts as reproduce's."""
    pub = nl.data.load(name)
    tables, kernels = comparison.published_tables(published_block(name), preset=fidelity.table_preset(pub))
    (got,) = tables.values()
    assert list(kernels.values()) == [str(p) for p in pub.policy.values]
    assert list(got.workload.values) == list(pub.workload.values)
    assert np.allclose(got.elsp, pub.elsp) and np.allclose(got.change_pct, pub.change_pct)
    jobs = sorted(v for v in pub.data_vars if v.startswith("job_"))
    assert sorted(v for v in got.data_vars if v.startswith("job_")) == jobs
    for v in jobs:
        assert np.allclose(got[v], pub[v], equal_nan=True), v   # a hidden ± (NaN) reads back as hidden
    sim = _ones_sim(pub, 0.8)
    want = fidelity.compare(pub, sim)
    have = fidelity.compare(got.assign_attrs(table=name, job_test=pub.attrs["job_test"]), sim)
    keys = ("metric", "quantity", "published", "simulated_mean", "verdict", "strict_verdict", "fitted")
    assert [{k: r[k] for k in keys} for r in have] == [{k: r[k] for k in keys} for r in want]


def test_kernels_map_to_profiles():
    assert comparison.profile_of("v6.9.1") == "6.8"
    assert comparison.profile_of("6.4.0-rc1-vanilla") == "6.4"
    assert comparison.profile_of("6.3.0") == "pre-6.4"
    assert comparison.profile_of("linux-6.14") == "6.12"
    assert comparison.profile_of("167773d1ddb5ffdd") == "rfc2023-p4"      # a commit id of data/
    assert comparison.profile_of("84db47ca71") == "6.8"                    # a shorter prefix
    assert comparison.profile_of("6.12+N=4") == "6.12+N=4"                 # a policy text
    mine = {"mypatch": "6.4+N=8+rules=own_pid,hot>=1", "deadbeef00": "6.7"}
    assert comparison.profile_of("mypatch", mine) == "6.4+N=8+rules=own_pid,hot>=1"
    assert comparison.profile_of("deadbeef0012", mine) == "6.7"           # the user's commit prefix
    assert comparison.profile_of("v6.8", {"v6.8": "6.12"}) == "6.12"       # the user's mapping first
    with pytest.raises(ValueError, match=r"kernel 'mykernel' maps to no profile.*--kernel mykernel="):
        comparison.profile_of("mykernel")
    with pytest.raises(ValueError, match="maps to no profile"):
        comparison.profile_of("0123456789abcdef")                          # a commit nobody knows


def _mmtests_text(kernels, profiles, seeds=3):
    ds = nl.simulate("numa02", profiles, seeds=seeds, topology="2s-128")
    return str(nl.report.mmtests(ds.assign_coords(policy=kernels), along="policy"))


@pytest.fixture(scope="module")
def posted():
    """An mmtests table of numa02 under v6.4 and a 'patched' kernel, as someone would post it."""
    return _mmtests_text(["v6.4", "rfc-p5"], ["6.4", "rfc2023-p5"])


def test_an_mmtests_table_is_simulated_and_judged(posted):
    c = nl.compare(posted, topology="2s-128", kernels={"rfc-p5": "rfc2023-p5"}, seeds=2, workers=1)
    assert c.kernels == {"v6.4": "6.4", "rfc-p5": "rfc2023-p5"} and c.topology == "2s-128"
    by = {(r["metric"], r["quantity"].split()[0]): r for r in c.rows}
    base = by[("autonuma-benchmark.numa02.seconds", "6.4")]
    # the table was made by the model itself (3 seeds): the model reproduces it (2 seeds)
    assert base["verdict"] == "reproduced" and base["strict_verdict"] == "reproduced"
    assert base["published"] == pytest.approx(float(c.sims["2s-128"].elsp.sel(workload="numa02", policy="6.4")
                                                     .mean()), rel=0.02)
    assert ("proc-vmstat.numa_pages_migrated", "%change") in by                # the Ops rows, whole run
    assert not any(r["metric"].endswith("elapsed_time") for r in c.rows)      # mmtests has no LKP job
    text = str(c)
    assert "v6.4 -> 6.4" in text and "published rule:" in text and "strict rule:" in text
    html = c._repr_html_()
    assert html.count("<tr>") == len(c.rows) + 1 and 'class="numalab-compare"' in html
    fig = c.plot()
    assert len(fig.axes) == 1                                                  # the scatter (no bands)


def test_bands_and_a_given_dataset(posted):
    sim = nl.simulate("numa02", ["6.4", "rfc2023-p5"], seeds=2, topology="2s-128")
    c = nl.compare(posted, sim, topology="2s-128", kernels={"rfc-p5": "rfc2023-p5"})
    assert c.sims["2s-128"].sizes["seed"] == 2 and {r["robust"] for r in c.rows} <= {"not computed", "not judged"}
    b = nl.compare(posted, topology="lkp-icl-2sp6", kernels={"rfc-p5": "rfc2023-p5"}, seeds=2, band_points=2,
                   band_seeds=2, workers=1)
    assert b.topology == "2s-128"
    judged = [r for r in b.rows if r["verdict"] != "not judged"]
    assert all(r["band_points"] == 2 and r["band_lo"] <= r["simulated_mean"] <= r["band_hi"] for r in judged)
    assert {r["robust"] for r in judged} <= {"robust", "not robust"}
    assert len(b.plot().axes) == 2                                             # the bands figure


def test_kernels_with_one_profile_are_named_and_compared_as_equal():
    text = _mmtests_text(["v6.8-a", "v6.9-b"], ["6.8", "6.12"], seeds=2)   # both map to 6.8 by version
    sim = nl.simulate("numa02", ["6.8"], seeds=2, topology="2s-128")
    c = nl.compare(text, sim, topology="2s-128")
    assert set(c.kernels.values()) == {"6.8"} and "cannot tell them apart" in str(c)
    change = [r for r in c.rows if r["metric"] == "autonuma-benchmark.numa02.seconds" and r["quantity"][0] == "%"]
    assert change[0]["simulated_mean"] == 0.0


def test_the_machine_can_come_from_the_table():
    text = "Report on lkp-icl-2sp6\n" + published_block("lkp-rfc2023-p6-vs-p5")
    pub = nl.data.load("lkp-rfc2023-p6-vs-p5")
    c = nl.compare(text, _ones_sim(pub, 0.99))
    assert c.topology == "2s-128" and c.published["posted"].attrs["machine"] == "lkp-icl-2sp6"
    with pytest.raises(ValueError, match="topology is not given"):
        nl.compare(published_block("lkp-rfc2023-p6-vs-p5"), _ones_sim(pub))
    with pytest.raises(ValueError, match="no per-workload elapsed-time rows"):
        nl.compare("x y\n---------------- ---------------------------\n         %stddev     %change         "
                   "%stddev\n             \\          |                \\  \n      2200 ±  2%     -13.0%       1913 "
                   "±  3%  autonuma-benchmark.time.elapsed_time\n", topology="2s-128")


def test_numalab_compare_command(tmp_path, posted, capsys):
    table = tmp_path / "my-mmtests.txt"
    table.write_text(posted)
    args = ["compare", str(table), "--topology", "2s-128", "--kernel", "rfc-p5=rfc2023-p5", "--seeds", "2",
            "--workers", "1", "--no-progress", "--plot", str(tmp_path / "c.png"), "--csv", str(tmp_path / "c.csv")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "rfc-p5 -> rfc2023-p5" in out and "my-mmtests" in out and "published rule:" in out
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(tmp_path / "c.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == FIDELITY_COLUMNS and {r["table"] for r in rows} == {"my-mmtests"}
    # user errors: one line, status 2, before any simulation
    assert main(["compare", str(tmp_path / "missing.txt"), "--topology", "2s-128"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["compare", str(table)]) == 2                                   # no machine anywhere
    assert "topology is not given" in capsys.readouterr().err
    assert main(["compare", str(table), "--topology", "2s-128", "--kernel", "oops"]) == 2
    assert "NAME=PROFILE" in capsys.readouterr().err
    assert main(["compare", str(table), "--topology", "2s-128"]) == 2         # rfc-p5 maps to nothing
    assert "--kernel rfc-p5=" in capsys.readouterr().err


def test_a_given_dataset_that_lacks_a_kernel_is_refused_by_name(posted):
    sim = nl.simulate("numa02", ["6.4"], seeds=2, topology="2s-128")
    with pytest.raises(ValueError, match=r"lacks policy rfc2023-p5"):
        nl.compare(posted, sim, topology="2s-128", kernels={"rfc-p5": "rfc2023-p5"})
    with pytest.raises(ValueError, match=r"allowed: an xarray Dataset"):
        nl.compare(posted, {"elsp": 1}, topology="2s-128", kernels={"rfc-p5": "rfc2023-p5"})


def test_band_seeds_default_is_one_number_for_reproduce_compare_and_the_api(posted, monkeypatch):
    """numalab reproduce, numalab compare and nl.compare run a band point with
    bands.DEFAULT_SEEDS seeds (compare had its own 2 while reproduce's default moved to 8)."""
    from numalab.cli import build_parser
    from numalab.fidelity import bands

    parser = build_parser()
    for command in (["reproduce"], ["compare", "x.txt"]):
        assert parser.parse_args(command).band_seeds == bands.DEFAULT_SEEDS
    asked = []

    def band_calls(runs, points, seeds, seed, topology=None):
        asked.append(seeds)
        raise RuntimeError("stop before the engine")

    monkeypatch.setattr(bands, "band_calls", band_calls)
    with pytest.raises(RuntimeError, match="stop before the engine"):
        nl.compare(posted, topology="lkp-icl-2sp6", kernels={"rfc-p5": "rfc2023-p5"}, band_points=2, workers=1)
    assert asked == [bands.DEFAULT_SEEDS]


@pytest.mark.parametrize("kw, name", [(dict(band_seeds=0), "band_seeds"), (dict(band_seeds=2.5), "band_seeds"),
                                      (dict(band_seed=-1), "band_seed")])
def test_band_arguments_are_checked_before_any_run(posted, kw, name):
    """nl.compare refuses a bad band_seeds / band_seed at the boundary, naming it, as the CLI
    does (band_seeds=0 used to reach the band runner)."""
    with pytest.raises(ValueError, match=rf"^{name}="):
        nl.compare(posted, topology="lkp-icl-2sp6", kernels={"rfc-p5": "rfc2023-p5"}, band_points=2, workers=1, **kw)

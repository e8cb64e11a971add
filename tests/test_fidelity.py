"""Verdict rules of the calibration check and the published-vs-simulated comparison."""

import numpy as np
import pytest
import xarray as xr

import numalab as nl
from numalab.fidelity import REPRODUCED, compare, verdict_base, verdict_change


@pytest.mark.parametrize(
    "pub, sim, expected",
    [
        (-27.1, -13.55, REPRODUCED), (-27.1, -54.2, REPRODUCED), (-27.1, -13.5, "too small"),
        (-27.1, -54.3, "too large"), (-27.1, 3.0, "wrong sign"), (-4.1, 6.9, REPRODUCED),
        (-4.1, -7.0, REPRODUCED), (1.5, -7.01, "too large"), (-33.6, float("nan"), "not simulated"),
    ],
)
def test_change_verdicts_follow_calibration_md(pub, sim, expected):
    assert verdict_change(pub, sim) == expected


@pytest.mark.parametrize("pub, sim, expected", [(21.17, 10.6, REPRODUCED), (21.17, 10.5, "too fast"),
                                                 (341.49, 682.9, REPRODUCED), (341.49, 683.1, "too slow")])
def test_base_verdicts_are_a_factor_of_two(pub, sim, expected):
    assert verdict_base(pub, sim) == expected


def _sim_like(published, scale_new, seeds=8, noise=0.01, seed=0):
    """A fake simulation whose new/base ratio per workload is `scale_new` (with small noise)."""
    rng = np.random.default_rng(seed)
    base = published.elsp.isel(policy=0).values[:, None] * (1 + noise * rng.standard_normal((3, seeds)))
    new = base * np.asarray(scale_new)[:, None]
    return xr.Dataset(
        {"elsp": (("workload", "policy", "seed"), np.stack([base, new], axis=1))},
        coords={"workload": published.workload.values, "policy": published.policy.values, "seed": np.arange(seeds)},
    )


def test_a_simulation_equal_to_the_published_table_is_reproduced_everywhere():
    pub = nl.data.load("lkp-rfc2023-p5-vs-p4")
    ratio = pub.elsp.isel(policy=1).values / pub.elsp.isel(policy=0).values
    rows = compare(pub, _sim_like(pub, ratio))
    assert len(rows) == 7  # 3 base times + 3 changes + the job's elapsed time
    assert {r["verdict"] for r in rows} == {REPRODUCED}
    job = rows[-1]
    assert job["metric"] == "autonuma-benchmark.time.elapsed_time"
    assert job["simulated_mean"] == pytest.approx(-13.0, abs=0.5)


def test_a_wrong_direction_is_caught():
    pub = nl.data.load("lkp-rfc2023-p6-vs-p5")
    rows = compare(pub, _sim_like(pub, [0.99, 1.10, 1.0]))
    by = {(r["metric"], r["quantity"].split()[0]): r["verdict"] for r in rows}
    assert by[("autonuma-benchmark.numa01_THREAD_ALLOC.seconds", "%change")] == "wrong sign"
    assert by[("autonuma-benchmark.numa02.seconds", "%change")] == REPRODUCED


# ------------------------------------------------------------------ whole-job rows and machines


def test_job_tests_are_what_start_bench_runs():
    from numalab.fidelity import job_tests

    # numa01 and numa02 always run; the job's own test is added (-t, -s)
    assert job_tests(nl.data.load("lkp-spr-6.8-vs-6.7")) == ["numa01", "numa01_THREAD_ALLOC", "numa02"]
    assert job_tests(nl.data.load("lkp-csl-6.4-vs-scan-delay")) == ["numa01", "numa02", "numa02_SMT"]
    assert job_tests(nl.data.load("lkp-rfc2023-p5-vs-p4")) == ["numa01", "numa01_THREAD_ALLOC", "numa02"]
    # the published 6.7 job: 4 x (258.20 + 78.26 + numa02's 8.06 of the same machine) + overhead = 1381
    assert 4 * (258.20 + 78.26 + 8.06) == pytest.approx(1381, abs=4)


def _job_sim(pub, tests, scale_new, counters):
    seeds = 4
    base = np.array([[100.0 + i for i in range(seeds)]] * len(tests))
    data = {"elsp": (("workload", "policy", "seed"), np.stack([base, base * scale_new], axis=1))}
    for c, (b, n) in counters.items():
        data[c] = (("workload", "policy", "seed"), np.stack([np.full_like(base, b), np.full_like(base, n)], axis=1))
    return xr.Dataset(data, coords={"workload": tests, "policy": pub.policy.values, "seed": np.arange(seeds)})


def test_vmstat_rows_are_four_iterations_of_every_job_test():
    from numalab.fidelity import NOT_JUDGED, VMSTAT_COUNTERS

    pub = nl.data.load("lkp-spr-6.8-vs-6.7")
    tests = ["numa01", "numa01_THREAD_ALLOC", "numa02"]
    counters = {c: (1000.0, 2260.0) for c in VMSTAT_COUNTERS}  # +126 % in every test
    rows = compare(pub, _job_sim(pub, tests, 0.8, counters))
    vm = {(r["metric"], r["quantity"].split()[0]): r for r in rows if r["metric"].startswith("proc-vmstat.")}
    assert len(vm) == 10
    base = vm[("proc-vmstat.numa_pages_migrated", "6.7")]
    assert base["verdict"] == NOT_JUDGED and base["simulated_mean"] == 4 * 3 * 1000.0  # 4 iterations x 3 tests
    change = vm[("proc-vmstat.numa_pages_migrated", "%change")]
    assert change["simulated_mean"] == pytest.approx(126.0) and change["verdict"] == REPRODUCED
    assert vm[("proc-vmstat.numa_pte_updates", "%change")]["published"] == 147.2
    job = [r for r in rows if r["metric"] == "autonuma-benchmark.time.elapsed_time"][0]
    assert job["simulated_mean"] == pytest.approx(-20.0, abs=0.1)  # numa02 is in the job, not in the table


def test_every_table_names_its_machine_preset():
    from numalab.fidelity import calibration_tables, table_preset

    presets = {n: table_preset(nl.data.load(n)) for n in calibration_tables()}
    assert presets["lkp-rfc2023-p5-vs-p4"] == "2s-128"
    assert presets["lkp-csl-6.4-vs-scan-delay-monitors-off"] == "2s-88-csl"
    assert presets["lkp-spr-rfc2023-p6-vs-base"] == "2s-224-spr"
    assert calibration_tables("lkp-icl-2sp6") == ["lkp-rfc2023-p5-vs-p4", "lkp-rfc2023-p6-vs-p5"]
    assert len(calibration_tables()) == 9

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

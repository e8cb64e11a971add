"""Bit-identity: what numalab computes today equals the fingerprint stored before the
restructure of issue 10 (see ``tests/golden.py``): nl.simulate on 3 workloads x 8 policies x 3
seeds, nl.futex.sweep by MVA and by simulation, and nl.sweep."""

import json

import pytest

from golden import GOLDEN, OLDER, fingerprints

from numalab.counters import HISTORY_VARIABLES

#: the access-PID history's counters and ratios (numalab.engine.history_stats), added in 0.4.0
HISTORY_VARS = {"pid_windows", "pid_window_bits", "pid_tests", "pid_test_passes", "buffer_protections",
                *(c.name for c in HISTORY_VARIABLES)}


@pytest.fixture(scope="module")
def now():
    return fingerprints()


@pytest.fixture(scope="module")
def stored():
    return json.loads(GOLDEN.read_text())


def test_same_cases(now, stored):
    assert sorted(now) == sorted(stored)


@pytest.mark.parametrize("case", sorted(json.loads(GOLDEN.read_text())))
def test_bit_identical(case, now, stored):
    changed = {k for k in stored[case] if now[case].get(k) != stored[case][k]}
    if case.endswith(OLDER):
        # stored before the history-length counters existed: every stored variable must be
        # there and unchanged; the counters added since are the only new variables
        added = set(now[case]) - set(stored[case])
        assert set(stored[case]) <= set(now[case]), "variables removed"
        assert added <= HISTORY_VARS, f"variables added: {sorted(added - HISTORY_VARS)}"
    else:
        assert set(now[case]) == set(stored[case]), "variables added or removed"
    assert not changed, f"{case}: changed variables {sorted(changed)}"


def test_fingerprint_sees_one_ulp():
    # the digest is sensitive to the smallest change of one number (guards against a digest
    # that hashes, say, only shapes)
    import numpy as np
    import xarray as xr
    from golden import digest
    a = xr.Dataset({"elsp": ("seed", np.array([1.0, 2.0]))})
    b = a.copy(deep=True)
    b["elsp"].values[1] = np.nextafter(2.0, 3.0)
    assert digest(a)["elsp"] != digest(b)["elsp"]

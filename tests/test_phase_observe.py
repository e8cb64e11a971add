"""numalab.engine.observe alone: one sample per call, and the invariants."""

import numpy as np
import pytest

from _phase_helpers import tiny_batch
from numalab.engine import observe
from numalab.errors import EngineInvariantError


def test_sample_appends_one_of_each_series():
    b, wl = tiny_batch()
    observe.sample(b)
    observe.sample(b)
    assert b.obs.series_t == [0.0, 0.0]
    pn = b.obs.series["pages_node"][0]
    assert pn.shape == (1, b.lay.M, b.lay.N) and pn.sum() == b.regions.total_pages[0]
    assert set(b.obs.series) == {"pages_node", "local_fraction", "scan_period", "faults", "converged_fraction"}
    np.testing.assert_array_equal(observe.pages_by_node(b), b.regions.node_pages)


def test_invariants_catch_an_overloaded_node_and_a_lost_page():
    b, wl = tiny_batch(rates=((1.0,), (1.0,), (1.0,)), cpus_per_node=2)
    observe.check_invariants(b)
    b.tasks.node[0, 1:] = 0                           # three running threads on a 2-CPU node
    with pytest.raises(EngineInvariantError, match="more threads"):
        observe.check_invariants(b)
    b2, _ = tiny_batch()
    b2.regions.node_pages[0, 0] -= 1
    with pytest.raises(EngineInvariantError, match="out of sync"):
        observe.check_invariants(b2)

"""numalab.engine.compiled.numsum adds floats in numpy's order: psum is np.sum over a last axis,
seqsum a sum over another axis, for every length and stride (random magnitudes make any other
order round differently)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numalab.engine.compiled import available

pytestmark = pytest.mark.skipif(not available(), reason="numba is not installed")


def _values(rng, shape):
    return rng.random(shape) * 10.0 ** rng.integers(-6, 6, shape)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 3000), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_psum_and_seqsum_add_in_numpy_order(n, stride, seed):
    from numalab.engine.compiled.numsum import psum, seqsum

    rng = np.random.default_rng(seed)
    a = _values(rng, n * stride)[::stride]
    assert psum(a) == np.sum(a)
    rows = _values(rng, (3, n))
    assert [psum(rows[i]) for i in range(3)] == rows.sum(axis=1).tolist()
    if n:
        cols = _values(rng, (n, 3))
        assert [seqsum(cols[:, j]) for j in range(3)] == cols.sum(axis=0).tolist()


def test_a_mutated_order_is_caught():
    """The sums differ from plain sequential ones for these inputs (so the test above can fail)."""
    from numalab.engine.compiled.numsum import psum

    rng = np.random.default_rng(3)
    a = _values(rng, 1000)
    seq = 0.0
    for x in a:
        seq += x
    assert psum(a) == np.sum(a) and seq != np.sum(a)

"""numalab.history: uint64 PID windows, checked against the scalar reference."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numalab import history as H
from numalab.errors import NumalabValueError
from numalab.reference import hashing as RH
from numalab.reference import history as RH_hist

# tids that share pid_bit(1) in a 64-bit map, and tids congruent mod 256 (same last_cpupid pid)
COLLIDING_64 = [t for t in range(2000) if RH.pid_bit(t, 64) == RH.pid_bit(1, 64)][:8]
TIDS = st.one_of(
    st.integers(0, 300),  # 300 tids into 64 bits: plenty of collisions
    st.sampled_from(COLLIDING_64),
    st.builds(lambda a, k: (a + 256 * k) % 2**32, st.integers(0, 255), st.integers(0, 2**24)),
    st.integers(0, 2**32 - 1),
)


def test_colliding_pool_really_collides():
    assert len(COLLIDING_64) >= 4
    assert len(set(H.pid_bit(COLLIDING_64, 64).tolist())) == 1


def _to_ref(pids_active, idx, b):
    hist = [[int(w) for w in win] for win in pids_active[b]]
    return hist, int(idx[b])


@st.composite
def scenarios(draw):
    windows = draw(st.integers(1, 8))
    width = draw(st.sampled_from([64, 128]))
    rotation = draw(st.sampled_from(["shift", "ring"]))
    batch = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    ops = []
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            n = draw(st.integers(0, 12))
            where = [tuple(draw(st.integers(0, s - 1)) for s in batch) for _ in range(n)]
            tids = [draw(TIDS) for _ in range(n)]
            ops.append(("set", where, tids))
        else:
            mask = np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(batch)),
                                          max_size=int(np.prod(batch))))).reshape(batch)
            ops.append(("rotate", mask))
    return windows, width, rotation, batch, ops


@settings(max_examples=300)
@given(scenarios())
def test_history_matches_reference(scenario):
    windows, width, rotation, batch, ops = scenario
    pa, idx = H.empty(batch, windows, width)
    refs = {b: RH_hist.empty(windows, width) for b in np.ndindex(*batch)}
    for op in ops:
        if op[0] == "set":
            _, where, tids = op
            index = tuple(np.array([w[a] for w in where], dtype=np.int64) for a in range(len(batch)))
            H.set_pid_bits(pa, idx, index, tids, width=width, rotation=rotation)
            for w, t in zip(where, tids):
                hist, i = refs[w]
                RH_hist.set_pid_bit(hist, i, t, width, rotation)
        else:
            mask = op[1]
            H.rotate(pa, idx, mask, rotation=rotation)
            for b in np.ndindex(*batch):
                if mask[b]:
                    hist, i = refs[b]
                    refs[b] = (hist, RH_hist.rotate(hist, i, rotation))
    for b, (hist, i) in refs.items():
        got_hist, got_idx = _to_ref(pa, idx, b)
        assert got_hist == hist
        if rotation == "ring":
            assert got_idx == i
    probe = [1, 2, 3, *COLLIDING_64[:2], 2**32 - 1]
    for n in range(1, windows + 1):
        u = H.union(pa, idx, n, rotation=rotation)
        assert u.shape == (*batch, width // 64)
        counts = H.popcount(u)
        assert counts.dtype == np.int64
        for b, (hist, i) in refs.items():
            ref_u = RH_hist.union(hist, i, n, rotation)
            assert [int(w) for w in u[b]] == ref_u
            assert int(counts[b]) == RH_hist.popcount(ref_u)
            bits = H.pid_bit(probe, width)
            got = H.test_bit(u[b], bits)
            assert got.tolist() == [RH_hist.test_bit(ref_u, RH.pid_bit(t, width)) for t in probe]


@settings(max_examples=300)
@given(st.integers(1, 8), st.lists(st.lists(TIDS, max_size=5), min_size=1, max_size=12))
def test_ring_and_shift_keep_the_same_union(windows, steps):
    """Both rotations drop the oldest of W windows: the union of the newest n windows agrees."""
    shift, sidx = H.empty((1,), windows)
    ring, ridx = H.empty((1,), windows)
    for tids in steps:
        where = (np.zeros(len(tids), dtype=np.int64),)
        H.set_pid_bits(shift, sidx, where, tids, rotation="shift")
        H.set_pid_bits(ring, ridx, where, tids, rotation="ring")
        for n in range(1, windows + 1):
            assert np.array_equal(H.union(shift, sidx, n, rotation="shift"), H.union(ring, ridx, n, rotation="ring"))
        H.rotate(shift, sidx, rotation="shift")
        H.rotate(ring, ridx, rotation="ring")


def test_shift_rotation_is_the_mainline_two_window_reset():
    pa, idx = H.empty((), 2)
    H.set_pid_bits(pa, idx, (), [1], rotation="shift")  # a 0-d batch: where is the empty tuple
    assert int(pa[1, 0]) == 1 << 24 and int(pa[0, 0]) == 0  # faults go to pids_active[1]
    H.rotate(pa, idx, rotation="shift")  # [0] = [1]; [1] = 0
    assert int(pa[0, 0]) == 1 << 24 and int(pa[1, 0]) == 0
    H.rotate(pa, idx, rotation="shift")
    assert not pa.any()


def test_ring_rotation_moves_the_index_and_clears_the_new_slot():
    pa, idx = H.empty((2,), 4)
    H.set_pid_bits(pa, idx, (np.array([0, 1]),), [1, 2], rotation="ring")
    assert int(pa[0, 0, 0]) == 1 << 24 and int(pa[1, 0, 0]) == 1 << 48
    H.rotate(pa, idx, np.array([True, False]), rotation="ring")
    assert idx.tolist() == [1, 0]
    H.set_pid_bits(pa, idx, (np.array([0]),), [3], rotation="ring")
    assert int(pa[0, 1, 0]) == 1 << 9
    for _ in range(3):
        H.rotate(pa, idx, np.array([True, False]), rotation="ring")
    assert idx.tolist() == [0, 0] and int(pa[0, 0, 0]) == 0  # slot 0 reused and cleared


def test_duplicate_faults_accumulate():
    pa, idx = H.empty((2,), 2)
    tids = np.random.default_rng(0).permutation(np.repeat(np.arange(100, 132), 3))  # 32 tids x 3 faults
    where = (np.zeros(tids.size, dtype=np.int64),)
    H.set_pid_bits(pa, idx, where, tids)
    assert int(H.popcount(pa[0, 1])) == 32  # 32 consecutive tids: 32 distinct bits (spec §2.1)
    assert not pa[1].any() and not pa[0, 0].any()


def test_128_bit_map_uses_two_words():
    pa, idx = H.empty((1,), 2, width=128)
    H.set_pid_bits(pa, idx, (np.array([0, 0]),), [1, 2], width=128)
    # pid_bit(1, 128) = 48 -> word 0 bit 48; pid_bit(2, 128) = 97 -> word 1 bit 33
    assert int(pa[0, 1, 0]) == 1 << 48 and int(pa[0, 1, 1]) == 1 << 33
    assert H.test_bit(pa[0, 1], np.array([48, 97, 33])).tolist() == [True, True, False]
    assert int(H.popcount(pa[0, 1])) == 2


def test_popcount_sums_in_a_wide_dtype():
    full = np.full((5, 2), np.uint64(2**64 - 1))
    assert H.popcount(full).tolist() == [128] * 5
    assert int(H.popcount(full.reshape(1, 10))[0]) == 640  # would wrap to 128 in uint8


def test_current_window_index():
    assert H.current_window_index(np.array([0, 5]), 4, "shift").tolist() == [3, 3]
    assert H.current_window_index(np.array([0, 5]), 4, "ring").tolist() == [0, 1]


@pytest.mark.parametrize("windows", [0, 65, -1, 2.5])
def test_bad_window_count(windows):
    with pytest.raises(NumalabValueError, match="windows"):
        H.empty((3,), windows)


def test_bad_inputs():
    pa, idx = H.empty((2, 3), 2)
    with pytest.raises(NumalabValueError, match="width"):
        H.empty((2,), 2, width=96)
    with pytest.raises(NumalabValueError, match="width=128"):
        H.set_pid_bits(pa, idx, (np.array([0]), np.array([0])), [1], width=128)
    with pytest.raises(NumalabValueError, match="where"):
        H.set_pid_bits(pa, idx, (np.array([0]),), [1])
    with pytest.raises(NumalabValueError, match="where"):
        H.set_pid_bits(pa, idx, (np.array([0]), np.array([3])), [1])
    with pytest.raises(NumalabValueError, match="tids has 2"):
        H.set_pid_bits(pa, idx, (np.array([0]), np.array([0])), [1, 2])
    with pytest.raises(NumalabValueError, match="uint32"):
        H.set_pid_bits(pa, idx, (np.array([0]), np.array([0])), [-5])
    with pytest.raises(NumalabValueError, match="mask"):
        H.rotate(pa, idx, np.ones(3, dtype=bool))
    with pytest.raises(NumalabValueError, match="rotation"):
        H.rotate(pa, idx, rotation="fifo")
    with pytest.raises(NumalabValueError, match="idx"):
        H.rotate(pa, np.zeros(4, np.int64))
    with pytest.raises(NumalabValueError, match="pids_active"):
        H.union(pa.astype(np.int64))
    with pytest.raises(NumalabValueError, match="n=3"):
        H.union(pa, idx, 3)
    with pytest.raises(NumalabValueError, match="bits"):
        H.test_bit(pa[..., 0, :], 64)

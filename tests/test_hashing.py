"""numalab.hashing: kernel hash_32 / pid_bit and lookup3 jhash2."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from numalab import hashing as H
from numalab.errors import NumalabValueError
from numalab.reference import hashing as R

U32 = st.integers(0, 2**32 - 1)
FOUR_SCORE = b"Four score and seven years ago"  # lookup3.c driver5()'s key, 30 bytes


# ---------------------------------------------------------------- hash_32 / pid_bit


def test_hash_32_hand_computed():
    # 1 * 0x61C88647 = 0x61C88647; top 6 bits of 0x61.. (0110 0001) = 0b011000 = 24
    # 2 * 0x61C88647 = 0xC3910C8E; top 6 bits of 0xC3 (1100 0011) = 0b110000 = 48
    # 3 * 0x61C88647 = 0x1_2559_92D5 -> 0x255992D5; top 6 bits of 0x25 (0010 0101) = 9
    assert H.hash_32([0, 1, 2, 3], 6).tolist() == [0, 24, 48, 9]
    # bits=32 keeps the whole product: -GOLDEN_RATIO_32 mod 2**32 is the classic 0x9E3779B9
    assert int(H.hash_32(0xFFFFFFFF, 32)) == 0x9E3779B9
    # bits=1 is the top bit of the product: 0x61.. -> 0, 0xC3.. -> 1
    assert H.hash_32([1, 2], 1).tolist() == [0, 1]
    # 128-bit map (RFC 2024): 7 bits, 0x61.. -> 0b0110000 = 48, 0xC3.. -> 0b1100001 = 97
    assert H.pid_bit([1, 2], width=128).tolist() == [48, 97]


def test_hash_32_dtype_and_shape():
    out = H.hash_32(np.arange(12, dtype=np.int64).reshape(3, 4), 6)
    assert out.dtype == np.uint32 and out.shape == (3, 4)
    bits = H.pid_bit(np.arange(6).reshape(2, 3))
    assert bits.dtype == np.int64 and bits.shape == (2, 3)
    assert H.pid_bit(7).shape == ()


@pytest.mark.parametrize("n, distinct", [(8, 8), (16, 16), (32, 32), (128, 64)])
@pytest.mark.parametrize("first_tid", [1, 1000, 4242, 123457, 4_000_000_000])
def test_consecutive_tids_collision_table(n, distinct, first_tid):
    """spec §2.1: consecutive TIDs 8/16/32 never collide in 64 bits; 128 saturate the map."""
    tids = np.arange(first_tid, first_tid + n) % 2**32
    assert len(np.unique(H.pid_bit(tids))) == distinct


def test_tids_congruent_mod_64_do_not_share_a_bit_by_construction():
    # the v6.4 first draft used tid % 64; hash_32 spreads tids that agree mod 64
    tids = 5 + 64 * np.arange(16)
    assert len(np.unique(tids % 64)) == 1
    assert len(np.unique(H.pid_bit(tids))) > 8


@settings(max_examples=300)
@given(hnp.arrays(np.uint32, hnp.array_shapes(min_dims=0, max_dims=3, max_side=5)), st.integers(1, 32))
def test_hash_32_matches_reference(values, bits):
    out = H.hash_32(values, bits)
    assert out.shape == values.shape
    assert [int(x) for x in out.ravel()] == [R.hash_32(int(v), bits) for v in values.ravel()]


@settings(max_examples=300)
@given(st.lists(U32, min_size=1, max_size=20), st.sampled_from([64, 128]))
def test_pid_bit_matches_reference(tids, width):
    out = H.pid_bit(tids, width=width)
    assert out.tolist() == [R.pid_bit(t, width) for t in tids]
    assert out.min() >= 0 and out.max() < width


# ---------------------------------------------------------------- lookup3 / jhash2


@pytest.mark.parametrize(
    "key, pc, pb, want_c, want_b",
    [  # lookup3.c driver5(): hashlittle2(key, length, &c, &b) with c, b as given
        (b"", 0, 0, 0xDEADBEEF, 0xDEADBEEF),
        (b"", 0, 0xDEADBEEF, 0xBD5B7DDE, 0xDEADBEEF),
        (b"", 0xDEADBEEF, 0xDEADBEEF, 0x9C093CCD, 0xBD5B7DDE),
        (FOUR_SCORE, 0, 0, 0x17770551, 0xCE7226E6),
        (FOUR_SCORE, 0, 1, 0xE3607CAE, 0xBD371DE4),
        (FOUR_SCORE, 1, 0, 0xCD628161, 0x6CBEA4B3),
    ],
)
def test_reference_hashlittle2_published_vectors(key, pc, pb, want_c, want_b):
    assert R.hashlittle2(key, pc, pb) == (want_c, want_b)


def test_reference_hashlittle_published_vectors():
    assert R.hashlittle(FOUR_SCORE, 0) == 0x17770551
    assert R.hashlittle(FOUR_SCORE, 1) == 0xCD628161


def _words(data: bytes) -> list[int]:
    return [int.from_bytes(data[i : i + 4], "little") for i in range(0, len(data), 4)]


@settings(max_examples=300)
@given(st.binary(min_size=0, max_size=64).map(lambda b: b[: len(b) // 4 * 4]), U32)
def test_hashword_equals_hashlittle_on_word_aligned_little_endian(data, initval):
    """lookup3: hashword() is hashlittle() on little-endian machines, length in words."""
    assert R.hashword(_words(data), initval) == R.hashlittle(data, initval)
    keys = np.frombuffer(data, dtype="<u4").astype(np.uint32)
    assert int(H.jhash2(keys, initval)) == R.hashlittle(data, initval)


def test_jhash2_on_published_key_prefixes():
    # 28 of the 30 bytes of "Four score..." are whole words; hashlittle is the published function
    for nbytes in (0, 4, 8, 12, 16, 24, 28):
        data = FOUR_SCORE[:nbytes]
        keys = np.frombuffer(data, dtype="<u4").astype(np.uint32)
        for iv in (0, 1, 0xDEADBEEF):
            assert int(H.jhash2(keys, iv)) == R.hashlittle(data, iv)
    # empty key: a = b = c = 0xdeadbeef + 0 + initval, returned unmixed
    assert int(H.jhash2(np.zeros(0, np.uint32), 5)) == 0xDEADBEEF + 5


@settings(max_examples=300)
@given(
    hnp.arrays(np.uint32, st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 9))),
    st.one_of(U32, st.just(None)),
)
def test_jhash2_vectorised_matches_reference(keys, initval):
    lead = keys.shape[:-1]
    if initval is None:  # per-row seeds
        iv = (np.arange(int(np.prod(lead)), dtype=np.uint64) * 0x9E3779B1 % 2**32).reshape(lead)
    else:
        iv = initval
    out = H.jhash2(keys, iv)
    assert out.shape == lead and out.dtype == np.uint32
    ivs = np.broadcast_to(np.asarray(iv), lead)
    for idx in np.ndindex(*lead):
        assert int(out[idx]) == R.hashword([int(w) for w in keys[idx]], int(ivs[idx]))


def test_jhash2_initval_broadcasts_over_leading_axes():
    keys = np.arange(2 * 3 * 4, dtype=np.uint32).reshape(2, 3, 4)
    out = H.jhash2(keys, np.array([[7], [9]], dtype=np.uint32))
    assert int(out[1, 2]) == R.hashword(keys[1, 2].tolist(), 9)
    assert int(out[0, 1]) == R.hashword(keys[0, 1].tolist(), 7)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("bits", [0, 33, -1, 6.0, True])
def test_hash_32_bad_bits(bits):
    with pytest.raises(NumalabValueError, match="bits"):
        H.hash_32([1], bits)


@pytest.mark.parametrize("tid", [-1, 2**32, [1, 2**40]])
def test_tid_outside_uint32(tid):
    with pytest.raises(NumalabValueError, match=r"tid.*uint32|outside uint32"):
        H.pid_bit(tid)


def test_float_tids_refused():
    with pytest.raises(NumalabValueError, match="integers"):
        H.pid_bit([1.5])


@pytest.mark.parametrize("width", [32, 256, "64", 0])
def test_pid_bit_bad_width(width):
    with pytest.raises(NumalabValueError, match=r"width=.*allowed: 64"):
        H.pid_bit([1], width=width)


def test_jhash2_bad_inputs():
    with pytest.raises(NumalabValueError, match="keys"):
        H.jhash2(3)
    with pytest.raises(NumalabValueError, match="keys"):
        H.jhash2([[-1, 2]])
    with pytest.raises(NumalabValueError, match="initval"):
        H.jhash2(np.zeros((2, 3), np.uint32), np.zeros(3, np.uint32))

"""numalab.libm: the C library's bits for every element, whatever loop numpy would pick."""

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numalab import libm

EDGES = [0.0, -0.0, 5e-324, 1e-300, 1e-17, 2.0 ** -53, 0.25, 0.5, 1.0 - 2.0 ** -53]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0, exclude_max=True), min_size=0, max_size=40))
def test_exp1_is_math_log1p_for_each_uniform(us):
    u = np.array(us + EDGES)
    got = libm.exp1(u)
    want = [-math.log1p(-x) for x in u]
    assert got.dtype == np.float64 and got.shape == u.shape
    assert [float(g).hex() for g in got] == [float(w).hex() for w in want]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=-700.0, max_value=700.0), min_size=1, max_size=40))
def test_log1p_and_expm1_are_the_c_librarys(xs):
    x = np.array(xs).reshape(-1, 1)               # any shape comes back as it went in
    assert [v.hex() for v in libm.expm1(x).ravel()] == [math.expm1(v).hex() for v in xs]
    y = np.abs(x)
    assert [v.hex() for v in libm.log1p(y).ravel()] == [math.log1p(v).hex() for v in np.abs(xs)]
    assert libm.expm1(x).shape == x.shape


def test_an_empty_array_stays_empty():
    assert libm.exp1(np.zeros((0, 3))).shape == (0, 3)


@pytest.mark.parametrize("shape", [(7,), (3, 5, 4), (0, 2)])
def test_uniforms_and_exp1_draw_one_random_call_and_its_exp1(shape):
    g, ref = np.random.default_rng((12, 0xF07E)), np.random.default_rng((12, 0xF07E))
    u, e = libm.uniforms_and_exp1(g, shape)
    assert np.array_equal(u, ref.random(shape))           # the uniforms random() would give
    assert [v.hex() for v in e.ravel()] == [(-math.log1p(-x)).hex() for x in u.ravel()]
    assert g.random() == ref.random()                       # and the generator moved as random() moves it


def test_the_futex_and_engine_clocks_go_through_it():
    """The model's Exp(1) clocks are the reference's bits: a thread's think-time factors from
    the futex event streams equal -math.log1p(-u) of the same stream's uniforms."""
    from numalab.futex import events

    class Net:
        n_points = 1
        thr_nf = np.array([4, 4])

    Et, Es, start = events._thread_streams(Net(), np.array([3]), np.array([0, 0]), 50, "exponential")
    u = np.random.default_rng((3, 0xF07E)).random((2, 51, 4))
    assert [v.hex() for v in Et.ravel()] == [(-math.log1p(-x)).hex() for x in u[..., 1].ravel()]
    assert [v.hex() for v in Es.ravel()] == [(-math.log1p(-x)).hex() for x in u[..., 2:4].ravel()]
    assert np.array_equal(start, (u[:, 0, 0] * 4).astype(np.int64))


#: modules whose numpy transcendental calls never feed a run (statistics of finished results,
#: fits, a grid rounded to 4 significant digits, axes and labels): numalab/libm.py says why
NOT_THE_MODEL = {"libm.py", "stats.py", "plots.py", "futex/calibration.py", "fidelity/crossval.py"}
CPU_DEPENDENT = re.compile(r"\bnp\.(exp|exp2|expm1|log|log1p|log2|log10|power|float_power|sin|cos|tan|"
                           r"arcsin|arccos|arctan|arctan2|sinh|cosh|tanh|cbrt|hypot)\(")


def test_the_model_calls_no_numpy_loop_whose_last_bit_depends_on_the_cpu():
    root = Path(libm.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in NOT_THE_MODEL or rel.startswith("widgets/"):
            continue
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if CPU_DEPENDENT.search(line.split("#")[0]):
                found.append(f"{rel}:{no}: {line.strip()}")
    assert not found, "use numalab.libm (the C library's bits) instead:\n" + "\n".join(found)


def test_roundup_pow_of_two_without_log2():
    from numalab.futex.hash import roundup_pow_of_two

    xs = list(range(1, 3000)) + [2 ** k + d for k in range(1, 53) for d in (-1, 0, 1)]
    assert roundup_pow_of_two(np.array(xs)).tolist() == [1 << (x - 1).bit_length() for x in xs]
    assert roundup_pow_of_two(0) == 1 and roundup_pow_of_two(5) == 8


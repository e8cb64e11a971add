"""The compiled futex event loop (numalab/futex/events_compiled.py) against the numpy loop it
replaces (numalab/futex/events.py): bit-identical results on random networks, every station
kind (hb locks, refcount lines with node batching and SMT riders, persistent locks with sorted
rounds, forwarded atomics), both service distributions and mixed batches of points."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numalab.errors import NumalabValueError
from numalab.futex import events_compiled
from numalab.futex.solver import FutexCosts, network, simulate
from numalab.futex.workloads import futex_numa, perf_bench_hash, route, together

pytestmark = pytest.mark.skipif(not events_compiled.available(), reason="numba is not installed")


@st.composite
def workloads(draw):
    kind = draw(st.sampled_from(["private", "classic", "shared", "futex_numa"]))
    topo = draw(st.sampled_from(["2s-ivb-40", "2s-128", "4s-144"]))
    if kind == "futex_numa":
        one = dict(contenders=draw(st.integers(1, 6)), threads=draw(st.integers(1, 3)), nanos=draw(st.sampled_from([0, 500])),
                   numa=draw(st.booleans()), squash=draw(st.booleans()))
        a = futex_numa(topo, node=draw(st.integers(-1, 1)), cpu_node=0, **one)
        b = futex_numa(topo, node=draw(st.integers(-1, 1)), cpu_node=1, **one)
        return together(a, b) if draw(st.booleans()) else a
    kw = dict(threads=draw(st.integers(1, 24)), futexes=draw(st.sampled_from([1, 4, 16, 256])))
    if kind == "private":
        kw.update(buckets=draw(st.sampled_from([-1, 2, 16, 1024])), refcount=draw(st.sampled_from([None, "percpu", "rcuref"])))
    elif kind == "classic":
        kw.update(mode="classic", hashsize=draw(st.sampled_from([None, 16, 256])))
    else:
        kw.update(shared=True, immutable=draw(st.booleans()))
    return perf_bench_hash(topo, **kw)


@settings(max_examples=60)
@given(w=workloads(), seeds=st.lists(st.integers(0, 2**31), min_size=1, max_size=3, unique=True),
       ops=st.integers(6, 120), dist=st.sampled_from(["exponential", "deterministic"]),
       costs=st.sampled_from([None, dict(critical_section_ns=40.0), dict(atomic_forward=0.6),
                              dict(atomic_node_batching=0.8, atomic_forward=0.5), dict(smt_shared_l1=0.0)]))
def test_compiled_loop_is_bit_identical_to_the_numpy_loop(w, seeds, ops, dist, costs):
    costs = None if costs is None else FutexCosts(**costs)
    net = network([route(w, s) for s in seeds], costs)
    warmup = ops // 3
    kw = dict(ops=ops, warmup=warmup, dist=dist)
    try:
        want = simulate(net, seeds, kernel="numpy", **kw)
    except NumalabValueError as e:  # too few ops for some thread: the compiled loop says the same
        with pytest.raises(NumalabValueError, match=str(e)[:30]):
            simulate(net, seeds, kernel="numba", **kw)
        return
    got = simulate(net, seeds, kernel="numba", **kw)
    assert set(got) == set(want)
    for k in want:
        assert got[k].dtype == want[k].dtype, k
        assert np.array_equal(got[k], want[k], equal_nan=True), k


def test_riders_on_the_refcount_line_are_bit_identical():
    # 26 threads on 2s-ivb-40's 20 cores: six pairs of SMT siblings share a core
    w = perf_bench_hash("2s-ivb-40", threads=26, futexes=16, buckets=16, refcount="rcuref")
    net = network([route(w, s) for s in (1, 2)])
    want = simulate(net, [1, 2], ops=200, warmup=50, kernel="numpy")
    got = simulate(net, [1, 2], ops=200, warmup=50, kernel="numba")
    assert all(np.array_equal(got[k], want[k]) for k in want)
    off = simulate(network([route(w, s) for s in (1, 2)], FutexCosts(smt_shared_l1=0.0)), [1, 2], ops=200,
                   warmup=50, kernel="numba")
    assert got["rate"].sum() > 1.2 * off["rate"].sum()        # the riders were taken


def test_auto_is_the_compiled_loop_and_jit_off_is_the_numpy_loop(monkeypatch):
    w = perf_bench_hash("2s-ivb-40", threads=8, futexes=16, buckets=16, refcount="rcuref")
    net = network([route(w, s) for s in (3, 4)])
    auto = simulate(net, [3, 4], ops=300, warmup=50)
    monkeypatch.setenv("NUMALAB_JIT", "0")
    assert not events_compiled.available()
    off = simulate(net, [3, 4], ops=300, warmup=50)
    assert all(np.array_equal(auto[k], off[k]) for k in auto)
    with pytest.raises(NumalabValueError, match="kernel='numba' needs numba"):
        simulate(net, [3, 4], ops=300, warmup=50, kernel="numba")
    with pytest.raises(NumalabValueError, match="kernel"):
        simulate(net, [3, 4], kernel="c")

"""The compiled engine (numalab.engine.compiled) gives the numpy engine's results bit for bit: on
random small workloads (every profile, history lengths, the switches, every adaptive history
rule), on the built-in workloads at full size on every preset, in any batch, and it leaves to
numpy the batches it cannot run (a tracer, a user rule)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numalab as nl
from numalab.engine import make_batch
from numalab.engine.compiled import available, unsupported
from numalab.engine.compiled.state import ST_SOURCES, _get
from numalab.errors import NumalabValueError

from golden import digest
from test_engine_reference import cases

pytestmark = pytest.mark.skipif(not available(), reason="numba is not installed (pip install 'numalab[fast]')")


def _run(wl, policy, seeds, kernel, **opts):
    return make_batch(wl, policy, seeds, kernel=kernel, **opts).run()


def assert_same_run(a, b):
    """Every state array, the clock, the outcome and every time series sample equal."""
    assert a.now == b.now and a.steps == b.steps
    for name, path in ST_SOURCES:
        x, y = np.asarray(_get(a, path)), np.asarray(_get(b, path))
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name
    # the adaptive history's state (numalab.adaptive, per VMA or mm)
    assert (a.vmas.adapt is None) == (b.vmas.adapt is None)
    if a.vmas.adapt is not None:
        assert a.vmas.adapt.keys() == b.vmas.adapt.keys()
        for key, x in a.vmas.adapt.items():
            assert x.dtype == b.vmas.adapt[key].dtype and np.array_equal(x, b.vmas.adapt[key]), key
    assert np.array_equal(a.outcome.elsp, b.outcome.elsp, equal_nan=True)
    assert np.array_equal(a.outcome.finished, b.outcome.finished)
    assert a.obs.series_t == b.obs.series_t
    for key, xs in a.obs.series.items():
        ys = b.obs.series[key]
        assert len(xs) == len(ys), key
        for x, y in zip(xs, ys):
            assert np.array_equal(x, y, equal_nan=True), key


@settings(max_examples=150, deadline=None)
@given(cases())
def test_compiled_matches_numpy_on_random_small_runs(case):
    wl, policy, seed, opts = case
    if unsupported(make_batch(wl, policy, [seed], **opts)) is not None:
        policy = nl.Policy.profile("6.12")          # a user rule: the numpy engine's own case
    a = _run(wl, policy, [seed], "numpy", **opts)
    b = _run(wl, policy, [seed], "numba", **opts)
    assert b.compiled() and not a.compiled()
    assert_same_run(a, b)


@st.composite
def adaptive_cases(draw):
    """A random small case (test_engine_reference.cases) under an adaptive history of its profile:
    any rule, bounds, parameters small enough to move within a short run, adaptation on or off."""
    wl, policy, seed, opts = draw(cases())
    profile = draw(st.sampled_from([p for p in nl.Policy.profiles() if nl.Policy.profile(p).numab_state]))
    rule = draw(st.sampled_from(["grow-shrink", "popcount", "span"]))
    n_min = draw(st.integers(1, 3))
    kw = dict(n_min=n_min, n_max=draw(st.integers(n_min, 8)), adapt_enabled=draw(st.integers(0, 3)) > 0)
    if rule == "grow-shrink":
        kw.update(shrink_after=draw(st.integers(1, 3)), grow_others=draw(st.integers(1, 3)))
    elif rule == "popcount":
        lo = draw(st.integers(0, 4))
        kw.update(bits_lo=lo, bits_hi=draw(st.integers(lo + 1, 8)), threads_max=draw(st.integers(1, 64)))
    else:
        kw.update(span_ms=draw(st.sampled_from([500, 4000, 16000])), ewma_shift=draw(st.integers(0, 3)))
    # long enough, and passes frequent enough, for the rules to act: passes end (popcount),
    # windows rotate (span), scans go unanswered and PID tests refuse (grow-shrink)
    opts.update(max_time=draw(st.sampled_from([8.0, 20.0])), scan_delay_ms=200)
    width = draw(st.sampled_from([64, 128]))
    return wl, nl.Policy.profile(profile, history="adaptive", adapt=rule, width=width, **kw), seed, opts


@settings(max_examples=200, deadline=None)
@given(adaptive_cases())
def test_compiled_adaptive_history_matches_numpy(case):
    """Every adaptive rule (numalab.adaptive) runs compiled (engine.compiled.adapt) with numpy's
    results and state, bit for bit."""
    wl, policy, seed, opts = case
    a = _run(wl, policy, [seed], "numpy", **opts)
    b = _run(wl, policy, [seed], "numba", **opts)
    assert b.compiled() and not a.compiled()
    assert_same_run(a, b)


@pytest.mark.parametrize("rule", ["grow-shrink", "popcount", "span"])
def test_adaptive_full_size_gives_the_same_dataset_and_adapts(rule):
    """numa01_THREAD_ALLOC on 2s-ivb-40, 2 seeds, 40 simulated seconds: the same Dataset from
    both engines, and the rule did change some window count (the test is not vacuous)."""
    wl = nl.workload("numa01_THREAD_ALLOC", nl.Topology.preset("2s-ivb-40"))
    policy = nl.Policy.profile("6.12", history="adaptive", adapt=rule)
    a = nl.simulate(wl, policy, seeds=[0, 1], max_time=40.0, kernel="numpy")
    b = nl.simulate(wl, policy, seeds=[0, 1], max_time=40.0, kernel="numba")
    assert digest(a) == digest(b)
    run = _run(wl, policy, [0], "numba", max_time=40.0)
    assert (run.vmas.adapt["nr_hist"] != policy.adapt.n_init).any()


def test_a_seed_is_the_same_in_any_batch():
    wl = nl.workload("numa01_THREAD_ALLOC", nl.Topology.preset("2s-128"), threads=16, size_bytes=256 << 20, loops=30)
    alone = _run(wl, "6.12", [5], "numba", max_time=40.0)
    batch = _run(wl, "6.12", [3, 5, 9], "numba", max_time=40.0)
    assert alone.elsp[0] == batch.elsp[1]
    assert np.array_equal(alone.counters.table[0], batch.counters.table[1])
    assert np.array_equal(alone.regions.node[0], batch.regions.node[1])


FULL = [("numa01", "2s-224-spr", "6.12"), ("numa01", "8n-genoa-nps4", "rfc2023-p4"),
        ("numa01_THREAD_ALLOC", "2s-128", "rfc2023-p5"), ("numa01_THREAD_ALLOC", "4s-144", "6.7"),
        ("numa02", "2s-240", "rfc2024-pid-bits"), ("numa02_SMT", "2s-ivb-40", "rfc2023-p2"),
        ("numa01", "2s-88-csl", "6.4"), ("numa02", "2s-128", "pre-6.4")]


@pytest.mark.parametrize("name,preset,policy", FULL)
def test_full_size_workloads_give_the_same_dataset(name, preset, policy):
    """The Dataset (every variable and coordinate, as the golden test fingerprints them) of the
    built-in workloads at full size, 2 seeds, the first 30 simulated seconds."""
    wl = nl.workload(name, nl.Topology.preset(preset))
    a = nl.simulate(wl, policy, seeds=[0, 1], max_time=30.0, kernel="numpy")
    b = nl.simulate(wl, policy, seeds=[0, 1], max_time=30.0, kernel="numba")
    assert digest(a) == digest(b)


def test_a_convoy_gives_the_same_dataset():
    """Option sweep_convoy (numa01's loops start together: ties of the first crossing), numa01
    at full size on 2s-128 under the PID filter of RFC 2023 patch 3, the first 30 s."""
    wl = nl.workload("numa01", nl.Topology.preset("2s-128"))
    a = nl.simulate(wl, "rfc2023-p3", seeds=[0, 1], max_time=30.0, kernel="numpy", sweep_convoy=True)
    b = nl.simulate(wl, "rfc2023-p3", seeds=[0, 1], max_time=30.0, kernel="numba", sweep_convoy=True)
    assert digest(a) == digest(b)
    assert float(a.numa_hint_faults.min()) > 0


def test_the_numpy_engine_runs_what_the_compiled_one_cannot():
    from _rule_helpers import user_rules

    wl = nl.workload("numa02", nl.Topology.preset("2s-128"), threads=8, size_bytes=64 << 20)
    own = nl.Policy.profile("6.12").replace(add_rules=[user_rules()[0]])
    b = make_batch(wl, own, [0], max_time=5.0)
    assert unsupported(b) == "the policy has a user rule"
    assert not b.compiled()
    with pytest.raises(NumalabValueError, match="kernel='numba' cannot run this batch"):
        make_batch(wl, own, [0], kernel="numba", max_time=5.0).run()
    assert make_batch(wl, nl.Policy.profile("6.12", history="adaptive", adapt="span"), [0]).compiled()
    with pytest.raises(NumalabValueError, match="kernel="):
        make_batch(wl, "6.12", [0], kernel="fortran")


def test_numalab_jit_0_turns_the_compiled_engine_off(monkeypatch):
    wl = nl.workload("numa02", nl.Topology.preset("2s-128"), threads=8, size_bytes=64 << 20)
    monkeypatch.setenv("NUMALAB_JIT", "0")
    assert not make_batch(wl, "6.12", [0], max_time=5.0).compiled()
    monkeypatch.delenv("NUMALAB_JIT")
    assert make_batch(wl, "6.12", [0], max_time=5.0).compiled()


def test_structs_module_is_generated_from_the_field_lists():
    """numalab/engine/compiled/structs.py is what state.structs_source gives for today's field
    lists and packed types (regenerate it with ``python -m numalab.engine.compiled``)."""
    from pathlib import Path

    import numalab.engine.compiled.structs as structs
    from numalab.engine.compiled.decide import pack_policy
    from numalab.engine.compiled.state import make_scratch, pack_layout, pack_state, structs_source

    b = make_batch(nl.workload("numa01", nl.Topology.preset("2s-128"), threads=4, size_bytes=16 << 20, loops=1),
                   "6.12", [0])
    text = structs_source(pack_layout(b), pack_policy(b), pack_state(b), make_scratch(b, [0.0, b.dt]))
    assert Path(structs.__file__).read_text() == text


def test_long_sample_intervals_are_taken_in_bounded_calls(monkeypatch):
    """A time-series interval of 10 s is 200 steps: the compiled run takes it in calls of at most
    loop.CALL_STEPS steps (the uniforms of a call are drawn ahead) with the same results."""
    from numalab.engine.compiled import loop

    wl = nl.workload("numa01", nl.Topology.preset("2s-128"), threads=8, size_bytes=128 << 20, loops=10)
    opts = dict(max_time=25.0, time_resolution=10.0)
    calls = []
    advance = loop.advance

    def counted(Lt, Qt, St, Xt):
        calls.append(Xt.times.size - 1)
        return advance(Lt, Qt, St, Xt)

    a = _run(wl, "6.12", [0, 2], "numpy", **opts)
    _run(wl, "6.12", [0], "numba", max_time=0.2)      # compiled or loaded under its lock, not in `counted`
    monkeypatch.setattr(loop, "advance", counted)
    b = _run(wl, "6.12", [0, 2], "numba", **opts)
    assert max(calls) == loop.CALL_STEPS and sum(calls) >= b.steps
    assert_same_run(a, b)

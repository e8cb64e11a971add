"""The shared init as coherence traffic (costs.progress_rates, ``shared_init``): numa01's workers
zero-write their process's whole buffer together, so a line reaches DRAM once per process and a
writer takes it from the previous writer's cache, across the link when that writer is on the other
node. Checked here: the fixed point loads no resource above its capacity and fills a saturated
one exactly; one init thread per process is the closed form; the init is link-bound, so its
length follows the link's bandwidth and not the controllers'; the engine agrees with the scalar
reference with the mechanism on and off; ``init_coherence=False`` is the earlier model (its
fingerprints in tests/test_golden.py)."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numalab.costs import Costs, progress_rates
from numalab.engine import EngineOptions, make_batch
from numalab.errors import NumalabValueError
from numalab.policy import Policy
from numalab.reference import engine as ref_engine
from numalab.topology import Topology
from numalab.workloads import PH_INIT, workload

SPR = Topology.preset("2s-224-spr")
C = Costs()


def _init(T=224, remote_per_process=56):
    """Two processes of T/2 init threads each writing node 1's memory; ``remote_per_process`` of
    each process's threads run on node 0, the rest on node 1."""
    half = T // 2
    node = np.ones((1, T), int)
    for p in range(2):
        node[0, p * half:p * half + remote_per_process] = 0
    frac = np.zeros((1, T, 2))
    frac[:, :, 1] = 1.0
    mm = np.repeat([0, 1], half)
    return node, frac, np.ones((1, T), bool), mm


def _loads(s, node, frac, shared, mm):
    """Bytes/s on memory node 1's controller and on each link direction [x -> y], by the
    mechanism's accounting (independent of the implementation's fixed point): a remote write-back
    goes out of the writer's node and the line's read from memory comes in to it, a pull from
    the previous writer's node comes in to it."""
    T = s.shape[1]
    cs = np.ones(T)
    pull = np.zeros((T, 2))
    for p in np.unique(mm):
        mine = shared[0] & (mm == p)
        n_p = mine.sum()
        for t in np.flatnonzero(mine):
            cs[t] = 1.0 / n_p
            for b in range(2):
                if b != node[0, t]:
                    pull[t, b] = (1.0 - 1.0 / n_p) * (mine & (node[0] == b)).sum() / max(n_p - 1, 1)
    dram = s[0] * frac[0, :, 1] * cs
    link = np.zeros((2, 2))
    for t in range(T):
        a = node[0, t]
        if a != 1:
            link[a, 1] += dram[t]          # write-back out
            link[1, a] += dram[t]          # the read from memory in
        for b in range(2):
            link[b, a] += s[0, t] * pull[t, b]
    return dram.sum(), link


@pytest.mark.parametrize("remote", [0, 10, 56, 100])
@pytest.mark.parametrize("looping", [False, True])
def test_no_resource_above_capacity_and_a_saturated_one_full(remote, looping):
    node, frac, run, mm = _init(remote_per_process=remote)
    shared = np.ones_like(run)
    if looping:                 # node-1 threads of process 0 already in their loop phase
        shared[0, remote:112] = False
    s = progress_rates(C, SPR, node, frac, run, shared, mm)
    dram, link = _loads(s, node, frac, shared, mm)
    cap = SPR.node_bw_GBps * 1e9 * SPR.write_efficiency
    lcap = SPR.link_bw_GBps * 1e9 * C.link_write_efficiency
    assert dram <= cap * (1 + 1e-5) and (link <= lcap * (1 + 1e-5)).all()
    full = np.isclose(dram, cap, rtol=1e-5) or np.isclose(link, lcap, rtol=1e-5).any()
    own = SPR.thread_bw_GBps * 1e9 * C.smt_share * SPR.local_latency_ns / SPR.latency_ns[node[0], 1]
    # either some resource is full, or every thread streams at its own limit
    assert full or np.allclose(s[0], own, rtol=1e-9)


def test_coherent_init_is_never_slower_than_full_dram_traffic():
    node, frac, run, mm = _init()
    shared = np.ones_like(run)
    coh = progress_rates(C, SPR, node, frac, run, shared, mm)
    dram = progress_rates(C, SPR, node, frac, run, None)
    # the controllers bind the DRAM-traffic sweep (the bound memory is on one node: 0.39 x 230 GB/s),
    # the coherent one writes each line back once per process: about twice the rate
    assert (coh >= dram * (1 - 1e-12)).all() and coh.sum() > 1.8 * dram.sum()


def test_one_init_thread_per_process_is_the_closed_form():
    # no peer cache to take lines from: every byte goes to DRAM, as without the mechanism
    node = np.array([[0, 1, 1, 0]])
    frac = np.zeros((1, 4, 2))
    frac[:, :, 1] = 1.0
    run = np.ones((1, 4), bool)
    tiny = Topology(nodes=2, cpus_per_node=2, smt=1, node_bw_GBps=20.0, name="tiny")
    a = progress_rates(C, tiny, node, frac, run, np.array([[True, True, False, False]]), np.array([0, 1, 0, 1]))
    b = progress_rates(C, tiny, node, frac, run, None)
    np.testing.assert_allclose(a, b, rtol=1e-12)


def test_shared_init_needs_the_processes():
    node, frac, run, _ = _init()
    with pytest.raises(NumalabValueError, match="thread_mm"):
        progress_rates(C, SPR, node, frac, run, np.ones_like(run))


def _init_end(topo, seeds=(0, 1), **opts):
    wl = workload("numa01", topo, size_bytes=1 << 30, loops=2)
    b = make_batch(wl, Policy.profile("6.4"), list(seeds), max_time=40.0, **opts)
    for i in range(800):
        b.step()
        if not ((b.tasks.phase == PH_INIT) & wl.init_bind[None, :]).any():
            return (i + 1) * b.dt
    raise AssertionError("init never ended")


def test_the_coherent_init_is_shorter_and_follows_the_link():
    base = Topology.preset("2s-128")
    coh = _init_end(base)
    assert coh < _init_end(base, init_coherence=False) / 2
    # cross-socket pulls bind it: doubling the links shortens it, doubling the controllers not
    fast_link = dataclasses.replace(base, link_bw_GBps=2 * base.link_bw_GBps)
    fast_dram = dataclasses.replace(base, node_bw_GBps=2 * base.node_bw_GBps)
    assert _init_end(fast_link) < 0.75 * coh
    assert _init_end(fast_dram) == pytest.approx(coh, rel=0.1)


@settings(max_examples=25, deadline=None)
@given(coherence=st.booleans(), seed=st.integers(0, 2**31),
       profile=st.sampled_from(["6.4", "6.8", "6.4-rc-scan-delay", "rfc2023-p2"]), threads=st.integers(1, 4),
       name=st.sampled_from(["numa01", "numa01_THREAD_ALLOC"]), convoy=st.booleans())
def test_engine_matches_reference_with_a_shared_init(coherence, seed, profile, threads, name, convoy):
    topo = Topology(nodes=2, cpus_per_node=4, smt=2, node_bw_GBps=20.0, link_bw_GBps=8.0, name="tiny")
    wl = workload(name, topo, threads=threads, size_bytes=16 << 20, loops=3)
    pol = Policy.profile(profile)
    o = EngineOptions.coerce(dict(max_time=6.0, init_coherence=coherence, sweep_convoy=convoy))
    batch = make_batch(wl, pol, [seed], **o.to_dict()).run()
    ref = ref_engine.Replica(wl, pol, seed, o.to_dict(), Costs()).run()
    for k, v in ref.cnt.items():
        assert int(batch.cnt[k][0]) == v, k
    assert batch.elsp[0] == ref.elsp
    assert batch.syst[0] == ref.syst
    assert batch.regions.node[0].tolist() == ref.r_node


@pytest.mark.parametrize("seed,profile", [(0, "6.8"), (1, "rfc2023-p2"), (2, "6.4")])
def test_engine_matches_reference_in_a_convoy(seed, profile):
    """Option sweep_convoy (numa01's loops start together) on a numa01 long enough for hundreds
    of sweep faults, ties of the first crossing among them."""
    topo = Topology(nodes=2, cpus_per_node=4, smt=2, node_bw_GBps=20.0, link_bw_GBps=8.0, name="tiny")
    wl = workload("numa01", topo, threads=4, size_bytes=64 << 20, loops=40)
    pol = Policy.profile(profile)
    o = EngineOptions.coerce(dict(max_time=8.0, scan_delay_ms=200, sweep_convoy=True))
    batch = make_batch(wl, pol, [seed], kernel="numpy", **o.to_dict()).run()
    ref = ref_engine.Replica(wl, pol, seed, o.to_dict(), Costs()).run()
    assert ref.cnt["numa_hint_faults"] > 100
    for k, v in ref.cnt.items():
        assert int(batch.cnt[k][0]) == v, k
    assert batch.elsp[0] == ref.elsp
    assert batch.regions.node[0].tolist() == ref.r_node


# ------------------------------------------------------------------ the link, one line each way (0.6.0)
def _link_bound(topo, writers_0_to_1, writers_1_to_0, both):
    """Closed-form rates of threads on node 0 writing node 1's memory and threads on node 1
    writing node 0's, on a machine whose link (not its controllers) binds."""
    T = writers_0_to_1 + writers_1_to_0
    node = np.array([[0] * writers_0_to_1 + [1] * writers_1_to_0])
    frac = np.zeros((1, T, 2))
    frac[0, :writers_0_to_1, 1] = 1.0
    frac[0, writers_0_to_1:, 0] = 1.0
    return progress_rates(C, topo, node, frac, np.ones((1, T), bool), both_directions=both)[0]


LINK_BOUND = Topology(nodes=2, cpus_per_node=16, smt=1, node_bw_GBps=400.0, link_bw_GBps=20.0,
                      thread_bw_GBps=20.0, name="link-bound")


def test_a_one_way_stream_gets_a_whole_link_direction():
    # its RFO data come one way and its write-backs go the other: each direction carries it once
    link = LINK_BOUND.link_bw_GBps * 1e9 * C.link_write_efficiency
    one_way = _link_bound(LINK_BOUND, 8, 0, both=True)
    assert one_way.sum() == pytest.approx(link, rel=1e-9)
    # the 0.5.0 accounting charged it twice on its own direction: half of that
    assert _link_bound(LINK_BOUND, 8, 0, both=False).sum() == pytest.approx(link / 2, rel=1e-9)


def test_a_symmetric_load_is_charged_as_before():
    # writes both ways at once: each direction carries one side's write-backs and the other's RFO
    # data, so the two accountings agree, and the two sides share one direction's capacity
    new = _link_bound(LINK_BOUND, 8, 8, both=True)
    old = _link_bound(LINK_BOUND, 8, 8, both=False)
    np.testing.assert_allclose(new, old, rtol=1e-12)
    assert new.sum() == pytest.approx(LINK_BOUND.link_bw_GBps * 1e9 * C.link_write_efficiency, rel=1e-9)


def test_writes_the_other_way_slow_a_stream_on_the_shared_direction():
    # a one-way stream alone, then with a smaller stream the other way: the second's RFO data and
    # write-backs share both directions with the first, which slows down by their share
    alone = _link_bound(LINK_BOUND, 8, 0, both=True)[:8].sum()
    shared = _link_bound(LINK_BOUND, 8, 2, both=True)
    assert shared[:8].sum() < alone * 0.95
    assert shared.sum() == pytest.approx(alone, rel=1e-9)     # the direction still carries its capacity

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
       name=st.sampled_from(["numa01", "numa01_THREAD_ALLOC"]))
def test_engine_matches_reference_with_a_shared_init(coherence, seed, profile, threads, name):
    topo = Topology(nodes=2, cpus_per_node=4, smt=2, node_bw_GBps=20.0, link_bw_GBps=8.0, name="tiny")
    wl = workload(name, topo, threads=threads, size_bytes=16 << 20, loops=3)
    pol = Policy.profile(profile)
    o = EngineOptions.coerce(dict(max_time=6.0, init_coherence=coherence))
    batch = make_batch(wl, pol, [seed], **o.to_dict()).run()
    ref = ref_engine.Replica(wl, pol, seed, o.to_dict(), Costs()).run()
    for k, v in ref.cnt.items():
        assert int(batch.cnt[k][0]) == v, k
    assert batch.elsp[0] == ref.elsp
    assert batch.syst[0] == ref.syst
    assert batch.regions.node[0].tolist() == ref.r_node

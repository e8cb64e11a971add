"""costs.init_dram_share: numa01's bound init sweeps (every worker zero-writes the whole buffer
under MPOL_BIND at once) can put only a share of their bytes on the memory controllers and
links. The default (1.0) is the closed form bit for bit (tests/test_golden.py); below 1 the
saturated resources still carry exactly their capacity, the init gets shorter, the engine still
agrees with the scalar reference, and the option is checked at the boundary."""

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


def _stuck(T=224):
    """Every thread writes node 1's memory; the first half runs on node 0 (remote writers)."""
    node = np.array([[0] * (T // 2) + [1] * (T // 2)])
    frac = np.zeros((1, T, 2))
    frac[:, :, 1] = 1.0
    return node, frac, np.ones((1, T), bool)


@pytest.mark.parametrize("share", [0.3, 0.1, 0.01])
@pytest.mark.parametrize("half_in_init", [False, True])
def test_saturated_controller_carries_exactly_its_capacity(share, half_in_init):
    node, frac, run = _stuck()
    shared = np.ones_like(run)
    if half_in_init:                       # remote writers still in the init, local ones looping
        shared[0, 112:] = False
    c = Costs(init_dram_share=share)
    s = progress_rates(c, SPR, node, frac, run, shared)
    dram = (s * np.where(shared, share, 1.0)).sum()
    cap = SPR.node_bw_GBps * 1e9 * c.write_efficiency
    own = progress_rates(c, SPR, node, frac, run, None)      # everyone at full DRAM traffic
    if dram < cap * (1 - 1e-6):            # unsaturated: every thread at its own streaming speed
        unconstrained = SPR.thread_bw_GBps * 1e9 * c.smt_share * SPR.local_latency_ns / SPR.latency_ns[node[0], 1]
        np.testing.assert_allclose(s[0], unconstrained, rtol=1e-9)
    else:
        assert dram == pytest.approx(cap, rel=1e-6)
    # a shared sweep is never slower than the same sweep at full DRAM traffic
    assert (s[0][shared[0]] >= own[0][shared[0]] * (1 - 1e-12)).all()


def test_share_one_is_the_closed_form():
    node, frac, run = _stuck()
    a = progress_rates(Costs(), SPR, node, frac, run, np.ones_like(run))
    b = progress_rates(Costs(), SPR, node, frac, run, None)
    assert (a == b).all()


def _init_end(share, topo="2s-128", seeds=(0, 1)):
    wl = workload("numa01", topo, size_bytes=1 << 30, loops=2)     # 2 x 64 workers, 1 GiB each
    b = make_batch(wl, Policy.profile("6.4"), list(seeds), costs={"init_dram_share": share}, max_time=30.0)
    for i in range(600):
        b.step()
        if not ((b.tasks.phase == PH_INIT) & wl.init_bind[None, :]).any():
            return (i + 1) * b.dt
    raise AssertionError("init never ended")


def test_a_smaller_share_shortens_the_bound_init():
    assert _init_end(0.05) < _init_end(0.5) < _init_end(1.0)


def test_costs_refuse_a_share_outside_0_1():
    for bad in (0.0, -0.5, 1.5, float("nan")):
        with pytest.raises(NumalabValueError, match="init_dram_share"):
            Costs(init_dram_share=bad)


@settings(max_examples=25, deadline=None)
@given(share=st.sampled_from([0.02, 0.2, 0.7]), seed=st.integers(0, 2**31),
       profile=st.sampled_from(["6.4", "6.8", "6.4-rc-scan-delay", "rfc2023-p2"]), threads=st.integers(1, 4))
def test_engine_matches_reference_with_a_shared_init(share, seed, profile, threads):
    topo = Topology(nodes=2, cpus_per_node=4, smt=2, node_bw_GBps=20.0, name="tiny")
    wl = workload("numa01", topo, threads=threads, size_bytes=16 << 20, loops=3)
    pol = Policy.profile(profile)
    costs = Costs(init_dram_share=share)
    o = EngineOptions.coerce(dict(max_time=6.0))
    batch = make_batch(wl, pol, [seed], costs=costs, **o.to_dict()).run()
    ref = ref_engine.Replica(wl, pol, seed, o.to_dict(), costs).run()
    for k, v in ref.cnt.items():
        assert int(batch.cnt[k][0]) == v, k
    assert batch.elsp[0] == ref.elsp
    assert batch.syst[0] == ref.syst
    assert batch.regions.node[0].tolist() == ref.r_node

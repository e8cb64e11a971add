"""The vectorised engine agrees exactly with the scalar reference (numalab/reference/engine.py)
on random small workloads, every kernel profile and the engine's switches."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from numalab.costs import Costs
from numalab.engine import LB_MIGRATE_HZ, EngineOptions, make_batch
from numalab.policy import Policy
from numalab.reference import engine as ref_engine
from numalab.topology import Topology
from numalab.workloads import from_access_matrix

from _rule_helpers import user_rules

PROFILES = Policy.profiles()
USER_RULES = user_rules()


@st.composite
def cases(draw):
    nodes = draw(st.integers(2, 3))
    cpus = draw(st.sampled_from([2, 4, 6]))
    T = draw(st.integers(1, min(5, nodes * cpus)))
    K = draw(st.integers(1, 4))
    chunk = draw(st.sampled_from([2, 4, 8])) << 20
    # roomy nodes, or nodes so small that migrations start failing (migrate_balanced_pgdat)
    tight = (K * chunk + (12 << 20)) / nodes / (1 << 30) * 1.05
    # three nodes: the default link per pair, or a chain 0 - 1 - 2 of thin links (node 0's traffic
    # to node 2 crosses both; asymmetric capacities on the second)
    links = draw(st.sampled_from([None, ((0, 1, 5.0), (1, 2, 3.0, 8.0))])) if nodes == 3 else None
    topo = Topology(nodes=nodes, cpus_per_node=cpus, smt=2, node_bw_GBps=draw(st.sampled_from([20.0, 100.0])),
                    mem_per_node_GiB=draw(st.sampled_from([128.0, tight])), links=links, name="tiny")
    # sparse non-negative rates with at least one chunk per thread; shared chunks make groups
    rates = np.array(draw(st.lists(st.lists(st.sampled_from([0.0, 0.0, 0.25, 1.0, 2.0]), min_size=K, max_size=K),
                                   min_size=T, max_size=T)))
    for t in range(T):
        if rates[t].sum() == 0:
            rates[t, draw(st.integers(0, K - 1))] = 1.0
    loops = draw(st.sampled_from([2000, 20000, 60000]))
    wl = from_access_matrix(rates, topology=topo, chunk_bytes=chunk, loops=loops,
                            init_node=draw(st.integers(-1, nodes - 1)))
    policy = Policy.profile(draw(st.sampled_from(PROFILES)))
    if draw(st.booleans()):
        policy = policy.replace(history=draw(st.integers(1, 6))) if policy.numab_state else policy
    if policy.numab_state and draw(st.integers(0, 3)) == 0:  # a user rule: the reference calls it per VMA
        policy = policy.replace(add_rules=[draw(st.sampled_from(USER_RULES))])
    opts = dict(
        dt=draw(st.sampled_from([0.02, 0.05, 0.1])),
        max_time=draw(st.sampled_from([3.0, 8.0])),
        sticky_locality=draw(st.booleans()),
        thp=draw(st.booleans()),
        scan_delay_ms=draw(st.sampled_from([200, 1000])),
        scan_size_mb=draw(st.sampled_from([4, 16, 256])),
        pid_base=draw(st.one_of(st.none(), st.integers(1, 300), st.integers(250, 260))),
        # the load balancer's cross-node pulls: off, the default, and rates high enough to
        # fire (and to find full nodes, i.e. swaps) within these short runs
        lb_migrate_hz=draw(st.sampled_from([0.0, LB_MIGRATE_HZ, 0.5, 4.0])),
        # which of the two tasks on the doubly loaded CPU the refill pull takes back
        lb_refill_locality=draw(st.booleans()),
        # task_numa_compare's bar and the grouped task's stick (sched_setnuma to its node)
        stick_numa=draw(st.booleans()),
        # task_numa_find_cpu's maymove into an idle CPU and no swap in a group into spare capacity
        numa_maymove=draw(st.booleans()),
    )
    return wl, policy, draw(st.integers(0, 2**31)), opts


@settings(max_examples=300, deadline=None)
@given(cases())
def test_engine_matches_reference(case):
    run_both_and_compare(*case)


def run_both_and_compare(wl, policy, seed, opts, kernel="auto"):
    """One seed through the engine (``kernel``: make_batch's) and the reference; every counter
    and final state equal. Returns the engine's batch."""
    o = EngineOptions.coerce(opts)
    batch = make_batch(wl, policy, [seed], kernel=kernel, **opts).run()
    ref = ref_engine.Replica(wl, policy, seed, o.to_dict(), Costs()).run()
    for k, v in ref.cnt.items():
        assert int(batch.cnt[k][0]) == v, k
    for i, r in enumerate(policy.reasons):
        assert int(batch.counters.reasons[0, i]) == ref.reasons[r], r
    assert batch.syst[0] == ref.syst
    assert batch.elsp[0] == ref.elsp
    assert batch.regions.node[0].tolist() == ref.r_node
    assert batch.groups.gid[0].tolist() == ref.group
    assert batch.numa.numa_scan_period[0].tolist() == ref.period
    assert batch.mm.numa_scan_seq[0].tolist() == ref.mm_seq
    assert batch.tasks.node[0].tolist() == ref.node
    assert batch.numa.numa_preferred_nid[0].tolist() == ref.preferred
    return batch


def test_reference_agrees_in_a_batch():
    """The reference is per replica; the engine's replica 2 of a batch of 4 is the same run."""
    topo = Topology(nodes=2, cpus_per_node=4, smt=2, name="tiny")
    wl = from_access_matrix(np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]), topology=topo,
                            chunk_bytes=4 << 20, loops=40000)
    o = EngineOptions.coerce(dict(max_time=6.0, lb_migrate_hz=2.0))
    pol = Policy.profile("6.12")
    batch = make_batch(wl, pol, [11, 12, 13, 14], **o.to_dict()).run()
    ref = ref_engine.Replica(wl, pol, 13, o.to_dict(), Costs()).run()
    assert ref.cnt["numa_hint_faults"] > 0
    for k, v in ref.cnt.items():
        assert int(batch.cnt[k][2]) == v, k
    assert batch.syst[2] == ref.syst
    assert ref.cnt["lb_migrations"] > 0
    assert batch.tasks.node[2].tolist() == ref.node

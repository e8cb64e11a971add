"""The vectorised engine agrees exactly with the scalar reference on machines whose nodes differ:
CPUs per node (a memory-only node among them), memory per node (full nodes fail migrations),
each node's bandwidth and latency, an init bound to any node with memory."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from test_engine_reference import run_both_and_compare

from numalab.engine import LB_MIGRATE_HZ
from numalab.policy import Policy
from numalab.topology import Topology
from numalab.workloads import from_access_matrix


@st.composite
def machines(draw):
    nodes = draw(st.integers(2, 4))
    cpus = [draw(st.sampled_from([2, 4])) for _ in range(nodes)]
    memory_only = draw(st.lists(st.integers(0, nodes - 1), max_size=nodes - 1, unique=True))
    for n in memory_only:
        cpus[n] = 0
    if not any(cpus):
        cpus[0] = 2
    d = np.full((nodes, nodes), 21)
    for i in range(nodes):
        for j in range(i):
            d[i, j] = d[j, i] = draw(st.sampled_from([12, 14, 21, 24, 32]))
    np.fill_diagonal(d, 10)
    return Topology(nodes=nodes, cpus_per_node=cpus, smt=[2 if c else 1 for c in cpus], distance=d.tolist(),
                    node_bw_GBps=[draw(st.sampled_from([20.0, 100.0])) for _ in range(nodes)],
                    link_bw_GBps=[draw(st.sampled_from([10.0, 40.0])) for _ in range(nodes)],
                    local_latency_ns=[draw(st.sampled_from([90.0, 200.0])) for _ in range(nodes)],
                    remote_latency_ns=300.0, thread_bw_GBps=[draw(st.sampled_from([8.0, 12.0])) for _ in range(nodes)],
                    mem_per_node_GiB=_memory(draw, cpus), name="tiny-nodes")


def _memory(draw, cpus):
    """Roomy nodes, nodes so small that migrations fail, and memoryless nodes with CPUs."""
    mem = [draw(st.sampled_from([128.0, 0.02, 0.0] if c else [128.0, 0.02])) for c in cpus]
    if not any(mem):
        mem[0] = 128.0
    return mem


@st.composite
def cases(draw):
    topo = draw(machines())
    T = draw(st.integers(1, min(5, topo.ncpus)))
    K = draw(st.integers(1, 4))
    rates = np.array(draw(st.lists(st.lists(st.sampled_from([0.0, 0.25, 1.0, 2.0]), min_size=K, max_size=K),
                                   min_size=T, max_size=T)))
    for t in range(T):
        if rates[t].sum() == 0:
            rates[t, draw(st.integers(0, K - 1))] = 1.0
    with_memory = np.flatnonzero(topo.has_memory).tolist()
    wl = from_access_matrix(rates, topology=topo, chunk_bytes=draw(st.sampled_from([2, 4])) << 20,
                            loops=draw(st.sampled_from([2000, 20000])),
                            init_node=draw(st.sampled_from([-1, *with_memory])))
    opts = dict(dt=draw(st.sampled_from([0.05, 0.1])), max_time=draw(st.sampled_from([3.0, 8.0])),
                thp=draw(st.booleans()), scan_delay_ms=draw(st.sampled_from([200, 1000])),
                lb_migrate_hz=draw(st.sampled_from([0.0, LB_MIGRATE_HZ, 4.0])),
                init_node=draw(st.one_of(st.none(), st.sampled_from(with_memory))))
    return wl, Policy.profile(draw(st.sampled_from(["6.4", "6.12", "rfc2023-p5"]))), draw(st.integers(0, 2**31)), opts


@settings(max_examples=150, deadline=None)
@given(cases())
def test_engine_matches_reference_on_per_node_machines(case):
    wl = case[0]
    batch = run_both_and_compare(*case)
    # a memory-only node runs no thread and is no task's preferred node
    cpuless = np.flatnonzero(~wl.topology.has_cpu)
    assert not np.isin(batch.tasks.node[0], cpuless).any()
    assert not np.isin(batch.numa.numa_preferred_nid[0], cpuless).any()

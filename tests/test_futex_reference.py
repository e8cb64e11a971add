"""The vectorised simulation against the scalar heapq reference (numalab/reference/futex.py).

The two draw their random numbers differently (per-thread pre-drawn streams vs one
random.Random in event order), so they agree statistically: throughput of the same routing,
summed over threads and averaged over 4 seeds, within 4% (each estimate's own noise at 1500
ops/thread is ~1-2%). Exact agreement of the mapping is in test_futex_hash.py (hypothesis, 300
examples).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numalab.futex.solver import FutexCosts, handoff_matrix, line_matrix, network, simulate
from numalab.futex.workloads import futex_numa, perf_bench_hash, route, together
from numalab.reference import futex as ref
from numalab.topology import Topology

SEEDS = [11, 12, 13, 14]


def _compare(workload, dist="exponential", costs=None, ops=1500, warmup=100):
    rts = [route(workload, s) for s in SEEDS]
    vec = simulate(network(rts, costs), SEEDS, ops=ops, warmup=warmup, dist=dist)
    X_vec = np.bincount(vec["thr_point"], weights=vec["rate"])
    X_ref = np.array([sum(ref.simulate(rt, s, costs=costs, ops=ops, warmup=warmup, dist=dist))
                      for rt, s in zip(rts, SEEDS)])
    return X_vec, X_ref


@pytest.mark.parametrize("case", ["two-buckets", "collisions", "rcuref", "rcuref-smt", "futex_numa-shared",
                                  "deterministic", "remote-home", "classic-interleaved"])
def test_vectorised_simulation_agrees_with_reference(case):
    dist, costs = "exponential", None
    if case == "two-buckets":
        w = perf_bench_hash("2s-ivb-40", threads=6, futexes=8, buckets=2)
    elif case == "collisions":
        w = perf_bench_hash("2s-ivb-40", threads=8, futexes=16, buckets=16)
    elif case == "rcuref":
        w = perf_bench_hash("2s-ivb-40", threads=6, futexes=8, buckets=8, refcount="rcuref")
    elif case == "rcuref-smt":  # 26 threads on 20 cores: six pairs of SMT siblings ride along
        w = perf_bench_hash("2s-ivb-40", threads=26, futexes=8, buckets=8, refcount="rcuref")
    elif case == "futex_numa-shared":
        a = futex_numa("2s-ivb-40", contenders=3, threads=1, nanos=0, numa=True, node=0, cpu_node=0, squash=True)
        b = futex_numa("2s-ivb-40", contenders=3, threads=1, nanos=0, numa=True, node=0, cpu_node=1, squash=True)
        w = together(a, b)
    elif case == "remote-home":  # bucket memory on node 1, all threads on node 0
        w = futex_numa("2s-ivb-40", contenders=4, threads=1, nanos=0, numa=True, node=1, cpu_node=0, squash=True)
    elif case == "classic-interleaved":  # classic table pages interleaved over both nodes
        w = perf_bench_hash("2s-ivb-40", threads=8, futexes=16, mode="classic", hashsize=256)
    else:
        w = perf_bench_hash("2s-ivb-40", threads=8, futexes=4, buckets=4)
        dist, costs = "deterministic", FutexCosts(critical_section_ns=40.0)
    X_vec, X_ref = _compare(w, dist=dist, costs=costs)
    assert abs(X_vec.mean() / X_ref.mean() - 1) < 0.04


def test_reference_think_time_matches_solver_classes():
    # the reference spells the think time out term by term; the solver aggregates it per class
    w = perf_bench_hash("2s-ivb-40", threads=4, futexes=8, buckets=8, shared=True)
    rt = route(w, 0)
    net = network([rt])
    c = FutexCosts().resolve(w.topology)
    for t in range(4):
        assert ref.think_ns(rt, t, c) == pytest.approx(net.cls_think[net.thr_cls[t]])
        assert ref.think_ns(rt, t, c) == pytest.approx(
            c.syscall_ns + c.futex_path_ns + c.hash_ns + 2 * c.atomic_ns + c.user_ns + c.gup_ns)


@pytest.mark.parametrize("home", [0, 1])
def test_cold_line_comes_from_the_home_nodes_dram_exactly(home):
    # one thread, one futex, fixed times, no warm-up: the first visit fetches the line from
    # DRAM on its home node (Topology.latency_ns), every later one finds it in its own cache.
    # Both simulators must give exactly ops / (ops * (Z + base) + lines * (cold + (ops-1) * self)).
    w = futex_numa("2s-ivb-40", contenders=1, threads=0, numa=True, node=home, cpu_node=0)
    rt = route(w, 0)
    c = FutexCosts().resolve(w.topology)
    ops = 50
    z = ref.think_ns(rt, 0, c)
    cold = w.topology.latency_ns[0, home]
    t = ops * (z + c.critical_section_ns) + c.lines_per_op * (cold + (ops - 1) * c.line_self_ns)
    vec = simulate(network([rt]), [0], ops=ops, warmup=0, dist="deterministic")["rate"][0]
    scalar = ref.simulate(rt, 0, ops=ops, warmup=0, dist="deterministic")[0]
    assert vec == pytest.approx(ops / t, rel=1e-12)
    assert scalar == pytest.approx(ops / t, rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(preset=st.sampled_from(Topology.presets()), i=st.integers(0, 7), j=st.integers(0, 7), h=st.integers(0, 7),
       home_lookup=st.floats(0.0, 1.0), remote=st.floats(50.0, 400.0))
def test_handoff_matrix_matches_scalar_rule(preset, i, j, h, home_lookup, remote):
    # the vectorised (holder node, my node, home node) cost table vs the reference's if/else
    topo = Topology.preset(preset)
    i, j, h = i % topo.nodes, j % topo.nodes, h % topo.nodes
    costs = FutexCosts(home_lookup=home_lookup, line_remote_ns=remote).resolve(topo)
    C, cold = handoff_matrix(topo, costs)
    L, lat = line_matrix(topo, costs), topo.latency_ns
    assert C[i, j, h] == pytest.approx(ref.line_cost(L, lat, costs, i, j, h), rel=1e-12)
    assert cold[j, h] == pytest.approx(ref.line_cost(L, lat, costs, None, j, h), rel=1e-12)

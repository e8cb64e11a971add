"""Contention solver: MVA vs the vectorised simulation, batch independence, mechanism."""

import numpy as np
import pytest

import numalab as nl
from numalab.futex_solver import FutexCosts, mva, network, simulate
from numalab.futex_workloads import futex_numa, perf_bench_hash, route, together


def _throughputs(workload, seeds, ops=2500, warmup=200):
    net = network([route(workload, s) for s in seeds])
    m = mva(net)
    X_mva = np.bincount(net.cls_point, weights=net.cls_n * m["x"])
    d = simulate(net, seeds, ops=ops, warmup=warmup)
    X_sim = np.bincount(d["thr_point"], weights=d["rate"])
    return X_mva, X_sim, m


# MVA and simulation share exponential think/service times (the MVA's assumption); the MVA
# is approximate (Schweitzer + a mean-field line-handoff mix). Tolerance: 5% on the mean over
# 3 seeds; the simulation's own noise at 2500 ops/thread is ~1%.
@pytest.mark.parametrize("threads,buckets,futexes,mode,refcount", [
    (16, 2, 1024, "private", "percpu"),      # saturated, two buckets
    (32, 16, 64, "private", "percpu"),       # partial collisions, threads on both nodes
    (20, 8, 1024, "private", "rcuref"),      # extra refcount server (6.16 code)
    (40, 1024, 1024, "private", "percpu"),   # rare collisions
    (24, None, 256, "classic", "percpu"),
])
def test_mva_agrees_with_simulation_within_5_percent(threads, buckets, futexes, mode, refcount):
    kw = dict(threads=threads, futexes=futexes, mode=mode, refcount=refcount)
    if mode == "private":
        kw["buckets"] = buckets
    w = perf_bench_hash("2s-ivb-40", **kw)
    X_mva, X_sim, _ = _throughputs(w, [0, 1, 2])
    assert abs(X_sim.mean() / X_mva.mean() - 1) < 0.05


@pytest.mark.parametrize("peer_node", [0, 1])
def test_futex_numa_seed_pair_mva_agrees_with_simulation(peer_node):
    a = futex_numa("2s-ivb-40", contenders=10, threads=2, nanos=0, numa=True, node=0, cpu_node=0, squash=True)
    b = futex_numa("2s-ivb-40", contenders=10, threads=2, nanos=0, numa=True, node=peer_node, cpu_node=1, squash=True)
    X_mva, X_sim, _ = _throughputs(together(a, b), [0, 1])
    assert abs(X_sim.mean() / X_mva.mean() - 1) < 0.05


def test_throughput_never_exceeds_the_bucket_capacity():
    # one bucket: at most 1 / (critical section + fastest handoff) operations per ns
    w = perf_bench_hash("2s-ivb-40", threads=40, futexes=16, buckets=2)
    c = FutexCosts().resolve(w.topology)
    for s in range(3):
        net = network([route(w, s)])
        m = mva(net)
        X = (net.cls_n * m["x"]).sum()
        used = np.unique(route(w, s).thread_buckets).size
        assert X <= used / (c.critical_section_ns + c.lines_per_op * c.line_self_ns) + 1e-12
        assert np.all(m["rho"] <= 1.0 + 1e-9)


def test_mva_result_of_a_point_does_not_depend_on_its_batch():
    w1 = perf_bench_hash("2s-128", threads=128, buckets=2)
    w2 = perf_bench_hash("2s-128", threads=8, buckets=4096)
    both = mva(network([route(w1, 0), route(w2, 5)]))["x"]
    alone1 = mva(network([route(w1, 0)]))["x"]
    alone2 = mva(network([route(w2, 5)]))["x"]
    assert np.array_equal(both, np.concatenate([alone1, alone2]))


def test_simulation_of_a_seed_does_not_depend_on_its_batch():
    w = perf_bench_hash("2s-ivb-40", threads=6, futexes=8, buckets=4)
    net_all = network([route(w, s) for s in (3, 4)])
    net_one = network([route(w, 4)])
    r_all = simulate(net_all, [3, 4], ops=200, warmup=20)
    r_one = simulate(net_one, [4], ops=200, warmup=20)
    assert np.array_equal(r_all["rate"][r_all["thr_point"] == 1], r_one["rate"])


def test_throughput_rises_with_buckets_until_collisions_are_rare():
    # 64 threads x 64 futexes = 4096 keys: at 2**17 buckets ~1.5% of them collide
    ds = nl.futex.sweep(buckets=[2 ** k for k in range(1, 18)], mode="private", threads=64, seeds=4,
                        topology="2s-128", futexes=64)
    y = ds.ops_per_s_per_thread.mean("seed").values
    coll = ds.collisions.mean("seed").values
    assert np.all(np.diff(y) > -0.005 * y[:-1])           # never falls (beyond solver noise)
    assert y[-1] > 10 * y[0]                               # contention costs an order of magnitude
    # once collisions are rare the curve is flat: the last doubling buys < 3%
    assert coll[-1] / (64 * 64) < 0.03 and y[-1] / y[-2] < 1.03
    # ... and where the table is small the doubling buys a lot
    assert y[3] / y[2] > 1.3
    assert np.all(np.diff(coll) <= 0)


def test_per_node_tables_help_when_contenders_are_split_across_nodes():
    def contenders(peer_node):
        a = futex_numa("2s-ivb-40", contenders=10, threads=2, nanos=0, numa=True, node=0, cpu_node=0, squash=True)
        b = futex_numa("2s-ivb-40", contenders=10, threads=2, nanos=0, numa=True, node=peer_node, cpu_node=1,
                       squash=True)
        ds = nl.futex.simulate(together(a, b), seeds=2)
        return ds.contenders.mean("seed").values

    shared, separated = contenders(0), contenders(1)
    # separated: each process has its own node-local bucket -> more than twice the rate
    assert np.all(separated > 2 * shared)
    # and the gain is not only halving the contenders per lock: cross-node handoffs cost
    same_node_costs = FutexCosts(line_remote_ns=45.0)  # = line_same_node_ns of 2s-ivb-40
    a = futex_numa("2s-ivb-40", contenders=10, threads=2, nanos=0, numa=True, node=0, cpu_node=0, squash=True)
    b = futex_numa("2s-ivb-40", contenders=10, threads=2, nanos=0, numa=True, node=0, cpu_node=1, squash=True)
    flat = nl.futex.simulate(together(a, b), seeds=2, costs=same_node_costs).contenders.mean("seed").values
    assert np.all(flat > 1.3 * shared)

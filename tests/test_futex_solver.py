"""Contention solver: MVA vs the vectorised simulation, batch independence, mechanism."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numalab as nl
from numalab.futex.costs import contended_matrix
from numalab.futex.solver import FutexCosts, handoff_matrix, mva, network, simulate
from numalab.futex.workloads import futex_numa, perf_bench_hash, route, together
from numalab.topology import Topology


def _throughputs(workload, seeds, ops=2500, warmup=200, dist="exponential", scv=1.0, costs=None):
    net = network([route(workload, s) for s in seeds], costs)
    m = mva(net, scv=scv)
    X_mva = np.bincount(net.cls_point, weights=net.cls_n * m["x"])
    d = simulate(net, seeds, ops=ops, warmup=warmup, dist=dist)
    X_sim = np.bincount(d["thr_point"], weights=d["rate"])
    return X_mva, X_sim, m


# "Where both apply" = exponential think/service times: MVA rests on the arrival theorem of
# product-form networks, whose FCFS stations need exponential service. Even there the MVA is
# approximate (Schweitzer + a mean-field line-handoff mix). Tolerance: 5% on the mean over
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


# Fixed (deterministic) service is outside product form. The residual-service correction
# (scv=0: mean residual s/2) keeps the MVA within 5% of the deterministic simulation. Where
# buckets are partly contended (32 threads, 16 buckets) it is what closes the gap: the
# plain Schweitzer MVA makes queued jobs wait for the full service of the one being served.
# Where both buckets are saturated (16 threads, 2 buckets) the service time, not the queue,
# sets the rate, and the correction matters little either way. The futex_numa pair is left
# out on purpose: with fixed times the threads fall into a lockstep order in which the same
# node's threads follow each other, a handoff mix no mean-value method sees.
@pytest.mark.parametrize("threads,buckets,futexes", [(16, 2, 1024), (32, 16, 64)])
def test_residual_service_correction_for_deterministic_times(threads, buckets, futexes):
    w = perf_bench_hash("2s-ivb-40", threads=threads, futexes=futexes, buckets=buckets)
    X_mva0, X_det, _ = _throughputs(w, [0, 1, 2], dist="deterministic", scv=0.0)
    net = network([route(w, s) for s in [0, 1, 2]])
    X_mva1 = np.bincount(net.cls_point, weights=net.cls_n * mva(net, scv=1.0)["x"])
    assert abs(X_det.mean() / X_mva0.mean() - 1) < 0.05
    if buckets > 2:
        # the correction moves the MVA towards the simulation (fixed times queue less)
        assert abs(X_det.mean() / X_mva0.mean() - 1) < abs(X_det.mean() / X_mva1.mean() - 1)


def test_handoff_rule_uses_the_bucket_memory_home():
    # the documented rule on a 4-node machine, term by term from the Topology's constants: a
    # node that owns a line serves its own cores (inclusive LLC / snoop filter), a line
    # handed between two nodes detours via its home only when that is a third node
    topo = Topology.preset("4s-144")
    c = FutexCosts().resolve(topo)
    C, cold = handoff_matrix(topo, c)
    lat = topo.latency_ns
    trip = topo.remote_latency_ns - topo.local_latency_ns
    assert C[0, 0, 0] == pytest.approx(topo.line_same_node_ns)                 # all local
    assert C[0, 0, 2] == pytest.approx(topo.line_same_node_ns)                 # same node, remote home
    assert C[1, 0, 1] == pytest.approx(topo.line_remote_ns)                    # home = holder's node
    assert C[1, 0, 0] == pytest.approx(topo.line_remote_ns)                    # home = my node
    assert C[1, 0, 3] == pytest.approx(topo.line_remote_ns + trip)             # 3-hop via a third node
    np.testing.assert_allclose(cold, lat)                                      # cold line: DRAM
    C0, _ = handoff_matrix(topo, FutexCosts(home_lookup=0.0))
    assert C0[1, 0, 3] == pytest.approx(topo.line_remote_ns)
    # a contended pull across nodes pays the conflict round trip, one within a node does not
    CB = contended_matrix(topo, c)
    conflict = topo.line_remote_ns - topo.line_same_node_ns
    assert CB[1, 0, 1] == pytest.approx(topo.line_remote_ns + c.conflict_trip * conflict)
    assert CB[1, 0, 3] == pytest.approx(topo.line_remote_ns + trip + c.conflict_trip * conflict)
    assert CB[0, 0, 2] == pytest.approx(topo.line_same_node_ns)
    np.testing.assert_allclose(contended_matrix(topo, FutexCosts(conflict_trip=0.0)), C)


def _pair_on_one_bucket(topology, home_node, user_ns, cpu_nodes):
    """One contender per entry of ``cpu_nodes`` (each its own process on that node) hammering
    bucket 0 of table[home_node] (FUTEX_SQUASH, FUTEX2_NUMA node word = home_node)."""
    procs = [futex_numa(topology, contenders=1, threads=0, numa=True, node=home_node, cpu_node=n, squash=True)
             for n in cpu_nodes]
    return together(*procs), FutexCosts(user_ns=user_ns)


def test_a_third_node_home_costs_the_directory_trip_of_cross_node_handoffs():
    # two contenders on nodes 0 and 1 share one bucket; only its memory's node differs. Homed
    # on node 0 (one of theirs) a handoff between them goes straight across; homed on node 2
    # it detours via node 2's directory. At low contention (20 us of user work per op) a
    # thread's cycle grows by the extra line cost of its visit: with P = 1/2 the other thread
    # held the line last (one key each, random cycle times), pulled lines_per_op times, or
    # lines_contended times in the fraction b of arrivals that find the lock held; each such
    # pull pays the trip to the remote home: (remote - local DRAM latency).
    topo = Topology.preset("4s-144")
    c = FutexCosts()
    trip = topo.remote_latency_ns - topo.local_latency_ns
    cyc = {}
    for home in (0, 2):
        w, costs = _pair_on_one_bucket("4s-144", home, 20000.0, (0, 1))
        net = network([route(w, 0)], costs)
        m = mva(net)
        d = simulate(net, [0], ops=3000, warmup=100)
        cyc[home] = (1.0 / m["x"].mean(), 1.0 / d["rate"].mean())
        b = 0.5 * m["rho"].max()
    expect = trip * (0.5 * c.lines_per_op * (1 - b) + b * c.lines_contended)
    assert cyc[2][0] > cyc[0][0] and cyc[2][1] > cyc[0][1]        # strictly lower throughput
    assert cyc[2][0] - cyc[0][0] == pytest.approx(expect, rel=0.15)  # MVA: the latency difference
    # the simulation (common random numbers: same seed, same draws) sees the same mechanism
    assert cyc[2][1] - cyc[0][1] == pytest.approx(cyc[2][0] - cyc[0][0], rel=0.25)


@pytest.mark.parametrize("n", [2, 4])
def test_a_node_that_owns_the_line_serves_its_cores_wherever_it_is_homed(n):
    # n contenders on node 0, the bucket homed on node 0 or node 1: once cached, the line is
    # handed between node 0's cores by node 0's LLC (Intel's inclusive LLC / snoop filter),
    # so the home no longer matters -- only the cold first touch, which warm-up discards
    xs = []
    for home in (0, 1):
        w, costs = _pair_on_one_bucket("2s-ivb-40", home, 2000.0, (0,) * n)
        xs.append(mva(network([route(w, 0)], costs))["x"])
    np.testing.assert_allclose(xs[0], xs[1], rtol=1e-12)


def test_seed_experiment_shared_lock_pays_the_conflict_round_trip():
    # futex_numa seed pair, both processes on table[0]: the lock's line crosses the socket at
    # the boundaries of its node-sorted round, and those contended cross-socket pulls pay the
    # coherence protocol's conflict round trip
    def counts(costs):
        a = futex_numa("2s-ivb-40", contenders=10, threads=2, nanos=0, numa=True, node=0, cpu_node=0, squash=True)
        b = futex_numa("2s-ivb-40", contenders=10, threads=2, nanos=0, numa=True, node=0, cpu_node=1, squash=True)
        return nl.futex.simulate(together(a, b), seeds=1, costs=costs).contenders.values[0]

    conflicts, none = counts(None), counts(FutexCosts(conflict_trip=0.0))
    # every thread pays for the crossings: the lock's round gets longer for both
    assert np.all(conflicts < 0.95 * none)
    # a saturated FIFO lock serves every waiter once per round, so the two processes'
    # counts stay within 1% of each other
    assert abs(conflicts[1] / conflicts[0] - 1) < 0.01
    # sorted by node, the round crosses far less often than an unsorted FIFO one
    unsorted = counts(FutexCosts(queue_node_sorting=0.0))
    assert np.all(conflicts > 1.3 * unsorted)


def test_identical_stations_are_merged_and_solve_the_same():
    # a large table: most buckets hold one or two keys, many with the same visitors and
    # weights. keep_threads=False merges those (the MVA solves each kind once); the answer
    # must not change, and the merge must actually happen (a weak row hash would silently
    # stop it: every group is verified, so collisions only cost the merge)
    w = perf_bench_hash("2s-128", threads=64, futexes=256, buckets=16384, refcount="immutable")
    rts = [route(w, s) for s in (0, 1)]
    full, merged = network(rts), network(rts, keep_threads=False)
    assert merged.st_home.size < full.st_home.size / 3
    np.testing.assert_array_equal(np.bincount(merged.st_point, weights=merged.st_mult),
                                  np.bincount(full.st_point).astype(float))
    np.testing.assert_allclose(mva(merged)["x"], mva(full)["x"], rtol=1e-9)
    np.testing.assert_array_equal(merged.pt_collisions, full.pt_collisions)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 40), st.integers(1, 5), st.integers(1, 4), st.integers(1, 4), st.randoms(use_true_random=False))
def test_station_weights_add_in_thread_order(T, U, K, F, rnd):
    """The MVA's per-(class, station) key weights are sums in thread order, bit for bit (no
    BLAS kernel chooses the order), and the large-table path gives the same sums."""
    from numalab.futex import stations

    full = np.array([[rnd.randrange(-1 if F > 1 else 0, U) for _ in range(F)] for _ in range(T)])
    thr_cls = np.array([rnd.randrange(K) for _ in range(T)])
    wgt = np.array([1.0 / rnd.randrange(1, 7) for _ in range(T)])
    W, A2 = stations._weights_dense(full, thr_cls, wgt, K, U, nopad=False)
    want_w, want_a = np.zeros(K * U), np.zeros(K * U)
    for t in range(T):
        for u in range(U):
            c = np.count_nonzero(full[t] == u) * wgt[t]
            want_w[thr_cls[t] * U + u] += c
            want_a[thr_cls[t] * U + u] += c * c
    assert W.tolist() == want_w.tolist() and A2.tolist() == want_a.tolist()
    W2, A22 = stations._weights_sorted(full, thr_cls, wgt, K, U, nopad=False)
    np.testing.assert_allclose(W2, W, rtol=1e-12, atol=0)
    np.testing.assert_allclose(A22, A2, rtol=1e-12, atol=0)

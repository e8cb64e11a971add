"""The core clock of the futex model (Topology.all_core_ghz / turbo_ghz, FutexCosts.clock_ref_ghz).

The CPU-side costs are stated in ns at ``clock_ref_ghz``; on a Topology that gives its clock
they take ``clock_ref_ghz / clock`` times as long, the node's clock falling from ``turbo_ghz``
with one busy core to ``all_core_ghz`` with all of them. Line transfers between cores do not
scale. A Topology without a clock prices exactly as before.
"""

import dataclasses

import numpy as np
import pytest

import numalab as nl
from numalab.errors import NumalabValueError
from numalab.futex.costs import FutexCosts, active_cores, clock_factor, core_clock_ghz
from numalab.futex.solver import mva, network, simulate
from numalab.futex.workloads import perf_bench_hash, route
from numalab.reference import futex as ref

CPU_COSTS = ("syscall_ns", "futex_path_ns", "hash_ns", "atomic_ns", "user_ns", "critical_section_ns",
             "line_self_ns", "percpu_ref_ns", "gup_ns")


def _x(w, costs=None, seeds=(0, 1)):
    net = network([route(w, s) for s in seeds], costs)
    return np.bincount(net.cls_point, weights=net.cls_n * mva(net)["x"])


def test_the_clock_interpolates_from_one_busy_core_to_all():
    topo = nl.Topology(nodes=2, cpus_per_node=16, all_core_ghz=2.4, turbo_ghz=2.8)   # 8 cores a node
    np.testing.assert_allclose(core_clock_ghz(topo, np.array([0, 1, 8, 20])), [2.8, 2.8, 2.4, 2.4])
    assert core_clock_ghz(topo, np.array([3]))[0] == pytest.approx(2.8 - 0.4 * 2 / 7)
    flat = nl.Topology(nodes=2, cpus_per_node=16, all_core_ghz=2.4)
    np.testing.assert_allclose(core_clock_ghz(flat, np.array([1, 8])), [2.4, 2.4])
    assert core_clock_ghz(nl.Topology(nodes=2, cpus_per_node=16), np.array([1])) is None
    np.testing.assert_allclose(clock_factor(nl.Topology(nodes=2, cpus_per_node=16), FutexCosts(), [1, 8]), 1.0)


def test_active_cores_count_busy_cores_per_node():
    topo = nl.Topology(nodes=2, cpus_per_node=16)
    # CPUs 0 and 8 are one core's two siblings; CPU 16 is node 1's first core
    assert active_cores(topo, [0, 8, 1, 16], [True, True, True, True]).tolist() == [2, 1]
    assert active_cores(topo, [0, 1, 16], [True, False, False]).tolist() == [1, 0]


def test_a_clock_at_the_reference_prices_exactly_as_no_clock():
    w0 = perf_bench_hash(nl.Topology(nodes=2, cpus_per_node=16), threads=20, futexes=64, buckets=16)
    w1 = perf_bench_hash(nl.Topology(nodes=2, cpus_per_node=16, all_core_ghz=3.0), threads=20, futexes=64,
                         buckets=16)
    np.testing.assert_array_equal(_x(w0), _x(w1))


def test_a_slower_all_core_clock_equals_scaled_cpu_costs():
    # every busy core at all_core_ghz: the clock is the same as stating the CPU costs 3.0/2.4 longer
    clocked = nl.Topology(nodes=2, cpus_per_node=16, all_core_ghz=2.4)
    plain = nl.Topology(nodes=2, cpus_per_node=16)
    k = 3.0 / 2.4
    base = FutexCosts()
    scaled = dataclasses.replace(base, **{n: getattr(base, n) * k for n in CPU_COSTS})
    for buckets in (2, 64, 4096):
        a = _x(perf_bench_hash(clocked, threads=28, futexes=256, buckets=buckets))
        b = _x(perf_bench_hash(plain, threads=28, futexes=256, buckets=buckets), scaled)
        np.testing.assert_allclose(a, b, rtol=1e-9)
        assert a.mean() < _x(perf_bench_hash(plain, threads=28, futexes=256, buckets=buckets)).mean()


def test_turbo_makes_few_threads_faster_per_thread_than_many():
    # private buckets (4096 a thread's 16 futexes): no contention, so the per-thread rate only
    # follows the clock; with turbo, 2 busy cores run faster than 8, without it equally fast
    turbo = nl.Topology(nodes=2, cpus_per_node=16, all_core_ghz=2.4, turbo_ghz=2.8)
    flat = nl.Topology(nodes=2, cpus_per_node=16, all_core_ghz=2.4)

    def per_thread(topo, threads):
        return _x(perf_bench_hash(topo, threads=threads, futexes=16, buckets=65536)).mean() / threads

    assert per_thread(turbo, 2) > 1.08 * per_thread(turbo, 8)
    assert per_thread(flat, 2) == pytest.approx(per_thread(flat, 8), rel=0.03)


def test_reference_simulator_agrees_on_a_clocked_machine():
    topo = nl.Topology(nodes=2, cpus_per_node=16, all_core_ghz=2.0, turbo_ghz=2.4)
    w = perf_bench_hash(topo, threads=5, futexes=8, buckets=4)
    seeds = [21, 22, 23, 24]
    rts = [route(w, s) for s in seeds]
    vec = simulate(network(rts), seeds, ops=1500, warmup=100)
    x_vec = np.bincount(vec["thr_point"], weights=vec["rate"])
    x_ref = np.array([sum(ref.simulate(rt, s, ops=1500, warmup=100)) for rt, s in zip(rts, seeds)])
    assert abs(x_vec.mean() / x_ref.mean() - 1) < 0.04
    # and the clock moved both: the same machine without a clock is faster
    plain = perf_bench_hash(nl.Topology(nodes=2, cpus_per_node=16), threads=5, futexes=8, buckets=4)
    assert _x(plain, seeds=seeds).mean() > 1.05 * _x(w, seeds=seeds).mean()


@pytest.mark.parametrize("kw,words", [
    (dict(turbo_ghz=3.0), "turbo_ghz=3.0 needs all_core_ghz"),
    (dict(all_core_ghz=3.0, turbo_ghz=2.0), "below all_core_ghz"),
    (dict(all_core_ghz=0.0), "all_core_ghz=0.0 is out of range"),
    (dict(all_core_ghz=float("nan")), "all_core_ghz=nan must be a finite number"),
])
def test_bad_clocks_are_refused_by_name(kw, words):
    with pytest.raises(NumalabValueError, match=words):
        nl.Topology(nodes=2, cpus_per_node=16, **kw)


def test_clock_round_trips_through_a_topology_file(tmp_path):
    topo = nl.Topology(nodes=2, cpus_per_node=16, all_core_ghz=2.4, turbo_ghz=2.8)
    assert nl.Topology.load(topo.save(tmp_path / "t.json")) == topo
    assert topo.to_attrs()["topology_all_core_ghz"] == 2.4
    plain = nl.Topology(nodes=2, cpus_per_node=16)
    assert "all_core_ghz" not in plain.to_dict()["topology"] and "topology_turbo_ghz" not in plain.to_attrs()
    with pytest.raises(NumalabValueError, match="clock_ref_ghz"):
        FutexCosts(clock_ref_ghz=0.0)

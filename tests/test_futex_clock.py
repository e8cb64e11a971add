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
    base = FutexCosts().resolve(plain)   # the kernel constants as stated: plain has none measured
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


def test_turbo_counts_the_busy_cores_of_the_whole_package():
    """2 packages of 2 nodes each (SNC2 / NPS2), 4 cores a node: four busy cores of node 0 are
    4 of their package's 8, so it still turbos; counted per node they would be all of them."""
    snc = nl.Topology(nodes=4, cpus_per_node=8, all_core_ghz=2.0, turbo_ghz=3.0, packages=2)
    per_node = nl.Topology(nodes=4, cpus_per_node=8, all_core_ghz=2.0, turbo_ghz=3.0)
    assert snc.node_package.tolist() == [0, 0, 1, 1] and per_node.node_package.tolist() == [0, 1, 2, 3]
    four = [0, 1, 2, 3]                                   # node 0's four cores (model numbering)
    assert active_cores(snc, four, [True] * 4).tolist() == [4, 4, 0, 0]
    assert active_cores(per_node, four, [True] * 4).tolist() == [4, 0, 0, 0]
    assert core_clock_ghz(snc, np.array([4]))[0] == pytest.approx(3.0 - 1.0 * 3 / 7)
    assert core_clock_ghz(per_node, np.array([4]))[0] == pytest.approx(2.0)
    assert active_cores(snc, [0, 8], [True, True]).tolist() == [2, 2, 0, 0]    # both nodes of package 0
    # the scalar reference counts the package the same way
    w = perf_bench_hash(snc, threads=4, futexes=8, buckets=64)
    rt = route(w, 0)
    expect = FutexCosts().clock_ref_ghz / (3.0 - 1.0 * 3 / 7)
    assert all(ref.clock_slowdown(rt, t, FutexCosts()) == pytest.approx(expect) for t in range(4))


@pytest.mark.parametrize("packages,words", [(3, "packages=3 does not divide the 4 nodes"),
                                            (0, "packages=0 is out of range"), (5, "packages=5 is out of range")])
def test_bad_packages_are_refused_by_name(packages, words):
    with pytest.raises(NumalabValueError, match=words):
        nl.Topology(nodes=4, cpus_per_node=8, packages=packages)


def test_from_host_reads_the_packages(tmp_path):
    import shutil
    from pathlib import Path

    from numalab.machine import read_host

    root = tmp_path / "snc4"
    shutil.copytree(Path(__file__).parent / "fixtures" / "sysfs" / "snc4", root)
    cpu = root / "sys" / "devices" / "system" / "cpu"

    def place(package_of_node):
        for n, cpus in enumerate(([0, 1, 16, 17], [2, 3, 18, 19], [4, 5, 20, 21], [6, 7, 22, 23])):
            for c in cpus:
                (cpu / f"cpu{c}" / "topology" / "physical_package_id").write_text(f"{package_of_node[n]}\n")
        return read_host(root, lscpu=False)

    data = place([0, 0, 1, 1])                           # SNC2 on two sockets
    assert data["topology"]["packages"] == 2 and data["provenance"]["packages"]["kind"] == "measurement"
    assert nl.Topology.from_dict(data).node_package.tolist() == [0, 0, 1, 1]
    data = place([0, 1, 0, 1])                           # not the order Topology.packages describes
    assert "packages" not in data["topology"] and any("not consecutive" in w for w in data["warnings"])
    assert nl.Topology(nodes=4, cpus_per_node=8, packages=2).to_dict()["topology"]["packages"] == 2

"""A futex hash mode is an object: a researcher's own (tests/_futex_modes.py, the worked
example of docs/futex.md) runs wherever a kernel mode does -- route, simulate (MVA and event
simulation), sweep, nl.sweep's "futex" kind, the CLI, calibrate/predict and the scalar
reference -- and the kernel modes are objects with the same interface."""

import re

import numpy as np
import pytest

import numalab as nl
from numalab.cli import main
from numalab.errors import NumalabValueError
from numalab.futex.solver import network, simulate
from numalab.futex.workloads import route
from numalab.reference import futex as ref

from _futex_modes import PAGE_NODE, WidePrivateHash

SPEC = "_futex_modes:PAGE_NODE"


def test_kernel_modes_are_objects_with_the_names_they_had():
    assert nl.futex.MODES == ("classic", "numa", "private")
    for name in nl.futex.MODES:
        m = nl.futex.hash_mode(name)
        assert isinstance(m, nl.futex.HashMode) and m.name == name and str(m) == name
        assert nl.futex.HASH_MODES[name] is m
    assert nl.futex.hash_mode(nl.futex.PRIVATE) is nl.futex.PRIVATE
    assert nl.futex.PRIVATE.private_tables and not nl.futex.NUMA.private_tables
    assert not nl.futex.CLASSIC.pr_futex_hash and nl.futex.NUMA.pr_futex_hash
    topo = nl.Topology.preset("2s-128")
    assert nl.futex.CLASSIC.table_size(topo) == nl.futex.classic_hashsize(topo)
    assert nl.futex.NUMA.table_size(topo) == nl.futex.node_hashsize(topo)
    assert nl.futex.CLASSIC.tables(2) == 1 and nl.futex.NUMA.tables(2) == 2


def test_a_spec_string_resolves_to_the_object():
    assert nl.futex.hash_mode(SPEC) is PAGE_NODE
    # a HashMode subclass given by spec is instantiated
    assert isinstance(nl.futex.hash_mode("_futex_modes:WidePrivateHash"), WidePrivateHash)


@pytest.mark.parametrize("value,match", [
    ("hashed", "mode='hashed' is not known"),
    ("_futex_modes:NOPE", "has no 'NOPE'"),
    ("no_such_module_xyz:M", "cannot import module 'no_such_module_xyz'"),
    ("_futex_modes:NOT_A_MODE", "is a NotAMode; allowed: a HashMode"),
    (3, "mode=3 is not known"),
])
def test_bad_modes_are_refused_by_name(value, match):
    with pytest.raises(NumalabValueError, match=match):
        nl.futex.hash_mode(value)
    with pytest.raises(NumalabValueError, match=match):
        nl.futex.perf_bench_hash("2s-ivb-40", threads=4, futexes=8, mode=value)


def test_register_mode_refuses_kernel_names():
    with pytest.raises(NumalabValueError, match="is a kernel mode"):
        nl.futex.register_mode(type("X", (nl.futex.NodeHash,), {"name": "numa"})())
    with pytest.raises(NumalabValueError, match="allowed: a HashMode instance"):
        nl.futex.register_mode("page-node")


def test_user_mode_routes_every_key_to_its_memory_node():
    # perf bench on two nodes, the global hash: the kernel's numa mode spreads each thread's
    # keys over both nodes' tables (hash bits); the page-node mode keeps them on the thread's node
    kw = dict(threads=32, futexes=64, mode=PAGE_NODE, hashsize=64)
    w = nl.futex.perf_bench_hash("2s-ivb-40", **kw)
    assert w.mode is PAGE_NODE and w.layout().n_global == 2 * 64
    rt = route(w, 3)
    S = rt.layout.global_size
    assert np.array_equal(rt.thread_buckets // S, np.broadcast_to(rt.thread_node[:, None], rt.thread_buckets.shape))
    assert np.array_equal(rt.layout.bucket_home(rt.thread_buckets), rt.thread_buckets // S)
    kernel = route(nl.futex.perf_bench_hash("2s-ivb-40", **{**kw, "mode": "numa"}), 3)
    remote = kernel.thread_buckets // S != kernel.thread_node[:, None]
    assert 0.4 < remote.mean() < 0.6


def test_user_mode_in_simulate_both_methods_and_the_reference():
    kw = dict(threads=32, futexes=64, hashsize=64)
    mine = nl.futex.perf_bench_hash("2s-ivb-40", mode=SPEC, **kw)
    kern = nl.futex.perf_bench_hash("2s-ivb-40", mode="numa", **kw)
    a = nl.futex.simulate(mine, seeds=2)
    b = nl.futex.simulate(kern, seeds=2)
    # no bucket line crosses the interconnect: more throughput than the kernel's interleave
    assert float(a.ops_per_s.mean()) > 1.1 * float(b.ops_per_s.mean())
    s = nl.futex.simulate(mine, seeds=2, method="simulation", ops=600)
    assert abs(float(s.ops_per_s.mean() / a.ops_per_s.mean()) - 1) < 0.08
    # the scalar reference simulator runs the same routing with the mode's own bucket homes
    small = nl.futex.perf_bench_hash("2s-ivb-40", threads=6, futexes=8, hashsize=4, mode=PAGE_NODE)
    seeds = [1, 2]
    rts = [route(small, sd) for sd in seeds]
    vec = simulate(network(rts), seeds, ops=1200, warmup=100)
    x_vec = np.bincount(vec["thr_point"], weights=vec["rate"])
    x_ref = np.array([sum(ref.simulate(rt, sd, ops=1200, warmup=100)) for rt, sd in zip(rts, seeds)])
    assert abs(x_vec.mean() / x_ref.mean() - 1) < 0.06


def test_user_mode_scalar_reference_routes_like_the_vectorised_code():
    lay = nl.futex.hash.HashLayout(PAGE_NODE, 2, 64)
    # with a node (FUTEX2_NUMA) the mode keeps it, without one the memory's node decides; the
    # hash's low bits are the index
    for hg, numa, nw, mem in [(12345, True, 1, 0), (99, True, 0, 1), (4321, False, -1, 1), (77, False, -1, 0)]:
        node = nw if numa else -1
        got = nl.futex.hash.futex_bucket(lay, h_global=[hg], h_private=[0], node=[node], proc=[0],
                                         private=[True], memory_node=[mem])
        want = ref.futex_hash(mode=PAGE_NODE, nodes=2, global_size=64, private_slots=0, private_offset=128,
                              h_global=hg, h_private=0, numa=numa, node_word=nw, mpol=False, mpol_node=-1,
                              cpu_node=mem, private=True, squash=False)
        assert int(got[0]) == want == (nw if numa else mem) * 64 + hg % 64
    assert ref.bucket_home(70, mode=PAGE_NODE, nodes=2, global_size=64, private_slots=(), private_home=(),
                           classic_home="interleave") == 1


def test_user_private_size_rule_and_what_buckets_means():
    wide = WidePrivateHash()
    w = nl.futex.perf_bench_hash("2s-128", threads=100, futexes=16, mode=wide)
    assert w.layout().private_slots == (2048,)          # 16 x 100 -> 2048, past the kernel's 1024 cap
    assert nl.futex.perf_bench_hash("2s-128", threads=100, futexes=16).layout().private_slots == (512,)
    # a mode with private tables: buckets is the prctl's slots; without: the table size
    assert nl.futex.workload_for("perf-bench-futex-hash", "2s-128", mode=wide, buckets=64, threads=4,
                                 futexes=8).layout().private_slots == (64,)
    assert nl.futex.workload_for("perf-bench-futex-hash", "2s-128", mode=PAGE_NODE, buckets=64, threads=4,
                                 futexes=8).layout().global_size == 64
    with pytest.raises(NumalabValueError, match="buckets=64 needs mode='private'"):
        nl.futex.perf_bench_hash("2s-128", threads=4, mode=PAGE_NODE, buckets=64)


def test_user_mode_in_a_sweep_beside_kernel_modes():
    ds = nl.futex.sweep(buckets=[16, 256], mode=["numa", PAGE_NODE, SPEC], threads=[8, 32], seeds=2,
                        topology="2s-ivb-40", futexes=32)
    assert ds.mode.values.tolist() == ["numa", "page-node", SPEC]
    np.testing.assert_array_equal(ds.ops_per_s.sel(mode="page-node").values, ds.ops_per_s.sel(mode=SPEC).values)
    # 32 threads on both nodes: keeping each key on its memory's node beats interleaving the tables
    assert np.all(ds.ops_per_s.sel(mode="page-node", threads=32) > ds.ops_per_s.sel(mode="numa", threads=32))
    one = nl.futex.sweep(buckets=[16, 256], mode=PAGE_NODE, threads=32, seeds=2, topology="2s-ivb-40", futexes=32)
    np.testing.assert_array_equal(one.ops_per_s.values, ds.ops_per_s.sel(mode="page-node", threads=32).values)
    with pytest.raises(NumalabValueError, match="repeat"):
        nl.futex.sweep(buckets=[16], mode=[PAGE_NODE, PAGE_NODE], threads=4, seeds=1, topology="2s-ivb-40")


def test_a_registered_mode_is_known_by_its_name():
    mode = nl.futex.register_mode(WidePrivateHash(name="private-16x-registered"))
    assert "private-16x-registered" in nl.futex.mode_names()
    assert nl.futex.hash_mode("private-16x-registered") is mode
    w = nl.futex.perf_bench_hash("2s-ivb-40", threads=4, futexes=8, mode="private-16x-registered")
    assert w.mode is mode and w.layout().private_slots == (64,)


def test_user_mode_in_nl_sweep_by_spec():
    grid = {"mode": ["numa", SPEC], "buckets": [64], "threads": [16], "topology": ["2s-ivb-40"], "futexes": [32]}
    ds = nl.sweep(grid, seeds=[0, 1], cache=False, progress=False, workers=1, kind="futex")
    assert ds.mode.values.tolist() == ["numa", SPEC]
    want = nl.futex.simulate(nl.futex.perf_bench_hash("2s-ivb-40", threads=16, futexes=32, hashsize=64,
                                                      mode=PAGE_NODE), seeds=[1])
    got = ds.ops_per_s.sel(mode=SPEC, seed=1).values.reshape(-1)[0]
    assert got == float(want.ops_per_s.values[0])
    with pytest.raises(NumalabValueError, match="has no 'NOPE'"):
        nl.sweep({**grid, "mode": ["_futex_modes:NOPE"]}, seeds=1, cache=False, progress=False, workers=1,
                 kind="futex")


def test_user_mode_in_the_cli(capsys):
    rc = main(["futex", "hash", "-t", "8", "-f", "16", "-s", "--mode", SPEC, "--topology", "2s-ivb-40"])
    out, _ = capsys.readouterr()
    assert rc == 0
    avg = int(re.search(r"^Averaged (\d+) operations/sec", out, re.M).group(1))
    w = nl.futex.perf_bench_hash("2s-ivb-40", threads=8, futexes=16, mode=PAGE_NODE)
    rates = nl.futex.solve_points([w], [0], nl.futex.FutexCosts(), "mva", 400, "exponential")["thread_rate"][0]
    assert avg == int(np.floor(rates).mean())
    assert "Futex hashing: global hash" in out                 # no private tables, the prctl exists
    rc = main(["futex", "sweep", "--buckets", "16,256", "--mode", f"numa,{SPEC}", "--threads", "32",
               "--topology", "2s-ivb-40", "--futexes", "32", "--seeds", "2"])
    out, _ = capsys.readouterr()
    assert rc == 0 and SPEC in out.splitlines()[1]
    rc = main(["futex", "hash", "-t", "4", "--mode", "_futex_modes:NOPE"])
    _, err = capsys.readouterr()
    assert rc != 0 and "has no 'NOPE'" in err


def test_user_mode_in_calibrate_and_predict():
    rows = [dict(mode=SPEC, threads=t, buckets=b, ops_per_s_per_thread=1.0) for t, b in ((8, 16), (32, 64))]
    topo = nl.Topology.preset("2s-ivb-40")
    pred = nl.futex.predict(rows, topo, seeds=2, futexes=32)
    want = [float(nl.futex.simulate(nl.futex.perf_bench_hash(topo, threads=t, futexes=32, hashsize=b,
                                                              mode=PAGE_NODE), seeds=2).ops_per_s_per_thread.mean())
            for t, b in ((8, 16), (32, 64))]
    np.testing.assert_allclose(pred, want, rtol=1e-6)

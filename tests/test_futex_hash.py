"""Futex key -> bucket mapping: table sizes, node selection, squash, private sizing."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numalab.errors import NumalabValueError
from numalab.futex.hash import (
    HashLayout, classic_hashsize, futex_bucket, key_hashes, node_hashsize,
    private_default_slots, resolve_node,
)
from numalab.futex.workloads import futex_numa, perf_bench_hash, route, together
from numalab.reference import futex as ref
from numalab.topology import Topology


def topo(ncpus, nodes):
    return Topology(nodes=nodes, cpus_per_node=ncpus // nodes, smt=1)


# spec §1.1 examples: 4 CPUs -> 1024, 32 -> 8192, 144 -> 65536, 256 -> 65536
@pytest.mark.parametrize("ncpus,size", [(4, 1024), (32, 8192), (144, 65536), (256, 65536), (40, 16384)])
def test_classic_table_size(ncpus, size):
    assert classic_hashsize(topo(ncpus, 1)) == size
    assert classic_hashsize(topo(ncpus, 1), base_small=True) == 16


# spec §2.1: 256 CPUs on 2 nodes -> 2 x 32768; the max(4, ...) floor
@pytest.mark.parametrize("ncpus,nodes,size", [(256, 2, 32768), (144, 4, 16384), (40, 2, 8192), (2, 2, 256)])
def test_per_node_table_size(ncpus, nodes, size):
    assert node_hashsize(topo(ncpus, nodes)) == size


# spec §4.2: 32 CPUs -> up to 128; 144 CPUs -> up to 1024 (576 rounded); 256 -> up to 1024; >= 16
@pytest.mark.parametrize("ncpus,nodes,threads,slots", [
    (32, 2, 1000, 128), (144, 4, 1000, 1024), (256, 2, 1024, 1024), (256, 2, 1, 16), (256, 2, 5, 32),
    (32, 2, 28, 128), (32, 2, 14, 64),
])
def test_private_default_size_rule(ncpus, nodes, threads, slots):
    assert private_default_slots(threads, topo(ncpus, nodes)) == slots


def test_all_sizes_are_powers_of_two():
    for ncpus in range(1, 300, 7):
        for nodes in (1, 2, 4):
            if ncpus % nodes:
                continue
            t = topo(ncpus, nodes)
            for s in (classic_hashsize(t), node_hashsize(t), private_default_slots(ncpus, t)):
                assert s & (s - 1) == 0 and s >= 1


def test_numa_node_word_selects_that_nodes_table():
    lay = HashLayout("numa", 2, 1024)
    h = np.arange(4000, dtype=np.uint32) * np.uint32(2654435761)
    for n in (0, 1):
        b = futex_bucket(lay, h_global=h, h_private=h, node=np.full(h.size, n), proc=np.zeros(h.size, int),
                         private=np.ones(h.size, bool))
        assert np.all(b // 1024 == n)
        assert np.array_equal(b % 1024, h.astype(np.int64) & 1023)


def test_non_numa_futexes_interleave_by_upper_hash_bits():
    lay = HashLayout("numa", 4, 256)
    h = np.random.default_rng(1).integers(0, 2**32, 20000, dtype=np.uint32)
    b = futex_bucket(lay, h_global=h, h_private=h, node=np.full(h.size, -1), proc=np.zeros(h.size, int),
                     private=np.ones(h.size, bool))
    assert np.array_equal(b // 256, (h.astype(np.int64) >> 8) % 4)
    assert np.all(np.bincount(b // 256, minlength=4) > 4500)  # roughly uniform over nodes


def test_first_touch_mpol_and_numa_resolution():
    # -N (node word -1): the toucher's node; -N1: 1; MPOL alone: policy node; MPOL -1 + NUMA: local
    got = resolve_node(numa=[True, True, False, True, False], node_word=[-1, 1, -1, -1, -1],
                       mpol=[False, False, True, True, False], mpol_node=[-1, -1, 1, -1, -1],
                       cpu_node=[0, 0, 0, 1, 1])
    assert got.tolist() == [0, 1, 1, 1, -1]


def test_squash_one_bucket_per_node_and_explicit_node_bypasses_private_hash():
    lay = HashLayout("private", 2, 512, private_slots=(64,), squash=True, private_home=(0,))
    h = np.random.default_rng(2).integers(0, 2**32, 1000, dtype=np.uint32)
    node = np.where(np.arange(1000) % 2 == 0, 0, 1)
    b = futex_bucket(lay, h_global=h, h_private=h, node=node, proc=np.zeros(1000, int), private=np.ones(1000, bool))
    assert set(b.tolist()) == {0, 512}  # index 0 of table[0] and table[1], never the private table
    b2 = futex_bucket(lay, h_global=h, h_private=h, node=np.full(1000, -1), proc=np.zeros(1000, int),
                      private=np.ones(1000, bool))
    assert set(b2.tolist()) == {lay.n_global}  # private table, squashed to its bucket 0


def test_shared_keys_skip_private_hash_and_zero_slots_mean_global():
    w = perf_bench_hash("2s-ivb-40", threads=4, futexes=64, buckets=64, shared=True)
    rt = route(w, 0)
    assert not rt.thread_private.any() and rt.thread_buckets.max() < rt.layout.n_global
    w0 = perf_bench_hash("2s-ivb-40", threads=4, futexes=64, buckets=0)
    assert not route(w0, 0).thread_private.any()
    wp = perf_bench_hash("2s-ivb-40", threads=4, futexes=64, buckets=64)
    rp = route(wp, 0)
    assert rp.thread_private.all()
    assert rp.thread_buckets.min() >= rp.layout.n_global and rp.thread_buckets.max() < rp.layout.n_global + 64


def test_futex_numa_lock_lands_in_its_node_table_per_process():
    a = futex_numa("2s-ivb-40", contenders=3, threads=1, numa=True, node=0, cpu_node=0, squash=True)
    b = futex_numa("2s-ivb-40", contenders=3, threads=1, numa=True, node=1, cpu_node=1, squash=True)
    c = futex_numa("2s-ivb-40", contenders=3, threads=1, numa=True, node=-1, cpu_node=1, squash=True)
    S = node_hashsize(Topology.preset("2s-ivb-40"))
    rt = route(together(a, b, c), 3)
    per_proc = [set(rt.thread_buckets[rt.workload.thread_proc == p, 0].tolist()) for p in range(3)]
    assert per_proc == [{0}, {S}, {S}]  # -N1 and first touch on node 1 share node 1's bucket 0


def test_jhash2_private_hash_ignores_mm():
    rng = np.random.default_rng(0)
    word = np.array([0x7F0000001000, 0x7F0000001000], dtype=np.uint64)
    ptr = np.array([0xFFFF888000001000, 0xFFFF888000002000], dtype=np.uint64)
    g, p = key_hashes(2, rng, hash="jhash2", ptr=ptr, word=word, offset=np.array([8, 8]))
    assert p[0] == p[1] and g[0] != g[1]
    g2, _ = key_hashes(2, rng, hash="jhash2", ptr=ptr, word=word, offset=np.array([8, 12]))
    assert g2[0] == g[0] and g2[1] != g[1]  # offset is the initval


def test_bad_table_sizes_name_the_parameter():
    with pytest.raises(NumalabValueError, match="buckets=6 is not a power of two"):
        perf_bench_hash("2s-128", threads=4, buckets=6)
    with pytest.raises(NumalabValueError, match="buckets=1"):
        perf_bench_hash("2s-128", threads=4, buckets=1)  # EINVAL in the kernel too
    with pytest.raises(NumalabValueError, match="hashsize=1000"):
        perf_bench_hash("2s-128", threads=4, mode="numa", hashsize=1000)
    with pytest.raises(NumalabValueError, match="buckets=64 needs mode='private'"):
        perf_bench_hash("2s-128", threads=4, mode="numa", buckets=64)


@settings(max_examples=300)
@given(
    mode=st.sampled_from(["classic", "numa", "private"]),
    nodes=st.sampled_from([1, 2, 4, 8]),
    log_s=st.integers(0, 16), log_p=st.integers(0, 12),
    hg=st.integers(0, 2**32 - 1), hp=st.integers(0, 2**32 - 1),
    numa=st.booleans(), node_word=st.integers(-1, 7), mpol=st.booleans(), mpol_node=st.integers(-1, 7),
    cpu_node=st.integers(0, 7), private=st.booleans(), squash=st.booleans(),
)
def test_vectorised_mapping_matches_scalar_reference(mode, nodes, log_s, log_p, hg, hp, numa, node_word,
                                                     mpol, mpol_node, cpu_node, private, squash):
    node_word, mpol_node, cpu_node = node_word % nodes if node_word >= 0 else -1, \
        mpol_node % nodes if mpol_node >= 0 else -1, cpu_node % nodes
    slots = 0 if log_p == 0 else 2 ** log_p
    lay = HashLayout(mode, nodes, 2 ** log_s, private_slots=(slots,), squash=squash, private_home=(0,))
    node = resolve_node(numa=numa, node_word=node_word, mpol=mpol, mpol_node=mpol_node, cpu_node=cpu_node)
    got = futex_bucket(lay, h_global=np.array([hg], np.uint32), h_private=np.array([hp], np.uint32),
                       node=np.atleast_1d(node), proc=np.array([0]), private=np.array([private]))
    want = ref.futex_hash(mode=mode, nodes=nodes, global_size=2 ** log_s, private_slots=slots,
                          private_offset=lay.n_global, h_global=hg, h_private=hp, numa=numa,
                          node_word=node_word, mpol=mpol, mpol_node=mpol_node, cpu_node=cpu_node,
                          private=private, squash=squash)
    assert int(got[0]) == want


@settings(max_examples=300)
@given(
    mode=st.sampled_from(["classic", "numa", "private"]),
    nodes=st.sampled_from([1, 2, 4, 8]),
    log_s=st.integers(0, 12),
    slots=st.lists(st.sampled_from([0, 2, 16, 256]), min_size=1, max_size=3),
    homes=st.lists(st.integers(0, 7), min_size=3, max_size=3),
    classic_home=st.sampled_from(["interleave", "node0"]),
    frac=st.floats(0.0, 1.0, exclude_max=True),
)
def test_bucket_home_matches_scalar_reference(mode, nodes, log_s, slots, homes, classic_home, frac):
    # where each bucket's memory lives (enters the line cost of every handoff)
    lay = HashLayout(mode, nodes, 2 ** log_s, private_slots=tuple(slots), classic_home=classic_home,
                     private_home=tuple(h % nodes for h in homes[: len(slots)]))
    b = int(frac * lay.n_buckets)
    want = ref.bucket_home(b, mode=mode, nodes=nodes, global_size=2 ** log_s, private_slots=lay.private_slots,
                           private_home=lay.private_home, classic_home=classic_home)
    assert int(lay.bucket_home(np.array([b]))[0]) == want
    assert 0 <= want < nodes


def test_jhash2_routing_is_a_function_of_the_seed():
    w = perf_bench_hash("2s-ivb-40", threads=4, futexes=256, buckets=256, hash="jhash2")
    a, b, c = route(w, 0), route(w, 0), route(w, 1)
    assert np.array_equal(a.thread_buckets, b.thread_buckets)
    assert not np.array_equal(a.thread_buckets, c.thread_buckets)  # new mm / ASLR -> new collisions
    # 256 keys of one thread in 256 slots: occupancy like uniform hashing (1 - 1/e ~ 63%)
    occ = np.mean([np.unique(a.thread_buckets[t]).size / 256 for t in range(4)])
    assert 0.55 < occ < 0.72


def test_mpol_futex_goes_to_the_policy_node_table_even_if_private():
    w = futex_numa("2s-ivb-40", contenders=2, threads=0, mpol=True, mpol_node=1, cpu_node=0, mode="private")
    rt = route(w, 0)
    S = rt.layout.global_size
    assert np.all(rt.thread_buckets[:, 0] // S == 1) and not rt.thread_private.any()

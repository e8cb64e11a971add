"""engine/memory.py alone: first touch, the counts of a placement, folios moved between any
nodes (a memory-only node included) with the counts in step, and each node's room."""

import numpy as np
import pytest

import numalab as nl
from numalab.engine import make_batch, memory, observe
from numalab.topology import Topology

MiB = 1 << 20
#: 2 sockets of 2 CPUs plus a CPU-less memory node attached to socket 0, and a memoryless socket
CXL = Topology(nodes=3, cpus_per_node=[2, 2, 0], smt=[2, 2, 1], mem_per_node_GiB=[1.0, 1.0, 2.0],
               distance=[[10, 21, 14], [21, 10, 24], [14, 24, 10]], name="cxl")
MEMORYLESS = Topology(nodes=2, cpus_per_node=[2, 2], mem_per_node_GiB=[1.0, 0.0], name="memoryless")


def batch(topo=CXL, seeds=(0, 1), init_node=0, rates=((1.0, 0.0), (0.0, 1.0))):
    wl = nl.workloads.from_access_matrix(np.array(rates), topology=topo, chunk_bytes=4 * MiB, loops=100,
                                         init_node=init_node)
    return make_batch(wl, nl.Policy.profile("6.12"), list(seeds)), wl


def recount(b):
    """The counts of the current placement, from scratch."""
    return memory.counts(b.lay, b.regions.node)


def test_capacity_is_each_nodes_memory_in_base_pages():
    assert memory.capacity_pages(CXL).tolist() == [262144, 262144, 524288]
    assert memory.capacity_pages(MEMORYLESS).tolist() == [262144, 0]
    b, _ = batch()
    assert np.array_equal(b.lay.node_cap, memory.capacity_pages(CXL))


def test_counts_of_the_start_agree_with_the_regions():
    b, wl = batch()
    c = recount(b)
    for k in ("cls_node", "node_pages", "total_pages"):
        assert np.array_equal(getattr(b.regions, k), c[k]), k
    assert (b.regions.node_pages.sum(axis=1) == wl.region_present.sum()).all()


def test_migrate_moves_folios_between_any_nodes_and_keeps_the_counts():
    b, wl = batch()
    buf = np.flatnonzero(np.array(wl.vma_kind)[wl.region_vma] == "buffer")
    r = np.array([0, 0, 1])
    q = buf[[0, 1, 0]]
    before = b.regions.node[r, q].copy()
    b.rates.dirty[:] = False
    src = memory.migrate(b, r, q, np.array([2, 1, 2]))     # two to the CPU-less node, one to socket 1
    assert np.array_equal(src, before)
    assert b.regions.node[0, buf[0]] == 2 and b.regions.node[0, buf[1]] == 1 and b.regions.node[1, buf[0]] == 2
    assert b.rates.dirty.all()
    c = recount(b)
    for k in ("cls_node", "node_pages", "total_pages"):
        assert np.array_equal(getattr(b.regions, k), c[k]), k
    assert b.regions.node_pages[0, 2] == wl.region_present[buf[0]]
    observe.check_invariants(b)
    # and back again
    memory.migrate(b, r, q, before)
    assert np.array_equal(b.regions.node_pages, recount(b)["node_pages"])


def test_node_free_is_capacity_minus_resident():
    b, _ = batch()
    free = memory.node_free(b)
    assert np.array_equal(free, b.lay.node_cap[None, :] - b.regions.node_pages)
    assert (free[:, 2] == b.lay.node_cap[2]).all()          # nothing touches the CPU-less node first


def test_first_touch_lands_on_the_nearest_node_with_memory():
    # init_node=-1: each chunk on its heaviest writer's node; the writers on node 1 (no memory)
    # touch node 0's memory
    b, wl = batch(MEMORYLESS, init_node=-1)
    assert (b.regions.node == 0).all()
    assert (b.regions.node_pages[:, 1] == 0).all()


def test_first_touch_of_a_binding_goes_where_it_says():
    b, wl = batch(init_node=2)
    buf = np.array(wl.vma_kind)[wl.region_vma] == "buffer"
    assert (b.regions.node[:, buf] == 2).all()
    assert not np.isin(b.tasks.node, [2]).any()


def test_the_fault_path_asks_memory_for_room_and_moves_through_it(monkeypatch):
    """migrate_balanced_pgdat's room is memory.node_free and the folio move is memory.migrate:
    with no room anywhere the fault fails and nothing moves; with room it moves through migrate."""
    from test_phase_faults import BUF, _fault

    from _phase_helpers import tiny_batch

    b, wl = tiny_batch()
    monkeypatch.setattr(memory, "node_free", lambda b: np.zeros((b.R, b.lay.N), dtype=np.int64))
    _fault(b, [BUF[0]])
    assert b.cnt["numa_migrate_fail"][0] == 1 and b.regions.node[0, BUF[0]] == 0
    monkeypatch.undo()
    moved = []
    real = memory.migrate
    monkeypatch.setattr(memory, "migrate", lambda b, r, q, dst: moved.append((r.tolist(), q.tolist())) or real(b, r, q, dst))
    b2, _ = tiny_batch()
    _fault(b2, [BUF[0]])
    assert moved == [([0], [BUF[0]])] and b2.regions.node[0, BUF[0]] == 1


@pytest.mark.parametrize("topo", [CXL, MEMORYLESS])
def test_runs_on_per_node_machines_conserve_pages(topo):
    wl = nl.workloads.from_access_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), topology=topo,
                                         chunk_bytes=4 * MiB, loops=3000, init_node=0)
    b = make_batch(wl, nl.Policy.profile("6.12"), [3, 4], max_time=6.0, check_invariants=True).run()
    assert np.array_equal(b.regions.node_pages, recount(b)["node_pages"])
    # no binding names the CPU-less node and a hinting fault never targets it; nothing fits a
    # memoryless node
    assert (b.regions.node_pages[:, ~topo.has_cpu | ~topo.has_memory] == 0).all()

"""Where perf bench's pinned threads run: the machine's CPU numbering (Topology.cpu_numbering).

perf bench futex hash pins thread i to the i-th online CPU. Which node's core or SMT sibling that
is depends on how the machine numbers its CPUs; x86 firmware lists the first hardware thread of
every core of every node first (lscpu: node0 0-31,64-95 on 2 x 32 cores)."""

from pathlib import Path

import numpy as np
import pytest

import numalab as nl
from numalab.errors import NumalabValueError
from numalab.futex.costs import core_load
from numalab.futex.workloads import perf_bench_hash
from numalab.machine import CPU_NUMBERINGS, cpu_order, read_host

FIXTURES = Path(__file__).parent / "fixtures" / "sysfs"
#: 2 nodes x 4 cores x 2 threads: model CPUs 0-3 node 0's cores, 4-7 their siblings, 8-15 node 1
SMALL = dict(nodes=2, cpus_per_node=8, smt=2)


@pytest.mark.parametrize("numbering,expect", [
    ("cores-first", [0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15]),
    ("node", list(range(16))),
    ("siblings", [0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15]),
])
def test_each_numbering_lists_the_models_cpus_in_the_machines_order(numbering, expect):
    t = nl.Topology(**SMALL, cpu_numbering=numbering)
    assert t.linux_cpu_index.tolist() == expect
    assert sorted(expect) == list(range(t.ncpus))               # a permutation: every CPU once
    assert nl.Topology(**SMALL).linux_cpu_index.tolist() == \
        nl.Topology(**SMALL, cpu_numbering="cores-first").linux_cpu_index.tolist()   # the default


def test_numberings_with_a_memory_only_node_and_uneven_smt():
    # node 2 has no CPUs; node 1 no SMT: cores-first lists node 0's and node 1's cores, then node 0's siblings
    order = cpu_order([4, 2, 0], [2, 1, 1], "cores-first")
    assert order == [0, 1, 4, 5, 2, 3]
    assert sorted(cpu_order([4, 2, 0], [2, 1, 1], "siblings")) == list(range(6))


def test_perf_bench_pins_half_the_cpus_one_per_core_on_every_node():
    """T = ncpus/2 on cores-first: one thread on every core of both nodes, none sharing a core;
    numbered node by node: node 0's cores and their siblings, node 1 idle."""
    t = nl.Topology.preset("2s-128")
    w = perf_bench_hash(t, threads=64, futexes=8, buckets=0)
    nodes = t.cpu_node[w.thread_cpu]
    assert np.bincount(nodes, minlength=2).tolist() == [32, 32]
    assert (core_load(t, w.thread_cpu, np.ones(64, bool)) == 1).all()
    node = nl.Topology.preset("2s-128", cpu_numbering="node")
    w_node = perf_bench_hash(node, threads=64, futexes=8, buckets=0)
    assert np.bincount(node.cpu_node[w_node.thread_cpu], minlength=2).tolist() == [64, 0]
    assert (core_load(node, w_node.thread_cpu, np.ones(64, bool)) == 2).all()
    # every CPU busy: the same threads on the same CPUs, whichever the numbering
    full = perf_bench_hash(t, threads=128, futexes=8, buckets=0).thread_cpu
    assert sorted(full.tolist()) == list(range(128))


def test_the_placement_changes_what_a_thread_achieves():
    """Half the CPUs: alone on their cores (cores-first) the threads run faster per thread than
    paired with SMT siblings on one node (node by node); on every CPU the same CPUs are busy and
    the two agree up to which thread's futexes sit on which CPU."""
    def per_thread(numbering, threads):
        t = nl.Topology.preset("2s-ivb-40", cpu_numbering=numbering)
        w = perf_bench_hash(t, threads=threads, futexes=64, buckets=0, refcount="immutable")
        return float(nl.futex.simulate(w, seeds=1).ops_per_s_per_thread.mean())    # the MVA

    assert per_thread("cores-first", 20) > 1.2 * per_thread("node", 20)
    assert per_thread("cores-first", 40) == pytest.approx(per_thread("node", 40), rel=0.01)


def test_the_published_e5_2650_rows_keep_their_numbering():
    t = nl.data.futex_topology()
    assert (t.nodes, t.cpus_per_node, t.cpu_numbering) == (2, 16, "node")
    w = perf_bench_hash(t, threads=14, futexes=8, buckets=0)
    assert (t.cpu_node[w.thread_cpu] == 0).all()                 # "T = 14, all on node 0"
    assert t.provenance()["cpu_numbering"].kind == "measurement"


@pytest.mark.parametrize("fixture,numbering", [("two-node", "cores-first"), ("cxl", "siblings"),
                                               ("snc4", "cores-first"), ("offline", "siblings")])
def test_from_host_reads_the_numbering_from_sysfs(fixture, numbering):
    data = read_host(FIXTURES / fixture, lscpu=False)
    assert data["topology"]["cpu_numbering"] == numbering
    assert data["provenance"]["cpu_numbering"]["kind"] == "measurement"
    t = nl.Topology.from_host(FIXTURES / fixture, lscpu=False)
    # the i-th online CPU of each node's cpulist is the model CPU the numbering says
    ids = sorted(c for cs in data["host"]["node_cpus"].values() for c in cs)
    for node, cpus in data["host"]["node_cpus"].items():
        n = data["host"]["node_ids"].index(int(node))
        assert all(t.cpu_node[t.linux_cpu_index[ids.index(c)]] == n for c in cpus)


def test_bad_numbering_is_refused_by_name_and_the_field_round_trips(tmp_path):
    with pytest.raises(NumalabValueError, match="cpu_numbering"):
        nl.Topology(**SMALL, cpu_numbering="interleaved")
    t = nl.Topology(**SMALL, cpu_numbering="siblings")
    path = tmp_path / "t.json"
    t.save(path)
    assert nl.Topology.load(path).cpu_numbering == "siblings"
    assert "cpu_numbering" not in nl.Topology(**SMALL).to_dict()["topology"]     # not given: left out
    assert nl.Topology(**SMALL).provenance()["cpu_numbering"].kind == "assumed"
    assert set(CPU_NUMBERINGS) == {"cores-first", "node", "siblings"}

"""Topology.from_host on fixture sysfs trees (tests/fixtures/sysfs/: 2 nodes; Intel SNC 4 nodes;
2 nodes plus a CPU-less CXL node; offline CPUs; a 1-node VM) and on this machine: every tree
gives a topology file that loads and simulates, and what could not be read is a warning."""

from pathlib import Path

import numpy as np
import pytest

import numalab as nl
from numalab.errors import NumalabValueError
from numalab.machine import node_cpus, parse_cpulist, read_host
from numalab.topology import Topology

FIXTURES = Path(__file__).parent / "fixtures" / "sysfs"
MACHINES = ["two-node", "snc4", "cxl", "offline", "vm1"]
HOST = Path("/sys/devices/system/node")


def test_cpulist_parser():
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("\n") == []
    with pytest.raises(ValueError, match="not a cpulist"):
        parse_cpulist("0-a")


@pytest.mark.parametrize("name, nodes, cpus, smt, mem, dist", [
    ("two-node", 2, 8, 2, 32.0, [[10, 20], [20, 10]]),
    ("snc4", 4, 4, 2, 16.0, [[10, 12, 21, 21], [12, 10, 21, 21], [21, 21, 10, 12], [21, 21, 12, 10]]),
    ("cxl", 3, (4, 4, 0), (2, 2, 1), (64.0, 64.0, 128.0), [[10, 21, 14], [21, 10, 24], [14, 24, 10]]),
    ("offline", 2, (4, 3), (2, 1), 8.0, [[10, 21], [21, 10]]),
    ("vm1", 1, 2, 1, 8.0, [[10]]),
])
def test_fixture_machines(name, nodes, cpus, smt, mem, dist):
    t = Topology.from_host(FIXTURES / name)
    assert (t.nodes, t.cpus_per_node, t.smt, t.mem_per_node_GiB) == (nodes, cpus, smt, mem)
    assert [list(r) for r in t.distance] == dist
    prov = t.provenance()
    for field in ("nodes", "cpus_per_node", "smt", "mem_per_node_GiB", "distance"):
        assert prov[field].kind == "measurement" and "sys/devices/system" in prov[field].source, field


def test_intel_numbering_is_counted_per_node():
    """Intel numbers SMT siblings far apart (node 0: CPUs 0-3 and 8-11); the count and the SMT
    come from each node's cpulist and the thread siblings, not from contiguous numbering."""
    host = read_host(FIXTURES / "two-node")["host"]
    assert host["node_cpus"] == {"0": [0, 1, 2, 3, 8, 9, 10, 11], "1": [4, 5, 6, 7, 12, 13, 14, 15]}
    assert host["model_name"] == "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz"
    assert node_cpus(FIXTURES / "two-node")[1] == [4, 5, 6, 7, 12, 13, 14, 15]


def test_cxl_node_is_memory_only_with_the_firmwares_figures():
    t = Topology.from_host(FIXTURES / "cxl")
    assert t.has_cpu.tolist() == [True, True, False] and t.nearest_cpu_node.tolist() == [0, 1, 0]
    assert t.node_bw_GBps == (230.0, 230.0, 52.0) and t.local_latency_ns == (110.0, 110.0, 250.0)
    assert t.provenance()["node_bw_GBps"].kind == "datasheet" and "HMAT" in t.provenance()["node_bw_GBps"].source
    assert not any("node_bw_GBps" in w for w in t.warnings)


def test_what_could_not_be_read_is_a_warning():
    off = Topology.from_host(FIXTURES / "offline")
    assert any("CPU 7 is offline" in w for w in off.warnings)
    assert any("an SMT sibling is offline" in w for w in off.warnings)
    vm = Topology.from_host(FIXTURES / "vm1")
    assert any("no CPU model name" in w for w in vm.warnings)
    assert any("node_bw_GBps" in w and "numalab probe" in w for w in vm.warnings)
    assert vm.provenance()["node_bw_GBps"].kind == "assumed"


def test_a_broken_tree_says_what_is_missing(tmp_path):
    import shutil

    root = tmp_path / "broken"
    shutil.copytree(FIXTURES / "two-node", root)
    (root / "sys/devices/system/node/node1/meminfo").unlink()
    (root / "sys/devices/system/node/node1/distance").write_text("10\n")
    (root / "sys/devices/system/node/has_cpu").write_text("0\n")
    t = Topology.from_host(root)
    text = " | ".join(t.warnings)
    assert "cannot read /sys/devices/system/node/node1/meminfo" in text
    assert "memory taken as 128 GiB" in text and t.mem_per_node_GiB == (32.0, 128.0)
    assert "distance row" in text and t.distance == ((10, 20), (20, 10))
    assert "has_cpu lists nodes 0 but nodes 0-1 have CPUs" in text
    with pytest.raises(NumalabValueError, match="no NUMA node"):
        Topology.from_host(tmp_path)


@pytest.mark.parametrize("name", MACHINES)
def test_every_fixture_gives_a_file_that_loads_and_simulates(name, tmp_path):
    t = Topology.from_host(FIXTURES / name)
    path = t.save(tmp_path / f"{name}.json")
    back = Topology.load(path)
    assert back == t and back.warnings == t.warnings
    wl = nl.workload("numa02", str(path), threads=min(4, back.ncpus), size_bytes=64 << 20, loops=4)
    ds = nl.simulate(wl, ["6.12"], seeds=[0], max_time=20.0)
    assert np.isfinite(ds.elsp.values).all() and ds.sizes["node"] == t.nodes


@pytest.mark.skipif(not HOST.is_dir(), reason="no /sys/devices/system/node on this machine")
def test_this_machine(tmp_path):
    t = Topology.from_host()
    assert t.ncpus >= 1 and t.mem_total_GiB > 0
    assert t.source and "sys/devices/system" in t.provenance()["cpus_per_node"].source
    path = t.save(tmp_path / "host.json")
    ds = nl.simulate(nl.workload("numa02", Topology.load(path), threads=t.ncpus, size_bytes=32 << 20, loops=2),
                     ["6.12"], seeds=[0], max_time=10.0)
    assert np.isfinite(ds.elsp.values).all()

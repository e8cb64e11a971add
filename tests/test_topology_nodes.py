"""Per-node machines: a Topology whose nodes differ (a CPU-less CXL node, a memoryless node),
the topology file format, the presets as files with a source per field, and the engine and
workloads reading the per-node form."""

import json

import numpy as np
import pytest

import numalab as nl
from numalab.errors import NumalabValueError
from numalab.provenance import KINDS, Provenance
from numalab.topology import FIELDS, PER_NODE, Topology, check_topology

#: 2 sockets of 4 CPUs plus a CXL expander attached to socket 0 (SLIT 14 from it, 24 from socket 1)
CXL = Topology.preset("2s-128").with_memory_node(
    64.0, [14, 24], node_bw_GBps=50.0, link_bw_GBps=50.0, local_latency_ns=200.0, remote_latency_ns=300.0)


def small_cxl(cpus=4):
    return Topology(nodes=3, cpus_per_node=[cpus, cpus, 0], smt=[2, 2, 1], mem_per_node_GiB=[8.0, 8.0, 16.0],
                    distance=[[10, 21, 14], [21, 10, 24], [14, 24, 10]], node_bw_GBps=[100.0, 100.0, 40.0],
                    local_latency_ns=[90.0, 90.0, 180.0], remote_latency_ns=[140.0, 140.0, 260.0], name="small-cxl")


# ------------------------------------------------------------------ the per-node form
def test_scalars_and_equal_per_node_values_are_one_machine():
    a = Topology(nodes=2, cpus_per_node=64, node_bw_GBps=150.0)
    b = Topology(nodes=2, cpus_per_node=[64, 64], node_bw_GBps=(150.0, 150.0))
    assert a == b and hash(a) == hash(b)
    assert b.cpus_per_node == 64 and isinstance(b.cpus_per_node, int)
    assert b.per_node("node_bw_GBps").tolist() == [150.0, 150.0] and b.node_cpus.tolist() == [64, 64]
    assert not b.node_cpus.flags.writeable


def test_memory_only_node_has_memory_and_no_cpus():
    t = CXL
    assert t.nodes == 3 and t.cpus_per_node == (64, 64, 0) and t.ncpus == 128
    assert t.has_cpu.tolist() == [True, True, False] and t.has_memory.all()
    assert t.cpu_nodes.tolist() == [0, 1]
    assert t.nearest_cpu_node.tolist() == [0, 1, 0]            # SLIT 14 to node 0, 24 to node 1
    assert t.local_memory_node.tolist() == [0, 1, 2]
    assert np.bincount(t.cpu_node, minlength=3).tolist() == [64, 64, 0]
    assert t.mem_total_GiB == 320.0
    # the CXL node's memory is slow from everywhere: its column of the latency matrix
    lat = t.latency_ns
    assert lat[0, 0] == 90.0 and lat[0, 2] > lat[0, 1] and lat[1, 2] == 300.0


def test_memoryless_node_touches_its_nearest_memory():
    t = Topology(nodes=3, cpus_per_node=[4, 4, 4], mem_per_node_GiB=[8.0, 8.0, 0.0],
                 distance=[[10, 20, 12], [20, 10, 20], [12, 20, 10]])
    assert t.has_memory.tolist() == [True, True, False]
    assert t.local_memory_node.tolist() == [0, 1, 0]


def test_uniform_refuses_a_field_that_differs_between_nodes():
    assert Topology.preset("2s-128").uniform("cpus_per_node") == 64
    with pytest.raises(NumalabValueError, match=r"cpus_per_node=\(64, 64, 0\)"):
        CXL.uniform("cpus_per_node")
    with pytest.raises(NumalabValueError, match="per_node"):
        CXL.cores_per_node
    with pytest.raises(NumalabValueError, match="field"):
        CXL.per_node("nodes")


@pytest.mark.parametrize("kwargs, match", [
    (dict(nodes=2, cpus_per_node=[4]), "cpus_per_node has 1 values; allowed: one number, or 2"),
    (dict(nodes=2, cpus_per_node=[4, -1]), r"cpus_per_node\[1\]=-1"),
    (dict(nodes=2, cpus_per_node=[0, 0]), "gives no CPU"),
    (dict(nodes=2, cpus_per_node=[4, 3], smt=2), r"multiple of smt=2 on every node \(node 1"),
    (dict(nodes=2, cpus_per_node=4, mem_per_node_GiB=[0.0, 0.0]), "gives no memory"),
    (dict(nodes=2, cpus_per_node=[4, 0], mem_per_node_GiB=[8.0, 0.0]), "node 1 has neither CPUs nor memory"),
    (dict(nodes=2, cpus_per_node=4, node_bw_GBps=[100.0, 0.0]), r"node_bw_GBps\[1\]=0.0"),
    (dict(nodes=2, cpus_per_node=4, local_latency_ns=[90.0, 200.0], remote_latency_ns=150.0), r"node 1"),
    (dict(nodes=2, cpus_per_node=4, thread_bw_GBps="fast"), "thread_bw_GBps='fast' must be a finite number"),
    (dict(nodes=2, cpus_per_node=[4, True]), r"cpus_per_node\[1\]=True must be an integer"),
])
def test_bad_per_node_values_name_the_field_and_node(kwargs, match):
    with pytest.raises(NumalabValueError, match=match):
        Topology(**kwargs)


def test_attrs_of_a_per_node_topology_are_netcdf_safe():
    attrs = CXL.to_attrs()
    assert attrs["topology_cpus_per_node"] == "64,64,0" and attrs["topology_node_bw_GBps"] == "150.0,150.0,50.0"
    assert attrs["topology_distance"] == "10,20,14 20,10,24 14,24,10"
    assert all(isinstance(v, (str, int, float)) for v in attrs.values())


def test_preset_overrides_take_per_node_values():
    t = Topology.preset("2s-128", node_bw_GBps=[150.0, 60.0])
    assert t.node_bw_GBps == (150.0, 60.0) and t.name == "2s-128+custom"
    assert t.provenance()["node_bw_GBps"].kind == "assumed"
    assert t.provenance()["link_bw_GBps"] == Topology.preset("2s-128").provenance()["link_bw_GBps"]
    with pytest.raises(NumalabValueError, match="override memory_GiB= is not a topology field"):
        Topology.preset("2s-128", memory_GiB=4)
    # another node count keeps the default SLIT of a preset that has it, and refuses an explicit one
    assert Topology.preset("2s-128", nodes=8).distance_matrix.shape == (8, 8)
    with pytest.raises(NumalabValueError, match=r"distance has shape \(4, 4\); allowed: \(2, 2\)"):
        Topology.preset("4s-144", nodes=2)


# ------------------------------------------------------------------ presets are files with sources
@pytest.mark.parametrize("name", Topology.presets())
def test_every_preset_field_has_its_provenance(name):
    prov = Topology.preset(name).provenance()
    assert set(prov) == set(FIELDS)
    for field, p in prov.items():
        assert isinstance(p, Provenance) and p.kind in KINDS and p.source.strip(), (name, field)
    # the uncertain figures carry a plausible band with its source
    for field in ("local_latency_ns", "remote_latency_ns", "node_bw_GBps", "link_bw_GBps", "thread_bw_GBps",
                  "line_same_node_ns", "line_remote_ns"):
        assert prov[field].band is not None and prov[field].band_source, (name, field)
        lo, hi = prov[field].band
        assert 0 < lo <= hi


def test_the_robots_public_figures_are_in_the_bands_not_the_values():
    """machine-measurements: inputs for bands, not targets -- the Cascade Lake core's published
    memset rate is inside the band of 2s-88-csl's thread_bw_GBps, whose value stays 12."""
    csl = Topology.preset("lkp-csl-2sp9")
    lo, hi = csl.provenance()["thread_bw_GBps"].band
    assert lo <= 6.51 <= hi and csl.thread_bw_GBps == 12.0
    spr = Topology.preset("lkp-spr-r02").provenance()["node_bw_GBps"]
    assert spr.band[0] <= 177.0 and "My_Stream_Benchmark" in spr.band_source


def test_presets_load_from_their_files(tmp_path):
    from numalab.topology import _preset_dir

    for path in sorted(_preset_dir().glob("*.json")):
        t = Topology.load(path)
        assert t == Topology.preset(t.name) and t.provenance() == Topology.preset(t.name).provenance()


# ------------------------------------------------------------------ the file format
def test_save_load_round_trip(tmp_path):
    p = CXL.save(tmp_path / "cxl.json")
    t = Topology.load(p)
    assert t == CXL and t.provenance() == CXL.provenance() and t.source == CXL.source
    data = json.loads(p.read_text())
    assert data["format"] == "numalab-topology/1" and data["topology"]["cpus_per_node"] == [64, 64, 0]
    # rows of the SLIT and per-node values are one line each
    assert '[10, 20, 14]' in p.read_text()


def _write(tmp_path, text):
    p = tmp_path / "bad.json"
    p.write_text(text)
    return p


@pytest.mark.parametrize("edit, match", [
    (lambda d: d["topology"].update(cpus_per_node=[64, -2, 0]), r"cpus_per_node\[1\]=-2"),
    (lambda d: d["topology"].pop("nodes"), "field 'nodes' is missing"),
    (lambda d: d["topology"].update(sockets=2), "field 'sockets' is not known"),
    (lambda d: d["topology"].update(distance=[[10, 20], [20, 10]]), "distance has shape"),
    (lambda d: d.update(format="numalab-topology/9"), "format='numalab-topology/9'"),
    (lambda d: d["provenance"]["node_bw_GBps"].update(kind="guess"), r"provenance\['node_bw_GBps'\]: provenance kind"),
    (lambda d: d["provenance"]["node_bw_GBps"].update(band=[50, 10]), "lo must be <= hi"),
    (lambda d: d.update(warnings="none"), "warnings must be a list"),
])
def test_a_bad_file_is_refused_naming_the_field(tmp_path, edit, match):
    data = json.loads(json.dumps(CXL.to_dict()))
    edit(data)
    p = _write(tmp_path, json.dumps(data))
    with pytest.raises(NumalabValueError, match=match) as err:
        Topology.load(p)
    assert "bad.json" in str(err.value)


def test_a_truncated_or_missing_file_is_one_clear_error(tmp_path):
    text = json.dumps(CXL.to_dict())
    with pytest.raises(NumalabValueError, match="not JSON"):
        Topology.load(_write(tmp_path, text[: len(text) // 2]))
    with pytest.raises(NumalabValueError, match="must be a JSON object"):
        Topology.load(_write(tmp_path, "[1, 2]"))
    with pytest.raises(NumalabValueError, match="path"):
        Topology.load(tmp_path / "nope.json")


def test_coerce_and_check_topology_accept_a_file(tmp_path):
    p = CXL.save(tmp_path / "m.json")
    assert Topology.coerce(str(p)) == CXL and Topology.coerce(p) == CXL
    key = check_topology("topology", str(p))
    path, _, digest = key.partition("#")
    assert path == str(p.resolve()) and len(digest) == 12
    assert Topology.coerce(key) == CXL
    assert check_topology("topology", "lkp-icl-2sp6") == "lkp-icl-2sp6"
    with pytest.raises(NumalabValueError, match="did you mean '2s-128'"):
        check_topology("topology", "2s-129")
    # an edited file is a new key, and a stale key is refused
    p.write_text(p.read_text().replace('"name": "2s-128+memory-node"', '"name": "edited"'))
    assert check_topology("topology", str(p)) != key
    with pytest.raises(NumalabValueError, match="changed since"):
        Topology.coerce(key)


def test_per_node_fields_are_the_documented_ones():
    assert set(PER_NODE) <= set(FIELDS)
    doc = " ".join(Topology.__doc__.split())
    for name in FIELDS:
        assert name in doc, name


# ------------------------------------------------------------------ the engine on a CXL machine
def test_cxl_machine_runs_numa01_pages_on_the_memory_node_never_a_thread():
    """numa01 with its init bound to the CXL node (init_node=2): the memory-only node holds
    pages, no thread ever runs there, no task prefers it, and hinting-fault migrations move
    pages off it to the faulting CPUs' nodes (numa_balancing=1 never targets a CPU-less node)."""
    t = small_cxl()
    wl = nl.workload("numa01", t, threads=4, size_bytes=256 << 20, loops=20)
    b = nl.engine.make_batch(wl, nl.Policy.profile("6.12"), [0, 1], init_node=2, max_time=30.0)
    start = b.regions.node_pages.copy()
    assert (start[:, 2] > 0.9 * b.regions.total_pages).all()       # the buffer starts on the CXL node
    seen_nodes, preferred = set(), set()
    while not b.outcome.done.all() and b.now < 30.0:
        b.step()
        seen_nodes |= set(np.unique(b.tasks.node).tolist())
        preferred |= set(np.unique(b.numa.numa_preferred_nid).tolist())
    assert 2 not in seen_nodes and seen_nodes <= {0, 1}
    assert 2 not in preferred
    assert (b.cnt["numa_pages_migrated"] > 0).all()
    assert (b.regions.node_pages[:, 2] < start[:, 2]).all()          # pages left the CXL node
    assert (b.regions.node_pages.sum(axis=1) == b.regions.total_pages).all()


def test_cxl_machine_default_numa01_keeps_threads_and_node_b_on_cpu_nodes():
    ds = nl.simulate(nl.workload("numa01", CXL, threads=8, size_bytes=64 << 20, loops=5), ["6.12"],
                     seeds=[0, 1, 2, 3], max_time=20.0)
    pages = ds.pages_node.isel(policy=0).sum("process")
    assert float(pages.sel(node=2).max()) == 0.0       # nothing binds or first-touches there by default
    assert np.isfinite(ds.elsp.values).all()


def test_init_node_without_memory_is_refused():
    t = Topology(nodes=2, cpus_per_node=[4, 4], mem_per_node_GiB=[8.0, 0.0])
    wl = nl.workload("numa02", t, threads=4)
    with pytest.raises(NumalabValueError, match="init_node=1 has no memory"):
        nl.engine.make_batch(wl, nl.Policy.profile("6.12"), [0], init_node=1)


def test_bind_variants_use_the_nodes_with_cpus():
    t = small_cxl()
    wl = nl.workload("numa02_HARD_BIND", t, threads=8)
    assert set(wl.cpu_bind[~wl.thread_main].tolist()) == {0, 1}
    assert set(wl.region_init[wl.region_init >= 0].tolist()) == {0, 1}
    wl1 = nl.workload("numa01_HARD_BIND", t, threads=4)
    assert set(wl1.cpu_bind[~wl1.thread_main].tolist()) == {0, 1}
    with pytest.raises(NumalabValueError, match="at least 2 nodes with CPUs"):
        nl.workload("numa01_HARD_BIND", Topology.preset("2s-128", nodes=1, distance=None).with_memory_node(
            8.0, [14], node_bw_GBps=50.0, link_bw_GBps=50.0, local_latency_ns=200.0, remote_latency_ns=300.0))


def test_memory_bound_to_a_memoryless_node_is_refused():
    t = Topology(nodes=2, cpus_per_node=[4, 4], mem_per_node_GiB=[8.0, 0.0])
    with pytest.raises(NumalabValueError, match="node 1, which has no memory"):
        nl.workload("matrix", t, matrix=[[1.0]], chunk_bytes=2 << 20, init_node=1)


def test_progress_rates_read_each_nodes_bandwidth():
    """A thread writing the slow CXL node's memory is slower than one writing its own node's."""
    from numalab.costs import Costs, progress_rates

    t = small_cxl()
    node = np.array([[0, 0]])
    frac = np.zeros((1, 2, 3))
    frac[0, 0, 0] = 1.0
    frac[0, 1, 2] = 1.0
    s = progress_rates(Costs(), t, node, frac, np.ones((1, 2), dtype=bool))
    assert s[0, 1] < s[0, 0]
    # the memory node's controllers saturate at its own (lower) bandwidth
    many = np.zeros((1, 4, 3))
    many[0, :, 2] = 1.0
    s4 = progress_rates(Costs(), t, np.array([[0, 0, 1, 1]]), many, np.ones((1, 4), dtype=bool))
    assert s4.sum() <= 40.0e9 * t.per_node("write_efficiency")[2] * (1 + 1e-9)


# ------------------------------------------------------------------ write capacity, a machine's own
def test_write_efficiency_is_the_machines_and_bounded():
    """Each node's controllers write at write_efficiency x node_bw_GBps (costs.progress_rates):
    a property of the machine, per node, in (0, 1]; Costs no longer takes it."""
    from numalab.costs import Costs, progress_rates

    assert Topology(nodes=2, cpus_per_node=4).write_efficiency == 0.5        # the RFO bound
    assert Topology.preset("2s-128").write_efficiency == 0.21                # fitted to Ice Lake
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(NumalabValueError, match=r"write_efficiency=.* out of range"):
            Topology(nodes=2, cpus_per_node=4, write_efficiency=bad)
    with pytest.raises(NumalabValueError, match="property of the machine.*write_efficiency=0.3"):
        Costs.coerce({"write_efficiency": 0.3})
    # a memory node added to a machine keeps the machine's figures and brings its own
    assert CXL.write_efficiency == (0.21, 0.21, 0.5)
    # all threads on node 0's memory: its controllers saturate at its own capacity, not node 1's
    t = Topology(nodes=2, cpus_per_node=8, smt=1, node_bw_GBps=20.0, write_efficiency=(0.25, 1.0),
                 thread_bw_GBps=10.0)
    frac = np.zeros((1, 8, 2))
    frac[0, :, 0] = 1.0
    s = progress_rates(Costs(), t, np.zeros((1, 8), dtype=int), frac, np.ones((1, 8), dtype=bool))
    assert s.sum() == pytest.approx(20.0e9 * 0.25)

"""Topology presets and validation."""

import numpy as np
import pytest

from numalab.errors import NumalabValueError
from numalab.topology import PRESET_SOURCES, Topology


@pytest.mark.parametrize(
    "name, nodes, ncpus",
    [("2s-128", 2, 128), ("2s-240", 2, 240), ("2s-ivb-40", 2, 40), ("4s-144", 4, 144), ("8n-genoa-nps4", 8, 384)],
)
def test_presets_have_the_machines_cpu_and_node_counts(name, nodes, ncpus):
    topo = Topology.preset(name)
    assert (topo.nodes, topo.ncpus) == (nodes, ncpus)
    assert topo.cpu_node.shape == (ncpus,)
    assert np.bincount(topo.cpu_node).tolist() == [ncpus // nodes] * nodes
    assert name in PRESET_SOURCES and topo.source == PRESET_SOURCES[name]


def test_every_preset_is_listed_and_documented():
    assert set(Topology.presets()) == set(PRESET_SOURCES)
    for name in Topology.presets():
        assert f"``{name}``" in Topology.preset.__doc__


def test_genoa_nps4_distances_are_symmetric_with_three_classes():
    d = Topology.preset("8n-genoa-nps4").distance_matrix
    assert (d == d.T).all()
    assert set(np.unique(d)) == {10, 11, 12, 32}
    assert (d[:4, 4:] == 32).all()


def test_latency_grows_with_distance():
    topo = Topology.preset("8n-genoa-nps4")
    lat = topo.latency_ns
    assert lat[0, 0] == topo.local_latency_ns
    assert lat[0, 4] == topo.remote_latency_ns
    assert lat[0, 0] < lat[0, 1] < lat[0, 2] < lat[0, 4]


def test_overrides_rename_and_validate():
    topo = Topology.preset("2s-128", node_bw_GBps=60.0)
    assert topo.node_bw_GBps == 60.0 and topo.name == "2s-128+custom"
    with pytest.raises(NumalabValueError, match="node_bw_GBps"):
        Topology.preset("2s-128", node_bw_GBps=-1.0)


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(NumalabValueError) as err:
        Topology.preset("2s-129")
    msg = str(err.value)
    assert "2s-129" in msg and "did you mean '2s-128'" in msg
    for name in Topology.presets():
        assert name in msg


@pytest.mark.parametrize(
    "kwargs, param",
    [
        (dict(nodes=0, cpus_per_node=4), "nodes"),
        (dict(nodes=2, cpus_per_node=3, smt=2), "cpus_per_node"),
        (dict(nodes=2, cpus_per_node=4, distance=[[10, 20]]), "distance"),
        (dict(nodes=2, cpus_per_node=4, distance=[[10, 5], [5, 10]]), "distance"),
        (dict(nodes=2, cpus_per_node=4, local_latency_ns=200.0, remote_latency_ns=100.0), "remote_latency_ns"),
        (dict(nodes=2.5, cpus_per_node=4), "nodes"),
    ],
)
def test_bad_topologies_name_the_parameter(kwargs, param):
    with pytest.raises(NumalabValueError, match=param):
        Topology(**kwargs)


def test_coerce_and_attrs_are_netcdf_safe():
    topo = Topology.coerce("2s-ivb-40")
    assert Topology.coerce(topo) is topo
    attrs = topo.to_attrs()
    assert attrs["topology_name"] == "2s-ivb-40"
    assert attrs["topology_distance"] == "10,20 20,10"
    assert all(isinstance(v, (str, int, float)) for v in attrs.values())
    with pytest.raises(NumalabValueError, match="topology"):
        Topology.coerce(42)

"""The interconnect as physical links (``Topology.links``, 0.7.0): a link direction is one shared
resource, traffic between nodes without a link of their own crosses the links of its route, a
CXL expander hangs off one socket by one link, and two nodes (every calibration machine) are the
model before links bit for bit. Checked: the routes, the checks at the boundary, the file
format, capacity conservation (no link direction carries more than it can), the default's
identity with the per-pair accounting, and a run in both engines (the compiled rates against
numpy's on random link graphs: tests/test_compiled_progress.py)."""

import json

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import numalab as nl
from numalab.costs import Costs, progress_rates
from numalab.errors import NumalabValueError
from numalab.topology import Topology

C = Costs()
#: one latency everywhere: a thread streams thread_bw_GBps to any node, so only the links slow it
FLAT = dict(local_latency_ns=100.0, remote_latency_ns=100.0)
#: 4 nodes in a ring of thin links, one direction of the 1-2 link thinner than the other
RING = Topology(nodes=4, cpus_per_node=8, smt=1, node_bw_GBps=400.0, thread_bw_GBps=20.0, **FLAT,
                links=[(0, 1, 5.0), (1, 2, 3.0, 8.0), (2, 3, 6.0), (0, 3, 4.0)], name="ring")
#: 2 sockets of 2 nodes each behind an IO die (switches 4 and 5), one cross-socket link
DIES = Topology(nodes=4, cpus_per_node=8, smt=1, node_bw_GBps=400.0, thread_bw_GBps=20.0, **FLAT,
                links=[(0, 4, 100.0), (1, 4, 100.0), (2, 5, 100.0), (3, 5, 100.0), (4, 5, 10.0)], name="dies")


def _rates(topo, writers, both=True, shared=None, mm=None):
    """Closed-form rates of threads given as (cpu node, memory node) pairs."""
    T = len(writers)
    node = np.array([[a for a, _ in writers]])
    frac = np.zeros((1, T, topo.nodes))
    for t, (_, n) in enumerate(writers):
        frac[0, t, n] = 1.0
    return progress_rates(C, topo, node, frac, np.ones((1, T), bool), shared, mm, both_directions=both)[0]


# ------------------------------------------------------------------ routes
def test_a_pair_with_its_own_link_uses_it_and_the_others_take_the_fewest_links():
    r = RING.link_route
    assert r[0, 1].tolist() == [0, -1] and r[1, 0].tolist() == [1, -1]      # link 0: 0 -> 1 is 0, back 1
    # 0 -> 2 has two routes of two links (via 1, via 3): the search from 0 finds 1 first
    assert r[0, 2].tolist() == [0, 2] and r[2, 0].tolist() == [3, 1]
    assert RING.link_cap_GBps.tolist() == [5.0, 5.0, 3.0, 8.0, 6.0, 6.0, 4.0, 4.0]
    # through the IO dies: node 0 -> node 3 crosses its port, the cross-socket link, 3's port
    assert DIES.link_route[0, 3].tolist() == [0, 8, 7]


def test_the_default_is_a_link_per_pair_into_each_node_at_its_figure():
    t = Topology(nodes=3, cpus_per_node=4, link_bw_GBps=[10.0, 20.0, 30.0])
    assert t.links is None
    assert t.link_set == ((0, 1, 20.0, 10.0), (0, 2, 30.0, 10.0), (1, 2, 30.0, 20.0))
    assert (t.link_route[..., 1:] == -1).all()                               # one link each
    assert t.provenance()["links"].kind == "derived"


@pytest.mark.parametrize("links,match", [
    ([(0, 0, 5.0)], "joins 0 to itself"),
    ([(0, 1, 5.0), (1, 0, 7.0)], r"joins nodes 0 and 1 again \(links\[0\]\)"),
    ([(0, 1, 0.0)], r"links\[0\]\[2\]"),
    ([(0, 1, 5.0, -1.0)], r"links\[0\]\[3\]"),
    ([(0, 1)], r"links\[0\]=\(0, 1\) must be \(a, b, GBps\)"),
    ([(0, 70, 5.0)], r"links\[0\]\[1\]"),
    ([(0, 1, 5.0)], "no route from node 0 to node 2"),
    ("0-1", "must be a list"),
])
def test_bad_links_are_refused_naming_the_link(links, match):
    with pytest.raises(NumalabValueError, match=match):
        Topology(nodes=3, cpus_per_node=4, links=links)


def test_links_go_through_the_topology_file(tmp_path):
    path = DIES.save(tmp_path / "dies.json")
    data = json.loads(path.read_text())
    assert data["topology"]["links"][-1] == [4, 5, 10.0, 10.0]
    assert Topology.load(path) == DIES
    # a file without links (every file before 0.7.0) keeps the default
    plain = Topology(nodes=2, cpus_per_node=4).save(tmp_path / "plain.json")
    assert "links" not in json.loads(plain.read_text())["topology"]
    assert Topology.load(plain).links is None
    assert DIES.to_attrs()["topology_links"].endswith("4-5:10/10")


def test_a_link_figure_a_preset_would_not_read_is_refused():
    with pytest.raises(NumalabValueError, match="override link_bw_GBps= does not change preset '8n-genoa-nps4'"):
        Topology.preset("8n-genoa-nps4", link_bw_GBps=30.0)
    thin = [(a, b, 10.0) for a, b, _, _ in Topology.preset("8n-genoa-nps4").links]
    assert Topology.preset("8n-genoa-nps4", links=thin).link_cap_GBps.max() == 10.0
    assert Topology.preset("4s-144", link_bw_GBps=5.0).link_cap_GBps.max() == 5.0   # the default mesh reads it


# ------------------------------------------------------------------ capacity
def _direction_loads(topo, writers, speeds):
    """Bytes/s every link direction carries: a write from a to n's memory once on each direction
    of the route a -> n and of n -> a."""
    load = np.zeros(topo.link_cap_GBps.size)
    for (a, n), s in zip(writers, speeds):
        for d in (*topo.link_route[a, n], *topo.link_route[n, a]):
            if d >= 0:
                load[d] += s
    return load


@settings(max_examples=60, deadline=None)
@example("ring", [(0, 0)] * 11)   # the controller binds, no link (found by hypothesis)
@given(st.sampled_from(["ring", "dies"]), st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)),
                                                   min_size=1, max_size=24))
def test_no_link_direction_carries_more_than_its_capacity(which, writers):
    topo = RING if which == "ring" else DIES
    speeds = _rates(topo, writers)
    load = _direction_loads(topo, writers, speeds)
    cap = topo.link_cap_GBps * 1e9 * C.link_write_efficiency
    assert (load <= cap * (1 + 1e-9)).all()
    # every write is slowed exactly by the busiest resource it uses at its unslowed load: the
    # directions of its route, and its memory node's controller (which binds alone when enough
    # writers share one node, local writes included: 11 writers to one node of these machines)
    free = _direction_loads(topo, writers, [20e9] * len(writers)) / cap
    ctrl = topo.per_node("node_bw_GBps") * 1e9 * topo.per_node("write_efficiency")
    at_ctrl = np.bincount([n for _, n in writers], minlength=topo.nodes) * 20e9 / ctrl
    for (a, n), s in zip(writers, speeds):
        used = [d for d in (*topo.link_route[a, n], *topo.link_route[n, a]) if d >= 0]
        assert s == pytest.approx(20e9 / max([1.0, at_ctrl[n], *(free[d] for d in used)]), rel=1e-12)


def test_a_cxl_expander_shares_its_one_link_between_the_sockets():
    two = Topology(nodes=2, cpus_per_node=16, smt=1, node_bw_GBps=400.0, link_bw_GBps=60.0, thread_bw_GBps=20.0)
    cxl = two.with_memory_node(64.0, [14, 24], node_bw_GBps=400.0, link_bw_GBps=8.0, local_latency_ns=90.0,
                               remote_latency_ns=90.0)
    assert cxl.link_set[-1] == (0, 2, 8.0, 8.0)                              # off socket 0, the nearer
    writers = [(0, 2)] * 4 + [(1, 2)] * 4
    speeds = _rates(cxl, writers)
    # one 8 GB/s link each way carries every write to the device once (the model before 0.7.0
    # gave each socket its own 8 GB/s)
    assert speeds.sum() == pytest.approx(8e9, rel=1e-9)
    # socket 1's writes cross the socket link too
    assert cxl.link_route[1, 2].tolist() == [1, 2]
    with pytest.raises(NumalabValueError, match="attach"):
        two.with_memory_node(64.0, [14, 24], node_bw_GBps=40.0, link_bw_GBps=8.0, local_latency_ns=90.0,
                             remote_latency_ns=90.0, attach=2)


def test_the_sockets_of_a_die_machine_share_one_cross_socket_link():
    # four writers from each node of socket 0 to each node of socket 1: all cross the one link
    writers = [(a, n) for a in (0, 1) for n in (2, 3)] * 2
    assert _rates(DIES, writers).sum() == pytest.approx(10e9, rel=1e-9)
    # the same writers inside a socket are not slowed by it
    inside = [(0, 1), (1, 0), (2, 3), (3, 2)] * 2
    assert _rates(DIES, inside).min() == pytest.approx(20e9, rel=1e-12)


# ------------------------------------------------------------------ the model before links
@pytest.mark.parametrize("nodes", [2, 3, 4])
def test_the_default_links_are_the_per_pair_accounting(nodes):
    """The per-pair accounting (0.6.0) written out: direction x -> y carries the remote writes
    between x and y in both senses against link_bw_GBps[y]; a write's factor is the larger of
    its pair's two directions. (Bit for bit on the golden keys, tests/test_golden.py.)"""
    topo = Topology(nodes=nodes, cpus_per_node=64, smt=1, local_latency_ns=100.0, remote_latency_ns=100.0,
                    thread_bw_GBps=20.0, node_bw_GBps=[300.0, 80.0, 500.0, 120.0][:nodes],
                    link_bw_GBps=[30.0, 12.0, 50.0, 20.0][:nodes])
    rng = np.random.default_rng(nodes)
    N, T = nodes, 120
    node = rng.integers(0, N, (2, T))
    frac = rng.dirichlet(np.ones(N) * 0.3, (2, T))
    got = progress_rates(C, topo, node, frac, np.ones((2, T), bool))
    # by hand: one thread streams 20 GB/s (no SMT sharing, no latency penalty on this machine)
    s = 20e9 / frac.sum(axis=2)
    cap = topo.per_node("node_bw_GBps") * 1e9 * topo.per_node("write_efficiency")
    sigma = np.maximum(1.0, (s[:, :, None] * frac).sum(axis=1) / cap)                # (R, n)
    on = node[:, :, None] == np.arange(N)
    load = np.einsum("rta,rtn->ran", on * s[:, :, None], frac)
    load[:, np.arange(N), np.arange(N)] = 0.0
    sdir = np.maximum(1.0, (load + load.transpose(0, 2, 1)) / (topo.per_node("link_bw_GBps") * 1e9))
    slink = np.maximum(sdir, sdir.transpose(0, 2, 1))[np.arange(2)[:, None], node]    # (R, T, n)
    slink = np.where(on, 1.0, slink)
    want = 1.0 / (frac * np.maximum(sigma[:, None, :], slink) / 20e9).sum(axis=2)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert (slink > 1.0).any()                                 # the links bind somewhere


# ------------------------------------------------------------------ compiled = numpy
def test_a_run_on_die_links_is_the_same_in_both_engines():
    from numalab.engine.compiled import available
    if not available():
        pytest.skip("numba is not installed")
    wl = nl.workload("numa01", DIES, threads=8, size_bytes=64 << 20, loops=20)
    a = nl.simulate(wl, "6.12", seeds=[0, 1], max_time=20.0, kernel="numpy")
    b = nl.simulate(wl, "6.12", seeds=[0, 1], max_time=20.0, kernel="numba")
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)

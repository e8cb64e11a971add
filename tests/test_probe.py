"""numalab probe: pinned numpy threads measure this machine's bandwidths and write a topology
file that --topology, nl.Topology.load, sweeps and the explorers accept."""

import json
from pathlib import Path

import numpy as np
import pytest

import numalab as nl
from numalab.cli import main
from numalab.commands.probe import MEASURED, probe_host
from numalab.topology import Topology, check_topology

FIXTURES = Path(__file__).parent / "fixtures" / "sysfs"
HOST = Path("/sys/devices/system/node")
needs_host = pytest.mark.skipif(not HOST.is_dir(), reason="no /sys/devices/system/node on this machine")


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """One small probe of this machine (32 MiB buffers, 2 repeats), written by the command."""
    out = tmp_path_factory.mktemp("probe") / "host.json"
    assert main(["probe", "--out", str(out), "--buffer-mb", "32", "--thread-mb", "32", "--repeats", "2",
                 "--no-progress"]) == 0
    return out


@needs_host
def test_probe_writes_a_file_with_measured_bandwidths(probed):
    data = json.loads(probed.read_text())
    t = Topology.load(probed)
    assert t.nodes == len(data["host"]["node_ids"]) and t.ncpus == sum(map(len, data["host"]["node_cpus"].values()))
    probe = data["probe"]
    for n, rec in probe["nodes"].items():
        for key in ("fill_GBps", "read_GBps", "thread_fill_GBps", "thread_read_GBps"):
            lo, hi = rec[key.replace("GBps", "band")]
            assert 0 < lo <= hi == rec[key], (n, key)
    i = 0
    assert t.per_node("node_bw_GBps")[i] == probe["nodes"][str(data["host"]["node_ids"][i])]["read_GBps"]
    assert t.per_node("thread_bw_GBps")[i] == probe["nodes"][str(data["host"]["node_ids"][i])]["thread_fill_GBps"]
    prov = t.provenance()
    assert prov["node_bw_GBps"].kind == "measurement" and "numalab probe" in prov["node_bw_GBps"].source
    assert prov["node_bw_GBps"].band[0] <= t.per_node("node_bw_GBps").min()
    if t.nodes == 1:   # nothing remote to read: said, not guessed
        assert any("link_bw_GBps: not measured (one node" in w for w in t.warnings)
    assert probe["seconds"] < 120


@needs_host
def test_probed_file_runs_through_the_cli_and_the_library(probed, capsys):
    assert main(["simulate", "--workload", "numa02", "--topology", str(probed), "--seeds", "1",
                 "--max-time", "3"]) == 0
    assert "numa02 on host" in capsys.readouterr().out
    wl = nl.workload("numa02", str(probed), threads=1, size_bytes=16 << 20, loops=2)
    ds = nl.simulate(wl, ["6.12"], seeds=[0], max_time=30.0)
    assert np.isfinite(ds.elsp.values).all()


@needs_host
def test_sweep_and_explorer_accept_a_topology_file(probed, tmp_path):
    ds = nl.sweep({"workload": "numa02", "topology": [str(probed)], "workload_threads": 1,
                   "workload_size_bytes": 16 << 20, "workload_loops": 2, "max_time": 5.0},
                  seeds=1, cache=tmp_path / "cache", progress=False)
    key = ds["topology"].item()
    assert key == check_topology("topology", str(probed)) and key.startswith(str(probed.resolve()) + "#")
    from numalab import widgets as W

    ex = W.HistoryExplorer(workload="numa02", topology=str(probed), threads="default", seeds=1, live=False,
                           workload_options={"size_bytes": 16 << 20, "loops": 2}, max_time=5.0)
    assert ex.controls["topology"].value == key
    assert ex.controls["topology"].label == Topology.load(probed).name
    assert ex.error is None and ex.result            # it ran on the probed machine
    assert all(d.attrs["topology"] == Topology.load(probed).name for d in ex.result.values())


def _fake_measure(cpus, *, mem_free_GiB, progress, **kw):
    """What probe_bandwidth returns, for the CXL fixture: sockets 0 and 1, node 2 CPU-less."""
    assert cpus == {0: [0, 1, 2, 3], 1: [4, 5, 6, 7], 2: []} and set(mem_free_GiB) == {0, 1, 2}

    def rec(fill, read, tfill, tread):
        return {"cpus": [], "fill_GBps": fill, "fill_band": [fill - 1, fill], "read_GBps": read,
                "read_band": [read - 1, read], "thread_fill_GBps": tfill, "thread_fill_band": [tfill - 1, tfill],
                "thread_read_GBps": tread, "thread_read_band": [tread - 1, tread]}

    def pair(a, m, read, tread):
        return {"cpu_node": a, "mem_node": m, "read_GBps": read, "read_band": [read - 1, read],
                "thread_read_GBps": tread, "thread_read_band": [tread - 1, tread]}

    return {"repeats": 3, "nodes": {"0": rec(100.0, 180.0, 11.0, 14.0), "1": rec(90.0, 170.0, 10.0, 12.0)},
            "remote": [pair(1, 0, 60.0, 7.0), pair(0, 1, 55.0, 8.0), pair(0, 2, 40.0, 5.0), pair(1, 2, 25.0, 3.5)],
            "warnings": [], "seconds": 1.0}


def test_probe_sets_each_nodes_fields_from_the_measurements():
    data = probe_host(FIXTURES / "cxl", measure=_fake_measure)
    t = Topology.from_dict(data)
    assert t.node_bw_GBps == (180.0, 170.0, 40.0)         # node 2: its best reader (node 0's CPUs)
    assert t.thread_bw_GBps == (11.0, 10.0, t.per_node("thread_bw_GBps")[2])
    assert t.link_bw_GBps == (60.0, 55.0, 25.0)            # the slowest reader of each node's memory
    # a store stream's share of the read bandwidth, per node; the CPU-less node keeps the default
    assert t.write_efficiency == (round(100.0 / 180.0, 3), round(90.0 / 170.0, 3), 0.5)
    # remote latency: local x local/remote one-thread read ratio at the largest distance
    assert t.remote_latency_ns[0] == pytest.approx(110.0 * 12.0 / 7.0, abs=0.05)
    assert t.remote_latency_ns[2] == pytest.approx(250.0 * 12.0 / 3.5, abs=0.05)  # read by node 1 (SLIT 24)
    for f in MEASURED:
        p = t.provenance()[f]
        assert p.kind in ("measurement", "derived") and "numalab probe" in p.source and p.band is not None
    assert not any("numalab probe measures" in w for w in t.warnings)
    wl = nl.workload("numa01", t, threads=4, size_bytes=64 << 20, loops=2)
    assert np.isfinite(nl.simulate(wl, ["6.12"], seeds=[0], max_time=20.0).elsp.values).all()


def test_probe_refuses_bad_arguments_before_measuring(tmp_path, capsys):
    assert main(["probe", "--out", str(tmp_path / "t.json"), "--repeats", "0"]) == 2
    assert "--repeats=0 is out of range" in capsys.readouterr().err
    assert main(["probe", "--out", str(tmp_path / "no" / "such" / "dir" / "x.json")]) == 2


@needs_host
def test_probe_bandwidth_says_what_it_could_not_measure():
    """A CPU-less node whose memory cannot be bound (here: a node that does not exist, so
    set_mempolicy refuses it) and a CPU the process may not use are warnings; node 0 is measured."""
    from numalab.machine import probe_bandwidth

    steps = []
    res = probe_bandwidth({0: [0, 99999], 7: []}, total_mb=16, single_mb=16, repeats=1, progress=steps.append)
    assert list(res["nodes"]) == ["0"] and res["nodes"]["0"]["cpus"] == [0] and res["remote"] == []
    assert any("CPU 99999 is not allowed" in w for w in res["warnings"])
    assert any(w.startswith("node 7: its memory cannot be placed") for w in res["warnings"])
    assert steps[0].startswith("node 0: placing") and "node 7: placing 1 x" in " ".join(steps)

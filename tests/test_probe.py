"""numalab probe: pinned numpy threads measure this machine's bandwidths and write a topology
file that --topology, nl.Topology.load, sweeps and the explorers accept."""

import json
import sys
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
        for key in ("fill_GBps", "read_GBps", "thread_fill_GBps", "thread_read_GBps", "fill_nonzero_GBps"):
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
    assert probe["syscall"]["null_syscall_ns"] > 0          # the futex model's syscall_ns, measured


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
    data = probe_host(FIXTURES / "cxl", **FAKES)
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


def test_the_fill_is_the_benchmarks_bzero_and_the_ones_fill_is_the_same_call():
    """The probe's store streams: zeros by libc's memset (what bzero calls), and ones by the same
    call, so a difference between them is the machine's, not numpy's code path."""
    from numalab import machine

    buf = np.full(1 << 20, 7, np.uint8)
    machine._bzero(buf)
    assert not buf.any()
    machine._fill_ones(buf)
    assert (buf == 1).all()
    if sys.platform.startswith("linux"):      # where the probe runs: glibc or musl has memset
        assert machine._MEMSET, "libc's memset was not found; the probe fell back to ndarray.fill"


def test_summary_says_when_zeros_fill_faster_than_ones():
    """A node whose zero fill beats its fill of ones by more than ZERO_STORE_GAIN is named, with
    what it means for bzero benchmarks; one within it is not; a fill above the read bandwidth is
    said to be stored at the bound."""
    from numalab.commands.probe import ZERO_STORE_GAIN, summary

    data = probe_host(FIXTURES / "cxl", **FAKES)
    probe = data["probe"]
    t = Topology.from_dict(data)
    text = summary(t, probe)
    assert "zeros over zeros" not in text and "stored as at most 1" not in text   # no ones fill measured
    probe["nodes"]["0"]["fill_nonzero_GBps"] = 100.0 / (ZERO_STORE_GAIN + 0.5)
    probe["nodes"]["1"]["fill_nonzero_GBps"] = 90.0 / (ZERO_STORE_GAIN - 0.1)
    probe["nodes"]["1"]["fill_GBps"] = 200.0                                     # above its 170 GB/s read
    text = summary(t, probe)
    ratios = (ZERO_STORE_GAIN + 0.5, 200.0 / probe["nodes"]["1"]["fill_nonzero_GBps"])
    assert "zeros over zeros / ones over ones fill: " + ", ".join(f"{r:.2f}" for r in ratios) in text
    assert "note: node(s) 0, 1 fill zeros over zeros" in text
    probe["nodes"]["1"]["fill_GBps"] = 90.0
    text = summary(t, probe)
    assert "note: node(s) 0 fill zeros over zeros" in text and "stored as at most 1" not in text
    assert "fill / read bandwidth: 0.56, 0.53" in text


def test_zero_fill_benchmark_separates_the_cases_and_refuses_bad_sizes(capsys):
    """benchmarks/zero_fill.py: every (new over old) fill and the read measured and printed with
    its ratio to the read; sizes checked first."""
    from _benchmark_scripts import load_script

    mod = load_script("zero_fill")
    r = mod.measure(64 << 20, 1)
    assert set(r) == {name for name, _, _ in mod.CASES} | {"read"} and min(r.values()) > 0
    assert mod.main(["--mib", "64", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("x read") == len(mod.CASES) + 1 and "zeros over data / data over data:" in out
    with pytest.raises(SystemExit):
        mod.main(["--mib", "8"])


def _fake_syscall():
    return {"null_syscall_ns": 180.4, "band": [180.4, 196.0], "seconds": 0.5, "repeats": 5,
            "method": "os.getppid() loop less an int() loop, per call"}


def _fake_futex():
    return {"futex_private_ns": 150.0, "private_band": [140.0, 161.0], "futex_shared_ns": 250.0,
            "shared_band": [240.0, 270.0], "seconds": 0.25, "repeats": 5, "method": "FUTEX_WAIT less getppid"}


#: what a probe of the fixture trees takes instead of the host's measurements
FAKES = {"measure": _fake_measure, "syscall": _fake_syscall, "futex": _fake_futex}


def test_the_kernel_costs_are_timed_and_set_for_the_futex_model():
    """probe_syscall: a getppid round trip less the interpreter's call; probe_futex: a wrong-value
    FUTEX_WAIT (private, shared) less getppid through the same call, best of the repeats with
    their range. probe_host stores them as the Topology's syscall_ns / futex_private_ns /
    futex_shared_ns with their provenance; the futex model takes its kernel-path constants from
    them (FutexCosts.resolve), and the summary says which."""
    from numalab.commands.probe import summary
    from numalab.futex import UNMEASURED, FutexCosts
    from numalab.machine import probe_futex, probe_syscall

    sc = probe_syscall(calls=20_000, repeats=2)
    assert 20.0 < sc["null_syscall_ns"] == sc["band"][0] <= sc["band"][1] < 1e5 and sc["seconds"] > 0
    fx = probe_futex(calls=5_000, repeats=2)
    if sys.platform == "linux" and "skipped" not in fx:
        for k in ("private", "shared"):
            lo, hi = fx[f"{k}_band"]
            assert 0.0 <= lo <= fx[f"futex_{k}_ns"] <= hi < 1e5, fx
    for probe in (probe_syscall, probe_futex):
        with pytest.raises(nl.errors.NumalabValueError, match="calls=0"):
            probe(calls=0)
        with pytest.raises(nl.errors.NumalabValueError, match="repeats=-1"):
            probe(repeats=-1)
    data = probe_host(FIXTURES / "cxl", **FAKES)
    assert data["probe"]["syscall"] == _fake_syscall() and data["probe"]["futex"] == _fake_futex()
    t = Topology.from_dict(data)
    assert (t.syscall_ns, t.futex_private_ns, t.futex_shared_ns) == (180.4, 150.0, 250.0)
    prov = t.provenance()
    assert prov["futex_shared_ns"].kind == "measurement" and prov["futex_shared_ns"].band == (240.0, 270.0)
    assert "numalab probe" in prov["syscall_ns"].source
    # the fixture has no clock: the measured figures are the model's as they are
    c = FutexCosts().resolve(t)
    inside = c.hash_ns + 2 * c.atomic_ns + c.critical_section_ns + c.line_self_ns
    assert (c.syscall_ns, c.futex_path_ns, c.gup_ns) == (180.4, 150.0 - inside, 100.0)
    text = summary(t, data["probe"])
    assert (f"null system call: 180 ns (180-196): the futex model's syscall_ns on this topology (stated default "
            f"{UNMEASURED['syscall_ns']:g})") in text
    assert (f"futex operation beyond it: private 150 ns (140-161), shared 250 ns (240-270): the futex model's "
            f"futex_path_ns {150.0 - inside:.0f} (stated {UNMEASURED['futex_path_ns']:g}) and gup_ns 100") in text
    assert "measured in 1.8 s" in text          # bandwidths 1.0 s + the syscall's 0.5 s + the futex's 0.25 s
    # a machine where the futex cannot be timed: the syscall still set, the rest stated and said
    data = probe_host(FIXTURES / "cxl", **{**FAKES, "futex": lambda: {"skipped": "no futex here"}})
    t = Topology.from_dict(data)
    assert t.syscall_ns == 180.4 and t.futex_private_ns is None and t.futex_shared_ns is None
    assert FutexCosts().resolve(t).futex_path_ns == UNMEASURED["futex_path_ns"]
    assert any(w.startswith("futex_private_ns, futex_shared_ns: not measured (no futex here)") for w in t.warnings)
    assert "futex operation: not measured (no futex here)" in summary(t, data["probe"])


def test_a_fill_above_the_read_is_stored_at_the_bound_with_a_warning():
    """A node whose zero fill beats its read (the Zen 4 guest of docs/machines.md) gets
    write_efficiency 1, and the topology file says why in its warnings; one below it does not."""
    def faster_fill(cpus, **kw):
        res = _fake_measure(cpus, **kw)
        res["nodes"]["1"]["fill_GBps"] = 340.0                 # 2 x its 170 GB/s read
        return res

    t = Topology.from_dict(probe_host(FIXTURES / "cxl", **{**FAKES, "measure": faster_fill}))
    assert t.write_efficiency[:2] == (round(100.0 / 180.0, 3), 1.0)
    said = [w for w in t.warnings if w.startswith("write_efficiency: node")]
    assert said == ["write_efficiency: node 1's fill is 2.00 x its read bandwidth; stored as 1, the field's "
                    "bound (the model's controllers write at most what they read)"]

"""Topology presets and validation."""

from pathlib import Path

import numpy as np
import pytest

from numalab.errors import NumalabValueError
from numalab.topology import PRESET_SOURCES, Topology

#: the checkout's benchmark scripts and their machine files
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize(
    "name, nodes, ncpus",
    [("2s-128", 2, 128), ("2s-88-csl", 2, 88), ("2s-224-spr", 2, 224), ("2s-240", 2, 240), ("2s-ivb-40", 2, 40),
     ("4s-144", 4, 144), ("8n-genoa-nps4", 8, 384)],
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


# ------------------------------------------------------------------ the kernel test robot's machines


@pytest.mark.parametrize("robot, preset, cores, smt, mem_total, ark", [
    ("lkp-icl-2sp6", "2s-128", 32, 2, 256, None),
    ("lkp-csl-2sp9", "2s-88-csl", 22, 2, 128, "Intel Xeon Gold 6238M Processor"),
    ("lkp-spr-r02", "2s-224-spr", 56, 2, 256, "Intel Xeon Platinum 8480+ Processor"),
])
def test_robot_machines_have_presets_with_their_datasheet_figures(robot, preset, cores, smt, mem_total, ark):
    """calibration-intel.md's machines: cores and threads per socket, memory, and where the
    figures come from (the robot's machine description, the ark.intel.com product page)."""
    from numalab.topology import PRESET_ALIASES

    assert PRESET_ALIASES[robot] == preset
    topo = Topology.preset(robot)
    assert topo == Topology.preset(preset) and topo.name == preset  # the alias is the same machine
    assert (topo.nodes, topo.cores_per_node, topo.smt) == (2, cores, smt)
    assert topo.mem_total_GiB == pytest.approx(mem_total, rel=0.01)
    doc = " ".join(Topology.preset.__doc__.split())
    assert robot in PRESET_SOURCES[preset] and robot in doc
    if ark:
        assert ark in PRESET_SOURCES[preset] and ark in doc
    d = topo.distance_matrix
    assert (d == d.T).all() and (np.diag(d) == 10).all() and d[0, 1] == 20


def test_robot_presets_memory_figures_follow_their_sources():
    csl, icl, spr, spr240 = (Topology.preset(n) for n in ("2s-88-csl", "2s-128", "2s-224-spr", "2s-240"))
    # Cascade Lake: 6 x DDR4-2933 = 140.8 GB/s peak, sustained at 2s-128's STREAM/peak ratio 150/204.8
    assert csl.node_bw_GBps == pytest.approx(6 * 2.933 * 8 * 150 / 204.8, rel=0.03)
    # 3 UPI at 10.4 GT/s (20.8 GB/s each way per link) at 2s-128's ratio 60 / (3 * 22.4)
    assert csl.link_bw_GBps == pytest.approx(3 * 20.8 * 60 / 67.2, rel=0.03)
    assert csl.node_bw_GBps < icl.node_bw_GBps < spr.node_bw_GBps  # 6 ch DDR4-2933 < 8 ch DDR4-3200 < 8 ch DDR5-4800
    # lkp-spr-r02 shares 2s-240's platform figures (same channels, DDR5 speed, UPI links); only cores differ
    for f in ("local_latency_ns", "remote_latency_ns", "node_bw_GBps", "link_bw_GBps", "thread_bw_GBps",
              "line_same_node_ns", "line_remote_ns"):
        assert getattr(spr, f) == getattr(spr240, f), f
    assert spr.cpus_per_node == 112 and spr240.cpus_per_node == 120


def test_aliases_are_not_listed_as_presets_but_named_in_errors():
    assert "lkp-spr-r02" not in Topology.presets()
    with pytest.raises(NumalabValueError, match="lkp-spr-r02"):
        Topology.preset("lkp-spr-r03")


def test_the_benchmarks_machine_files_are_described_not_fitted():
    """The machines of benchmarks/machines/ are out-of-sample checks (docs/fidelity.md, "An AMD
    machine the model was never given"): every figure the NUMA-balancing model reads carries its
    source, none of them was set from published results, and each file loads as a user's would."""
    files = sorted((BENCHMARKS / "machines").glob("*.json"))
    assert files
    numa_figures = ("nodes", "cpus_per_node", "smt", "local_latency_ns", "remote_latency_ns", "node_bw_GBps",
                    "write_efficiency", "link_bw_GBps", "mem_per_node_GiB", "thread_bw_GBps")
    for path in files:
        topo = Topology.coerce(path)
        prov = topo.provenance()
        for name in numa_figures:
            assert name in prov, f"{path.name}: {name} has no provenance"
            assert prov[name].kind != "fitted" and not prov[name].fitted_to, f"{path.name}: {name} is fitted"
        lo, hi = prov["write_efficiency"].band
        assert lo <= topo.write_efficiency <= hi


def test_the_milan_check_runs_and_reads_the_series(capsys):
    """benchmarks/milan_rfc2023.py (docs/fidelity.md, "An AMD machine the model was never given")
    stays runnable: two seeds, every verdict line, the base on the bound node's write capacity
    (6.4's two unconditional passes end while every thread is bound, so nothing is scanned)."""
    from _benchmark_scripts import load_script

    script = load_script("milan_rfc2023")
    script.main(["--seeds", "2"])
    out = capsys.readouterr().out
    for line in ("| base | 6.4 |", "| patched | rfc2023-p6 |", "base seconds:", "the series' change:",
                 "patch 2's change", "| numa_pages_migrated |", "| published | 0.65 | 0.38 | 0.62 |"):
        assert line in out, line
    assert "| numa_pte_updates | 0 / 6,985 |" in out
    with pytest.raises(SystemExit):
        script.main(["--seeds", "1"])
    # a what-if says so and reaches the engine: smaller scan windows protect other PTE counts
    script.main(["--seeds", "2", "--option", "scan_size_mb=96"])
    whatif = capsys.readouterr().out
    assert "# WHAT-IF, not the model's defaults: scan_size_mb=96" in whatif
    assert "WHAT-IF" not in out

    def ptes(text):
        return next(line for line in text.splitlines() if line.startswith("| numa_pte_updates |"))
    assert ptes(whatif) != ptes(out)
    for argv, named in ((["--option", "scan_size=96"], "'scan_size'"), (["--option", "scan_size_mb"], "NAME=VALUE"),
                        (["--option", "scan_size_mb=96", "--bands"], "--bands")):
        with pytest.raises(SystemExit):
            script.main(argv)
        assert named in capsys.readouterr().err

"""Where every default constant comes from: the Provenance schema, the declarations of Costs and
EngineOptions, the topology fallback, the fitted rows and the generated table in docs/fidelity.md."""

import dataclasses
from pathlib import Path

import pytest

import numalab as nl
from numalab import fidelity
from numalab.costs import Costs
from numalab.engine.options import DEFAULTS, EngineOptions
from numalab.provenance import KINDS, Provenance, constant, provenance_of, row_id

from _benchmark_scripts import load_script

REPO = Path(__file__).resolve().parents[1]


def test_provenance_refuses_what_it_cannot_vouch_for():
    with pytest.raises(ValueError, match="kind"):
        Provenance("guessed", "x")
    with pytest.raises(ValueError, match="source"):
        Provenance("kernel", "  ")
    with pytest.raises(ValueError, match="fitted_to"):
        Provenance("fitted", "set from a row")                       # which rows?
    with pytest.raises(ValueError, match="only for kind='fitted'"):
        Provenance("kernel", "fair.c", fitted_to=("t|m|q",))
    with pytest.raises(ValueError, match="lo must be <= hi"):
        Provenance("assumed", "x", band=(2, 1), band_source="y")
    with pytest.raises(ValueError, match="band_source"):
        Provenance("assumed", "x", band=(1, 2))
    assert Provenance("assumed", "x", band=(1, 2), band_source="y").band == (1.0, 2.0)
    with pytest.raises(TypeError):
        provenance_of(object())


def test_constant_keeps_other_metadata_and_reads_back():
    @dataclasses.dataclass
    class C:
        a: float = constant(1.0, kind="kernel", source="fair.c", doc="the doc")
        b: int = 3

    f = {f.name: f for f in dataclasses.fields(C)}
    assert f["a"].metadata["doc"] == "the doc" and C().a == 1.0
    assert list(provenance_of(C)) == ["a"] and provenance_of(C()) == provenance_of(C)
    assert row_id("t", "m", "q") == "t|m|q"


@pytest.mark.parametrize("cls", [Costs, EngineOptions])
def test_every_field_says_where_it_comes_from(cls):
    prov = provenance_of(cls)
    assert set(prov) == {f.name for f in dataclasses.fields(cls)}
    assert all(p.kind in KINDS and p.source for p in prov.values())


def test_the_constants_the_issue_names_are_classified_honestly():
    costs, opts = provenance_of(Costs), provenance_of(EngineOptions)
    assert opts["lb_migrate_hz"].kind == "fitted"
    # the write capacity is the machine's: fitted to Ice Lake on its preset only, derived elsewhere
    icl, spr = nl.Topology.preset("2s-128").provenance(), nl.Topology.preset("2s-224-spr").provenance()
    assert icl["write_efficiency"].kind == "fitted" and icl["write_efficiency"].fitted_to
    assert spr["write_efficiency"].kind == "derived" and "181" in spr["write_efficiency"].source
    assert "write_efficiency" not in costs
    for sysctl in ("scan_delay_ms", "scan_period_min_ms", "scan_period_max_ms", "scan_size_mb"):
        assert opts[sysctl].kind == "kernel" and "fair.c" in opts[sysctl].source
    # the declared default is the value the model runs with (metadata, not a second value)
    assert EngineOptions().lb_migrate_hz == nl.engine.LB_MIGRATE_HZ == DEFAULTS["lb_migrate_hz"]
    # a band brackets its default
    for cls, prov in ((Costs, costs), (EngineOptions, opts)):
        for name, p in prov.items():
            if p.band is not None:
                assert p.band[0] <= getattr(cls(), name) <= p.band[1], name


def _fake_sims(published):
    """Per-machine Datasets of ones over every workload and policy its tables need (no engine
    run): enough to list the rows."""
    import numpy as np
    import xarray as xr

    need: dict = {}
    for pub in published.values():
        wls, pols = need.setdefault(fidelity.table_preset(pub), (set(), set()))
        wls |= {*map(str, pub.workload.values), *fidelity.job_tests(pub)}
        pols |= set(map(str, pub.policy.values))
    sims = {}
    for preset, (wls, pols) in need.items():
        shape = (len(wls), len(pols), 2)
        sims[preset] = xr.Dataset({v: (("workload", "policy", "seed"), np.ones(shape))
                                   for v in ("elsp", *fidelity.VMSTAT_COUNTERS)},
                                  coords={"workload": sorted(wls), "policy": sorted(pols), "seed": [0, 1]})
    return sims


def test_fitted_constants_name_rows_of_the_calibration_set():
    published = {n: nl.data.load(n) for n in fidelity.calibration_tables()}
    rows = fidelity.table_rows(published, _fake_sims(published))
    ids = {row_id(r["table"], r["metric"], r["quantity"]): r for r in rows}
    fitted = fidelity.fitted_rows()
    assert fitted, "the calibration set has fitted constants (issue 24)"
    for rid, names in fitted.items():
        assert rid in ids, f"{names} name a row fidelity.csv does not have: {rid}"
        assert ids[rid]["fitted"] == ";".join(names)
    assert ids["lkp-rfc2023-p5-vs-p4|autonuma-benchmark.numa01_THREAD_ALLOC.seconds|rfc2023-p4 seconds"][
        "fitted"] == "EngineOptions.lb_migrate_hz"
    assert sum(bool(r["fitted"]) for r in rows) == len(fitted)


def test_topology_provenance_comes_from_the_preset_file():
    """A preset's figures carry the sources of its file (data/topologies/*.json, per field)."""
    csl = fidelity.topology_provenance("2s-88-csl")
    assert csl["nodes"].kind == "measurement" and "6238M" in csl["nodes"].source   # the robot's description
    assert csl["cpus_per_node"].kind == "datasheet" and "6238M" in csl["cpus_per_node"].source
    assert csl["thread_bw_GBps"].kind == "assumed"
    lo, hi = csl["node_bw_GBps"].band
    assert csl["node_bw_GBps"].kind == "derived" and lo < nl.Topology.preset("2s-88-csl").node_bw_GBps <= hi
    spr = fidelity.topology_provenance("lkp-spr-r02")           # an alias
    lo, hi = spr["node_bw_GBps"].band
    assert lo < nl.Topology.preset("2s-224-spr").node_bw_GBps < hi
    custom = fidelity.topology_provenance(nl.Topology.preset("2s-128", node_bw_GBps=99.0))
    assert custom["node_bw_GBps"].kind == "assumed" and "set by the caller" in custom["node_bw_GBps"].source


def test_topology_provenance_prefers_the_presets_own():
    @dataclasses.dataclass(frozen=True)
    class Described(nl.Topology):
        def provenance(self):
            return {"node_bw_GBps": Provenance("measurement", "STREAM on the machine", band=(140, 160),
                                               band_source="three runs")}

    topo = Described(nodes=2, cpus_per_node=8, name="2s-128")
    got = fidelity.topology_provenance(topo)
    assert list(got) == ["node_bw_GBps"] and got["node_bw_GBps"].kind == "measurement"


def test_docs_hold_the_generated_table():
    script = load_script("provenance")
    text = (REPO / "docs" / "fidelity.md").read_text()
    table = fidelity.provenance_markdown()
    assert script.replace_between(text, table) == text, \
        "docs/fidelity.md's provenance table is stale: python benchmarks/provenance.py --write docs/fidelity.md"
    constants = fidelity.constants()
    assert len(constants) == table.count("\n| `")
    assert {c.group for c in constants} >= {"Costs", "EngineOptions", "job", "Topology 2s-224-spr"}

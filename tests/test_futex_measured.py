"""The futex model on a machine whose kernel costs were measured (``numalab probe``).

``Topology.syscall_ns`` / ``futex_private_ns`` / ``futex_shared_ns`` are a null system call and a
wrong-value FUTEX_WAIT beyond it, timed with one busy core. ``FutexCosts.resolve`` takes
``syscall_ns``, ``futex_path_ns`` and ``gup_ns`` from them where the costs leave them None, so
one uncontended thread runs exactly at the measured operation (the probe's own situation), at
any clock; a constant given wins; a topology without them prices as stated.
"""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import numalab as nl
from numalab.errors import NumalabValueError
from numalab.futex import UNMEASURED, FutexCosts
from numalab.futex.solver import mva, network
from numalab.futex.workloads import perf_bench_hash, route

MEASURED = {"syscall_ns": 180.0, "futex_private_ns": 140.0, "futex_shared_ns": 245.0}


def _rate(topo, costs=None, **kw):
    """Ops/s of thread 0 by the MVA (one thread alone: exact)."""
    net = network([route(perf_bench_hash(topo, threads=1, futexes=1, refcount="immutable", **kw), 0)], costs)
    return float(mva(net)["x"][0]) * 1e9


@pytest.mark.parametrize("clock", [{}, {"all_core_ghz": 2.0, "turbo_ghz": 3.6}, {"all_core_ghz": 2.4}])
@pytest.mark.parametrize("shared", [False, True])
def test_one_thread_runs_at_the_measured_operation_at_any_clock(clock, shared):
    # one op = the null call + the futex operation beyond it (what the probe timed) + the
    # benchmark's own loop (user_ns, a CPU cost at the core's clock); nothing else
    topo = nl.Topology(nodes=1, cpus_per_node=4, **clock, **MEASURED)
    k = FutexCosts().clock_ref_ghz / (clock.get("turbo_ghz") or clock.get("all_core_ghz") or 3.0)
    op = MEASURED["syscall_ns"] + MEASURED["futex_shared_ns" if shared else "futex_private_ns"] + k * 2.0
    assert _rate(topo, shared=shared) == pytest.approx(1e9 / op, rel=1e-9)
    # the stated constants give another rate: the measurement is what moved it
    plain = nl.Topology(nodes=1, cpus_per_node=4, **clock)
    assert _rate(plain, shared=shared) > 1.3 * _rate(topo, shared=shared)


def test_the_constants_resolved_from_a_measurement():
    topo = nl.Topology(nodes=2, cpus_per_node=8, **MEASURED)
    c = FutexCosts().resolve(topo)
    inside = c.hash_ns + 2 * c.atomic_ns + c.critical_section_ns + c.line_self_ns
    assert (c.syscall_ns, c.futex_path_ns, c.gup_ns) == (180.0, 140.0 - inside, 105.0)
    assert c.resolve(topo) == c                                  # resolving twice changes nothing
    # a given constant wins over the measurement, the others still come from it
    given = FutexCosts(syscall_ns=120.0, hash_ns=30.0).resolve(topo)
    assert (given.syscall_ns, given.futex_path_ns) == (120.0, 140.0 - inside - 15.0)
    # an operation cheaper than the model's own in-kernel constants leaves nothing outside the lock
    fast = dataclasses.replace(topo, futex_private_ns=20.0, futex_shared_ns=10.0)
    assert (FutexCosts().resolve(fast).futex_path_ns, FutexCosts().resolve(fast).gup_ns) == (0.0, 0.0)
    # the syscall alone measured: the futex path and the page walk as stated
    only = nl.Topology(nodes=2, cpus_per_node=8, syscall_ns=180.0)
    c = FutexCosts().resolve(only)
    assert (c.syscall_ns, c.futex_path_ns, c.gup_ns) == (180.0, UNMEASURED["futex_path_ns"], UNMEASURED["gup_ns"])


def test_presets_carry_no_measurement_and_price_as_stated():
    for name in nl.Topology.presets():
        topo = nl.Topology.preset(name)
        assert (topo.syscall_ns, topo.futex_private_ns, topo.futex_shared_ns) == (None, None, None), name
        c = FutexCosts().resolve(topo)
        assert {n: getattr(c, n) for n in UNMEASURED} == UNMEASURED, name
    assert UNMEASURED == {"syscall_ns": 100.0, "futex_path_ns": 15.0, "gup_ns": 60.0}


def test_a_measured_topology_keeps_its_figures_in_files_and_attrs(tmp_path):
    topo = nl.Topology(nodes=1, cpus_per_node=2, **MEASURED)
    path = topo.save(tmp_path / "t.json")
    back = nl.Topology.load(path)
    assert {n: getattr(back, n) for n in MEASURED} == MEASURED
    attrs = topo.to_attrs()
    assert {n: attrs[f"topology_{n}"] for n in MEASURED} == MEASURED
    assert "topology_syscall_ns" not in nl.Topology(nodes=1, cpus_per_node=2).to_attrs()
    ds = nl.futex.simulate(perf_bench_hash(back, threads=1, futexes=1), seeds=1)
    assert '"syscall_ns": 180.0' in ds.attrs["costs"]              # the resolved costs the run used


@pytest.mark.parametrize("name,value", [("syscall_ns", -1.0), ("futex_private_ns", float("nan")),
                                        ("futex_shared_ns", "fast")])
def test_a_bad_measurement_is_refused_naming_it(name, value):
    with pytest.raises(NumalabValueError, match=name):
        nl.Topology(nodes=1, cpus_per_node=2, **{name: value})


def test_the_band_of_a_probed_machine_samples_its_measurements_not_the_stated_bands():
    # predict_band: a constant derived from a measured figure is not drawn from its stated band
    # (syscall_ns 70-400 ns); the figure is drawn over the probe's repeats and the constant follows
    from numalab.provenance import Provenance

    e5 = nl.data.futex_topology()
    pub = nl.data.load("futex-e5-2650")
    rows = pub.where(pub.threads == 14, drop=True)
    src = {**e5.provenance(),
           "syscall_ns": Provenance("measurement", "a probe", band=(140.0, 160.0), band_source="its repeats"),
           "futex_private_ns": Provenance("measurement", "a probe", band=(90.0, 110.0), band_source="its repeats")}
    probed = dataclasses.replace(e5, syscall_ns=150.0, futex_private_ns=100.0, sources=src)
    kw = {"samples": 4, "seeds": 1, "refcount": "immutable"}
    stated, measured = (nl.futex.predict_band(rows, t, **kw) for t in (e5, probed))
    banded = measured.attrs["banded"].split(",")
    assert "syscall_ns" not in banded and "futex_path_ns" not in banded and "syscall_ns" in stated.attrs["banded"]
    assert "gup_ns" in banded                      # the shared operation was not measured: its stated band
    assert (measured.attrs["band_topology_syscall_ns"], measured.attrs["band_topology_futex_private_ns"]) == \
        ("140 160", "90 110")
    # where the think time sets the rate (the uncontended rows, 256 buckets and up) the measured
    # path narrows the band: the stated syscall band alone spans 70-400 ns
    width = lambda b: ((b.high - b.low) / b.ops_per_s_per_thread).values[rows.buckets.values >= 256]  # noqa: E731
    assert (width(measured) < 0.5 * width(stated)).all()
    # a figure without a recorded band pins its constant: drawing syscall_ns alone moves nothing
    pinned = dataclasses.replace(e5, syscall_ns=150.0)
    one = nl.futex.predict_band(rows, pinned, names=["syscall_ns"], **kw)
    assert one.attrs["banded"] == "" and one.attrs["band_topology_syscall_ns"] == "150 150"
    np.testing.assert_allclose(one.low.values, one.high.values, rtol=1e-6)   # the MVA's tolerance, 1e-8
    # a syscall_ns given in costs is the caller's and is drawn from its stated band as before
    given = nl.futex.predict_band(rows, pinned, names=["syscall_ns"], costs={"syscall_ns": 150.0}, **kw)
    assert given.attrs["banded"] == "syscall_ns" and (given.high.values > given.low.values).all()


def _probed_e5():
    from numalab.provenance import Provenance

    e5 = nl.data.futex_topology()
    band = lambda lo, hi: Provenance("measurement", "a probe", band=(lo, hi), band_source="its repeats")  # noqa: E731
    src = {**e5.provenance(), "syscall_ns": band(140.0, 160.0), "futex_private_ns": band(90.0, 110.0),
           "futex_shared_ns": band(190.0, 220.0)}
    return e5, dataclasses.replace(e5, syscall_ns=150.0, futex_private_ns=100.0, futex_shared_ns=205.0, sources=src)


def test_calibration_on_a_probed_machine_takes_the_measurement_as_the_prior():
    # calibrate's prior for a measured constant is its measurement's band (+-2 sigma), not the
    # stated one: the rows can move it only as far as the probe's repeats allow
    import math

    from numalab.futex.calibration import prior_sigma

    e5, probed = _probed_e5()
    assert prior_sigma("syscall_ns", probed) == pytest.approx(math.log(160 / 140) / 4)
    assert prior_sigma("syscall_ns") == prior_sigma("syscall_ns", e5) == pytest.approx(math.log(400 / 70) / 4)
    c = {k: FutexCosts().resolve(dataclasses.replace(probed, futex_private_ns=v, futex_shared_ns=w))
         for k, v, w in (("lo", 90.0, 220.0), ("hi", 110.0, 190.0))}
    # futex_path_ns over the private band; gup_ns over the corners of shared - private (80 ... 130 at one core)
    assert prior_sigma("futex_path_ns", probed) == pytest.approx(
        math.log(c["hi"].futex_path_ns / c["lo"].futex_path_ns) / 4)
    assert prior_sigma("gup_ns", probed) == pytest.approx(math.log(c["lo"].gup_ns / c["hi"].gup_ns) / 4)
    assert prior_sigma("hash_ns", probed) == prior_sigma("hash_ns")            # not measured
    assert prior_sigma("syscall_ns", probed, {"syscall_ns": 150.0}) == prior_sigma("syscall_ns")  # given
    # the fit: rows of a machine whose think time says syscall_ns ~300 ns take the stated prior
    # (the same start given in costs=) most of the way there; the measured prior (150 +- 10 ns)
    # holds the fit back towards the measurement (15 rows against the probe's repeats: the rows
    # still move it, as a MAP estimate should)
    pub = nl.data.load("futex-e5-2650")
    rows = pub.where(pub.threads == 28, drop=True)
    rows["ops_per_s_per_thread"].values[:] = nl.futex.predict(rows, e5, costs={"syscall_ns": 300.0}, seeds=1,
                                                              refcount="immutable")
    fitted = {name: nl.futex.calibrate(rows, probed, fit=("syscall_ns",), costs=costs, seeds=1,
                                       refcount="immutable").constants["syscall_ns"]
              for name, costs in (("stated", {"syscall_ns": 150.0}), ("measured", None))}
    assert fitted["stated"] > 250.0
    assert 150.0 < fitted["measured"] < fitted["stated"] - 10.0


@pytest.mark.skipif(not Path("/sys/devices/system/node").is_dir(), reason="no /sys/devices/system/node here")
def test_from_host_times_the_kernel_costs_when_asked():
    plain = nl.Topology.from_host()
    assert (plain.syscall_ns, plain.futex_private_ns, plain.futex_shared_ns) == (None, None, None)
    mine = nl.Topology.from_host(kernel_costs=True)
    assert 0.0 < mine.syscall_ns < 1e5
    prov = mine.provenance()["syscall_ns"]
    assert prov.kind == "measurement" and "from_host(kernel_costs=True)" in prov.source
    assert prov.band[0] <= mine.syscall_ns <= prov.band[1]
    if mine.futex_private_ns is None:            # a kernel that refuses the futex call says why
        assert any(w.startswith("futex_private_ns, futex_shared_ns: not measured") for w in mine.warnings)
    else:
        assert FutexCosts().resolve(mine).syscall_ns == pytest.approx(
            mine.syscall_ns * FutexCosts().clock_ref_ghz / (mine.turbo_ghz or mine.all_core_ghz or 3.0))

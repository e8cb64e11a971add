"""numalab probe's core clock: cpufreq's scaling_cur_freq read while one core, then every core,
spins; the topology's all_core_ghz / turbo_ghz and their provenance; what it says without cpufreq.

The hardware is played by a fake spinner that writes the clocks a turbo CPU would show into a
copy of a fixture sysfs tree while "its" cores are busy, and restores the idle clock after."""

import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from numalab import machine
from numalab.commands.probe import probe_host, summary
from numalab.topology import Topology

FIXTURES = Path(__file__).parent / "fixtures" / "sysfs"
CPU = ("sys", "devices", "system", "cpu")
IDLE_KHZ, TURBO_KHZ, ALL_CORE_KHZ = 800_000, 3_400_000, 2_800_000


def _with_cpufreq(tmp_path, fixture="cxl", cpus=range(8)):
    """A copy of a fixture tree whose CPUs have cpufreq (intel_pstate, idle at 0.8 GHz)."""
    root = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, root)
    for c in cpus:
        d = root.joinpath(*CPU, f"cpu{c}", "cpufreq")
        d.mkdir(parents=True)
        for name, text in (("scaling_cur_freq", IDLE_KHZ), ("cpuinfo_max_freq", 3_500_000),
                           ("base_frequency", 2_100_000), ("scaling_driver", "intel_pstate"),
                           ("scaling_governor", "performance")):
            (d / name).write_text(f"{text}\n")
    return root


class FakeTurbo:
    """The spinner: one busy core reads turbo; with n > 1 busy, each reads around the all-core
    clock (20 MHz below and above it in turn); the idle clock again when the spin ends."""

    def __init__(self, root, one=TURBO_KHZ):
        self.root, self.one, self.calls = root, one, []

    def _set(self, cpu, khz):
        self.root.joinpath(*CPU, f"cpu{cpu}", "cpufreq", "scaling_cur_freq").write_text(f"{khz}\n")

    def __call__(self, cpus, seconds, read):
        self.calls.append((list(cpus), seconds))
        for i, c in enumerate(cpus):
            self._set(c, self.one if len(cpus) == 1 else ALL_CORE_KHZ + 20_000 * (1 if i % 2 else -1))
        try:
            return read(), 0.99
        finally:
            for c in cpus:
                self._set(c, IDLE_KHZ)


def test_clock_probe_spins_one_cpu_per_core_and_reads_the_clocks(tmp_path):
    root = _with_cpufreq(tmp_path)
    hw, steps = FakeTurbo(root), []
    res = machine.probe_clock({0: [0, 1, 2, 3], 1: [4, 5, 6, 7], 2: []}, root, spin=hw, progress=steps.append)
    # the cxl fixture's cores are CPU pairs (0,1) (2,3) (4,5) (6,7): their first siblings spin
    assert hw.calls == [([0], machine.CLOCK_SPIN_S), ([0, 2, 4, 6], machine.CLOCK_SPIN_S)]
    assert res["turbo_GHz"] == 3.4 and res["turbo_cpu"] == 0 and res["cores"] == 4
    expect = np.array([ALL_CORE_KHZ + 20_000 * (1 if i % 2 else -1) for i in range(4)]) / 1e6
    assert res["all_core_GHz"] == pytest.approx(expect.mean()) and res["all_core_band"] == [expect.min(), expect.max()]
    assert (res["driver"], res["governor"], res["cpuinfo_max_GHz"], res["base_GHz"]) == \
        ("intel_pstate", "performance", 3.5, 2.1)
    assert res["warnings"] == [] and len(steps) == 2


def test_probe_sets_the_clocks_with_their_provenance(tmp_path):
    from test_probe import FAKES

    root = _with_cpufreq(tmp_path)
    hw = FakeTurbo(root)
    data = probe_host(root, **FAKES,
                      clock=lambda cpus, r, progress: machine.probe_clock(cpus, r, spin=hw, progress=progress))
    t = Topology.from_dict(data)
    assert (t.all_core_ghz, t.turbo_ghz) == (2.8, 3.4)
    prov = t.provenance()
    assert prov["all_core_ghz"].kind == prov["turbo_ghz"].kind == "measurement"
    assert "numalab probe" in prov["all_core_ghz"].source and "scaling_cur_freq" in prov["all_core_ghz"].source
    assert prov["all_core_ghz"].band == (2.78, 2.82) and "CPU 0 alone" in prov["turbo_ghz"].source
    assert "core clock: 3.40 GHz with one core busy, 2.80 GHz (2.78-2.82) with all 4 busy" in summary(t, data["probe"])
    # the file keeps it (the futex model reads it from there: tests/test_futex_clock.py)
    path = tmp_path / "host.json"
    t.save(path)
    assert (Topology.load(path).all_core_ghz, Topology.load(path).turbo_ghz) == (2.8, 3.4)


def test_a_turbo_read_below_the_all_core_clock_is_taken_as_the_all_core_clock(tmp_path):
    """Turbo off (or noise): the one-core read can fall below the all-core mean; the Topology
    refuses turbo < all-core, so the probe takes the all-core clock and says what it read."""
    from test_probe import FAKES

    root = _with_cpufreq(tmp_path)
    hw = FakeTurbo(root, one=ALL_CORE_KHZ - 30_000)
    data = probe_host(root, **FAKES,
                      clock=lambda cpus, r, progress: machine.probe_clock(cpus, r, spin=hw, progress=progress))
    t = Topology.from_dict(data)
    assert t.turbo_ghz == t.all_core_ghz == 2.8
    assert "read 2.77 GHz, below the all-core clock" in t.provenance()["turbo_ghz"].source


def test_without_cpufreq_the_clock_is_not_given_and_the_warning_says_why():
    from test_probe import FAKES

    res = machine.probe_clock({0: [0, 1, 2, 3]}, FIXTURES / "cxl", spin=pytest.fail)   # never spins
    assert "all_core_GHz" not in res and len(res["warnings"]) == 1
    assert "no cpu<N>/cpufreq/scaling_cur_freq" in res["warnings"][0]
    t = Topology.from_dict(probe_host(FIXTURES / "cxl", **FAKES))
    assert t.all_core_ghz is None and t.turbo_ghz is None
    assert any("core clock: not measured" in w for w in t.warnings)
    assert t.provenance()["all_core_ghz"].kind == "assumed"


def test_a_busy_share_below_nine_tenths_is_a_warning(tmp_path):
    root = _with_cpufreq(tmp_path)
    hw = FakeTurbo(root)

    def loaded(cpus, seconds, read):
        return hw(cpus, seconds, read)[0], 0.5

    res = machine.probe_clock({0: [0, 1, 2, 3]}, root, spin=loaded)
    assert res["busy_share"] == 0.5 and any("busy only 50%" in w for w in res["warnings"])


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="needs Linux CPU affinity")
def test_the_spinner_keeps_its_cpus_busy_until_the_read():
    """The real spinner: pinned processes spin until read() has run, and report how busy they were."""
    cpus = sorted(os.sched_getaffinity(0))[:2]
    t0 = time.perf_counter()
    value, share = machine.spin_and_read(cpus, 0.3, lambda: time.perf_counter() - t0)
    assert value >= 0.3                       # read after the spin time, while they spun
    assert 0.0 < share <= 1.05                # each thread's CPU time over its wall time

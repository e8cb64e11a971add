"""``--rule package.module:function`` in numalab simulate, trace and sweep."""

from __future__ import annotations

import subprocess
import sys

import pytest

MODULE = '''
import numalab as nl


def _big(view, pages=4096):
    """Refuse VMAs of more than ``pages`` pages."""
    return view.size_pages > pages


refuse_big = nl.Rule("refuse_big", _big, kind="skip", before="own_pid")


def recent_two(view, k=2):
    """Scan a VMA that k threads faulted in lately (a plain function: the rule is named after it)."""
    return view.popcount(view.union(min(2, view.windows))) >= k
'''


@pytest.fixture
def here(tmp_path):
    (tmp_path / "myrules.py").write_text(MODULE)
    return tmp_path


def numalab(cwd, *args):
    return subprocess.run([sys.executable, "-m", "numalab", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_trace_counts_the_rules_refusals(here):
    proc = numalab(here, "trace", "--workload", "numa02", "--topology", "2s-ivb-40", "--max-time", "15",
                   "--rule", "myrules:refuse_big", "--format", "perf")
    assert proc.returncode == 0, proc.stderr
    assert "reason=refuse_big" in proc.stdout


def test_simulate_adds_the_rule_to_every_policy(here):
    import xarray as xr

    out = here / "s.nc"
    proc = numalab(here, "simulate", "--workload", "numa02", "--topology", "2s-ivb-40", "--profile", "6.12",
                   "--profile", "6.4", "--seeds", "1", "--max-time", "15", "--rule", "myrules:refuse_big",
                   "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "6.12+refuse_big" in proc.stdout and "6.4+refuse_big" in proc.stdout
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert list(ds.policy.values) == ["6.12+refuse_big", "6.4+refuse_big"]
        assert int(ds["skip_refuse_big"].sum()) > 0


def test_sweep_takes_the_rule_by_name_and_pins_its_version(here):
    import xarray as xr

    out = here / "w.nc"
    proc = numalab(here, "sweep", "--policy", "6.12,6.12+rules=early_passes(vma),starvation+recent_two",
                   "--workload", "numa02", "--topology", "2s-ivb-40", "--set", "workload_threads=4",
                   "--set", "workload_size_bytes=67108864", "--set", "workload_loops=7500", "--seeds", "2",
                   "--rule", "myrules:recent_two", "--out", str(out), "--no-cache", "--workers", "1",
                   "--no-progress")
    assert proc.returncode == 0, proc.stderr
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        names = [str(p) for p in ds.policy.values]
        assert names[0] == "6.12" and names[1].startswith("6.12+rules=early_passes(vma),starvation+recent_two@")
        assert int(ds["allow_recent_two"].sel(policy=names[1]).sum()) > 0


def test_a_bad_rule_is_one_line_naming_it(here):
    proc = numalab(here, "simulate", "--rule", "nosuch:rule")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "--rule 'nosuch:rule'" in proc.stderr and "cannot be imported" in proc.stderr
    proc = numalab(here, "sweep", "--profile", "6.12", "--rule", "myrules:refuse_big", "--out", str(here / "x.nc"))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "--policy" in proc.stderr
    (here / "typo.py").write_text("def typo(view:\n")
    proc = numalab(here, "trace", "--rule", "typo:typo")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "SyntaxError" in proc.stderr
    (here / "broken.py").write_text("def broken(view):\n    return view.nothing_like_this\n")
    proc = numalab(here, "trace", "--rule", "broken:broken")
    assert proc.returncode != 0 and "rule 'broken' raised AttributeError" in proc.stderr

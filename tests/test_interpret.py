"""numalab.interpret: the main job's table (units, 100 columns, spreads without exponents) and the
interpretation generated from the numbers, on constructed Datasets whose answer is known."""

from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr

from numalab import interpret as I
from numalab.counters import VARIABLE_ATTRS


def _ds(policies, seeds=4, **values):
    """A simulate-like Dataset: ``values[var]`` is one (mean, sd) per policy; the per-seed noise
    is the same for every policy (common random numbers) scaled by its sd."""
    rng = np.random.default_rng(0)
    z = rng.normal(0, 1, seeds)
    z = (z - z.mean()) / (z.std(ddof=1) if seeds > 1 else 1.0)
    data = {}
    for var, per in values.items():
        arr = np.array([[m + sd * zz for zz in z] for m, sd in per])
        data[var] = (("policy", "seed"), arr, dict(VARIABLE_ATTRS.get(var, {"units": "visits", "long_name": var})))
    return xr.Dataset(data, coords={"policy": policies, "seed": np.arange(seeds)},
                      attrs={"workload": "numa01_THREAD_ALLOC", "topology": "2s-128"})


STARVED = dict(
    elsp=[(209.0, 0.25), (114.0, 0.6), (113.8, 0.5)],
    syst=[(0.81, 0.002), (1.44, 0.02), (1.48, 0.07)],
    numa_pte_updates=[(0, 0), (8.0e6, 7e5), (9.5e6, 1.8e6)],
    numa_hint_faults=[(0, 0), (15680, 800), (18100, 3700)],
    numa_hint_faults_local=[(0, 0), (14010, 880), (16300, 3400)],
    numa_pages_migrated=[(0, 0), (812000, 37000), (854000, 79000)],
    skip_pid_inactive=[(29040, 82), (4300, 2400), (820, 180)],
    false_skips=[(1635, 4), (300, 30), (24, 6)],
    idle_scans=[(0, 0), (6.75, 2.2), (4.75, 0.5)],
)


def test_format_spread_rounds_mean_and_spread_together_without_exponents():
    assert I.format_spread(208.93, 0.2456) == "208.93 ± 0.25"
    assert I.format_spread(8021460.0, 704190.0) == "8,020,000 ± 700,000"
    assert I.format_spread(29039.0, 82.0) == "29,039 ± 82"
    assert I.format_spread(0.0, 0.0) == "0 ± 0"
    assert I.format_spread(6.75, 2.2) == "6.8 ± 2.2"
    assert I.format_spread(float("nan"), 1.0) == "n/a"
    for m, s in ((1.2e9, 3.3e7), (2e-5, 1e-6), (1635, 3.8)):
        assert "e+" not in I.format_spread(m, s) and "e-" not in I.format_spread(m, s)


def test_table_fits_100_columns_and_states_units():
    ds = _ds(["6.4", "6.12", "rfc2024-hot-shared"], **STARVED)
    text = I.summary_table(ds)
    assert max(map(len, text.splitlines())) <= I.TABLE_WIDTH
    assert "units" in text and re.search(r"^elsp +s +", text, re.M) and re.search(r"^numa_pte_updates +pages ", text, re.M)
    assert "e+0" not in text and "0 ± 0" in text


def test_more_policies_wrap_into_blocks_by_design():
    names = ["6.4", "6.7", "6.8", "6.12", "rfc2023-p4", "rfc2023-p5", "rfc2024-hot-shared"]
    vals = {k: [v[1]] * len(names) for k, v in STARVED.items()}
    text = I.summary_table(_ds(names, **vals))
    assert max(map(len, text.splitlines())) <= I.TABLE_WIDTH
    heads = [ln for ln in text.splitlines() if ln.lstrip().startswith("units")]
    assert len(heads) >= 2 and sum(ln.count("elsp") for ln in text.splitlines()) == len(heads)
    assert all(n in text for n in names)


def test_legend_explains_the_model_only_metrics():
    lines = I.legend(_ds(["a", "b"], **{k: v[:2] for k, v in STARVED.items()}))
    assert [ln.split(":")[0] for ln in lines] == ["skip_pid_inactive", "false_skips", "idle_scans"]
    assert "ground truth" in lines[1] and "writes" in lines[1] and "no hinting fault" in lines[2]


def test_a_starved_baseline_is_explained_in_kernel_terms():
    ds = _ds(["6.4", "6.12", "rfc2024-hot-shared"], **dict(STARVED, elsp=[(209.0, 0.25), (114.0, 0.6), (114.0, 0.6)]))
    ds["elsp"][2] += np.array([0.3, -0.4, 0.2, -0.3])  # the RFC: the same time, give or take its own noise
    assert I.starved(ds) == ["6.4"]
    lines = I.interpretation(ds)
    text = "\n".join(lines)
    assert lines[0].startswith("6.12 finishes 45.") and "faster than 6.4" in lines[0] and "interval" in lines[0]
    why = next(ln for ln in lines if ln.startswith("Why 6.4"))
    assert "numa_pte_updates 0 ± 0" in why and "starved every VMA" in why and "pids_active" in why
    assert "vma_pids_forced" in why and "29,040 pid_inactive skips" in why
    assert "6.12 migrated 812,000 pages per run" in text and "6.4 never did" in text
    # then the two that did scan, against each other: indistinguishable in time, far fewer false skips
    pair = next(ln for ln in lines if ln.startswith("rfc2024-hot-shared and 6.12"))
    assert "not told apart" in pair and "runs of each kernel" in pair
    fs = next(ln for ln in lines if "fewer false skips than 6.12" in ln)
    assert "hot rule" in fs and "shared rule" in fs and "does not move" in fs


def test_a_resolved_slowdown_and_a_longer_history():
    ds = _ds(["6.12", "6.12+N=8"], seeds=6, elsp=[(100.0, 3.0), (103.0, 3.1)],
             numa_hint_faults=[(5000, 100), (5200, 120)], skip_pid_inactive=[(400, 20), (100, 10)],
             false_skips=[(50, 5), (10, 2)])
    lines = I.interpretation(ds)
    assert lines[0].startswith("6.12+N=8 finishes 3.0 % slower than 6.12")
    runs = int(re.search(r"about ([\d,]+) runs", lines[0]).group(1).replace(",", ""))
    from numalab.stats import runs_needed

    assert runs == runs_needed(np.sqrt((3.0 ** 2 + 3.1 ** 2) / 2), 3.0)  # the levels' spread, not the paired one
    fs = next(ln for ln in lines if "false skips" in ln)
    assert "longer history (N = 8 windows against 2)" in fs and fs.endswith("longer.")  # elsp moved: no "though"


def test_no_difference_says_so_and_how_many_runs_it_would_take():
    ds = _ds(["a", "b"], seeds=4, elsp=[(50.0, 2.0), (50.0, 2.0)], numa_hint_faults=[(10, 1), (10, 1)],
             skip_pid_inactive=[(5, 1), (5, 1)], false_skips=[(3, 1), (3, 1)])
    ds["elsp"][1] += np.array([0.35, -0.25, 0.22, -0.11])
    lines = I.interpretation(ds)
    assert len(lines) == 1 and "not told apart" in lines[0] and "includes 0" in lines[0]
    assert int(re.search(r"about ([\d,]+) runs", lines[0]).group(1).replace(",", "")) > 100
    ds["elsp"][1] = ds["elsp"][0]
    assert "no change to resolve" in I.interpretation(ds)[0]


def test_one_seed_and_unfinished_runs_are_stated():
    one = _ds(["a", "b"], seeds=1, elsp=[(50.0, 0.0), (40.0, 0.0)])
    assert "one seed: no interval" in I.interpretation(one)[0]
    cut = _ds(["a", "b"], elsp=[(3.0, 0.0), (3.0, 0.0)])
    cut["finished"] = (("policy", "seed"), np.zeros((2, 4), int))
    assert I.interpretation(cut)[0].startswith("Some runs stopped at max_time")
    assert "max_time" in I.summary_table(cut)
    assert I.interpretation(_ds(["a"], elsp=[(1.0, 0.1)])) == []


@pytest.mark.slow
def test_the_main_job_prints_its_table_legend_and_interpretation(capsys):
    from numalab.cli import main

    assert main(["simulate", "--workload", "numa02", "--topology", "2s-ivb-40", "--profile", "6.4",
                 "--profile", "6.12", "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= 100
    assert "units" in out and "false_skips: " in out and "What it says:" in out and "e+0" not in out

"""numalab.engine.scanmap (the data of the scanner heatmap) and plots.scan_heatmap: the PTEs per
visit and the faults per VMA add up to the counters of an untraced run, and the heatmap draws
exactly those numbers."""

from __future__ import annotations

import numpy as np
import pytest

import numalab as nl
from numalab import plots
from numalab.engine.scanmap import scan_map


@pytest.fixture(scope="module")
def mapped():
    wl = nl.workload("numa01_THREAD_ALLOC", "2s-ivb-40", threads=4, size_bytes=256 << 20)
    return wl, scan_map(wl, "6.12", [0, 3])


def test_the_split_adds_up_to_the_untraced_counters(mapped):
    wl, ds = mapped
    sim = nl.simulate(wl, ["6.12"], seeds=[0, 3])
    for s in (0, 3):
        runs = np.flatnonzero(ds["seed"].values == s)
        visits = np.isin(ds["visit_run"].values, runs)
        assert ds["visit_pte_updates"].values[visits].sum() == int(sim["numa_pte_updates"].sel(seed=s).squeeze())
        assert ds["visit_huge_pte_updates"].values[visits].sum() == int(sim["numa_huge_pte_updates"].sel(seed=s).squeeze())
        assert ds["fault_count"].values[ds["fault_seed"].values == s].sum() == int(sim["numa_hint_faults"].sel(seed=s).squeeze())
    assert np.allclose(ds.attrs["elsp"], sim["elsp"].values.ravel())  # watching changed nothing
    per_run = np.bincount(ds["visit_run"].values, weights=ds["visit_pte_updates"].values, minlength=ds.sizes["run"])
    assert np.array_equal(per_run.astype(np.int64), ds["pte_updates"].values)


def test_it_is_the_scan_trace_plus_what_the_heatmap_needs(mapped):
    wl, ds = mapped
    tr = nl.scan_trace(wl, "6.12", [0, 3])
    for v in tr.data_vars:
        assert np.array_equal(tr[v].values, ds[v].values), v
    # a VMA that was skipped took no PTE change in that visit; faults only where a scan had been
    assert (ds["visit_pte_updates"].values[~ds["scanned"].values] == 0).all()
    scanned_vmas = set(ds["vma"].values[ds["scanned"].values & (ds["visit_pte_updates"].values > 0)].tolist())
    assert set(ds["fault_vma"].values.tolist()) <= scanned_vmas
    assert len(ds.attrs["vma_kinds"]) == wl.nvmas and ds.attrs["vma_mm"] == [int(m) for m in wl.vma_mm]


def test_heatmap_draws_the_numbers_of_one_seed(mapped):
    _, ds = mapped
    fig = plots.scan_heatmap(ds, seed=3, bins=30)
    dec, pte, flt = (a.images[0].get_array() for a in fig.axes if a.images)
    runs = np.flatnonzero(ds["seed"].values == 3)
    visits = np.isin(ds["visit_run"].values, runs)
    assert np.nansum(pte) == ds["visit_pte_updates"].values[visits].sum()
    assert np.nansum(flt) == ds["fault_count"].values[ds["fault_seed"].values == 3].sum()
    assert dec.shape == (len(ds.attrs["vma_kinds"]), 30)
    never = sorted(set(range(dec.shape[0])) - set(ds["vma"].values[visits].tolist()))
    assert all(np.ma.getmaskarray(dec[v]).all() or np.isnan(np.ma.filled(dec[v], np.nan)).all() for v in never)
    kinds = plots.scan_heatmap(ds, seed=3, by="kind").axes[0].images[0].get_array()
    assert kinds.shape[0] == len(set(f"p{m} {k}" if len(set(ds.attrs["vma_mm"])) > 1 else k
                                     for m, k in zip(ds.attrs["vma_mm"], ds.attrs["vma_kinds"])))


def test_heatmap_of_a_plain_trace_draws_the_decisions_only_and_checks_its_input(mapped):
    from numalab.errors import NumalabValueError

    wl, _ = mapped
    fig = plots.scan_heatmap(nl.scan_trace(wl, "6.4", 0))
    assert sum(1 for a in fig.axes if a.images) == 1
    with pytest.raises(NumalabValueError, match="seed=7 is not in the trace"):
        plots.scan_heatmap(mapped[1], seed=7)
    with pytest.raises(NumalabValueError, match="not a scan trace"):
        plots.scan_heatmap(nl.simulate(wl, ["6.12"], seeds=1))


def test_trace_command_draws_the_heatmap(tmp_path, capsys):
    from numalab.cli import main

    out = tmp_path / "where.svg"
    assert main(["trace", "--workload", "numa02", "--topology", "2s-ivb-40", "--max-time", "4",
                 "--plot", str(out), "--by", "kind"]) == 0
    assert f"wrote {out}" in capsys.readouterr().out and out.read_text().lstrip().startswith("<?xml")
    assert main(["trace", "--workload", "numa02", "--plot", str(tmp_path / "x.jpg")]) == 2
    assert "allowed: png, pdf, svg" in capsys.readouterr().err and not (tmp_path / "x.jpg").exists()

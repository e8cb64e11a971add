"""Image-regression and behaviour tests of numalab.plots.

Each figure is rendered from a fixed synthetic Dataset (contract names, fixed seeds), saved as
PNG under the package style (bundled DejaVu Sans, 100 dpi, fixed text hinting) and compared with the
committed baseline in tests/baseline_images/ by ``matplotlib.testing.compare.compare_images``.

Tolerance: RMS difference <= IMAGE_TOL = 2.0 (0-255 scale, over all pixels). Measured with
these figures (matplotlib 3.11.2, its bundled freetype): re-rendering gives RMS 0.0; one of 18
samples moved by 8 s gives RMS 8.9, one bar 10 % longer RMS 8.0 (asserted below). Text metrics
are part of the picture: rendering with ``text.hinting = "auto"`` instead of the style's setting
shifts constrained layout by a pixel and gives RMS 27-43, which is why every figure is drawn and
saved under ``numalab.plots.style()`` (bundled DejaVu Sans, fixed hinting and DPI). A matplotlib
release that changes text rasterisation needs the baselines regenerated.

Regenerate the baselines after an intended change with::

    NUMALAB_UPDATE_BASELINES=1 python -m pytest tests/test_plots.py -p no:cacheprovider
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import matplotlib as mpl
import numpy as np
import pytest
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.testing.compare import compare_images

from numalab import plots
from numalab.errors import NumalabValueError

BASELINE_DIR = Path(__file__).parent / "baseline_images"
IMAGE_TOL = 2.0
UPDATE = os.environ.get("NUMALAB_UPDATE_BASELINES") == "1"

WORKLOADS = ["numa01", "numa01_THREAD_ALLOC", "numa02", "numa02_SMT"]


# --- fixed synthetic inputs with the contract's names (notes/CONTRACTS.md) ---------------------

def decision_matrix_da():
    reasons = ("unsuitable", "shared_ro", "inaccessible", "scan_delay", "pid_inactive", "seq_completed",
               "early_passes", "own_pid", "hot", "shared", "ignore_pid_inactive", "forced")
    rng = np.random.default_rng(11)
    codes = rng.choice([3, 4, 5, 6, 7, 8, 9], size=(8, 10)).astype(np.int8)
    return xr.DataArray(codes, dims=("task", "vma"),
                        coords={"task": 4100 + np.arange(8), "vma": [f"{0x7f00 + 0x20 * i:#x}" for i in range(10)]},
                        attrs={"reasons": list(reasons), "policy": "rfc2024-hot-shared"})


def runs_ds():
    rng = np.random.default_rng(12)
    pol = ["6.12", "rfc2023-p6", "N=8"]
    ds = xr.Dataset(coords={"policy": pol, "seed": np.arange(6)})
    for i, r in enumerate(["pid_inactive", "scan_delay", "seq_completed", "unsuitable"]):
        ds[f"skip_{r}"] = (("policy", "seed"), rng.poisson(40 * (i + 1), size=(3, 6)).astype(float),
                           {"units": "1", "long_name": f"VMA visits skipped: {r}"})
    ds["elsp"] = (("policy", "seed"), 100 + rng.normal(0, 4, (3, 6)) + np.array([[0], [-9], [6]]),
                  {"units": "s", "long_name": "elapsed time"})
    return ds


def convergence_ds():
    t = np.linspace(0, 20, 41)
    frac = 1 - np.exp(-t[:, None] / np.array([3.0, 6.0]))
    pages = np.stack([1000 * (0.5 + 0.5 * frac), 1000 * (0.5 - 0.5 * frac)], axis=-1)
    return xr.Dataset(
        {"pages_node": (("time", "process", "node"), pages, {"units": "pages", "long_name": "pages on node"}),
         "local_fraction": (("time", "process"), 0.5 + 0.5 * frac, {"units": "1"})},
        coords={"time": ("time", t, {"units": "s"}), "process": [0, 1], "node": [0, 1]})


def history_ds():
    rng = np.random.default_rng(13)
    hist = np.array([2, 4, 6, 8, "adaptive"], dtype=object)
    base = np.array([300, 150, 20, 25.0])[:, None, None]
    e = base * (1 + 0.04 * rng.standard_normal((4, 5, 4)) - 0.02 * np.arange(5)[None, :, None])
    return xr.Dataset(
        {"elsp": (("workload", "history", "seed"), e, {"units": "s", "long_name": "elapsed time"}),
         "syst": (("workload", "history", "seed"), 0.3 * e, {"units": "s", "long_name": "system time"})},
        coords={"workload": WORKLOADS, "history": hist, "seed": np.arange(4)})


def tradeoff_ds():
    rng = np.random.default_rng(14)
    n = np.arange(1, 18)  # N = 1..16, then "adaptive" (drawn like N = 17 here)
    fs = 100 / n[None, :, None] * np.array([1.0, 0.7])[:, None, None] + rng.random((2, 17, 3))
    idle = 10 * np.log1p(n)[None, :, None] * np.array([1.0, 1.3])[:, None, None] + rng.random((2, 17, 3))
    fs[:, -1] *= 2.5  # the adaptive point sits off the N curve
    history = np.array([*range(1, 17), "adaptive"], dtype=object)
    return xr.Dataset(
        {"false_skips": (("profile", "history", "seed"), fs, {"units": "1", "long_name": "false skips"}),
         "idle_scans": (("profile", "history", "seed"), idle, {"units": "1", "long_name": "idle scans"})},
        coords={"profile": ["6.12", "rfc2023-p6"], "history": history, "seed": np.arange(3)})


def fidelity_das():
    rows = ["numa01 p5/p4", "numa01_THREAD_ALLOC p5/p4", "numa02 p5/p4", "numa01 p6/p5"]
    pub = xr.DataArray([-4.1, -27.1, -33.6, -1.1], dims="row", coords={"row": rows})
    rng = np.random.default_rng(15)
    sim = xr.DataArray(np.array([-3, -20, -40, 2.0])[:, None] + rng.normal(0, 2, (4, 6)),
                       dims=("row", "seed"), coords={"row": rows})
    return pub, sim


def fidelity_machines_das():
    rows = ["icl p5/p4 numa01", "icl p5/p4 TA", "icl p5/p4 numa02", "csl 6.4 numa01", "csl 6.4 numa02",
            "spr 6.4 numa01", "spr 6.8 TA", "spr 6.8 pages_migrated"]
    machines = ["lkp-icl-2sp6"] * 3 + ["lkp-csl-2sp9"] * 2 + ["lkp-spr-r02"] * 3
    pub = xr.DataArray([-4.1, -27.1, -33.6, 118.9, -3.3, 39.3, -46.2, 126.1], dims="row",
                       coords={"row": rows, "machine": ("row", machines)})
    rng = np.random.default_rng(17)
    sim = xr.DataArray(np.array([0.1, -18.5, -6.8, 87.7, 0.0, 86.6, -5.3, 3.2])[:, None] + rng.normal(0, 3, (8, 4)),
                       dims=("row", "seed"), coords={"row": rows})
    return pub, sim


def futex_ds():
    rng = np.random.default_rng(16)
    b = 2 ** np.arange(4, 15, 2)
    ops = (1e6 / (1 + 200 / b[:, None, None]) * np.array([1.0, 1.3, 1.6])[None, :, None]
           * (1 + 0.02 * rng.standard_normal((len(b), 3, 4))))
    return xr.Dataset(
        {"ops_per_s_per_thread": (("buckets", "mode", "seed"), ops,
                                  {"units": "1/s", "long_name": "futex ops per second per thread"})},
        coords={"buckets": b, "mode": ["classic", "numa_global", "private_immutable"], "seed": np.arange(4)})


FIGURES = {
    "decision_matrix": lambda: plots.decision_matrix(decision_matrix_da()),
    "pid_bitmap": lambda: plots.pid_bitmap(plots.pid_bit_occupancy([1, 4, 16, 32, 48, 64, 96, 128, 256], draws=32)),
    "convergence": lambda: plots.convergence(convergence_ds()),
    "skip_reasons": lambda: plots.skip_reasons(runs_ds()),
    "history_sweep": lambda: plots.history_sweep(history_ds()),
    "tradeoff": lambda: plots.tradeoff(tradeoff_ds()),
    "fidelity": lambda: plots.fidelity(*fidelity_das()),
    "fidelity_machines": lambda: plots.fidelity_machines(*fidelity_machines_das()),
    "futex_buckets": lambda: plots.futex_buckets(futex_ds()),
    "samples": lambda: plots.samples(runs_ds()),
    "paired_change": lambda: plots.paired_change(history_ds(), variables=("elsp", "syst"), baseline=2),
}


def _render(name, tmp_path) -> Path:
    fig = FIGURES[name]()
    assert isinstance(fig, Figure)
    return plots.save(fig, tmp_path / f"{name}.png")


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_figure_matches_baseline(name, tmp_path):
    actual = _render(name, tmp_path)
    expected = BASELINE_DIR / f"{name}.png"
    if UPDATE:
        BASELINE_DIR.mkdir(exist_ok=True)
        shutil.copyfile(actual, expected)
        pytest.skip(f"baseline regenerated: {expected}")
    assert expected.exists(), f"no baseline {expected}; run with NUMALAB_UPDATE_BASELINES=1"
    result = compare_images(str(expected), str(actual), tol=IMAGE_TOL)
    assert result is None, result


def _rms(a: Path, b: Path) -> float:
    from matplotlib.testing.compare import calculate_rms
    from PIL import Image

    return calculate_rms(np.asarray(Image.open(a).convert("RGB")).astype(np.int16),
                         np.asarray(Image.open(b).convert("RGB")).astype(np.int16))


def test_tolerance_catches_small_changes(tmp_path):
    """The tolerance is tight enough to see a small, real change of a figure."""
    base = plots.save(plots.samples(runs_ds()), tmp_path / "base.png")
    ds = runs_ds()
    ds["elsp"][1, 0] = ds["elsp"][1, 0] + 8.0  # one sample of one policy moves by 8 s
    moved = plots.save(plots.samples(ds), tmp_path / "moved.png")
    assert _rms(base, moved) > IMAGE_TOL
    runs = runs_ds()
    runs["skip_scan_delay"][0] = runs["skip_scan_delay"][0] * 1.1  # one bar 10 % longer
    longer = plots.save(plots.skip_reasons(runs), tmp_path / "longer.png")
    base2 = plots.save(plots.skip_reasons(runs_ds()), tmp_path / "base2.png")
    assert _rms(base2, longer) > IMAGE_TOL
    again = plots.save(plots.samples(runs_ds()), tmp_path / "again.png")
    assert _rms(base, again) == 0.0  # rendering is deterministic


# --- behaviour ----------------------------------------------------------------------------------

def test_style_leaves_global_rcparams_alone():
    before = dict(mpl.rcParams)
    plots.history_sweep(history_ds())
    after = dict(mpl.rcParams)
    assert {k for k in before if before[k] != after[k]} == set()


def test_figures_are_not_registered_with_pyplot():
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    plots.futex_buckets(futex_ds())
    plots.decision_matrix(decision_matrix_da())
    assert plt.get_fignums() == before


def test_given_ax_is_drawn_into_and_its_figure_returned():
    fig = Figure()
    ax = fig.subplots()
    out = plots.futex_buckets(futex_ds(), ax=ax)
    assert out is fig
    assert len(ax.lines) >= 3  # one line per mode
    fig2 = Figure()
    axes = fig2.subplots(2, 4)
    assert plots.history_sweep(history_ds(), ax=axes) is fig2
    with pytest.raises(NumalabValueError, match="ax holds 1 Axes"):
        plots.history_sweep(history_ds(), ax=ax)


def test_decision_matrix_colours_and_legend_follow_reasons():
    da = decision_matrix_da()
    fig = plots.decision_matrix(da)
    ax = fig.axes[0]
    names = np.asarray(da.attrs["reasons"])[da.values]
    present = {str(n) for n in names.ravel()}
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {lab.split(": ", 1)[1] for lab in labels} == present
    assert "skip: pid_inactive" in labels and "scan: own_pid" in labels
    # every cell's colour is its reason's fixed colour
    img = ax.images[0]
    rgba = img.cmap(img.norm(img.get_array()))
    for (i, j), name in np.ndenumerate(names):
        assert mpl.colors.to_hex(rgba[i, j]) == mpl.colors.to_hex(plots.REASON_COLOURS[name])
    # names given as strings draw the same picture as codes
    as_str = da.copy(data=names)
    rgba2 = plots.decision_matrix(as_str).axes[0].images[0]
    assert np.array_equal(rgba2.cmap(rgba2.norm(rgba2.get_array())), rgba)


def test_decision_matrix_rejects_bad_input():
    da = decision_matrix_da()
    with pytest.raises(NumalabValueError, match="dims"):
        plots.decision_matrix(da.expand_dims(replica=2))
    with pytest.raises(NumalabValueError, match="codes"):
        plots.decision_matrix(da.copy(data=np.full(da.shape, 40, np.int8)))


def test_pid_bit_occupancy_matches_the_hash():
    occ = plots.pid_bit_occupancy([1, 8, 16, 32, 64, 128, 256], draws=200, seed=3)
    d = occ["distinct_bits"]
    # Fibonacci hashing spreads consecutive keys: up to 32 consecutive TIDs never collide in 64 bits
    assert (d.sel(width=64, tids="consecutive", threads=[1, 8, 16, 32]) == d["threads"].sel(threads=[1, 8, 16, 32])).all()
    assert (d.sel(width=64, threads=256) <= 64).all() and (d.sel(width=128) <= 128).all()
    assert (d.sel(width=64, tids="consecutive", threads=128) == 64).all()  # saturated
    # random TIDs: birthday expectation width * (1 - (1 - 1/width)**T), mean of 200 draws
    for width in (64, 128):
        for t in (16, 64, 256):
            expect = width * (1 - (1 - 1 / width) ** t)
            got = float(d.sel(width=width, tids="random", threads=t).mean())
            assert abs(got - expect) < 0.06 * expect + 0.5, (width, t, got, expect)
    assert np.array_equal(occ["collisions"], occ["threads"] - d)
    assert occ.equals(plots.pid_bit_occupancy([1, 8, 16, 32, 64, 128, 256], draws=200, seed=3))


def test_pid_bit_occupancy_consecutive_against_direct_formula():
    # one draw with a known start, checked with the §2.1 formula written out in plain Python
    occ = plots.pid_bit_occupancy([48], widths=[64], draws=1, seed=0)
    rng = np.random.default_rng(0)
    t0 = int(rng.integers(300, 4194304 - 48, size=(1, 1))[0, 0])
    bits = {((tid * 0x61C88647) & 0xFFFFFFFF) >> 26 for tid in range(t0, t0 + 48)}
    assert int(occ["distinct_bits"].sel(width=64, tids="consecutive", threads=48)[0]) == len(bits)


def test_acceptance_band_is_the_calibration_rule():
    lo, hi = plots.acceptance_band([-27.1, -4.1, 12.0])
    assert np.allclose(lo, [-54.2, -7.0, 6.0]) and np.allclose(hi, [-13.55, 7.0, 24.0])


def test_plotters_name_missing_variables_and_extra_dims():
    with pytest.raises(NumalabValueError, match="ops_per_s_per_thread"):
        plots.futex_buckets(runs_ds())
    with pytest.raises(NumalabValueError, match=r"select \['nodes'\] first"):
        plots.futex_buckets(futex_ds().expand_dims(nodes=[1, 2]))
    with pytest.raises(NumalabValueError, match="skip_<reason>"):
        plots.skip_reasons(futex_ds())
    with pytest.raises(NumalabValueError, match="kind"):
        plots.pid_bitmap(kind="bits")


def test_futex_buckets_one_line_per_mode_and_thread_count():
    ds = futex_ds()
    both = xr.concat([ds, ds * 0.5], dim=xr.DataArray([16, 64], dims="threads", name="threads"))
    ax = plots.futex_buckets(both).axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [f"{m}, {t} threads" for m in ds["mode"].values for t in (16, 64)]
    means = both["ops_per_s_per_thread"].mean("seed")
    drawn = [ln for ln in ax.lines if ln.get_marker() == "o"]
    assert np.allclose(drawn[1].get_ydata(), means.sel(mode="classic", threads=64).values)


def test_adaptive_is_drawn_apart_from_the_n_curve():
    ax = plots.tradeoff(tradeoff_ds()).axes[0]
    curves = [ln for ln in ax.lines if ln.get_marker() == "o"]
    stars = [ln for ln in ax.lines if ln.get_marker() == "*"]
    assert [len(ln.get_xdata()) for ln in curves] == [16, 16] and len(stars) == 2
    mean = tradeoff_ds()["false_skips"].mean("seed")
    assert np.allclose([ln.get_ydata()[0] for ln in stars], mean.sel(history="adaptive").values.astype(float))
    fig = plots.history_sweep(history_ds())
    top = fig.axes[0]
    assert [len(c.get_children()) > 0 for c in top.containers] == [True, True]  # N line + adaptive point
    assert len(top.containers[0].lines[0].get_xdata()) == 4


def test_samples_draws_every_sample_and_the_mean():
    ds = runs_ds()
    ax = plots.samples(ds).axes[0]
    pts = [ln for ln in ax.lines if ln.get_marker() == "o"]
    means = [ln for ln in ax.lines if ln.get_marker() == "D"]
    assert [len(ln.get_ydata()) for ln in pts] == [6, 6, 6]
    assert np.allclose([ln.get_ydata()[0] for ln in means], ds["elsp"].mean("seed").values)


def test_every_policy_reason_has_its_own_colour():
    from numalab.policy import REASONS

    assert set(REASONS) <= set(plots.REASON_COLOURS)
    assert len({plots.REASON_COLOURS[r] for r in REASONS}) == len(REASONS)


def test_decision_matrix_of_a_real_policy_and_from_netcdf_attrs():
    from numalab.policy import REASONS
    from numalab.widgets import decision_passes

    m = decision_passes("rfc2023-p6", threads=3, passes=6)["decision"].isel({"pass": 5})
    ax = plots.decision_matrix(m).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(t) for t in m["tid"].values]
    present = {REASONS[c] for c in np.unique(m.values)}
    assert {t.get_text().split(": ")[1] for t in ax.get_legend().get_texts()} == present
    # CF flag_meanings-style string attr, as a netCDF round trip may leave it
    flat = m.copy()
    flat.attrs["reasons"] = " ".join(REASONS)
    ax2 = plots.decision_matrix(flat).axes[0]
    assert [t.get_text() for t in ax2.get_legend().get_texts()] == [t.get_text() for t in ax.get_legend().get_texts()]


def test_fidelity_machines_draws_one_series_per_machine_and_numbers_the_misses():
    pub, sim = fidelity_machines_das()
    fig = Figure()
    ax = fig.subplots()
    assert plots.fidelity_machines(pub, sim, ax=ax) is fig
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    for m, n_ok, n in (("lkp-icl-2sp6", 2, 3), ("lkp-csl-2sp9", 2, 2), ("lkp-spr-r02", 0, 3)):
        assert f"{m}: {n_ok} of {n} reproduced" in labels
    assert any("within 2x" in t for t in labels) and any("±7 %" in t for t in labels)
    # the misses (outside the rule) are listed beside the axes with their row label
    side = [t.get_text() for t in ax.texts if t.get_text().startswith("outside the rule")]
    assert len(side) == 1
    for row in ("icl p5/p4 numa02", "spr 6.4 numa01", "spr 6.8 TA", "spr 6.8 pages_migrated"):
        assert row in side[0]
    assert "csl 6.4 numa01" not in side[0]  # +87.7 against +118.9: inside the factor-2 wedge
    assert ax.get_title() == "published vs simulated: 4 of 8 rows reproduced"


def test_fidelity_machines_gives_coincident_misses_one_label():
    # two misses on the same spot (the v6.8 huge and small PTE updates) share the label "2,3";
    # a miss elsewhere keeps its own number
    rows = ["icl numa02", "spr pte_updates", "spr huge_pte_updates", "spr pages_migrated"]
    pub = xr.DataArray([-33.6, 147.2, 148.2, 126.1], dims="row",
                       coords={"row": rows, "machine": ("row", ["lkp-icl-2sp6"] + ["lkp-spr-r02"] * 3)})
    sim = xr.DataArray(np.array([[-6.8, -6.7], [34.3, 34.4], [34.3, 34.4], [3.1, 3.3]]), dims=("row", "seed"),
                       coords={"row": rows})
    fig = plots.fidelity_machines(pub, sim)
    numbers = sorted(t.get_text() for t in fig.axes[0].texts if not t.get_text().startswith("outside"))
    assert numbers == ["1", "2,3", "4"]


def test_fidelity_machines_needs_the_machine_of_each_row():
    pub, sim = fidelity_machines_das()
    with pytest.raises(NumalabValueError, match="machine"):
        plots.fidelity_machines(pub.drop_vars("machine"), sim)


def test_paired_change_draws_the_stats_numbers():
    from numalab import stats

    ds = history_ds()
    fig = plots.paired_change(ds, variables=("elsp",), baseline=2)
    eff = stats.paired_change(ds["elsp"].assign_coords(history=[str(h) for h in ds.history.values]), "history", "2")
    a = fig.axes[1]  # numa01_THREAD_ALLOC
    means = [ln for ln in a.lines if ln.get_marker() == "D"]
    want = eff["mean"].sel(workload="numa01_THREAD_ALLOC").values[1:]
    assert np.allclose([ln.get_xdata()[0] for ln in means], want)
    pts = [ln for ln in a.lines if ln.get_marker() == "o"]
    assert [len(ln.get_xdata()) for ln in pts] == [4, 4, 4, 4]  # every seed of every N but the baseline
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["N=4", "N=6", "N=8", "N=adaptive"]


def test_paired_change_interval_and_significance():
    from numalab import stats

    rng = np.random.default_rng(1)
    base = 100 + rng.normal(0, 5, 8)
    da = xr.DataArray(np.stack([base, base * 0.97 + rng.normal(0, 0.2, 8), base * 1.0005]), dims=("policy", "seed"),
                      coords={"policy": ["a", "b", "c"]}, name="elsp")
    eff = stats.paired_change(da, "policy")
    pct = 100 * (da.values[1] - base) / base
    half = stats.t_ppf(0.975, 7) * pct.std(ddof=1) / np.sqrt(8)
    assert np.isclose(float(eff["mean"].sel(policy="b")), pct.mean())
    assert np.isclose(float(eff["hi"].sel(policy="b")) - float(eff["lo"].sel(policy="b")), 2 * half)
    assert abs(stats.t_ppf(0.975, 7) - 2.364624251592785) < 1e-8
    # the paired interval excludes 0 although the levels' stddev (about 5 %) is larger than the effect
    assert float(eff["hi"].sel(policy="b")) < 0
    cmp = stats.mmtests_compare(da, along="policy")
    assert list(eff["significant"].values) == list(cmp["significant"].sel(stat="Amean").values)
    boot = stats.paired_change(da, "policy", method="bootstrap")
    assert float(boot["lo"].sel(policy="b")) < pct.mean() < float(boot["hi"].sel(policy="b"))


def test_skip_reason_whiskers_never_go_below_zero():
    ds = runs_ds()
    ds["skip_unsuitable"][:] = 0.0
    ds["skip_unsuitable"][0, 0] = 500.0  # one outlier seed: mean - stddev would be negative
    ax = plots.skip_reasons(ds).axes[0]
    for coll in ax.collections:  # the error-bar segments
        for seg in coll.get_segments():
            assert seg[:, 0].min() >= 0


@pytest.mark.parametrize("fmt", ["png", "pdf", "svg"])
def test_save_writes_the_format_its_suffix_names_with_fonts_embedded(tmp_path, fmt):
    fig = plots.samples(runs_ds(), var="elsp")
    path = plots.save(fig, tmp_path / f"fig.{fmt}", dpi=200)
    data = path.read_bytes()
    if fmt == "png":
        from PIL import Image

        with Image.open(path) as img:
            dpi, size = img.info["dpi"], img.size
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and round(dpi[0]) == 200
        assert size == (round(fig.get_figwidth() * 200), round(fig.get_figheight() * 200))
    elif fmt == "pdf":
        assert data.startswith(b"%PDF") and b"/FontFile2" in data and b"DejaVuSans" in data  # TrueType, embedded
        assert b"/Type3" not in data and b"CreationDate" not in data
    else:
        text = data.decode()
        assert "<svg" in text and "<text" not in text and "<path" in text  # glyphs as outlines: no font needed
    assert plots.save(fig, tmp_path / f"again.{fmt}", dpi=200).read_bytes() == data  # same figure, same bytes
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind


def test_save_refuses_what_it_cannot_write(tmp_path):
    from numalab.errors import NumalabValueError

    fig = plots.samples(runs_ds(), var="elsp")
    with pytest.raises(NumalabValueError, match="allowed: png, pdf, svg"):
        plots.save(fig, tmp_path / "fig.jpg")
    with pytest.raises(NumalabValueError, match="dpi"):
        plots.save(fig, tmp_path / "fig.png", dpi=0)
    with pytest.raises(NumalabValueError, match="matplotlib Figure"):
        plots.save("not a figure", tmp_path / "fig.png")
    assert not list(tmp_path.iterdir())


def test_paired_change_marks_its_own_statistic_and_puts_counts_on_a_ratio_scale():
    from numalab import stats

    ds = history_ds()
    rng = np.random.default_rng(5)
    fs = rng.poisson(np.array([45, 3, 3, 2, 4])[None, :, None] * np.ones((4, 1, 4))).astype(float)
    fs[:, 1, 0] = 0.0  # a count that fell to 0 in one seed
    ds["false_skips"] = (("workload", "history", "seed"), fs, {"units": "visits", "long_name": "false skips"})
    fig = plots.paired_change(ds, variables=("elsp", "false_skips"), baseline=2)
    hist = [str(h) for h in ds.history.values]
    for r, (var, scale) in enumerate((("elsp", "linear"), ("false_skips", "log"))):
        eff = stats.paired_change(ds[var].assign_coords(history=hist), "history", "2", scale=scale)
        a = fig.axes[r * 4]  # numa01
        assert a.get_xscale() == ("function" if scale == "log" else "linear")
        means = [ln.get_xdata()[0] for ln in a.lines if ln.get_marker() == "D"]
        assert np.allclose(means, eff["mean"].sel(workload="numa01").values[1:])
        stars = [t for t in a.texts if t.get_text() == "*"]
        assert len(stars) == int(eff["resolved"].sel(workload="numa01").values[1:].sum())  # the paired interval, not mmtests
        runs = [t.get_text() for t in a.texts if t.get_text().startswith("n=")]
        assert len(runs) == 4
    lo = stats.paired_change(ds["false_skips"].assign_coords(history=hist), "history", "2", scale="log")["lo"]
    assert float(lo.min()) > -100  # no interval of a count below -100 %
    assert "excludes 0" in fig._suptitle.get_text() and "mmtests" not in fig._suptitle.get_text()


def test_tradeoff_gives_coinciding_points_one_label_and_labels_do_not_overlap():
    ds = tradeoff_ds()
    ds["false_skips"][:, 3:16] = ds["false_skips"][:, 3:4].values  # N = 4..16 all at N = 4's point
    ds["idle_scans"][:, 3:16] = ds["idle_scans"][:, 3:4].values
    fig = plots.tradeoff(ds)
    texts = [t for t in fig.axes[0].texts]
    labels = [t.get_text() for t in texts]
    assert "N=4\u201316" in labels and not any(t in labels for t in ("N=8", "N=16"))
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw_without_rendering()
    boxes = [t.get_window_extent(renderer) for t in texts]
    assert not any(boxes[i].overlaps(boxes[j]) for i in range(len(boxes)) for j in range(i))


def test_nearly_equal_levels_get_no_offset_text():
    ds = history_ds()
    ds["elsp"][:] = 39.62 + 1e-5 * np.arange(ds["elsp"].size).reshape(ds["elsp"].shape)
    fig = plots.history_sweep(ds)
    fig.draw_without_rendering()
    assert all(not a.yaxis.get_offset_text().get_text() for a in fig.axes)


def test_futex_figure_states_the_thread_count():
    import numalab as nl

    sw = nl.futex.sweep(buckets=[2, 16, 128], mode=["classic"], seeds=1, topology="2s-ivb-40")
    assert plots.futex_threads(sw) == 40 and plots.futex_buckets(sw).axes[0].get_title().endswith(", 40 threads")
    sw = nl.futex.sweep(buckets=[2, 16, 128], mode=["classic"], seeds=1, topology="2s-ivb-40", threads=14)
    assert plots.futex_buckets(sw).axes[0].get_title().endswith(", 14 threads")

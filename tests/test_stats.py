"""numalab.stats against tabulated values, closed forms and straightforward numpy formulas."""

import math

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from numalab import stats

# ---------------------------------------------------------------------------------------------
# Student t without scipy

# one-sided critical values t_{p, df} from a printed t table (3 decimals)
T_TABLE = {
    0.95: {1: 6.314, 2: 2.920, 3: 2.353, 4: 2.132, 5: 2.015, 6: 1.943, 7: 1.895, 8: 1.860, 9: 1.833,
           10: 1.812, 12: 1.782, 15: 1.753, 20: 1.725, 30: 1.697, 60: 1.671, 120: 1.658},
    0.975: {1: 12.706, 2: 4.303, 3: 3.182, 5: 2.571, 8: 2.306, 10: 2.228, 12: 2.179, 20: 2.086,
            30: 2.042, 120: 1.980},
    0.995: {1: 63.657, 2: 9.925, 5: 4.032, 10: 3.169, 12: 3.055, 30: 2.750},
}


@pytest.mark.parametrize("p", sorted(T_TABLE))
def test_t_cdf_brackets_tabulated_critical_values(p):
    df = np.array(list(T_TABLE[p]))
    t = np.array(list(T_TABLE[p].values()))
    # the table rounds to 3 decimals, so the true quantile lies within +-0.0005 of it
    assert np.all(stats.t_cdf(t - 0.0005, df) < p)
    assert np.all(stats.t_cdf(t + 0.0005, df) > p)


finite_t = st.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=300)
@given(finite_t)
def test_t_cdf_df1_is_cauchy(t):
    assert stats.t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-13)


@settings(max_examples=300)
@given(finite_t)
def test_t_cdf_df2_closed_form(t):
    assert stats.t_cdf(t, 2) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), abs=1e-13)


@settings(max_examples=300)
@given(st.floats(-8, 8), st.integers(1, 200))
def test_t_sf_symmetry(t, df):
    assert stats.t_sf(t, df) + stats.t_sf(-t, df) == pytest.approx(1.0, abs=1e-13)


def test_t_tends_to_normal_and_ppf_constant():
    z = stats.NORM_PPF_975
    assert 0.5 * (1 + math.erf(z / math.sqrt(2))) == pytest.approx(0.975, abs=1e-15)
    assert stats.t_sf(z, 1e8) == pytest.approx(0.025, abs=1e-7)
    assert stats.t_sf(np.inf, 3) == 0.0


unit = st.floats(0, 1)
shape = st.floats(0.05, 50)


@settings(max_examples=300)
@given(shape, unit)
def test_betainc_closed_forms(a, x):
    assert stats.betainc(a, 1.0, x) == pytest.approx(x**a, abs=1e-12)
    assert stats.betainc(1.0, a, x) == pytest.approx(1 - (1 - x) ** a, abs=1e-12)


@settings(max_examples=300)
@given(shape, shape, unit)
def test_betainc_reflection(a, b, x):
    # y = x is the exact complement of 1 - x (1 - x itself is rounded)
    assert stats.betainc(a, b, x) + stats.betainc(b, a, 1 - x, y=x) == pytest.approx(1.0, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# mmtests statistics == straightforward formulas, NaN = missing sample

samples = arrays(
    float,
    st.tuples(st.integers(1, 4), st.integers(1, 9)),
    elements=st.one_of(st.floats(0.01, 1e4), st.just(np.nan)),
)


def rows(x):
    for row in x:
        yield row[~np.isnan(row)]


@settings(max_examples=300)
@given(samples)
def test_mmtests_stats_match_plain_numpy(x):
    got = {
        "min": stats.sample_min(x), "max": stats.sample_max(x), "amean": stats.amean(x),
        "hmean": stats.hmean(x), "gmean": stats.gmean(x), "sd": stats.stddev(x),
        "n": stats.count(x),
    }
    for i, v in enumerate(rows(x)):
        assert got["n"][i] == v.size
        if v.size == 0:
            assert all(np.isnan(got[k][i]) for k in ("min", "max", "amean", "hmean", "gmean", "sd"))
            continue
        assert got["min"][i] == v.min() and got["max"][i] == v.max()
        assert got["amean"][i] == pytest.approx(v.mean(), rel=1e-12)
        assert got["hmean"][i] == pytest.approx(v.size / np.sum(1 / v), rel=1e-12)
        assert got["gmean"][i] == pytest.approx(np.prod(v.astype(np.longdouble)) ** (1 / v.size), rel=1e-9)
        if v.size > 1:
            assert got["sd"][i] == pytest.approx(np.std(v, ddof=1), rel=1e-9, abs=1e-12 * v.max())  # rounding noise
        else:
            assert np.isnan(got["sd"][i])


@settings(max_examples=300)
@given(samples, st.sampled_from([50, 95, 99]), st.sampled_from(["lower", "higher"]))
def test_best_mean_keeps_the_best_c_samples(x, p, direction):
    got = stats.best_mean(x, p, direction=direction)
    for i, v in enumerate(rows(x)):
        if v.size == 0:
            assert np.isnan(got[i])
            continue
        c = max(1, v.size * p // 100)
        if direction == "lower":
            assert got[i] == pytest.approx(np.sort(v)[:c].mean(), rel=1e-12)
        else:
            best = np.sort(v)[::-1][:c]
            assert got[i] == pytest.approx(c / np.sum(1 / best), rel=1e-12)


def test_best_mean_counts_for_seven_samples():
    x = np.arange(1.0, 8.0)  # 7 samples: P=50 keeps 3, P=95 and P=99 keep 6
    assert stats.best_mean(x, 50) == 2.0
    assert stats.best_mean(x, 95) == stats.best_mean(x, 99) == 3.5
    assert stats.best_mean(x[:1], 50) == 1.0  # max(1, floor(n*P/100))


def test_hmean_of_nonpositive_samples_by_era():
    x = np.array([1.0, 0.0, 2.0])
    assert stats.hmean(x, era="2023") == -1.0
    assert stats.hmean(x, era="2024-09") == -1.0
    assert np.isnan(stats.hmean(x, era="2024-12"))


def test_coeffvar_edge_cases():
    assert stats.coeffvar(np.nan, 5.0) == 0.0
    assert stats.coeffvar(1.0, 0.0) == 0.0
    assert stats.coeffvar(1.0, 4.0) == 25.0


# ---------------------------------------------------------------------------------------------
# percentages, §2.3


def test_pndiff_worked_examples_and_edge_cases():
    assert stats.pndiff(190.0, 200.0) == pytest.approx(5.0)
    assert stats.pndiff(50.0, 40.0) == pytest.approx(-25.0)
    assert stats.pndiff(7.0, 7.0) == 0.0
    assert stats.pndiff(0.0, 0.0) == 0.0  # equal wins over new == 0
    assert stats.pndiff(0.0, 3.0) == 100.0
    assert stats.pndiff(3.0, 0.0) == -99.0


def test_pdiff_edge_cases():
    assert stats.pdiff(110.0, 100.0) == pytest.approx(10.0)
    assert stats.pdiff(5.0, 5.0) == 0.0
    assert stats.pdiff(0.0, 5.0) == 0.0
    assert stats.pdiff(0.0, 0.0) == 0.0
    assert stats.pdiff(5.0, 0.0) == 100.0
    assert stats.pdiff(5.0, np.nan) == 100.0


def test_percent_spread_rows_always_use_pndiff():
    assert stats.percent(2.0, 1.0, "Stddev", "higher") == -100.0
    assert stats.percent(2.0, 1.0, "CoeffVar", "higher") == -100.0
    assert stats.percent(2.0, 1.0, "Hmean", "higher") == 100.0
    assert stats.percent(2.0, 1.0, "Amean", "lower") == -100.0


@settings(max_examples=300)
@given(st.floats(0.01, 1e6), st.floats(0.01, 1e6))
def test_pdiff_pndiff_formulas(new, base):
    if new != base:
        assert stats.pndiff(new, base) == pytest.approx(100 - 100 * new / base)
        assert stats.pdiff(new, base) == pytest.approx(100 * new / base - 100)


# ---------------------------------------------------------------------------------------------
# significance, §2.4


def test_ttest_marks_at_p_below_010():
    n, sd = 5, 1.0
    se = math.sqrt(sd**2 / n + sd**2 / n)
    crit = T_TABLE[0.95][8]  # two-sided p = 0.10 at df = 8
    assert stats.ttest_significant(0.0, sd, n, (crit + 0.01) * se, sd, n)
    assert not stats.ttest_significant(0.0, sd, n, (crit - 0.01) * se, sd, n)


def test_ttest_zero_spread_and_one_sample():
    assert stats.ttest_significant(1.0, 0.0, 7, 1.5, 0.0, 7)
    assert not stats.ttest_significant(1.0, 0.0, 7, 1.0, 0.0, 7)
    # one sample each: NaN stddevs become 0, so the means decide
    assert stats.ttest_significant(1.0, np.nan, 1, 2.0, np.nan, 1)


def test_band_significance_is_non_overlap_of_196_sigma_bands():
    z = stats.NORM_PPF_975
    assert stats.band_significant(10.0, 1.0, 10.0 + z * 3 + 1e-9, 2.0)
    assert not stats.band_significant(10.0, 1.0, 10.0 + z * 3 - 1e-9, 2.0)
    assert not stats.band_significant(10.0, np.nan, 100.0, 1.0)


# ---------------------------------------------------------------------------------------------
# LKP, §3.1


@settings(max_examples=300)
@given(samples)
def test_lkp_stats_match_plain_numpy(x):
    mean, sd = stats.lkp_mean(x), stats.lkp_stddev(x)
    for i, v in enumerate(rows(x)):
        if v.size:
            assert mean[i] == pytest.approx(v.mean(), rel=1e-12)
        else:  # no usable run: unknown, not 0 (issue 17)
            assert np.isnan(mean[i])
        if v.size > 1:
            assert sd[i] == pytest.approx(np.std(v, ddof=0), rel=1e-9, abs=1e-12 * v.max())  # rounding noise
        else:
            assert sd[i] == -1.0


def test_lkp_change_and_pct_rules():
    assert stats.lkp_change(136.12, 186.67) == pytest.approx(-27.08, abs=0.01)
    assert stats.lkp_change(0.12, 0.15, absolute=True) == pytest.approx(-0.03)
    assert stats.lkp_change(1.0, 0.0) == pytest.approx(1e102)
    assert stats.lkp_is_absolute("mpstat.cpu.all.soft%")
    assert stats.lkp_is_absolute("perf-profile.children.foo")
    assert not stats.lkp_is_absolute("autonuma-benchmark.numa01.seconds")
    assert stats.lkp_stddev_pct(0.0, 3.0) == 3.0  # avg 0: the raw stddev
    assert stats.lkp_stddev_pct(200.0, 13.8) == pytest.approx(6.9)


# ---------------------------------------------------------------------------------------------
# xarray layer: a whole sweep at once


def test_mmtests_stats_and_compare_vectorise_over_a_sweep():
    rng = np.random.default_rng(1)
    da = xr.DataArray(
        rng.normal(100, 5, (3, 2, 7)),
        dims=("policy", "windows", "seed"),
        coords={"policy": ["a", "b", "c"], "windows": [2, 4], "seed": range(7)},
        name="elsp",
    )
    s = stats.mmtests_stats(da)
    assert s.dims == ("policy", "windows", "stat")
    assert list(s.stat.values) == list(stats.stat_labels())
    for p in range(3):
        for w in range(2):
            v = da.values[p, w]
            assert s.values[p, w, 1] == pytest.approx(v.mean())
            assert s.values[p, w, 2] == pytest.approx(np.std(v, ddof=1))
    cmp = stats.mmtests_compare(da, along="policy", baseline="b")
    assert cmp.attrs["baseline"] == "b"
    amean = s.sel(stat="Amean")
    np.testing.assert_allclose(cmp.pct.sel(stat="Amean"), 100 - 100 * amean / amean.sel(policy="b"))
    assert not cmp.significant.sel(policy="b").any()
    assert not cmp.significant.sel(stat="Min").any()
    lk = stats.lkp_stats(da)
    np.testing.assert_allclose(lk["stddev"], da.std("seed", ddof=0))


def test_bad_choices_name_the_parameter():
    with pytest.raises(ValueError, match="direction='up'.*lower, higher"):
        stats.stat_labels("up")
    with pytest.raises(ValueError, match="era='2020'"):
        stats.stat_labels("lower", "2020")
    with pytest.raises(ValueError, match="dim='seed'"):
        stats.mmtests_stats(xr.DataArray([1.0], dims="x", name="v"))


# ---------------------------------------------------------------------------------------------
# independent oracle for the t tail: Simpson's rule over the Student-t density


def t_sf_by_quadrature(t, df, points=20001):
    x = np.linspace(0.0, abs(t), points)
    logc = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    pdf = np.exp(logc - (df + 1) / 2 * np.log1p(x * x / df))
    h = x[1] - x[0] if points > 1 else 0.0
    area = h / 3 * (pdf[0] + pdf[-1] + 4 * pdf[1:-1:2].sum() + 2 * pdf[2:-1:2].sum())
    return 0.5 - area if t >= 0 else 0.5 + area


@settings(max_examples=300)
@given(st.floats(-12, 12), st.integers(1, 300))
def test_t_sf_matches_quadrature(t, df):
    assert stats.t_sf(t, df) == pytest.approx(t_sf_by_quadrature(t, df), abs=1e-9)


cells = arrays(float, st.tuples(st.integers(2, 4), st.integers(1, 3), st.integers(1, 8)),
               elements=st.floats(1.0, 100.0))


@settings(max_examples=300)
@given(cells)
def test_mmtests_compare_significance_matches_a_per_cell_loop(x):
    """Vectorised t-test / band marks == one cell at a time with plain formulas."""
    da = xr.DataArray(x, dims=("policy", "workload", "seed"), coords={"policy": [f"k{i}" for i in range(len(x))]})
    ttest = stats.mmtests_compare(da, along="policy", era="2023")
    bands = stats.mmtests_compare(da, along="policy", era="2024-12")
    for w in range(x.shape[1]):
        b = x[0, w]
        for k in range(1, x.shape[0]):
            v = x[k, w]
            sb = np.std(b, ddof=1) if b.size > 1 else 0.0
            sv = np.std(v, ddof=1) if v.size > 1 else 0.0
            se = math.sqrt(sb**2 / b.size + sv**2 / v.size)
            d = abs(b.mean() - v.mean())
            if se == 0:
                expect = b.mean() != v.mean()
            else:
                p = 2 * t_sf_by_quadrature(d / se, max(b.size + v.size - 2, 1))
                if abs(p - 0.10) < 1e-6:
                    continue  # too close to call with quadrature
                expect = p < 0.10
            assert bool(ttest.significant.values[k, w, 1]) == expect
            if b.size > 1 and abs(d - stats.NORM_PPF_975 * (sb + sv)) > 1e-9:
                assert bool(bands.significant.values[k, w, 1]) == (d > stats.NORM_PPF_975 * (sb + sv))
        assert not ttest.significant.values[0, w].any() and not ttest.significant.values[:, w, 2:].any()


# ---------------------------------------------------------------------------------------------
# paired effects of counts, and how many runs a real machine needs

# two-sample t-test sample sizes per group (two-sided alpha 0.05, power 0.8) from Cohen's table
# (Statistical Power Analysis, 1988, table 2.4.1): effect size d = change / spread
COHEN_N = {0.2: 394, 0.5: 64, 0.8: 26, 1.0: 17, 1.2: 12}


@pytest.mark.parametrize("d", sorted(COHEN_N))
def test_runs_needed_matches_the_tabulated_sample_sizes(d):
    assert stats.runs_needed(10.0, 10.0 * d) == COHEN_N[d]
    assert stats.runs_needed(1.0, -d) == COHEN_N[d]  # the sign of the change does not matter


def test_runs_needed_edges_and_broadcasting():
    got = stats.runs_needed(np.array([[2.0], [4.0]]), np.array([1.0, 2.0, 0.0]))
    assert got.shape == (2, 3) and np.isinf(got[:, 2]).all()
    assert got[1, 1] == got[0, 0] and got[1, 0] > got[0, 0]  # only the ratio matters; more spread, more runs
    assert stats.runs_needed(0.0, 1.0) == 2 and np.isnan(stats.runs_needed(np.nan, 1.0))
    assert stats.runs_needed(5.0, 1.0, confidence=0.9) < stats.runs_needed(5.0, 1.0) < \
        stats.runs_needed(5.0, 1.0, power=0.9)
    assert np.isinf(stats.runs_needed(1e6, 1.0))
    with pytest.raises(ValueError, match="confidence"):
        stats.runs_needed(1, 1, confidence=95)


def test_runs_needed_gives_the_power_it_promises():
    # simulate the t-test it plans for: n runs per kernel at the returned n find the change ~80 % of the time
    rng = np.random.default_rng(0)
    n = int(stats.runs_needed(5.0, 4.0))
    a = 100 + rng.normal(0, 5, (4000, n))
    b = 104 + rng.normal(0, 5, (4000, n))
    t = (b.mean(1) - a.mean(1)) / np.sqrt((a.var(1, ddof=1) + b.var(1, ddof=1)) / n)
    found = np.mean(np.abs(t) > stats.t_ppf(0.975, 2 * n - 2))
    assert 0.78 <= found <= 0.86, (n, found)
    n1 = n - 1
    t1 = (b[:, :n1].mean(1) - a[:, :n1].mean(1)) / np.sqrt((a[:, :n1].var(1, ddof=1) + b[:, :n1].var(1, ddof=1)) / n1)
    assert np.mean(np.abs(t1) > stats.t_ppf(0.975, 2 * n1 - 2)) < found  # one run fewer: less power


def test_paired_change_of_counts_on_a_log_scale_stays_above_minus_100():
    rng = np.random.default_rng(3)
    base = rng.poisson(40, 6).astype(float)
    new = np.where(np.arange(6) < 3, 0.0, rng.poisson(2, 6))  # falls to (nearly) nothing
    da = xr.DataArray(np.stack([base, new]), dims=("policy", "seed"), coords={"policy": ["a", "b"]},
                      name="false_skips")
    lin = stats.paired_change(da, "policy")
    log = stats.paired_change(da, "policy", scale="log")
    assert float(lin["lo"].sel(policy="b")) < -100  # what a linear interval does to a count near 0
    assert -100 < float(log["lo"].sel(policy="b")) < float(log["mean"].sel(policy="b")) < float(log["hi"].sel(policy="b")) < 0
    r = np.log((new + 0.5) / (base + 0.5))
    assert np.isclose(float(log["mean"].sel(policy="b")), 100 * np.expm1(r.mean()))
    assert np.allclose(log["pct"].sel(policy="b").values, 100 * np.expm1(r))
    assert bool(log["resolved"].sel(policy="b")) and log.attrs["scale"] == "log"


def test_paired_change_reports_resolution_spread_and_runs():
    rng = np.random.default_rng(1)
    base = 100 + rng.normal(0, 5, 8)
    da = xr.DataArray(np.stack([base, base * 0.97 + rng.normal(0, 0.2, 8), base * 1.0]), dims=("policy", "seed"),
                      coords={"policy": ["a", "b", "c"]}, name="elsp")
    eff = stats.paired_change(da, "policy")
    assert bool(eff["resolved"].sel(policy="b")) and not bool(eff["resolved"].sel(policy="c"))
    sd = da.std("seed", ddof=1).values
    cv = 100 * np.sqrt((sd[1] ** 2 + sd[0] ** 2) / 2) / base.mean()
    assert np.isclose(float(eff["cv"].sel(policy="b")), cv)
    assert float(eff["runs"].sel(policy="b")) == stats.runs_needed(cv, float(eff["mean"].sel(policy="b")))
    assert np.isinf(float(eff["runs"].sel(policy="c")))  # no change: nothing to resolve


def test_spread_vs_published_reads_the_robots_blank_as_at_most_2_percent():
    pub = xr.Dataset(
        {"elsp_stddev_pct": (("workload", "policy"), [[6.0, np.nan], [np.nan, 7.0]])},
        coords={"workload": ["w1", "w2"], "policy": ["p", "q"]}, attrs={"table": "t"})
    rng = np.random.default_rng(0)

    def runs(sd_pct):
        x = rng.normal(0, 1, 16)
        return 100 + sd_pct * (x - x.mean()) / x.std()  # population stddev exactly sd_pct %

    elsp = np.stack([[runs(1.0), runs(1.5)], [runs(5.0), runs(7.5)]])  # (workload, policy, seed)
    sim = xr.Dataset({"elsp": (("workload", "policy", "seed"), elsp)},
                     coords={"workload": ["w1", "w2"], "policy": ["p", "q"]})
    rows = {(r["workload"], r["kernel"]): r for r in stats.spread_vs_published(pub, sim)}
    assert rows["w1", "p"]["verdict"] == "model tighter" and np.isclose(rows["w1", "p"]["model"], 1.0)
    assert rows["w1", "q"]["verdict"] == "similar"        # blank (<= 2 %) and 1.5 %
    assert rows["w2", "p"]["verdict"] == "model wider"    # blank and 5 %
    assert rows["w2", "q"]["verdict"] == "similar" and rows["w2", "q"]["table"] == "t"
    # log_p: the printout's probability at the model's spread (16 seeds, Bessel-corrected)
    assert rows["w2", "p"]["log_p"] == pytest.approx(float(stats.lkp_spread_logp(np.nan, 5.0 * np.sqrt(16 / 15))))
    assert rows["w2", "p"]["log_p"] < rows["w1", "q"]["log_p"] < 0      # hidden (<= 2 %): likelier at 1.5 % than 5 %


def test_chi2_cdf_matches_closed_forms_and_a_sample():
    x = np.array([0.01, 0.5, 2.0, 4.0, 10.0, 50.0])
    np.testing.assert_allclose(stats.chi2_cdf(x, 2), 1 - np.exp(-x / 2), rtol=1e-12, atol=1e-15)
    three = np.array([math.erf(math.sqrt(v / 2)) - math.sqrt(2 * v / math.pi) * math.exp(-v / 2) for v in x])
    np.testing.assert_allclose(stats.chi2_cdf(x, 3), three, rtol=1e-10, atol=1e-15)
    draws = (np.random.default_rng(1).standard_normal((200_000, 5)) ** 2).sum(1)
    for v in (1.0, 4.35, 11.07):
        assert stats.chi2_cdf(v, 5) == pytest.approx(np.mean(draws <= v), abs=0.006)   # 5 sampling sd
    assert stats.chi2_cdf(0.0, 3) == 0.0


def test_lkp_spread_logp_is_how_often_the_robot_prints_that():
    """Four normal runs at a true spread sigma, printed by LKP's rule (r > 2: floor(r), else
    hidden): the frequency of each printout is exp(lkp_spread_logp)."""
    rng = np.random.default_rng(5)
    for sigma in (1.5, 4.0, 9.0):
        runs = 100 * (1 + sigma / 100 * rng.standard_normal((100_000, 4)))
        r = stats.lkp_stddev_pct(stats.lkp_mean(runs), stats.lkp_stddev(runs))
        printed = np.where(r > 2, np.floor(r), np.nan)
        for k in (np.nan, 2.0, 5.0):
            freq = np.mean(np.isnan(printed)) if np.isnan(k) else np.mean(printed == k)
            assert np.exp(stats.lkp_spread_logp(k, sigma)) == pytest.approx(freq, abs=0.004), (sigma, k)
    # a model whose runs never differ: a hidden spread is certain, a printed one impossible
    assert stats.lkp_spread_logp(np.nan, 0.0) == 0.0 and stats.lkp_spread_logp(2.0, 0.0) == -np.inf
    assert np.isnan(stats.lkp_spread_logp(2.0, np.nan))

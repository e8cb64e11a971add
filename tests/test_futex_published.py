"""The futex model against published perf bench futex hash curves (issue 16).

Published: Sebastian Andrzej Siewior's private-hash RFC v2 runs on a 2-socket Xeon E5-2650
(``data/futex-e5-2650.csv``, provenance in ``data/README.md``), ``perf bench futex hash -t T
-m -s -b B``: T=28 on both nodes, T=14 on node 0, per-thread ops/s. The model runs on
``Topology(nodes=2, cpus_per_node=16)`` -- the Topology's own default latencies, no constant
taken from this machine -- with the documented default costs.

The model is the MVA (``nl.futex.predict``, 4 seeds); that it agrees with the discrete-event
simulation is checked at the bottom and in test_futex_solver.py.
"""

import numpy as np
import pytest

import numalab as nl
from numalab.futex.solver import mva, network, simulate
from numalab.futex.workloads import perf_bench_hash, route

E5 = nl.data.futex_topology()   # the generic 2 x 16-CPU Topology, numbered as the rows imply


@pytest.fixture(scope="module")
def published():
    return nl.data.load("futex-e5-2650")


def _curve(pub, threads):
    c = pub.where(pub.threads == threads, drop=True)
    return c.buckets.values.astype(int), c.ops_per_s_per_thread.values, c


@pytest.fixture(scope="module")
def default_model(published):
    out = {}
    for t in (28, 14):
        b, y, rows = _curve(published, t)
        out[t] = (b, y, nl.futex.predict(rows, E5, refcount="immutable"))
    return out


def test_published_curves_ship_with_the_package(published):
    assert published.attrs["cpus"] == 32 and published.attrs["nodes"] == 2
    assert "20241031155640.Fhtm3uFD@linutronix.de" in published.attrs["source"]
    b28, y28, _ = _curve(published, 28)
    b14, y14, _ = _curve(published, 14)
    assert b28.tolist() == [0] + [2 ** k for k in range(1, 15)]
    assert b14.tolist() == [0, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 16384]
    assert y28[b28 == 2][0] == 91881 and y14[b14 == 16384][0] == 2863843
    assert str(nl.data.data_dir()).startswith(str(nl.data.data_dir().parent))


@pytest.mark.parametrize("threads", [28, 14])
def test_default_model_within_2x_at_every_bucket_count(default_model, threads):
    b, y, m = default_model[threads]
    ratio = m / y
    assert np.all((ratio > 0.5) & (ratio < 2.0)), dict(zip(b.tolist(), ratio.round(2).tolist()))


@pytest.mark.parametrize("threads", [28, 14])
def test_plateau_is_flat_within_15_percent(default_model, threads):
    # buckets >= 8x threads: an op almost never waits for another thread's lock, yet still
    # pays the syscall and a bucket line another CPU touched last
    b, y, m = default_model[threads]
    flat = b >= 8 * threads
    assert flat.sum() >= 3
    rise_model, rise_pub = m[flat].max() / m[flat].min() - 1, y[flat].max() / y[flat].min() - 1
    assert rise_pub < 0.15                                     # as published (14.1 %, 8.2 %)
    # the model's rise follows: lines go from pulled to private as buckets grow, and the
    # contended pulls that remain at the low end pay the cross-node conflict trip (T=28)
    assert abs(rise_model - rise_pub) < 0.05, (rise_model, rise_pub)
    # ... while with few buckets every doubling of the table nearly doubles the rate
    few = (b >= 2) & (b <= 8)
    assert np.all(np.diff(m[few]) / m[few][:-1] > 0.6)


def test_saturated_bucket_pays_the_cross_socket_line(default_model):
    # B = 2: both buckets saturated; per-bucket rate = T x per-thread rate / 2. Handed
    # between sockets (T=28 on both nodes) a lock serves 1.5-2.5x fewer ops than on one node
    # (published: 2.16); the saturated service time is hold + line pulls, not hold alone
    b28, y28, m28 = default_model[28]
    b14, y14, m14 = default_model[14]
    model = (14 * m14[b14 == 2][0]) / (28 * m28[b28 == 2][0])
    pub = (14 * y14[b14 == 2][0]) / (28 * y28[b28 == 2][0])
    assert 1.5 <= model <= 2.5
    assert 1.5 <= pub <= 2.5
    c = nl.futex.FutexCosts().resolve(E5)
    hold_only = 1e9 / c.critical_section_ns        # what a bucket would serve on hold time alone
    assert 14 * m14[b14 == 2][0] / 2 < hold_only / 5


@pytest.fixture(scope="module")
def fit28(published):
    _, _, rows = _curve(published, 28)
    return nl.futex.calibrate(rows, E5, refcount="immutable")


def test_calibrating_on_28_threads_predicts_14_threads_within_35_percent(fit28, published):
    b, y, rows = _curve(published, 14)
    m = nl.futex.predict(rows, E5, costs=fit28.costs, refcount="immutable")
    ratio = m / y
    assert np.all(np.abs(ratio - 1) < 0.35), dict(zip(b.tolist(), ratio.round(2).tolist()))
    # and the fit itself follows the 28-thread rows it was given
    assert np.sqrt(np.mean(fit28.residuals ** 2)) < 0.1


def test_calibrate_reports_uncertainties_and_flags(fit28):
    names = set(nl.futex.DEFAULT_FIT)
    assert set(fit28.constants) == names == set(fit28.uncertainty) == set(fit28.identified)
    for n in names:
        assert np.isfinite(fit28.uncertainty[n]) and fit28.uncertainty[n] > 0
        assert fit28.relative_uncertainty[n] == pytest.approx(fit28.uncertainty[n] / fit28.constants[n])
    assert fit28.correlation.shape == (len(names), len(names))
    np.testing.assert_allclose(np.diag(fit28.correlation), 1.0)
    assert fit28.unidentified == tuple(n for n in nl.futex.DEFAULT_FIT if not fit28.identified[n])
    # the default pair is pinned down by these rows: the flat part fixes the syscall cost,
    # the saturated part the cross-node transfer
    assert all(fit28.identified.values())
    assert "+-" in fit28.summary()
    assert fit28.predictions.attrs["unidentified"] == ",".join(fit28.unidentified)


def test_calibrate_flags_what_one_thread_count_cannot_separate(published):
    # the same-node and the cross-node line latency enter 28 threads on two nodes only as a
    # mix (and the saturated rate as hold + 5 pulls): the fit must say it cannot tell them apart
    _, _, rows = _curve(published, 28)
    fit = nl.futex.calibrate(rows, E5, fit=("line_same_node_ns", "line_remote_ns", "critical_section_ns"),
                             refcount="immutable", seeds=2, max_iter=8)
    assert fit.unidentified
    # and a constant the rows do not depend on at all is flagged
    fit2 = nl.futex.calibrate(rows, E5, fit=("syscall_ns", "gup_ns"), refcount="immutable", seeds=2,
                             max_iter=8)
    assert not fit2.identified["gup_ns"] and fit2.identified["syscall_ns"]


# MVA vs the discrete-event simulation on small random cases (exponential times, where the
# two should agree): random topology preset, thread count, futexes, table size and refcount
# mode, drawn from a fixed generator so the test is reproducible. 8% on the mean over 2 seeds
# (the simulation's own noise at 1500 ops per thread is ~1-2%) with 16 or more futexes per
# thread (perf bench's default is 1024). With a few, 2-8, the MVA departs more, up to 16-20 %
# (docs/futex.md, "Where the MVA departs from the simulation"); with one futex a thread, where
# the aggregated classes were 72-250 % off, every thread is its own class (the second test).
_RNG = np.random.default_rng(16)
_CASES = []
for _ in range(6):
    topo = str(_RNG.choice(["2s-ivb-40", "4s-144", "2s-128"]))
    ncpu = nl.Topology.preset(topo).ncpus
    _CASES.append((topo, int(_RNG.integers(2, min(ncpu, 48) + 1)), int(2 ** _RNG.integers(4, 11)),
                   int(2 ** _RNG.integers(1, 12)), str(_RNG.choice(["percpu", "immutable", "rcuref"]))))


@pytest.mark.parametrize("topo,threads,futexes,buckets,refcount", _CASES)
def test_mva_agrees_with_simulation_on_small_random_cases(topo, threads, futexes, buckets, refcount):
    w = perf_bench_hash(topo, threads=threads, futexes=futexes, buckets=buckets, refcount=refcount)
    seeds = [0, 1]
    net = network([route(w, s) for s in seeds])
    x_mva = np.bincount(net.cls_point, weights=net.cls_n * mva(net)["x"])
    d = simulate(net, seeds, ops=1500, warmup=150)
    x_sim = np.bincount(d["thr_point"], weights=d["rate"])
    assert abs(x_sim.mean() / x_mva.mean() - 1) < 0.08


def _mva_gap(topo, threads, futexes, buckets):
    w = perf_bench_hash(topo, threads=threads, futexes=futexes, buckets=buckets, refcount="immutable")
    net = network([route(w, s) for s in (0, 1)])
    x_mva = np.bincount(net.cls_point, weights=net.cls_n * mva(net)["x"])
    d = simulate(net, [0, 1], ops=1500, warmup=150)
    return np.bincount(d["thr_point"], weights=d["rate"]).mean() / x_mva.mean() - 1


def test_mva_with_one_futex_a_thread_gives_every_thread_its_class():
    """One futex a thread: a thread's bucket is no class mate's, so an averaged class would see
    every bucket shared (the MVA was 2.5x below the simulation on 40 threads in a 256-slot
    private hash, 72 % on 12 threads in 64 buckets); with a class per thread the two agree, and
    from PER_THREAD_KEYS + 1 keys a thread the classes are aggregated again."""
    from numalab.futex.stations import PER_THREAD_KEYS

    assert abs(_mva_gap("2s-128", 12, 1, 64)) < 0.05
    assert abs(_mva_gap("2s-ivb-40", 40, 1, 256)) < 0.05
    assert abs(_mva_gap("2s-128", 12, 64, 64)) < 0.05
    few = network([route(perf_bench_hash("2s-ivb-40", threads=40, futexes=1, buckets=256), 0)])
    many = network([route(perf_bench_hash("2s-ivb-40", threads=40, futexes=PER_THREAD_KEYS + 1, buckets=256), 0)])
    assert few.cls_n.size == 40 and many.cls_n.size < 40


def test_published_figure_keeps_the_legend_clear_of_the_data(published, default_model):
    from numalab import plots

    model = np.empty(published.sizes["row"])
    for t in (28, 14):
        model[published.threads.values == t] = default_model[t][2]
    fig = plots.futex_published(published, {"model, default constants": model})
    fig.canvas.draw()
    ax = fig.axes[0]
    box = ax.get_legend().get_window_extent()
    pts = np.concatenate([ax.transData.transform(line.get_xydata()) for line in ax.get_lines()])
    inside = (pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1) & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1)
    assert not inside.any()
    assert len(ax.get_lines()) == 4          # published + model, per thread count

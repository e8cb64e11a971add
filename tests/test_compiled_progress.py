"""The compiled progress phase (numalab/engine/compiled/progress.py) is the numpy engine's, bit for
bit: begin_step, run_threads (refresh, record_locality, advance) and end_step on the CASES and on
random small workloads, positioned at many steps of a run (step 0, where every replica is dirty;
numa01's bound init, where the coherent rates apply; phase changes; the end), and
progress_rates against costs.progress_rates on random inputs and the topology presets."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

pytest.importorskip("numba")

from numalab.costs import Costs, progress_rates as numpy_progress_rates  # noqa: E402
from numalab.engine import make_batch, progress  # noqa: E402
from numalab.engine.compiled import progress as cp  # noqa: E402
from numalab.engine.compiled.state import pack_layout, pack_state  # noqa: E402
from numalab.topology import Topology  # noqa: E402
from numalab.workloads import PH_INIT, from_access_matrix  # noqa: E402

from _compiled_helpers import (CASES, assert_same_context, assert_same_state, before_phase, compiled_phase,  # noqa: E402
                               make_case, scratch_of, small_case)
from test_engine_reference import cases  # noqa: E402

STEPS = (0, 1, 2, 5, 10, 20, 40, 80, 150, 300)
#: phase-change steps looked at per run (evenly spread over the run's)
EVENT_STEPS = 10
#: refreshes in which the numpy oracle had to refresh rows one by one (_numpy_run_threads)
MIXED = []


def _events(make, limit=2000):
    """A fresh batch stepped one by one to its end: its last step, the steps in which some
    thread changed phase (init -> loop, a waiting worker starts, a thread finishes) and those
    in which a replica became done."""
    b = make()
    changed, done_at, k = [], [], 0
    while not b.outcome.done.all() and b.now < b.o.max_time and k < limit:
        phase, done = b.tasks.phase.copy(), b.outcome.done.copy()
        b.step()
        if not np.array_equal(phase, b.tasks.phase):
            changed.append(k)
        if (b.outcome.done & ~done).any():
            done_at.append(k)
        k += 1
    return k - 1, changed, done_at


def _positions(make, steps=STEPS):
    """Steps to look at: ``steps`` within the run, its last step, a spread of its phase-change
    steps and, around each replica's end, that step and the one before."""
    last, changed, done_at = _events(make)
    pick = [changed[i] for i in np.linspace(0, len(changed) - 1, min(EVENT_STEPS, len(changed))).astype(int)] \
        if changed else []
    pos = {s for s in steps if s <= last} | {max(last, 0)} | set(pick) | set(done_at) | {d - 1 for d in done_at}
    return sorted(p for p in pos if p >= 0)


def _is_mixed(b):
    """Whether the coming refresh of ``b`` has dirty replicas with and without running threads in
    a shared init (numpy's costs.progress_rates then takes the coherent rates for some rows only)."""
    rows = np.flatnonzero(b.rates.dirty)
    if not b.o.init_coherence or rows.size < 2:
        return False
    running = progress.running_mask(b)[rows] & ~b.outcome.done[rows][:, None]
    init = ((b.tasks.phase[rows] == PH_INIT) & b.wl.init_bind[None, :] & running).any(axis=1)
    return bool(init.any() and not init.all())


def _numpy_run_threads(b, ctx):
    """progress.run_threads, noting in MIXED the refreshes that mix coherent and closed-form rows."""
    if _is_mixed(b):
        MIXED.append(np.flatnonzero(b.rates.dirty).tolist())
    progress.run_threads(b, ctx)


def _readonly(a):
    v = a.view()
    v.flags.writeable = False
    return v


def _compiled(b, ctx):
    """The compiled view of batch ``b`` and scratch of step context ``ctx``. The layout's arrays
    are made read-only views: a built-in workload's arrays are read-only, from_access_matrix's
    are not, and numba would compile every phase once for each (the numbers are the same)."""
    L = pack_layout(b)
    L = L._replace(**{f: _readonly(v) for f, v in L._asdict().items() if isinstance(v, np.ndarray)})
    return L, pack_state(b), scratch_of(b, ctx)


def check_run_threads(make, positions):
    """begin_step and run_threads before each step of ``positions`` of a run of ``make()``: numpy
    on one copy, compiled on the other (begin_step on a scrambled scratch first), every replica."""
    for b1, c1, b2, c2 in before_phase(make(), "run_threads", positions):
        where = f"run_threads of step {b1.steps}"
        L, S, X = _compiled(b2, c2)
        X.running[:] = ~X.running
        X.slot[:] = 7
        X.want[:] = True
        for r in range(b2.R):
            compiled_phase("begin_step", L, None, S, X, r, b=b2)
        assert np.array_equal(X.running, c1.running) and not X.slot.any() and not X.want.any(), where
        _numpy_run_threads(b1, c1)
        for r in range(b2.R):
            compiled_phase("run_threads", L, None, S, X, r, b=b2)
        assert_same_state(b1, b2, where=where)
        assert_same_context(c1, X, where=where)


def check_end_step(make, positions):
    """end_step of each step of ``positions`` of a run of ``make()``, every replica."""
    for b1, c1, b2, c2 in before_phase(make(), "end_step", positions):
        where = f"end_step of step {b1.steps}"
        L, S, X = _compiled(b2, c2)
        b1.end_step(c1)
        for r in range(b2.R):
            compiled_phase("end_step", L, None, S, X, r, b=b2)
        assert_same_state(b1, b2, where=where)


def _id(case):
    return f"{case[0]}-{case[1]}-{case[2]}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_phases_match_numpy(case):
    make = lambda: make_case(*case)  # noqa: E731
    positions = _positions(make)
    check_run_threads(make, positions)
    check_end_step(make, positions)


def _perturbation(b, rng):
    """Random state for run_threads' rarer paths, the same for both copies: kernel debt (up to
    two steps) on some threads, bytes left near one step's writing on others (a phase that ends
    while debt is paid, an init that carries its leftover into the loop), forced refreshes."""
    R, T, dt = b.R, b.lay.T, b.dt
    debt = np.where(rng.random((R, T)) < 0.4, rng.uniform(0.0, 2.0 * dt, (R, T)), b.tasks.kdebt)
    near = rng.random((R, T)) < 0.4
    left = np.where(near, b.rates.speed * dt * rng.uniform(0.0, 1.3, (R, T)), b.tasks.bytes_left)
    dirty = b.rates.dirty | (rng.random(R) < 0.5)
    return debt, left, dirty


def _apply(b, perturbation):
    debt, left, dirty = perturbation
    b.tasks.kdebt[:] = debt
    b.tasks.bytes_left[:] = left
    b.rates.dirty[:] = dirty


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_run_threads_perturbed(case):
    rng = np.random.default_rng(7)
    make = lambda: make_case(*case)  # noqa: E731
    last = _events(make)[0]
    for b1, c1, b2, c2 in before_phase(make(), "run_threads", sorted({0, 1, 3, last // 2, last})):
        where = f"perturbed run_threads of step {b1.steps}"
        pert = _perturbation(b1, rng)
        _apply(b1, pert)
        _apply(b2, pert)
        L, S, X = _compiled(b2, c2)
        _numpy_run_threads(b1, c1)
        for r in range(b2.R):
            compiled_phase("run_threads", L, None, S, X, r, b=b2)
        assert_same_state(b1, b2, where=where)
        assert_same_context(c1, X, where=where)


#: numa01 whose seed 4 ends its bound init a step before seed 2 does: in step 15 both are dirty,
#: one with running init threads, one without (numpy's batch-wide coherent switch)
MIXED_CASE = ("numa01", "2s-ivb-40", "rfc2023-p2", [2, 4], {}, dict(size_bytes=1 << 30, loops=10))
MIXED_STEP = 15


def test_run_threads_mixed_init_refresh():
    """Where one dirty replica is in the coherent init and another is not, the compiled refresh
    gives each replica the numpy engine's rates for that replica alone."""
    MIXED.clear()
    check_run_threads(lambda: make_case(*MIXED_CASE), [MIXED_STEP - 1, MIXED_STEP, MIXED_STEP + 1])
    assert MIXED, "the case no longer has a mixed refresh: pick another"


def test_numpy_refresh_is_batch_independent():
    """In step MIXED_STEP of MIXED_CASE one dirty replica has running shared-init threads and
    the other not: numpy's refresh of both at once gives each the rates it gets alone (the
    coherent fixed point is taken row by row; before, every row of such a refresh took it)."""
    (b1, c1, b2, c2), = before_phase(make_case(*MIXED_CASE), "run_threads", [MIXED_STEP])
    assert _is_mixed(b1)
    progress.run_threads(b1, c1)
    rows = np.flatnonzero(b2.rates.dirty)
    for r in rows:                                     # each dirty replica refreshed alone
        b2.rates.dirty[:] = False
        b2.rates.dirty[r] = True
        progress.refresh(b2)
    progress.run_threads(b2, c2)
    assert np.array_equal(b1.rates.speed, b2.rates.speed)


def test_coherent_init_is_exercised():
    """numa01's first steps run the bound init: the compiled refresh takes the coherent rates
    there, and they differ from the closed form's."""
    b = make_case(*CASES[1])
    ctx = b.begin_step()
    L, S, X = _compiled(b, ctx)
    assert L.init_coherence and (b.tasks.phase[0] == PH_INIT)[b.wl.init_bind].all()
    compiled_phase("run_threads", L, None, S, X, 0, b=b)
    coherent = S.speed[0].copy()
    shared = np.zeros(L.T, dtype=bool)
    out = np.empty(L.T)
    cp.progress_rates(L.latency_ns, L.node_cores, L.node_smt, L.thread_bw_GBps, L.node_bw_GBps, L.link_bw_GBps,
                      L.link_cap_GBps, L.link_route, L.smt_share, L.write_efficiency, L.link_write_efficiency, L.link_both_directions, S.node[0],
                      S.frac[0], ctx.running[0], shared, L.thread_mm, out)
    assert not np.array_equal(coherent, out)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_random_small_cases(case):
    make = lambda: small_case(case)  # noqa: E731
    positions = _positions(make, steps=(0, 1, 2, 5, 10, 40))
    check_run_threads(make, positions)
    check_end_step(make, positions)


@pytest.mark.parametrize("N", [1, 2, 3, 4, 8])
def test_thread_frac_and_cumulative_rates(N):
    """The refresh's own sums against numpy's (progress.thread_frac, progress.cumulative_rates)
    on random counts of regions per class and node, phases, done flags and speeds: non-dyadic
    shares on up to 8 nodes, where the order of a sum over nodes shows."""
    rng = np.random.default_rng(N)
    topo = _random_topology(rng, N)
    rates = rng.choice([0.0, 0.3, 1.0, 1.7, 2.9], size=(int(rng.integers(3, 12)), 7))
    rates[:, 0] += 0.1
    wl = from_access_matrix(rates, topology=topo, chunk_bytes=4 << 20, loops=100)
    b = make_batch(wl, "6.12", list(range(4)))
    L = _compiled(b, b.begin_step())[0]
    R, T, C = b.R, b.lay.T, b.lay.C
    rows = np.arange(R)
    for _ in range(5):
        b.regions.cls_node[:] = rng.integers(0, 20, (R, C, N)) * (rng.random((R, C, 1)) < 0.8)
        b.tasks.phase[:] = rng.integers(0, 4, (R, T))
        b.outcome.done[:] = rng.random(R) < 0.25
        speed = rng.uniform(1e8, 1e10, (R, T))
        ref_frac, ref_cum = progress.thread_frac(b, rows), progress.cumulative_rates(b, rows, speed)
        for r in range(R):
            frac, cum, lam_c = np.full((T, N), -1.0), np.full(b.lay.E + 1, -1.0), np.full(C, -1.0)
            cp.thread_frac(L.entry_thread, L.entry_phase, L.entry_class, L.entry_share, b.tasks.phase[r],
                           b.regions.cls_node[r], b.tasks.node[r], frac)
            cp.cumulative_rates(L.entry_thread, L.entry_phase, L.entry_touch_per_byte, L.entry_fixed_hz, L.cls_start,
                                L.cls_end, b.tasks.phase[r], b.outcome.done[r], speed[r], cum, lam_c)
            assert np.array_equal(frac, ref_frac[r]) and np.array_equal(cum, ref_cum[r])
            assert np.array_equal(lam_c, ref_cum[r][b.lay.cls_end] - ref_cum[r][b.lay.cls_start])


# ------------------------------------------------------------------------------ progress_rates
def _compiled_rates(topo, costs, node, frac, running, shared_init, thread_mm, both=True):
    """The compiled progress_rates of one replica's row."""
    out = np.full(node.size, -1.0)
    T = node.size
    cp.progress_rates(np.ascontiguousarray(topo.latency_ns, dtype=float), topo.node_cores.astype(np.int64),
                      topo.per_node("smt").astype(np.int64), topo.per_node("thread_bw_GBps").astype(float),
                      topo.per_node("node_bw_GBps").astype(float), topo.per_node("link_bw_GBps").astype(float),
                      topo.link_cap_GBps, topo.link_route, float(costs.smt_share), topo.per_node("write_efficiency").astype(float),
                      float(costs.link_write_efficiency), bool(both),
                      node.astype(np.int64), np.ascontiguousarray(frac), running.astype(bool),
                      np.zeros(T, dtype=bool) if shared_init is None else shared_init.astype(bool),
                      thread_mm.astype(np.int64), out)
    return out


def _random_inputs(rng, topo, T, R=1):
    """(R, T) rows of random thread nodes (nodes with CPUs), shares (local, spread, sparse; a row
    sums to 1 as thread_frac's do), running masks and shared-init masks, and T threads' processes."""
    N = topo.nodes
    node = rng.choice(topo.cpu_nodes, size=(R, T))
    kind = rng.integers(0, 4, size=(R, T))
    frac = rng.random((R, T, N)) ** 3
    frac = np.where((kind == 1)[..., None] & (rng.random((R, T, N)) < 0.5), 0.0, frac)
    frac /= np.maximum(frac.sum(axis=2, keepdims=True), 1e-300)
    empty = frac.sum(axis=2) == 0
    frac = np.where((empty | (kind == 0))[..., None], np.eye(N)[node], frac)   # all local
    running = rng.random((R, T)) < rng.uniform(0.3, 1.0)
    shared = rng.random((R, T)) < rng.uniform(0.0, 1.0)
    thread_mm = rng.integers(0, rng.integers(1, 5), size=T)
    return node, frac, running, shared, thread_mm


def _random_topology(rng, N):
    per = lambda lo, hi: tuple(float(x) for x in rng.uniform(lo, hi, N))  # noqa: E731
    smt = rng.integers(1, 3, N)
    links = None
    if N >= 3 and rng.random() < 0.5:   # a random connected graph of links, with 0-2 switches
        V = N + int(rng.integers(0, 3))
        order = rng.permutation(V)
        edges = {tuple(sorted((int(order[i]), int(order[rng.integers(0, i)])))) for i in range(1, V)}
        for _ in range(int(rng.integers(0, V))):
            a, b = (int(x) for x in rng.choice(V, 2, replace=False))
            edges.add((min(a, b), max(a, b)))
        links = [(a, b, float(rng.uniform(5, 80)), float(rng.uniform(5, 80))) for a, b in sorted(edges)]
    return Topology(nodes=N, links=links, cpus_per_node=tuple(int(x) for x in smt * rng.integers(1, 20, N)),
                    smt=tuple(int(x) for x in smt), local_latency_ns=per(70, 110),
                    remote_latency_ns=per(120, 250), node_bw_GBps=per(20, 200), link_bw_GBps=per(10, 80),
                    thread_bw_GBps=per(4, 20), write_efficiency=per(0.1, 1.0), name="random")


def _check_rates(topo, costs, node, frac, running, shared, thread_mm):
    """Each row alone through numpy and the compiled code, with and without the shared init and
    with either link accounting; and the rows of one numpy call (every row coherent, or none)
    equal to each row alone."""
    R = node.shape[0]
    for sh, both in [(sh, both) for sh in (None, np.zeros_like(shared), shared) for both in (True, False)]:
        ref = numpy_progress_rates(costs, topo, node, frac, running, sh, thread_mm, both_directions=both)
        uniform = sh is None or len({bool((sh[r] & running[r]).any()) for r in range(R)}) == 1
        for r in range(R):
            one = numpy_progress_rates(costs, topo, node[r:r + 1], frac[r:r + 1], running[r:r + 1],
                                       None if sh is None else sh[r:r + 1], thread_mm, both_directions=both)[0]
            got = _compiled_rates(topo, costs, node[r], frac[r], running[r], None if sh is None else sh[r], thread_mm,
                                  both)
            assert np.array_equal(one, got), (topo.name, r, sh is not None, np.abs(one - got).max())
            if uniform:
                assert np.array_equal(ref[r], got)


@pytest.mark.parametrize("N", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("seed", range(6))
def test_progress_rates_random(N, seed):
    rng = np.random.default_rng(1000 * N + seed)
    topo = _random_topology(rng, N)
    costs = Costs() if seed % 2 == 0 else Costs(smt_share=float(rng.uniform(0.4, 0.9)),
                                                link_write_efficiency=float(rng.uniform(0.2, 0.8)))
    T = int(rng.choice([1, 2, 7, 9, 64, 129, 300, 450]))
    _check_rates(topo, costs, *_random_inputs(rng, topo, T, R=3))


@pytest.mark.parametrize("preset", Topology.presets())
def test_progress_rates_presets(preset):
    """Full thread counts (one per CPU, the engine's placement by a CPU permutation), and an
    oversubscribed machine on the smaller presets."""
    topo = Topology.preset(preset)
    rng = np.random.default_rng(len(preset))
    for T in (topo.ncpus, min(2 * topo.ncpus, 450)):
        node, frac, running, shared, thread_mm = _random_inputs(rng, topo, T, R=2)
        if T == topo.ncpus:
            node[:] = topo.cpu_node[np.stack([rng.permutation(topo.ncpus) for _ in range(2)])]
            running[0] = True
        _check_rates(topo, Costs(), node, frac, running, shared, thread_mm)


@pytest.mark.parametrize("N", [1, 2, 8])
def test_column_sum_is_numpys(N):
    """numpy's (R, T, N).sum(axis=1): thread order from the first, pairwise when N == 1."""
    rng = np.random.default_rng(N)
    x = rng.random((2, 300, N)) * 10.0 ** rng.integers(-6, 6, (2, 300, N))
    ref = x.sum(axis=1)
    buf = np.empty(300)
    for r in range(2):
        got = [cp._column_sum(np.ascontiguousarray(x[r]), n, buf) for n in range(N)]
        assert np.array_equal(ref[r], got)

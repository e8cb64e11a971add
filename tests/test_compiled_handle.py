"""The compiled fault handling, placement and load balancer (numalab.engine.compiled.handle,
.placement, .groups, .period) against the numpy engine's phases, bit for bit.

A numpy batch is stopped right before a phase (``_compiled_helpers.before_phase``); one copy
runs the numpy phase, the other the compiled one for every replica, and every state array and
the step context must then be equal. The phases: the fault phase (``faults.hinting_faults`` on
the numpy copy; on the other, the same fault list -- ``poisson_faults`` + ``sweep_faults``,
merged and PROT_NONE cleared as ``hinting_faults`` does -- handed to the compiled
``handle_faults`` through ``X.f_region`` / ``X.f_thread`` / ``X.nfaults``),
``numa_migrate_preferred`` and ``lb_moves`` (with a high ``lb_migrate_hz``, so that pulls and
swaps happen). Positions: every step of a run in which the phase has work, and the steps 0, 1,
2, 5, ..., 300 and the last two whatever happens. Cases: :data:`_compiled_helpers.CASES`, extra
cases for what they do not reach (tight memory: failing migrations; a memory-only and a
memoryless node; 8 nodes with groups; each switch off), random small workloads
(``test_engine_reference.cases``), and states perturbed to show float association and the
migrate_balanced boundary. Each ported reduction is also held to the numpy call it mirrors.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import numalab as nl
from numalab.counters import COUNTER_NAMES
from numalab.engine import faults, groups, make_batch, scan_period
from numalab.engine.compiled import available
from numalab.engine.compiled.state import pack_layout, pack_state
from numalab.topology import Topology
from numalab.workloads import from_access_matrix

from _compiled_helpers import (CASES, ORDER, PHASES, _copy, _copy_ctx, assert_same_context, assert_same_state,
                               compiled_phase, compiled_policy, make_case, scratch_of, _equal)
from test_engine_reference import cases

pytestmark = pytest.mark.skipif(not available(), reason="numba is not installed (pip install 'numalab[fast]')")

if available():
    from numalab.engine.compiled import groups as cgroups
    from numalab.engine.compiled import period as cperiod
    from numalab.engine.compiled.numsum import seqsum
    from numalab.engine.compiled.placement import shares as placement_shares

#: steps compared whatever happens in them (and every step in which the phase has work)
SOME_STEPS = frozenset((0, 1, 2, 5, 10, 20, 40, 80, 150, 300))
HI_LB = (0.5, 4.0)                    # lb_migrate_hz high enough for pulls and swaps in short runs

# ------------------------------------------------------------------------------------ cases
_MATRIX = np.array([[1, 1, 0, 0, 0.25, 0], [0, 1, 1, 0, 0, 2], [0, 0, 1, 1, 0, 0], [1, 0, 0, 1, 1, 0],
                    [0.25, 0, 2, 0, 1, 1], [1, 1, 1, 0, 0, 0]], float)
_SMALL = dict(max_time=8.0, scan_delay_ms=200, scan_size_mb=16)


def _eight_node_matrix():
    """A random sparse 14 x 10 access matrix on 8 nodes of 2 CPUs (groups, swaps, 8-node sums)."""
    rng = np.random.default_rng(0)
    m = (rng.random((14, 10)) < 0.35) * rng.choice([0.25, 1.0, 2.0], size=(14, 10))
    m[m.sum(axis=1) == 0, 0] = 1.0
    return from_access_matrix(m, topology=Topology(nodes=8, cpus_per_node=2, smt=2, name="eight"),
                              chunk_bytes=4 << 20, loops=20000, init_node=-1)


def _cxl():
    """Two sockets of 4 CPUs and a CPU-less (CXL) node holding the first touch."""
    return Topology(nodes=3, cpus_per_node=[4, 4, 0], smt=[2, 2, 1], mem_per_node_GiB=[8.0, 8.0, 16.0],
                    distance=[[10, 21, 14], [21, 10, 24], [14, 24, 10]], node_bw_GBps=[100.0, 100.0, 40.0],
                    local_latency_ns=[90.0, 90.0, 180.0], remote_latency_ns=[140.0, 140.0, 260.0], name="small-cxl")


def _memless():
    """Three nodes of 2 CPUs, the third without memory (a migration to it fails)."""
    return Topology(nodes=3, cpus_per_node=2, smt=2, mem_per_node_GiB=[8.0, 8.0, 0.0],
                    distance=[[10, 20, 12], [20, 10, 20], [12, 20, 10]], name="memless")


def _tight():
    """Two nodes of 4 CPUs with barely the matrix workload's memory: migrations start failing."""
    room = (6 * (4 << 20) + (12 << 20)) / 2 / (1 << 30) * 1.05     # as test_engine_reference's tight nodes
    return Topology(nodes=2, cpus_per_node=4, smt=2, mem_per_node_GiB=room, name="tight")


def _matrix_case(topo, policy, seeds, init_node, **opts):
    wl = from_access_matrix(_MATRIX, topology=topo, chunk_bytes=4 << 20, loops=20000, init_node=init_node)
    return lambda **more: make_batch(wl, policy, seeds, **{**_SMALL, **opts, **more})


def _named_case(name, preset, policy, seeds, options, overrides):
    if isinstance(preset, str):
        return lambda **more: make_case(name, preset, policy, seeds, {**options, **more}, overrides)
    wl = nl.workload(name, preset, **overrides)
    return lambda **more: make_batch(wl, policy, seeds, **{**options, **more})


_NUMA01_IVB = ("numa01", "2s-ivb-40", "rfc2023-p2", [0], dict(size_bytes=256 << 20, loops=20))
_EIGHT = _eight_node_matrix()
#: (label, batch factory taking extra options)
EXTRA = [
    ("tight memory", _matrix_case(_tight(), "6.12", [0, 1], 0)),
    ("memory-only node", _matrix_case(_cxl(), "rfc2023-p4", [0, 1], 2)),
    ("memoryless node", _matrix_case(_memless(), "6.7", [3], -1)),
    ("genoa numa01", _named_case("numa01", "8n-genoa-nps4", "6.12", [2], {},
                                 dict(threads=24, size_bytes=256 << 20, loops=60))),
    ("8-node matrix", lambda **more: make_batch(_EIGHT, "6.12", [0, 1], **{**_SMALL, **more})),
    ("tight numa02", _named_case("numa02", nl.Topology.preset("2s-ivb-40", mem_per_node_GiB=0.14), "6.12", [1, 2],
                                 {}, dict(size_bytes=256 << 20))),
] + [(f"{k}={v}", _named_case(*_NUMA01_IVB[:4], {k: v}, _NUMA01_IVB[4]))
     for k, v in (("numa_groups", False), ("task_swaps", False), ("migrate_filter", False),
                  ("scan_period_adapt", False), ("sticky_locality", False), ("thp", False),
                  ("lb_refill_locality", True), ("stick_numa", True), ("numa_maymove", False))]
FACTORIES = [(f"{c[0]}/{c[1]}/{c[2]}", _named_case(*c)) for c in CASES] + EXTRA
#: the cases of the perturbed-state test
PERTURBED = ("numa01/2s-ivb-40/rfc2023-p2", "genoa numa01", "8-node matrix", "memory-only node")


def _policy(b):
    """The compiled policy tuple (a user rule's policy without it: the handle phases read only
    the history)."""
    return compiled_policy(b)


def _layout(b):
    """pack_layout with every array a read-only view: a named workload's arrays are read-only
    and a matrix workload's are not, and numba compiles for each combination (one type here)."""
    def ro(a):
        if not isinstance(a, np.ndarray):
            return a
        v = a.view()
        v.flags.writeable = False
        return v
    L = pack_layout(b)
    return L._make(ro(a) for a in L)


def _relink(b):
    """A deep copy's counter columns as views of its table again (``copy.deepcopy`` copies each
    view on its own: the numpy phases would then write columns the table never sees)."""
    b.counters.events = {name: b.counters.table[:, i] for i, name in enumerate(COUNTER_NAMES)}


def _fault_list(b, ctx):
    """faults.hinting_faults up to its handle_faults call: the step's faults (replica, region,
    thread) in (replica, region) order, dropped from the protected index and PROT_NONE cleared;
    None when there are none."""
    if b.prot.idx.size == 0:
        return None
    pq, pt = faults.poisson_faults(b)
    sq, st = faults.sweep_faults(b, ctx)
    if pq.size + sq.size == 0:
        return None
    q, ft = np.concatenate([pq, sq]), np.concatenate([pt, st])
    order = np.argsort(q, kind="stable")
    q, ft = q[order], ft[order]
    keep = np.ones(b.prot.idx.size, dtype=bool)
    keep[np.searchsorted(b.prot.idx, q)] = False
    b.prot.idx, b.prot.lam, b.prot.thresh = b.prot.idx[keep], b.prot.lam[keep], b.prot.thresh[keep]
    fr, freg = np.divmod(q, b.lay.NR)
    b.regions.prot_none[fr, freg] = False
    return fr, freg, ft


# ------------------------------------------------------------------------------------ one phase
def _compare(phase, b1, c1, b2, c2, where, perturb=None):
    """Run numpy ``phase`` on (b1, c1) and the compiled one on (b2, c2), replica by replica
    (after ``perturb(b1, b2)``, which changes both alike); assert the states and contexts
    equal. Returns what happened (for the coverage checks)."""
    _relink(b1)
    _relink(b2)
    if perturb is not None:
        perturb(b1, b2)
    before = b1.counters.table.copy()
    L, Q, S = _layout(b2), _policy(b2), pack_state(b2)
    X = scratch_of(b2, c2)
    nf = 0
    requests = int(np.count_nonzero(c1.want)) if c1.want is not None else 0   # served by the phase
    if phase == "hinting_faults":
        fl = _fault_list(b2, c2)
        PHASES[phase](b1, c1)
        if fl is not None:
            fr, freg, ft = fl
            nf = fr.size
            for r in range(b2.R):
                sel = fr == r
                X.nfaults[r] = np.count_nonzero(sel)
                X.f_region[r, :X.nfaults[r]] = freg[sel]
                X.f_thread[r, :X.nfaults[r]] = ft[sel]
                compiled_phase("handle_faults", L, Q, S, X, r)
    else:
        PHASES[phase](b1, c1)
        for r in range(b2.R):
            compiled_phase(phase, L, Q, S, X, r)
    assert_same_state(b1, b2, where=where)
    assert_same_context(c1, X, where=where)
    d = b1.counters.table - before
    if phase == "hinting_faults":                                             # made by the phase
        requests = int(np.count_nonzero(c1.want)) if c1.want is not None else 0
    return dict(faults=nf, want=requests,
                **{k: int(d[:, COUNTER_NAMES.index(k)].sum()) for k in _COVER})


_COVER = ("numa_pages_migrated", "numa_migrate_fail", "group_joins", "task_migrations", "lb_migrations",
          "scan_period_resets")


def _busy(phase, b, ctx):
    """Whether ``phase`` has anything to do in this step: a protected region (that may fault), a
    numa_migrate_preferred request, a load-balancer draw below its rate."""
    if phase == "hinting_faults":
        return b.prot.idx.size > 0
    if phase == "numa_migrate_preferred":
        return ctx.want is not None and bool(ctx.want.any())
    return bool(np.count_nonzero(ctx.u_lb < b.o.lb_migrate_hz * b.dt))


def _positions(b, phases, always=SOME_STEPS):
    """``before_phase`` for each of ``phases`` at the steps of ``always`` and at every other step
    where the phase has something to do (:func:`_busy`), up to the end of the run: ``(phase,
    b_numpy, ctx_numpy, b_other, ctx_other)`` as ``_compiled_helpers.before_phase`` yields them
    (one run for several phases; copies only where compared)."""
    while not b.outcome.done.all() and b.now < b.o.max_time:
        ctx = b.begin_step()
        for name in ORDER:
            if name in phases and (b.steps in always or _busy(name, b, ctx)):
                yield name, _copy(b), _copy_ctx(ctx), _copy(b), _copy_ctx(ctx)
            PHASES[name](b, ctx)


def _last_steps(b):
    """The last two steps of batch ``b``'s run (stepped one by one, as the positions are)."""
    while not b.outcome.done.all() and b.now < b.o.max_time:
        b.step()
    return {b.steps - 2, b.steps - 1}


def _check_case(phases, factory, label, perturb=None, **options):
    """Compare each of ``phases`` at the positions of :func:`_positions` of the case's run (and
    at its last two steps), states changed by ``perturb`` if given; returns the summed
    coverage."""
    total = dict.fromkeys(("positions", "faults", "want") + _COVER, 0)
    always = SOME_STEPS | _last_steps(factory(**options))
    for phase, b1, c1, b2, c2 in _positions(factory(**options), phases, always):
        got = _compare(phase, b1, c1, b2, c2, f"{label} {options} {phase} step {b1.steps}", perturb)
        total["positions"] += 1
        for key, v in got.items():
            total[key] += v
    return total


def _sum(a, b):
    return {k: a.get(k, 0) + b.get(k, 0) for k in set(a) | set(b)}


def test_handle_faults_matches_numpy():
    """The fault phase at every step of every case: records, filter, migrations (and failures
    on full nodes), last_cpupid, kernel time, groups, placement, buffers, locality."""
    cov = {}
    for label, factory in FACTORIES:
        cov = _sum(cov, _check_case({"hinting_faults"}, factory, label))
    assert cov["faults"] > 1000 and cov["want"] > 20, cov
    for k in ("numa_pages_migrated", "numa_migrate_fail", "group_joins"):
        assert cov[k] > 0, (k, cov)


def _perturbation(seed):
    """A state change for :func:`_compare`: random non-dyadic fault statistics (where the
    association of the fold's and the ratio test's float operations shows) and every node 0-3
    huge pages short of full (migrate_balanced's room runs out exactly at a candidate)."""
    rng = np.random.default_rng(seed)

    def perturb(b1, b2):
        fm, fc = (rng.random(b1.numa.faults_mem.shape) * 10.0 ** rng.integers(-2, 6, b1.numa.faults_mem.shape)
                  for _ in range(2))
        short = 512 * rng.integers(0, 4, b1.regions.node_pages.shape)
        for b in (b1, b2):
            b.numa.faults_mem[:] = fm
            b.numa.faults_cpu[:] = fc
            b.regions.node_pages[:] = b.lay.node_cap[None, :] - short
            b.groups.stats = b.groups.node_sums = None
    return perturb


def test_handle_faults_on_perturbed_states():
    """The fault phase on states made to show what the runs' states hide: fault statistics
    whose float operations round (so their order and association matter) and nodes whose room
    ends exactly at a candidate's pages."""
    cov = {}
    for label, factory in [f for f in FACTORIES if f[0] in PERTURBED]:
        cov = _sum(cov, _check_case({"hinting_faults"}, factory, label, perturb=_perturbation(5)))
    assert cov["numa_migrate_fail"] > 20 and cov["numa_pages_migrated"] > 0 and cov["want"] > 0, cov


def test_numa_migrate_preferred_matches_numpy():
    """numa_migrate_preferred at every step of every case: moves into idle CPUs, swaps (option
    task_swaps), update_scan_period's resets."""
    cov = {}
    for label, factory in FACTORIES:
        cov = _sum(cov, _check_case({"numa_migrate_preferred"}, factory, label))
    assert cov["want"] > 20 and cov["task_migrations"] > 20 and cov["scan_period_resets"] > 0, cov


def test_lb_moves_matches_numpy():
    """The load balancer's pulls at every step of every case, at rates that make them happen
    (and find full nodes: swaps)."""
    cov = {}
    for i, (label, factory) in enumerate(FACTORIES):
        cov = _sum(cov, _check_case({"lb_moves"}, factory, label, lb_migrate_hz=HI_LB[i % 2]))
    assert cov["lb_migrations"] > 100 and cov["scan_period_resets"] > 10, cov


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_random_small_runs_match_numpy(case):
    """The three phases at every step of random small runs where they have work (every kernel
    profile, tight or roomy nodes, the load balancer off to frequent)."""
    wl, policy, seed, opts = case
    _check_case({"hinting_faults", "numa_migrate_preferred", "lb_moves"},
                lambda **more: make_batch(wl, policy, [seed], **{**opts, **more}), "random")


# ------------------------------------------------------------------------------------ the sums
def _random_batch(case, rng):
    """A batch of ``case`` whose groups and fault statistics are random: mixed magnitudes,
    zeros, non-dyadic fractions (where the order of a float sum shows)."""
    b = make_case(*case)
    R, T = b.R, b.lay.T
    b.groups.gid[:] = np.where(rng.random((R, T)) < 0.7, rng.integers(0, max(T // 3, 1), (R, T)), -1)
    for a in (b.numa.faults_mem, b.numa.faults_cpu):
        x = rng.random(a.shape) * 10.0 ** rng.integers(-3, 8, a.shape)
        a[:] = np.where(rng.random(a.shape) < 0.2, 0.0, x)
    b.groups.stats = b.groups.node_sums = None
    return b


@pytest.mark.parametrize("case", [CASES[1], CASES[2], CASES[3]], ids=["2 nodes", "8 nodes", "4 nodes"])
def test_group_sums_and_scores_match_numpy(case):
    """Each ported reduction against the numpy engine's own call: the group sums (np.bincount),
    their node sums (``.sum(axis=-1)``), active_nodes, shared_scale (sums over the nodes of a
    fancy-indexed copy) and numa_migrate_preferred's normalised scores."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        b = _random_batch(case, rng)
        R, T, N = b.R, b.lay.T, b.lay.N
        gm, gc, gsize = groups.group_stats(b)
        X = scratch_of(b, b.begin_step())
        for r in range(R):
            cgroups.group_stats(b.groups.gid, b.numa.faults_mem, b.numa.faults_cpu, X.gm, X.gc, X.gsize, r)
        assert np.array_equal(X.gm, gm) and np.array_equal(X.gc, gc) and np.array_equal(X.gsize, gsize)
        gm_n, gc_n = groups.group_node_sums(b, gm, gc)
        act = groups.active_nodes(b, gc)
        own = b.numa.faults_mem.sum(axis=-1)
        gid = b.groups.gid
        # numa_migrate_preferred's scores, as placement.numa_migrate_preferred computes them
        grp = np.take_along_axis(gm.sum(axis=-1), np.where(gid >= 0, gid, 0)[:, :, None], axis=1)
        sc = np.where((gid >= 0)[:, :, None], grp, own)
        sc_n = sc / np.maximum(sc.sum(axis=-1, keepdims=True), 1e-9)
        own_n = own / np.maximum(own.sum(axis=-1, keepdims=True), 1e-9)
        for r in range(R):
            got_sc, got_own = placement_shares(gid, b.numa.faults_mem, X.gm, r)
            assert np.array_equal(got_sc, sc_n[r]) and np.array_equal(got_own, own_n[r])
            for g in range(T):
                for n in range(N):
                    assert cgroups.node_sum(X.gm, r, g, n) == gm_n[r, g, n]
                    assert cgroups.node_sum(X.gc, r, g, n) == gc_n[r, g, n]
                    a, nact = cgroups.active_node(X.gc, r, g, n)
                    assert a == act[r, g, n] and nact == act[r, g].sum()
            for t in np.flatnonzero(gid[r] >= 0):
                sel = (np.array([r]), np.array([t]))
                base = np.array([int(rng.integers(100, 70000))])
                want = scan_period.shared_scale(b, base, gm, gsize, sel)[0]
                assert cperiod.shared_scale(gid, X.gm, X.gsize, r, t, base[0]) == want


def test_shared_scale_sums_the_nodes_pairwise():
    """shared_scale's floor of the group's faults summed over 8 nodes: tenths whose pairwise and
    sequential sums fall on either side of an integer."""
    rng = np.random.default_rng(3)
    gid, gsize = np.array([[1, 1]]), np.array([[0, 2]])
    b = SimpleNamespace(groups=SimpleNamespace(gid=gid))
    split = 0
    for _ in range(3000):
        gm = rng.integers(1, 10, (1, 2, 8, 2)) / 10.0
        split += any(np.floor(gm[0, 1, :, p].sum()) != np.floor(seqsum(gm[0, 1, :, p].copy())) for p in range(2))
        want = scan_period.shared_scale(b, np.array([1000]), gm, gsize, (np.array([0]), np.array([0])))[0]
        assert cperiod.shared_scale(gid, gm, gsize, 0, 0, 1000) == want
    assert split > 10


def test_a_pair_sum_is_numpys_with_signed_zeros_and_specials():
    """node_sum is numpy's ``x.sum(axis=-1)`` over a pair, signed zeros, infinities and NaN too."""
    vals = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e308, 5e-324, 0.1])
    a = np.array(np.meshgrid(vals, vals)).T.reshape(1, -1, 1, 2).copy()
    with np.errstate(all="ignore"):
        want = a.sum(axis=-1)
    for i in range(a.shape[1]):
        got = cgroups.node_sum(a, 0, i, 0)
        assert (np.isnan(got) and np.isnan(want[0, i, 0])) or (got == want[0, i, 0] and
                                                               np.signbit(got) == np.signbit(want[0, i, 0]))


@pytest.mark.parametrize("case", [0, 3, 6])
def test_the_batch_copy_is_independent_and_runs_like_its_original(case):
    """``_copy`` (every phase test's copy of a batch) against ``copy.deepcopy``: stepped on, the
    copy ends where its original does, and stepping either leaves the other as it was, context
    included; so no mutable array is shared and none is left out."""
    import copy

    b = make_case(*CASES[case])
    for _ in range(25):
        b.step()
    ctx = b.begin_step()
    c, c_ctx = _copy(b), _copy_ctx(ctx)
    frozen, frozen_ctx = copy.deepcopy(b), copy.deepcopy(ctx)
    for name in ORDER:                       # the copy finishes the step and runs 15 more
        PHASES[name](c, c_ctx)
    for _ in range(15):
        c.step()
    assert c.steps == b.steps + 16
    assert_same_state(b, frozen, where="the original after its copy ran")
    for f, v in vars(frozen_ctx).items():
        if isinstance(v, np.ndarray):
            assert _equal(getattr(ctx, f), v), f"the original's step context changed in {f}"
    for name in ORDER:
        PHASES[name](b, ctx)
    for _ in range(15):
        b.step()
    assert_same_state(b, c, where="the original run on")
    assert_same_state(frozen, _copy(frozen), where="a fresh copy")


"""numalab.engine.compiled.detect agrees bit for bit with the numpy engine's fault detection
(faults.poisson_faults and faults.sweep_faults, merged and applied as hinting_faults does): the
same faults (region, thread) in region order, the same hazards and PROT_NONE bits, every other
state array untouched.

Batches are positioned right before the fault phase (``before_phase``) at every step of short
runs of the CASES workloads and of extra cases that reach the rarer paths (a thread's init ends in
a step while protected swept regions wait: the loop's first piece; a finished replica whose
protected regions' clocks still run), and at random steps of random small workloads (fixed-rate
touches: the Poisson clock) and of random shrunken built-in workloads (sweeps)."""

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from _compiled_helpers import (CASES, _copy, _copy_ctx, assert_same_context, assert_same_state, before_phase,
                               compiled_phase, make_case, scratch_of)
from numalab.engine import LB_MIGRATE_HZ, faults, make_batch
from numalab.engine.compiled import detect
from numalab.engine.compiled.state import pack_layout, pack_state
from numalab.policy import Policy
from numalab.topology import Topology
from numalab.workloads import PH_INIT, PH_LOOP, from_access_matrix

#: cases beyond CASES, each with the path it must reach: "loop_piece" (a thread's init ended in a
#: step with protected swept regions: sweep_pieces' second piece), "done" (a finished replica
#: with protected regions), "sweep" / "poisson" (faults of each kind)
EXTRA = [
    (("numa01", "2s-128", "6.12", [0, 1], dict(scan_delay_ms=100), dict(threads=8, size_bytes=1 << 30, loops=3)),
     {"loop_piece", "done", "sweep", "poisson"}),
    (("numa01", "4s-144", "rfc2023-p4", [2], dict(scan_delay_ms=200, scan_size_mb=1024),
      dict(threads=6, size_bytes=1 << 30, loops=2)), {"loop_piece", "sweep"}),
]
#: what each CASES entry must reach (by index)
CASES_NEED = {3: {"done", "sweep", "poisson"}, 5: {"poisson"}, 7: {"sweep", "poisson"}}

_none = np.zeros(0, dtype=np.int64)


def numpy_detect(b, ctx):
    """The numpy engine's detection, as hinting_faults runs it up to handle_faults: the faults'
    flat regions and threads (sorted by flat region), with their PROT_NONE bits cleared."""
    if b.prot.idx.size == 0:
        return _none, _none
    pq, pt = faults.poisson_faults(b)
    sq, st_ = faults.sweep_faults(b, ctx)
    q, ft = np.concatenate([pq, sq]), np.concatenate([pt, st_])
    order = np.argsort(q, kind="stable")
    q, ft = q[order], ft[order]
    fr, freg = np.divmod(q, b.lay.NR)
    b.regions.prot_none[fr, freg] = False
    return q, ft


def _read_only(L):
    """``L`` with every array a read-only view: a built-in workload's layout arrays are
    read-only (laid out once per process) and from_access_matrix's are not, and numba compiles
    once per type (read-only or not), so one type for all (one compilation, ~30 s)."""
    def ro(a):
        if not isinstance(a, np.ndarray):
            return a
        v = a.view()
        v.flags.writeable = False
        return v
    return type(L)(*(ro(a) for a in L))


def compiled_detect(b, ctx):
    """detect_faults on every replica of ``b`` (its state written in place); the scratch."""
    L, S, X = _read_only(pack_layout(b)), pack_state(b), scratch_of(b, ctx)
    for r in range(b.R):
        compiled_phase("detect_faults", L, None, S, X, r, b=b)
    return X


def reached(b, ctx):
    """The rarer paths this position reaches (before the phase runs)."""
    out = set()
    if b.prot.idx.size == 0:
        return out
    if faults.swept_protected(b).size and np.count_nonzero(ctx.running & (ctx.phase0 == PH_INIT)
                                                           & (b.tasks.phase == PH_LOOP)):
        out.add("loop_piece")
    if np.count_nonzero(b.outcome.done[b.prot.idx // b.lay.NR]):
        out.add("done")
    return out


def check_position(b1, c1, b2, c2, where=""):
    """The numpy detection on (b1, c1), the compiled one on (b2, c2): equal faults and state.
    Returns the paths reached."""
    seen = reached(b1, c1)
    b3, c3 = (_copy(b1), _copy_ctx(c1)) if b1.prot.idx.size else (None, None)
    q, ft = numpy_detect(b1, c1)
    X = compiled_detect(b2, c2)
    NR = b1.lay.NR
    for r in range(b1.R):
        mine = (q // NR) == r
        n = int(X.nfaults[r])
        assert X.f_region[r, :n].tolist() == (q[mine] % NR).tolist(), f"{where} r={r}: fault regions"
        assert X.f_thread[r, :n].tolist() == ft[mine].tolist(), f"{where} r={r}: faulting threads"
    assert_same_state(b1, b2, where=where)
    assert_same_context(c1, X, where=where)
    if q.size:
        # hinting_faults itself leaves the same PROT_NONE bits and hazards
        faults.hinting_faults(b3, c3)
        assert np.array_equal(b3.regions.prot_none, b2.regions.prot_none), where
        assert np.array_equal(b3.regions.hazard, b2.regions.hazard), where
        cls = b1.lay.region_class[q % NR]
        seen |= {"sweep" if s else "poisson" for s in b1.lay.cls_sweep[cls]}
    return seen


def run_case(case, steps=None):
    """Check every step of a case's run (``steps``: those only) up to one past its end."""
    b = make_case(*case)
    seen = set()
    for k, (b1, c1, b2, c2) in enumerate(before_phase(b, "hinting_faults", steps or range(100000))):
        seen |= check_position(b1, c1, b2, c2, where=f"{case[:4]} position {k}")
        if steps is None and b1.outcome.done.all():
            break
    return seen


@pytest.mark.parametrize("i", range(len(CASES)))
def test_cases_every_step(i):
    seen = run_case(CASES[i])
    assert CASES_NEED.get(i, set()) <= seen, seen


@pytest.mark.parametrize("i", range(len(EXTRA)))
def test_extra_paths(i):
    case, need = EXTRA[i]
    seen = run_case(case)
    assert need <= seen, seen


def test_a_run_without_protection_changes_nothing():
    b = make_case(*CASES[0])
    for b1, c1, b2, c2 in before_phase(b, "hinting_faults", [0]):
        assert b1.prot.idx.size == 0
        X = compiled_detect(b2, c2)
        assert X.nfaults.tolist() == [0] * b2.R
        assert_same_state(b1, b2)


def _arm_all(b, ctx, r, done):
    """Every protected region of replica ``r`` past its threshold (threshold 0); ``done``: the
    replica finished (and so runs no thread), as end_step and begin_step leave it."""
    b.regions.thresh[r] = 0.0
    b.prot.replace(b.prot.idx, b.lay, b.regions.thresh)
    if done:
        b.outcome.done[r] = True
        ctx.running[r] = False


@pytest.mark.parametrize("done", [False, True])
def test_every_clock_past_its_threshold(done):
    """All protected regions of replica 0 at threshold 0: every one of a touched fixed-rate
    class faults at once (each picks its faulting entry), unless the replica finished."""
    b = make_case(*CASES[3])                           # numa02: stacks and swept slices, two seeds
    before = after = 0
    clock = ~b.lay.cls_sweep[b.lay.region_class]       # regions of the hazard clock's classes
    for b1, c1, b2, c2 in before_phase(b, "hinting_faults", range(105)):
        if not np.count_nonzero(b1.regions.prot_none[0] & clock):
            continue
        for bb, cc in ((b1, c1), (b2, c2)):
            _arm_all(bb, cc, 0, done)
        before += int(np.count_nonzero(b1.regions.prot_none[0] & clock))
        check_position(b1, c1, b2, c2, where=f"done={done}")
        after += int(np.count_nonzero(b2.regions.prot_none[0] & clock))
    assert before > 0 and (after == before if done else after < before)


# ------------------------------------------------------------------------ random workloads
@st.composite
def matrix_cases(draw):
    """Small random workloads of fixed-rate touches (tests/test_engine_reference.py's cases,
    without user rules): the Poisson clock."""
    nodes = draw(st.integers(2, 3))
    cpus = draw(st.sampled_from([2, 4, 6]))
    T = draw(st.integers(1, min(5, nodes * cpus)))
    K = draw(st.integers(1, 4))
    chunk = draw(st.sampled_from([2, 4, 8])) << 20
    tight = (K * chunk + (12 << 20)) / nodes / (1 << 30) * 1.05
    topo = Topology(nodes=nodes, cpus_per_node=cpus, smt=2, node_bw_GBps=draw(st.sampled_from([20.0, 100.0])),
                    mem_per_node_GiB=draw(st.sampled_from([128.0, tight])), name="tiny")
    rates = np.array(draw(st.lists(st.lists(st.sampled_from([0.0, 0.0, 0.25, 1.0, 2.0]), min_size=K, max_size=K),
                                   min_size=T, max_size=T)))
    for t in range(T):
        if rates[t].sum() == 0:
            rates[t, draw(st.integers(0, K - 1))] = 1.0
    wl = from_access_matrix(rates, topology=topo, chunk_bytes=chunk, loops=draw(st.sampled_from([2000, 20000])),
                            init_node=draw(st.integers(-1, nodes - 1)))
    policy = Policy.profile(draw(st.sampled_from(Policy.profiles())))
    opts = dict(dt=draw(st.sampled_from([0.02, 0.05, 0.1])), max_time=3.0, thp=draw(st.booleans()),
                scan_delay_ms=draw(st.sampled_from([100, 200, 1000])),
                scan_size_mb=draw(st.sampled_from([4, 16, 256])),
                lb_migrate_hz=draw(st.sampled_from([0.0, LB_MIGRATE_HZ, 4.0])))
    seeds = draw(st.lists(st.integers(0, 2**31), min_size=1, max_size=2))
    start = draw(st.integers(0, 60))
    steps = range(start, start + 25)
    return make_batch(wl, policy, seeds, **opts), steps


@st.composite
def sweep_cases(draw):
    """Shrunken built-in workloads (sweeps, shared loop ranges, stacks) with random switches."""
    name = draw(st.sampled_from(["numa01", "numa01_THREAD_ALLOC", "numa02", "numa02_SMT", "numa01_HARD_BIND"]))
    preset = draw(st.sampled_from(["2s-128", "2s-ivb-40", "4s-144"]))
    over = dict(threads=draw(st.integers(1, 12)), size_bytes=draw(st.sampled_from([32, 96, 256, 512])) << 20)
    if not name.startswith("numa02"):
        over["loops"] = draw(st.integers(1, 4))
    opts = dict(dt=draw(st.sampled_from([0.02, 0.05])), thp=draw(st.booleans()),
                first_arrival=draw(st.sampled_from([True, True, False])), sweep_convoy=draw(st.booleans()),
                malloc_edges=draw(st.booleans()), first_touch_wait=draw(st.booleans()),
                scan_delay_ms=draw(st.sampled_from([100, 1000])), scan_size_mb=draw(st.sampled_from([64, 256, 1024])),
                init_coherence=draw(st.booleans()), lb_migrate_hz=draw(st.sampled_from([0.0, 0.2])),
                lb_refill_locality=draw(st.booleans()), stick_numa=draw(st.booleans()),
                numa_maymove=draw(st.booleans()))
    policy = draw(st.sampled_from(["6.12", "6.4", "pre-6.4", "rfc2023-p4", "rfc2024-pid-bits"]))
    seeds = draw(st.lists(st.integers(0, 1000), min_size=1, max_size=2))
    start = draw(st.integers(0, 60))
    steps = range(start, start + 25)
    return make_case(name, preset, policy, seeds, opts, over), steps


@settings(max_examples=60, deadline=None)
@given(matrix_cases())
def test_random_fixed_rate_workloads(case):
    b, steps = case
    seen = set()
    for b1, c1, b2, c2 in before_phase(b, "hinting_faults", steps):
        seen |= check_position(b1, c1, b2, c2)
    for path in sorted(seen):
        event(path)


@settings(max_examples=60, deadline=None)
@given(sweep_cases())
def test_random_sweep_workloads(case):
    b, steps = case
    seen = set()
    for b1, c1, b2, c2 in before_phase(b, "hinting_faults", steps):
        seen |= check_position(b1, c1, b2, c2)
    for path in sorted(seen):
        event(path)


# ------------------------------------------------------------------------ numpy's scalar ufuncs
def _special():
    rng = np.random.default_rng(5)
    v = np.concatenate([rng.normal(0, 1e9, 300), rng.uniform(-5, 5, 100), [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf,
                                                                             np.nan, 3.0, 2.0 ** 31, 1e-300]])
    return np.array(np.meshgrid(v, v)).reshape(2, -1)


def _bits(a):
    a = np.asarray(a, dtype=np.float64)
    return np.where(np.isnan(a), np.nan, a).view(np.int64)     # NaNs alike, signed zeros told apart


@pytest.mark.parametrize("name, ref", [("_np_mod", np.mod), ("_np_max", np.maximum), ("_np_min", np.minimum)])
def test_scalar_helpers_are_numpys(name, ref):
    x, y = _special()
    fn = getattr(detect, name)
    got = np.array([fn(a, c) for a, c in zip(x.tolist(), y.tolist())])
    with np.errstate(all="ignore"):
        want = ref(x, y)                                          # on arrays, as the numpy engine calls it
    assert np.array_equal(_bits(got), _bits(want))

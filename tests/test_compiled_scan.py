"""The compiled scan phase (numalab.engine.compiled.scan with .decide) against the numpy engine's
(numalab.engine.scan, history_stats), bit for bit.

Each comparison stops a numpy batch right before ``scan_trigger`` (``before_phase``), runs the
numpy phase on one copy and the compiled one, replica by replica, on the other, and holds every
state array and the step context equal. Positions: the steps where a ``task_numa_work`` ran (found
by a first numpy run of the same batch) and a fixed spread from the start to the end of the run.
The cases: :data:`CASES`, every profile, history lengths 1-8, 128-bit maps, a bound workload, and
random small workloads (hypothesis). :func:`test_decide_matches_policy_decide` checks the one-VMA
decision against ``numalab.policy.decide`` on random views for every profile.
"""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numalab as nl
from numalab.counters import COUNTER_NAMES
from numalab.engine import LB_MIGRATE_HZ, make_batch, scan
from numalab.engine.compiled.decide import decide_vma_py, encode, pack_policy
from numalab.engine.compiled.state import pack_layout, pack_state
from numalab.history import bit_masks
from numalab.policy import Policy, decide
from numalab.reasons import CODE, REASONS
from numalab.scanview import synthetic_view
from numalab.topology import Topology
from numalab.workloads import INACCESSIBLE, SHARED_RO, from_access_matrix

from _compiled_helpers import (CASES, assert_same_context, assert_same_state, before_phase, compiled_phase, make_case,
                               scratch_of)

STEPS = (0, 1, 2, 5, 10, 20, 40, 80, 150, 300)
PROFILES = Policy.profiles()
NUMAB = [p for p in PROFILES if Policy.profile(p).numab_state]
#: scans every 100 ms in 64 MiB windows: many passes (seq_completed, the forced retry,
#: rotations, budget stops mid-VMA) within a few hundred steps
BUSY = dict(scan_delay_ms=100, scan_period_min_ms=100, scan_size_mb=64, max_time=30.0)
NUMA01 = dict(threads=4, size_bytes=128 << 20, loops=400)
#: reasons every run of this module must have compared at least once
SEEN = set()


def _relink(b):
    """The counter columns as views of the counters table again: a deep copy of a batch
    (before_phase) copies ``counters.events``' columns apart from ``counters.table``, which the
    numpy phases then no longer write."""
    b.counters.events = {name: b.counters.table[:, i] for i, name in enumerate(COUNTER_NAMES)}


def layout(b):
    """pack_layout(b) with every array a read-only view: numba types an array's read-only flag,
    and a built-in workload's arrays are read-only where a matrix workload's are not, so without
    this the phase would compile twice in this module."""
    def ro(a):
        if not isinstance(a, np.ndarray):
            return a
        a = a.view()
        a.flags.writeable = False
        return a
    L = pack_layout(b)
    return L._replace(**{name: ro(value) for name, value in zip(L._fields, L)})


def scan_steps(make, cap=2000):
    """The steps of a fresh batch ``make()`` where task_numa_work ran, the fixed spread of
    :data:`STEPS` and the last step, below ``cap``."""
    b = make()
    runs, k = [], 0
    while not b.outcome.done.all() and k < cap:
        before = b.counters.table[:, COUNTER_NAMES.index("scan_runs")].copy()
        b.step()
        if (b.counters.table[:, COUNTER_NAMES.index("scan_runs")] != before).any():
            runs.append(k)
        k += 1
    return sorted({*runs, *(s for s in STEPS if s < k), k - 1})


def perturb(pair, seed, now):
    """The same random numab and mm state in both batches of ``pair`` (a state the run may not
    reach by itself: later passes, windows full of bits, rotations and scan delays due around
    ``now``, VMAs without their state, counters, offsets at VMA starts and inside VMAs)."""
    b = pair[0]
    rng = np.random.default_rng(seed)
    R, V, W, words = b.vmas.pids_active.shape
    seq = b.mm.numa_scan_seq + rng.integers(0, 4, size=b.mm.numa_scan_seq.shape)
    vseq = seq[:, b.wl.vma_mm]
    pids = rng.integers(0, 2**63, size=(R, V, W, words), dtype=np.uint64)
    pids &= rng.integers(0, 2**63, size=pids.shape, dtype=np.uint64)
    pids &= rng.integers(0, 2**63, size=pids.shape, dtype=np.uint64)
    offset = np.zeros_like(b.mm.numa_scan_offset)
    for r in range(R):
        for m in range(b.lay.M):
            vm = b.lay.mm_vmas[m]
            v = vm[rng.integers(vm.size)]
            inside = b.wl.vma_start[v] + 512 * rng.integers(0, 4)
            offset[r, m] = inside if inside < b.wl.vma_end[v] and rng.random() < 0.5 else b.wl.vma_start[v]
    vmas = dict(has_state=b.vmas.has_state & (rng.random((R, V)) < 0.7), pids_active=pids,
                pids_idx=rng.integers(0, W, size=(R, V)), pids_active_reset=now + rng.uniform(-1, 1, (R, V)),
                next_scan=now + rng.uniform(-0.3, 0.3, (R, V)), prev_scan_seq=vseq - rng.integers(0, 9, (R, V)),
                start_scan_seq=vseq - rng.integers(0, 3, (R, V)), scan_select=rng.integers(0, 3, (R, V)))
    for x in pair:
        x.mm.numa_scan_seq[:] = seq
        x.mm.numa_scan_offset[:] = offset
        for name, value in vmas.items():
            getattr(x.vmas, name)[:] = value


def compare(make, cap=2000, limit=None, perturbed=False):
    """Compare the numpy and the compiled scan phase at the steps of :func:`scan_steps` (at most
    ``limit`` of them, spread; ``perturbed``: from a :func:`perturb` ed state); returns how many
    positions ran a task_numa_work."""
    steps = scan_steps(make, cap)
    if limit is not None and len(steps) > limit:
        steps = sorted({steps[i] for i in np.linspace(0, len(steps) - 1, limit).astype(int)})
    scans = 0
    for i, (b_np, ctx_np, b_c, ctx_c) in enumerate(before_phase(make(), "scan_trigger", steps)):
        _relink(b_np)
        _relink(b_c)
        if perturbed:
            perturb((b_np, b_c), i, ctx_np.t0)
        reasons0 = b_np.counters.reasons.copy()
        scan.scan_trigger(b_np, ctx_np)
        L, Q, S, X = layout(b_c), pack_policy(b_c), pack_state(b_c), scratch_of(b_c, ctx_c)
        for r in range(b_c.R):
            compiled_phase("scan_trigger", L, Q, S, X, r)
        where = f"{b_np.pol.name} at t={ctx_np.t0:.3f}"
        assert_same_state(b_np, b_c, where=where)
        assert_same_context(ctx_np, X, where=where)
        seen = np.flatnonzero((b_np.counters.reasons - reasons0).sum(axis=0))
        SEEN.update(REASONS[c] for c in seen)
        scans += bool(seen.size)
    return scans


# ------------------------------------------------------------------------------ batches
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_cases(case):
    compare(lambda: make_case(*case))


@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile(profile):
    """Every profile on two numa01 processes (numa01's bound init: unsuitable VMAs, the scan
    delay of state made after it), scans busy enough for many passes."""
    scans = compare(lambda: make_case("numa01", "2s-ivb-40", profile, [0, 1], BUSY, NUMA01), cap=400, limit=40)
    assert scans >= 10


@pytest.mark.parametrize("history", range(1, 9))
def test_history_lengths(history):
    """NR_ACCESS_PID_HIST 1..8, shift and ring rotations, rotation before and after the test."""
    base = NUMAB[history % len(NUMAB)]
    policy = Policy.profile(base).replace(history=history)
    assert policy.windows == history
    scans = compare(lambda: make_case("numa01", "2s-ivb-40", policy, [history], BUSY, NUMA01), cap=300, limit=25)
    assert scans >= 5


@pytest.mark.parametrize("policy", ["rfc2024-pid-bits", "6.7", "rfc2023-p2", "pre-6.4", "6.12"])
def test_bound_and_small_windows(policy):
    """numa02 with 128-bit maps, the forced retry, the disjoint select counter and no numab
    state; a HARD_BIND numa01 (a bound scanner finds every VMA unsuitable); 16 MiB scan
    windows (the budget stops inside VMAs)."""
    opts = dict(BUSY, scan_size_mb=16, lb_migrate_hz=0.5)
    compare(lambda: make_case("numa02", "2s-ivb-40", policy, [3], opts, dict(threads=6, size_bytes=64 << 20,
                                                                                 loops=300)), cap=300, limit=25)
    compare(lambda: make_case("numa01_HARD_BIND", "4s-144", policy, [4], BUSY, dict(threads=8, size_bytes=64 << 20,
                                                                                    loops=100)), cap=200, limit=15)


def with_inaccessible(wl):
    """``wl`` with every other shared read-only VMA PROT_NONE (no built-in workload has one)."""
    code = wl.vma_code.copy()
    code[np.flatnonzero(code == SHARED_RO)[::2]] = INACCESSIBLE
    return dataclasses.replace(wl, vma_code=code)


@pytest.mark.parametrize("profile", PROFILES)
def test_perturbed_state(profile):
    """Every profile from random numab and mm states (:func:`perturb`) on a numa01 with PROT_NONE
    VMAs: the decisions and walks the runs above reach rarely (scan delays of late-made state,
    starvation, ring windows full of bits, offsets inside VMAs)."""
    wl = with_inaccessible(nl.workload("numa01", nl.Topology.preset("2s-ivb-40"), **NUMA01))
    scans = compare(lambda: make_batch(wl, profile, [5, 6], **BUSY), cap=300, limit=12, perturbed=True)
    assert scans >= 5


@st.composite
def small_cases(draw):
    """Random small one-process workloads as tests/test_engine_reference.py draws them (no user
    rules), with scans frequent enough to reach later passes."""
    nodes = draw(st.integers(2, 3))
    cpus = draw(st.sampled_from([2, 4, 6]))
    T = draw(st.integers(1, min(5, nodes * cpus)))
    K = draw(st.integers(1, 4))
    chunk = draw(st.sampled_from([2, 4, 8])) << 20
    topo = Topology(nodes=nodes, cpus_per_node=cpus, smt=2, node_bw_GBps=20.0, mem_per_node_GiB=128.0, name="tiny")
    rates = np.array(draw(st.lists(st.lists(st.sampled_from([0.0, 0.0, 0.25, 1.0, 2.0]), min_size=K, max_size=K),
                                   min_size=T, max_size=T)))
    for t in range(T):
        if rates[t].sum() == 0:
            rates[t, draw(st.integers(0, K - 1))] = 1.0
    wl = from_access_matrix(rates, topology=topo, chunk_bytes=chunk, loops=draw(st.sampled_from([2000, 20000])),
                            init_node=draw(st.integers(-1, nodes - 1)))
    policy = Policy.profile(draw(st.sampled_from(PROFILES)))
    if policy.numab_state and draw(st.booleans()):
        policy = policy.replace(history=draw(st.integers(1, 6)))
    opts = dict(dt=draw(st.sampled_from([0.02, 0.05, 0.1])), max_time=8.0, thp=draw(st.booleans()),
                scan_delay_ms=draw(st.sampled_from([100, 200, 1000])),
                scan_period_min_ms=draw(st.sampled_from([100, 1000])), scan_size_mb=draw(st.sampled_from([4, 16, 256])),
                pid_base=draw(st.one_of(st.none(), st.integers(1, 300))),
                lb_migrate_hz=draw(st.sampled_from([0.0, LB_MIGRATE_HZ, 4.0])))
    return wl, policy, draw(st.integers(0, 2**31)), opts


@settings(max_examples=50, deadline=None)
@given(small_cases())
def test_random_small_workloads(case):
    wl, policy, seed, opts = case
    compare(lambda: make_batch(wl, policy, [seed, seed + 1], **opts), cap=300, limit=6)


def test_every_reason_was_compared():
    """The comparisons above met every decision (runs after them: pytest keeps file order)."""
    if len(SEEN) < 5:
        pytest.skip("run with the comparisons above")
    assert set(REASONS) == SEEN, sorted(set(REASONS) - SEEN)


# ------------------------------------------------------------------------------ the decision
def _policies():
    out = [Policy.profile(p) for p in PROFILES]
    out += [Policy.profile(p).replace(history=n) for p in ("6.12", "rfc2023-p6", "6.4") for n in (1, 3, 8)]
    out += [Policy.profile("rfc2024-hot-shared", width=128, hot=2, shared=5), Policy.profile("6.12", hot_first=True,
                                                                                          hot=1)]
    # adaptive histories: the own-PID test and the shared rule OR only the newest windows_active
    out += [Policy.profile("rfc2024-hot-shared", history="adaptive", adapt="span", shared=3),
            Policy.profile("rfc2023-p5", history="adaptive", adapt="grow-shrink", n_max=6),
            Policy.profile("6.12", history="adaptive", adapt="popcount", width=128)]
    return out


@pytest.mark.parametrize("policy", _policies(), ids=lambda p: p.name)
def test_decide_matches_policy_decide(policy):
    """decide_vma of each (scanner, VMA) of random views equals numalab.policy.decide: reason
    and the select counter after the visit."""
    Q = encode(policy)
    for seed in range(12):
        view = synthetic_view((6,), 5, windows=policy.windows, width=policy.width, rotation=policy.rotation,
                              seed=seed)
        rng = np.random.default_rng(100 + seed)
        for flag in ("unsuitable", "shared_ro", "inaccessible"):
            setattr(view, flag, rng.random(view.shape) < 0.08)
        view.vma_scan_select = rng.integers(0, 3, size=view.shape) * (rng.random(view.shape) < 0.6)
        view.forced = rng.random((6, 1)) < (0.5 if seed % 3 == 0 else 0.0)
        wa = np.full(view.shape, policy.windows)
        if policy.adapt is not None:
            wa = view.windows_active = rng.integers(1, policy.windows + 1, size=view.shape)
        allowed, reason, select = decide(policy, view)
        word, mask = bit_masks(view.scanner_tid, policy.width)
        for b in range(6):
            for v in range(5):
                code, sel = decide_vma_py(
                    Q, view.pids_active[b, v], int(view.idx[b, v]), int(wa[b, v]), int(word[b, 0]), np.uint64(mask[b, 0]),
                    int(view.numa_scan_seq[b, 0]), int(view.start_scan_seq[b, v]), int(view.prev_scan_seq[b, v]),
                    int(view.scan_offset[b, 0]), int(view.vm_start[b, v]), int(view.vm_end[b, v]),
                    float(view.next_scan[b, v]), float(view.now[b, 0]), int(view.nr_threads[b, 0]),
                    bool(view.forced[b, 0]), int(view.vma_scan_select[b, v]), bool(view.unsuitable[b, v]),
                    bool(view.shared_ro[b, v]), bool(view.inaccessible[b, v]))
                assert code == reason[b, v], (policy.name, seed, b, v, REASONS[code], REASONS[reason[b, v]])
                assert sel == np.broadcast_to(select, view.shape)[b, v], (policy.name, seed, b, v)
                assert Q.dec_allowed[code] == allowed[b, v]


def test_encode_refuses_what_the_numpy_engine_runs():
    from _rule_helpers import user_rules

    with pytest.raises(ValueError, match="user rule"):
        encode(Policy.profile("6.12").replace(add_rules=[user_rules()[0]]))
    Q = encode(Policy.profile("rfc2023-p5"))
    assert Q.acc_code[0] == CODE["hot"] and Q.ring and Q.windows == 4     # hot_first: hot is tested first


def test_fault_clock_threshold_is_libm_exp1():
    """arm_fault_clocks' ``-math.log1p(-u)`` in numba gives numalab.libm.exp1's bits (the C
    library's log1p) over a million uniforms and the edges."""
    from numalab import libm
    from numalab.engine.compiled._nb import jit

    @jit(cache=False)
    def exp1(u):
        out = np.empty_like(u)
        for i in range(u.size):
            out[i] = -math.log1p(-u[i])
        return out

    u = np.random.default_rng(7).random(1_000_000)
    u[:5] = [0.0, 0.5, 5e-324, 1e-300, np.nextafter(1.0, 0.0)]
    assert np.array_equal(exp1(u).view(np.int64), libm.exp1(u).view(np.int64))

"""numalab.adaptive and the adaptive Policy: rules vs the scalar reference, bounded state,
adaptation off == fixed N, decide(windows_active=) vs the reference, kernel-level behaviour."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numalab import adaptive as AD
from numalab import history as H
from numalab.errors import NumalabValueError
from numalab.policy import ALLOWED, CODE, REASONS, Policy, decide, decision_matrix
from numalab.reference import adaptive as RA
from numalab.reference import hashing as RH
from numalab.reference import history as RHI
from numalab.reference import policy as RP

COLLIDING = [t for t in range(3000) if RH.pid_bit(t, 64) == RH.pid_bit(7, 64)][:4]
POOL = np.array(sorted({*range(1, 24), *COLLIDING, 2**32 - 1}), dtype=np.uint32)
A, B, C, D = 101, 102, 103, 104  # consecutive tids: distinct bits


def _ref_hist(pa, pos):
    return [[int(w) for w in win] for win in pa[pos]]


# ------------------------------------------------------------------ strategies


@st.composite
def adapts(draw, rule=None, width=None):
    rule = draw(st.sampled_from(AD.ADAPT_RULES)) if rule is None else rule
    width = draw(st.sampled_from([64, 128])) if width is None else width
    n_min = draw(st.integers(1, 4))
    n_max = draw(st.integers(n_min, 8))
    kw = dict(n_min=n_min, n_max=n_max, n_init=draw(st.integers(n_min, n_max)), width=width,
              enabled=draw(st.sampled_from([True, True, True, False])))
    if rule == "grow-shrink":
        kw.update(shrink_after=draw(st.integers(1, 4)), grow_others=draw(st.integers(1, 3)))
    elif rule == "popcount":
        lo = draw(st.integers(0, 12))
        kw.update(bits_lo=lo, bits_hi=draw(st.integers(lo + 1, 40)), threads_max=draw(st.integers(1, 80)))
    else:
        kw.update(span_ms=draw(st.integers(1, 40000)), ewma_shift=draw(st.integers(0, 4)))
    return AD.Adaptive(rule, **kw)


def _assert_bounded(adapt, state):
    nr = state["nr_hist"]
    assert nr.dtype == np.int64 and (nr >= adapt.n_min).all() and (nr <= adapt.n_max).all()
    if adapt.rule == "grow-shrink":
        assert ((state["idle_scans"] >= 0) & (state["idle_scans"] < adapt.shrink_after)).all()
    if adapt.rule == "span":
        avg = state["win_avg_ms"]
        assert ((avg == 0) | ((avg >= 1) & (avg <= AD.LEN_MAX_MS))).all()
        assert (nr >= adapt.n_init).all()  # the floor: never shorter than the profile's N
    if not adapt.enabled:
        assert (nr == adapt.n_init).all()
    eff = AD.effective_windows(adapt, state)
    assert (eff >= adapt.n_min).all() and (eff <= adapt.n_max).all()


def _ref_state(adapt, state, pos):
    out = {}
    for key, value in state.items():
        v = value[pos]
        out[key] = [int(w) for w in v] if key == "pids_seen" else (bool(v) if v.dtype == bool else int(v))
    return out


# ------------------------------------------------------------------ rules == reference, bounded


@settings(max_examples=400)
@given(adapts(), st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple), st.integers(1, 40),
       st.integers(0, 2**32 - 1))
def test_rules_match_reference_and_stay_bounded(adapt, shape, nsteps, seed):
    """Random event sequences: every step of the vectorised update equals the scalar reference
    entry by entry, and the state stays within its bounds."""
    rng = np.random.default_rng(seed)
    state = AD.init_state(adapt, shape, numa_scan_seq=0)
    refs = {pos: RA.init(adapt, 0) for pos in np.ndindex(*shape)}
    words = adapt.width // 64
    seq = np.zeros(shape, dtype=np.int64)
    now = np.zeros(shape, dtype=np.int64)
    _assert_bounded(adapt, state)
    for _ in range(nsteps):
        mask = rng.random(shape) < 0.7
        if adapt.rule == "grow-shrink":
            ev = {k: rng.random(shape) < p for k, p in
                  (("own_bit", 0.4), ("others_recent", 0.6), ("tested", 0.8), ("scanned", 0.6))}
            if rng.random() < 0.5:
                state = AD.grow_shrink_visit(adapt, state, mask, **ev)
                for pos in refs:
                    if mask[pos]:
                        RA.grow_shrink_visit(adapt, refs[pos], **{k: bool(v[pos]) for k, v in ev.items()})
            else:
                nf = int(rng.integers(0, 6))
                where = tuple(rng.integers(0, n, size=nf) for n in shape)
                state = AD.grow_shrink_fault(adapt, state, where)
                for f in range(nf):
                    RA.grow_shrink_fault(adapt, refs[tuple(int(w[f]) for w in where)])
        elif adapt.rule == "popcount":
            if rng.random() < 0.6:
                bits = rng.integers(0, 64 * words, size=(*shape, int(rng.integers(0, 30))))
                union = np.zeros((*shape, words), dtype=np.uint64)
                for pos in np.ndindex(*shape):
                    for b in bits[pos]:
                        union[pos + (int(b) // 64,)] |= np.uint64(1) << np.uint64(int(b) % 64)
                state = AD.popcount_visit(adapt, state, mask, pids_union=union)
                for pos in refs:
                    if mask[pos]:
                        RA.popcount_visit(adapt, refs[pos], [[int(w) for w in union[pos]]])
            else:
                seq = seq + (rng.random(shape) < 0.5)
                nthreads = rng.integers(1, 100, size=shape)
                state = AD.popcount_begin(adapt, state, mask, numa_scan_seq=seq, nr_threads=nthreads)
                for pos in refs:
                    if mask[pos]:
                        RA.popcount_begin(adapt, refs[pos], numa_scan_seq=int(seq[pos]), nr_threads=int(nthreads[pos]))
        else:
            # visits 0.1 s .. 60 s apart; sometimes a huge jump (saturation)
            gap = rng.choice([100, 1000, 4000, 10000, 60000, 2**33], size=shape)
            now = now + gap * (rng.random(shape) < 0.9)
            period = int(rng.choice([1000, 4000, 8000]))
            state = AD.span_rotate(adapt, state, mask, now_ms=now, reset_period_ms=period)
            for pos in refs:
                if mask[pos]:
                    RA.span_rotate(adapt, refs[pos], now_ms=int(now[pos]), reset_period_ms=period)
        _assert_bounded(adapt, state)
        for pos, ref in refs.items():
            assert _ref_state(adapt, state, pos) == ref, pos
            assert int(AD.effective_windows(adapt, state)[pos]) == RA.effective_windows(adapt, ref)


@settings(max_examples=300)
@given(st.integers(1, 8), st.sampled_from(["shift", "ring"]), st.sampled_from([64, 128]),
       st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_visit_events_and_union_with_array_n_match_reference(windows, rotation, width, batch, nvma, seed):
    rng = np.random.default_rng(seed)
    vshape = (*batch, nvma)
    pa, idx = H.empty(vshape, windows, width)
    idx[...] = rng.integers(0, windows, size=vshape)
    for _ in range(windows):
        nf = int(rng.integers(0, 8))
        where = tuple(rng.integers(0, n, size=nf) for n in vshape)
        H.set_pid_bits(pa, idx, where, rng.choice(POOL, size=nf), width=width, rotation=rotation)
        H.rotate(pa, idx, rng.random(vshape) < 0.6, rotation=rotation)
    n = rng.integers(1, windows + 1, size=vshape)
    tids = rng.choice(POOL, size=batch)
    others = int(rng.integers(1, 4))
    got_union = H.union(pa, idx, n, rotation=rotation)
    own, recent = AD.visit_events(pa, idx, tids, n, rotation=rotation, width=width, grow_others=others)
    for pos in np.ndindex(*vshape):
        hist = _ref_hist(pa, pos)
        assert [int(w) for w in got_union[pos]] == RHI.union(hist, int(idx[pos]), int(n[pos]), rotation)
        want = RA.visit_events(hist, int(idx[pos]), int(tids[pos[:-1]]), int(n[pos]), rotation, width, others)
        assert (bool(own[pos]), bool(recent[pos])) == want
    # a per-mm count broadcasts over the VMAs, and a scalar array n is the int path
    per_mm = rng.integers(1, windows + 1, size=batch)
    own_mm, _ = AD.visit_events(pa, idx, tids, per_mm, rotation=rotation, width=width)
    own_full, _ = AD.visit_events(pa, idx, tids, np.broadcast_to(np.asarray(per_mm)[..., None], vshape),
                                  rotation=rotation, width=width)
    assert np.array_equal(own_mm, own_full)
    assert np.array_equal(H.union(pa, idx, np.full(vshape, windows), rotation=rotation), H.union(pa, idx, rotation=rotation))


# ------------------------------------------------------------------ decide(windows_active=) == reference


@st.composite
def policies(draw):
    if draw(st.booleans()):
        name = draw(st.sampled_from([p for p in Policy.profiles() if p != "pre-6.4"]))
        return Policy.profile(name, history="adaptive", adapt=draw(st.sampled_from(AD.ADAPT_RULES)),
                              n_max=draw(st.integers(1, 8)), n_min=1)
    rules = {
        "early_passes": draw(st.sampled_from([None, "mm", "vma"])),
        "own_pid": draw(st.booleans()),
        "hot": draw(st.sampled_from([None, 1, 2])),
        "shared": draw(st.sampled_from([None, 1, 2, 3, 5])),
        "ignore_pid_partial": draw(st.booleans()),
        "seq_completed": draw(st.booleans()),
        "forced_one": draw(st.booleans()),
        "starvation": draw(st.booleans()),
        "disjoint_select": draw(st.booleans()),
    }
    n_max = draw(st.integers(1, 8))
    return Policy(history="adaptive", adapt=draw(st.sampled_from(AD.ADAPT_RULES)), n_min=1, n_max=n_max,
                  rules=rules, base=draw(st.sampled_from(["6.4", "6.12", "rfc2023-p1"])),
                  width=draw(st.sampled_from([64, 128])), rotation=draw(st.sampled_from(["shift", "ring"])),
                  hot_first=draw(st.booleans()))


def _state(rng, policy, batch, nvma):
    vshape = (*batch, nvma)
    pa, idx = H.empty(vshape, policy.windows, policy.width)
    idx[...] = rng.integers(0, policy.windows, size=vshape)
    for _ in range(policy.windows):
        nf = int(rng.integers(0, 3 * nvma + 1))
        where = tuple(rng.integers(0, n, size=nf) for n in vshape)
        H.set_pid_bits(pa, idx, where, rng.choice(POOL, size=nf), width=policy.width, rotation=policy.rotation)
        H.rotate(pa, idx, rng.random(vshape) < 0.5, rotation=policy.rotation)
    seq = rng.integers(0, 7, size=batch)
    vm_start = rng.integers(0, 20, size=vshape) * 512
    return dict(
        pids_active=pa, idx=idx, numa_scan_seq=seq, start_scan_seq=np.minimum(rng.integers(0, 7, size=vshape),
                                                                              seq[..., None]),
        prev_scan_seq=seq[..., None] - rng.integers(0, 9, size=vshape), scan_offset=rng.integers(0, 20, size=batch) * 512,
        vm_start=vm_start, vm_end=vm_start + rng.choice([1, 100, 1024, 2000], size=vshape),
        next_scan=rng.integers(0, 6, size=vshape), now=rng.integers(0, 6, size=batch),
        nr_threads=rng.integers(1, 5, size=batch), forced=rng.random(batch) < 0.3,
        vma_scan_select=rng.integers(0, 4, size=vshape),
    )


@settings(max_examples=300)
@given(policies(), st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple), st.integers(1, 5),
       st.integers(0, 4), st.integers(0, 2**32 - 1), st.booleans())
def test_decide_with_windows_active_matches_reference(policy, batch, nvma, ntask, seed, per_mm):
    """Engine mode (one scanner per mm) and matrix mode (ntask > 0) with per-VMA or per-mm
    window counts agree exactly with the scalar reference."""
    rng = np.random.default_rng(seed)
    s = _state(rng, policy, batch, nvma)
    wa = rng.integers(1, policy.windows + 1, size=batch if per_mm else (*batch, nvma))
    tids = rng.choice(POOL, size=(*batch, ntask) if ntask else batch)
    allowed, reason, select = decide(policy, scanner_tid=tids, windows_active=wa, **s)
    for b in np.ndindex(*batch):
        for t in range(max(ntask, 1)):
            tid = int(tids[b + (t,)] if ntask else tids[b])
            for v in range(nvma):
                n = int(wa[b] if per_mm else wa[b + (v,)])
                want, want_sel = RP.visit(
                    policy, _ref_hist(s["pids_active"], b + (v,)), int(s["idx"][b + (v,)]), tid,
                    numa_scan_seq=int(s["numa_scan_seq"][b]), start_scan_seq=int(s["start_scan_seq"][b + (v,)]),
                    prev_scan_seq=int(s["prev_scan_seq"][b + (v,)]), scan_offset=int(s["scan_offset"][b]),
                    vm_start=int(s["vm_start"][b + (v,)]), next_scan=int(s["next_scan"][b + (v,)]),
                    now=int(s["now"][b]), nr_threads=int(s["nr_threads"][b]), forced=bool(s["forced"][b]),
                    vma_scan_select=int(s["vma_scan_select"][b + (v,)]), vm_end=int(s["vm_end"][b + (v,)]),
                    windows_active=n)
                pos = b + (t, v) if ntask else b + (v,)
                assert REASONS[reason[pos]] == want, (policy, pos, n)
                assert allowed[pos] == ALLOWED[CODE[want]]
                if policy.disjoint_select:
                    assert int(select[pos]) == want_sel


# ------------------------------------------------------------------ adaptation off == fixed N


def _sync_rotate(pa_a, idx_a, pa_f, idx_f, due, rotation):
    if np.any(due):
        H.rotate(pa_a, idx_a, due, rotation=rotation)
        H.rotate(pa_f, idx_f, due, rotation=rotation)


@settings(max_examples=300)
@given(st.sampled_from([p for p in Policy.profiles() if p != "pre-6.4"]), st.sampled_from(AD.ADAPT_RULES),
       st.integers(1, 8), st.integers(0, 4), st.sampled_from(["disabled", "pinned"]), st.integers(1, 3),
       st.integers(1, 4), st.integers(1, 25), st.integers(0, 2**32 - 1))
def test_adaptation_off_reduces_to_fixed_n(profile, rule, n, extra, how, nrep, nvma, nsteps, seed):
    """Same faults, rotations and scanners: an adaptive policy with its adaptation switched
    off (adapt_enabled=False, or n_min == n_max == N) decides exactly as Policy(history=N),
    although it allocates n_max >= N windows and runs every update hook."""
    if how == "disabled":
        adaptive = Policy.profile(profile, history="adaptive", adapt=rule, n_min=1, n_max=n + extra, n_init=n,
                                  adapt_enabled=False)
    else:
        adaptive = Policy.profile(profile, history="adaptive", adapt=rule, n_min=n, n_max=n)
    fixed = Policy.profile(profile, history=n)
    assert adaptive.windows >= n == fixed.windows
    rng = np.random.default_rng(seed)
    rot, width = fixed.rotation, fixed.width
    vshape = (nrep, nvma)
    pa_a, idx_a = H.empty(vshape, adaptive.windows, width)
    pa_f, idx_f = H.empty(vshape, n, width)
    a = adaptive.adapt
    ad_state = AD.init_state(a, (nrep,) if a.scope == "mm" else vshape)
    seq = np.zeros(nrep, dtype=np.int64)
    now = 0
    select_a = select_f = np.zeros(vshape, dtype=np.int64)
    common = dict(start_scan_seq=np.zeros(vshape, np.int64), scan_offset=np.zeros(nrep, np.int64),
                  vm_start=np.arange(nvma) * 512, vm_end=np.arange(nvma) * 512 + 600, next_scan=0,
                  nr_threads=np.full(nrep, 4))
    for _ in range(nsteps):
        nf = int(rng.integers(0, 3 * nvma))
        where = (rng.integers(0, nrep, size=nf), rng.integers(0, nvma, size=nf))
        tids = rng.choice(POOL, size=nf)
        H.set_pid_bits(pa_a, idx_a, where, tids, width=width, rotation=rot)
        H.set_pid_bits(pa_f, idx_f, where, tids, width=width, rotation=rot)
        if a.rule == "grow-shrink":
            ad_state = AD.grow_shrink_fault(a, ad_state, where)
        now += int(rng.choice([500, 4000, 20000]))
        seq = seq + (rng.random(nrep) < 0.4)
        if a.rule == "popcount":
            ad_state = AD.popcount_begin(a, ad_state, numa_scan_seq=seq, nr_threads=common["nr_threads"])
        due = rng.random(vshape) < 0.5
        if fixed.rotate_before_access:
            _sync_rotate(pa_a, idx_a, pa_f, idx_f, due, rot)
            if a.rule == "span":
                ad_state = AD.span_rotate(a, ad_state, due, now_ms=now, reset_period_ms=4000)
        scanner = rng.choice(POOL, size=nrep)
        state = dict(common, numa_scan_seq=seq, prev_scan_seq=seq[:, None] - rng.integers(0, 6, size=vshape),
                     now=now, forced=rng.random(nrep) < 0.2)
        wa = AD.effective_windows(a, ad_state)
        allowed_a, reason_a, sel_a = decide(adaptive, pids_active=pa_a, idx=idx_a, scanner_tid=scanner,
                                            windows_active=wa, vma_scan_select=select_a, **state)
        allowed_f, reason_f, sel_f = decide(fixed, pids_active=pa_f, idx=idx_f, scanner_tid=scanner,
                                            vma_scan_select=select_f, **state)
        assert np.array_equal(reason_a, reason_f)
        assert np.array_equal(allowed_a, allowed_f)
        if fixed.disjoint_select:
            assert np.array_equal(sel_a, sel_f)
            select_a, select_f = sel_a, sel_f
        # the adaptive hooks run as the engine would run them
        if a.rule == "grow-shrink":
            own, others = AD.visit_events(pa_a, idx_a, scanner, wa, rotation=rot, width=width,
                                          grow_others=a.grow_others)
            ad_state = AD.grow_shrink_visit(a, ad_state, own_bit=own, others_recent=others,
                                            tested=AD.reached_pid_test(reason_a), scanned=allowed_a)
        elif a.rule == "popcount":
            ad_state = AD.popcount_visit(a, ad_state, pids_union=AD.visited_union(pa_a, np.ones(vshape, bool)))
        if not fixed.rotate_before_access:
            due = due & allowed_a
            _sync_rotate(pa_a, idx_a, pa_f, idx_f, due, rot)
            if a.rule == "span":
                ad_state = AD.span_rotate(a, ad_state, due, now_ms=now, reset_period_ms=4000)
        assert (AD.effective_windows(a, ad_state) == n).all()


# ------------------------------------------------------------------ kernel-level behaviour


def _one(policy, owners_by_window):
    pa, idx = H.empty((1,), policy.windows, policy.width)
    for tids in owners_by_window:
        H.rotate(pa, idx, rotation=policy.rotation)
        H.set_pid_bits(pa, idx, (np.zeros(len(tids), np.int64),), list(tids), width=policy.width,
                       rotation=policy.rotation)
    return pa, idx


def test_grow_shrink_recovers_a_rarely_faulting_scanner():
    """Thread A faults in a shared VMA once every 4 windows, B and C every window; A scans it
    each window. With N=2 the filter refuses A in 2 of every 4 visits (false skips of a VMA A
    uses); grow-shrink grows until A's last fault stays in view and the refusals stop."""
    adaptive = Policy(history="adaptive", adapt="grow-shrink")
    fixed = Policy(history=2)
    a = adaptive.adapt
    hist = {p: H.empty((1,), p.windows, 64) for p in (adaptive, fixed)}
    ad = AD.init_state(a, (1,))
    refused = {adaptive: [], fixed: []}
    for window in range(40):
        for p, (pa, idx) in hist.items():
            H.rotate(pa, idx, rotation=p.rotation)
            faulters = [B, C] + ([A] if window % 4 == 0 else [])
            H.set_pid_bits(pa, idx, (np.zeros(len(faulters), np.int64),), faulters, rotation=p.rotation)
        kw = dict(scanner_tid=A, numa_scan_seq=50, start_scan_seq=0, prev_scan_seq=49,
                  scan_offset=0, vm_start=0, next_scan=0, now=1, nr_threads=64)
        for p, (pa, idx) in hist.items():
            wa = AD.effective_windows(a, ad) if p is adaptive else None
            allowed, reason, _ = decide(p, pids_active=pa, idx=idx, windows_active=wa, **kw)
            refused[p].append(REASONS[int(reason[0])] == "pid_inactive")
            if p is adaptive:
                own, others = AD.visit_events(pa, idx, kw["scanner_tid"], wa)
                ad = AD.grow_shrink_visit(a, ad, own_bit=own, others_recent=others,
                                          tested=AD.reached_pid_test(reason), scanned=allowed)
                ad = AD.grow_shrink_fault(a, ad, (np.zeros(1, np.int64),))  # the VMA faults every window
    assert sum(refused[fixed][-20:]) == 10
    assert sum(refused[adaptive][-20:]) == 0
    assert int(ad["nr_hist"][0]) == 4  # A's fault every 4th window needs exactly 4 windows in view


def test_grow_shrink_shrinks_after_consecutive_idle_scans():
    a = AD.Adaptive("grow-shrink", n_init=5, shrink_after=2)
    s = AD.init_state(a, (3,))
    no = np.zeros(3, bool)
    scan = np.array([True, True, False])
    for _ in range(5):  # five scans in a row with no fault in between
        s = AD.grow_shrink_visit(a, s, own_bit=no, others_recent=no, tested=~no, scanned=scan)
    # the first scan only arms the detector; idle scans 2..5 -> two shrinks
    assert s["nr_hist"].tolist() == [3, 3, 5]
    # a fault between scans resets the run of idle scans
    s = AD.grow_shrink_fault(a, s, (np.array([0]),))
    s = AD.grow_shrink_visit(a, s, own_bit=no, others_recent=no, tested=~no, scanned=scan)
    assert s["idle_scans"].tolist() == [0, 1, 0]
    # many more idle scans end at n_min, never below
    for _ in range(40):
        s = AD.grow_shrink_visit(a, s, own_bit=no, others_recent=no, tested=~no, scanned=scan)
    assert s["nr_hist"].tolist() == [1, 1, 5]


def test_reset_state_refreshes_only_the_masked_entries():
    for rule in AD.ADAPT_RULES:
        a = AD.Adaptive(rule, n_init=3)
        s = AD.init_state(a, (2, 3))
        for key in s:
            s[key] = np.ones_like(s[key]) * (7 if s[key].dtype != bool else True)
        mask = np.array([[True, False, False], [False, False, True]])
        out = AD.reset_state(a, s, mask)
        fresh = AD.init_state(a, (2, 3))
        for key in s:
            assert np.array_equal(out[key][mask], fresh[key][mask]), (rule, key)
            assert np.array_equal(out[key][~mask], s[key][~mask]), (rule, key)
            assert out[key].dtype == s[key].dtype


def test_grow_needs_others_and_an_absent_scanner():
    a = AD.Adaptive("grow-shrink", n_init=2)
    s = AD.init_state(a, (4,))
    own = np.array([False, True, False, False])
    others = np.array([True, True, False, True])
    tested = np.array([True, True, True, False])
    s = AD.grow_shrink_visit(a, s, own_bit=own, others_recent=others, tested=tested, scanned=np.zeros(4, bool))
    assert s["nr_hist"].tolist() == [4, 2, 2, 2]  # doubled, only where refused while in use
    s = AD.grow_shrink_visit(a, s, own_bit=own, others_recent=others, tested=tested, scanned=np.zeros(4, bool))
    assert s["nr_hist"].tolist() == [a.n_max, 2, 2, 2]  # 8: doubling saturates at n_max


def test_visit_events_exclude_the_scanners_own_bit():
    p = Policy(history="adaptive", n_max=4)
    pa, idx = _one(p, [[A], [A]])
    own, others = AD.visit_events(pa, idx, A, np.array([1]))
    assert own.tolist() == [True] and others.tolist() == [False]
    own, others = AD.visit_events(pa, idx, B, np.array([1]))
    assert own.tolist() == [False] and others.tolist() == [True]
    # others in the previous window count as recent (the v6.7 rotation may have just cleared [1])
    pa, idx = _one(p, [[C], []])
    assert AD.visit_events(pa, idx, B, np.array([4]))[1].tolist() == [True]
    pa, idx = _one(p, [[C], [], []])
    assert AD.visit_events(pa, idx, B, np.array([4]))[1].tolist() == [False]


def test_popcount_follows_the_spec_collision_table():
    """Spec §2.1: 8 consecutive TIDs take 8 bits (the map names them: keep the profile's N),
    128 saturate the 64-bit map (stop relying on it: the longest history)."""
    a = AD.Adaptive("popcount", n_init=2)

    def distinct(nthreads, width=64):
        return len({RH.pid_bit(1000 + t, width) for t in range(nthreads)})

    assert AD.popcount_choose(a, distinct(8), 8) == a.n_init
    assert AD.popcount_choose(a, distinct(128), 128) == a.n_max
    assert AD.popcount_choose(a, 3, 200) == a.n_max  # more threads than bits: the map cannot tell them apart
    k = np.arange(0, 65)
    n = AD.popcount_choose(a, k, 16)
    assert (np.diff(n) >= 0).all() and n.min() == a.n_init and n.max() == a.n_max
    assert set(n.tolist()) == set(range(a.n_init, a.n_max + 1))  # every length in between is reachable
    # a 128-bit map (RFC 2024 PATCH 2) has room for more threads before it saturates
    a128 = AD.Adaptive("popcount", n_init=2, width=128)
    for threads in (16, 32):
        assert AD.popcount_choose(a128, distinct(threads, 128), threads) < AD.popcount_choose(a, distinct(threads), threads)


def test_popcount_chooses_at_pass_boundaries_only():
    a = AD.Adaptive("popcount", n_init=2)
    s = AD.init_state(a, (2,))
    seen = np.zeros((2, 1), np.uint64)
    seen[0, 0] = np.uint64(2**40 - 1)  # 40 distinct bits (>= bits_hi) in mm 0, none in mm 1
    s = AD.popcount_visit(a, s, pids_union=seen)
    s = AD.popcount_begin(a, s, numa_scan_seq=np.array([0, 0]), nr_threads=8)
    assert s["nr_hist"].tolist() == [2, 2]  # same pass: nothing chosen yet
    s = AD.popcount_begin(a, s, numa_scan_seq=np.array([1, 1]), nr_threads=8)
    assert s["nr_hist"].tolist() == [a.n_max, a.n_init]
    assert not s["pids_seen"].any() and s["pass_seq"].tolist() == [1, 1]


@pytest.mark.parametrize("window_s, n_init, want", [(4, 2, 4), (8, 2, 2), (16, 2, 2), (30, 2, 2), (1, 2, 8),
                                                    (16, 1, 1), (4, 4, 4), (30, 4, 4), (2, 4, 8)])
def test_span_keeps_a_fixed_wall_clock_span(window_s, n_init, want):
    """16 s span: 4 s windows (small process, spec §2.3) -> 4 windows; 8 s -> 2; clamped to
    n_max when windows are short; never below the profile's N (n_init) when they are long --
    a 30 s pass per window keeps mainline's 2 (the RFC's 4), not 1."""
    a = AD.Adaptive("span", n_init=n_init)
    s = AD.init_state(a, (1,))
    for i in range(1, 80):
        s = AD.span_rotate(a, s, now_ms=i * window_s * 1000, reset_period_ms=4000)
    assert abs(int(s["win_avg_ms"][0]) - window_s * 1000) < 2**a.ewma_shift  # the EWMA settles
    assert int(AD.effective_windows(a, s)[0]) == want


def test_decide_counts_only_the_newest_windows():
    p = Policy(history="adaptive", n_max=6)
    pa, idx = _one(p, [[A], [], [], []])  # A faulted 3 rotations ago
    kw = dict(pids_active=pa, idx=idx, scanner_tid=A, numa_scan_seq=10, start_scan_seq=0, prev_scan_seq=9,
              scan_offset=0, vm_start=1000, next_scan=0, now=1, nr_threads=64)
    got = [REASONS[int(decide(p, windows_active=np.array([n]), **kw)[1][0])] for n in range(1, 7)]
    assert got == ["pid_inactive"] * 3 + ["own_pid"] * 3
    # per-mm shape works too, and the shared rule also counts only the newest windows
    sh = Policy(history="adaptive", n_max=6, rules=["own_pid", "shared=2"])
    pa, idx = _one(sh, [[A], [B], [], []])
    kw.update(pids_active=pa, idx=idx, scanner_tid=C)
    assert REASONS[int(decide(sh, windows_active=np.int64(3), **kw)[1][0])] == "pid_inactive"
    assert REASONS[int(decide(sh, windows_active=np.int64(4), **kw)[1][0])] == "shared"


def test_decision_matrix_takes_windows_active():
    p = Policy(history="adaptive", n_max=4)
    pa, idx = _one(p, [[A], [], []])
    da = decision_matrix(p, tids=[A, B], pids_active=pa, idx=idx, numa_scan_seq=10, start_scan_seq=0,
                         prev_scan_seq=9, scan_offset=0, vm_start=1000, next_scan=0, now=1, nr_threads=64,
                         windows_active=np.array([3]))
    assert da["allowed"].values[:, 0].tolist() == [True, False]
    assert json.loads(da.attrs["policy_json"])["adapt"]["rule"] == "grow-shrink"


# ------------------------------------------------------------------ Policy surface


def test_adaptive_policy_names_and_fields():
    for rule in AD.ADAPT_RULES:
        p = Policy.profile("6.12", history="adaptive", adapt=rule)
        assert p.name == f"6.12+adaptive={rule}" and p.adaptive and p.adapt.rule == rule
        assert p.windows == p.adapt.n_max == 8 and p.adapt.n_init == 2
        assert Policy(adapt=rule) == p  # adapt= alone implies history="adaptive"
        attrs = p.to_attrs()
        assert all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in attrs.values())
        assert json.loads(attrs["policy_adapt"])["rule"] == rule
    assert Policy(history="adaptive").adapt.rule == "grow-shrink"  # the sweep's bare "adaptive"
    hs = Policy.profile("rfc2024-hot-shared", history="adaptive", adapt="span", n_max=12, span_ms=20000)
    assert hs.name == "rfc2024-hot-shared+adaptive=span+n_max=12+span_ms=20000"
    assert (hs.windows, hs.rotation, hs.adapt.n_init, hs.hot, hs.shared) == (12, "ring", 4, 1, 3)
    assert Policy(history="adaptive", adapt_enabled=False).name == "6.12+adaptive=grow-shrink+adapt_off"
    assert not Policy.profile("6.12").adaptive and Policy.profile("6.12").adapt is None
    assert Policy.adaptive_rules() == list(AD.ADAPT_RULES)
    assert len({Policy(adapt="span"), Policy(adapt="span"), Policy(adapt="popcount")}) == 2


def test_adaptive_replace():
    p = Policy(history="adaptive", adapt="popcount", n_max=6)
    assert p.replace(history=4) == Policy(history=4)
    assert p.replace(bits_hi=40) == Policy(history="adaptive", adapt="popcount", n_max=6, bits_hi=40)
    assert p.replace(adapt="span").adapt.rule == "span"
    assert Policy(history=4).replace(adapt="span").adaptive
    assert p.replace(hot=1).adapt == p.adapt


def test_adaptive_bad_input():
    with pytest.raises(NumalabValueError, match="adapt='grow'.*grow-shrink, popcount, span"):
        Policy(history="adaptive", adapt="grow")
    with pytest.raises(NumalabValueError, match="history='dynamic'.*'adaptive'"):
        Policy(history="dynamic")
    with pytest.raises(NumalabValueError, match="span_ms=.*adapt='span', not of adapt='grow-shrink'"):
        Policy(history="adaptive", span_ms=1000)
    with pytest.raises(NumalabValueError, match="no fixed N"):
        Policy(history=4, adapt="span")
    with pytest.raises(NumalabValueError, match="n_init=9 is out of range"):
        Policy(history="adaptive", n_init=9)
    with pytest.raises(NumalabValueError, match="n_max=65"):
        Policy(history="adaptive", n_max=65)
    with pytest.raises(NumalabValueError, match="pre-6.4"):
        Policy.profile("pre-6.4", history="adaptive")
    with pytest.raises(NumalabValueError, match="bits_hi=4 is out of range"):
        AD.Adaptive("popcount", bits_lo=8, bits_hi=4)
    p = Policy(history="adaptive", n_max=4)
    pa, idx = _one(p, [[A]])
    kw = dict(pids_active=pa, idx=idx, scanner_tid=A, numa_scan_seq=10, start_scan_seq=0, prev_scan_seq=9,
              scan_offset=0, vm_start=1000, next_scan=0, now=1, nr_threads=64)
    with pytest.raises(NumalabValueError, match="adaptive history: pass windows_active="):
        decide(p, **kw)
    with pytest.raises(NumalabValueError, match=r"windows_active holds 5; allowed: integers in \[1, 4\]"):
        decide(p, windows_active=np.array([5]), **kw)
    with pytest.raises(NumalabValueError, match="windows_active has shape"):
        decide(p, windows_active=np.ones(3, np.int64), **kw)
    with pytest.raises(NumalabValueError, match="windows_active must hold integers"):
        decide(p, windows_active=np.array([1.5]), **kw)
    with pytest.raises(NumalabValueError, match="n must be integers in"):
        H.union(pa, idx, np.array([0]))
    a = p.adapt
    with pytest.raises(NumalabValueError, match="keys"):
        AD.grow_shrink_visit(a, {"nr_hist": np.ones(1)}, own_bit=True, others_recent=True, tested=True,
                             scanned=True)
    with pytest.raises(NumalabValueError, match="needs adapt='span'"):
        AD.span_rotate(a, AD.init_state(a, (1,)), now_ms=0, reset_period_ms=4000)
    with pytest.raises(NumalabValueError, match="own_bit must be a bool"):
        AD.grow_shrink_visit(a, AD.init_state(a, (1,)), own_bit=np.ones(1), others_recent=True, tested=True,
                             scanned=True)

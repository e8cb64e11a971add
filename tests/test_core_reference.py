"""Vectorised decide() == scalar reference (numalab/reference/policy.py), exactly.

Random histories filled from a tid pool that deliberately collides (tids sharing a hash_32
bit, tids congruent mod 256), window counts 1-8, widths 64/128, thresholds, batch shapes,
both outputs shapes (engine: one scanner per mm; matrix: task x VMA) and every profile.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from numalab import history as H
from numalab.policy import Policy, decide, decide_unchecked, decision_matrix
from numalab.reference import hashing as RH
from numalab.reference import policy as RP

from _rule_helpers import user_rules

COLLIDING_64 = [t for t in range(3000) if RH.pid_bit(t, 64) == RH.pid_bit(7, 64)][:6]
COLLIDING_128 = [t for t in range(3000) if RH.pid_bit(t, 128) == RH.pid_bit(7, 128)][:6]
POOL = np.array(
    sorted({*range(1, 40), *COLLIDING_64, *COLLIDING_128, *(5 + 256 * k for k in range(1, 6)), 2**32 - 1, 2**31}),
    dtype=np.uint32,
)


#: user rules of both kinds, placed between the built-in tests: the reference calls the same
#: functions one VMA at a time, so the agreement checks the chain around them
USER_RULES = user_rules()


@st.composite
def policies(draw):
    kind = draw(st.integers(0, 3))
    if kind == 3:
        pol = draw(policies())
        if not pol.numab_state:
            return pol
        # a nested draw may hold user rules already: a policy has each rule once
        free = [r for r in USER_RULES if r.name not in {u.name for u in pol.user_rules}]
        if not free:
            return pol
        chosen = draw(st.lists(st.sampled_from(free), min_size=1, max_size=2, unique_by=lambda r: r.name))
        chosen = [r(k=draw(st.integers(1, 4))) if r.name == "any_or_k" else
                  r(pages=draw(st.sampled_from([1, 100, 1024]))) if r.name == "refuse_big" else r for r in chosen]
        return pol.replace(add_rules=chosen)
    if kind == 0:
        return Policy.profile(draw(st.sampled_from(Policy.profiles())))
    if kind == 1:
        name = draw(st.sampled_from([p for p in Policy.profiles() if p != "pre-6.4"]))
        return Policy.profile(name, history=draw(st.integers(1, 8)))
    rules = {
        "early_passes": draw(st.sampled_from([None, "mm", "vma"])),
        "own_pid": draw(st.booleans()),
        "hot": draw(st.sampled_from([None, 1, 2, 3])),
        "shared": draw(st.sampled_from([None, 1, 2, 3, 5, 8])),
        "ignore_pid_partial": draw(st.booleans()),
        "seq_completed": draw(st.booleans()),
        "forced_one": draw(st.booleans()),
        "starvation": draw(st.booleans()),
        "disjoint_select": draw(st.booleans()),
    }
    return Policy(
        history=draw(st.integers(1, 8)), rules=rules, base=draw(st.sampled_from(["6.4", "6.12", "rfc2023-p1"])),
        width=draw(st.sampled_from([64, 128])), rotation=draw(st.sampled_from(["shift", "ring"])),
        hot_first=draw(st.booleans()),
    )


def _state(rng, policy, batch, nvma):
    """A random but kernel-plausible per-VMA / per-mm state."""
    vshape = (*batch, nvma)
    pa, idx = H.empty(vshape, policy.windows, policy.width)
    idx[...] = rng.integers(0, policy.windows, size=vshape)
    nfaults = int(rng.integers(0, 4 * max(1, int(np.prod(vshape)))))
    where = tuple(rng.integers(0, n, size=nfaults) for n in vshape)
    # write into random windows, not only the current one, by rotating in between
    for part in np.array_split(np.arange(nfaults), policy.windows):
        H.set_pid_bits(pa, idx, tuple(w[part] for w in where), rng.choice(POOL, size=part.size),
                       width=policy.width, rotation=policy.rotation)
        H.rotate(pa, idx, rng.random(vshape) < 0.5, rotation=policy.rotation)
    seq = rng.integers(0, 7, size=batch)
    start_seq = np.minimum(rng.integers(0, 7, size=vshape), seq[..., None])
    prev_seq = seq[..., None] - rng.integers(0, 9, size=vshape)
    vm_start = rng.integers(0, 20, size=vshape) * 512
    return dict(
        pids_active=pa, idx=idx, numa_scan_seq=seq, start_scan_seq=start_seq, prev_scan_seq=prev_seq,
        scan_offset=rng.integers(0, 20, size=batch) * 512, vm_start=vm_start,
        vm_end=vm_start + rng.choice([1, 100, 1024, 2000], size=vshape),
        next_scan=rng.integers(0, 6, size=vshape), now=rng.integers(0, 6, size=batch),
        nr_threads=rng.integers(1, 5, size=batch), forced=rng.random(batch) < 0.3,
        vma_scan_select=rng.integers(0, 4, size=vshape),
        unsuitable=rng.random(vshape) < 0.05, shared_ro=rng.random(vshape) < 0.05,
        inaccessible=rng.random(vshape) < 0.05,
    )


def _reference(policy, state, b, v, tid):
    hist = [[int(w) for w in win] for win in state["pids_active"][b + (v,)]]
    mm = b  # per-mm arrays are indexed by the batch index
    return RP.visit(
        policy, hist, int(state["idx"][b + (v,)]), int(tid),
        numa_scan_seq=int(state["numa_scan_seq"][mm]), start_scan_seq=int(state["start_scan_seq"][b + (v,)]),
        prev_scan_seq=int(state["prev_scan_seq"][b + (v,)]), scan_offset=int(state["scan_offset"][mm]),
        vm_start=int(state["vm_start"][b + (v,)]), next_scan=int(state["next_scan"][b + (v,)]),
        now=int(state["now"][mm]), nr_threads=int(state["nr_threads"][mm]), forced=bool(state["forced"][mm]),
        vma_scan_select=int(state["vma_scan_select"][b + (v,)]), vm_end=int(state["vm_end"][b + (v,)]),
        unsuitable=bool(state["unsuitable"][b + (v,)]), shared_ro=bool(state["shared_ro"][b + (v,)]),
        inaccessible=bool(state["inaccessible"][b + (v,)]),
    )


@settings(max_examples=400)
@given(
    policies(),
    st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple),
    st.integers(1, 6),
    st.integers(0, 2**32 - 1),
    st.booleans(),
)
def test_engine_mode_matches_reference(policy, batch, nvma, seed, with_flags):
    rng = np.random.default_rng(seed)
    state = _state(rng, policy, batch, nvma)
    if not with_flags:
        for key in ("unsuitable", "shared_ro", "inaccessible"):
            state[key] = None
    tids = rng.choice(POOL, size=batch)
    allowed, reason, select = decide(policy, scanner_tid=tids, **state)
    assert reason.shape == (*batch, nvma) and reason.dtype == np.int8 and allowed.dtype == bool
    ref_state = dict(state, **{k: np.zeros((*batch, nvma), bool) for k in ("unsuitable", "shared_ro",
                                                                          "inaccessible") if state[k] is None})
    for b in np.ndindex(*batch):
        for v in range(nvma):
            want, want_select = _reference(policy, ref_state, b, v, tids[b])
            assert policy.reasons[reason[b + (v,)]] == want, (policy, b, v)
            assert allowed[b + (v,)] == policy.decisions.allowed[policy.decisions.code[want]]
            if policy.disjoint_select:
                assert int(select[b + (v,)]) == want_select
    if not policy.disjoint_select:
        assert select is state["vma_scan_select"]


@settings(max_examples=300)
@given(policies(), st.integers(1, 3), st.integers(1, 6), st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
def test_unchecked_engine_call_matches_reference(policy, n, nvma, seed, forced, with_flags):
    """decide_unchecked as the engine calls it -- VMA bounds and flags shared by the rows (V,),
    one scalar forced flag and thread count -- gives the reference's answer."""
    rng = np.random.default_rng(seed)
    state = _state(rng, policy, (n,), nvma)
    for key in ("vm_start", "vm_end", "shared_ro", "inaccessible"):
        state[key] = np.broadcast_to(state[key][0], (n, nvma))
    state["forced"] = np.full(n, forced)
    state["nr_threads"] = np.full(n, state["nr_threads"][0])
    if not with_flags:
        for key in ("unsuitable", "shared_ro", "inaccessible"):
            state[key] = np.zeros((n, nvma), bool)
    tids = rng.choice(POOL, size=n).astype(np.uint32)
    call = dict(state, vm_start=state["vm_start"][0], vm_end=state["vm_end"][0], shared_ro=state["shared_ro"][0],
                inaccessible=state["inaccessible"][0], forced=forced, nr_threads=int(state["nr_threads"][0]))
    if not with_flags:
        call.update(unsuitable=None, shared_ro=None, inaccessible=None)
    allowed, reason, select = decide_unchecked(policy, scanner_tid=tids, **call)
    for b in range(n):
        for v in range(nvma):
            want, want_select = _reference(policy, state, (b,), v, tids[b])
            assert policy.reasons[reason[b, v]] == want, (policy, b, v)
            assert allowed[b, v] == policy.decisions.allowed[policy.decisions.code[want]]
            if policy.disjoint_select:
                assert int(select[b, v]) == want_select


@settings(max_examples=300)
@given(
    policies(),
    st.lists(st.integers(1, 2), min_size=0, max_size=2).map(tuple),
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(0, 2**32 - 1),
)
def test_matrix_mode_matches_reference(policy, batch, nvma, ntask, seed):
    rng = np.random.default_rng(seed)
    state = _state(rng, policy, batch, nvma)
    tids = rng.choice(POOL, size=(*batch, ntask))
    allowed, reason, select = decide(policy, scanner_tid=tids, **state)
    assert reason.shape == (*batch, ntask, nvma)
    for b in np.ndindex(*batch):
        for t in range(ntask):
            for v in range(nvma):
                want, want_select = _reference(policy, state, b, v, tids[b + (t,)])
                assert policy.reasons[reason[b + (t, v)]] == want
                assert allowed[b + (t, v)] == policy.decisions.allowed[policy.decisions.code[want]]
                if policy.disjoint_select:
                    assert int(select[b + (t, v)]) == want_select


@settings(max_examples=300)
@given(policies(), st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_matrix_rows_equal_engine_calls(policy, nvma, ntask, seed):
    """Row t of the matrix is exactly what the engine gets with task t as the scanner."""
    rng = np.random.default_rng(seed)
    state = _state(rng, policy, (2,), nvma)
    tids = rng.choice(POOL, size=(2, ntask))
    _, matrix, _ = decide(policy, scanner_tid=tids, **state)
    for t in range(ntask):
        _, row, _ = decide(policy, scanner_tid=tids[:, t], **state)
        assert np.array_equal(matrix[:, t, :], row)
    da = decision_matrix(policy, tids=tids, **state)
    assert da.dims == ("replica", "task", "vma")
    assert np.array_equal(da.values, matrix)
    assert np.array_equal(da["allowed"].values, policy.decisions.allowed[matrix])

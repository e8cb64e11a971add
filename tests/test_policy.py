"""numalab.policy: profiles, kernel behaviours of the scan filter, bad input."""

import json

import numpy as np
import pytest

import numalab as nl
from numalab import history as H
from numalab.errors import NumalabValueError
from numalab.policy import ALLOWED, CODE, REASONS, SKIP_REASONS, Policy, decide, decision_matrix
from numalab.reference import hashing as RH

A, B, C, D = 101, 102, 103, 104  # consecutive tids: four distinct bits in a 64-bit map


def one_vma(policy, *, owners_by_window=(), seq=10, start_seq=0, prev_seq=None, offset=0, vm_start=1000,
            now=100, next_scan=0, nr_threads=64, forced=False, vm_end=None, select=None):
    """State of one mm with one VMA; owners_by_window lists tids per window, oldest first."""
    pa, idx = H.empty((1,), policy.windows, policy.width)
    for tids in owners_by_window:
        H.rotate(pa, idx, rotation=policy.rotation)
        H.set_pid_bits(pa, idx, (np.zeros(len(tids), np.int64),), list(tids), width=policy.width,
                       rotation=policy.rotation)
    return dict(pids_active=pa, idx=idx, numa_scan_seq=seq, start_scan_seq=start_seq,
                prev_scan_seq=seq - 1 if prev_seq is None else prev_seq, scan_offset=offset, vm_start=vm_start,
                next_scan=next_scan, now=now, nr_threads=nr_threads, forced=forced,
                vm_end=vm_start + 1 if vm_end is None else vm_end, vma_scan_select=select)


def reason_of(policy, tid, **kw):
    state = one_vma(policy, **kw)
    _, reason, _ = decide(policy, scanner_tid=tid, **state)
    return REASONS[int(reason[0])]


# ------------------------------------------------------------------ registry


def test_profiles_listed_and_lazily_exported():
    names = nl.Policy.profiles()
    for want in ["pre-6.4", "6.4", "6.7", "6.8", "6.12", *(f"rfc2023-p{i}" for i in range(1, 7)),
                 "rfc2024-hot-shared", "rfc2024-pid-bits"]:
        assert want in names
        assert Policy.profile(want).name == want


def test_unknown_profile_lists_known_ones():
    with pytest.raises(NumalabValueError, match=r"profile='6\.99'.*6\.12.*rfc2024-hot-shared"):
        Policy.profile("6.99")


@pytest.mark.parametrize(
    "name, commit",
    [("6.4", "d46031f40e0f"), ("6.7", "2e2675db1906"), ("6.8", "84db47ca7146"), ("6.12", "f22cde4371f3"),
     ("rfc2023-p4", "NR_ACCESS_PID_HIST"), ("rfc2024-hot-shared", "Hot VMA"), ("rfc2024-pid-bits", "PID bits")],
)
def test_profiles_name_their_commits(name, commit):
    assert commit in Policy.profile(name).description


def test_cumulative_rfc2023_profiles():
    p = [Policy.profile(f"rfc2023-p{i}") for i in range(1, 7)]
    assert p[0].rotate_before_access and p[0].early_passes == "mm" and not p[0].seq_completed
    assert not p[0].forced_one and not p[0].ignore_pid_partial
    assert p[1].disjoint_select and not p[0].disjoint_select
    assert p[2].early_passes is None and p[1].early_passes == "mm"
    assert (p[3].windows, p[3].rotation) == (4, "ring") and p[2].windows == 2
    assert p[4].hot == 1 and p[4].hot_first and p[3].hot is None
    assert p[5].shared == 3 and p[4].shared is None and p[5].disjoint_select


def test_rfc2024_profiles():
    hs = Policy.profile("rfc2024-hot-shared")
    assert (hs.windows, hs.rotation, hs.hot, hs.hot_first, hs.shared) == (4, "ring", 1, False, 3)
    assert hs.early_passes == "vma" and hs.ignore_pid_partial and not hs.starvation
    bits = Policy.profile("rfc2024-pid-bits")
    assert (bits.width, bits.windows, bits.rotation) == (128, 2, "shift")


@pytest.mark.parametrize("n", [1, 2, 3, 6, 8, 17, 64])
def test_history_override(n):
    p = Policy(history=n)
    assert p.windows == n
    assert p.name == ("6.12" if n == 2 else f"6.12+N={n}")
    assert Policy.profile("rfc2024-hot-shared", history=n).windows == n


def test_policies_are_hashable_values():
    assert Policy(history=6) == Policy(history=6)
    assert len({Policy(history=6), Policy(history=6), Policy.profile("6.12")}) == 2
    assert Policy(history=6).name != Policy(history=8).name


def test_rules_composition():
    p = Policy(history=4, rules=["early_passes", "own_pid", "hot", "shared=2"], base="6.12")
    assert (p.hot, p.shared, p.early_passes, p.starvation, p.ignore_pid_partial) == (1, 2, "vma", False, False)
    assert p.name.startswith("6.12+N=4+rules=")
    assert Policy(rules={"own_pid": True, "shared": 5}).shared == 5
    assert Policy(rules="own_pid+starvation").starvation


def test_attrs_are_netcdf_safe_and_json_round_trips():
    for name in Policy.profiles():
        attrs = Policy.profile(name).to_attrs()
        assert all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in attrs.values())
        assert attrs["policy_name"] == name
        assert json.loads(Policy.profile(name).to_json())["name"] == name


def test_replace():
    p = Policy.profile("6.12").replace(history=6)
    assert p == Policy(history=6) and p.name == "6.12+N=6"


# ------------------------------------------------------------------ kernel behaviours


def _visit(policy, state, tid, due):
    """One task_numa_work visit to a VMA: rotate before the test (v6.7+) or after a pass (v6.4)."""
    if due and policy.rotate_before_access:
        H.rotate(state["pids_active"], state["idx"], rotation=policy.rotation)
    allowed, reason, _ = decide(policy, scanner_tid=tid, **state)
    if due and not policy.rotate_before_access and allowed[0]:
        H.rotate(state["pids_active"], state["idx"], rotation=policy.rotation)
    return REASONS[int(reason[0])]


def test_v64_never_ages_a_pid_inactive_vma_but_v67_does():
    """v6.4-6.6 rotated after vma_is_accessed(): a VMA skipped as PID-inactive keeps its stale
    PIDs forever. 2e2675db1906 (v6.7) moved the rotation first, so the bits age out."""
    for name, stale_forever in (("6.4", True), ("rfc2023-p1", False), ("6.7", False)):
        p = Policy.profile(name)
        state = one_vma(p, owners_by_window=[[A]])  # thread A faulted here once, long ago
        seen = [_visit(p, state, B, due=True) for _ in range(6)]  # B scans; rotation due every visit
        assert set(seen) == {"pid_inactive"}
        assert bool(H.union(state["pids_active"], state["idx"]).any()) == stale_forever, name
        # and A itself: still passes in 6.4 (stale bit), no longer in 6.7
        assert _visit(p, state, A, due=False) == ("own_pid" if stale_forever else "pid_inactive")


def test_v68_early_passes_relative_to_start_scan_seq():
    """84db47ca7146: a VMA whose state was created at seq 5 gets its two unconditional passes."""
    for seq, want68, want67 in ((5, "early_passes", "pid_inactive"), (6, "early_passes", "pid_inactive"),
                                (7, "pid_inactive", "pid_inactive")):
        assert reason_of(Policy.profile("6.8"), B, seq=seq, start_seq=5) == want68
        assert reason_of(Policy.profile("6.7"), B, seq=seq, start_seq=5) == want67
    # and the mm-relative rule lets everything through in the mm's first two passes
    assert reason_of(Policy.profile("6.4"), B, seq=1, start_seq=1) == "early_passes"
    assert reason_of(Policy.profile("rfc2023-p3"), B, seq=1, start_seq=1, vm_end=1000 + 4096) == "disjoint_select"


def test_v612_starvation_horizon_scales_with_nr_threads():
    """f22cde4371f3: scanned anyway once seq > prev_scan_seq + nr_threads."""
    p12, p8 = Policy.profile("6.12"), Policy.profile("6.8")
    assert reason_of(p12, B, seq=14, prev_seq=10, nr_threads=4) == "pid_inactive"
    assert reason_of(p12, B, seq=15, prev_seq=10, nr_threads=4) == "starvation"
    assert reason_of(p8, B, seq=15, prev_seq=10, nr_threads=4) == "pid_inactive"
    # with 64 threads the horizon is 64 passes away (spec's derived caveat)
    assert reason_of(p12, B, seq=15, prev_seq=10, nr_threads=64) == "pid_inactive"


def test_v67_partial_vma_seq_completed_and_forced():
    p = Policy.profile("6.7")
    assert reason_of(p, B, offset=1001, vm_start=1000) == "ignore_pid_inactive"
    assert reason_of(p, B, offset=1000, vm_start=1000) == "pid_inactive"  # strictly inside
    assert reason_of(p, B, seq=10, prev_seq=10) == "seq_completed"
    assert reason_of(p, B, forced=True) == "forced"
    assert reason_of(p, B, forced=True, seq=10, prev_seq=10) == "seq_completed"  # completed first
    assert reason_of(Policy.profile("6.4"), B, forced=True) == "pid_inactive"  # no forced pass before 6.7
    assert reason_of(Policy.profile("6.4"), B, seq=10, prev_seq=10) == "pid_inactive"


def test_scan_delay_except_in_pass_zero():
    p = Policy.profile("6.12")
    assert reason_of(p, A, now=5, next_scan=6) == "scan_delay"
    assert reason_of(p, A, now=6, next_scan=6) == "pid_inactive"  # "before" is strict
    assert reason_of(p, A, now=5, next_scan=6, seq=0, start_seq=0) == "early_passes"


def test_pre64_scans_everything_suitable():
    p = Policy.profile("pre-6.4")
    state = one_vma(p, now=0, next_scan=10)
    allowed, reason, _ = decide(p, scanner_tid=B, **state)
    assert allowed.all() and REASONS[int(reason[0])] == "unfiltered"
    _, reason, _ = decide(p, scanner_tid=B, unsuitable=np.array([True]), **state)
    assert REASONS[int(reason[0])] == "unsuitable"


def test_hot_and_shared_thresholds():
    hs = Policy.profile("rfc2024-hot-shared")
    # A faulted in the current window: hot for anyone
    assert reason_of(hs, D, owners_by_window=[[], [A]]) == "hot"
    # two distinct PIDs, only in old windows: neither hot nor shared
    assert reason_of(hs, D, owners_by_window=[[A, B], []]) == "pid_inactive"
    # three distinct PIDs in the union: shared (>= 3 bits, "more than 2 tasks")
    assert reason_of(hs, D, owners_by_window=[[A, B], [C], []]) == "shared"
    # own PID wins over hot in RFC 2024; RFC 2023 p5 checks hot first
    assert reason_of(hs, A, owners_by_window=[[A]]) == "own_pid"
    assert reason_of(Policy.profile("rfc2023-p5"), A, owners_by_window=[[A]], vm_end=5000) == "hot"
    # custom thresholds
    hot2 = Policy(rules=["own_pid", "hot=2"])
    assert reason_of(hot2, D, owners_by_window=[[A]]) == "pid_inactive"
    assert reason_of(hot2, D, owners_by_window=[[A, B]]) == "hot"
    assert reason_of(Policy(rules=["shared=1"]), D, owners_by_window=[[A], []]) == "shared"


def test_window_count_sets_the_memory():
    """A's one fault is remembered for N-1 rotations with an N-window history."""
    for n in (1, 2, 4, 6):
        p = Policy(history=n)
        state = one_vma(p, owners_by_window=[[A]])
        remembered = 0
        while _visit(p, state, A, due=False) == "own_pid":
            remembered += 1
            H.rotate(state["pids_active"], state["idx"], rotation=p.rotation)
        assert remembered == n


def test_ring_and_shift_decide_alike():
    for n in (2, 4):
        shift, ring = Policy(history=n, rotation="shift"), Policy(history=n, rotation="ring")
        s1, s2 = one_vma(shift), one_vma(ring)
        rng = np.random.default_rng(3)
        for step in range(12):
            tids = rng.choice([A, B, C, D], size=2)
            for pol, s in ((shift, s1), (ring, s2)):
                H.set_pid_bits(s["pids_active"], s["idx"], (np.zeros(2, np.int64),), tids, rotation=pol.rotation)
            for t in (A, B, C, D):
                assert decide(shift, scanner_tid=t, **s1)[1][0] == decide(ring, scanner_tid=t, **s2)[1][0]
            H.rotate(s1["pids_active"], s1["idx"], rotation="shift")
            H.rotate(s2["pids_active"], s2["idx"], rotation="ring")


def test_128_bit_map_removes_a_64_bit_collision():
    pairs = [(a, b) for a in range(1, 200) for b in range(a + 1, 400)
             if RH.pid_bit(a, 64) == RH.pid_bit(b, 64) and RH.pid_bit(a, 128) != RH.pid_bit(b, 128)]
    a, b = pairs[0]
    assert reason_of(Policy.profile("6.8"), b, owners_by_window=[[a]]) == "own_pid"  # false positive
    assert reason_of(Policy.profile("rfc2024-pid-bits"), b, owners_by_window=[[a]]) == "pid_inactive"


def test_disjoint_select_counter():
    """RFC 2023 p2: a >= 4 MiB VMA passes every 2nd failing visit, a 4 KiB one every 10th."""
    p = Policy.profile("rfc2023-p3")
    for pages, period in ((1024, 2), (4096, 2), (1, 10)):
        state = one_vma(p, vm_end=1000 + pages, select=np.array([0]))
        passes = []
        for _ in range(3 * period):
            allowed, _, state["vma_scan_select"] = decide(p, scanner_tid=B, **state)
            passes.append(bool(allowed[0]))
        assert passes == ([True] + [False] * (period - 1)) * 3, pages


def test_skip_and_allow_codes():
    assert set(SKIP_REASONS) >= {"unsuitable", "shared_ro", "inaccessible", "scan_delay", "pid_inactive",
                                 "seq_completed"}
    assert not ALLOWED[CODE["pid_inactive"]] and ALLOWED[CODE["ignore_pid_inactive"]]
    assert len(REASONS) < 128  # fits int8


def test_decision_matrix_dataarray():
    p = Policy.profile("6.12")
    state = one_vma(p, owners_by_window=[[A]])  # one mm (no replica axis) with one VMA
    da = decision_matrix(p, tids=[A, B, C], **state)
    assert da.dims == ("task", "vma") and da.shape == (3, 1)
    assert [REASONS[c] for c in da.values[:, 0]] == ["own_pid", "pid_inactive", "pid_inactive"]
    assert da.attrs["reasons"] == list(REASONS) and da["tid"].values.tolist() == [A, B, C]
    assert da["allowed"].values[:, 0].tolist() == [True, False, False]
    # two replicas: stack the same mm twice, with B's bit in the second
    per_vma = {"start_scan_seq", "prev_scan_seq", "vm_start", "next_scan", "vm_end"}
    batched = {k: (np.stack([v, v]) if isinstance(v, np.ndarray) else np.full((2, 1) if k in per_vma else 2, v))
               for k, v in state.items() if v is not None}
    H.set_pid_bits(batched["pids_active"], batched["idx"], (np.array([1]), np.array([0])), [B])
    da2 = decision_matrix(p, tids=[A, B], **batched)
    assert da2.dims == ("replica", "task", "vma") and da2.shape == (2, 2, 1)
    assert da2["allowed"].values[:, :, 0].tolist() == [[True, False], [True, True]]


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("history", [0, 65, -3, 2.0])
def test_bad_history(history):
    with pytest.raises(NumalabValueError, match=r"history.*\[1, 64\]|history=.*integer"):
        Policy(history=history)


def test_adaptive_history_is_available():
    """history="adaptive" (formerly refused) now builds the default rule; unknown words are refused."""
    p = Policy(history="adaptive")
    assert p.adaptive and p.adapt.rule == "grow-shrink" and p.windows == p.adapt.n_max
    with pytest.raises(NumalabValueError, match="history='adaptiv'.*'adaptive'"):
        Policy(history="adaptiv")


@pytest.mark.parametrize("rules", [["hot=0"], ["shared=0"], {"shared": -2}])
def test_thresholds_below_one(rules):
    with pytest.raises(NumalabValueError, match="threshold.*>= 1|threshold.*\\[1,"):
        Policy(rules=rules)


def test_bad_policy_knobs():
    with pytest.raises(NumalabValueError, match="rules='own'"):
        Policy(rules=["own"])
    with pytest.raises(NumalabValueError, match="width"):
        Policy(width=32)
    with pytest.raises(NumalabValueError, match="rotation"):
        Policy(rotation="lifo")
    with pytest.raises(NumalabValueError, match="unknown Policy switch"):
        Policy(hots=1)
    with pytest.raises(NumalabValueError, match="per-VMA state"):
        Policy(base="pre-6.4", rules=["own_pid"])


def test_decide_bad_inputs():
    p = Policy.profile("6.12")
    state = one_vma(p)
    with pytest.raises(NumalabValueError, match="scanner_tid.*uint32"):
        decide(p, scanner_tid=-1, **state)
    with pytest.raises(NumalabValueError, match="scanner_tid has shape"):
        decide(p, scanner_tid=np.ones((2, 2, 2), np.uint32), **state)
    with pytest.raises(NumalabValueError, match="start_scan_seq has shape"):
        decide(p, scanner_tid=A, **dict(state, start_scan_seq=np.zeros(3)))
    with pytest.raises(NumalabValueError, match="windows"):
        decide(Policy(history=4), scanner_tid=A, **state)
    with pytest.raises(NumalabValueError, match="vm_end is required"):
        decide(Policy.profile("rfc2023-p2"), scanner_tid=A, **dict(state, vm_end=None))
    with pytest.raises(NumalabValueError, match="policy must be"):
        decide("6.12", scanner_tid=A, **state)


# ------------------------------------------------------------------ numalab demo


def test_demo_command_prints_a_consistent_table(capsys):
    from numalab.cli import main

    assert main(["demo", "--threads", "4,32", "--vmas", "8", "--profiles", "pre-6.4,6.12,rfc2024-hot-shared"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.split() and line.split()[0] in
            ("pre-6.4", "6.12", "rfc2024-hot-shared")]
    assert len(rows) == 6
    for name, threads, nvma, scanned, *cols in rows:
        scanned, cols = float(scanned), [float(c) for c in cols]
        allow, skip = cols[:5], cols[5:]
        assert abs(scanned - sum(allow)) < 0.2 and abs(scanned + sum(skip) - 100) < 0.2
        assert int(nvma) == int(threads) + 8 + 4 + 6
        if name == "pre-6.4":
            assert scanned == 100.0
    by_name = {(r[0], r[1]): float(r[3]) for r in rows}
    # the hot/shared rules let through at least what the own-PID filter does
    assert by_name[("rfc2024-hot-shared", "32")] >= by_name[("6.12", "32")]


@pytest.mark.parametrize("argv", [["demo", "--threads", "x"], ["demo", "--profiles", "6.99"],
                                  ["demo", "--history", "0"], ["demo", "--vmas", "0"]])
def test_demo_bad_knobs_exit_2(argv, capsys):
    from numalab.cli import main

    assert main(argv) == 2
    assert "numalab demo: error:" in capsys.readouterr().err


# ------------------------------------------------------------------ ef6a22b70f (the parent of v6.4's PID filter)


def test_scan_delay_profile_decides_like_v64_without_the_pid_test():
    """ef6a22b70f 'apply the scan delay to every new vma': vma_numab_state and its first-scan
    delay, but no vma_is_accessed(). Over a grid of states and scanners it skips exactly where
    6.4 skips for a VMA flag or the scan delay, and scans (reason 'unfiltered') wherever 6.4
    would ask the PID test -- whether 6.4 then allows (early_passes, own_pid) or skips."""
    rc, v64 = Policy.profile("6.4-rc-scan-delay"), Policy.profile("6.4")
    assert rc.numab_state and rc.rules == () and rc.windows == v64.windows
    assert "ef6a22b70f" in rc.description
    seen64 = set()
    for seq in (0, 1, 2, 5):
        for now, next_scan in ((5, 6), (6, 6), (7, 6)):
            for owners in ([], [[A]], [[B], [C]]):
                for tid in (A, B, D):
                    for unsuitable in (False, True):
                        kw = dict(seq=seq, start_seq=0, now=now, next_scan=next_scan, owners_by_window=owners)
                        flags = dict(unsuitable=np.array([unsuitable]))
                        s64 = one_vma(v64, **kw)
                        a64, r64, _ = decide(v64, scanner_tid=tid, **s64, **flags)
                        src = one_vma(rc, **kw)
                        arc, rrc, _ = decide(rc, scanner_tid=tid, **src, **flags)
                        r64, rrc = REASONS[int(r64[0])], REASONS[int(rrc[0])]
                        seen64.add(r64)
                        if r64 in ("unsuitable", "scan_delay"):
                            assert rrc == r64
                        else:
                            assert rrc == "unfiltered" and arc.all(), (kw, tid, r64)
    assert seen64 == {"unsuitable", "scan_delay", "early_passes", "own_pid", "pid_inactive"}


def test_scan_delay_profile_agrees_with_the_scalar_reference():
    from numalab.reference import policy as RP

    rc = Policy.profile("6.4-rc-scan-delay")
    for seq, now in ((0, 5), (3, 5), (3, 7)):
        state = one_vma(rc, seq=seq, now=now, next_scan=6, owners_by_window=[[A]])
        _, reason, _ = decide(rc, scanner_tid=B, **state)
        ref, _ = RP.visit(rc, state["pids_active"][0], int(state["idx"][0]), B, numa_scan_seq=seq, start_scan_seq=0,
                          prev_scan_seq=seq - 1, scan_offset=0, vm_start=1000, next_scan=6, now=now, nr_threads=64)
        assert REASONS[int(reason[0])] == ref
    assert ref == "unfiltered"


def test_scan_delay_profile_in_the_engine_delays_but_never_filters():
    """In a run: 6.4-rc-scan-delay skips VMAs for their first-scan delay (pre-6.4, with no
    vma_numab_state, never does) and never as PID-inactive, where 6.4 does. numa01's VMAs get
    their state at the first suitable visit, after the MPOL_BIND init (~12 s), in pass >= 1."""
    ds = nl.simulate("numa01", ["pre-6.4", "6.4-rc-scan-delay", "6.4"], seeds=1, topology="2s-128", max_time=20)
    one = ds.isel(seed=0)
    assert int(one.skip_scan_delay.sel(policy="pre-6.4")) == 0
    assert int(one.skip_scan_delay.sel(policy="6.4-rc-scan-delay")) > 0
    assert int(one.skip_scan_delay.sel(policy="6.4")) == int(one.skip_scan_delay.sel(policy="6.4-rc-scan-delay"))
    assert int(one.skip_pid_inactive.sel(policy="6.4-rc-scan-delay")) == 0
    assert int(one.allow_unfiltered.sel(policy="6.4-rc-scan-delay")) > 0
    assert int(one.numa_pte_updates.sel(policy="6.4-rc-scan-delay")) > 0
    assert int(one.skip_pid_inactive.sel(policy="6.4")) > 0

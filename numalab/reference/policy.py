"""Scalar reference of the scan filter: one scanning thread, one VMA at a time.

Test oracle for :func:`numalab.policy.decide`. It reads the policy's switches (any object with
the :class:`numalab.policy.Policy` attributes) and follows ``spec/kernel-numa-balancing.md``
§3.2 (``task_numa_work``) and §3.3 (``vma_is_accessed``) line by line: each built-in test of
the rule table (:data:`numalab.rules.BUILTIN_RULES`) has its own scalar version here
(:data:`ORACLES`), written from the spec, and is applied in the order the table gives. A test
without a scalar version -- a user rule, or a built-in row added since -- is the table's own
function, called on a view of this one VMA and scanner (numpy enters only there), so the
agreement tests check the decision chain around it. Returns reason *names*; the caller maps
them to codes.
"""

from __future__ import annotations

from ..rules import BUILTIN_RULES
from . import history as H
from .hashing import pid_bit

VMA_4M = 1 << 22
VMA_RATELIMIT_SCALEDOWN_F = 7


def hot_vma(policy, hist, idx) -> bool:
    """RFC: ``bitmap_weight(pids_active[current]) >= threshold`` (anyone faulted lately)."""
    current = H.union(hist, idx, 1, policy.rotation)
    return H.popcount(current) >= policy.hot


def shared_vma(policy, hist, idx, windows_active=None) -> bool:
    """RFC: ``bitmap_weight(OR of all windows) >= threshold`` (SHARED_VMA_THRESH); an adaptive
    history ORs only its newest ``windows_active`` windows."""
    return H.popcount(H.union(hist, idx, windows_active, policy.rotation)) >= policy.shared


def _early_passes(policy, hist, idx, tid, s) -> bool:
    if policy.early_passes == "mm":
        return s["numa_scan_seq"] < 2  # v6.4-v6.7
    return s["numa_scan_seq"] - s["start_scan_seq"] < 2  # v6.8+


def _own_pid(policy, hist, idx, tid, s) -> bool:
    return H.test_bit(H.union(hist, idx, s["windows_active"], policy.rotation), pid_bit(tid, policy.width))


#: rule name -> its scalar test ``(policy, hist, idx, tid, state) -> bool`` (state: the
#: scalar fields of the visit)
ORACLES = {
    "seq_completed": lambda policy, hist, idx, tid, s: s["prev_scan_seq"] == s["numa_scan_seq"],  # v6.7
    "forced_one": lambda policy, hist, idx, tid, s: bool(s["forced"]),  # v6.7 vma_pids_forced
    "early_passes": _early_passes,
    "own_pid": _own_pid,
    "hot": lambda policy, hist, idx, tid, s: hot_vma(policy, hist, idx),
    "shared": lambda policy, hist, idx, tid, s: shared_vma(policy, hist, idx, s["windows_active"]),
    # v6.7: finish a partly scanned VMA
    "ignore_pid_partial": lambda policy, hist, idx, tid, s: s["scan_offset"] > s["vm_start"],
    # v6.12
    "starvation": lambda policy, hist, idx, tid, s: s["numa_scan_seq"] > s["prev_scan_seq"] + s["nr_threads"],
}


def _rules(policy, stage: str) -> list:
    """The policy's rules of one stage that are on, in the table's test order."""
    values = {r.name: getattr(policy, r.name) for r in BUILTIN_RULES}
    values.update({k: getattr(policy, k) for r in BUILTIN_RULES for k, _ in r.switch_params})
    on = [(r.order_of(values), i, r) for i, r in enumerate(BUILTIN_RULES)
          if r.stage == stage and values[r.name] is not None and values[r.name] is not False]
    if stage == "access":
        on += [(u.order, len(BUILTIN_RULES) + i, u) for i, u in enumerate(getattr(policy, "user_rules", ()))]
    return [r for *_, r in sorted(on, key=lambda x: x[:2])]


def _row_view(policy, hist, idx, tid, s):
    """This one VMA and scanner as a view of shape (1,): what a table function reads."""
    import numpy as np

    from ..scanview import ScanView

    one = lambda v, dtype=None: np.array([v], dtype=dtype)  # noqa: E731
    return ScanView(
        pids_active=np.array([hist], dtype=np.uint64), idx=one(idx), scanner_tid=one(tid, np.uint32),
        numa_scan_seq=one(s["numa_scan_seq"]), start_scan_seq=one(s["start_scan_seq"]),
        prev_scan_seq=one(s["prev_scan_seq"]), scan_offset=one(s["scan_offset"]), vm_start=one(s["vm_start"]),
        next_scan=one(s["next_scan"]), now=one(s["now"]), nr_threads=one(s["nr_threads"]),
        vm_end=None if s["vm_end"] is None else one(s["vm_end"]), forced=one(bool(s["forced"])),
        vma_scan_select=one(s["vma_scan_select"]),
        windows_active=None if s["windows_active"] is None else one(s["windows_active"]),
        unsuitable=one(False), shared_ro=one(False), inaccessible=one(False), rotation=policy.rotation,
        width=policy.width, page_bytes=s["page_bytes"])


def _test(policy, rule, hist, idx, tid, s) -> bool:
    oracle = ORACLES.get(rule.name) if rule.builtin else None
    if oracle is not None:
        return bool(oracle(policy, hist, idx, tid, s))
    value = getattr(policy, rule.name) if rule.builtin else True
    return bool(rule.evaluate(_row_view(policy, hist, idx, tid, s), value)[0])


def vma_is_accessed(policy, hist, idx, tid, *, numa_scan_seq, start_scan_seq, prev_scan_seq,
                    scan_offset, vm_start, nr_threads, windows_active=None, **more):
    """The decision of ``vma_is_accessed()``: the reason of the first test that answers True
    (an allow rule's reason, or a skip rule's refusal), or None if none does.

    ``windows_active``: how many of the newest windows the own-PID and shared tests OR (None =
    all of them, a fixed N). ``more``: the other fields of the visit a user rule may read."""
    s = dict(numa_scan_seq=numa_scan_seq, start_scan_seq=start_scan_seq, prev_scan_seq=prev_scan_seq,
             scan_offset=scan_offset, vm_start=vm_start, nr_threads=nr_threads, windows_active=windows_active)
    s.update({k: more.get(k, d) for k, d in (("vm_end", None), ("next_scan", 0), ("now", 0), ("forced", False),
                                               ("vma_scan_select", 0), ("page_bytes", 4096))})
    for rule in _rules(policy, "access"):
        if _test(policy, rule, hist, idx, tid, s):
            return rule.reason
    return None


def task_disjoint_vma_select(select: int, vma_bytes: int) -> tuple[bool, int]:
    """RFC 2023 p2: refuse while the counter is > 0 (decrementing it); at 0 allow once and refill."""
    if select > 0:
        return False, select - 1
    return True, 1 + ((VMA_4M // vma_bytes) >> VMA_RATELIMIT_SCALEDOWN_F)


def visit(policy, hist, idx, tid, *, numa_scan_seq, start_scan_seq, prev_scan_seq, scan_offset, vm_start,
          next_scan, now, nr_threads, forced=False, vma_scan_select=0, vm_end=None, page_bytes=4096,
          unsuitable=False, shared_ro=False, inaccessible=False, windows_active=None):
    """One VMA visited by ``task_numa_work`` run by thread ``tid``: ``(reason, vma_scan_select)``.

    The numab state is assumed to exist already (the engine creates it on the first visit)."""
    if unsuitable:
        return "unsuitable", vma_scan_select
    if shared_ro:
        return "shared_ro", vma_scan_select
    if inaccessible:
        return "inaccessible", vma_scan_select
    if not policy.numab_state:
        return "unfiltered", vma_scan_select  # <= v6.3
    if numa_scan_seq != 0 and now < next_scan:
        return "scan_delay", vma_scan_select
    # (the window rotation would happen here from v6.7 on; decide() leaves it to the engine)
    pre, fallback = _rules(policy, "pre"), _rules(policy, "fallback")
    access = _rules(policy, "access")
    if not (pre or access or fallback):
        return "unfiltered", vma_scan_select  # ef6a22b70f: scan delay, no vma_is_accessed()
    s = dict(numa_scan_seq=numa_scan_seq, start_scan_seq=start_scan_seq, prev_scan_seq=prev_scan_seq,
             scan_offset=scan_offset, vm_start=vm_start, vm_end=vm_end, next_scan=next_scan, now=now,
             nr_threads=nr_threads, forced=forced, vma_scan_select=vma_scan_select, page_bytes=page_bytes,
             windows_active=windows_active)
    for rule in pre:  # seq_completed, then the forced retry (the PID test is skipped)
        if _test(policy, rule, hist, idx, tid, s):
            return rule.reason, vma_scan_select
    why = vma_is_accessed(policy, hist, idx, tid, **s)
    if why is not None:
        return why, vma_scan_select
    if policy.disjoint_select:
        ok, new = task_disjoint_vma_select(vma_scan_select, (vm_end - vm_start) * page_bytes)
        return ("disjoint_select" if ok else "disjoint_wait"), new
    return "pid_inactive", vma_scan_select

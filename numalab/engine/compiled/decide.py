"""The scan filter's decision, compiled: one (scanner, VMA) visit of ``task_numa_work``.

Mirrors :func:`numalab.policy._decide` (through :func:`numalab.policy.decide_unchecked`) for one
scanning thread and one VMA -- the VMA flag tests, the scan delay, the ``pre`` rules (with the
v6.7 forced retry's short cut), ``vma_is_accessed()``'s rules in test order and the fallback
(RFC 2023 p2's ``disjoint_select`` counter, :func:`numalab.policy._select_after`) -- over the
built-in rules of :data:`numalab.rules.BUILTIN_RULES` and the decision table of
:class:`numalab.reasons.Decisions`; an adaptive history's PID test ORs only its newest
``windows_active`` windows (:mod:`.adapt`). The PID windows are :mod:`numalab.history`'s
(``rotate``, ``union``, ``current_window``, ``popcount``) and :class:`numalab.scanview.ScanView`'s
(``window(0)``, ``union()``, ``has_scanner``), on one VMA's ``(W, words)`` slice of
``pids_active``.

:func:`pack_policy` encodes a policy as the flat named tuple :data:`.state.Pol` ``Q``: its
history, the decision table as arrays by code, and its chain (``policy.chain``) as arrays of
built-in rule ids with their parameters and codes, and its adaptive history's rule and
parameters (:func:`.adapt.encode`). Policies with user rules are the numpy engine's
(:func:`numalab.engine.compiled.unsupported`).
"""

from __future__ import annotations

import numpy as np

from ...reasons import CODE
from . import RULE_ID, adapt
from ._nb import inner, jit
from .bits import U0 as _U0
from .bits import in_union, popcount, union_has
from .state import Pol
from .structs import make_pol

__all__ = ["pack_policy", "encode", "decide_vma", "decide_vma_py", "unfiltered_reason", "popcount", "window_weight",
           "union_weight", "union_has", "current_window_index", "rotate", "RULE_ID"]

R_SEQ_COMPLETED, R_FORCED, R_EARLY_PASSES, R_OWN_PID = 1, 2, 3, 4
R_HOT, R_SHARED, R_IGNORE_PID, R_STARVATION = 5, 6, 7, 8

#: RFC 2023 p2 (task_disjoint_vma_select): VMA_4M, VMA_RATELIMIT_SCALEDOWN_F; the engine's pages are 4 KiB
VMA_4M = 1 << 22
SCALEDOWN_F = 7
PAGE_BYTES = 4096


#: the decorator of a function called only from compiled code: ``jit`` without the CPython and
#: cfunc wrappers (a wrapper unboxes every array of the named tuples it takes, which costs
#: seconds of compile time per function; the function is then not callable from Python)


# ------------------------------------------------------------------------------ encoding
def encode(policy) -> Pol:
    """The :data:`.state.Pol` of ``policy`` (no user rules): its history,
    its decision table by code and its chain (``policy.chain``) as rule ids, parameters, codes.

    Fields: the history -- ``numab_state``, ``windows`` (W), ``words`` (width // 64), ``ring``
    (rotation "ring"), ``width``, ``rotate_before_access``, ``forced_one`` (the v6.7 retry),
    ``own_pid`` (history_stats counts PID tests only then); by int8 code (bool arrays) --
    ``dec_allowed``, ``dec_pid_skip``, ``dec_before_test`` (decided before the PID test is
    reached); the chain in test order -- ``pre_rule`` / ``pre_code`` / ``pre_allow`` and
    ``acc_rule`` / ``acc_param`` / ``acc_code`` / ``acc_allow`` (:data:`RULE_ID`; ``acc_param``
    is hot's and shared's threshold, early_passes' 1 for "vma", 0 for "mm"; ``early_vma`` the
    same as a flag), ``has_fallback`` with ``fb_code`` / ``fb_refuse`` (disjoint_select /
    disjoint_wait; without a fallback ``fb_code`` is pid_inactive, or unfiltered when no rule
    is on, and ``fb_refuse`` -1); the fixed decisions' codes ``code_*``; the adaptive history's
    ``adapt_rule``, ``adapt_enabled``, ``ad_*`` and ``dec_pid_test`` (:func:`.adapt.encode`)."""
    if policy.decisions.user_rules:
        raise ValueError(f"policy {policy.name!r} has a user rule: the numpy engine runs it")
    ch, dec = policy.chain, policy.decisions
    pre = [(RULE_ID[r.name], int(code), bool(allow)) for r, _, code, allow in ch.pre]
    acc = []
    for r, kw, code, allow in ch.access:
        value = kw.get(r.name, 0)
        param = (1 if value == "vma" else 0) if r.name == "early_passes" else int(value)
        acc.append((RULE_ID[r.name], param, int(code), bool(allow)))
    i8 = lambda xs: np.array(xs, dtype=np.int64)   # noqa: E731
    bl = lambda xs: np.array(xs, dtype=np.bool_)   # noqa: E731
    before = np.zeros(len(dec), dtype=np.bool_)     # history_stats._BEFORE_TEST: decided before the PID test
    for name in ("unsuitable", "shared_ro", "inaccessible", "scan_delay"):
        before[dec.code[name]] = True
    if ch.fallback is not None:
        fb_code, fb_refuse = int(ch.fallback[1]), int(ch.fallback[2])
    else:  # policy._fallback: pid_inactive, or unfiltered when no rule is on at all
        fb_code, fb_refuse = int(CODE["pid_inactive"] if ch.any else CODE["unfiltered"]), -1
    return Pol(
        numab_state=bool(policy.numab_state), windows=int(policy.windows), words=int(policy.width // 64),
        ring=policy.rotation == "ring", width=int(policy.width),
        rotate_before_access=bool(policy.rotate_before_access), forced_one=bool(policy.forced_one),
        own_pid=bool(policy.own_pid),
        dec_allowed=bl(dec.allowed), dec_pid_skip=bl(dec.pid_skip),
        pre_rule=i8([p[0] for p in pre]), pre_code=i8([p[1] for p in pre]), pre_allow=bl([p[2] for p in pre]),
        acc_rule=i8([a[0] for a in acc]), acc_param=i8([a[1] for a in acc]), acc_code=i8([a[2] for a in acc]),
        acc_allow=bl([a[3] for a in acc]),
        has_fallback=ch.fallback is not None, fb_code=fb_code, fb_refuse=fb_refuse,
        early_vma=policy.early_passes == "vma",
        code_scan_delay=int(CODE["scan_delay"]), code_pid_inactive=int(CODE["pid_inactive"]),
        code_unfiltered=int(CODE["unfiltered"]), code_unsuitable=int(CODE["unsuitable"]),
        code_shared_ro=int(CODE["shared_ro"]), code_inaccessible=int(CODE["inaccessible"]),
        code_seq_completed=int(CODE["seq_completed"]), dec_before_test=before,
        **adapt.encode(policy.adapt, dec),
    )


def pack_policy(b) -> Pol:
    """The :data:`.state.Pol` ``Q`` of batch ``b``'s policy (:func:`encode`)."""
    return encode(b.pol)


# ------------------------------------------------------------------------------ the windows
@inner
def current_window_index(Q, pidx):
    """history.current_window_index / ScanView.window(0): ``W - 1`` ("shift"), ``idx % W`` ("ring")."""
    if Q.ring:
        return pidx % Q.windows
    return Q.windows - 1


@inner
def window_weight(Q, pids, w):
    """history.popcount of window ``w`` of one VMA's ``pids`` (W, words): set bits over its words."""
    n = 0
    for j in range(Q.words):
        n += popcount(pids[w, j])
    return n


@inner
def union_weight(Q, pids, pidx, wa):
    """history.popcount(ScanView.union()): bits in the OR of the newest ``wa`` windows (every
    window for a fixed history, ``wa == W``; an adaptive history's active count otherwise)."""
    n = 0
    for j in range(Q.words):
        u = _U0
        for w in range(Q.windows):
            if in_union(Q, pidx, w, wa):
                u |= pids[w, j]
        n += popcount(u)
    return n


@inner
def rotate(Q, pids, pidx):
    """history.rotate of one VMA's windows (mutates ``pids``); returns the new ring index.
    "shift": every window moves down one and the newest is cleared; "ring": the index moves on
    and its window is cleared."""
    W = Q.windows
    if Q.ring:
        pidx = (pidx + 1) % W
        for j in range(Q.words):
            pids[pidx, j] = _U0
        return pidx
    for w in range(W - 1):
        for j in range(Q.words):
            pids[w, j] = pids[w + 1, j]
    for j in range(Q.words):
        pids[W - 1, j] = _U0
    return pidx


# ------------------------------------------------------------------------------ the decision
@inner
def _access_test(Q, i, pids, pidx, wa, word, mask, seq, start_seq, prev_seq, offset, vm_start, nr_threads):
    """The answer of access rule ``i`` of the chain (rules._early_passes, _own_pid, _hot,
    _shared, _ignore_pid_partial, _starvation)."""
    rule, param = Q.acc_rule[i], Q.acc_param[i]
    if rule == R_EARLY_PASSES:
        if param == 1:                       # v6.8: passes since the VMA got its state
            return seq - start_seq < 2
        return seq < 2                       # v6.4: passes of the mm
    if rule == R_OWN_PID:
        return union_has(Q, pids, pidx, wa, word, mask)
    if rule == R_HOT:                        # bitmap_weight(pids_active[current]) >= hot
        return window_weight(Q, pids, current_window_index(Q, pidx)) >= param
    if rule == R_SHARED:                     # bitmap_weight(OR of the windows) >= shared
        return union_weight(Q, pids, pidx, wa) >= param
    if rule == R_IGNORE_PID:
        return offset > vm_start
    if rule == R_STARVATION:
        return seq > prev_seq + nr_threads
    return False


@inner
def _pre_test(Q, i, seq, prev_seq, forced):
    """The answer of pre rule ``i`` (rules._seq_completed, rules._forced)."""
    rule = Q.pre_rule[i]
    if rule == R_SEQ_COMPLETED:
        return prev_seq == seq
    if rule == R_FORCED:
        return forced
    return False


@inner
def unfiltered_reason(Q, unsuitable, shared_ro, inaccessible):
    """policy.unfiltered_reasons / the VMA flag tests of _decide for one VMA: the first failed
    flag test (``unsuitable``, ``shared_ro``, ``inaccessible``), else ``unfiltered`` (<= v6.3)."""
    if unsuitable:
        return Q.code_unsuitable
    if shared_ro:
        return Q.code_shared_ro
    if inaccessible:
        return Q.code_inaccessible
    return Q.code_unfiltered


@inner
def decide_vma(Q, pids, pidx, wa, word, mask, seq, start_seq, prev_seq, offset, vm_start, vm_end, next_scan_ms,
               now_ms, nr_threads, forced, select, unsuitable, shared_ro, inaccessible):
    """policy._decide of one (scanner, VMA): ``(reason code, vma_scan_select after the visit)``.

    The first decision that holds, in kernel order: the VMA flag tests; without numab state
    (<= v6.3) ``unfiltered``; the scan delay (``seq != 0 and now < next_scan``, in ms as the
    view has them); the pre rules (``seq_completed``; the forced retry, whose short cut in
    ``_decide`` gives this same answer); ``vma_is_accessed()``'s rules in test order; the
    fallback (``disjoint_select`` at counter 0, refilled to ``1 + ((4 MiB / size) >> 7)``,
    else ``disjoint_wait`` counting down) or ``pid_inactive`` / ``unfiltered``.
    ``pids`` (W, words) is the VMA's history, ``wa`` the newest windows its PID test ORs
    (``W``: all; an adaptive history's count, :func:`.adapt.windows_active`), ``word``/``mask``
    the scanner's bit."""
    if unsuitable or shared_ro or inaccessible or not Q.numab_state:
        return unfiltered_reason(Q, unsuitable, shared_ro, inaccessible), select
    if seq != 0 and now_ms < next_scan_ms:
        return Q.code_scan_delay, select
    for i in range(Q.pre_rule.shape[0]):
        if _pre_test(Q, i, seq, prev_seq, forced):
            return Q.pre_code[i], select
    for i in range(Q.acc_rule.shape[0]):
        if _access_test(Q, i, pids, pidx, wa, word, mask, seq, start_seq, prev_seq, offset, vm_start, nr_threads):
            return Q.acc_code[i], select
    if not Q.has_fallback:
        return Q.fb_code, select
    if select == 0:                          # rules._disjoint_select, then _disjoint_refill
        size_bytes = (vm_end - vm_start) * PAGE_BYTES
        return Q.fb_code, 1 + ((VMA_4M // size_bytes) >> SCALEDOWN_F)
    return Q.fb_refuse, select - 1


@jit
def decide_vma_py(Qt, pids, pidx, wa, word, mask, seq, start_seq, prev_seq, offset, vm_start, vm_end, next_scan_ms,
                  now_ms, nr_threads, forced, select, unsuitable, shared_ro, inaccessible):
    """:func:`decide_vma` from Python, the policy as its named tuple ``Qt`` (the unit tests)."""
    return decide_vma(make_pol(Qt), pids, pidx, wa, word, mask, seq, start_seq, prev_seq, offset, vm_start, vm_end,
                      next_scan_ms, now_ms, nr_threads, forced, select, unsuitable, shared_ro, inaccessible)

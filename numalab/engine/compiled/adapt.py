"""The adaptive access-PID history, compiled: :mod:`numalab.adaptive`'s rules for one VMA's visit.

The numpy engine calls a rule through its hook object (:func:`numalab.adaptive.hooks_for`) at
fixed points of ``task_numa_work`` and the fault path; :func:`.scan.visit` and
:func:`.handle.record_hint_fault` call the functions here at the same points, for the one VMA
(or mm) at hand, in the same integer arithmetic:

* :func:`begin_walk` -- ``popcount_begin`` (per mm, at the start of each walk: a pass has ended
  since the window count was chosen);
* :func:`reset_vma` -- ``reset_state`` of a VMA whose ``vma_numab_state`` is created on this visit;
* :func:`on_rotate` -- ``span_rotate`` at each rotation of the VMA's windows;
* :func:`windows_active` -- ``effective_windows``: the newest windows the PID test ORs;
* :func:`after_decide` -- ``grow_shrink_visit`` with :func:`numalab.adaptive.visit_events`;
* :func:`after_visit` -- ``popcount_visit``: the VMA's whole history ORed into the mm's map;
* :func:`on_fault` -- ``grow_shrink_fault``.

The rule and its parameters are fields of the policy struct ``Q`` (``adapt_rule``: 0 none,
:data:`GROW_SHRINK`, :data:`POPCOUNT`, :data:`SPAN`; ``ad_*``: :class:`numalab.adaptive.Adaptive`'s
fields, filled by :func:`encode`); the state lives in ``S.ad_*`` arrays, the very arrays of the
batch's ``vmas.adapt`` dict (per VMA, or per mm for popcount; empty for a fixed history).
"""

from __future__ import annotations

import math

import numpy as np

from ...adaptive import LEN_MAX_MS
from ._nb import inner
from .bits import U0 as _U0
from .bits import in_union, popcount, union_has

__all__ = ["GROW_SHRINK", "POPCOUNT", "SPAN", "RULE_CODE", "STATE", "encode", "adapt_arrays", "begin_walk", "reset_vma",
           "on_rotate", "windows_active", "after_decide", "after_visit", "on_fault"]

GROW_SHRINK, POPCOUNT, SPAN = 1, 2, 3
#: numalab.adaptive.ADAPT_RULES -> ``Q.adapt_rule`` (0: a fixed history)
RULE_CODE = {"grow-shrink": GROW_SHRINK, "popcount": POPCOUNT, "span": SPAN}

#: ``S`` field -> (the key of the batch's ``vmas.adapt`` dict it is, its dtype) (numalab.adaptive.init_state)
STATE = {"ad_nr_hist": ("nr_hist", np.int64), "ad_idle_scans": ("idle_scans", np.int64),
         "ad_scanned": ("scanned", np.bool_), "ad_faulted": ("faulted", np.bool_),
         "ad_pids_seen": ("pids_seen", np.uint64), "ad_pass_seq": ("pass_seq", np.int64),
         "ad_last_rotate_ms": ("last_rotate_ms", np.int64), "ad_win_avg_ms": ("win_avg_ms", np.int64)}


def encode(adapt, decisions) -> dict:
    """The policy struct's adaptive fields for ``adapt`` (:class:`numalab.adaptive.Adaptive`, or
    None for a fixed history) and the policy's decision table (``dec_pid_test``: the visit
    reached ``vma_is_accessed()``, grow-shrink's ``tested``). Unused parameters are 0."""
    get = (lambda k: 0) if adapt is None else (lambda k: int(getattr(adapt, k) or 0))   # noqa: E731
    return dict(adapt_rule=0 if adapt is None else RULE_CODE[adapt.rule],
                adapt_enabled=adapt is not None and bool(adapt.enabled),
                ad_n_min=get("n_min"), ad_n_max=get("n_max"), ad_n_init=get("n_init"),
                ad_shrink_after=get("shrink_after"), ad_grow_others=get("grow_others"), ad_bits_lo=get("bits_lo"),
                ad_bits_hi=get("bits_hi"), ad_threads_max=get("threads_max"), ad_span_ms=get("span_ms"),
                ad_ewma_shift=get("ewma_shift"),
                dec_pid_test=np.ascontiguousarray(decisions.pid_test, dtype=np.bool_))


def adapt_arrays(b) -> dict:
    """``S.ad_*``: the arrays of batch ``b``'s adaptive state (``b.vmas.adapt``, written in place),
    and for the keys its rule does not have (or a fixed history) empty arrays of the same types."""
    state = b.vmas.adapt or {}
    out = {}
    for field, (key, dtype) in STATE.items():
        a = state.get(key)
        if a is None:
            a = np.zeros((b.R, 0, 1) if field == "ad_pids_seen" else (b.R, 0), dtype=dtype)
        elif not (a.flags.c_contiguous and a.flags.writeable and a.dtype == dtype):
            raise ValueError(f"adaptive state {key!r} is not a writable C-contiguous {np.dtype(dtype)} array")
        out[field] = a
    return out


# ------------------------------------------------------------------------------ the windows
@inner
def windows_active(Q, S, r, m, v):
    """adaptive.effective_windows for VMA ``v`` of mm ``m``: the windows the PID test ORs (all
    ``W`` for a fixed history; ``n_init`` when adaptation is off; else ``nr_hist`` clipped to
    ``[n_min, n_max]``, per VMA or, for popcount, per mm)."""
    if Q.adapt_rule == 0:
        return Q.windows
    if not Q.adapt_enabled:
        return Q.ad_n_init
    n = S.ad_nr_hist[r, m] if Q.adapt_rule == POPCOUNT else S.ad_nr_hist[r, v]
    return min(max(n, Q.ad_n_min), Q.ad_n_max)


# ------------------------------------------------------------------------------ the hooks
@inner
def begin_walk(Q, S, L, r, m):
    """adaptive.popcount_begin for mm ``m`` at the start of a walk: when the pass being collected
    has ended, choose the window count from the distinct hashed PIDs seen (popcount_choose),
    clear the map and collect the current pass."""
    if Q.adapt_rule != POPCOUNT or not Q.adapt_enabled:
        return
    seq = S.mm_scan_seq[r, m]
    if seq == S.ad_pass_seq[r, m]:
        return
    k = 0
    for j in range(S.ad_pids_seen.shape[2]):
        k += popcount(S.ad_pids_seen[r, m, j])
        S.ad_pids_seen[r, m, j] = _U0
    t = L.nr_threads[m]
    lo, hi = Q.ad_bits_lo, Q.ad_bits_hi
    if t >= Q.ad_threads_max or k >= hi:
        n = Q.ad_n_max
    elif k <= lo:
        n = Q.ad_n_init
    else:   # n_init + DIV_ROUND_UP((n_max - n_init) * (k - lo), hi - lo)
        n = Q.ad_n_init + -(-((Q.ad_n_max - Q.ad_n_init) * (k - lo)) // (hi - lo))
    S.ad_nr_hist[r, m] = min(max(n, Q.ad_n_min), Q.ad_n_max)
    S.ad_pass_seq[r, m] = seq


@inner
def reset_vma(Q, S, r, v):
    """adaptive.reset_state of VMA ``v`` (its vma_numab_state is created): ``n_init`` and the
    rule's fields zeroed (span: not rotated yet)."""
    if Q.adapt_rule == GROW_SHRINK:
        S.ad_nr_hist[r, v] = Q.ad_n_init
        S.ad_idle_scans[r, v] = 0
        S.ad_scanned[r, v] = False
        S.ad_faulted[r, v] = False
    elif Q.adapt_rule == SPAN:
        S.ad_nr_hist[r, v] = Q.ad_n_init
        S.ad_last_rotate_ms[r, v] = -1
        S.ad_win_avg_ms[r, v] = 0


@inner
def on_rotate(Q, S, L, r, v, now):
    """adaptive.span_rotate of VMA ``v`` whose windows rotated at ``now`` (s): the window length
    (from the last rotation, the reset period for the first) into the shift-EWMA, the count the
    nearest to ``span_ms / average``, floored at ``n_init``."""
    if Q.adapt_rule != SPAN or not Q.adapt_enabled:
        return
    now_ms = np.int64(math.floor(now * 1000.0))
    last, avg = S.ad_last_rotate_ms[r, v], S.ad_win_avg_ms[r, v]
    length = now_ms - last if last >= 0 else np.int64(4 * L.scan_delay_ms)
    length = min(max(length, 1), LEN_MAX_MS)
    new_avg = avg + ((length - avg) >> Q.ad_ewma_shift) if avg > 0 else length
    new_avg = min(max(new_avg, 1), LEN_MAX_MS)
    n = (Q.ad_span_ms + new_avg // 2) // new_avg
    S.ad_win_avg_ms[r, v] = new_avg
    S.ad_last_rotate_ms[r, v] = now_ms
    S.ad_nr_hist[r, v] = min(max(n, Q.ad_n_init), Q.ad_n_max)


@inner
def after_decide(Q, S, r, v, pids, pidx, word, mask, wa, code):
    """adaptive.grow_shrink_visit of VMA ``v`` after its decision (``code``), with
    visit_events' ``own_bit`` (the scanner's bit in the newest ``wa`` windows) and
    ``others_recent`` (other bits in the two newest windows >= ``grow_others``)."""
    if Q.adapt_rule != GROW_SHRINK or not Q.adapt_enabled:
        return
    own = union_has(Q, pids, pidx, wa, word, mask)
    others = 0
    for j in range(Q.words):
        recent = _U0
        for w in range(Q.windows):
            if in_union(Q, pidx, w, 2):
                recent |= pids[w, j]
        if j == word:
            recent &= ~mask
        others += popcount(recent)
    nr = S.ad_nr_hist[r, v]
    if Q.dec_pid_test[code] and not own and others >= Q.ad_grow_others:   # in use, not by the scanner
        nr = min(nr * 2, Q.ad_n_max)
    if Q.dec_allowed[code]:        # the scanner changes protections: the idle detector
        idle = S.ad_idle_scans[r, v]
        if S.ad_scanned[r, v] and not S.ad_faulted[r, v]:
            idle = min(idle + 1, Q.ad_shrink_after)
        else:
            idle = 0
        if idle >= Q.ad_shrink_after:
            nr = max(nr - 1, Q.ad_n_min)
            idle = 0
        S.ad_idle_scans[r, v] = idle
        S.ad_scanned[r, v] = True
        S.ad_faulted[r, v] = False
    S.ad_nr_hist[r, v] = nr


@inner
def after_visit(Q, S, r, m, pids):
    """PopcountHooks.commit for a visited VMA past the suitability and scan-delay checks: every
    allocated window of its history (after the visit's rotations) ORed into the mm's map."""
    if Q.adapt_rule != POPCOUNT:
        return
    for j in range(Q.words):
        u = _U0
        for w in range(Q.windows):
            u |= pids[w, j]
        S.ad_pids_seen[r, m, j] |= u


@inner
def on_fault(Q, S, r, v):
    """adaptive.grow_shrink_fault: a hinting fault in VMA ``v`` (which has numab state)."""
    if Q.adapt_rule == GROW_SHRINK and Q.adapt_enabled:
        S.ad_faulted[r, v] = True

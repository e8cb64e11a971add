"""Scalar reference of the adaptive-history rules: one VMA (or one mm), one event at a time.

Test oracle for :mod:`numalab.adaptive`; imports nothing vectorised. ``adapt`` is any object
with the :class:`numalab.adaptive.Adaptive` attributes; a state is a dict of Python scalars
(``pids_seen`` a list of 64-bit words). Each function follows the kernel sketch in the
docstring of its vectorised twin, branch by branch, and mutates the state it is given.
"""

from __future__ import annotations

from . import history as H
from .hashing import pid_bit

LEN_MAX_MS = 2**31 - 1


def init(adapt, numa_scan_seq: int = 0) -> dict:
    """Fresh state of one VMA (grow-shrink, span) or one mm (popcount)."""
    s = {"nr_hist": adapt.n_init}
    if adapt.rule == "grow-shrink":
        s.update(idle_scans=0, scanned=False, faulted=False)
    elif adapt.rule == "popcount":
        s.update(pids_seen=[0] * (adapt.width // 64), pass_seq=numa_scan_seq)
    else:
        s.update(last_rotate_ms=-1, win_avg_ms=0)
    return s


def effective_windows(adapt, s) -> int:
    if not adapt.enabled:
        return adapt.n_init
    return min(max(s["nr_hist"], adapt.n_min), adapt.n_max)


def grow_shrink_visit(adapt, s, *, own_bit, others_recent, tested, scanned) -> None:
    if not adapt.enabled:
        return
    if tested and not own_bit and others_recent:
        s["nr_hist"] = min(s["nr_hist"] * 2, adapt.n_max)  # multiplicative grow
    if scanned:
        if s["scanned"] and not s["faulted"]:
            s["idle_scans"] = min(s["idle_scans"] + 1, adapt.shrink_after)
        else:
            s["idle_scans"] = 0
        if s["idle_scans"] >= adapt.shrink_after:
            s["nr_hist"] = max(s["nr_hist"] - 1, adapt.n_min)
            s["idle_scans"] = 0
        s["scanned"] = True
        s["faulted"] = False


def grow_shrink_fault(adapt, s) -> None:
    if not adapt.enabled:
        return
    if not s["faulted"]:
        s["faulted"] = True


def popcount_choose(adapt, k: int, nr_threads: int) -> int:
    if nr_threads >= adapt.threads_max or k >= adapt.bits_hi:
        return adapt.n_max
    if k <= adapt.bits_lo:
        return adapt.n_init
    steps = (adapt.n_max - adapt.n_init) * (k - adapt.bits_lo)
    width = adapt.bits_hi - adapt.bits_lo
    return adapt.n_init + (steps + width - 1) // width  # DIV_ROUND_UP


def popcount_begin(adapt, s, *, numa_scan_seq: int, nr_threads: int) -> None:
    if not adapt.enabled:
        return
    if s["pass_seq"] != numa_scan_seq:
        k = H.popcount(s["pids_seen"])
        s["nr_hist"] = popcount_choose(adapt, k, nr_threads)
        s["pids_seen"] = [0] * len(s["pids_seen"])
        s["pass_seq"] = numa_scan_seq


def popcount_visit(adapt, s, vma_hist) -> None:
    """OR one visited VMA's whole history (a list of windows) into the mm's ``pids_seen``."""
    if not adapt.enabled:
        return
    for window in vma_hist:
        for j, word in enumerate(window):
            s["pids_seen"][j] |= word


def span_rotate(adapt, s, *, now_ms: int, reset_period_ms: int) -> None:
    if not adapt.enabled:
        return
    length = now_ms - s["last_rotate_ms"] if s["last_rotate_ms"] >= 0 else reset_period_ms
    length = min(max(length, 1), LEN_MAX_MS)
    if s["win_avg_ms"] > 0:
        avg = s["win_avg_ms"] + ((length - s["win_avg_ms"]) >> adapt.ewma_shift)
    else:
        avg = length
    s["win_avg_ms"] = min(max(avg, 1), LEN_MAX_MS)
    s["last_rotate_ms"] = now_ms
    nearest = (adapt.span_ms + s["win_avg_ms"] // 2) // s["win_avg_ms"]  # DIV_ROUND_CLOSEST
    s["nr_hist"] = min(max(nearest, adapt.n_init), adapt.n_max)  # floor: the profile's N


def visit_events(hist, idx, tid, n, rotation, width, grow_others=1) -> tuple[bool, bool]:
    """``(own_bit, others_recent)``: the scanner's bit in the newest ``n`` windows; at least
    ``grow_others`` bits of other threads in the two newest windows."""
    bit = pid_bit(tid, width)
    own = H.test_bit(H.union(hist, idx, n, rotation), bit)
    recent = H.union(hist, idx, min(2, len(hist)), rotation)
    recent[bit // 64] &= ~(1 << (bit % 64)) & H.MASK64
    return own, H.popcount(recent) >= grow_others

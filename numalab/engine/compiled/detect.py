"""Which protected regions fault this step, and who takes each fault, compiled: the first half of
:func:`numalab.engine.faults.hinting_faults` for one replica (up to ``handle_faults``).

Mirrors :mod:`numalab.engine.faults`' clocks -- :func:`~numalab.engine.faults.poisson_faults`
with :func:`~numalab.engine.faults.step_hazard` (fixed-rate touches: the hazard clock, kernel
``do_numa_page`` reached by a stack or global touch), and :func:`~numalab.engine.faults.sweep_faults`
with ``sweep_pieces``, ``_live_pieces``, ``_first_crossings``, ``_region_at``, ``_bytes_ahead`` and
``swept_protected`` (first arrival: the first writer whose sweep reaches a PROT_NONE region takes
its fault, spec §2.2) -- in the numpy engine's float operations, so bit-identical.

The numpy engine keeps the protected regions as a sorted flat index (``b.prot``); here one pass
over the replica's ``prot_none`` row runs the hazard clocks and lists the protected regions of
sweep classes (``X.sw_prot``). Most steps that list is empty and the sweeps are not looked at;
otherwise each live sweep piece finds its candidate window (``_first_crossings``' widened bounds)
and, only when the window meets the listed stretch, binary-searches the list for the regions in
it: a step costs O(NR + pieces + crossings * log(protected)).

Cost notes (numba): the sweep search reads the batch through the few arrays it needs (rows of
replica ``r``), in a small named tuple (:data:`Sweep`) rather than ``L`` / ``S`` / ``X``, and its
per-interval helper takes scalars and the three arrays it writes: a call that LLVM does not
inline costs some 10-20 ns per array it passes (measured: ~2 us for ``L``, ``S``, ``X``; by all
appearances reference counting). Only helpers of scalars are ``inline="always"``: numba's own
inlining of a function that takes arrays made the per-segment loop 100x slower.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from ...workloads import PH_INIT, PH_LOOP, REGION_BYTES
from ._nb import inner, jit

__all__ = ["detect_faults", "poisson_faults", "sweep_faults", "merge_faults", "Sweep"]

#: a region's size as the float ``_bytes_ahead`` multiplies by
RB_FLOAT = float(REGION_BYTES)

#: what the first-arrival search reads, for one replica: the sweep segments (Lay's ``seg_*``) and
#: ``phase_bytes``; each thread's sweep before the step's progress (Scr's ``running``,
#: ``phase0``, ``left0``, ``used_k`` rows) and after it (St's ``phase``, ``bytes_left``,
#: ``speed``, ``sweep_phase`` rows); the protected regions of sweep classes and their first
#: crossings (Scr's ``sw_prot``, ``sw_thread``, ``sw_when`` rows)
Sweep = namedtuple("Sweep", (
    "seg_thread", "seg_phase", "seg_lo", "seg_hi", "seg_sigma", "seg_range", "seg_region0", "seg_kfirst", "seg_klast",
    "phase_bytes", "running", "phase0", "left0", "used_k", "phase", "bytes_left", "speed", "sweep_phase",
    "sw_prot", "sw_thread", "sw_when"))


# ------------------------------------------------------------------------ numpy's scalar ufuncs
@jit(inline="always")
def _np_mod(x, y):
    """``np.mod`` of two floats as numpy computes it (npy_divmod: fmod, then the divisor's sign;
    a zero divisor gives fmod's NaN), written out rather than trusting numba's ``%`` to match."""
    mod = np.fmod(x, y)
    if y == 0.0:
        return mod
    if mod != 0.0:
        if (y < 0.0) != (mod < 0.0):
            mod += y
    else:
        mod = math.copysign(0.0, y)
    return mod


@jit(inline="always")
def _np_max(x, y):
    """``np.maximum`` of two floats (a NaN wins; equal ones give the second: max(-0.0, 0.0) is 0.0,
    max(0.0, -0.0) is -0.0, as numpy's loops)."""
    if x != x:
        return x
    if y != y:
        return y
    return x if x > y else y


@jit(inline="always")
def _np_min(x, y):
    """``np.minimum`` of two floats (a NaN wins; equal ones give the second, as numpy's loops)."""
    if x != x:
        return x
    if y != y:
        return y
    return x if x < y else y


# ------------------------------------------------------------------------ the hazard clock
@jit
def _faulting_entry(cum, a, z, target):
    """The access entry of a class (entries ``a .. z - 1``) whose cumulative-rate interval holds
    ``target``: poisson_faults' count of the positions ``a + 1 .. z - 1`` of the replica's
    ``cum`` that are ``<= target`` (numpy's searchsorted written as a count)."""
    e = a
    for pos in range(a + 1, z):
        if cum[pos] <= target:
            e += 1
    return e


@jit
def poisson_faults(region_class, cls_sweep, cls_start, cls_end, entry_thread, dt, done, prot, hazard, thresh,
                   selector, lam_c, cum, f_region, f_thread, sw_prot):
    """poisson_faults (with step_hazard) for one replica (its rows of ``S.prot_none``,
    ``S.hazard``, ``S.thresh``, ``S.selector``, ``S.lam_c``, ``S.cum``, ``X.f_region``,
    ``X.f_thread``, ``X.sw_prot``; ``done`` its ``S.done``): every protected region adds its step
    hazard ``where(sweep class, 0.0, lambda_c) * dt`` (finished replicas too) and faults when the
    hazard reaches its Exp(1) threshold, its step hazard is positive and the replica is not done;
    the faulting thread is the entry where ``cum[start] + selector * lambda_c`` falls. Writes the
    faults, in region order, to ``f_region`` / ``f_thread`` (and clears their ``prot_none``) and
    the protected regions of sweep classes, in region order, to ``sw_prot`` (swept_protected).
    Returns (faults, protected regions of sweep classes)."""
    nf = 0
    nsw = 0
    for q in range(prot.shape[0]):
        if not prot[q]:
            continue
        c = region_class[q]
        if cls_sweep[c]:
            sh = 0.0 * dt                         # a sweep class has no hazard (sweep_faults)
            sw_prot[nsw] = q
            nsw += 1
        else:
            sh = lam_c[c] * dt
        h = hazard[q] + sh
        hazard[q] = h
        if h >= thresh[q] and sh > 0 and not done:
            target = cum[cls_start[c]] + selector[q] * lam_c[c]
            f_region[nf] = q
            f_thread[nf] = entry_thread[_faulting_entry(cum, cls_start[c], cls_end[c], target)]
            nf += 1
            prot[q] = False
    return nf, nsw


# ------------------------------------------------------------------------ first arrival
@inner
def sweep_view(L, S, X, r):
    """The :data:`Sweep` of replica ``r``."""
    return Sweep(L.seg_thread, L.seg_phase, L.seg_lo, L.seg_hi, L.seg_sigma, L.seg_range, L.seg_region0,
                 L.seg_kfirst, L.seg_klast, L.phase_bytes, X.running[r], X.phase0[r], X.left0[r], X.used_k[r],
                 S.phase[r], S.bytes_left[r], S.speed[r], S.sweep_phase[r], X.sw_prot[r], X.sw_thread[r],
                 X.sw_when[r])


@jit
def _position(pb, t, phase, left, sweep_phase):
    """_position: bytes of the phase written so far, plus the sweep phase in a loop."""
    pbt = pb[t, 0] if phase == PH_INIT else pb[t, 1]
    return (pbt - left) + (sweep_phase if phase == PH_LOOP else 0.0)


@jit
def _piece(W, s):
    """sweep_pieces + _live_pieces for segment ``s``: the piece of the segment's phase its thread
    wrote this step, as (position ``x``, start ``tau`` s into the step, bytes ``w``; ``w = 0.0``:
    none). Piece a is the phase the thread started the step in (from where it stood, after the
    kernel time it owed); piece b the start of its loop when its init ended in the step (from
    the sweep phase, once the init's bytes were written)."""
    t = W.seg_thread[s]
    ph0 = W.phase0[t]
    left0 = W.left0[t]
    ph1 = W.phase[t]
    left1 = W.bytes_left[t]
    if not (W.running[t] and (ph0 == PH_INIT or ph0 == PH_LOOP)):     # not writing
        return 0.0, 0.0, 0.0
    if ph0 == W.seg_phase[s]:
        w = left0 - left1 if ph1 == ph0 else _np_max(left0, 0.0)
        return _position(W.phase_bytes, t, ph0, left0, W.sweep_phase[t]), W.used_k[t], w
    if W.seg_phase[s] == PH_LOOP and ph0 == PH_INIT and ph1 == PH_LOOP:
        w_b = W.phase_bytes[t, 1] - left1
        if w_b > 0:
            tau_b = W.used_k[t] + _np_max(left0, 0.0) / _np_max(W.speed[t], 1e-30)
            return W.sweep_phase[t], tau_b, w_b
    return 0.0, 0.0, 0.0


@jit(inline="always")
def _region_at(xx, sig, lo, kf):
    """_region_at: the first region of a segment whose crossing position is >= ``xx``, widened
    by one (the ceil may be one region off either way)."""
    if xx <= sig:
        return kf
    k = np.int64(np.ceil((xx - sig + lo) / REGION_BYTES))
    return max(kf + 1, k)


@jit
def _lower_bound(a, n, key):
    """np.searchsorted(a[:n], key) (side left) of a sorted int array."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@jit(inline="always")
def _window(u, v, sig, lo, kf, kl):
    """_first_crossings' candidate regions ``k0 .. k1 - 1`` of a segment (``seg_sigma`` ``sig``,
    ``seg_lo`` ``lo``, ``seg_kfirst`` / ``seg_klast`` ``kf`` / ``kl``) for the swept interval
    ``[u, v)``, widened by one region either way; ``k1 <= k0`` when the interval holds none."""
    k0 = max(_region_at(u, sig, lo, kf) - 1, kf)
    k1 = min(_region_at(v, sig, lo, kf) + 1, kl + 1)
    if not u < v:
        k1 = k0
    return k0, k1


@jit
def _cross_interval(sw_prot, sw_thread, sw_when, nsw, lo_q, hi_q, a, w, tau, t, speed, sig, lo, r0, rng):
    """_first_crossings for the candidate regions ``lo_q .. hi_q - 1`` of one swept interval of
    a segment (``seg_sigma`` ``sig``, ``seg_lo`` ``lo``, ``seg_region0`` ``r0``, ``seg_range``
    ``rng``) by thread ``t``'s piece (from position ``a`` mod the range, ``w`` bytes, from
    ``tau`` s, at ``speed`` floored at 1e-30): the protected regions of sweep classes among them
    (``sw_prot[:nsw]``) that the piece reaches (``_bytes_ahead`` ``d < w``), each kept for the
    piece if it arrives first (earlier ``tau + d / speed``; ties: the lower thread)."""
    i = _lower_bound(sw_prot, nsw, lo_q)
    while i < nsw and sw_prot[i] < hi_q:
        p = sig + _np_max(0.0, (sw_prot[i] - r0) * RB_FLOAT - lo)    # _bytes_ahead
        d = _np_mod(p - a, rng)
        if d < w:
            when = tau + d / speed
            bt, bw = sw_thread[i], sw_when[i]
            # lexsort((thread, when, q)): the least when, then the least thread (NaN last)
            if bt < 0 or when < bw or (when == bw and t < bt) or (bw != bw and (when == when or t < bt)):
                sw_thread[i] = t
                sw_when[i] = when
        i += 1


@jit(inline="always")
def _swept(a, w, rng, sig, end):
    """_first_crossings' swept positions ``[a, a + w)`` mod the range, cut to the segment
    ``[sig, end)``: ``(u, v, v2)``, the intervals ``[u, v)`` and, where the piece passed the end
    of its range, ``[sig, v2)`` (empty unless ``sig < v2``); all of it when ``w >= range``."""
    if w >= rng:
        return sig, end, sig
    return _np_max(a, sig), _np_min(a + w, end), _np_min(a + w - rng, end)


@jit
def sweep_faults(W, nsw, done):
    """sweep_faults for one replica (its :data:`Sweep` ``W``; ``nsw`` protected regions of sweep
    classes listed in ``W.sw_prot``): ``W.sw_thread[i]`` is the thread whose sweep crossed the
    i-th first this step, -1 if none. A finished replica's threads do not run (no pieces).
    The loop body is _first_crossings for each live piece."""
    for i in range(nsw):
        W.sw_thread[i] = -1
    if nsw == 0 or done:
        return
    first, last = W.sw_prot[0], W.sw_prot[nsw - 1]
    for s in range(W.seg_thread.shape[0]):
        x, tau, w = _piece(W, s)
        if not w > 0:
            continue
        rng, sig, lo = W.seg_range[s], W.seg_sigma[s], W.seg_lo[s]
        a = _np_mod(x, rng)
        u, v, v2 = _swept(a, w, rng, sig, sig + (W.seg_hi[s] - lo))
        kf, kl, r0 = W.seg_kfirst[s], W.seg_klast[s], W.seg_region0[s]
        k0, k1 = _window(u, v, sig, lo, kf, kl)
        k0b, k1b = _window(sig, v2, sig, lo, kf, kl)
        # a piece goes on only if a window meets the protected stretch (most do not: a scan
        # protects one stretch of the buffer), and its helper takes the three arrays it writes,
        # not W: a call that is not inlined costs per array passed (module docstring)
        t = W.seg_thread[s]
        speed = _np_max(W.speed[t], 1e-30)
        if k1 > k0 and r0 + k1 > first and r0 + k0 <= last:
            _cross_interval(W.sw_prot, W.sw_thread, W.sw_when, nsw, r0 + k0, r0 + k1, a, w, tau, t, speed, sig, lo,
                            r0, rng)
        if k1b > k0b and r0 + k1b > first and r0 + k0b <= last:
            _cross_interval(W.sw_prot, W.sw_thread, W.sw_when, nsw, r0 + k0b, r0 + k1b, a, w, tau, t, speed, sig, lo,
                            r0, rng)


@jit
def merge_faults(prot, f_region, f_thread, sw_prot, sw_thread, nf, nsw):
    """hinting_faults' merge, for one replica's rows: the Poisson faults (``f_region[:nf]``) and
    the sweep faults (``sw_thread >= 0``), both in region order and disjoint, into one list in
    region order (filled from the back, so the Poisson faults at its front are read before they
    are overwritten); the sweep faults' ``prot_none`` cleared. Returns how many."""
    ns = 0
    for i in range(nsw):
        if sw_thread[i] >= 0:
            ns += 1
    n = nf + ns
    i, j, o = nf - 1, nsw - 1, n - 1
    while j >= 0:
        if sw_thread[j] < 0:
            j -= 1
            continue
        q = sw_prot[j]
        if i >= 0 and f_region[i] > q:
            f_region[o] = f_region[i]
            f_thread[o] = f_thread[i]
            i -= 1
        else:
            f_region[o] = q
            f_thread[o] = sw_thread[j]
            prot[q] = False
            j -= 1
        o -= 1
    return n


@inner
def detect_faults(L, Q, S, X, r, k):
    """hinting_faults up to handle_faults, for replica ``r`` in step ``k``: the hazard clocks
    (poisson_faults), first arrival on the protected regions of sweep classes (sweep_faults),
    the faults of both merged in region order with their ``prot_none`` cleared:
    ``X.f_region[r, :n]``, ``X.f_thread[r, :n]``, ``X.nfaults[r] = n``."""
    # (the helpers take the replica's rows: a call that is not inlined and passes L, S and X
    # costs ~2 us)
    nf, nsw = poisson_faults(L.region_class, L.cls_sweep, L.cls_start, L.cls_end, L.entry_thread, L.dt, S.done[r],
                             S.prot_none[r], S.hazard[r], S.thresh[r], S.selector[r], S.lam_c[r], S.cum[r],
                             X.f_region[r], X.f_thread[r], X.sw_prot[r])
    if nsw:
        sweep_faults(sweep_view(L, S, X, r), nsw, S.done[r])
        nf = merge_faults(S.prot_none[r], X.f_region[r], X.f_thread[r], X.sw_prot[r], X.sw_thread[r], nf, nsw)
    X.nfaults[r] = nf

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
otherwise each live sweep piece binary-searches the list for the regions of its swept window
(``_first_crossings``' candidates), so a step costs O(NR + pieces * log(protected)).
"""

from __future__ import annotations

import math

import numpy as np

from ...workloads import PH_INIT, PH_LOOP, REGION_BYTES
from ._nb import jit

__all__ = ["detect_faults", "poisson_faults", "sweep_faults", "merge_faults"]

#: a region's size as the float ``_bytes_ahead`` multiplies by
RB_FLOAT = float(REGION_BYTES)


# ------------------------------------------------------------------------ numpy's scalar ufuncs
@jit(inline="always")
def _np_mod(x, y):
    """``np.mod`` of two floats (npy_divmod: fmod, then the divisor's sign; a zero divisor gives
    fmod's NaN) -- numpy's rounding, not Python's ``%`` by assumption."""
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
def _faulting_entry(L, S, r, c, target):
    """The access entry of class ``c`` whose cumulative-rate interval holds ``target``:
    poisson_faults' count of the class's positions ``cls_start + 1 .. cls_end - 1`` of ``cum``
    that are ``<= target`` (numpy's searchsorted written as a count)."""
    a = L.cls_start[c]
    e = a
    for pos in range(a + 1, L.cls_end[c]):
        if S.cum[r, pos] <= target:
            e += 1
    return e


@jit
def poisson_faults(L, S, X, r):
    """poisson_faults (with step_hazard) for replica ``r``: every protected region adds its step
    hazard ``where(sweep class, 0.0, lambda_c) * dt`` (finished replicas too) and faults when the
    hazard reaches its Exp(1) threshold, its step hazard is positive and the replica is not done;
    the faulting thread is the entry where ``cum[start] + selector * lambda_c`` falls. Writes the
    faults, in region order, to ``X.f_region[r]`` / ``X.f_thread[r]`` (and clears their
    ``prot_none``) and the protected regions of sweep classes to ``X.sw_prot[r]``
    (swept_protected). Returns (faults, protected regions of sweep classes)."""
    dt = L.dt
    done = S.done[r]
    nf = 0
    nsw = 0
    prot = S.prot_none[r]
    for q in range(L.NR):
        if not prot[q]:
            continue
        c = L.region_class[q]
        if L.cls_sweep[c]:
            sh = 0.0 * dt                         # a sweep class has no hazard (sweep_faults)
            X.sw_prot[r, nsw] = q
            nsw += 1
        else:
            sh = S.lam_c[r, c] * dt
        h = S.hazard[r, q] + sh
        S.hazard[r, q] = h
        if h >= S.thresh[r, q] and sh > 0 and not done:
            lam = S.lam_c[r, c]
            target = S.cum[r, L.cls_start[c]] + S.selector[r, q] * lam
            X.f_region[r, nf] = q
            X.f_thread[r, nf] = L.entry_thread[_faulting_entry(L, S, r, c, target)]
            nf += 1
            prot[q] = False
    return nf, nsw


# ------------------------------------------------------------------------ first arrival
@jit(inline="always")
def _position(L, t, phase, left, sweep_phase):
    """_position: bytes of the phase written so far, plus the sweep phase in a loop."""
    pbt = L.phase_bytes[t, 0] if phase == PH_INIT else L.phase_bytes[t, 1]
    return (pbt - left) + (sweep_phase if phase == PH_LOOP else 0.0)


@jit
def _piece(L, S, X, r, s):
    """sweep_pieces + _live_pieces for segment ``s`` of replica ``r``: the piece of the
    segment's phase its thread wrote this step, as (position ``x``, start ``tau`` s into the step,
    bytes ``w``; ``w = 0.0``: none). Piece a is the phase the thread started the step in (from
    where it stood, after the kernel time it owed); piece b the start of its loop when its init
    ended in the step (from the sweep phase, once the init's bytes were written)."""
    t = L.seg_thread[s]
    ph0 = X.phase0[r, t]
    left0 = X.left0[r, t]
    ph1 = S.phase[r, t]
    left1 = S.bytes_left[r, t]
    writing = X.running[r, t] and (ph0 == PH_INIT or ph0 == PH_LOOP)
    if not writing:
        return 0.0, 0.0, 0.0
    if ph0 == L.seg_phase[s]:
        w = left0 - left1 if ph1 == ph0 else _np_max(left0, 0.0)
        return _position(L, t, ph0, left0, S.sweep_phase[r, t]), X.used_k[r, t], w
    if L.seg_phase[s] == PH_LOOP and ph0 == PH_INIT and ph1 == PH_LOOP:
        w_b = L.phase_bytes[t, 1] - left1
        if w_b > 0:
            tau_b = X.used_k[r, t] + _np_max(left0, 0.0) / _np_max(S.speed[r, t], 1e-30)
            return S.sweep_phase[r, t], tau_b, w_b
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


@jit
def _cross_interval(L, S, X, r, s, u, v, a, w, tau, nsw):
    """_first_crossings for one swept interval ``[u, v)`` of segment ``s`` (a piece from
    position ``a`` mod its range, ``w`` bytes, from ``tau``): the protected regions of sweep
    classes between its widened bounds that the piece reaches (``_bytes_ahead`` ``d < w``), each
    kept for the piece if it arrives first (earlier ``tau + d / speed``; ties: lower thread)."""
    sig, lo = L.seg_sigma[s], L.seg_lo[s]
    kf, kl = L.seg_kfirst[s], L.seg_klast[s]
    k0 = max(_region_at(u, sig, lo, kf) - 1, kf)
    k1 = min(_region_at(v, sig, lo, kf) + 1, kl + 1)
    if not (u < v and k1 > k0):
        return
    r0 = L.seg_region0[s]
    rng = L.seg_range[s]
    t = L.seg_thread[s]
    speed = _np_max(S.speed[r, t], 1e-30)
    i = _lower_bound(X.sw_prot[r], nsw, r0 + k0)
    while i < nsw and X.sw_prot[r, i] < r0 + k1:
        k = X.sw_prot[r, i] - r0
        p = sig + _np_max(0.0, k * RB_FLOAT - lo)        # _bytes_ahead
        d = _np_mod(p - a, rng)
        if d < w:
            when = tau + d / speed
            bt = X.sw_thread[r, i]
            bw = X.sw_when[r, i]
            # lexsort((thread, when, q)): the least when, then the least thread (NaN last)
            if bt < 0 or when < bw or (when == bw and t < bt) or (bw != bw and (when == when or t < bt)):
                X.sw_thread[r, i] = t
                X.sw_when[r, i] = when
        i += 1


@jit
def _first_crossings(L, S, X, r, s, x, tau, w, nsw):
    """_first_crossings for the piece of segment ``s``: its swept positions ``[a, a + w)`` mod
    the range, cut to the segment -- two intervals at most, the second ``[sigma, v2)`` only where
    the piece passed the end of its range (all of it when ``w >= range``)."""
    rng = L.seg_range[s]
    a = _np_mod(x, rng)
    sig = L.seg_sigma[s]
    end = sig + (L.seg_hi[s] - L.seg_lo[s])
    if w >= rng:
        u, v, v2 = sig, end, sig
    else:
        u, v, v2 = _np_max(a, sig), _np_min(a + w, end), _np_min(a + w - rng, end)
    _cross_interval(L, S, X, r, s, u, v, a, w, tau, nsw)
    if sig < v2:
        _cross_interval(L, S, X, r, s, sig, v2, a, w, tau, nsw)


@jit
def sweep_faults(L, S, X, r, nsw):
    """sweep_faults for replica ``r`` (``nsw`` protected regions of sweep classes listed in
    ``X.sw_prot[r]``): ``X.sw_thread[r, i]`` is the thread whose sweep crossed the i-th first this
    step, -1 if none. A finished replica's threads do not run (no pieces)."""
    for i in range(nsw):
        X.sw_thread[r, i] = -1
    if nsw == 0 or S.done[r]:
        return
    for s in range(L.S):
        x, tau, w = _piece(L, S, X, r, s)
        if w > 0:
            _first_crossings(L, S, X, r, s, x, tau, w, nsw)


@jit
def merge_faults(S, X, r, nf, nsw):
    """hinting_faults' merge: the Poisson faults (``X.f_region[r, :nf]``) and the sweep faults
    (``X.sw_thread[r] >= 0``), both in region order and disjoint, into one list in region order
    (filled from the back, so the Poisson faults at its front are read before overwritten); the
    sweep faults' ``prot_none`` cleared. Returns how many."""
    ns = 0
    for i in range(nsw):
        if X.sw_thread[r, i] >= 0:
            ns += 1
    n = nf + ns
    i, j, o = nf - 1, nsw - 1, n - 1
    while j >= 0:
        if X.sw_thread[r, j] < 0:
            j -= 1
            continue
        q = X.sw_prot[r, j]
        if i >= 0 and X.f_region[r, i] > q:
            X.f_region[r, o] = X.f_region[r, i]
            X.f_thread[r, o] = X.f_thread[r, i]
            i -= 1
        else:
            X.f_region[r, o] = q
            X.f_thread[r, o] = X.sw_thread[r, j]
            S.prot_none[r, q] = False
            j -= 1
        o -= 1
    return n


@jit
def detect_faults(L, Q, S, X, r, k):
    """hinting_faults up to handle_faults, for replica ``r`` in step ``k``: the hazard clocks
    (poisson_faults), first arrival on the protected regions of sweep classes (sweep_faults),
    the faults of both merged in region order with their ``prot_none`` cleared:
    ``X.f_region[r, :n]``, ``X.f_thread[r, :n]``, ``X.nfaults[r] = n``."""
    nf, nsw = poisson_faults(L, S, X, r)
    if nsw:
        sweep_faults(L, S, X, r, nsw)
        nf = merge_faults(S, X, r, nf, nsw)
    X.nfaults[r] = nf

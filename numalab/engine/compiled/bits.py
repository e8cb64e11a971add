"""Bitmap primitives of the compiled engine's PID windows: ``bitmap_weight`` of one word and
which windows are among the newest ``n`` (:func:`numalab.history.newest_mask`) and whether the
scanner's bit is in their OR, shared by the decision (:mod:`.decide`) and the adaptive history
(:mod:`.adapt`)."""

from __future__ import annotations

import numpy as np

from ._nb import inner, jit

__all__ = ["popcount", "in_union", "union_has", "U0"]

# popcount (bitmap_weight) by SWAR, every operand uint64 (a uint64 op an int64 is a float64 in numba)
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_U1, _U2, _U4, _U56 = np.uint64(1), np.uint64(2), np.uint64(4), np.uint64(56)
#: an empty word
U0 = np.uint64(0)


@jit
def popcount(x):
    """``bitmap_weight`` of one uint64 word (np.bitwise_count), as an int."""
    x = x - ((x >> _U1) & _M1)
    x = (x & _M2) + ((x >> _U2) & _M2)
    x = (x + (x >> _U4)) & _M4
    return np.int64((x * _H01) >> _U56)


@inner
def in_union(Q, pidx, w, n):
    """Window ``w`` of a VMA (ring index ``pidx``) is among its newest ``n``
    (history.newest_mask: age ``W - 1 - w`` for "shift", ``(idx - w) mod W`` for "ring");
    ``n >= W``: every window."""
    if n >= Q.windows:
        return True
    if Q.ring:
        return (pidx - w) % Q.windows < n
    return Q.windows - 1 - w < n


@inner
def union_has(Q, pids, pidx, wa, word, mask):
    """ScanView.own_pid: the scanner's bit (its ``word``, ``mask``) in the OR of the newest
    ``wa`` windows (:func:`.decide.union_weight`; :func:`in_union`)."""
    u = U0
    for w in range(Q.windows):
        if in_union(Q, pidx, w, wa):
            u |= pids[w, word]
    return (u & mask) != U0

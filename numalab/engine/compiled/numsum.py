"""numpy's float sums, operation for operation, for the compiled engine.

A float sum depends on the order of its additions. The numpy engine sums with numpy's own
reductions, so the compiled engine must add in numpy's order (measured on numpy 2.x, and held to
it by ``tests/test_compiled_numsum.py``):

* over the **last (contiguous) axis** -- ``a.sum(axis=-1)``, ``np.sum(vector)`` --
  :func:`psum`: ``0.0 +`` numpy's pairwise sum (blocks of at most 128 elements summed with eight
  interleaved accumulators, longer runs split in two at a multiple of 8; fewer than 8 elements
  added one by one);
* over **another axis** -- ``a.sum(axis=0)`` of a 2-D array, ``(R, T, N).sum(axis=1)`` --
  :func:`seqsum`: the first element, then the others added in order;
* ``np.cumsum``, ``np.bincount`` (per bin) and ``np.add.at`` add in order from 0.0: a plain loop.

Integer sums are exact in any order.
"""

from __future__ import annotations

import numpy as np

from ._nb import jit

__all__ = ["pairwise", "psum", "seqsum"]

PW_BLOCKSIZE = 128


@jit
def _block(a, lo, n):
    """numpy's pairwise sum of a run of at most 128 elements: eight interleaved accumulators
    (one by one below 8 elements)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    stop = n - (n % 8)
    while i < stop:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@jit
def pairwise(a, lo, n):
    """numpy's ``pairwise_sum`` of ``a[lo:lo + n]`` (1-D float array, any stride): runs longer
    than 128 split in two at a multiple of 8, each half summed the same way. Written as a
    post-order walk of that split tree on an explicit stack, not as numpy's recursion: numba's
    on-disk cache cannot reload a recursive function (numba issues #6061, #9129)."""
    if n <= PW_BLOCKSIZE:
        return _block(a, lo, n)
    st_lo = np.empty(64, np.int64)
    st_n = np.empty(64, np.int64)
    st_state = np.empty(64, np.int64)
    left = np.empty(64)                 # the left half's sum of each open split
    sp = 0
    st_lo[0], st_n[0], st_state[0] = lo, n, 0
    res = 0.0
    while sp >= 0:
        nlo, nn, state = st_lo[sp], st_n[sp], st_state[sp]
        if nn <= PW_BLOCKSIZE:
            res = _block(a, nlo, nn)
            sp -= 1
            continue
        n2 = nn // 2
        n2 -= n2 % 8
        if state == 0:                  # descend into the left half
            st_state[sp] = 1
            sp += 1
            st_lo[sp], st_n[sp], st_state[sp] = nlo, n2, 0
        elif state == 1:                # left half done: descend into the right half
            left[sp] = res
            st_state[sp] = 2
            sp += 1
            st_lo[sp], st_n[sp], st_state[sp] = nlo + n2, nn - n2, 0
        else:                           # both halves done
            res = left[sp] + res
            sp -= 1
    return res


@jit
def psum(a):
    """``np.sum`` of a 1-D float array (or ``x.sum(axis=-1)`` of one row): ``0.0 + pairwise``."""
    return 0.0 + pairwise(a, 0, a.shape[0])


@jit
def seqsum(a):
    """numpy's sum of a 1-D float array that is a non-last axis of the summed array
    (``x.sum(axis=0)`` of a 2-D ``x``, column by column): first element, then in order."""
    n = a.shape[0]
    if n == 0:
        return 0.0
    res = a[0]
    for i in range(1, n):
        res += a[i]
    return res

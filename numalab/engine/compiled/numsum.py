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

from ._nb import jit

__all__ = ["pairwise", "psum", "seqsum"]

PW_BLOCKSIZE = 128


@jit
def pairwise(a, lo, n):
    """numpy's ``pairwise_sum`` of ``a[lo:lo + n]`` (1-D float array, any stride)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    if n <= PW_BLOCKSIZE:
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
    n2 = n // 2
    n2 -= n2 % 8
    return pairwise(a, lo, n2) + pairwise(a, lo + n2, n - n2)


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

"""Kernel hash functions, vectorised over numpy arrays of ``uint32``.

* :func:`hash_32` -- Fibonacci hashing, ``include/linux/hash.h`` ``hash_32(val, bits)``: multiply
  by ``GOLDEN_RATIO_32`` modulo 2**32 and keep the top ``bits`` bits. NUMA balancing uses it to
  map a thread id to a bit of ``vma->numab_state->pids_active[]`` (``vma_set_access_pid_bit``).
* :func:`pid_bit` -- that bit number, for a 64-bit map (mainline, ``hash_32(tid, 6)``) or the
  128-bit map of the 2024 RFC "Increase the VMA accessing PID bits" (``hash_32(tid, 7)``).
* :func:`jhash2` -- Bob Jenkins' lookup3 ``hashword()``, which the kernel ships as ``jhash2()``
  (``include/linux/jhash.h``) and uses to hash futex keys (``kernel/futex/core.c``).

All arithmetic is done on ``uint32`` arrays, where numpy wraps modulo 2**32 exactly like C's
``u32``. We keep every intermediate an array of at least one dimension: numpy *scalars* warn on
overflow, arrays do not.
"""

from __future__ import annotations

import numpy as np

from .errors import NumalabValueError, check_int, check_uint32_array

__all__ = ["GOLDEN_RATIO_32", "JHASH_INITVAL", "hash_32", "pid_bit", "jhash2"]

#: ``include/linux/hash.h``: 2**32 / phi, the multiplier of Fibonacci hashing.
GOLDEN_RATIO_32 = 0x61C88647
#: ``include/linux/jhash.h``: the arbitrary initial value lookup3 starts a, b, c from.
JHASH_INITVAL = 0xDEADBEEF

_U32 = np.uint32


def hash_32(values, bits: int) -> np.ndarray:
    """Fibonacci hash of ``values`` to ``bits`` bits (kernel ``hash_32``).

    Parameters
    ----------
    values : array_like of int in [0, 2**32)
        The keys (thread ids for the access-PID map).
    bits : int in [1, 32]
        Width of the result; the result lies in ``[0, 2**bits)``.

    Returns
    -------
    numpy.ndarray of uint32, same shape as ``values``:
    ``((values * 0x61C88647) mod 2**32) >> (32 - bits)``.
    """
    bits = check_int("bits", bits, lo=1, hi=32)
    arr = check_uint32_array("values", values)
    flat = np.atleast_1d(arr)
    out = np.multiply(flat, _U32(GOLDEN_RATIO_32), dtype=_U32)  # wraps modulo 2**32, like u32
    out >>= _U32(32 - bits)
    return out.reshape(arr.shape)


def pid_bit(tid, width: int = 64) -> np.ndarray:
    """Bit number of thread id ``tid`` in a ``width``-bit access-PID map.

    Mainline (v6.4+, commit d46031f40e0f) uses ``hash_32(tid, ilog2(BITS_PER_LONG))`` = 6 bits;
    the 2024 RFC "Increase the VMA accessing PID bits" uses 128 bits (``hash_32(tid, 7)``;
    word ``bit // 64``, bit ``bit % 64``).

    Returns an int64 array of the same shape as ``tid`` with values in ``[0, width)``.
    """
    if isinstance(width, bool) or width not in (64, 128):
        raise NumalabValueError(f"width={width!r} is not supported; allowed: 64 (mainline), 128 (RFC 2024)")
    bits = 6 if width == 64 else 7
    return hash_32(check_uint32_array("tid", tid), bits).astype(np.int64)


def _rot(x: np.ndarray, k: int) -> np.ndarray:
    """32-bit rotate left (lookup3 ``rot``; kernel ``rol32``)."""
    return (x << _U32(k)) | (x >> _U32(32 - k))


def _mix(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """lookup3 ``mix(a,b,c)`` (kernel ``__jhash_mix``), in place on uint32 arrays."""
    a -= c; a ^= _rot(c, 4); c += b  # noqa: E702 -- one line per lookup3 line reads best
    b -= a; b ^= _rot(a, 6); a += c  # noqa: E702
    c -= b; c ^= _rot(b, 8); b += a  # noqa: E702
    a -= c; a ^= _rot(c, 16); c += b  # noqa: E702
    b -= a; b ^= _rot(a, 19); a += c  # noqa: E702
    c -= b; c ^= _rot(b, 4); b += a  # noqa: E702


def _final(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """lookup3 ``final(a,b,c)`` (kernel ``__jhash_final``), in place on uint32 arrays."""
    c ^= b; c -= _rot(b, 14)  # noqa: E702
    a ^= c; a -= _rot(c, 11)  # noqa: E702
    b ^= a; b -= _rot(a, 25)  # noqa: E702
    c ^= b; c -= _rot(b, 16)  # noqa: E702
    a ^= c; a -= _rot(c, 4)  # noqa: E702
    b ^= a; b -= _rot(a, 14)  # noqa: E702
    c ^= b; c -= _rot(b, 24)  # noqa: E702


def jhash2(keys, initval=0) -> np.ndarray:
    """Bob Jenkins' lookup3 ``hashword()`` (kernel ``jhash2``) over the last axis of ``keys``.

    Parameters
    ----------
    keys : array_like of uint32, shape (..., n)
        Each row of ``n`` 32-bit words is one key (a futex key is 4 words in the kernel).
    initval : int or array_like of uint32, broadcastable to ``keys.shape[:-1]``
        The seed (the futex code passes the key's offset word).

    Returns
    -------
    numpy.ndarray of uint32 with shape ``keys.shape[:-1]``.

    Notes
    -----
    ``a = b = c = 0xdeadbeef + (n << 2) + initval``; while more than 3 words remain, add three
    words to a, b, c and ``mix``; add the last 1-3 words and ``final``; ``n == 0`` returns c
    unmixed. On little-endian machines this equals ``hashlittle()`` of the same bytes.
    """
    k = check_uint32_array("keys", keys)
    if k.ndim < 1:
        raise NumalabValueError(
            f"keys has shape {k.shape}; allowed: an array of shape (..., n) with the words on the last axis"
        )
    lead, n = k.shape[:-1], k.shape[-1]
    iv = check_uint32_array("initval", initval)
    try:
        iv = np.broadcast_to(iv, lead)
    except ValueError:
        raise NumalabValueError(
            f"initval has shape {iv.shape}; allowed: a scalar or a shape broadcastable to "
            f"keys.shape[:-1] = {lead}"
        ) from None
    rows = k.reshape(int(np.prod(lead, dtype=np.int64)), n)  # flattening keeps every intermediate a 1-d array (no scalar warnings)
    start = (JHASH_INITVAL + ((n << 2) & 0xFFFFFFFF)) & 0xFFFFFFFF
    a = np.add(iv.reshape(-1), _U32(start), dtype=_U32)
    if a.shape[0] != rows.shape[0]:  # lead has a zero-length axis
        a = np.broadcast_to(a, (rows.shape[0],)).copy()
    b = a.copy()
    c = a.copy()
    i = 0
    while n - i > 3:
        a += rows[:, i]
        b += rows[:, i + 1]
        c += rows[:, i + 2]
        _mix(a, b, c)
        i += 3
    rest = n - i
    if rest:  # the kernel's switch falls through 3 -> 2 -> 1, then final
        if rest == 3:
            c += rows[:, i + 2]
        if rest >= 2:
            b += rows[:, i + 1]
        a += rows[:, i]
        _final(a, b, c)
    return c.reshape(lead)

"""Scalar reference hashes: one Python int at a time, masked to 32 bits by hand.

Test oracle for :mod:`numalab.hashing`; deliberately imports nothing from it.

* ``hash_32`` -- ``include/linux/hash.h``.
* ``hashword`` / ``hashlittle`` / ``hashlittle2`` -- Bob Jenkins' lookup3.c (May 2006, public
  domain), rewritten from its description; the kernel's ``jhash2`` is ``hashword``.
"""

from __future__ import annotations

GOLDEN_RATIO_32 = 0x61C88647
MASK32 = 0xFFFFFFFF


def hash_32(val: int, bits: int) -> int:
    """``(val * GOLDEN_RATIO_32) mod 2**32``, then keep the top ``bits`` bits."""
    product = (val * GOLDEN_RATIO_32) & MASK32
    return product >> (32 - bits)


def pid_bit(tid: int, width: int = 64) -> int:
    """Bit of ``tid`` in a ``width``-bit access-PID map: ``hash_32(tid, ilog2(width))``."""
    return hash_32(tid, width.bit_length() - 1)


def rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & MASK32


def mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    a = (a - c) & MASK32; a ^= rot(c, 4);  c = (c + b) & MASK32  # noqa: E702
    b = (b - a) & MASK32; b ^= rot(a, 6);  a = (a + c) & MASK32  # noqa: E702
    c = (c - b) & MASK32; c ^= rot(b, 8);  b = (b + a) & MASK32  # noqa: E702
    a = (a - c) & MASK32; a ^= rot(c, 16); c = (c + b) & MASK32  # noqa: E702
    b = (b - a) & MASK32; b ^= rot(a, 19); a = (a + c) & MASK32  # noqa: E702
    c = (c - b) & MASK32; c ^= rot(b, 4);  b = (b + a) & MASK32  # noqa: E702
    return a, b, c


def final(a: int, b: int, c: int) -> tuple[int, int, int]:
    c ^= b; c = (c - rot(b, 14)) & MASK32  # noqa: E702
    a ^= c; a = (a - rot(c, 11)) & MASK32  # noqa: E702
    b ^= a; b = (b - rot(a, 25)) & MASK32  # noqa: E702
    c ^= b; c = (c - rot(b, 16)) & MASK32  # noqa: E702
    a ^= c; a = (a - rot(c, 4)) & MASK32  # noqa: E702
    b ^= a; b = (b - rot(a, 14)) & MASK32  # noqa: E702
    c ^= b; c = (c - rot(b, 24)) & MASK32  # noqa: E702
    return a, b, c


def hashword(k: list[int], initval: int = 0) -> int:
    """lookup3 ``hashword(k, length, initval)``: ``k`` is a list of 32-bit words."""
    length = len(k)
    a = b = c = (0xDEADBEEF + (length << 2) + initval) & MASK32
    i = 0
    while length > 3:
        a = (a + k[i]) & MASK32
        b = (b + k[i + 1]) & MASK32
        c = (c + k[i + 2]) & MASK32
        a, b, c = mix(a, b, c)
        length -= 3
        i += 3
    if length == 0:  # nothing left: return c without the final mix
        return c
    if length == 3:
        c = (c + k[i + 2]) & MASK32
    if length >= 2:
        b = (b + k[i + 1]) & MASK32
    a = (a + k[i]) & MASK32
    a, b, c = final(a, b, c)
    return c


def hashlittle2(key: bytes, pc: int = 0, pb: int = 0) -> tuple[int, int]:
    """lookup3 ``hashlittle2``: byte string, two seeds in, ``(c, b)`` out.

    Reads the bytes little-endian one at a time (lookup3's portable path), so it does not
    depend on the host's byte order."""
    length = len(key)
    a = b = c = (0xDEADBEEF + length + pc) & MASK32
    c = (c + pb) & MASK32
    pos = 0

    def word(p: int, n: int = 4) -> int:  # n little-endian bytes from p
        return sum(key[p + j] << (8 * j) for j in range(n))

    while length > 12:
        a = (a + word(pos)) & MASK32
        b = (b + word(pos + 4)) & MASK32
        c = (c + word(pos + 8)) & MASK32
        a, b, c = mix(a, b, c)
        length -= 12
        pos += 12
    if length == 0:  # lookup3: zero-length tails need no mixing
        return c, b
    # the last 1..12 bytes: c takes bytes 8..11, b bytes 4..7, a bytes 0..3 (partial words)
    if length > 8:
        c = (c + word(pos + 8, length - 8)) & MASK32
    if length > 4:
        b = (b + word(pos + 4, min(length, 8) - 4)) & MASK32
    a = (a + word(pos, min(length, 4))) & MASK32
    a, b, c = final(a, b, c)
    return c, b


def hashlittle(key: bytes, initval: int = 0) -> int:
    """lookup3 ``hashlittle(key, length, initval)``."""
    return hashlittle2(key, initval, 0)[0]


def jhash2(k: list[int], initval: int = 0) -> int:
    """Kernel ``jhash2(k, length, initval)`` = lookup3 ``hashword``."""
    return hashword(k, initval)

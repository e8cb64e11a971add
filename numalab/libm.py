"""Elementary functions that give the same bits on every machine.

numpy picks the loop of a transcendental ufunc (``np.log1p``, ``np.expm1``, ``np.exp``,
``np.log``, ``np.power``, ...) by the CPU it runs on: on a CPU with AVX-512 it uses its own
vector implementations, elsewhere the C library's. Both are accurate to about an ulp, but not
to the same ulp: on an AVX-512 Xeon (numpy 2.4), ``np.log1p(-u)`` differs from the C library's
``log1p`` in the last bit for 7 % of uniform ``u``, ``np.expm1`` for 8 %. A result that goes
through one of them is then a property of the machine, not of the seed, and the engine's
vectorised path no longer matches its scalar reference (which calls :mod:`math`, the C
library) bit for bit.

Every value the model computes with such a function goes through this module instead. Each
function here returns exactly what the C library returns for each element (:mod:`math`, or
numpy's C code that calls the same ``log1p``), on every machine with the same C library.
They are slower per element than numpy's loops (about 0.2 us each through :mod:`math`), so
they are for the few places the model needs them: Exp(1) clocks and draws, the mean-value
solver's presence probability. The statistics of finished results (geometric means, the
t-test, a paired change's interval), the futex fits and the plots still use numpy's loops:
there a last-bit difference stays in the last bit of a reported number, which every report
rounds away, and it never feeds back into a run.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["log1p", "expm1", "exp1", "uniforms_and_exp1"]


def _each(fn, x) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    return np.fromiter(map(fn, a.ravel().tolist()), dtype=np.float64, count=a.size).reshape(a.shape)


def log1p(x) -> np.ndarray:
    """``log(1 + x)`` of each element, as the C library's ``log1p`` computes it."""
    return _each(math.log1p, x)


def expm1(x) -> np.ndarray:
    """``exp(x) - 1`` of each element, as the C library's ``expm1`` computes it."""
    return _each(math.expm1, x)


def exp1(u) -> np.ndarray:
    """Exp(1) variates from uniforms ``u`` in [0, 1): ``-log1p(-u)`` of each element (the
    inverse of the exponential CDF), as the C library computes it -- the same value
    ``numalab.reference`` computes with :func:`math.log1p`."""
    return -log1p(-np.asarray(u, dtype=np.float64))


def uniforms_and_exp1(gen: np.random.Generator, shape) -> tuple[np.ndarray, np.ndarray]:
    """``u = gen.random(shape)`` and ``exp1(u)``, at the speed of numpy's C code.

    ``Generator.standard_exponential(method="inv")`` computes ``-log1p(-u)`` with the C
    library for each ``u`` it draws, and it draws its ``u`` exactly as ``random`` does (one
    64-bit output per double). A copy of ``gen``'s bit generator, taken before the uniforms
    are drawn, therefore yields ``exp1(u)`` for the same ``u``; ``gen`` advances as one
    ``random(shape)`` call would advance it."""
    twin = np.random.Generator(type(gen.bit_generator)())
    twin.bit_generator.state = gen.bit_generator.state
    u = gen.random(shape)
    return u, twin.standard_exponential(shape, method="inv")

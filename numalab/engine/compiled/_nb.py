"""The one numba decorator of the compiled engine.

``jit`` is ``numba.njit`` with the engine's settings: ``error_model="numpy"`` (a float division by
zero gives inf/nan as in numpy, never a ZeroDivisionError), no fastmath (every operation in the
numpy engine's order, so results are bit-identical), ``nogil``, and an on-disk cache (numba's,
next to the module) unless ``NUMALAB_JIT_CACHE=0``. numba caches each function on its own source
file: after editing a module that a cached function calls, clear ``numalab/engine/compiled/
__pycache__`` or set ``NUMALAB_JIT_CACHE=0`` (a release rewrites every file, so an installed
numalab never meets a stale cache).
"""

from __future__ import annotations

import os

import numba

__all__ = ["jit", "inner", "CACHE"]

CACHE = os.environ.get("NUMALAB_JIT_CACHE", "1") != "0"


def jit(fn=None, **options):
    """``@jit`` or ``@jit(inline="always")``: numba.njit with the engine's settings."""
    kw = dict(cache=CACHE, nogil=True, error_model="numpy")
    kw.update(options)
    if fn is None:
        return lambda f: numba.njit(**kw)(f)
    return numba.njit(**kw)(fn)


#: a compiled function called only from compiled code (one that takes the engine's structs):
#: no CPython or C wrappers, which a struct argument could not pass through anyway
inner = jit(no_cpython_wrapper=True, no_cfunc_wrapper=True)

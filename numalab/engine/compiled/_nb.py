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

import contextlib
import os
import sys

import numba

try:
    import fcntl
except ImportError:          # Windows: no advisory locks; each process compiles on its own
    fcntl = None

__all__ = ["jit", "inner", "CACHE", "compile_lock"]

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


#: lock files this process holds (:func:`compile_lock` is re-entrant within a process)
_HELD: set[str] = set()


def _index_path(dispatcher) -> str | None:
    """The path of numba's on-disk cache index of ``dispatcher`` (None without a cache)."""
    cache = getattr(dispatcher, "_cache", None)
    return getattr(getattr(cache, "_cache_file", None), "_index_path", None)


def _compiled(dispatcher, index: str | None) -> bool:
    """Whether a call of ``dispatcher`` needs no compile here: it has run in this process, its
    cache holds an index, or it is no numba dispatcher at all (a plain function)."""
    if not hasattr(dispatcher, "signatures"):
        return True
    return bool(dispatcher.signatures) or (index is not None and os.path.exists(index))


@contextlib.contextmanager
def compile_lock(dispatcher, message: str = ""):
    """Around the first call of ``dispatcher`` in this process: while numba's cache holds no
    index for it (the first compile of an install), hold an exclusive lock on a file beside
    that index, so that processes which reach the same first compile together (notebook
    kernels, sweep workers, test workers on a fresh install) compile it once: the others wait
    here, then numba loads what the first one wrote. Yields whether this process will compile
    (``message`` is then written to stderr). No lock without a cache (``NUMALAB_JIT_CACHE=0``:
    each process compiles), a writable cache directory or ``fcntl`` (Windows), nor within a
    process that already holds it (whose outer compile_lock has said so)."""
    index = _index_path(dispatcher)
    if _compiled(dispatcher, index):
        yield False
        return
    path = None if index is None else index + ".lock"
    held = path in _HELD
    fd = None if path is None or held else _locked(path, getattr(dispatcher, "__name__", "the engine"))
    try:
        compiling = not _compiled(dispatcher, index)      # again: another process may have compiled it
        if compiling and message and not held:
            print(message, file=sys.stderr, flush=True)
        if fd is not None:
            _HELD.add(path)
        yield compiling
    finally:
        if fd is not None:
            _HELD.discard(path)
            os.close(fd)      # closing the descriptor releases the lock


def _locked(path: str, name: str) -> int | None:
    """A descriptor of ``path`` holding its exclusive lock (waiting for another process that
    holds it, and saying so), or None where no lock can be had: no fcntl, a read-only cache
    directory, a file system without locks. Compiling unlocked is what numba does anyway."""
    if fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"numalab: another process is compiling the same numba code ({name}, once per install); "
                  "waiting for it, then loading what it compiled ...", file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        os.close(fd)
        return None
    return fd

"""Signals the ``numalab`` command turns into exceptions, remembered until they are handled.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be when SIGINT
arrives -- sometimes inside a ``__del__`` or a weakref callback, where the exception is
printed as "Exception ignored" and dropped, and the program carries on as if nothing happened.
The handlers installed by :func:`install` also record the signal; :func:`check` raises it
again at the safe points that matter: between the batches of a sweep
(:mod:`numalab.sweeps.executors`) and before an output file is put in place
(:func:`numalab.storage.atomic_write`), so an interrupted command never finishes its work or
writes its output after all.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

__all__ = ["Terminated", "install", "restore", "check", "pending", "clear", "deferred"]

_pending: list[int] = []


class Terminated(BaseException):
    """SIGTERM (or SIGHUP) arrived: unwind so every ``finally`` (worker pools) runs."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _exception(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


_deferred = [0]


def _handler(signum, frame):
    if signum not in _pending:
        _pending.append(signum)
    if _deferred[0]:
        return  # raised by deferred() when the critical section ends
    raise _exception(signum)


@contextlib.contextmanager
def deferred():
    """A critical section (writing a file, reading a cache entry, stopping a pool): a signal
    arriving inside it is raised when it ends, not in the middle of HDF5 or pool internals
    (which then printed "Exception ignored" tracebacks at exit)."""
    _deferred[0] += 1
    try:
        yield
    finally:
        _deferred[0] -= 1
    if not _deferred[0]:
        check()


def install() -> dict:
    """SIGINT, SIGTERM, SIGHUP raise (and are remembered); SIGXFSZ (``ulimit -f``) is ignored,
    so an over-large write fails with EFBIG instead of killing the process. Main thread only;
    returns the previous handlers for :func:`restore`."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    clear()
    old = {"unraisablehook": sys.unraisablehook}
    sys.unraisablehook = _unraisable
    for name, handler in (("SIGINT", _handler), ("SIGTERM", _handler), ("SIGHUP", _handler),
                          ("SIGXFSZ", signal.SIG_IGN)):
        sig = getattr(signal, name, None)
        if sig is None:  # pragma: no cover - not POSIX
            continue
        try:
            old[sig] = signal.signal(sig, handler)
        except (OSError, ValueError):  # pragma: no cover
            pass
    return old


def _unraisable(unraisable) -> None:
    """Our signal's exception raised where Python cannot propagate it: it is remembered
    (:func:`check`), so its "Exception ignored" traceback is noise."""
    if isinstance(unraisable.exc_value, (KeyboardInterrupt, Terminated)) and _pending:
        return
    sys.__unraisablehook__(unraisable)


def restore(old: dict) -> None:
    old = dict(old)
    hook = old.pop("unraisablehook", None)
    if hook is not None:
        sys.unraisablehook = hook
    for sig, handler in old.items():
        try:
            signal.signal(sig, handler)
        except (OSError, ValueError, TypeError):  # pragma: no cover
            pass
    clear()


def pending() -> int | None:
    """The first signal received since :func:`install` and not yet handled, or None."""
    return _pending[0] if _pending else None


def clear() -> None:
    _pending.clear()


def check() -> None:
    """Raise the exception of a signal that arrived (even one Python dropped)."""
    if _pending:
        raise _exception(_pending[0])

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
import os
import signal
import sys
import threading
import time

__all__ = ["Terminated", "install", "restore", "check", "pending", "clear", "deferred", "process_start",
           "parent_alive", "set_pdeathsig", "watch_parent", "WATCH_INTERVAL_S"]

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


# --------------------------------------------------------------------------------------------
# processes that never outlive the one that started them (sweep workers, the explorers' pool,
# the Voila server of `numalab explore`)

#: seconds between a child's checks that the process that started it is still alive
WATCH_INTERVAL_S = 0.25


def process_start(pid: int):
    """(state, start time) of ``pid`` (fields 3 and 22 of /proc/PID/stat; the start time in
    clock ticks since boot), or None: with the pid it names one process even after the pid
    is reused."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    return (fields[0], int(fields[19])) if len(fields) > 19 else None


def parent_alive(pid: int, start) -> bool:
    """Whether the process ``pid`` that started at ``start`` (:func:`process_start`) still runs
    (not gone, not a zombie, not a new process with a reused pid)."""
    if start is None:  # no /proc: signal 0 tells whether the pid exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # pragma: no cover
            return True
        return True
    now = process_start(pid)
    return now is not None and now[0] != b"Z" and now[1] == start[1]


def set_pdeathsig(signum: int = signal.SIGKILL) -> None:
    """Linux: send this process ``signum`` when the thread that forked it exits
    (``prctl(PR_SET_PDEATHSIG)``); elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl
        pass


def watch_parent(pid: int, start, on_death=None, interval: float | None = None) -> threading.Thread:
    """A daemon thread that checks every :data:`WATCH_INTERVAL_S` seconds that ``pid`` (which
    started at ``start``) is alive, and when it is not calls ``on_death()`` (default: exit this
    process at once, status 1). PR_SET_PDEATHSIG alone is not enough: it watches the process
    that forked this one, which is not the one to outlive (a forkserver), and not every parent
    death (SIGKILL of a grandparent)."""
    def watch():
        while True:
            time.sleep(WATCH_INTERVAL_S if interval is None else interval)
            if not parent_alive(pid, start):
                if on_death is not None:
                    on_death()
                os._exit(1)

    t = threading.Thread(target=watch, name="numalab-parent-watch", daemon=True)
    t.start()
    return t

"""Worker processes for the explorers: a knob's seeds run on every core, and a newer knob
change cancels the runs it no longer needs in the middle of an engine call.

The engine is single-threaded numpy that holds the GIL most of the time (about 3,000 short
steps per run), so threads would not run two seeds at once: :class:`SeedPool` keeps a few
worker processes, started when the explorer is built and kept warm: imports done, the workloads
they have laid out kept (by :func:`numalab.workloads.workload`). Workers are forked from this
process's :class:`~numalab.widgets.forks.ForkServer`, an interpreter started once (``python
-c``: nothing of the kernel forked, no ``__main__`` re-imported) that has imported numpy,
xarray and the engine and run the engine once: the second explorer of a notebook kernel, a
re-run cell, or a pool brought back after :data:`MAX_LIVE_POOLS` stopped it gets warm workers
in milliseconds instead of ~1.5 s of imports each. A task is a module-level function and its
arguments; its value comes back pickled.

Results do not depend on the pool: a task is the same pure function the explorer would call in
its own process (the engine guarantees that each seed's replica gives the same numbers whatever
batch it is in).

Cancelling: :meth:`SeedPool.plan` replaces the queued work; a task running for a key the new
plan does not list is cancelled with SIGUSR1, which raises inside the engine call at its next
bytecode (within a step, well under a millisecond); the worker stays alive with its warm
imports. Workers never outlive the process that started them (a notebook kernel): a thread
in each watches that process's pid (:func:`numalab.signals.parent_alive`), and each has
PR_SET_PDEATHSIG for the fork server, which itself watches that process. With fewer than two
CPUs there is no pool (:func:`pool_size` is 0) and the explorer computes in its own process.
"""

from __future__ import annotations

import atexit
import itertools
import os
import pickle
import signal
import struct
import threading
import time
import weakref
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as _wait_conns

from ..errors import NumalabError
from .forks import fork_server

__all__ = ["SeedPool", "pool_size", "PRELOAD", "MAX_WORKERS"]

#: what the fork server imports before it forks the first worker
PRELOAD = ["numpy", "xarray", "numalab.engine", "numalab.workloads", "numalab.widgets.compute"]
#: what the fork server calls once after importing them (workers forked from it start warm)
WARM_UP = "numalab.widgets.pool:_warm_up"

#: more workers than this do not help an explorer (8 seeds of at most 2 policies)
MAX_WORKERS = 4

#: pools with running workers at once: re-running a notebook cell builds a new explorer while the
#: old one lives on in the output history; the least recently used pool's workers are stopped
#: (they start again if that explorer is used again)
MAX_LIVE_POOLS = 2

_live_pools: list = []  # weakrefs, least recently used first


# registered after forks' own atexit, so it runs first: the fork server's exit finds its children gone
@atexit.register
def _stop_all() -> None:
    for ref in list(_live_pools):
        pool = ref()
        if pool is not None:
            pool._finalizer()


def pool_size(workers=None) -> int:
    """Worker processes for ``workers`` (None: one per CPU this process may use, at most
    :data:`MAX_WORKERS`); 0 when that is fewer than two (compute in this process)."""
    from ..sweeps.executors import default_workers

    n = min(default_workers(), MAX_WORKERS) if workers is None else int(workers)
    return n if n >= 2 else 0


class _Cancelled(BaseException):
    """Raised inside a worker's task by the parent's SIGUSR1."""


_current = {"task": 0, "cancel_fd": -1, "cancelled": set(), "warming": False, "warm": False}


def _drain_cancels() -> None:
    """Read the task ids the parent has cancelled (8 bytes each) from the cancel pipe."""
    while True:
        try:
            data = os.read(_current["cancel_fd"], 8 * 64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # pragma: no cover - the parent is gone
            return
        if not data:
            return
        _current["cancelled"].update(struct.unpack(f"<{len(data) // 8}q", data[: len(data) // 8 * 8]))


def _on_cancel(signum, frame):
    _drain_cancels()
    if _current["warming"]:  # a task arrived: stop building layouts ahead
        _current["warming"] = False
        raise _Cancelled
    tid = _current["task"]
    if tid and tid in _current["cancelled"]:
        _current["task"] = 0  # raise once per task
        raise _Cancelled


def _warm_up() -> None:
    """One tiny engine run: a fresh process's first run pays about 0.4 s of first-call costs
    (numpy's and the engine's), which would otherwise land on the first knob change."""
    from .compute import history_run

    if _current["warm"]:  # forked from the server, which has run it
        return
    try:
        history_run("numa02", "2s-ivb-40", "6.12", "profile", 2, [0], workload_options={"size_bytes": 64 << 20, "loops": 50})
    except Exception:  # noqa: BLE001 - only a warm-up
        pass
    _current["warm"] = True


def _preloaded() -> tuple[bool, bool]:
    """(every :data:`PRELOAD` module imported, warm-up run) in this process (a test's task)."""
    import sys

    return all(m in sys.modules for m in PRELOAD), bool(_current["warm"])


def _serve(task_fd: int, reply_fd: int, cancel_fd: int, parent_pid: int, parent_start) -> None:
    """A worker's loop: receive ``(tid, fn, args, kwargs)``, send ``(tid, status, value, cpu)``.

    Called in a child of the fork server with its three pipe ends (the server has set the
    child's PR_SET_PDEATHSIG); imports and warm-up are no-ops there (the server did them). A
    thread watches ``parent_pid``, the process the pool belongs to."""
    import importlib

    from .. import signals

    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C / a kernel interrupt is the parent's
    except (OSError, ValueError):  # pragma: no cover
        pass
    if not signals.parent_alive(parent_pid, parent_start):
        os._exit(1)
    signals.watch_parent(parent_pid, parent_start)
    os.set_blocking(cancel_fd, False)
    _current["cancel_fd"] = cancel_fd
    signal.signal(signal.SIGUSR1, _on_cancel)
    for name in PRELOAD:
        importlib.import_module(name)
    _warm_up()
    conn, out = Connection(task_fd, writable=False), Connection(reply_fd, readable=False)
    ahead: list = []
    while True:
        try:
            if ahead and not conn.poll(0):
                item = ahead.pop(0)
                if not _build_ahead(item):
                    ahead.append(item)  # stopped by a task: try again after it
                continue
            data = conn.recv_bytes()
        except (EOFError, OSError):
            os._exit(0)
        try:
            msg = pickle.loads(data)
        except Exception as exc:  # noqa: BLE001 - e.g. a function of the parent's __main__
            out.send((-1, "error", NumalabError(f"the task cannot be read in a worker process: {exc}"), 0.0))
            continue
        if msg is None:
            os._exit(0)
        if msg[0] == "layouts":
            ahead = list(msg[1])
            continue
        _run_task(out, *msg)


def _build_ahead(item) -> bool:
    """Build one workload layout the explorer may ask for next (idle time; a task's SIGUSR1
    stops it: False)."""
    from ..workloads import workload  # keeps what it lays out: the later runs read it

    name, topology, overrides = item
    try:
        _current["warming"] = True
        workload(name, topology, **dict(overrides))
    except _Cancelled:
        return False
    except Exception:  # noqa: BLE001 - only a head start (e.g. more threads than the topology's CPUs)
        pass
    finally:
        _current["warming"] = False
    return True


def _run_task(out, tid, fn, args, kwargs) -> None:
    """Run one task and send its reply: ``(tid, "ok" | "cancelled" | "error", value, cpu)``."""
    c0 = time.thread_time()
    try:
        _current["task"] = tid
        _drain_cancels()
        _current["cancelled"] = {t for t in _current["cancelled"] if t >= tid}
        if tid in _current["cancelled"]:
            raise _Cancelled
        reply = ("ok", fn(*args, **kwargs))
    except _Cancelled:
        reply = ("cancelled", None)
    except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
        reply = ("error", exc)
    finally:
        _current["task"] = 0
    try:
        out.send((tid, *reply, time.thread_time() - c0))
    except Exception as exc:  # noqa: BLE001 - an unpicklable value or exception
        out.send((tid, "error", NumalabError(f"{type(exc).__name__}: {exc}"), time.thread_time() - c0))


def _worker_pid(w: dict, timeout: float = 0.0):
    """A worker's pid, once the fork server has forked it (None before, within ``timeout`` s)."""
    if w["pid"] is None:
        w["pid"] = w["server"].pid(w["req"], timeout)
    return w["pid"]


def _stop(workers: list, timeout: float = 1.0) -> None:
    """Ask every worker to exit, then make sure it has (finalizer: no reference to the pool).

    A worker's exit closes its reply pipe; one that has not closed it within ``timeout`` s is
    killed. One not forked yet reads the exit request (or its pipe's end) when it is."""
    for w in workers:
        try:
            w["tasks"].send(None)
        except (OSError, ValueError):
            pass
    end = time.monotonic() + timeout
    for w in workers:
        pid = _worker_pid(w)
        exited = pid is None
        while not exited and w["conn"].poll(max(0.0, end - time.monotonic())):
            try:
                w["conn"].recv_bytes()  # a reply still in the pipe
            except (EOFError, OSError):
                exited = True
        if not exited:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:  # pragma: no cover - exited meanwhile
                pass
        for c in (w["tasks"], w["conn"]):
            c.close()
        os.close(w["cancel"])
        w["server"].forget(w["req"])
    workers.clear()


class SeedPool:
    """``size`` worker processes computing keyed tasks; ``store(key, value)`` receives each
    result in the thread that waits (:meth:`wait`).

    :meth:`plan` sets the work (an ordered list of ``(key, fn, args, kwargs)``); :meth:`wait`
    blocks until given keys are stored, calling ``check()`` between polls (it may raise to stop
    waiting: the work goes on until the next :meth:`plan`). ``cpu_seconds`` sums the workers'
    CPU time over finished tasks; ``cancelled`` counts the tasks stopped mid-run."""

    def __init__(self, store, size: int):
        self.size = int(size)
        self.cpu_seconds = 0.0
        self.cancelled = 0
        self._store = store
        self._workers: list[dict] = []
        self._queue: list[tuple] = []
        self._running: dict = {}  # key -> worker
        self._tids = itertools.count(1)
        self._lock = threading.RLock()
        self._finalizer = weakref.finalize(self, _stop, self._workers)

    # ---- processes
    def start(self) -> "SeedPool":
        """Start the workers (idempotent; they warm up while the caller goes on)."""
        with self._lock:
            if len(self._workers) < self.size:
                self._evict_others()
            while len(self._workers) < self.size:
                self._workers.append(self._spawn())
            self._touch()
        return self

    def _touch(self) -> None:
        _live_pools[:] = [r for r in _live_pools if r() is not None and r() is not self] + [weakref.ref(self)]

    def _evict_others(self) -> None:
        """Stop the workers of the least recently used other pools beyond :data:`MAX_LIVE_POOLS`."""
        others = [r() for r in _live_pools]
        others = [p for p in others if p is not None and p is not self and p._workers]
        for old in others[: max(0, len(others) - (MAX_LIVE_POOLS - 1))]:
            if old._lock.acquire(blocking=False):  # busy in another thread: leave it
                try:
                    old.close()
                finally:
                    old._lock.release()

    def _spawn(self) -> dict:
        """Ask the fork server for a worker; returns at once (the worker's first task may be
        written to its pipe before the server, still importing, has forked it)."""
        from ..signals import process_start

        task_r, task_w = os.pipe()
        reply_r, reply_w = os.pipe()
        cancel_r, cancel_w = os.pipe()
        start = process_start(os.getpid())  # pickled to the server as it is
        try:
            for attempt in (0, 1):
                server = fork_server(PRELOAD, WARM_UP)
                try:
                    req = server.spawn("numalab.widgets.pool:_serve", (task_r, reply_w, cancel_r),
                                       (os.getpid(), start))
                    break
                except OSError:  # the server has died: start another, once
                    server.close(0.1)
                    if attempt:
                        raise
        finally:
            for fd in (task_r, reply_w, cancel_r):
                os.close(fd)
        return {"server": server, "req": req, "pid": None, "tasks": Connection(task_w, readable=False),
                "conn": Connection(reply_r, writable=False), "cancel": cancel_w, "tid": None, "key": None,
                "ahead": False}

    def close(self) -> None:
        """Stop the workers (also done when the pool is garbage-collected or Python exits)."""
        with self._lock:
            self._queue.clear()
            self._running.clear()
            _stop(self._workers)  # start() brings them back if the pool is used again

    @property
    def pids(self) -> list[int]:
        """The workers' process ids (waits until the fork server has forked them)."""
        with self._lock:
            return [_worker_pid(w, 60.0) for w in self._workers]

    # ---- work
    def running_keys(self) -> list:
        with self._lock:
            return list(self._running)

    def plan(self, tasks) -> None:
        """Make ``tasks`` the work, in order: a task already running for a listed key goes on,
        one running for a key not listed is cancelled; queued work not listed is dropped. A task
        whose ``fn`` is None only keeps the running task of its key."""
        with self._lock:
            self.start()
            if tasks:
                self._stop_ahead()
            keys = {t[0] for t in tasks}
            for key, w in list(self._running.items()):
                if key not in keys:
                    os.write(w["cancel"], struct.pack("<q", w["tid"]))
                    self._signal(w)
                    del self._running[key]
                    w["key"] = None  # busy until its (cancelled) reply arrives
            seen = set(self._running)
            self._queue = []
            for t in tasks:
                if t[0] not in seen and t[1] is not None:  # fn None: only keeps a running task
                    seen.add(t[0])
                    self._queue.append(t)
            self._dispatch()

    def build_ahead(self, layouts) -> None:
        """Have every worker build these workload layouts (``(name, topology, overrides)``)
        while it has nothing else to do; the next :meth:`plan` with work stops that at once."""
        with self._lock:
            self.start()
            for w in self._workers:
                try:
                    w["tasks"].send(("layouts", list(layouts)))
                    w["ahead"] = True
                except (OSError, ValueError):  # pragma: no cover - noticed by _collect
                    pass

    def _stop_ahead(self) -> None:
        """Real work comes: no worker builds layouts ahead until the next :meth:`build_ahead`
        (they would take cores from it)."""
        for w in self._workers:
            if w["ahead"]:
                w["ahead"] = False
                try:
                    w["tasks"].send(("layouts", []))
                except (OSError, ValueError):  # pragma: no cover - noticed by _collect
                    continue
                self._signal(w)

    @staticmethod
    def _signal(w) -> None:
        """SIGUSR1 to a worker: read the cancel pipe now. A worker not forked yet has nothing to
        interrupt; it reads the pipe before its first task."""
        pid = _worker_pid(w)
        if pid is not None:
            try:
                os.kill(pid, signal.SIGUSR1)
            except ProcessLookupError:  # pragma: no cover - died; noticed by _collect
                pass

    def pending(self, keys) -> set:
        """The keys of ``keys`` still queued or running."""
        with self._lock:
            return set(keys) & (set(self._running) | {t[0] for t in self._queue})

    def wait(self, keys, check=None, poll: float = 0.05, on_progress=None) -> None:
        """Block until every key of ``keys`` has been stored (or is no longer planned)."""
        keys = set(keys)
        with self._lock:
            while True:
                self._collect(0)
                left = self.pending(keys)
                if on_progress is not None:
                    on_progress(len(keys) - len(left), len(keys))
                if not left:
                    return
                if check is not None:
                    check()
                self._collect(poll)

    def _dispatch(self) -> None:
        """Hand queued tasks to idle workers. A worker found dead while idle (its pipe broken:
        killed, or the fork server it was forked from was) is replaced and the task, which
        never started, goes to the new one."""
        i, replaced = 0, set()
        while i < len(self._workers) and self._queue:
            w = self._workers[i]
            if w["tid"] is not None:
                i += 1
                continue
            key, fn, args, kwargs = self._queue[0]
            tid = next(self._tids)
            try:
                w["tasks"].send((tid, fn, args, kwargs))
            except (BrokenPipeError, ConnectionResetError):
                if i in replaced:  # a new worker that cannot take it either: stop here
                    raise
                self._replace(w)
                replaced.add(i)
                continue
            self._queue.pop(0)
            w["tid"], w["key"] = tid, key
            self._running[key] = w
            i += 1

    def _collect(self, timeout: float) -> None:
        busy = {id(w["conn"]): w for w in self._workers if w["tid"] is not None}
        if not busy:
            return
        error = None
        for conn in _wait_conns([w["conn"] for w in busy.values()], timeout):
            w = busy[id(conn)]
            try:
                tid, status, value, cpu = conn.recv()
            except (EOFError, OSError):
                error = error or self._replace(w)
                continue
            self.cpu_seconds += cpu
            key = w["key"] if tid in (w["tid"], -1) else None  # -1: a task it could not read
            w["tid"] = w["key"] = None
            self.cancelled += status == "cancelled"
            if key is None:
                continue  # a cancelled task's reply
            self._running.pop(key, None)
            if status == "ok":
                self._store(key, value)
            elif status == "error":
                error = error or value
        self._dispatch()
        if error is not None:
            raise error

    def _replace(self, w):
        """A worker died (killed, out of memory): start another; its task is not retried."""
        key = w["key"]
        self._running.pop(key, None)
        w["tid"] = w["key"] = None
        i = self._workers.index(w)
        for c in (w["tasks"], w["conn"]):
            c.close()
        os.close(w["cancel"])
        pid = _worker_pid(w)
        w["server"].forget(w["req"])
        self._workers[i] = self._spawn()
        if key is None:
            return None  # it was cancelled anyway
        return NumalabError(f"an explorer worker process (pid {pid}) exited while computing {key}")

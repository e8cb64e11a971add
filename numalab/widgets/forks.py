"""The process the explorers' worker processes are forked from: imports paid once per notebook
kernel, not once per worker.

A fresh interpreter that imports numpy, xarray and the engine and then warms the engine up
costs about 1.5 s of CPU; a notebook that builds an explorer, or re-runs the cell that builds
it, used to pay that for every worker. :class:`ForkServer` starts one such interpreter per
process (``python -c``, as the workers were: nothing of the notebook kernel is forked, its
``__main__`` is not re-imported), lets it import and warm up once, and then forks each worker
from it in a few milliseconds, the warm imports shared copy-on-write.

Nothing here waits for the server: :meth:`ForkServer.spawn` hands the request (the worker's
pipe ends, passed as file descriptors over a Unix socket) to the server and returns at once.
While the server is still importing, requests wait in the socket; the caller writes a
worker's first task into its pipe before the worker exists. A worker's pid arrives when it has
been forked (:meth:`ForkServer.pid`).

The server never outlives the process that started it: it exits when that process closes its
end of the socket (exit, garbage collection) or is gone (checked every
:data:`numalab.signals.WATCH_INTERVAL_S` seconds between requests, and PR_SET_PDEATHSIG when
it was started from the main thread). It has a single thread, so every fork is of a process
whose locks no other thread holds; it reaps its children between requests (so their CPU time
counts in the parent's, as a direct child's would) and waits up to a second for them before it
exits.
Each child gets PR_SET_PDEATHSIG for the server (its parent) before it runs anything; an
explorer worker also watches the process its pool belongs to (:func:`numalab.widgets.pool._serve`).

The server knows nothing of the explorers: it imports the modules it is given, calls a warm-up
function named ``"module:function"``, and calls the target named the same way in each child.
"""

from __future__ import annotations

import atexit
import importlib
import itertools
import json
import os
import pickle
import select
import signal
import socket
import subprocess
import sys
import threading
import time

__all__ = ["ForkServer", "fork_server"]

#: file descriptors one request may pass (a worker has three pipe ends)
MAX_FDS = 8

_servers: dict = {}  # (pid, preload, warm) -> ForkServer of this process
_servers_lock = threading.Lock()


def _resolve(name: str):
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


def _server(sock_fd: int, parent_pid: int, parent_start, pdeathsig: bool, preload, warm) -> None:
    """The server's loop: import, warm up, then fork one child per request until the socket
    closes or the parent is gone."""
    from .. import signals

    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C / a kernel interrupt is the parent's
    except (OSError, ValueError):  # pragma: no cover
        pass
    if pdeathsig:
        signals.set_pdeathsig()
    start = tuple(parent_start) if parent_start else None
    if start is not None:
        start = (start[0].encode(), start[1])
    if not signals.parent_alive(parent_pid, start):
        os._exit(1)
    sock = socket.socket(fileno=sock_fd)
    for name in preload:
        importlib.import_module(name)
    if warm:
        _resolve(warm)()
    children: set = set()
    while True:
        ready, _, _ = select.select([sock], [], [], signals.WATCH_INTERVAL_S)
        _reap(children)
        if not ready:
            if not signals.parent_alive(parent_pid, start):
                os._exit(0)
            continue
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 1 << 16, MAX_FDS)
        except OSError:  # pragma: no cover - the parent is gone
            msg = b""
        if not msg:  # the parent closed its end: its workers' pipes are closing too
            _reap(children, 1.0)
            os._exit(0)
        req, target, args = pickle.loads(msg)
        me = os.getpid()
        pid = os.fork()
        if pid == 0:
            _child(sock, me, target, fds, args)
        children.add(pid)
        for fd in fds:
            os.close(fd)
        try:
            sock.send(pickle.dumps((req, pid)))
        except OSError:  # pragma: no cover - the parent is gone
            os._exit(0)


def _reap(children: set, timeout: float = 0.0) -> None:
    """Collect the children that have exited (waiting up to ``timeout`` s for all of them)."""
    end = time.monotonic() + timeout
    while children:
        for pid in list(children):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # pragma: no cover - not ours any more
                done = pid
            if done:
                children.discard(pid)
        if not children or time.monotonic() >= end:
            return
        time.sleep(0.01)


def _child(sock, server: int, target, fds, args) -> None:
    """In a forked child: die with the server (PR_SET_PDEATHSIG, then a check that the server
    did not exit before it was set), drop the server's socket, run the target, exit."""
    from .. import signals

    code = 0
    try:
        signals.set_pdeathsig()
        if os.getppid() != server:
            os._exit(1)
        sock.close()
        _resolve(target)(*fds, *args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - print it, as an uncaught exception would be
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


class ForkServer:
    """A warmed interpreter that forks children on request (see the module's docstring).

    ``preload``: modules it imports first; ``warm``: ``"module:function"`` it calls once after
    them (None: nothing). Build it with :func:`fork_server`, which keeps one per process."""

    def __init__(self, preload=(), warm: str | None = None):
        from .. import signals

        self.preload, self.warm = list(preload), warm
        self._lock = threading.Lock()
        self._reqs = itertools.count(1)
        self._pids: dict[int, int] = {}
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        start = signals.process_start(os.getpid())
        start = [start[0].decode(), start[1]] if start else None
        main = threading.current_thread() is threading.main_thread()
        code = (f"import sys; sys.path[:0] = {json.dumps([p for p in sys.path if p])}; "
                f"from numalab.widgets.forks import _server; "
                f"_server({child.fileno()}, {os.getpid()}, {json.dumps(start)}, {main}, "
                f"{json.dumps(self.preload)}, {json.dumps(warm)})")
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", code], pass_fds=(child.fileno(),),
                                         stdin=subprocess.DEVNULL, close_fds=True)
        finally:
            child.close()
        self._sock = parent

    def alive(self) -> bool:
        """Whether the server still runs."""
        return self._sock is not None and self.proc.poll() is None

    def spawn(self, target: str, fds, args=()) -> int:
        """Ask for a child that calls ``target(*fds, *args)`` (``"module:function"``) and exits;
        returns the request's id (:meth:`pid` tells the child's pid). The fds stay open here:
        the caller closes its copies. Never waits for the server to have imported."""
        with self._lock:
            req = next(self._reqs)
            socket.send_fds(self._sock, [pickle.dumps((req, target, tuple(args)))], list(fds))
            return req

    def pid(self, req: int, timeout: float = 0.0) -> int | None:
        """The pid of request ``req``'s child, or None when it is not forked within ``timeout``
        seconds (0: only what has already arrived)."""
        end = time.monotonic() + timeout
        with self._lock:
            while req not in self._pids:
                left = max(0.0, end - time.monotonic())
                if self._sock is None or not select.select([self._sock], [], [], left)[0]:
                    return None
                data = self._sock.recv(1 << 12)
                if not data:  # the server has exited
                    return None
                r, pid = pickle.loads(data)
                self._pids[r] = pid
            return self._pids[req]

    def forget(self, req: int) -> None:
        """Drop what is known of request ``req`` (its child has exited)."""
        with self._lock:
            self._pids.pop(req, None)

    def close(self, timeout: float = 1.0) -> None:
        """Close the socket (the server exits; children already forked go on until their own
        pipes close) and reap the server."""
        with self._lock:
            sock, self._sock = self._sock, None
        if sock is None:
            return
        sock.close()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:  # pragma: no cover - still importing
            self.proc.kill()
            self.proc.wait(timeout)


def fork_server(preload=(), warm: str | None = None) -> ForkServer:
    """This process's :class:`ForkServer` for ``preload`` and ``warm``, started on first use
    and again when it has died (a forked copy of this process starts its own)."""
    key = (os.getpid(), tuple(preload), warm)
    with _servers_lock:
        server = _servers.get(key)
        if server is None or not server.alive():
            if server is not None:
                server.close(0.1)
            server = _servers[key] = ForkServer(preload, warm)
        return server


@atexit.register
def _close_all() -> None:
    with _servers_lock:
        servers = [s for (pid, *_), s in _servers.items() if pid == os.getpid()]
        _servers.clear()
    for s in servers:
        s.close(1.0)

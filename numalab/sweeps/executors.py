"""Executors: batches of points on local processes, in this process or on a dask cluster;
and the progress bar.

Without a client the points run in a :class:`concurrent.futures.ProcessPoolExecutor` (a
``forkserver`` context, so no thread state is forked) with one process per core, or in this
process when one worker is asked for or there is a single batch. With a
:class:`dask.distributed.Client` (or a scheduler address such as ``"tcp://10.0.0.1:8786"``) the
same batches are submitted as dask tasks. Results do not depend on the executor or the batch
size: the models draw every random number from a per-seed ``numpy.random.Generator``. Workers
return Datasets; only the calling process writes files.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import logging
import math
import multiprocessing
import os
import sys
import time
import uuid
from collections.abc import Callable, Hashable

from numalab import signals
from numalab.errors import NumalabEnvironmentError, NumalabError, NumalabValueError
from numalab.signals import WATCH_INTERVAL_S, parent_alive, process_start, set_pdeathsig, watch_parent

from .assembly import normalise_point_ds
from .grid import Grid, canon

__all__ = ["worker_init", "parent_alive", "WATCH_INTERVAL_S", "SCHEMES", "MAX_BATCH", "POOL_MIN_S", "SCHEDULER_TIMEOUT_S", "call_runner", "plan_batches", "default_workers", "check_client",
           "run_local", "connect", "cluster_threads", "run_dask", "close_client", "progress_bar", "WORKER_TIMEOUT_S",
           "DASK_POLL_S"]

#: Largest number of points handed to the model in one call (bounds a task's memory).
MAX_BATCH = 512

#: Local worker processes are started only when the points left after the first batch would
#: take longer than this many seconds in this process (see :func:`run_local`).
POOL_MIN_S = 2.0

#: Address schemes of dask.distributed's comm backends.
SCHEMES = ("tcp", "tls", "inproc", "ucx", "ws", "wss")

#: Seconds to wait for a dask scheduler before giving up.
SCHEDULER_TIMEOUT_S = 5


def call_runner(run: Callable, points: list[dict]) -> list:
    """Run one batch (in a worker) and split the result into one Dataset per point."""
    import xarray as xr

    out = run(points)
    if isinstance(out, xr.Dataset):
        if "point" not in out.dims or out.sizes["point"] != len(points):
            raise NumalabError(f"runner {run.__qualname__} must return a 'point' dim of length {len(points)}")
        out = [out.isel(point=i) for i in range(len(points))]
    out = list(out)
    if len(out) != len(points):
        raise NumalabError(f"runner {run.__qualname__} returned {len(out)} results for {len(points)} points")
    return [normalise_point_ds(d.drop_vars("point", errors="ignore")) for d in out]


def plan_batches(grid: Grid, todo: list[int], points: list[dict], workers: int, batch_size) -> list[list[int]]:
    """Group the missing points by batch key, then cut each group into about 4 tasks per worker.

    Within a group points stay in grid order, seed fastest, so a chunk holds whole seed vectors
    of a few settings of the runner's ``batch_vary`` parameters: a model that vectorises over
    seeds loses nothing when a cut falls between settings, and the workers can balance groups
    of very different cost."""
    groups: dict[Hashable, list[int]] = {}
    bkey = [n for n in grid.names if n not in grid.runner.batch_vary]
    for i in todo:
        groups.setdefault(tuple(canon(points[i][n]) for n in bkey), []).append(i)
    total = len(todo)
    nseeds = len(grid.seeds)
    target_tasks = 4 * workers if workers > 1 else 1
    batches = []
    for idx in groups.values():
        idx.sort()
        if batch_size is not None:
            size = batch_size
        else:
            n_chunks = max(1, round(target_tasks * len(idx) / total))
            size = math.ceil(len(idx) / n_chunks)
            if size >= nseeds:  # whole seed vectors
                size = math.ceil(size / nseeds) * nseeds
        size = max(1, min(size, MAX_BATCH))
        batches += [idx[j : j + size] for j in range(0, len(idx), size)]
    batches.sort(key=len, reverse=True)  # longest first: better packing on the workers
    return batches


def default_workers() -> int:
    """The CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _run_here(run, batches, points, on_done) -> str:
    for b in batches:
        out = call_runner(run, [points[i] for i in b])
        with signals.deferred():  # a batch is stored whole, or not at all
            on_done(b, out)
        signals.check()
    return "in-process"


#: what a worker process that died says (its own traceback, printed above, says why)
_BROKEN_POOL = (
    "a worker process died before it returned its points (a sweep with a cache keeps those "
    "that finished). The most common cause: this runs from a script that calls numalab at "
    "its top level; worker processes start by importing the main script, so put the call under "
    "`if __name__ == \"__main__\":`, or pass workers=1 to run in this process. Otherwise the "
    "machine may have run out of memory (see the traceback above and the kernel log)."
)


def _timed_here(run, batch, points, on_done) -> float:
    """Run one batch here (:func:`_run_here`); its wall seconds."""
    t0 = time.perf_counter()
    _run_here(run, [batch], points, on_done)
    return time.perf_counter() - t0


def run_local(run, batches, points, workers, on_done) -> str:
    """Run the batches on local processes; returns the executor used ("local" or "in-process").

    One point of the largest batch first runs alone in this process as a probe. Starting worker
    processes costs a second or two (the first pool of a process starts the forkserver, which
    imports numpy, xarray and the model before it forks the workers: :func:`_forkserver`), so
    while the points left would take less than :data:`POOL_MIN_S` at the slowest
    pace a point has taken here so far (the probe unbatched, so an overestimate), the next batch
    runs here too; as soon as they would not, the rest goes to the processes. A cheap probe
    (a caller may put its cheapest point first, so that something finishes at once) therefore
    never keeps a sweep of costly batches in this process for more than one batch past
    :data:`POOL_MIN_S`. Which process runs a point does not change its result."""
    if workers <= 1 or len(batches) <= 1:
        return _run_here(run, batches, points, on_done)
    probe, batches = batches[0][:1], [b for b in [batches[0][1:], *batches[1:]] if b]
    pace = _timed_here(run, probe, points, on_done)
    while batches and pace * sum(map(len, batches)) < POOL_MIN_S:
        b, batches = batches[0], batches[1:]
        pace = max(pace, _timed_here(run, b, points, on_done) / len(b))
    if len(batches) <= 1:
        return _run_here(run, batches, points, on_done)
    ctx = _forkserver(run)
    pool = cf.ProcessPoolExecutor(max_workers=min(workers, len(batches)), mp_context=ctx,
                                  initializer=worker_init, initargs=(os.getpid(), _start_time(os.getpid())))
    ok = False
    try:
        futs = {pool.submit(call_runner, run, [points[i] for i in b]): b for b in batches}
        for fut in cf.as_completed(futs):
            try:
                out = fut.result()
            except cf.process.BrokenProcessPool as exc:
                raise NumalabEnvironmentError(_BROKEN_POOL) from exc
            with signals.deferred():  # a batch is stored whole, or not at all
                on_done(futs[fut], out)
            signals.check()  # a Ctrl-C / SIGTERM Python dropped: stop here, finished points are cached
        ok = True
        return "local"
    finally:
        with signals.deferred():  # a second signal must not cut the clean-up short
            manager = getattr(pool, "_executor_manager_thread", None)
            if not ok:
                # an error or Ctrl-C: finished points are cached already; do not wait for the
                # batches still running (they may take minutes), stop our worker processes
                procs = list((getattr(pool, "_processes", None) or {}).values())  # shutdown() drops the map
                pool.shutdown(wait=False, cancel_futures=True)
                for proc in procs:
                    proc.terminate()
                for proc in procs:
                    proc.join(2.0)
                    if proc.is_alive():  # pragma: no cover - a worker stuck in C code
                        proc.kill()
            pool.shutdown(wait=True)
            if not ok:
                _forget_pool(manager)


def _forkserver(run):
    """The ``forkserver`` context the local workers start from, its server told to import what
    every worker needs before it forks them: xarray (each batch comes back as Datasets) and the
    module of the runner's ``run`` function (for numalab's models, the model itself).

    A worker is then a fork of a process that has these imported, not an interpreter importing
    numpy, pandas, xarray and the model again (0.4-0.8 s of CPU per worker, each time a pool
    starts). The server starts once per process, with the first pool: a later sweep of another
    kind imports its runner's module in its workers, as before. The import is the same code
    either way, so which process runs a point does not change its result. The server imports
    from the interpreter's own path (an installed package, the current directory,
    ``PYTHONPATH``; Python 3.11 passes it no ``sys.path``); a module it cannot import is
    skipped, as multiprocessing does, and its workers import it themselves. ``"__main__"``
    stays first, as in multiprocessing's default."""
    ctx = multiprocessing.get_context("forkserver")
    module = getattr(run, "__module__", None)
    ctx.set_forkserver_preload(["__main__", "xarray", *([module] if isinstance(module, str) else [])])
    return ctx


def _forget_pool(manager) -> None:
    """After an interrupted pool is shut down, keep concurrent.futures' exit hook from waking
    its (closed) pipe: that printed an "OSError: Bad file descriptor" traceback at exit."""
    try:
        from concurrent.futures import process as cfp

        if manager is not None:
            manager.join(2.0)
        for t in [t for t in list(cfp._threads_wakeups) if t is manager or not t.is_alive()]:
            cfp._threads_wakeups.pop(t, None)
    except Exception:  # pragma: no cover - private API moved
        pass


def _start_time(pid: int):
    """:func:`numalab.signals.process_start` (kept under this name for its callers)."""
    return process_start(pid)


def _set_pdeathsig() -> None:
    """SIGKILL this process when the process that forked it (the forkserver) exits."""
    set_pdeathsig()


def _watch(pid: int, start) -> None:
    """Exit when the process ``pid`` is gone (:func:`numalab.signals.watch_parent`, in this thread)."""
    while True:
        time.sleep(WATCH_INTERVAL_S)
        if not parent_alive(pid, start):
            os._exit(1)


def worker_init(parent_pid: int, parent_start) -> None:
    """Initializer of every local worker process: it never outlives the sweep's process.

    Workers are children of the forkserver, not of the sweep's process, so PR_SET_PDEATHSIG
    alone (the forkserver's death) is not enough when the sweep's process is SIGKILLed: a
    daemon thread checks it every :data:`WATCH_INTERVAL_S` seconds and exits the worker when it
    is gone (a zombie counts as gone). Ctrl-C is the parent's to handle: workers ignore SIGINT
    (the parent terminates them), so a terminal's Ctrl-C prints no worker tracebacks."""
    import signal

    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (OSError, ValueError):  # pragma: no cover
        pass
    set_pdeathsig()
    if not parent_alive(parent_pid, parent_start):
        os._exit(1)
    watch_parent(parent_pid, parent_start)


def check_client(client) -> None:
    """Refuse a ``client=`` that is neither a dask Client nor a string address."""
    if client is not None and not isinstance(client, str):
        connect(client)


def connect(client):
    """A dask Client from a Client or an address; (client, owned)."""
    if not isinstance(client, str):
        if not hasattr(client, "submit") or not hasattr(client, "scheduler_info"):
            raise NumalabValueError(
                f"client={client!r} must be a dask.distributed.Client or a scheduler address like 'tcp://host:8786'"
            )
        return client, False
    address = client
    if "://" not in address and ":" not in address:
        raise NumalabValueError(f"scheduler={address!r} is not an address; expected like 'tcp://host:8786'")
    scheme = address.split("://", 1)[0] if "://" in address else "tcp"
    if scheme not in SCHEMES:
        # checked before a Client exists: a Client that failed to connect stalls 10 s on close
        raise NumalabValueError(
            f"scheduler={address!r} has an unknown scheme {scheme!r}; allowed: {', '.join(SCHEMES)} "
            "(e.g. 'tcp://host:8786')"
        )
    rest = address.split("://", 1)[-1]
    if not rest or rest.startswith(":") and scheme != "inproc":
        raise NumalabValueError(f"scheduler={address!r} names no host; expected like 'tcp://host:8786'")
    try:
        from distributed import Client
    except ImportError:
        raise NumalabValueError(
            f"scheduler={address!r} needs dask.distributed; install it with pip install 'numalab[dask]'"
        ) from None
    silence = [logging.getLogger(n) for n in ("distributed", "distributed.client", "distributed.comm.core")]
    levels = [lg.level for lg in silence]
    for lg in silence:
        lg.setLevel(logging.CRITICAL)
    t0 = time.monotonic()
    try:
        c = Client(address, timeout=SCHEDULER_TIMEOUT_S, set_as_default=False)
    except Exception as exc:  # OSError / TimeoutError / ValueError from comm parsing
        waited = time.monotonic() - t0
        raise NumalabValueError(
            f"scheduler={address!r} is not reachable (gave up after {waited:.0f} s: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no answer'}); "
            "start one with `dask scheduler` and `dask worker ADDRESS`, or run without --scheduler"
        ) from None
    finally:
        for lg, lv in zip(silence, levels):
            lg.setLevel(lv)
    return c, True


def cluster_threads(client) -> int:
    """Worker threads of a dask cluster (1 when the scheduler does not say)."""
    try:
        info = client.scheduler_info()["workers"]
        return max(1, sum(int(w.get("nthreads", 1)) for w in info.values()))
    except Exception:
        return 1


#: seconds a sweep waits for a dask worker -- at the start, and after every worker has left --
#: before it gives up with a message
WORKER_TIMEOUT_S = 30.0
#: seconds between the sweep's looks at the cluster while no batch finishes
DASK_POLL_S = 1.0


@contextlib.contextmanager
def _quiet_distributed():
    """dask.distributed's own log lines (a lost scheduler logs dozens, with tracebacks) are
    silenced while a sweep talks to the cluster: what happened is said once, by numalab."""
    loggers = [logging.getLogger(n) for n in ("distributed", "distributed.client", "distributed.comm.core",
                                              "distributed.core", "distributed.batched", "tornado.application")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, lv in zip(loggers, levels):
            lg.setLevel(lv)


def _scheduler_name(client) -> str:
    try:
        return str(client.scheduler.address)
    except Exception:  # pragma: no cover - a Client without a scheduler rpc
        return repr(client)


def _comm_errors() -> tuple:
    """The exceptions of a scheduler that went away (or of futures it took with it)."""
    import asyncio
    import concurrent.futures

    errors = [OSError, TimeoutError, concurrent.futures.CancelledError, asyncio.CancelledError]
    try:
        from distributed.client import ClosedClientError

        errors.append(ClosedClientError)
    except ImportError:  # pragma: no cover
        pass
    return tuple(errors)


def _lost(where: str, exc, done: int, total: int) -> NumalabEnvironmentError:
    why = f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}" if exc is not None else "the connection was lost"
    return NumalabEnvironmentError(
        f"the dask scheduler {where} stopped answering ({why}) after {done} of {total} batches; the finished "
        "points are cached: run the same command again to compute the rest (with a running scheduler, or "
        "without --scheduler)")


def _workers(client) -> int:
    return len(client.scheduler_info().get("workers", {}))


def _await_workers(client, where: str) -> None:
    """Wait up to :data:`WORKER_TIMEOUT_S` for the cluster to have a worker."""
    try:
        client.wait_for_workers(1, timeout=WORKER_TIMEOUT_S)
    except TimeoutError:
        raise NumalabEnvironmentError(
            f"the dask scheduler {where} has no workers (waited {WORKER_TIMEOUT_S:.0f} s); start one with `dask "
            f"worker {where}`, or run without --scheduler") from None


def run_dask(client, run, batches, points, on_done) -> None:
    """Run the batches as dask tasks; ``on_done`` is called here as each one finishes.

    Never waits forever: a cluster without workers is given up after :data:`WORKER_TIMEOUT_S`
    (at the start, or when every worker has left), and a scheduler that stops answering ends
    the sweep with one message naming it and how to resume (the finished points are cached)."""
    where = _scheduler_name(client)
    futs: dict = {}
    finished = 0
    errors = _comm_errors()
    with _quiet_distributed():
        try:
            _await_workers(client, where)
            for b in batches:
                key = f"numalab-sweep-{uuid.uuid4().hex}"
                futs[client.submit(call_runner, run, [points[i] for i in b], key=key, pure=False)] = b
            pending, idle_since, looked = list(futs), None, time.monotonic()
            while pending:
                # polled, not distributed.wait(): that looks for a default Client, and ours is none
                done = [f for f in pending if f.done()]
                if not done:
                    time.sleep(0.05)
                    if time.monotonic() - looked < DASK_POLL_S:
                        continue
                    looked = time.monotonic()
                    if client.status in ("closing", "closed"):
                        raise _lost(where, None, finished, len(batches))
                pending = [f for f in pending if all(f is not d for d in done)]
                for fut in done:
                    if fut.status == "error":
                        exc = fut.exception()
                        raise exc.with_traceback(None)
                    if fut.status != "finished":  # cancelled: the scheduler is gone
                        raise _lost(where, None, finished, len(batches))
                    result = fut.result()
                    with signals.deferred():  # a batch is stored whole, or not at all
                        on_done(futs[fut], result)
                    signals.check()
                    finished += 1
                if not done:
                    if _workers(client) > 0:
                        idle_since = None
                    elif idle_since is None:
                        idle_since = time.monotonic()
                    elif time.monotonic() - idle_since > WORKER_TIMEOUT_S:
                        raise NumalabEnvironmentError(
                            f"the dask scheduler {where} has had no workers for {WORKER_TIMEOUT_S:.0f} s, after "
                            f"{finished} of {len(batches)} batches; the finished points are cached: start a worker "
                            f"(`dask worker {where}`) and run the same command again")
        except NumalabError:
            raise
        except errors as exc:
            raise _lost(where, exc, finished, len(batches)) from None
        finally:
            try:
                client.cancel([f for f in futs if not f.done()], force=True)
            except Exception:  # the scheduler is gone: nothing left to cancel
                pass


def close_client(client) -> None:
    """Close a Client numalab opened, quietly and in bounded time (its scheduler may be gone)."""
    with _quiet_distributed():
        try:
            client.close(timeout=SCHEDULER_TIMEOUT_S)
        except Exception:
            pass


def _interactive() -> bool:
    """True in a terminal (stderr is a TTY) or a Jupyter kernel."""
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):
        pass
    if "IPython" in sys.modules:
        try:
            from IPython import get_ipython

            ip = get_ipython()
            return ip is not None and "IPKernelApp" in ip.config
        except Exception:
            return False
    return False


def progress_bar(progress: bool, total: int, initial: int, kind: str):
    """A ``tqdm.auto`` bar in a terminal or notebook when ``progress``, else None."""
    if not progress or not _interactive():
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=f"numalab sweep ({kind})", unit="point", smoothing=0.1)

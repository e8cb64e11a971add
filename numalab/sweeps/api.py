"""The entry points: :func:`sweep` (one labelled Dataset) and :func:`run_sweep` (the Dataset
plus bookkeeping), each run as a short sequence of named steps: expand the grid, load cached
points, make sure the model can run, compute the rest, assemble."""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from numalab.errors import NumalabValueError, check_int

from . import executors
from .assembly import assemble
from .cache import Cache, StaleCacheWarning, open_cache
from .grid import Grid, expand, point_key

__all__ = ["sweep", "run_sweep", "SweepResult", "CacheWriteWarning"]


@dataclass
class SweepResult:
    """What :func:`run_sweep` did: the Dataset plus bookkeeping (not stored in the Dataset, so a
    cached and a computed sweep give identical Datasets)."""

    dataset: object
    points: int
    computed: int
    cached: int
    tasks: int
    seconds: float
    executor: str
    cache_dir: str | None = None
    notes: list[str] = field(default_factory=list)


def sweep(
    grid: Mapping[str, object],
    seeds=8,
    cache=True,
    client=None,
    progress: bool = True,
    kind: str | None = None,
    *,
    workers: int | None = None,
    batch_size: int | None = None,
):
    """Run every point of ``grid`` x ``seeds`` and return one labelled Dataset.

    Parameters
    ----------
    grid : mapping str -> list
        Parameter name -> values. A scalar or one-element list fixes a parameter; parameters not
        named take the runner's default. NUMA engine: ``workload``, ``topology``, ``profile``,
        ``history``, ``policy`` and any ``numalab.engine.simulate`` option; futex: ``mode``,
        ``buckets``, ``threads``, ... (``numalab.sweeps.get_runner(kind).params()`` lists them).
    seeds : int or list of int
        ``n`` means seeds ``0 .. n-1`` (see :func:`numalab.errors.check_seeds`). Always a dim
        of the result.
    cache : bool or path
        ``True``: :func:`~numalab.sweeps.default_cache_dir`; a path: that directory; ``False``:
        no cache.
    client : dask.distributed.Client or str, optional
        Run the batches on a dask cluster (an address is connected to and closed afterwards).
    progress : bool
        Show a ``tqdm.auto`` bar (only in a terminal or notebook).
    kind : {"numa", "futex", ...}, optional
        The model; inferred from the grid keys when omitted (``"numa"`` when ambiguous).
    workers : int, optional
        Local processes (default: the CPUs this process may use). 1 runs in this process.
    batch_size : int, optional
        Most points per model call (default: about four tasks per worker, whole seed vectors,
        at most :data:`~numalab.sweeps.MAX_BATCH`).

    Returns
    -------
    xarray.Dataset
        dims ``(*swept, "seed", *model dims)``; see :mod:`numalab.sweeps`.
    """
    return run_sweep(
        grid, seeds=seeds, cache=cache, client=client, progress=progress, kind=kind,
        workers=workers, batch_size=batch_size,
    ).dataset


def run_sweep(
    grid, seeds=8, cache=True, client=None, progress=True, kind=None, *, workers=None, batch_size=None
) -> SweepResult:
    """:func:`sweep`, returning a :class:`SweepResult` with the bookkeeping as well."""
    t0 = time.perf_counter()
    g = expand(grid, seeds, kind)
    workers, batch_size = _check_options(workers, batch_size, progress)
    points = g.points()
    keys = [point_key(g.kind, p) for p in points]
    store = open_cache(cache, g.kind)
    results = _load_cached(store, keys, points)
    todo = [i for i, r in enumerate(results) if r is None]
    notes = _stale_notes(store, todo)
    if todo:
        _check_runnable(g)
    executors.check_client(client)
    executor, calls = _compute(g, todo, points, keys, results, store, client, workers, batch_size, progress, notes)
    return SweepResult(
        dataset=assemble(g, results),
        points=len(points),
        computed=len(todo),
        cached=len(points) - len(todo),
        tasks=calls,
        seconds=time.perf_counter() - t0,
        executor=executor,
        cache_dir=str(store.root) if store is not None else None,
        notes=notes,
    )


def _check_options(workers, batch_size, progress):
    """The executor options, checked: (workers, batch_size)."""
    if workers is not None:
        workers = check_int("workers", workers, lo=1, hi=4096)
    if batch_size is not None:
        batch_size = check_int("batch_size", batch_size, lo=1, hi=executors.MAX_BATCH)
    if not isinstance(progress, (bool, np.bool_)):
        raise NumalabValueError(f"progress={progress!r} must be True or False")
    return workers, batch_size


def _load_cached(store: Cache | None, keys: list[str], points: list[dict]) -> list:
    """One slot per point: its cached Dataset, or None when it must be computed."""
    results: list = [None] * len(points)
    if store is not None:
        for i, d in store.load_many(keys, points).items():
            results[i] = d
    return results


def _stale_notes(store: Cache | None, todo: list[int]) -> list[str]:
    """Warn once (and note) when the cache holds only other versions' results for the missing points."""
    if store is None or not todo:
        return []
    others = store.other_versions()
    if not others:
        return []
    msg = (
        f"cache {store.root} holds results of numalab {', '.join(others)}, not {store.version}; "
        f"they are not reused: computing {len(todo)} point(s) again"
    )
    warnings.warn(msg, StaleCacheWarning, stacklevel=4)  # the caller of sweep()
    return [msg]


def _check_runnable(g: Grid) -> None:
    """Refuse, before any work is sent out, combinations the runner cannot run or a model that
    does not import here."""
    if g.runner.prepare is not None:
        try:
            g.runner.prepare({n: list(g.values[n]) for n in g.names})
        except ImportError:
            pass  # reported just below, naming the module
    why = g.runner.missing()
    if why:
        raise NumalabValueError(f"kind={g.kind!r} cannot run here: {why}")


class CacheWriteWarning(UserWarning):
    """The cache could not be written (a full disk, ...): the sweep goes on without it."""


def _compute(g: Grid, todo, points, keys, results, store, client, workers, batch_size, progress,
             notes) -> tuple[str, int]:
    """Compute the points ``todo`` (filling ``results``, caching each finished batch); returns
    (executor used, model calls). When the cache cannot be written (a full disk), the points
    computed are kept and the rest computed without it: one fault never loses the sweep
    (a note and a :class:`CacheWriteWarning` say how many were stored)."""
    if not todo:
        return "cache", 0
    owned = False
    dask_client = None
    if client is not None:  # nothing to compute: no need for the cluster to be up
        dask_client, owned = executors.connect(client)
    try:
        if dask_client is not None:
            n, executor = executors.cluster_threads(dask_client), "dask"
        else:
            n = workers or executors.default_workers()
            executor = "local" if n > 1 else "in-process"
        batches = executors.plan_batches(g, todo, points, n, batch_size)
        bar = executors.progress_bar(progress, len(points), len(points) - len(todo), g.kind)

        cache = {"store": store, "stored": 0}

        def on_done(batch, dsets):
            for i, d in zip(batch, dsets):
                results[i] = d
            if cache["store"] is not None:
                try:
                    cache["store"].store([keys[i] for i in batch], [points[i] for i in batch], dsets)
                    cache["stored"] += len(batch)
                except OSError as exc:
                    cache["store"] = None
                    msg = (f"cannot write the cache {store.root} ({exc}); the sweep goes on without it: "
                           f"{cache['stored']} point(s) of this run were stored, the others are not")
                    warnings.warn(msg, CacheWriteWarning, stacklevel=2)
                    notes.append(msg)
            if bar is not None:
                bar.update(len(batch))

        try:
            if dask_client is not None:
                executors.run_dask(dask_client, g.runner.run, batches, points, on_done)
            else:
                executor = executors.run_local(g.runner.run, batches, points, n, on_done)
        finally:
            if bar is not None:
                bar.close()
    finally:
        if owned:
            executors.close_client(dask_client)
    return executor, len(batches)

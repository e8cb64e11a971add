"""Parameter grids -> one labelled :class:`xarray.Dataset`; local or dask execution; on-disk cache.

A sweep is the full factorial product of a ``grid`` (parameter name -> list of values) and a list
of seeds. Each (parameter combination, seed) is one **point**. Points whose *batch key*
parameters are equal (for the NUMA engine: same workload, topology and engine options -- the
same array shapes) are handed to the model together, so several policies x seeds advance in one
vectorised ``numalab.engine.simulate`` call.

The machinery is model-agnostic: a model plugs in through a :class:`Runner` registered with
:func:`register_runner`. Two runners are built in:

``"numa"``
    :func:`numalab.engine.simulate` -- parameters ``workload``, ``topology``, ``profile``,
    ``history`` (an int, or ``"profile"`` = the profile's own window count), or instead of those
    two ``policy`` (a Policy name such as ``"6.12+N=4"``); ``workload_threads``,
    ``workload_loops``, ``workload_size_bytes``, ``workload_nproc`` (overrides of
    :func:`numalab.workloads.workload`, 0 = the workload's own); and every engine option with
    a scalar default (``dt``, ``max_time``, ``scan_delay_ms``, ``thp`` as 0/1, ...). Points that
    differ only in policy and seed share one ``simulate`` call; time series are dropped (a
    sweep keeps the per-run figures).
``"futex"``
    :func:`numalab.futex.simulate` -- parameters ``mode``, ``buckets`` (-1 = kernel size),
    ``threads`` (0 = the program's default), ``topology``, ``program``, ``futexes``, ``shared``,
    ``method``, ``ops``. One call per point (see :func:`run_futex`).

``get_runner(kind).params()`` lists every parameter with its default, units and check.

Result layout
-------------
The dims of the returned Dataset are the grid keys that have **more than one value** (in grid
order), then ``seed`` (always a dim, even for one seed), then any dims of the model's own
variables. A grid key with a single value (a scalar or a one-element list) is kept as a scalar
coordinate, so ``ds.profile`` still says what was run; parameters the grid does not name are
not coordinates. ``attrs["parameters"]`` is a JSON record of **every** parameter (defaults
included, lists for the swept ones), ``attrs["swept"]`` the swept names, ``attrs["seeds"]``
the seeds; model attrs equal for all points are kept (a clashing name gets a ``model_``
prefix). Bookkeeping (what came from the cache, timings) is not in the Dataset, so a cached and
a computed sweep are identical; :func:`run_sweep` returns it in a :class:`SweepResult`.

Cache
-----
``cache=True`` (the default) stores each point as ``<dir>/v<version>/<sha256>.nc`` (h5netcdf;
a link to the file of the batch the point was computed in, see :class:`_Cache`), where the hash
covers (numalab version, cache format, kind, every parameter, seed); ``<dir>`` is
``$NUMALAB_CACHE`` if set, else ``$XDG_CACHE_HOME/numalab/sweep``, else
``~/.cache/numalab/sweep``. ``cache="path"`` picks the directory, ``cache=False`` turns caching
off. Files are written to a temporary name and renamed with :func:`os.replace`, so a sweep killed
at any moment (even with SIGKILL) leaves only whole points; running it again computes only the
missing ones. Results of another numalab version are never reused: the sweep warns once
(:class:`StaleCacheWarning`) and recomputes. Only the process that called :func:`sweep` writes
files (workers return Datasets), so no HDF5 file is ever written from a dask worker.

Executors
---------
Without ``client`` the points run in a :class:`concurrent.futures.ProcessPoolExecutor` (a
``forkserver`` context, so no thread state is forked) with one process per core
(``workers=``), or in this process when ``workers=1`` or there is a single batch. With
``client=`` a :class:`dask.distributed.Client` (or a scheduler address such as
``"tcp://10.0.0.1:8786"``) the same batches are submitted as dask tasks. Results do not depend on
the executor or the batch size: the models draw every random number from a per-seed
``numpy.random.Generator``.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import inspect
import itertools
import json
import logging
import math
import multiprocessing
import numbers
import os
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._version import __version__
from .errors import NumalabError, NumalabValueError, check_choice, check_int
from .storage import write_netcdf

__all__ = [
    "sweep",
    "run_sweep",
    "SweepResult",
    "Param",
    "Runner",
    "register_runner",
    "runners",
    "get_runner",
    "default_cache_dir",
    "point_key",
    "StaleCacheWarning",
    "CACHE_FORMAT",
]

log = logging.getLogger("numalab.sweep")

#: Bumped when the on-disk layout of a cached point changes; part of every point's hash.
CACHE_FORMAT = 1

#: Largest number of points handed to the model in one call (bounds a task's memory).
MAX_BATCH = 512

#: Local worker processes are started only when the points left after the first batch would
#: take longer than this many seconds in this process (see ``_run_local``).
POOL_MIN_S = 2.0

#: Seconds to wait for a dask scheduler before giving up.
SCHEDULER_TIMEOUT_S = 5


class StaleCacheWarning(UserWarning):
    """The cache directory holds results of another numalab version; they are not reused."""


def _code_version() -> str:
    """The version string cached points are keyed by (numalab version + cache format)."""
    return f"{__version__}+c{CACHE_FORMAT}"


# ------------------------------------------------------------------------------ parameters
_REQUIRED = object()


@dataclass(frozen=True)
class Param:
    """One parameter a runner accepts in a grid.

    Parameters
    ----------
    name : str
        Grid key and coordinate name.
    default : str | int | float
        Value used when the grid does not mention the parameter (part of every point's hash,
        so a changed default never reuses old results). Omit for a required parameter.
    check : callable(name, value) -> value
        Validates one value and returns it normalised to ``str``, ``int`` or ``float``; raises
        :class:`~numalab.errors.NumalabValueError` naming the parameter otherwise.
    units, long_name, kernel_name : str
        Coordinate attrs.
    """

    name: str
    check: Callable[[str, object], object]
    default: object = _REQUIRED
    units: str = "1"
    long_name: str = ""
    kernel_name: str = ""

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    def coord_attrs(self) -> dict:
        attrs = {"units": self.units, "long_name": self.long_name or self.name}
        if self.kernel_name:
            attrs["kernel_name"] = self.kernel_name
        return attrs


def check_str(name: str, value) -> str:
    """A non-empty string value."""
    if not isinstance(value, str) or not value:
        raise NumalabValueError(f"{name}={value!r} must be a non-empty string")
    return value


def check_scalar(name: str, value):
    """Any netCDF-safe scalar (str, int or finite float); bools become ints."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            raise NumalabValueError(f"{name}={value!r} must be finite")
        return value
    if isinstance(value, str) and value:
        return value
    raise NumalabValueError(
        f"{name}={value!r} has type {type(value).__name__}; allowed: a string, an integer or a number"
    )


@dataclass(frozen=True)
class Runner:
    """How the sweep machinery drives one model (the "point runner" interface).

    Parameters
    ----------
    kind : str
        Name used by ``sweep(kind=...)`` and ``numalab sweep --kind``.
    parameters : sequence of Param, or a callable returning one
        Every parameter a grid may name (a callable is resolved lazily, so a runner can read
        the option list from a model module that is imported only when used).
    run : callable(points) -> xarray.Dataset | list of xarray.Dataset
        A **module-level** function (it is pickled by reference to worker processes). ``points``
        is a list of dicts, each holding every parameter plus ``"seed"``; all points of one call
        differ only in ``batch_vary`` and ``seed``. Returns either one Dataset with a leading ``point``
        dim in the order of ``points``, or a list with one Dataset per point. A point's
        result must not depend on the other points of the call.
    batch_vary : sequence of str
        Parameters that may differ between the points of one ``run`` call (for the engine: the
        policy knobs). Points are grouped by every *other* parameter, so all points of a call
        share the array shapes.
    description : str
        One line for ``numalab sweep --help``.
    requires : sequence of str
        Modules the run function imports; checked before any work is sent out.
    prepare : callable(values), optional
        Called once in the calling process with ``{name: [normalised values]}`` before any
        work is sent out, to refuse combinations the per-value checks cannot see (an unknown
        profile, a workload that does not fit the topology) with a clear error.
    """

    kind: str
    parameters: Sequence[Param] | Callable[[], Sequence[Param]]
    run: Callable[[list[dict]], object]
    batch_vary: Sequence[str] = ()
    description: str = ""
    requires: Sequence[str] = ()
    prepare: Callable[[dict], None] | None = None

    def missing(self) -> str | None:
        """Why this runner cannot run here (a model module that does not import), or None."""
        import importlib

        for mod in self.requires:
            try:
                importlib.import_module(mod)
            except ImportError as exc:
                return f"{mod} cannot be imported ({exc})"
        return None

    def params(self) -> dict[str, Param]:
        params = self.parameters() if callable(self.parameters) else self.parameters
        return {p.name: p for p in params}


_RUNNERS: dict[str, Runner] = {}


def register_runner(runner: Runner, *, replace: bool = False) -> Runner:
    """Make ``runner`` available as ``sweep(kind=runner.kind)``.

    This is the hook for new models (and for test runners): define the run function at module
    level in an importable module, build a :class:`Runner` and register it when that module
    is imported. Registering an existing kind needs ``replace=True``.
    """
    if not isinstance(runner, Runner):
        raise NumalabValueError(f"runner={runner!r} must be a numalab.sweep.Runner")
    check_str("kind", runner.kind)
    if runner.kind in _RUNNERS and not replace and _RUNNERS[runner.kind] is not runner:
        raise NumalabValueError(f"kind={runner.kind!r} is already registered; pass replace=True")
    _RUNNERS[runner.kind] = runner
    return runner


def runners() -> list[str]:
    """Names of the registered runner kinds."""
    return list(_RUNNERS)


def get_runner(kind: str) -> Runner:
    """The registered :class:`Runner` for ``kind``."""
    check_choice("kind", kind, _RUNNERS)
    return _RUNNERS[kind]


# ------------------------------------------------------------------------------ grid
@dataclass(frozen=True)
class _Grid:
    kind: str
    names: tuple[str, ...]  # every parameter, grid keys first (grid order), then defaults
    keys: tuple[str, ...]  # the parameters the grid names
    values: dict[str, list]  # name -> normalised values (defaults: one value)
    seeds: list[int]
    swept: tuple[str, ...]  # names with more than one value
    params: dict[str, Param]
    runner: Runner

    def points(self) -> list[dict]:
        """Every point, seed varying fastest, in C order of (swept..., seed)."""
        combos = itertools.product(*(self.values[n] for n in self.names))
        return [{**dict(zip(self.names, c)), "seed": s} for c in combos for s in self.seeds]


def _infer_kind(keys: list[str]) -> str:
    """The runner whose parameters cover the grid keys ("numa" first); when none covers them,
    the one sharing most keys, so the error names the unknown ones for the likely model."""
    order = sorted(_RUNNERS, key=lambda k: k != "numa")
    overlap = {k: len(set(keys) & set(_RUNNERS[k].params())) for k in order}
    fits = [k for k in order if overlap[k] == len(set(keys))]
    if fits:
        return fits[0]
    return max(order, key=lambda k: overlap[k])  # max keeps the first of equals: numa


def _normalise_seeds(seeds) -> list[int]:
    if isinstance(seeds, (bool, np.bool_)):
        raise NumalabValueError(f"seeds={seeds!r} must be a count or a list of integer seeds")
    if isinstance(seeds, numbers.Integral):
        n = check_int("seeds", seeds, lo=1, hi=10**7)
        return list(range(n))
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise NumalabValueError(f"seeds={seeds!r} must be a count or a list of integer seeds")
    out = [check_int("seeds", s, lo=0, hi=2**63 - 1) for s in seeds]
    if not out:
        raise NumalabValueError("seeds=[] is empty; allowed: a count >= 1 or a non-empty list")
    if len(set(out)) != len(out):
        raise NumalabValueError(f"seeds={out!r} holds duplicates")
    return out


def _expand(grid, seeds, kind) -> _Grid:
    if not isinstance(grid, Mapping):
        raise NumalabValueError(f"grid={grid!r} must be a mapping of parameter name -> list of values")
    keys = list(grid)
    for k in keys:
        if not isinstance(k, str):
            raise NumalabValueError(f"grid key {k!r} must be a string parameter name")
    if "seed" in keys:
        raise NumalabValueError("grid key 'seed' is not allowed; pass seeds=... instead")
    if kind is None:
        kind = _infer_kind(keys)
    runner = get_runner(kind)
    params = runner.params()
    unknown = [k for k in keys if k not in params]
    if unknown:
        raise NumalabValueError(
            f"unknown {kind} sweep parameter(s) {', '.join(map(repr, unknown))}; "
            f"allowed: {', '.join(params)}"
        )
    values: dict[str, list] = {}
    for k in keys:
        raw = grid[k]
        if isinstance(raw, (str, bytes)) or not isinstance(raw, (Sequence, np.ndarray)):
            raw = [raw]  # a scalar fixes the parameter (a set has no order: its check refuses it)
        raw = list(raw)
        if not raw:
            raise NumalabValueError(f"grid[{k!r}] is an empty list; give at least one value")
        vals = [params[k].check(k, v) for v in raw]
        if len(set(map(_canon, vals))) != len(vals):
            raise NumalabValueError(f"grid[{k!r}]={vals!r} holds duplicates")
        values[k] = vals
    names = list(keys)
    for name, p in params.items():
        if name not in values:
            if p.required:
                raise NumalabValueError(f"the {kind} sweep needs parameter {name!r} in the grid")
            values[name] = [p.check(name, p.default)]
            names.append(name)
    swept = tuple(k for k in keys if len(values[k]) > 1)
    return _Grid(kind, tuple(names), tuple(keys), values, _normalise_seeds(seeds), swept, params, runner)


def _canon(value) -> str:
    return json.dumps(value, sort_keys=True)


def point_key(kind: str, point: Mapping, version: str | None = None) -> str:
    """The cache key of one point: sha256 over (version, kind, every parameter, seed)."""
    record = {"numalab": version or _code_version(), "kind": kind, "point": dict(point)}
    return hashlib.sha256(_canon(record).encode()).hexdigest()


# ------------------------------------------------------------------------------ cache
def default_cache_dir() -> Path:
    """``$NUMALAB_CACHE``, else ``$XDG_CACHE_HOME/numalab/sweep``, else ``~/.cache/numalab/sweep``."""
    env = os.environ.get("NUMALAB_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "numalab" / "sweep"


def _clean_attrs(attrs: Mapping) -> dict:
    """netCDF-safe attrs that compare equal before and after a file round trip."""
    out = {}
    for k, v in attrs.items():
        if isinstance(v, np.ndarray):
            v = v.tolist()
        elif isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, bool):
            v = int(v)
        elif v is None:
            v = ""
        elif isinstance(v, Mapping):
            v = json.dumps(v, sort_keys=True, default=str)
        elif isinstance(v, (list, tuple)):
            v = [int(x) if isinstance(x, bool) else x for x in v]
            if len(v) == 1:  # netCDF stores a 1-element list as a scalar
                v = v[0]
        out[str(k)] = v
    return out


def _normalise_point_ds(ds):
    """Drop point-specific scalar coords and dims no variable uses (left by dropped series),
    and make dtypes/attrs independent of a file round trip."""
    used = {d for v in ds.data_vars.values() for d in v.dims}
    ds = ds.drop_vars([c for c in ds.coords if ds[c].ndim == 0 or not set(ds[c].dims) <= used])
    for name in list(ds.variables):
        var = ds.variables[name]
        if var.dtype == object:
            ds[name] = var.copy(data=np.asarray(var.values).astype(str))
        ds[name].attrs = _clean_attrs(ds[name].attrs)
    ds.attrs = _clean_attrs(ds.attrs)
    for name in ds.variables:
        ds[name].encoding = {}
    return ds


class _Cache:
    """Points of one numalab version under ``root/v<version>/``.

    A finished task (a batch of points) is written as one h5netcdf file
    ``batches/<uuid>.nc`` with a ``point`` dim (temporary name, then :func:`os.replace`); then
    each of its points gets ``<key>.nc``, a symlink to that file, made atomically (a temporary
    link renamed over the name). Opening ``<key>.nc`` therefore opens a whole netCDF file that
    holds the point (row ``sweep_key == key``). One file per batch instead of one per point
    keeps the HDF5 open/decode cost (tens of ms per file) per task, not per point. A sweep
    killed between the two steps leaves a batch file no link points to: its points are simply
    computed again.
    """

    def __init__(self, root: Path, kind: str):
        self.root = Path(root).expanduser()
        self.kind = kind
        self.version = _code_version()
        self.dir = self.root / f"v{self.version}"
        self.batches = self.dir / "batches"
        try:
            self.batches.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise NumalabValueError(f"cache={str(self.root)!r} cannot be created: {exc}") from None
        if not os.access(self.batches, os.W_OK):
            raise NumalabValueError(f"cache={str(self.root)!r} is not writable")

    def path(self, key: str) -> Path:
        return self.dir / f"{key}.nc"

    def other_versions(self) -> list[str]:
        """Versions (other than ours) that have points in this cache directory."""
        out = []
        for child in sorted(self.root.glob("v*")):
            if child.is_dir() and child != self.dir and any(child.glob("*.nc")):
                out.append(child.name[1:])
        return out

    def load_many(self, keys: list[str], points: list[dict]) -> dict[int, object]:
        """{point index: Dataset} for every point whose link and batch file are readable."""
        import xarray as xr

        by_file: dict[Path, list[int]] = {}
        for i, key in enumerate(keys):
            try:
                target = os.readlink(self.path(key))
            except OSError:  # absent (or not a link: not ours)
                continue
            by_file.setdefault(self.dir / target, []).append(i)
        found = {}
        for path, idx in by_file.items():
            try:
                with xr.open_dataset(path, engine="h5netcdf", cache=False) as f:
                    batch = f.load()
            except Exception as exc:  # a damaged or vanished file is a miss, never a crash
                log.warning("numalab sweep: ignoring unreadable cache file %s (%s)", path, exc)
                continue
            if batch.attrs.get("sweep_version") != self.version or "sweep_key" not in batch:
                continue
            rows = {str(k): j for j, k in enumerate(batch["sweep_key"].values)}
            for i in idx:
                j = rows.get(keys[i])
                if j is None or str(batch["sweep_point"].values[j]) != _canon(dict(points[i])):
                    log.warning("numalab sweep: %s does not hold point %s; recomputing", path, keys[i])
                    continue
                one = batch.isel(point=j).drop_vars(["sweep_key", "sweep_point", "sweep_attrs"])
                one.attrs = json.loads(str(batch["sweep_attrs"].values[j]))
                found[i] = _normalise_point_ds(one)
        return found

    def store(self, keys: list[str], points: list[dict], dsets: list) -> None:
        """Write one finished batch, then link each point's key to it."""
        import xarray as xr

        out = xr.concat(
            [d.assign_attrs({}) for d in dsets], dim="point", join="outer", coords="minimal",
            compat="override", combine_attrs="drop",
        )
        out["sweep_key"] = ("point", np.asarray(keys, dtype=str))
        out["sweep_point"] = ("point", np.asarray([_canon(dict(p)) for p in points], dtype=str))
        out["sweep_attrs"] = ("point", np.asarray([_canon_attr(d.attrs) for d in dsets], dtype=str))
        for v in out.data_vars:
            if v in dsets[0].data_vars:
                out[v].attrs = dict(dsets[0][v].attrs)
        out.attrs = {"sweep_version": self.version, "sweep_kind": self.kind, "title": "numalab sweep cache batch"}
        encoding = {v: {"_FillValue": None} for v in out.variables if out[v].dtype.kind in "iufc"}
        name = f"{uuid.uuid4().hex}.nc"
        write_netcdf(out, self.batches / name, encoding=encoding)
        for key in keys:
            link = self.path(key)
            tmp_link = self.dir / f".{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
            os.symlink(f"batches/{name}", tmp_link)
            os.replace(tmp_link, link)  # atomic, and replaces a link of an earlier run

    def sweep_stale_tmp(self, older_than_s: float = 3600.0) -> None:
        """Remove temporary files left by killed sweeps (only old ones: another may be writing)."""
        now = time.time()
        for tmp in [*self.dir.glob(".*.tmp"), *self.batches.glob(".*.tmp")]:
            try:
                if now - tmp.lstat().st_mtime > older_than_s:
                    tmp.unlink()
            except OSError:
                pass


# ------------------------------------------------------------------------------ execution
def _call_runner(run: Callable, points: list[dict]) -> list:
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
    return [_normalise_point_ds(d.drop_vars("point", errors="ignore")) for d in out]


def _plan_batches(grid: _Grid, todo: list[int], points: list[dict], workers: int, batch_size) -> list[list[int]]:
    """Group the missing points by batch key, then cut each group into about 4 tasks per worker.

    Within a group points stay in grid order, seed fastest, so a chunk holds whole seed vectors
    of a few policy settings: the engine vectorises over seeds (replicas) and runs each policy
    as its own batch, so cutting between policies costs nothing and lets the workers balance
    workloads of very different cost."""
    groups: dict[Hashable, list[int]] = {}
    bkey = [n for n in grid.names if n not in grid.runner.batch_vary]
    for i in todo:
        groups.setdefault(tuple(_canon(points[i][n]) for n in bkey), []).append(i)
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


def _default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _run_local(run, batches, points, workers, on_done) -> str:
    """Run the batches on local processes; returns the executor used ("local" or "in-process").

    One point of the largest batch first runs alone in this process as a probe: when all the
    other points would take less than :data:`POOL_MIN_S` at that pace (unbatched, so an
    overestimate), starting worker processes (about a second each: a fresh interpreter
    importing numpy, xarray and numalab) would cost more than it saves, and the rest runs
    here too. The probe costs one point's time, whatever the size of the sweep."""
    if workers <= 1 or len(batches) <= 1:
        for b in batches:
            on_done(b, _call_runner(run, [points[i] for i in b]))
        return "in-process"
    t0 = time.perf_counter()
    probe, batches = batches[0][:1], [batches[0][1:], *batches[1:]]
    on_done(probe, _call_runner(run, [points[i] for i in probe]))
    pace = time.perf_counter() - t0
    batches = [b for b in batches if b]
    if pace * sum(map(len, batches)) < POOL_MIN_S or len(batches) <= 1:
        for b in batches:
            on_done(b, _call_runner(run, [points[i] for i in b]))
        return "in-process"
    ctx = multiprocessing.get_context("forkserver")
    pool = cf.ProcessPoolExecutor(max_workers=min(workers, len(batches)), mp_context=ctx)
    ok = False
    try:
        futs = {pool.submit(_call_runner, run, [points[i] for i in b]): b for b in batches}
        for fut in cf.as_completed(futs):
            on_done(futs[fut], fut.result())
        ok = True
        return "local"
    finally:
        if not ok:
            # an error or Ctrl-C: finished points are cached already; do not wait for the
            # batches still running (they may take minutes), stop our worker processes
            procs = list((getattr(pool, "_processes", None) or {}).values())  # shutdown() drops the map
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                proc.terminate()
        pool.shutdown(wait=True)


def _connect(client):
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


def _cluster_threads(client) -> int:
    try:
        info = client.scheduler_info()["workers"]
        return max(1, sum(int(w.get("nthreads", 1)) for w in info.values()))
    except Exception:
        return 1


def _run_dask(client, run, batches, points, on_done) -> None:
    from distributed import as_completed

    futs = {}
    for b in batches:
        key = f"numalab-sweep-{uuid.uuid4().hex}"
        futs[client.submit(_call_runner, run, [points[i] for i in b], key=key, pure=False)] = b
    try:
        for fut in as_completed(list(futs), loop=client.loop):
            if fut.status == "error":
                exc = fut.exception()
                raise exc.with_traceback(None)
            on_done(futs[fut], fut.result())
    finally:
        client.cancel([f for f in futs if not f.done()])


# ------------------------------------------------------------------------------ progress
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


def _progress_bar(progress: bool, total: int, initial: int, kind: str):
    if not progress or not _interactive():
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=f"numalab sweep ({kind})", unit="point", smoothing=0.1)


# ------------------------------------------------------------------------------ assembly
def _assemble(grid: _Grid, results: list):
    """Stack one Dataset per point into the (swept..., seed, model dims...) Dataset."""
    import xarray as xr

    first = results[0]
    dims = list(grid.swept) + ["seed"]
    shape = [len(grid.values[d]) for d in grid.swept] + [len(grid.seeds)]
    # points are in C order of (all names..., seed); fixed names have length 1, so a reshape works
    same = all(
        set(r.data_vars) == set(first.data_vars)
        and all(r[v].dims == first[v].dims and r[v].shape == first[v].shape for v in first.data_vars)
        for r in results
    )
    if same:
        data_vars = {}
        for v in first.data_vars:
            arr = np.stack([r[v].values for r in results]).reshape(shape + list(first[v].shape))
            data_vars[v] = (dims + list(first[v].dims), arr, dict(first[v].attrs))
        coords = {c: first.coords[c] for c in first.coords}
        ds = xr.Dataset(data_vars, coords=coords)
    else:  # model dims differ between points (e.g. series of different length): outer join
        # on the model's index coords, missing cells NaN (integers become floats)
        cat = xr.concat(results, dim="point", join="outer", combine_attrs="drop", coords="minimal",
                        compat="override", data_vars="all")
        var_attrs = {}
        for r in results:  # a variable only some points have (NaN elsewhere) keeps its attrs
            for v in r.data_vars:
                var_attrs.setdefault(v, dict(r[v].attrs))
        data_vars = {}
        for v in cat.data_vars:
            var = cat[v].transpose("point", ...)
            arr = var.values
            data_vars[v] = (dims + list(var.dims[1:]), arr.reshape(shape + list(arr.shape[1:])), var_attrs[v])
        coords = {c: cat.coords[c] for c in cat.coords if c in cat.dims and c != "point"}
        ds = xr.Dataset(data_vars, coords=coords)
    for name in grid.keys:  # parameters left at their default are recorded in attrs only
        p = grid.params[name]
        vals = grid.values[name]
        if name in grid.swept:
            ds = ds.assign_coords({name: (name, _coord_array(vals), p.coord_attrs())})
        else:
            ds = ds.assign_coords({name: ((), _coord_array(vals)[0], p.coord_attrs())})
    ds = ds.assign_coords(seed=("seed", np.asarray(grid.seeds, dtype=np.int64), {"units": "1", "long_name": "random seed of the replica"}))
    shared = {}
    for k, v in first.attrs.items():
        if k == "numalab_version" and v == __version__:
            continue  # set below
        if all(_canon_attr(r.attrs.get(k, None)) == _canon_attr(v) for r in results):
            shared[k if k not in _RESERVED_ATTRS else f"model_{k}"] = v
    ds.attrs = {
        **shared,
        "numalab_version": __version__,
        "sweep_kind": grid.kind,
        "parameters": _canon({n: grid.values[n] if n in grid.swept else grid.values[n][0] for n in grid.names}),
        "swept": list(grid.swept) if len(grid.swept) != 1 else grid.swept[0],
        "seeds": _canon(grid.seeds),
        "title": f"numalab {grid.kind} sweep over {', '.join(grid.swept) or 'seeds'}",
    }
    return ds


_RESERVED_ATTRS = {"numalab_version", "sweep_kind", "parameters", "swept", "seeds", "title"}


def _canon_attr(v) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def _coord_array(vals: list) -> np.ndarray:
    if all(isinstance(v, int) for v in vals):
        return np.asarray(vals, dtype=np.int64)
    if all(isinstance(v, (int, float)) for v in vals):
        return np.asarray(vals, dtype=np.float64)
    return np.asarray([str(v) for v in vals])  # mixed ints and names ("adaptive") -> strings


# ------------------------------------------------------------------------------ public API
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
        ``history`` and any ``numalab.engine.simulate`` option; futex: ``mode``, ``buckets``,
        ``threads``, ... (``numalab.sweep.get_runner(kind).params()`` lists them).
    seeds : int or list of int
        ``n`` means seeds ``0 .. n-1``. Always a dim of the result.
    cache : bool or path
        ``True``: :func:`default_cache_dir`; a path: that directory; ``False``: no cache.
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
        at most :data:`MAX_BATCH`).

    Returns
    -------
    xarray.Dataset
        dims ``(*swept, "seed", *model dims)``; see the module docstring.
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
    g = _expand(grid, seeds, kind)
    if workers is not None:
        workers = check_int("workers", workers, lo=1, hi=4096)
    if batch_size is not None:
        batch_size = check_int("batch_size", batch_size, lo=1, hi=MAX_BATCH)
    if not isinstance(progress, (bool, np.bool_)):
        raise NumalabValueError(f"progress={progress!r} must be True or False")
    points = g.points()
    keys = [point_key(g.kind, p) for p in points]
    results: list = [None] * len(points)
    notes: list[str] = []

    store = None
    if cache is not False and cache is not None:
        if cache is True:
            root = default_cache_dir()
        elif isinstance(cache, (str, os.PathLike)):
            root = Path(cache)
        else:
            raise NumalabValueError(f"cache={cache!r} must be True, False or a directory path")
        store = _Cache(root, g.kind)
        store.sweep_stale_tmp()
        for i, d in store.load_many(keys, points).items():
            results[i] = d
    todo = [i for i, r in enumerate(results) if r is None]
    cached = len(points) - len(todo)
    if store is not None and todo:
        others = store.other_versions()
        if others:
            msg = (
                f"cache {store.root} holds results of numalab {', '.join(others)}, not {store.version}; "
                f"they are not reused: computing {len(todo)} point(s) again"
            )
            warnings.warn(msg, StaleCacheWarning, stacklevel=3)
            notes.append(msg)

    if todo:
        if g.runner.prepare is not None:
            try:
                g.runner.prepare({n: list(g.values[n]) for n in g.names})
            except ImportError:
                pass  # reported just below, naming the module
        why = g.runner.missing()
        if why:
            raise NumalabValueError(f"kind={g.kind!r} cannot run here: {why}")
    owned = False
    dask_client = None
    if client is not None and not isinstance(client, str):
        _connect(client)  # type check only
    if client is not None and todo:  # nothing to compute: no need for the cluster to be up
        dask_client, owned = _connect(client)
    executor = "cache"
    calls = 0
    try:
        if todo:
            if dask_client is not None:
                n = _cluster_threads(dask_client)
                executor = "dask"
            else:
                n = workers or _default_workers()
                executor = "local" if n > 1 else "in-process"
            batches = _plan_batches(g, todo, points, n, batch_size)
            calls = len(batches)
            bar = _progress_bar(progress, len(points), cached, g.kind)

            def on_done(batch, dsets):
                if store is not None:
                    store.store([keys[i] for i in batch], [points[i] for i in batch], dsets)
                for i, d in zip(batch, dsets):
                    results[i] = d
                if bar is not None:
                    bar.update(len(batch))

            try:
                if dask_client is not None:
                    _run_dask(dask_client, g.runner.run, batches, points, on_done)
                else:
                    executor = _run_local(g.runner.run, batches, points, n, on_done)
            finally:
                if bar is not None:
                    bar.close()
    finally:
        if owned:
            dask_client.close()
    ds = _assemble(g, results)
    return SweepResult(
        dataset=ds,
        points=len(points),
        computed=len(todo),
        cached=cached,
        tasks=calls,
        seconds=time.perf_counter() - t0,
        executor=executor,
        cache_dir=str(store.root) if store is not None else None,
        notes=notes,
    )


# ------------------------------------------------------------------------------ built-in runners
def _names_or_str(label: str, lister: Callable[[], Iterable[str]] | None):
    """A check that accepts known names when the model module can list them, else any string."""

    def check(name, value):
        check_str(name, value)
        if lister is not None:
            try:
                known = list(lister())
            except Exception:  # model module not importable yet: validated when run
                return value
            check_choice(name, value, known)
        return value

    check.__doc__ = f"one of the known {label}"
    return check


def _topology_names():
    from .topology import Topology

    return Topology.presets()


def _workload_names():
    from .workloads import workloads

    return workloads()


def _profile_names():
    from .policy import Policy

    return Policy.profiles()


HISTORY_WORDS = ("profile", "adaptive")


def _check_history(name, value):
    """An integer window count 1..64, "adaptive", or "profile" (the profile's own count)."""
    if isinstance(value, str) and value in HISTORY_WORDS:
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise NumalabValueError(
            f"{name}={value!r} must be an integer 1..64 or one of {', '.join(HISTORY_WORDS)}"
        )
    return check_int(name, value, lo=1, hi=64)


_NUMA_FIXED = ("workload", "topology", "profile", "history", "policy")
_POLICY_KNOBS = ("policy", "profile", "history")
#: grid name -> numalab.workloads.workload() override; 0 means "the workload's own value"
_WORKLOAD_OVERRIDES = {
    "workload_threads": "threads",
    "workload_loops": "loops",
    "workload_size_bytes": "size_bytes",
    "workload_nproc": "nproc",
}


def _check_override(name, value):
    return check_int(name, value, lo=0)


def _numa_params() -> list[Param]:
    params = [
        Param("workload", _names_or_str("workloads", _workload_names), default="numa01",
              long_name="autonuma-benchmark workload"),
        Param("topology", _names_or_str("topologies", _topology_names), default="2s-128",
              long_name="machine topology preset"),
        Param("profile", _names_or_str("policy profiles", _profile_names), default="6.12",
              long_name="kernel scan-filter profile"),
        Param("history", _check_history, default="profile", units="windows",
              long_name="access-PID history length (profile = the profile's own)",
              kernel_name="NR_ACCESS_PID_HIST"),
        Param("policy", _check_policy, default="",
              long_name="scan-filter policy ('6.12', '6.12+N=4'); replaces profile and history"),
    ]
    params += [
        Param("workload_threads", _check_override, default=0, units="threads",
              long_name="threads per process (0 = the workload's own)"),
        Param("workload_loops", _check_override, default=0, units="loops",
              long_name="benchmark loops (0 = the workload's own)"),
        Param("workload_size_bytes", _check_override, default=0, units="bytes",
              long_name="buffer bytes per process (0 = the workload's own)"),
        Param("workload_nproc", _check_override, default=0, units="processes",
              long_name="processes, numa01 only (0 = the workload's own)"),
    ]
    for name, default in _engine_options().items():
        params.append(Param(name, _typed_check(default), default=default, long_name=f"engine option {name}"))
    return params


def _engine_options() -> dict:
    """Options of ``numalab.engine.simulate`` with a scalar default: its keyword parameters and
    ``engine.DEFAULTS`` (bools become 0/1 in the grid; options whose default is None, such as
    ``pid_base``, are not sweepable)."""
    try:
        from . import engine
    except ImportError:
        return {}
    found = dict(getattr(engine, "DEFAULTS", {}))
    for p in inspect.signature(engine.simulate).parameters.values():
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or p.default is inspect.Parameter.empty:
            continue
        found[p.name] = p.default
    out = {}
    for name, d in found.items():
        if name in ("workload", "policies", "seeds", *_NUMA_FIXED, *_WORKLOAD_OVERRIDES):
            continue
        if d is None or not isinstance(d, (str, int, float, bool)):
            continue
        out[name] = int(d) if isinstance(d, bool) else d
    return out


def _typed_check(default):
    """A check that keeps a value of the default's type (int 0/1 for bools), so 1 and 1.0 are
    one point, not two."""

    def check(name, value):
        if isinstance(default, float):
            from .errors import check_number

            return check_number(name, value)
        if isinstance(default, int):
            return check_int(name, value)
        return check_str(name, value)

    return check


def _engine_kwargs(point: Mapping) -> dict:
    """The engine options of a point, with 0/1 turned back into bools where the engine's
    default is a bool."""
    from . import engine

    bools = {k for k, v in getattr(engine, "DEFAULTS", {}).items() if isinstance(v, bool)}
    skip = ("seed", *_NUMA_FIXED, *_WORKLOAD_OVERRIDES)
    return {k: (bool(v) if k in bools else v) for k, v in point.items() if k not in skip}


def _check_policy(name, value):
    """A policy name as :class:`numalab.policy.Policy` writes it: ``"6.12"`` or ``"6.12+N=4"``
    ("" = built from ``profile`` and ``history``)."""
    if value == "":
        return value
    check_str(name, value)
    profile, _, rest = value.partition("+")
    check_choice(name, profile, _safe_list(_profile_names) or [profile])
    if rest and not (rest.startswith("N=") and rest[2:].isdigit()):
        raise NumalabValueError(
            f"{name}={value!r}: allowed: a profile name or '<profile>+N=<windows>', e.g. '6.12+N=4'"
        )
    return value


def _safe_list(lister) -> list:
    try:
        return list(lister())
    except Exception:
        return []


def _numa_policy(point: Mapping):
    """The :class:`~numalab.policy.Policy` of a point: ``policy`` if given, else
    ``Policy.profile(profile)`` with ``history`` windows ("profile": the profile's own)."""
    from .policy import Policy

    if point.get("policy"):
        profile, _, rest = point["policy"].partition("+")
        return Policy.profile(profile, history=int(rest[2:])) if rest else Policy.profile(profile)
    if point["history"] == "profile":
        return Policy.profile(point["profile"])
    return Policy.profile(point["profile"], history=point["history"])


def _numa_workload(point: Mapping):
    from .workloads import workload

    overrides = {w: point[g] for g, w in _WORKLOAD_OVERRIDES.items() if point.get(g, 0)}
    return workload(point["workload"], point["topology"], **overrides)


def _numa_prepare(values: dict) -> None:
    """Build every policy and every workload once, so a bad combination fails before any work."""
    if values["policy"] != [""] and (values["profile"] != ["6.12"] or values["history"] != ["profile"]):
        raise NumalabValueError("give policy= or profile=/history=, not both (policy names the profile)")
    for combo in itertools.product(values["policy"], values["profile"], values["history"]):
        _numa_policy(dict(zip(("policy", "profile", "history"), combo)))
    names = ["workload", "topology", *_WORKLOAD_OVERRIDES]
    for combo in itertools.product(*(values[n] for n in names)):
        _numa_workload(dict(zip(names, combo)))


def run_numa(points: list[dict]):
    """Point runner of the NUMA engine: one ``engine.simulate`` call per set of policies that
    share their seeds (all points share workload, topology and engine options)."""
    import xarray as xr

    from . import engine

    p0 = points[0]
    wl = _numa_workload(p0)
    opts = _engine_kwargs(p0)
    seeds_of: dict[tuple, list[int]] = {}
    for p in points:
        pk = tuple(p[k] for k in _POLICY_KNOBS)
        seeds_of.setdefault(pk, []).append(p["seed"])
    # policies with the same seed set go into one call (policies x seeds vectorised)
    calls: dict[tuple, list[tuple]] = {}
    for pk, s in seeds_of.items():
        calls.setdefault(tuple(sorted(s)), []).append(pk)
    out: dict[tuple, xr.Dataset] = {}
    for seeds, pks in calls.items():
        pols = [_numa_policy(dict(zip(_POLICY_KNOBS, pk))) for pk in pks]
        ds = engine.simulate(wl, pols, seeds=list(seeds), **opts)
        if "time" in ds.dims:  # series have run-dependent lengths; a sweep keeps per-run figures
            ds = ds.drop_dims("time")
        try:
            record = json.loads(ds.attrs.get("parameters", "{}"))
        except ValueError:
            record = None
        for j, pk in enumerate(pks):
            one = ds.isel(policy=j)
            if isinstance(record, dict) and "policies" in record:
                # the engine records the call's policy list; a point records its own policy only,
                # so what is stored does not depend on which policies shared the call
                rec = {k: v for k, v in record.items() if k != "policies"}
                rec["policy"] = record["policies"][j] if len(record["policies"]) == len(pks) else pols[j].name
                one.attrs = {**ds.attrs, "parameters": json.dumps(rec, sort_keys=True)}  # a new dict: isel shares attrs
            for si, s in enumerate(seeds):
                out[(pk, s)] = one.isel(seed=si)
    return [out[(tuple(p[k] for k in _POLICY_KNOBS), p["seed"])] for p in points]


def _futex_choices(attr: str):
    def lister():
        from . import futex

        return getattr(futex, attr)

    return lister


def _check_buckets(name, value):
    return check_int(name, value, lo=-1, hi=1 << 30)


def _check_threads(name, value):
    return check_int(name, value, lo=0, hi=1 << 20)


def _check_pos_int(name, value):
    return check_int(name, value, lo=1)


def _futex_params() -> list[Param]:
    return [
        Param("mode", _names_or_str("futex modes", _futex_choices("MODES")), default="private",
              long_name="futex hash mode (classic <= 6.15, numa 6.16, private 6.17)"),
        Param("buckets", _check_buckets, default=-1, units="buckets",
              long_name="private-hash slots (private) or global table size (classic/numa); "
                        "-1 = the kernel's size, 0 = global hash (private mode)",
              kernel_name="futex_hash_mask + 1"),
        Param("threads", _check_threads, default=0, units="threads",
              long_name="perf bench -t / futex_numa -c (0 = the program's default)"),
        Param("topology", _names_or_str("topologies", _topology_names), default="2s-128",
              long_name="machine topology preset"),
        Param("program", _names_or_str("futex programs", _futex_choices("PROGRAMS")),
              default="perf-bench-futex-hash", long_name="benchmark program"),
        Param("futexes", _check_pos_int, default=1024, units="futexes",
              long_name="futexes per thread (perf bench -f)"),
        Param("shared", _check_threads, default=0, units="1",
              long_name="1 = process-shared futexes (perf bench -S)"),
        Param("method", _names_or_str("futex solvers", _futex_choices("METHODS")), default="mva",
              long_name="solver: mva or simulation"),
        Param("ops", _check_pos_int, default=400, units="operations",
              long_name="operations per thread (method=simulation)"),
    ]


def _futex_workload(point: Mapping):
    from . import futex

    kw = {}
    if point["program"] == "perf-bench-futex-hash":
        kw = {"futexes": point["futexes"], "shared": bool(point["shared"])}
    return futex.workload_for(
        point["program"], point["topology"], mode=point["mode"],
        buckets=None if point["buckets"] == -1 else point["buckets"],
        threads=point["threads"] or None, **kw,
    )


def _futex_prepare(values: dict) -> None:
    """Build every futex workload once, so a bad combination fails before any work."""
    names = ["program", "topology", "mode", "buckets", "threads", "futexes", "shared"]
    for combo in itertools.product(*(values[n] for n in names)):
        _futex_workload(dict(zip(names, combo)))


def run_futex(points: list[dict]):
    """Point runner of the futex model: one ``futex.simulate`` call per point.

    Not one call for all seeds: the MVA fixed point stops when the *largest* change over the
    call's points is below tolerance, so a seed solved next to other seeds can differ in the
    last bits from the same seed solved alone -- and a sweep must not depend on its batching.
    The workload is built once per batch (all points share it)."""
    from . import futex

    p0 = points[0]
    wl = _futex_workload(p0)
    return [futex.simulate(wl, seeds=[p["seed"]], method=p0["method"], ops=p0["ops"]).isel(seed=0)
            for p in points]


register_runner(Runner(
    "numa", _numa_params, run_numa,
    batch_vary=_POLICY_KNOBS,
    requires=("numalab.engine", "numalab.workloads", "numalab.policy"),
    prepare=_numa_prepare,
    description="NUMA-balancing engine (numalab.engine.simulate)",
))
register_runner(Runner(
    "futex", _futex_params, run_futex,
    batch_vary=(),
    requires=("numalab.futex",),
    prepare=_futex_prepare,
    description="futex hash-bucket model (numalab.futex.simulate)",
))

"""Parameter grids -> one labelled :class:`xarray.Dataset`; local or dask execution; on-disk cache.

A sweep is the full factorial product of a ``grid`` (parameter name -> list of values) and a list
of seeds. Each (parameter combination, seed) is one **point**. Points whose *batch key*
parameters are equal (every parameter but the runner's ``batch_vary`` ones: for the NUMA engine
the same workload, topology and engine options, i.e. the same array shapes) are handed to the
model together, so several policies x seeds advance in one vectorised call.

The machinery is model-agnostic (like Mesa's ``batch_run``, it knows no model): a model plugs
in through a :class:`Runner` registered with :func:`register_runner`. Two runners are built in,
each in its own module that registers it when imported; :func:`get_runner` imports it the first
time its kind is asked for (``registry.BUILTIN_RUNNERS`` lists where they live):

``"numa"`` (:mod:`numalab.engine.runner`)
    :func:`numalab.engine.simulate`: ``workload``, ``topology``, ``profile``, ``history`` or
    ``policy``, workload overrides and every engine option with a scalar default.
``"futex"`` (:mod:`numalab.futex.runner`)
    :func:`numalab.futex.simulate`: ``mode``, ``buckets``, ``threads``, ``topology``, ...

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
a link to the file of the batch the point was computed in, see :class:`cache.Cache`), where the hash
covers (numalab version, cache format, a digest of numalab's sources, kind, every parameter,
seed); ``<dir>`` is
``$NUMALAB_CACHE`` if set, else ``$XDG_CACHE_HOME/numalab/sweep``, else
``~/.cache/numalab/sweep``. ``cache="path"`` picks the directory, ``cache=False`` turns caching
off. Files are written to a temporary name and renamed with :func:`os.replace`, so a sweep killed
at any moment (even with SIGKILL) leaves only whole points; running it again computes only the
missing ones. Results of another numalab version, or of edited sources
(:func:`grid.model_digest`), are never reused: the sweep warns once
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

Modules
-------
``grid``       grid expansion, seeds, point keys (:func:`point_key`)
``cache``      the per-point h5netcdf cache (atomic writes, resume), :func:`default_cache_dir`
``executors``  in-process, local process pool, dask.distributed; the progress bar
``assembly``   one labelled Dataset from the points' Datasets
``registry``   :class:`Param`, :class:`Runner`, :func:`register_runner`, :func:`get_runner`
``api``        :func:`sweep` and :func:`run_sweep`, a sequence of the steps above
"""

from __future__ import annotations

from .api import CacheWriteWarning, SweepResult, run_sweep, sweep
from .cache import StaleCacheWarning, default_cache_dir
from .executors import MAX_BATCH
from .grid import CACHE_FORMAT, point_key
from .registry import Param, Runner, get_runner, register_runner, runners

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
    "CacheWriteWarning",
    "CACHE_FORMAT",
    "MAX_BATCH",
]

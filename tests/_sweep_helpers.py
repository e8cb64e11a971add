"""A tiny deterministic point runner for tests/test_sweep.py (importable by worker processes).

Importing this module registers the ``"toy"`` kind through the public hook
``numalab.sweeps.register_runner``. The runner is slow on demand (``NUMALAB_TOY_SLEEP_S`` seconds
per point, read at call time) so a test can kill a sweep halfway, and it counts the points it
computed in this process (``CALLS``) so a test can check that a cache hit computes nothing.

Run as a script it performs one cached toy sweep (used as the child process of the
kill-and-resume test)::

    python tests/_sweep_helpers.py CACHE_DIR
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
import zlib

import numpy as np
import xarray as xr

from numalab.errors import check_int, check_number
from numalab.errors import check_str
from numalab.sweeps import Param, Runner, register_runner

CALLS: list[int] = []  # points per run_toy call, in this process
IMPORTED_IN = os.getpid()  # the process that imported this module (a worker's forkserver, if preloaded)


def _check_size(name, value):
    return check_int(name, value, lo=1, hi=64)


def _check_rate(name, value):
    return check_number(name, value, lo=0.0)


def run_toy(points: list[dict]) -> xr.Dataset:
    """Per point: a sum of ``size`` uniform draws from the point's own generator, scaled by
    ``rate`` and shifted by a CRC of ``label``; plus a uint64 count vector over ``bin``.
    Every point draws from ``default_rng([seed, size])`` only, so results do not depend on
    the batch."""
    sizes = {p["size"] for p in points}
    if len(sizes) != 1:  # the batch key contract: size fixes the shapes
        raise AssertionError(f"one batch mixed sizes {sorted(sizes)}")
    CALLS.append(len(points))
    log = os.environ.get("NUMALAB_TOY_IMPORT_LOG")
    if log:  # which process ran the batch, and which one had imported this module
        with open(log, "a") as f:
            f.write(f"{os.getpid()} {IMPORTED_IN} {int(multiprocessing.parent_process() is not None)}\n")
    sleep = float(os.environ.get("NUMALAB_TOY_SLEEP_S", "0"))
    value = np.empty(len(points))
    counts = np.empty((len(points), 3), dtype=np.uint64)
    for i, p in enumerate(points):
        if p.get("die_in_worker") and multiprocessing.parent_process() is not None:
            os._exit(3)  # a worker process killed mid-batch (tests of the executors' error)
        nap = p.get("sleep_s", sleep)  # a point may carry its own (tests of the executors' probe)
        if nap:
            time.sleep(nap)
        draws = np.random.default_rng([p["seed"], p["size"]]).random(p["size"])
        value[i] = draws.sum() * p["rate"] + zlib.crc32(p["label"].encode()) % 1000
        counts[i] = np.histogram(draws, bins=3, range=(0.0, 1.0))[0].astype(np.uint64) + np.uint64(2**63)
    ds = xr.Dataset(
        {
            "value": (("point",), value, {"units": "s", "long_name": "toy elapsed time"}),
            "counts": (("point", "bin"), counts, {"units": "1", "long_name": "draws per third", "kernel_name": "toy_hist"}),
        },
        coords={"bin": ("bin", np.arange(3), {"units": "1", "long_name": "bin"})},
        attrs={"model": "toy", "model_version": 1},
    )
    if points[0].get("ragged", 0):  # a series whose length depends on the point, like a time series
        size = points[0]["size"]
        draws = np.stack([np.random.default_rng([p["seed"], p["size"]]).random(size) for p in points])
        ds["draws"] = (("point", "draw"), draws, {"units": "1", "long_name": "the draws"})
        ds = ds.assign_coords(draw=("draw", np.arange(size), {"units": "1", "long_name": "draw"}))
    return ds


TOY = register_runner(
    Runner(
        kind="toy",
        parameters=[
            Param("size", _check_size, default=4, units="draws", long_name="draws per point"),
            Param("rate", _check_rate, default=1.0, units="s", long_name="seconds per draw"),
            Param("label", check_str, default="a", long_name="label"),
            Param("ragged", lambda n, v: check_int(n, v, lo=0, hi=1), default=0, long_name="add a series"),
        ],
        run=run_toy,
        batch_vary=("rate", "label"),
        description="deterministic test runner",
    ),
    replace=True,
)

KILL_GRID = {"size": [3, 5], "rate": [1.0, 2.0, 0.5], "label": ["a", "b"]}
KILL_SEEDS = 4  # 2 * 3 * 2 * 4 = 48 points


def main(argv: list[str]) -> int:
    from numalab.sweeps import sweep

    sweep(KILL_GRID, seeds=KILL_SEEDS, cache=argv[0], progress=False, kind="toy", workers=1, batch_size=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

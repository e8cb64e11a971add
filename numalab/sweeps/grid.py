"""Grid expansion and point keys: a grid (parameter name -> values) x seeds -> points.

A sweep is the full factorial product of a ``grid`` and a list of seeds; each (parameter
combination, seed) is one **point**, identified on disk by :func:`point_key`.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from numalab._version import __version__
from numalab.errors import NumalabValueError, check_memory, check_seeds

from .registry import Param, Runner, get_runner, runners

__all__ = ["Grid", "expand", "infer_kind", "point_key", "canon", "code_version", "model_digest", "CACHE_FORMAT"]

#: Bumped when the on-disk layout of a cached point changes; part of every point's hash.
#: 2: batch files named by the sha256 of their bytes, each point's variables recorded.
CACHE_FORMAT = 2


def code_version() -> str:
    """The version string cached points are keyed by: numalab's version, the cache format and
    :func:`model_digest` of the installed sources (``"0.5.0+c2+m<12 hex>"``)."""
    return f"{__version__}+c{CACHE_FORMAT}+m{model_digest()}"


@functools.lru_cache(maxsize=None)
def model_digest(root: Path | None = None) -> str:
    """The first 12 hex digits of a sha256 over numalab's Python sources (``root``: the package
    directory, default the installed one), each file's relative path and bytes in path order.

    The version alone would let an edited model, an editable install or a checkout between two
    releases, reuse points the old code computed. With the digest in the key, any change to a
    source file starts a new cache directory. That includes presentation code, because the
    digest cannot tell which files a number depends on. Only ``.py`` files are read (no
    compiled ones), so the digest is the same on every machine that has the same sources."""
    root = Path(root) if root is not None else Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for rel in sorted(q.relative_to(root).as_posix() for q in root.rglob("*.py")):
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return h.hexdigest()[:12]


def canon(value) -> str:
    """The canonical JSON text of a value (sorted keys): what point keys and cache rows hash."""
    return json.dumps(value, sort_keys=True)


def point_key(kind: str, point: Mapping, version: str | None = None) -> str:
    """The cache key of one point: sha256 over (version, kind, every parameter, seed)."""
    record = {"numalab": version or code_version(), "kind": kind, "point": dict(point)}
    return hashlib.sha256(canon(record).encode()).hexdigest()


@dataclass(frozen=True)
class Grid:
    """An expanded grid: every parameter's normalised values, the seeds, and the runner."""

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


def infer_kind(keys: list[str]) -> str:
    """The runner whose parameters cover the grid keys (the first kind first: "numa"); when none
    covers them, the one sharing most keys, so the error names the unknown ones for the likely
    model."""
    order = runners()
    overlap = {k: len(set(keys) & set(get_runner(k).params())) for k in order}
    fits = [k for k in order if overlap[k] == len(set(keys))]
    if fits:
        return fits[0]
    return max(order, key=lambda k: overlap[k])  # max keeps the first of equals


def _grid_keys(grid) -> list[str]:
    if not isinstance(grid, Mapping):
        raise NumalabValueError(f"grid={grid!r} must be a mapping of parameter name -> list of values")
    keys = list(grid)
    for k in keys:
        if not isinstance(k, str):
            raise NumalabValueError(f"grid key {k!r} must be a string parameter name")
    if "seed" in keys:
        raise NumalabValueError("grid key 'seed' is not allowed; pass seeds=... instead")
    return keys


def _values(name: str, raw, param: Param) -> list:
    """The normalised, distinct values of one grid entry (a scalar fixes the parameter)."""
    if isinstance(raw, (str, bytes)) or not isinstance(raw, (Sequence, np.ndarray)):
        raw = [raw]  # a set has no order: its check refuses it
    raw = list(raw)
    if not raw:
        raise NumalabValueError(f"grid[{name!r}] is an empty list; give at least one value")
    vals = [param.check(name, v) for v in raw]
    if len(set(map(canon, vals))) != len(vals):
        raise NumalabValueError(f"grid[{name!r}]={vals!r} holds duplicates")
    return vals


def expand(grid, seeds, kind) -> Grid:
    """Check ``grid`` against the runner of ``kind`` (inferred from the keys when None), fill in
    the defaults and check the seeds."""
    keys = _grid_keys(grid)
    if kind is None:
        kind = infer_kind(keys)
    runner = get_runner(kind)
    params = runner.params()
    unknown = [k for k in keys if k not in params]
    if unknown:
        raise NumalabValueError(
            f"unknown {kind} sweep parameter(s) {', '.join(map(repr, unknown))}; "
            f"allowed: {', '.join(params)}"
        )
    values = {k: _values(k, grid[k], params[k]) for k in keys}
    names = list(keys)
    for name, p in params.items():
        if name not in values:
            if p.required:
                raise NumalabValueError(f"the {kind} sweep needs parameter {name!r} in the grid")
            values[name] = [p.check(name, p.default)]
            names.append(name)
    swept = tuple(k for k in keys if len(values[k]) > 1)
    seeds = check_seeds(seeds)
    _check_size(values, seeds)
    return Grid(kind, tuple(names), tuple(keys), values, seeds, swept, params, runner)


#: bytes one point costs the calling process: its result Dataset (kept until assembly), its
#: cache key and parameter dict (an overestimate for the small per-point Datasets of the models)
POINT_BYTES = 32 << 10


def _check_size(values, seeds) -> None:
    """Refuse a grid whose points alone would not fit in memory, before any is expanded."""
    n = math.prod(len(v) for v in values.values()) * len(seeds)
    check_memory("grid x seeds", f"{n} points", float(n) * POINT_BYTES)

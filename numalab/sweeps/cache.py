"""The per-point on-disk cache: h5netcdf files written atomically, so a killed sweep resumes.

Each point is stored as ``<dir>/v<version>/<sha256>.nc`` (a link to the file of the batch the
point was computed in, see :class:`Cache`), where the hash is :func:`~numalab.sweeps.grid.point_key`
over (numalab version, cache format, a digest of numalab's sources, kind, every parameter, seed);
``<dir>`` is
``$NUMALAB_CACHE`` if set, else ``$XDG_CACHE_HOME/numalab/sweep``, else
``~/.cache/numalab/sweep``. Files are written to a temporary name and renamed with
:func:`os.replace`, so a sweep killed at any moment (even with SIGKILL) leaves only whole points;
running it again computes only the missing ones. Results of another numalab version or of
edited sources are never reused (:class:`StaleCacheWarning`). Only the process that called the sweep writes files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import uuid
from pathlib import Path

import numpy as np

from numalab.errors import NumalabValueError
from numalab.storage import write_bytes

from . import grid as _grid
from .assembly import canon_attr, normalise_point_ds

__all__ = ["Cache", "StaleCacheWarning", "default_cache_dir", "open_cache"]

log = logging.getLogger("numalab.sweep")


class StaleCacheWarning(UserWarning):
    """The cache directory holds results of another numalab version; they are not reused."""


def default_cache_dir() -> Path:
    """``$NUMALAB_CACHE``, else ``$XDG_CACHE_HOME/numalab/sweep``, else ``~/.cache/numalab/sweep``."""
    env = os.environ.get("NUMALAB_CACHE")
    if env:
        return Path(os.path.expanduser(env))
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(os.path.expanduser(xdg)) if xdg else Path(os.path.expanduser("~")) / ".cache"
    return base / "numalab" / "sweep"


def open_cache(cache, kind: str) -> "Cache | None":
    """The :class:`Cache` a ``cache=`` argument names (True: :func:`default_cache_dir`; a path;
    False or None: no cache), with stale temporary files of killed sweeps removed."""
    if cache is False or cache is None:
        return None
    if cache is True:
        root = default_cache_dir()
    elif isinstance(cache, (str, os.PathLike)):
        root = Path(cache)
    else:
        raise NumalabValueError(f"cache={cache!r} must be True, False or a directory path")
    store = Cache(root, kind)
    store.sweep_stale_tmp()
    return store


class Cache:
    """Points of one numalab version under ``root/v<version>/``.

    A finished task (a batch of points) is written as one h5netcdf file
    ``batches/<sha256 of its bytes>.nc`` with a ``point`` dim (temporary name, then
    :func:`os.replace`), so a file edited or damaged after it was written is known and its
    points computed again; each point records its variables (the batch's other variables are
    NaN for it, never read back as its own); then
    each of its points gets ``<key>.nc``, a symlink to that file, made atomically (a temporary
    link renamed over the name). Opening ``<key>.nc`` therefore opens a whole netCDF file that
    holds the point (row ``sweep_key == key``). One file per batch instead of one per point
    keeps the HDF5 open/decode cost (tens of ms per file) per task, not per point. A sweep
    killed between the two steps leaves a batch file no link points to: its points are simply
    computed again.
    """

    def __init__(self, root: Path, kind: str):
        self.root = Path(os.path.expanduser(root))
        self.kind = kind
        self.version = _grid.code_version()
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
        """{point index: Dataset} for every point whose link and batch file are readable, whose
        file is as it was written (its name is the sha256 of its bytes) and holds the point
        whole (every variable it was stored with)."""
        by_file: dict[Path, list[int]] = {}
        for i, key in enumerate(keys):
            try:
                target = os.readlink(self.path(key))
            except OSError:  # absent (or not a link: not ours)
                continue
            by_file.setdefault(self.dir / target, []).append(i)
        found = {}
        for path, idx in by_file.items():
            found.update(self._load_batch(path, idx, keys, points))
        return found

    def _load_batch(self, path: Path, idx: list[int], keys: list[str], points: list[dict]) -> dict[int, object]:
        """The points ``idx`` from one batch file ({} when it is unreadable, changed since it
        was written, or not ours)."""
        import io

        import xarray as xr

        from numalab import signals

        try:
            data = path.read_bytes()
        except OSError as exc:  # a vanished or unreadable file is a miss, never a crash
            log.warning("numalab sweep: ignoring unreadable cache file %s (%s)", path, exc)
            return {}
        if hashlib.sha256(data).hexdigest() != path.stem:
            log.warning("numalab sweep: cache file %s was changed after it was written (its checksum differs); "
                        "recomputing its points", path)
            return {}
        try:
            with signals.deferred(), xr.open_dataset(io.BytesIO(data), engine="h5netcdf", cache=False) as f:
                batch = f.load()
        except Exception as exc:  # a damaged file is a miss, never a crash
            log.warning("numalab sweep: ignoring unreadable cache file %s (%s)", path, exc)
            return {}
        if batch.attrs.get("sweep_version") != self.version or not {"sweep_key", "sweep_vars"} <= set(batch):
            return {}
        rows = {str(k): j for j, k in enumerate(batch["sweep_key"].values)}
        found = {}
        for i in idx:
            j = rows.get(keys[i])
            if j is None or str(batch["sweep_point"].values[j]) != _grid.canon(dict(points[i])):
                log.warning("numalab sweep: %s does not hold point %s; recomputing", path, keys[i])
                continue
            names = json.loads(str(batch["sweep_vars"].values[j]))
            if not set(names) <= set(batch.data_vars):
                log.warning("numalab sweep: %s lacks variables of point %s; recomputing", path, keys[i])
                continue
            one = batch.isel(point=j)[names]  # only its own variables: the others are the batch's NaN fill
            one.attrs = json.loads(str(batch["sweep_attrs"].values[j]))
            found[i] = normalise_point_ds(one)
        return found

    def store(self, keys: list[str], points: list[dict], dsets: list) -> None:
        """Write one finished batch, named by the sha256 of its bytes, then link each point's key
        to it. An OSError (a full disk) leaves no partial file and is raised to the caller."""
        import xarray as xr

        out = xr.concat(
            [d.assign_attrs({}) for d in dsets], dim="point", join="outer", coords="minimal",
            compat="override", combine_attrs="drop",
        )
        out["sweep_key"] = ("point", np.asarray(keys, dtype=str))
        out["sweep_point"] = ("point", np.asarray([_grid.canon(dict(p)) for p in points], dtype=str))
        out["sweep_attrs"] = ("point", np.asarray([canon_attr(d.attrs) for d in dsets], dtype=str))
        out["sweep_vars"] = ("point", np.asarray([json.dumps(list(d.data_vars)) for d in dsets], dtype=str))
        for v in out.data_vars:
            if v in dsets[0].data_vars:
                out[v].attrs = dict(dsets[0][v].attrs)
        out.attrs = {"sweep_version": self.version, "sweep_kind": self.kind, "title": "numalab sweep cache batch"}
        encoding = {v: {"_FillValue": None} for v in out.variables if out[v].dtype.kind in "iufc"}
        from numalab import signals

        with signals.deferred():
            data = out.to_netcdf(engine="h5netcdf", encoding=encoding)
        name = f"{hashlib.sha256(data).hexdigest()}.nc"
        write_bytes(self.batches / name, data)
        for key in keys:
            link = self.path(key)
            tmp_link = self.dir / f".{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
            try:
                os.symlink(f"batches/{name}", tmp_link)
                os.replace(tmp_link, link)  # atomic, and replaces a link of an earlier run
            except OSError:
                tmp_link.unlink(missing_ok=True)
                raise

    def sweep_stale_tmp(self, older_than_s: float = 3600.0) -> None:
        """Remove temporary files left by killed sweeps (only old ones: another may be writing)."""
        now = time.time()
        for tmp in [*self.dir.glob(".*.tmp"), *self.batches.glob(".*.tmp")]:
            try:
                if now - tmp.lstat().st_mtime > older_than_s:
                    tmp.unlink()
            except OSError:
                pass

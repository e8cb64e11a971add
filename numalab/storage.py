"""Files that are never left half-written: write to a temporary name in the same folder, then
``os.replace`` (atomic on POSIX), removing the temporary file if anything fails."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_write", "write_text", "write_netcdf"]


def atomic_write(path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp_path)`` and move the result to ``path`` only if it succeeded."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # unique per process and call: concurrent writers of one name never share a temporary
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp{path.suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_text(path, text: str) -> Path:
    """Write ``text`` (UTF-8) atomically."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_netcdf(ds, path, **to_netcdf_kwargs) -> Path:
    """Write an xarray Dataset as NetCDF-4 with the h5netcdf engine (which, unlike scipy's,
    holds uint64), atomically; extra keywords (e.g. ``encoding``) go to ``Dataset.to_netcdf``."""
    return atomic_write(path, lambda tmp: ds.to_netcdf(tmp, engine="h5netcdf", **to_netcdf_kwargs))

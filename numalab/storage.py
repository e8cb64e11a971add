"""Files that are never left half-written: write to a temporary name in the same folder, then
``os.replace`` (atomic on POSIX), removing the temporary file if anything fails."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_write", "write_text", "write_netcdf", "read_netcdf", "WriteError", "tmp_name"]


class WriteError(OSError):
    """Writing an output failed (disk full, file too large, permission, ...); nothing was left
    at the destination. ``str()`` is one line naming the file and the reason."""

    def __str__(self) -> str:
        return str(self.strerror if self.strerror else self.args[0] if self.args else "write failed")


def tmp_name(path: Path) -> Path:
    """The temporary file :func:`atomic_write` writes first: hidden, unique per process and
    call, and short (the name is cut to 64 characters) so it fits wherever ``path`` fits."""
    return path.with_name(f".{path.name[:64]}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp{path.suffix[:16]}")


def atomic_write(path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp_path)`` and move the result to ``path`` only if it succeeded.

    On any failure (an exception, Ctrl-C, a full disk, ``ulimit -f``) the temporary file is
    removed and ``path`` is left as it was; an ``OSError`` is raised again as a
    :class:`WriteError` whose message is one line."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(exc.errno, f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    # unique per process and call: concurrent writers of one name never share a temporary
    tmp = tmp_name(path)
    try:
        write(tmp)
        from . import signals

        signals.check()  # interrupted meanwhile: the output is not put in place
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:  # pragma: no cover - the folder itself went away
            pass
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            raise WriteError(exc.errno, f"cannot write {str(path)!r}: {_reason(exc)}") from None
        if _is_h5_write_error(exc):
            raise WriteError(None, f"cannot write {str(path)!r}: {_reason(exc)}") from None
        raise
    return path


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _is_h5_write_error(exc: BaseException) -> bool:
    """HDF5 reports a failed write (e.g. EFBIG under ``ulimit -f``) as RuntimeError / KeyError
    from h5py; those are I/O failures, not bugs."""
    mod = type(exc).__module__ or ""
    return isinstance(exc, (RuntimeError, KeyError)) and ("h5py" in mod or "h5netcdf" in mod or
                                                          "HDF5" in str(exc) or "Can't" in str(exc))


def write_text(path, text: str) -> Path:
    """Write ``text`` (UTF-8) atomically."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_netcdf(ds, path, **to_netcdf_kwargs) -> Path:
    """Write an xarray Dataset as NetCDF-4 with the h5netcdf engine (which, unlike scipy's,
    holds uint64), atomically; extra keywords (e.g. ``encoding``) go to ``Dataset.to_netcdf``.

    The file is built in memory first and then written with plain ``write()`` calls: HDF5
    hitting a full disk or ``ulimit -f`` mid-file crashes the interpreter (a segfault in h5py's
    cleanup), a failed ``write()`` is an ordinary OSError (-> :class:`WriteError`)."""
    from . import signals

    with signals.deferred():  # never interrupt HDF5 in the middle of building the file
        data = ds.to_netcdf(engine="h5netcdf", **to_netcdf_kwargs)
    return atomic_write(path, lambda tmp: _write_bytes(tmp, data))


def _write_bytes(tmp: Path, data) -> None:
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()


def read_netcdf(path, name: str = "FILE"):
    """Load a NetCDF file written by numalab (h5netcdf) into memory.

    A file that is missing, truncated, corrupt or not NetCDF-4 raises one
    :class:`~numalab.errors.NumalabValueError` naming it -- never the KeyError / AttributeError
    h5py raises from deep inside on a damaged file (nor its "Exception ignored" noise)."""
    import gc
    import sys

    import xarray as xr

    from .errors import NumalabValueError, check_in_file

    p = check_in_file(name, path)
    old_hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: None  # h5netcdf's File.__del__ after a failed open
    reason = None
    try:
        try:
            from . import signals

            with signals.deferred(), xr.open_dataset(p, engine="h5netcdf") as ds:
                return ds.load()
        except (OSError, ValueError, KeyError, RuntimeError, TypeError, AttributeError, IndexError) as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
                reason = exc.args[0]
        # raised outside the handler: the failed File objects die with the old exception here,
        # while their noise is silenced, instead of at exit
        gc.collect()
        try:
            from xarray.backends.file_manager import FILE_CACHE

            FILE_CACHE.clear()
        except Exception:  # pragma: no cover - xarray internals moved
            pass
        gc.collect()
    finally:
        sys.unraisablehook = old_hook
    raise NumalabValueError(
        f"{name}={str(path)!r} is not a NetCDF Dataset readable with h5netcdf (truncated or "
        f"damaged?): {reason[:200]}"
    )

"""Files that are never left half-written: write to a temporary name in the same folder, then
``os.replace`` (atomic on POSIX), removing the temporary file if anything fails; and folders of
several files (``numalab reproduce --out DIR``) that never mix two runs (:func:`staged_dir`)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_write", "write_text", "write_bytes", "write_netcdf", "read_netcdf", "WriteError", "tmp_name", "staged_dir",
           "StagedDir", "MANIFEST", "INCOMPLETE"]


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


def write_bytes(path, data: bytes) -> Path:
    """Write ``data`` atomically, with plain ``write()`` calls (a full disk is an OSError)."""
    return atomic_write(path, lambda tmp: _write_bytes(tmp, data))


def write_netcdf(ds, path, **to_netcdf_kwargs) -> Path:
    """Write an xarray Dataset as NetCDF-4 with the h5netcdf engine (which, unlike scipy's,
    holds uint64), atomically; extra keywords (e.g. ``encoding``) go to ``Dataset.to_netcdf``.

    The file is built in memory first and then written with plain ``write()`` calls: HDF5
    hitting a full disk or ``ulimit -f`` mid-file crashes the interpreter (a segfault in h5py's
    cleanup), a failed ``write()`` is an ordinary OSError (-> :class:`WriteError`)."""
    from . import signals

    with signals.deferred():  # never interrupt HDF5 in the middle of building the file
        data = ds.to_netcdf(engine="h5netcdf", **to_netcdf_kwargs)
    return write_bytes(path, data)


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


# --------------------------------------------------------------------------------------------
# a folder of outputs, one run at a time

#: the file that lists the files of the run a folder holds (JSON), written last
MANIFEST = "numalab-run.json"
#: present in a folder while a run's files are being moved in (left only by SIGKILL or a power
#: cut in that window of milliseconds: the folder then mixes two runs, and says so)
INCOMPLETE = ".numalab-incomplete"


class StagedDir:
    """The outputs of one run of a command into the folder ``out``, never mixed with another
    run's: files are written into :attr:`path`, a hidden staging folder inside ``out`` (the
    same file system), and :meth:`commit` moves them in (each ``os.replace`` atomic) in a section
    no signal interrupts, then rewrites :data:`MANIFEST` (the run's files, whether it is
    complete). At the first commit the files an earlier run listed in its manifest and this
    run has not written are removed; files numalab did not write are never touched. Files
    still in the staging folder when the run fails or is interrupted are discarded: the
    folder keeps what was committed, and its manifest says the run is incomplete."""

    def __init__(self, out, command: str | None = None):
        import sys
        import time

        self.out = Path(os.path.expanduser(out))
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WriteError(exc.errno, f"cannot write {str(self.out)!r}: {_reason(exc)}") from None
        _remove_stale_stages(self.out)
        self.run = uuid.uuid4().hex
        self.path = self.out / f".numalab-stage.{os.getpid()}.{self.run[:8]}"
        self.path.mkdir()
        self.files: list[str] = []
        self.commits = 0
        self.meta = {"run": self.run, "command": command if command is not None else " ".join(sys.argv),
                     "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        self.previous = _manifest_files(self.out) if (self.out / MANIFEST).exists() else None
        self.interrupted_before = (self.out / INCOMPLETE).exists()

    def commit(self, complete: bool = False) -> list[Path]:
        """Move the files written so far into the folder; returns their new paths."""
        import time

        from . import signals

        with signals.deferred():
            self.out.mkdir(parents=True, exist_ok=True)
            write_text(self.out / INCOMPLETE, self.run + "\n")
            moved = sorted(p.name for p in self.path.iterdir() if p.is_file() and not p.name.startswith("."))
            for name in moved:
                os.replace(self.path / name, self.out / name)
            self.files = sorted(set(self.files) | set(moved))
            if self.commits == 0 and self.previous:
                for name in set(self.previous) - set(self.files):
                    try:
                        (self.out / name).unlink()
                    except OSError:
                        pass
            self.commits += 1
            import json

            manifest = {**self.meta, "complete": bool(complete), "files": self.files,
                        "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            write_text(self.out / MANIFEST, json.dumps(manifest, indent=1) + "\n")
            (self.out / INCOMPLETE).unlink()
        return [self.out / n for n in moved]

    def discard(self) -> None:
        """Remove the staging folder and what is still in it."""
        import shutil

        shutil.rmtree(self.path, ignore_errors=True)


def _manifest_files(out: Path) -> list[str]:
    import json

    try:
        files = json.loads((out / MANIFEST).read_text()).get("files", [])
    except (OSError, ValueError, AttributeError):
        return []
    # only plain names of this folder: a damaged manifest never removes anything elsewhere
    return [f for f in files if isinstance(f, str) and f and "/" not in f and f not in (".", "..")]


def _remove_stale_stages(out: Path) -> None:
    """Staging folders in ``out`` left by runs that were killed (their process is gone)."""
    import shutil

    from .signals import parent_alive

    for d in out.glob(".numalab-stage.*"):
        try:
            pid = int(d.name.split(".")[2])
        except (ValueError, IndexError):
            continue
        if d.is_dir() and not parent_alive(pid, None):
            shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def staged_dir(out, command: str | None = None):
    """``with staged_dir(out) as run:`` write the files into ``run.path`` (``run.commit()``
    puts those written so far in place); leaving the block normally commits the rest and marks
    the run complete in :data:`MANIFEST`, an error or a signal discards what was not committed
    (see :class:`StagedDir`)."""
    run = StagedDir(out, command)
    try:
        yield run
        run.commit(complete=True)
    finally:
        run.discard()

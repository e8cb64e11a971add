"""Errors and boundary validation shared by every numalab module.

Every public function validates its inputs here, at the boundary, so a bad knob raises a
:class:`NumalabValueError` (a ``ValueError``) that names the parameter, the value it got and
what is allowed -- never a traceback from deep inside numpy.
"""

from __future__ import annotations

import difflib
import math
import numbers
from dataclasses import fields, is_dataclass
from collections.abc import Iterable

import numpy as np

__all__ = [
    "NumalabError",
    "NumalabValueError",
    "NumalabEnvironmentError",
    "EngineInvariantError",
    "check_choice",
    "check_bool",
    "check_int",
    "check_number",
    "check_uint32_array",
    "check_seeds",
    "coerce_dataclass",
    "MAX_SEEDS",
    "SEED_MAX",
]

#: most replicas one call may ask for by count (``seeds=n``); a list may name any seeds
MAX_SEEDS = 100_000
#: largest seed: seeds are stored as int64 coordinates in NetCDF files
SEED_MAX = 2**63 - 1


class NumalabError(Exception):
    """Base class of numalab's own errors."""


class NumalabValueError(NumalabError, ValueError):
    """A parameter had a value numalab does not allow."""


class NumalabEnvironmentError(NumalabError, OSError):
    """Something numalab depends on failed, not the user's input nor numalab: a dask scheduler
    that stopped answering or has no workers, a server that did not start. The ``numalab``
    command prints it as one line (exit status 1), like a full disk."""


class EngineInvariantError(NumalabError, RuntimeError):
    """The simulation broke one of its own invariants (pages not conserved, a negative
    counter, ...). Raised instead of returning silently wrong numbers."""


def _fmt(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_choice(name: str, value, allowed: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``allowed``, else raise naming the known choices."""
    allowed = list(allowed)
    if not isinstance(value, str) or value not in allowed:
        hint = ""
        if isinstance(value, str):
            close = difflib.get_close_matches(value, allowed, n=1)
            if close:
                hint = f" (did you mean {close[0]!r}?)"
        raise NumalabValueError(
            f"{name}={_fmt(value)} is not known{hint}; allowed: {', '.join(map(str, allowed))}"
        )
    return value


def check_bool(name: str, value) -> bool:
    """Return ``value`` if it is True or False (numpy's bools too), else raise naming it."""
    if not isinstance(value, (bool, np.bool_)):
        raise NumalabValueError(f"{name}={_fmt(value)}; allowed: True or False")
    return bool(value)


def check_int(name: str, value, *, lo: int | None = None, hi: int | None = None) -> int:
    """Return ``value`` as an int if it is an integer within ``[lo, hi]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise NumalabValueError(f"{name}={_fmt(value)} must be an integer" + _range(lo, hi))
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise NumalabValueError(f"{name}={value} is out of range; allowed: an integer" + _range(lo, hi))
    return value


def check_number(
    name: str, value, *, lo: float | None = None, hi: float | None = None, lo_open: bool = False
) -> float:
    """Return ``value`` as a float if it is a finite real number within the bounds.

    ``lo_open=True`` makes the lower bound strict (e.g. a positive duration)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not _finite(value):
        raise NumalabValueError(f"{name}={_fmt(value)} must be a finite number" + _range(lo, hi, lo_open))
    value = float(value)
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise NumalabValueError(f"{name}={value} is out of range; allowed: a number" + _range(lo, hi, lo_open))
    if hi is not None and value > hi:
        raise NumalabValueError(f"{name}={value} is out of range; allowed: a number" + _range(lo, hi, lo_open))
    return value


def _finite(value) -> bool:
    """math.isfinite that takes any real, however large (np.isfinite refuses ints >= 2**64)."""
    try:
        return math.isfinite(float(value))
    except (OverflowError, ValueError, TypeError):
        return False


def _range(lo, hi, lo_open: bool = False) -> str:
    if lo is not None and hi is not None:
        return f" in {'(' if lo_open else '['}{lo}, {hi}]"
    if lo is not None:
        return f" {'>' if lo_open else '>='} {lo}"
    if hi is not None:
        return f" <= {hi}"
    return ""


def check_uint32_array(name: str, values) -> np.ndarray:
    """Return ``values`` as a ``uint32`` array, refusing anything outside ``[0, 2**32)``.

    Thread ids and hash inputs are u32 in the kernel; a negative or too large value is a
    caller's mistake, not something to wrap silently."""
    arr = np.asarray(values)
    if arr.dtype == np.uint32:
        return arr
    if arr.dtype.kind not in "iub":
        raise NumalabValueError(f"{name} must hold integers in [0, 2**32); got dtype {arr.dtype}")
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi > 0xFFFFFFFF:
            bad = lo if lo < 0 else hi
            raise NumalabValueError(f"{name} holds {bad}, outside uint32; allowed: integers in [0, 4294967295]")
    return arr.astype(np.uint32)


def check_seeds(seeds, name: str = "seeds") -> list[int]:
    """The one seed checker: an int ``n`` in [1, MAX_SEEDS] means seeds ``0 .. n-1``; an iterable
    gives distinct ints in [0, SEED_MAX]. Returns the list of seeds."""
    allowed = f"allowed: a count in [1, {MAX_SEEDS}] or a non-empty list of distinct ints in [0, 2**63)"
    if isinstance(seeds, (bool, np.bool_)):
        raise NumalabValueError(f"{name}={seeds!r}; {allowed}")
    if isinstance(seeds, numbers.Integral):
        return list(range(check_int(name, seeds, lo=1, hi=MAX_SEEDS)))
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise NumalabValueError(f"{name}={_fmt(seeds)}; {allowed}")
    out = [check_int(name, s, lo=0, hi=SEED_MAX) for s in seeds]
    if not out:
        raise NumalabValueError(f"{name} is empty; {allowed}")
    if len(set(out)) != len(out):
        raise NumalabValueError(f"{name}={_fmt(out)} has duplicates; {allowed}")
    return out


def coerce_dataclass(cls, value, name: str):
    """The one coercion of a constants dataclass (``Costs``, ``FutexCosts``, engine options):
    None -> the defaults, an instance -> itself, a dict -> ``cls(**dict)`` after refusing
    unknown keys (each field's own bounds are checked by the class)."""
    assert is_dataclass(cls)
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, dict):
        known = [f.name for f in fields(cls) if f.init]
        bad = sorted(set(value) - set(known))
        if bad:
            raise NumalabValueError(f"{name} key {bad[0]!r} is not known; allowed: {', '.join(sorted(known))}")
        return cls(**value)
    raise NumalabValueError(f"{name}={_fmt(value)} must be a {cls.__name__} or a dict of its fields")


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


__all__ += ["check_str", "check_scalar"]


# --------------------------------------------------------------------------------------------
# output paths, memory and step budgets (issue 17): checked before any work starts

import os as _os
from pathlib import Path as _Path

#: default share of the machine's available memory one call may plan to use
MEMORY_FRACTION = 0.5
#: most time steps one run may plan (``max_time / dt``); override with $NUMALAB_MAX_STEPS
MAX_STEPS = 2_000_000


def _parse_bytes(text: str) -> int:
    """``"8G"``, ``"512M"``, ``"1.5GiB"``, ``"1000000"`` -> bytes."""
    t = str(text).strip().upper().removesuffix("B").removesuffix("I")
    mult = 1
    for suffix, m in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("T", 1 << 40)):
        if t.endswith(suffix):
            t, mult = t[:-1], m
            break
    try:
        value = float(t) * mult
    except ValueError:
        raise NumalabValueError(
            f"NUMALAB_MEMORY_LIMIT={text!r} is not a size; allowed: bytes or a number with K/M/G/T (e.g. 8G)"
        ) from None
    if not math.isfinite(value) or value <= 0:
        raise NumalabValueError(f"NUMALAB_MEMORY_LIMIT={text!r} must be a positive size (e.g. 8G)")
    return int(value)


def available_memory() -> int:
    """Bytes the kernel says are available (``MemAvailable`` of /proc/meminfo; on other systems
    the physical memory), capped by this process's address-space rlimit."""
    avail = None
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if avail is None:
        try:
            avail = _os.sysconf("SC_PAGE_SIZE") * _os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # pragma: no cover - exotic systems
            avail = 8 << 30
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            avail = min(avail, soft)
    except (ImportError, ValueError, OSError):  # pragma: no cover
        pass
    return int(avail)


def memory_limit(limit=None) -> int:
    """The memory budget of one call in bytes: ``limit`` if given (bytes or a text like "8G"),
    else ``$NUMALAB_MEMORY_LIMIT``, else :data:`MEMORY_FRACTION` of :func:`available_memory`."""
    if limit is None:
        env = _os.environ.get("NUMALAB_MEMORY_LIMIT")
        if env:
            return _parse_bytes(env)
        return int(MEMORY_FRACTION * available_memory())
    if isinstance(limit, str):
        return _parse_bytes(limit)
    return check_int("memory_limit", limit, lo=1)


def format_bytes(n: float) -> str:
    """1536 -> '1.5 KiB'."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} EiB"  # pragma: no cover


def check_memory(name: str, value, bytes_needed: float, limit=None) -> float:
    """Refuse a call whose estimated memory ``bytes_needed`` exceeds the budget
    (:func:`memory_limit`), naming the parameter that drives the cost and its value."""
    budget = memory_limit(limit)
    if not math.isfinite(bytes_needed) or bytes_needed > budget:
        raise NumalabValueError(
            f"{name}={_fmt(value)} needs about {format_bytes(bytes_needed)} of memory, more than the limit "
            f"of {format_bytes(budget)} (set NUMALAB_MEMORY_LIMIT, e.g. NUMALAB_MEMORY_LIMIT=64G, to allow "
            f"more; default: {MEMORY_FRACTION:.0%} of the available memory); use smaller sizes"
        )
    return bytes_needed


def env_int(name: str, default: int, *, lo: int = 1, hi: int | None = None) -> int:
    """The one reader of an integer environment variable (``$NUMALAB_MAX_STEPS``, ...): unset or
    empty gives ``default``; a value must be a whole number in ``[lo, hi]`` (``2e6`` is read as
    2000000; ``inf``, ``nan``, ``1.5`` and text are refused naming the variable)."""
    text = _os.environ.get(name, "").strip()
    if not text:
        return default
    allowed = f"allowed: a whole number{_range(lo, hi)}"
    try:
        value = float(text)
    except ValueError:
        raise NumalabValueError(f"{name}={text!r} is not a number; {allowed}") from None
    if not math.isfinite(value) or value != int(value):
        raise NumalabValueError(f"{name}={text!r} is not a whole number; {allowed}")
    value = int(value)
    if value < lo or (hi is not None and value > hi):
        raise NumalabValueError(f"{name}={text!r} is out of range; {allowed}")
    return value


def max_steps() -> int:
    """:data:`MAX_STEPS`, or ``$NUMALAB_MAX_STEPS``."""
    return env_int("NUMALAB_MAX_STEPS", MAX_STEPS, lo=1)


def check_steps(name: str, value, steps: float, limit: int | None = None) -> float:
    """Refuse a run that would take more than ``limit`` (:func:`max_steps`) time steps."""
    cap = max_steps() if limit is None else limit
    if not math.isfinite(steps) or steps > cap:
        raise NumalabValueError(
            f"{name}={_fmt(value)} makes {steps:.3g} time steps, more than the limit of {cap:,} "
            f"(raise it with NUMALAB_MAX_STEPS, or use a larger dt or a smaller max_time)"
        )
    return steps


def _name_max(directory: _Path) -> int:
    try:
        return int(_os.pathconf(directory, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


def check_out_path(name: str, path, *, kind: str = "file", create: bool = False) -> _Path:
    """The one check of an output path, made before any work starts.

    ``kind="file"``: ``path`` must not be a directory, its parent must be an existing, writable
    directory, and its name short enough for the file system (with room for the temporary name
    :mod:`numalab.storage` writes first). ``kind="dir"``: ``path`` is a directory, existing and
    writable, or (``create=True``) one that can be made under the nearest existing directory.
    ``''`` and ``None`` are refused."""
    if isinstance(path, _os.PathLike):
        path = _os.fspath(path)
    if isinstance(path, bytes):
        path = _os.fsdecode(path)
    if not isinstance(path, str) or not path.strip():
        raise NumalabValueError(f"{name}={path!r}: allowed: a non-empty file path")
    if "\0" in path:
        raise NumalabValueError(f"{name}={_fmt(path)} holds a NUL character; allowed: a file path")
    p = _Path(_os.path.expanduser(path))  # "~nosuchuser" stays as written (Path.expanduser raises)
    if len(_os.fsencode(str(p.absolute()))) >= 4096:
        raise NumalabValueError(f"{name}={_fmt(path)} is longer than the system's PATH_MAX (4096 bytes)")
    for part in p.parts:
        if len(_os.fsencode(part)) > 255:
            raise NumalabValueError(
                f"{name}={_fmt(path)}: the name {_fmt(part)} is {len(_os.fsencode(part))} bytes, "
                f"more than the file system allows (255)"
            )
    if kind == "file":
        if p.is_dir():
            raise NumalabValueError(f"{name}={_fmt(path)} is a directory; allowed: a file path")
        if p.name in ("", ".", ".."):
            raise NumalabValueError(f"{name}={_fmt(path)} names no file; allowed: a file path")
        parent = p.parent
        _check_dir_writable(name, path, parent, create)
        limit = _name_max(parent if parent.exists() else _Path("."))
        # storage.atomic_write writes ".<name[:64]>.<pid>.<8 hex>.tmp<suffix>" first
        if len(_os.fsencode(p.name)) > limit:
            raise NumalabValueError(
                f"{name}={_fmt(path)}: the file name is {len(_os.fsencode(p.name))} bytes, more than "
                f"the file system allows ({limit})"
            )
        if p.exists() and not p.is_file():
            raise NumalabValueError(f"{name}={_fmt(path)} exists and is not a regular file")
        return p
    if kind == "dir":
        if p.exists():
            if not p.is_dir():
                raise NumalabValueError(f"{name}={_fmt(path)} is a file, not a directory")
            if not _os.access(p, _os.W_OK | _os.X_OK):
                raise NumalabValueError(f"{name}={_fmt(path)}: directory is not writable")
            return p
        _check_dir_writable(name, path, p.parent, True) if create else _check_dir_writable(name, path, p, False)
        return p
    raise NumalabValueError(f"kind={kind!r}; allowed: 'file' or 'dir'")  # pragma: no cover


def _check_dir_writable(name, path, directory: _Path, create: bool) -> None:
    """``directory`` exists, is a directory and is writable -- or, with ``create``, the nearest
    existing ancestor is, so it can be made."""
    d = directory if str(directory) else _Path(".")
    if create:
        while not d.exists():
            if d.is_symlink():
                raise NumalabValueError(f"{name}={_fmt(path)}: {str(d)!r} is a dangling symbolic link")
            if d.parent == d:
                break
            d = d.parent
    if not d.exists():
        raise NumalabValueError(f"{name}={_fmt(path)}: directory {str(d)!r} does not exist")
    if not d.is_dir():
        raise NumalabValueError(f"{name}={_fmt(path)}: {str(d)!r} is a file, not a directory")
    if not _os.access(d, _os.W_OK | _os.X_OK):
        raise NumalabValueError(f"{name}={_fmt(path)}: directory {str(d)!r} is not writable")


def check_in_file(name: str, path) -> _Path:
    """An input file that exists and is a readable regular file."""
    if isinstance(path, _os.PathLike):
        path = _os.fspath(path)
    if not isinstance(path, str) or not path:
        raise NumalabValueError(f"{name}={path!r}: allowed: the path of an existing file")
    p = _Path(_os.path.expanduser(path))  # "~nosuchuser" stays as written (Path.expanduser raises)
    try:
        ok = p.is_file()
    except (OSError, ValueError):
        ok = False
    if not ok:
        raise NumalabValueError(f"{name}={_fmt(path)} does not exist or is not a file")
    if not _os.access(p, _os.R_OK):
        raise NumalabValueError(f"{name}={_fmt(path)} is not readable")
    return p


def check_seed(name: str, value) -> int:
    """One run seed: an int in [0, SEED_MAX]."""
    return check_int(name, value, lo=0, hi=SEED_MAX)


def check_distinct(name: str, values) -> list:
    """A list without repeated values (each would become a duplicate coordinate)."""
    values = list(values)
    seen = set()
    for v in values:
        key = v if not isinstance(v, float) or not math.isnan(v) else "nan"
        if key in seen:
            raise NumalabValueError(f"{name}={_fmt(values)} repeats {v!r}; allowed: distinct values")
        seen.add(key)
    return values


def check_list(name: str, text, item=None, *, distinct: bool = True) -> list:
    """The one reader of a comma-separated list given on the command line (``--threads 4,16``,
    ``--profiles 6.4,6.12``, ``--metric elsp,syst``): the items stripped of spaces, each passed
    through ``item`` (a callable that checks and converts one item, raising
    :class:`NumalabValueError`) when given. An empty list, an empty item (``","``, ``"a,,b"``,
    ``"a,"``) and, with ``distinct``, a repeated item are refused naming the option."""
    if isinstance(text, (list, tuple)):
        pieces = [str(t) for t in text]
    elif isinstance(text, str):
        pieces = text.split(",")
    else:
        raise NumalabValueError(f"{name}={_fmt(text)} must be a comma-separated list")
    pieces = [p.strip() for p in pieces]
    if not any(pieces):
        raise NumalabValueError(f"{name}={_fmt(text)} is an empty list; allowed: one or more comma-separated values")
    if not all(pieces):
        raise NumalabValueError(f"{name}={_fmt(text)} has an empty item; allowed: comma-separated values "
                                "without empty ones (a,b,c)")
    values = [item(p) if item is not None else p for p in pieces]
    if distinct:
        check_distinct(name, values)
    return values


__all__ += ["check_list"]
__all__ += ["MEMORY_FRACTION", "MAX_STEPS", "available_memory", "memory_limit", "format_bytes", "check_memory",
            "env_int", "max_steps", "check_steps", "check_out_path", "check_in_file", "check_seed", "check_distinct"]

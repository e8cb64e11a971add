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
    "EngineInvariantError",
    "check_choice",
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
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise NumalabValueError(f"{name}={_fmt(value)} must be a finite number" + _range(lo, hi, lo_open))
    value = float(value)
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise NumalabValueError(f"{name}={value} is out of range; allowed: a number" + _range(lo, hi, lo_open))
    if hi is not None and value > hi:
        raise NumalabValueError(f"{name}={value} is out of range; allowed: a number" + _range(lo, hi, lo_open))
    return value


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

"""Errors and boundary validation shared by every numalab module.

Every public function validates its inputs here, at the boundary, so a bad knob raises a
:class:`NumalabValueError` (a ``ValueError``) that names the parameter, the value it got and
what is allowed -- never a traceback from deep inside numpy.
"""

from __future__ import annotations

import difflib
import numbers
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
]


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

"""Access-PID history: ``vma->numab_state->pids_active[]`` as uint64 bitmap windows.

One array holds the history of many VMAs at once::

    pids_active : uint64, shape (*batch, W, words)   # words = width // 64 (1, or 2 for 128 bits)
    idx         : int64,  shape (*batch,)            # ring index (RFC rotation only)

``batch`` is whatever leading axes the caller uses, typically ``(replica, vma)``. Window ``w``
is one ``unsigned long pids_active[w]`` of the kernel (two words for the 2024 RFC's 128-bit
map, word ``bit // 64``, bit ``bit % 64``).

Two rotations, as the kernel has done them (spec ``kernel-numa-balancing.md`` §2.3, §4.1 patch 4):

* ``"shift"`` (mainline, v6.4+, generalised to W windows): the current window is ``W - 1``;
  rotating does ``pids_active[0] = pids_active[1]; pids_active[1] = 0``, i.e. every window
  moves down by one and the newest is cleared. ``idx`` is ignored.
* ``"ring"`` (Peter Zijlstra's ``NR_ACCESS_PID_HIST`` patch, RFC 2023 p4 and RFC 2024 PATCH 1):
  the current window is ``idx``; rotating does ``idx = (idx + 1) % W; pids_active[idx] = 0``.

Both keep the newest ``W`` windows, so the union of the newest ``n`` windows is the same for
both (tested). :func:`set_pid_bits` and :func:`rotate` mutate their arguments in place (their
docstrings say so); every other function is pure.
"""

from __future__ import annotations

import numpy as np

from .errors import NumalabValueError, check_choice, check_int
from .hashing import pid_bit

__all__ = [
    "ROTATIONS",
    "empty",
    "current_window_index",
    "set_pid_bits",
    "rotate",
    "union",
    "current_window",
    "popcount",
    "test_bit",
    "bit_masks",
    "newest_mask",
]

ROTATIONS = ("shift", "ring")
MAX_WINDOWS = 64
_ONE = np.uint64(1)
_SIX = np.uint64(6)
_LOW6 = np.uint64(63)


def _check_width(width) -> int:
    if isinstance(width, bool) or width not in (64, 128):
        raise NumalabValueError(f"width={width!r} is not supported; allowed: 64 (mainline), 128 (RFC 2024)")
    return int(width)


def _check_history(pids_active, idx=None, *, name="pids_active"):
    if not isinstance(pids_active, np.ndarray) or pids_active.dtype != np.uint64 or pids_active.ndim < 2:
        got = getattr(pids_active, "dtype", type(pids_active).__name__)
        shape = getattr(pids_active, "shape", "?")
        raise NumalabValueError(
            f"{name} must be a uint64 array of shape (*batch, windows, words); got {got} with shape {shape}"
        )
    if pids_active.shape[-1] not in (1, 2):
        raise NumalabValueError(
            f"{name} has {pids_active.shape[-1]} words per window; allowed: 1 (64-bit map) or 2 (128-bit map)"
        )
    windows = pids_active.shape[-2]
    if not 1 <= windows <= MAX_WINDOWS:
        raise NumalabValueError(f"{name} has {windows} windows; allowed: 1 to {MAX_WINDOWS}")
    if idx is not None:
        batch = pids_active.shape[:-2]
        if np.shape(idx) != batch:
            raise NumalabValueError(
                f"idx has shape {np.shape(idx)}; allowed: the batch shape of {name}, {batch}"
            )


def empty(batch_shape, windows: int, width: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """A fresh, all-clear history (as ``vma_numab_state`` is kzalloc'ed on the first visit).

    Returns ``(pids_active, idx)`` with shapes ``(*batch_shape, windows, width // 64)`` uint64
    and ``batch_shape`` int64 (ring index 0)."""
    windows = check_int("windows", windows, lo=1, hi=MAX_WINDOWS)
    width = _check_width(width)
    if isinstance(batch_shape, (int, np.integer)):
        batch_shape = (int(batch_shape),)
    batch_shape = tuple(int(check_int("batch_shape", n, lo=0)) for n in batch_shape)
    pids_active = np.zeros((*batch_shape, windows, width // 64), dtype=np.uint64)
    return pids_active, np.zeros(batch_shape, dtype=np.int64)


def current_window_index(idx, windows: int, rotation: str) -> np.ndarray:
    """Index of the window that faults write to: ``W - 1`` for "shift", ``idx % W`` for "ring"."""
    windows = check_int("windows", windows, lo=1, hi=MAX_WINDOWS)
    rotation = check_choice("rotation", rotation, ROTATIONS)
    idx = np.asarray(idx)
    if rotation == "shift":
        return np.full(idx.shape, windows - 1, dtype=np.int64)
    return np.mod(idx, windows).astype(np.int64)


def bit_masks(tids, width: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """``(word, mask)`` of each tid's bit: ``word = bit // 64`` (int64) and
    ``mask = 1 << (bit % 64)`` (uint64)."""
    bit = pid_bit(tids, width=_check_width(width)).astype(np.uint64)
    return (bit >> _SIX).astype(np.int64), np.left_shift(_ONE, bit & _LOW6)


def set_pid_bits(pids_active, idx, where, tids, *, width: int = 64, rotation: str = "shift") -> None:
    """Record hinting faults: set ``pid_bit(tid)`` in the current window (mutates ``pids_active``).

    Mirrors ``vma_set_access_pid_bit()`` (include/linux/mm.h), called from
    ``numa_migrate_prep()``/``numa_migrate_check()`` on every hinting fault of a normal folio.

    Parameters
    ----------
    pids_active, idx : the history (see module docstring).
    where : tuple of int arrays, one per batch axis
        The batch entry (e.g. ``(replica, vma)``) of each fault; duplicates are allowed (many
        faults in one VMA in one step all land, as ``np.bitwise_or.at`` accumulates them).
    tids : int array, same length as the index arrays: the faulting thread of each fault.
    width : 64 or 128, must match ``pids_active``'s words.
    """
    _check_history(pids_active, idx)
    width = _check_width(width)
    rotation = check_choice("rotation", rotation, ROTATIONS)
    batch = pids_active.shape[:-2]
    windows, words = pids_active.shape[-2:]
    if width // 64 != words:
        raise NumalabValueError(f"width={width} needs {width // 64} words per window; pids_active has {words}")
    if not isinstance(where, tuple) or len(where) != len(batch):
        raise NumalabValueError(
            f"where must be a tuple of {len(batch)} index arrays (one per batch axis of {batch}); "
            f"got {type(where).__name__} of length {len(where) if isinstance(where, tuple) else '?'}"
        )
    where = tuple(np.asarray(w, dtype=np.int64).ravel() for w in where)
    tids = np.asarray(tids).ravel()
    n = tids.shape[0]
    for axis, w in enumerate(where):
        if w.shape[0] != n:
            raise NumalabValueError(
                f"where[{axis}] has {w.shape[0]} entries but tids has {n}; allowed: one entry per fault"
            )
        if n and (w.min() < -batch[axis] or w.max() >= batch[axis]):
            raise NumalabValueError(
                f"where[{axis}] holds {int(w.min() if w.min() < 0 else w.max())}; "
                f"allowed: indices into a batch axis of length {batch[axis]}"
            )
    if n == 0:
        return
    word, mask = bit_masks(tids, width)
    window = current_window_index(idx[where], windows, rotation)
    # test-then-set in the kernel; OR is idempotent, and .at makes duplicate targets accumulate
    np.bitwise_or.at(pids_active, (*where, window, word), mask)


def rotate(pids_active, idx, mask=None, *, rotation: str = "shift") -> None:
    """Age the history where ``mask`` is True (mutates ``pids_active`` and, for "ring", ``idx``).

    The rotation of ``task_numa_work()`` when ``now > pids_active_reset`` (spec §2.3); the
    caller decides when it is due. "shift": ``[0]=[1]; [1]=0`` generalised to W windows (all
    move down one, newest cleared). "ring": ``idx = (idx + 1) % W; pids_active[idx] = 0``.
    ``mask=None`` rotates every entry."""
    _check_history(pids_active, idx)
    rotation = check_choice("rotation", rotation, ROTATIONS)
    batch = pids_active.shape[:-2]
    windows = pids_active.shape[-2]
    if mask is None:
        mask = np.ones(batch, dtype=bool)
    mask = np.asarray(mask)
    if mask.dtype != bool or mask.shape != batch:
        raise NumalabValueError(
            f"mask has dtype {mask.dtype} and shape {mask.shape}; allowed: bool of the batch shape {batch}"
        )
    whole = batch == () or bool(mask.all())
    if whole:  # every entry (np.nonzero also refuses 0-d masks): slices, no copy
        if not mask.all():
            return
        sel = (Ellipsis,)
    else:
        sel = np.nonzero(mask)
    if rotation == "shift":
        if windows > 1:
            hist = pids_active[sel]  # (K, W, words): a copy for index arrays, a view for Ellipsis
            pids_active[sel + (slice(0, windows - 1), slice(None))] = hist[..., 1:, :]  # numpy handles overlap
        pids_active[sel + (windows - 1, slice(None))] = 0
    else:
        if whole:
            idx[...] = (idx + 1) % windows
            np.put_along_axis(pids_active, idx[..., None, None], np.uint64(0), axis=-2)
            return
        new = (idx[sel] + 1) % windows
        idx[sel] = new
        pids_active[sel + (new,)] = 0


def union(pids_active, idx=None, n=None, *, rotation: str = "shift") -> np.ndarray:
    """OR of the newest ``n`` windows (all ``W`` if ``None``): shape ``(*batch, words)``.

    ``pids_active[0] | pids_active[1]`` in mainline ``vma_is_accessed()``; the OR of all
    ``NR_ACCESS_PID_HIST`` windows in the RFCs. ``n`` is an int, or an int array broadcastable
    to the batch shape (one count per entry, e.g. the per-VMA window count of an adaptive
    history, :mod:`numalab.adaptive`), every value in ``[1, W]``."""
    _check_history(pids_active, None if idx is None else idx)
    rotation = check_choice("rotation", rotation, ROTATIONS)
    windows = pids_active.shape[-2]
    if n is not None and np.ndim(n) > 0:
        include = newest_mask(pids_active.shape[:-2], windows, n, idx, rotation=rotation)
        return np.bitwise_or.reduce(np.where(include[..., None], pids_active, np.uint64(0)), axis=-2)
    if n is not None and isinstance(n, np.ndarray):
        n = n.item()
    n = windows if n is None else check_int("n", n, lo=1, hi=windows)
    if n == windows:
        return np.bitwise_or.reduce(pids_active, axis=-2)
    if rotation == "shift":
        return np.bitwise_or.reduce(pids_active[..., windows - n :, :], axis=-2)
    if idx is None:
        raise NumalabValueError("idx is required for rotation='ring' when n < windows")
    newest = (np.asarray(idx)[..., None] - np.arange(n)) % windows  # (*batch, n)
    picked = np.take_along_axis(pids_active, newest[..., None], axis=-2)
    return np.bitwise_or.reduce(picked, axis=-2)


def newest_mask(batch_shape, windows: int, n, idx=None, *, rotation: str = "shift") -> np.ndarray:
    """Which windows are among the newest ``n`` of each entry: bool ``(*batch_shape, W)``.

    ``n`` is an int or an int array broadcastable to ``batch_shape`` with values in ``[1, W]``.
    A window's age is ``W - 1 - w`` for "shift" (the newest is the last) and
    ``(idx - w) mod W`` for "ring" (the newest is ``idx``); it is included when age < n."""
    windows = check_int("windows", windows, lo=1, hi=MAX_WINDOWS)
    rotation = check_choice("rotation", rotation, ROTATIONS)
    batch_shape = tuple(batch_shape)
    arr = np.asarray(n)
    if arr.dtype.kind not in "iu" or (arr.size and (arr.min() < 1 or arr.max() > windows)):
        raise NumalabValueError(f"n must be integers in [1, {windows}] (windows to OR); got {_short(arr)}")
    try:
        arr = np.broadcast_to(arr, batch_shape).astype(np.int64)
    except ValueError:
        raise NumalabValueError(
            f"n has shape {arr.shape}; allowed: an int or an array broadcastable to the batch shape {batch_shape}"
        ) from None
    w = np.arange(windows, dtype=np.int64)
    if rotation == "shift":
        age = np.broadcast_to(windows - 1 - w, (*batch_shape, windows))
    else:
        if idx is None:
            raise NumalabValueError("idx is required for rotation='ring' with a per-entry n")
        age = np.mod(np.asarray(idx, dtype=np.int64)[..., None] - w, windows)
    return age < arr[..., None]


def _short(arr) -> str:
    text = repr(arr)
    return text if len(text) <= 80 else text[:77] + "..."


def current_window(pids_active, idx=None, *, rotation: str = "shift") -> np.ndarray:
    """The window faults are being recorded in now: shape ``(*batch, words)``."""
    return union(pids_active, idx, 1, rotation=rotation)


def popcount(words_array) -> np.ndarray:
    """Number of set bits (``bitmap_weight``), summed over the last (words) axis, as int64.

    ``np.bitwise_count`` returns uint8; we sum in int64 so 128-bit maps cannot overflow."""
    words_array = np.asarray(words_array)
    if words_array.dtype != np.uint64 or words_array.ndim < 1:
        raise NumalabValueError(
            f"words_array must be a uint64 array with the words on the last axis; got {words_array.dtype} "
            f"with shape {words_array.shape}"
        )
    return np.bitwise_count(words_array).sum(axis=-1, dtype=np.int64)


def test_bit(words_array, bits) -> np.ndarray:
    """Is bit ``bits`` set in ``words_array`` (shape ``(..., words)``)? Broadcasts ``bits``
    against ``words_array.shape[:-1]``; returns bool."""
    words_array = np.asarray(words_array)
    if words_array.dtype != np.uint64 or words_array.ndim < 1:
        raise NumalabValueError(
            f"words_array must be a uint64 array with the words on the last axis; got {words_array.dtype} "
            f"with shape {words_array.shape}"
        )
    words = words_array.shape[-1]
    bits = np.asarray(bits)
    if bits.dtype.kind not in "iu" or (bits.size and (bits.min() < 0 or bits.max() >= 64 * words)):
        raise NumalabValueError(f"bits must be integers in [0, {64 * words}); got {bits!r}")
    bits = bits.astype(np.uint64)
    word = bits >> _SIX
    sel = words_array[..., 0]
    for w in range(1, words):
        sel = np.where(word == w, words_array[..., w], sel)
    return ((sel >> (bits & _LOW6)) & _ONE).astype(bool)


test_bit.__test__ = False  # a function named test_* in a library module: keep pytest away

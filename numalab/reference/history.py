"""Scalar reference of one VMA's access-PID history, bit by bit.

Test oracle for :mod:`numalab.history`; does not import it. One VMA's history is a list of
``W`` windows, each a list of ``width // 64`` Python ints (64-bit words), plus a ring index.
"""

from __future__ import annotations

from .hashing import pid_bit

MASK64 = (1 << 64) - 1


def empty(windows: int, width: int = 64) -> tuple[list[list[int]], int]:
    """kzalloc'ed ``vma_numab_state``: every window clear, ring index 0."""
    return [[0] * (width // 64) for _ in range(windows)], 0


def current_window_index(idx: int, windows: int, rotation: str) -> int:
    """Mainline writes ``pids_active[1]`` (the last window); the RFC ring writes ``[idx]``."""
    if rotation == "shift":
        return windows - 1
    return idx % windows


def set_pid_bit(hist: list[list[int]], idx: int, tid: int, width: int, rotation: str) -> None:
    """``vma_set_access_pid_bit``: test the bit, set it if clear."""
    bit = pid_bit(tid, width)
    word, offset = bit // 64, bit % 64
    w = current_window_index(idx, len(hist), rotation)
    if not (hist[w][word] >> offset) & 1:
        hist[w][word] = hist[w][word] | (1 << offset)


def rotate(hist: list[list[int]], idx: int, rotation: str) -> int:
    """Age the history once; returns the new ring index.

    shift: ``pids_active[0] = pids_active[1]; pids_active[1] = 0`` for W windows:
    window i takes window i+1, the last is cleared. ring: ``idx = (idx+1) % W; clear [idx]``."""
    windows = len(hist)
    if rotation == "shift":
        for i in range(windows - 1):
            hist[i] = list(hist[i + 1])
        hist[windows - 1] = [0] * len(hist[windows - 1])
        return idx
    idx = (idx + 1) % windows
    hist[idx] = [0] * len(hist[idx])
    return idx


def newest_windows(hist: list[list[int]], idx: int, n: int, rotation: str) -> list[int]:
    """Indices of the newest ``n`` windows, newest first."""
    windows = len(hist)
    if rotation == "shift":
        return [windows - 1 - k for k in range(n)]
    return [(idx - k) % windows for k in range(n)]


def union(hist: list[list[int]], idx: int, n: int | None, rotation: str) -> list[int]:
    """OR of the newest ``n`` windows (all if None), word by word."""
    n = len(hist) if n is None else n
    out = [0] * len(hist[0])
    for w in newest_windows(hist, idx, n, rotation):
        for j, word in enumerate(hist[w]):
            out[j] |= word
    return out


def popcount(words: list[int]) -> int:
    """``bitmap_weight``: count the set bits one by one."""
    total = 0
    for word in words:
        for b in range(64):
            total += (word >> b) & 1
    return total


def test_bit(words: list[int], bit: int) -> bool:
    return bool((words[bit // 64] >> (bit % 64)) & 1)


test_bit.__test__ = False

"""Researchers' own futex hash modes for tests/test_futex_modes.py (importable by worker
processes and by ``--mode _futex_modes:NAME``). The first is docs/futex.md's worked example.
"""

from __future__ import annotations

import numpy as np

import numalab as nl
from numalab.futex.hash import roundup_pow_of_two


class PageNodeHash(nl.futex.NodeHash):
    """6.16's per-node tables, but a futex without a node goes to the table of the node that
    holds its memory (its first toucher's node) instead of a node taken from the hash bits:
    every key stays on its memory's node, as FUTEX2_MPOL would place it, without a node word."""

    name = "page-node"
    label = "per-node tables, table = the futex's memory node"

    def table_of(self, layout, keys):
        return np.where(keys.node == -1, keys.memory_node, keys.node)


PAGE_NODE = PageNodeHash()


class WidePrivateHash(nl.futex.PrivateHash):
    """6.17's private hash sized 16 slots per thread, never capped at the per-node table size
    (a what-if for a process with many threads: schbench's 1024 threads get 16384 slots)."""

    name = "private-16x"
    label = "private hash, 16 slots per thread"

    def private_slots(self, threads, topology, base_small=False):
        return int(roundup_pow_of_two(16 * threads))


class NotAMode:
    name = "nope"


NOT_A_MODE = NotAMode()

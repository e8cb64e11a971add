"""The decision codes of the VMA scan filter: why ``task_numa_work`` skipped or scanned a VMA.

A tiny module of its own so that :mod:`numalab.policy` (which decides) and
:mod:`numalab.adaptive` (whose rules react to decisions) both read the same table without
importing each other. ``numalab.policy`` re-exports every name.
"""

from __future__ import annotations

import numpy as np

__all__ = ["REASONS", "SKIP_REASONS", "ALLOW_REASONS", "CODE", "ALLOWED"]

#: decision names; the index in this tuple is the int8 code returned by ``numalab.policy.decide``.
#: Skip reasons use the ``sched_skip_vma_numa`` trace strings (kernel enum order), then ours.
REASONS = (
    "unsuitable",
    "shared_ro",
    "inaccessible",
    "scan_delay",
    "pid_inactive",
    "seq_completed",
    "disjoint_wait",  # RFC 2023 p2: PID test failed and the select counter was > 0
    "early_passes",
    "own_pid",
    "hot",
    "shared",
    "ignore_pid_inactive",  # NUMAB_SKIP_IGNORE_PID: traced although the VMA is scanned
    "starvation",
    "disjoint_select",
    "forced",
    "unfiltered",  # <= v6.3: no per-VMA state, every suitable VMA is scanned
)
SKIP_REASONS = REASONS[:7]
ALLOW_REASONS = REASONS[7:]
CODE = {name: np.int8(i) for i, name in enumerate(REASONS)}
#: ALLOWED[code] is True when that decision lets the scanner change protections in the VMA.
ALLOWED = np.array([name not in SKIP_REASONS for name in REASONS], dtype=bool)

"""Contention solver for futex hash buckets (:mod:`numalab.futex.solver`): the closed network
of one futex operation per thread loop, and its two solutions.

Each thread loops "think" (user work, syscall entry/exit, the futex path, key and hash, two
atomics: a delay ``Z``) then visits the FCFS server of the bucket its futex hashes to (the hb
spinlock), and in the 6.16 ``rcuref`` private-hash variant first the per-process
reference-count line. The parts, each a module:

``costs``      :class:`FutexCosts`, line transfer matrices, SMT slowdown: what one visit costs
``stations``   :func:`network` / :class:`Network`: who visits which station, priced
``meanvalue``  :func:`mva`: approximate (Bard-Schweitzer) mean-value analysis
``events``     :func:`simulate`: the discrete-event simulation, vectorised over replicas

The two solutions agree within 5% on throughput with exponential times
(tests/test_futex_solver.py). This module re-exports their public names.
"""

from __future__ import annotations

from .costs import COST_NAMES, UNMEASURED, FutexCosts, coerce_costs, core_load, handoff_matrix, line_matrix, smt_slowdown
from .events import simulate
from .meanvalue import mva
from .stations import Network, network

__all__ = ["FutexCosts", "Network", "network", "mva", "simulate", "line_matrix", "handoff_matrix",
           "smt_slowdown", "core_load", "COST_NAMES", "UNMEASURED", "coerce_costs"]

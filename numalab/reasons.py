"""The decision codes of the VMA scan filter: why ``task_numa_work`` skipped or scanned a VMA.

The decisions are the fixed checks' (:data:`numalab.rules.FIXED_DECISIONS`: the VMA flag
tests, the scan delay, ``pid_inactive``, ``unfiltered``) and those the rule table names (each
rule's ``reason``, the fallback's ``refuse``): read from :mod:`numalab.rules`, never listed here
again. What each decision is -- a skip or a scan, a refusal by the PID test (which counts
towards the v6.7 forced retry and the ``false_skips`` ground truth), produced by
``vma_is_accessed()`` or after it, reported by the ``sched_skip_vma_numa`` tracepoint -- is a
column of one :class:`Decisions` table. A policy with user rules has its own table: the
built-in codes, then one per user rule (:func:`decisions_for`).

A tiny module of its own so that :mod:`numalab.policy` (which decides) and
:mod:`numalab.adaptive` (whose rules react to decisions) both read the same table without
importing each other. ``numalab.policy`` re-exports every name.
"""

from __future__ import annotations

import functools

import numpy as np

from .rules import BUILTIN_RULES, FIXED_DECISIONS

__all__ = ["REASONS", "SKIP_REASONS", "ALLOW_REASONS", "CODE", "ALLOWED", "Decisions", "DECISIONS",
           "decisions_for"]

#: the int8 code of every decision numalab had before the rule table existed, in code order.
#: Codes are stored in Datasets and files (``flag_values``), so they never move: a decision a
#: later table row adds is appended after these.
_CODE_ORDER = ("unsuitable", "shared_ro", "inaccessible", "scan_delay", "pid_inactive", "seq_completed",
               "disjoint_wait", "early_passes", "own_pid", "hot", "shared", "ignore_pid_inactive", "starvation",
               "disjoint_select", "forced", "unfiltered")


def _columns(rules) -> dict[str, tuple[bool, bool, bool]]:
    """decision name -> (allowed, pid_test, traced) of the fixed checks and ``rules``."""
    cols = {name: (kind == "allow", pid_test, kind == "skip") for name, kind, pid_test in FIXED_DECISIONS}
    for r in rules:
        pid_test = r.stage in ("access", "fallback")
        cols[r.reason] = (r.kind == "allow", pid_test, bool(r.traced))
        if r.refuse:
            cols[r.refuse] = (False, pid_test, False)
    return cols


class Decisions:
    """The decisions one policy can produce, by int8 code (``names[code]``), with their columns
    as arrays indexed by code: ``allowed`` (the scanner changes the VMA's protections),
    ``pid_skip`` (refused by the PID test: ``pid_inactive``, the fallback's refusal, a skip
    rule of ``vma_is_accessed()``), ``pid_test`` (decided by ``vma_is_accessed()`` or after it),
    ``traced`` (reported by ``sched_skip_vma_numa``; the fallback's refusal is the RFC's own)."""

    def __init__(self, user_rules=()):
        cols = _columns(BUILTIN_RULES)
        names = [n for n in _CODE_ORDER] + [n for n in cols if n not in _CODE_ORDER]
        if set(_CODE_ORDER) - set(cols):
            raise AssertionError(f"decision codes without a table row: {sorted(set(_CODE_ORDER) - set(cols))}")
        user = _columns(user_rules)
        for r in user_rules:
            if r.reason in cols:
                raise ValueError(f"rule {r.name!r}: its decision {r.reason!r} is taken")
            names.append(r.reason)
            cols[r.reason] = user[r.reason]
        if len(names) > 127:
            raise ValueError(f"{len(names)} decisions do not fit the int8 codes; allowed: at most 127")
        self.names = tuple(names)
        self.user_rules = tuple(user_rules)
        self.code = {name: np.int8(i) for i, name in enumerate(self.names)}
        self.allowed = np.array([cols[n][0] for n in self.names], dtype=bool)
        self.pid_test = np.array([cols[n][1] for n in self.names], dtype=bool)
        self.traced = np.array([cols[n][2] for n in self.names], dtype=bool)
        self.pid_skip = self.pid_test & ~self.allowed
        self.skips = tuple(n for n, ok in zip(self.names, self.allowed) if not ok)
        self.allows = tuple(n for n, ok in zip(self.names, self.allowed) if ok)

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return f"Decisions({len(self.names)}: skips {', '.join(self.skips)}; scans {', '.join(self.allows)})"


#: the built-in decisions (every policy without user rules)
DECISIONS = Decisions()


@functools.lru_cache(maxsize=256)
def decisions_for(user_rules: tuple) -> Decisions:
    """The decision table of a policy with these user rules (the built-in one when none)."""
    return DECISIONS if not user_rules else Decisions(user_rules)


#: decision names; the index in this tuple is the int8 code returned by ``numalab.policy.decide``.
#: Skip reasons use the ``sched_skip_vma_numa`` trace strings (kernel enum order), then ours.
REASONS = DECISIONS.names
SKIP_REASONS = DECISIONS.skips
ALLOW_REASONS = DECISIONS.allows
CODE = DECISIONS.code
#: ALLOWED[code] is True when that decision lets the scanner change protections in the VMA.
ALLOWED = DECISIONS.allowed

"""The NUMA-balancing engine's step, compiled with numba (optional; ``pip install 'numalab[fast]'``).

The numpy engine (:class:`numalab.engine.Batch`) advances every replica of a batch by one step
per round of numpy calls; a step costs the fixed overhead of hundreds of small array
operations, whatever the batch (docs/engine.md, "Scaling"). This package takes the same steps
replica by replica in scalar code compiled by numba, in the same order of floating-point
operations (:mod:`.numsum`), on the batch's own arrays (:mod:`.state`): the results are
bit-identical, and the numpy engine stays the oracle and the fallback
(``tests/test_compiled_engine.py``).

Modules, one per phase of :meth:`numalab.engine.Batch.step`, each naming the numpy module it
mirrors: :mod:`.progress` (progress.py and costs.progress_rates), :mod:`.scan` (scan.py,
history_stats.py) with :mod:`.decide` (the policy's decision chain), :mod:`.detect` (which
protected regions fault and who takes the fault: faults.py's clocks), :mod:`.handle`
(faults.py's do_numa_page / task_numa_fault, groups.py, placement.py, scan_period.py,
balance.py), :mod:`.adapt` (numalab.adaptive's rules at the scan's and the fault's hooks),
:mod:`.bits` (bitmap primitives) and :mod:`.loop` (the step and the run).

:func:`available` says whether the compiled engine can run at all (numba imports,
``NUMALAB_JIT`` is not ``0``), :func:`unsupported` why it cannot run one batch (a tracer or a
user rule: the numpy engine runs those). An adaptive history runs compiled (:mod:`.adapt`).
"""

from __future__ import annotations

from ...jit import available

__all__ = ["available", "unsupported", "RULE_ID"]

#: the built-in rules (numalab.rules.BUILTIN_RULES) the compiled decision knows, name -> its id
#: in the encoded chain (:mod:`.decide`); the fallback ``disjoint_select`` is encoded apart. A
#: rule added to the table runs on the numpy engine until it is given a compiled test here.
RULE_ID = {"seq_completed": 1, "forced_one": 2, "early_passes": 3, "own_pid": 4, "hot": 5, "shared": 6,
           "ignore_pid_partial": 7, "starvation": 8}
FALLBACKS = ("disjoint_select",)


def unsupported(b) -> str | None:
    """Why the compiled engine cannot run batch ``b`` (None: it can)."""
    if b.tracer is not None:
        return "a tracer observes the run"
    if b.pol.decisions.user_rules:
        return "the policy has a user rule"
    ch = b.pol.chain
    for r in (*(e[0] for e in ch.pre), *(e[0] for e in ch.access), *([ch.fallback[0]] if ch.fallback else [])):
        if r.name not in RULE_ID and r.name not in FALLBACKS:
            return f"rule {r.name!r} has no compiled form"
    if any(sel is None for sel in b.lay.mm_vsel):
        return "a process's VMAs are not contiguous"
    return None

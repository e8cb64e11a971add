"""The names the report readers know, and the one rule for a name they do not.

A reader takes every label of a table either as a name it knows or refuses the line, naming
it: a mistyped label read as data would become a statistic of its own, leave the right cell
NaN, and print back as a phantom row.

* **Closed sets** -- mmtests' stat labels (:data:`STAT_LABEL`: ``Min``, ``Amean``,
  ``BAmean-95``, ...), the Duration rows (``User``, ``System``, ``Elapsed``), and the
  ``autonuma-benchmark`` namespace of LKP keys (``.<test>.seconds`` of a benchmark test,
  ``.time.<stat>`` of ``/usr/bin/time``), and the ops of an autonumabench compare table
  (``<prefix>-<TEST>``). A name outside them is refused, with the nearest known one.
* **Open sets** -- ops of other tests (``tput-16``), other LKP keys (``perf-stat.ps.ipc``),
  vmstat counters and monitor labels: any printable name is read, but one that is within one
  or two edits of a name numalab interprets (:func:`near`) is refused as mistyped
  (``proc-vmstat.numa_hint_faultz``, ``Ops NUMA hint faultz``).
"""

from __future__ import annotations

import functools
import re

__all__ = ["STAT_LABEL", "STAT_EXAMPLES", "DURATION_LABELS", "AUTONUMA_PREFIXES", "near", "autonuma_tests",
           "lkp_workloads", "LKP_TIME_STATS"]

#: every stat label of an mmtests compare table: the Multiops summary of every era (§2.2,
#: ``HStddev``/``HCoeffVar``/``BAmean.95`` of 2026), the Percentile summary's quartiles and
#: ``Max-P``, the older layout's ``Time`` and numalab's own ``Samples`` (the usable runs)
STAT_LABEL = re.compile(r"(?:Min|Max|[AHG]mean|H?Stddev|H?CoeffVar|Samples|Time|B[AHG]mean[-.]\d{1,2}"
                        r"|Max-\d{1,2}|Min-\d{1,2}|[1-4](?:st|nd|rd|th)-qrtle)")
STAT_EXAMPLES = ("Min", "Amean", "Hmean", "Stddev", "CoeffVar", "Max", "BAmean-50", "BAmean-95", "BAmean-99",
                 "BAmean.95", "HStddev", "HCoeffVar", "Time", "Samples")
#: the rows of mmtests' Duration table
DURATION_LABELS = ("User", "System", "Elapsed")
#: the op prefixes of autonumabench (2019-2025, 2026 and the older ``Time <prefix>-<TEST>`` rows)
AUTONUMA_PREFIXES = ("syst", "elsp", "user", "System", "Elapsed", "User", "CPU")
#: ``autonuma-benchmark.time.<stat>``: what the robot reads from /usr/bin/time
LKP_TIME_STATS = ("elapsed_time", "elapsed_time.max", "user_time", "system_time", "percent_of_cpu_this_job_got",
                  "maximum_resident_set_size", "average_resident_set_size", "average_total_size",
                  "average_shared_text_size", "average_unshared_data_size", "average_stack_size",
                  "minor_page_faults", "major_page_faults", "voluntary_context_switches",
                  "involuntary_context_switches", "file_system_inputs", "file_system_outputs",
                  "socket_messages_sent", "socket_messages_received", "signals_delivered", "swaps", "page_size",
                  "exit_status")


@functools.lru_cache(maxsize=None)
def lkp_workloads() -> tuple[str, ...]:
    """The autonuma-benchmark tests by their binary names (LKP's ``<test>``): numalab's
    workloads of the benchmark, bind variants included."""
    from ..workloads import workloads

    return tuple(w for w in workloads() if w.startswith("numa0"))


@functools.lru_cache(maxsize=None)
def autonuma_tests() -> tuple[str, ...]:
    """mmtests' TEST names of autonumabench (``NUMA01_THREADLOCAL``), with the older
    ``NUMA01_THEADLOCAL`` (sic) spelling."""
    from .common import mmtests_test_name

    names = [mmtests_test_name(w) for w in lkp_workloads()]
    return tuple(names + [n.replace("THREADLOCAL", "THEADLOCAL") for n in names if "THREADLOCAL" in n])


def _distance(a: str, b: str, cap: int) -> int:
    """Edits (insert, delete, replace, swap two neighbours) between ``a`` and ``b``, or
    ``cap + 1`` once it is over ``cap``."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    before, prev = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            d = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if before is not None and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                d = min(d, before[j - 2] + 1)
            cur.append(d)
        if min(cur) > cap:
            return cap + 1
        before, prev = prev, cur
    return prev[-1]


def near(name: str, known, cap: int | None = None) -> str | None:
    """The name of ``known`` that ``name`` is a mistyping of -- within ``cap`` edits (default:
    one, two for names of 10 characters or more), or equal but for case -- or None (``name``
    itself known, or far from every known name)."""
    known = tuple(known)
    if name in known:
        return None
    if cap is None:
        cap = 1 if len(name) < 10 else 2
    by_len, lower = _index(known)
    hit = lower.get(name.lower())
    if hit is not None:
        return hit
    for n in range(len(name) - cap, len(name) + cap + 1):
        for k in by_len.get(n, ()):
            if _distance(name, k, cap) <= cap:
                return k
    return None


@functools.lru_cache(maxsize=64)
def _index(known: tuple) -> tuple[dict, dict]:
    """``known`` by length, and by its lower-case spelling."""
    by_len: dict[int, list[str]] = {}
    for k in known:
        by_len.setdefault(len(k), []).append(k)
    return by_len, {k.lower(): k for k in reversed(known)}

"""The community's tables: mmtests ``compare-kernels`` and kernel-test-robot (LKP) text, both
printed from simulated runs and read back from real reports.

Layouts follow spec/benchmarks-and-reports.md §2.5-§2.6 (mmtests), §3.2-§3.3 (LKP) and §4.1
(vmstat rows). Statistics come from :mod:`numalab.stats`.

Two kinds of Dataset are accepted by :func:`mmtests` and :func:`lkp`:

* **runs** -- what ``simulate``/``sweep`` produce: a sample dim (``"seed"``), a dim along which
  kernels/policies differ (``"policy"``), variables ``elsp``, ``syst`` (seconds), vmstat
  counters; the workload is a ``"workload"`` dim or the ``workload`` attr;
* **summaries** -- what :func:`read_mmtests` / :func:`read_lkp` return from a real report (which
  only carries summary statistics). Representation, chosen so units never mix in one variable:

  - mmtests (``attrs["numalab_summary"] == "mmtests"``): dims ``("kernel", "workload", "stat")``;
    ``<var>`` holds the printed row values (``stat`` = the row labels ``Min``, ``Amean``, ...;
    the ``CoeffVar`` row is in percent), ``<var>_pct`` the printed percentage, and
    ``<var>_significant`` whether the cell carried asterisks. Monitor rows become
    variables over ``("kernel",)``: ``duration_user``/``duration_system``/``duration_elapsed``
    and the vmstat counters by their kernel names (``numa_hint_faults``, ...), derived rows as
    ``numa_pte_updates_base``, ``numa_hint_local_pct``, ``autonuma_cost``.
  - LKP (``attrs["numalab_summary"] == "lkp"``): ``<var>`` is the mean over runs, dims
    ``("kernel", "workload")`` for ``autonuma-benchmark.<test>.seconds`` (variable ``elsp``) and
    ``("kernel",)`` for job-level stats; ``<var>_stddev_pct`` is the printed ``±`` value (the
    truncated integer; NaN where the robot printed none, i.e. r <= 2 % or one run) and
    ``<var>_change`` the printed %change (or absolute change for ``%`` stats; NaN for the base).
    Stats with no numalab name keep their LKP key as the variable name.

  Both carry the kernel names (mmtests result names / LKP commit ids as printed) as the
  ``"kernel"`` coordinate and the layout needed to print the same text again in attrs.


Modules (writer and reader of each format side by side):

* :mod:`.mmtests_format` -- :func:`mmtests` / :func:`read_mmtests`, the compare table and its
  Duration / Ops monitor tables;
* :mod:`.lkp_format` -- :func:`lkp` / :func:`read_lkp`, the ``%stddev %change`` block
  (:func:`lkp_blocks` splits a mail of several blocks, read as one Dataset with a ``block``
  dim);
* :mod:`.vmstat_format` -- :func:`read_vmstat` and the vmstat ``Ops`` rows (§4.1);
* :mod:`.rendering` -- :class:`Report`, the ``str`` both writers return, whose ``_repr_html_`` is
  a table for notebooks, and :func:`trace_table` for long traces;
* :mod:`.common` -- test names, Dataset handling and text helpers the formats share.
"""

from __future__ import annotations

import functools

from . import lkp_format as _lkp_format
from . import mmtests_format as _mmtests_format
from .common import _columns as _text_columns, lkp_test_name, mmtests_test_name
from .lkp_format import lkp_blocks, read_lkp
from .mmtests_format import read_mmtests
from .rendering import Report, TextTable, trace_table
from .vmstat_format import read_vmstat


def _columns(ds, along, baseline):
    try:
        return _text_columns(ds, along, baseline)[2]
    except ValueError:  # pragma: no cover - the writer has already accepted these
        return []


@functools.wraps(_mmtests_format.mmtests)
def mmtests(ds, metric=None, along=None, baseline=None, era="2023", **kwargs) -> Report:
    text = _mmtests_format.mmtests(ds, metric, along, baseline, era, **kwargs)
    return Report(text, kind="mmtests", columns=_columns(ds, along, baseline))


@functools.wraps(_lkp_format.lkp)
def lkp(ds, metric=None, along=None, baseline=None, **kwargs) -> Report:
    text = _lkp_format.lkp(ds, metric, along, baseline, **kwargs)
    return Report(text, kind="lkp", columns=_columns(ds, along, baseline))


_RETURNS = ("\n\n    Returns a :class:`Report`: a ``str`` holding exactly this text (``print`` it, write it, "
            "compare it), which a notebook displays as an HTML table (:mod:`numalab.report.rendering`).\n")
mmtests.__doc__ = (mmtests.__doc__ or "").rstrip() + _RETURNS
lkp.__doc__ = (lkp.__doc__ or "").rstrip() + _RETURNS


__all__ = [
    "mmtests",
    "lkp",
    "read_mmtests",
    "read_lkp",
    "lkp_blocks",
    "read_vmstat",
    "mmtests_test_name",
    "lkp_test_name",
    "Report",
    "TextTable",
    "trace_table",
]

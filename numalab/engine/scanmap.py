"""Where the scanner went, VMA by VMA and step by step: the data of a damo-style heatmap.

:func:`scan_map` runs :func:`numalab.scan_trace`'s traced batch (``task_numa_work`` runs and
VMA visits, with their ``sched_skip_vma_numa`` decisions) and records two things more, by
watching ``struct folio``'s PROT_NONE state (``Regions.prot_none``) without changing it:

* per visit, the base pages and PMDs ``change_prot_numa`` made PROT_NONE in that VMA
  (``visit_pte_updates`` / ``visit_huge_pte_updates``: the run's ``numa_pte_updates`` split by
  VMA; they sum to the run's ``pte_updates``);
* per engine step, the NUMA hinting faults (``do_numa_page``) each VMA took: a protected region
  whose PROT_NONE is gone at the step's end faulted in it (scans come before faults within a
  step, and only a fault clears PROT_NONE), counted as ``numa_hint_faults`` counts it (one per
  huge folio, one per base page otherwise) -- the ``fault`` dim, summing to the run's counter.

:func:`numalab.plots.scan_heatmap` bins both over time. Watching only copies state: a mapped
run's numbers equal an untraced run's.
"""

from __future__ import annotations

import numpy as np

from .tracing import _Recorder, _trace_dataset, _traced_batch

__all__ = ["scan_map"]


class _MapRecorder(_Recorder):
    """The trace recorder plus the PTEs each visit changed and the faults of every step."""

    def __init__(self):
        super().__init__()
        self.visit_cols.update(pte=[], huge=[])
        self.faults = {k: [] for k in ("t", "replica", "vma", "count")}
        self._seen = None      # (R, NR) PROT_NONE as last looked at by a visit or a run's start
        self._newly = None     # (R, NR) made PROT_NONE during the current step

    def watch(self, b) -> None:
        """Wrap ``b.step`` to find, after each step, the regions that faulted during it."""
        self._seen = b.regions.prot_none.copy()
        self._newly = np.zeros_like(self._seen)
        step = b.step
        region_vma, inc = b.lay.region_vma, b.lay.fault_inc

        def step_and_look():
            before = b.regions.prot_none.copy()
            self._newly[:] = False
            step()
            gone = (before | self._newly) & ~b.regions.prot_none
            if np.count_nonzero(gone):
                r, q = np.nonzero(gone)
                key = r * b.wl.nvmas + region_vma[q]
                uniq, first = np.unique(key, return_index=True)
                self.faults["t"].append(np.full(uniq.size, float(b.now)))
                self.faults["replica"].append(r[first])
                self.faults["vma"].append(region_vma[q][first])
                self.faults["count"].append(np.bincount(np.searchsorted(uniq, key), weights=inc[q]).astype(np.int64))

        b.step = step_and_look

    def run_begin(self, b, rows, m, scanner, when):
        super().run_begin(b, rows, m, scanner, when)
        self._seen[rows] = b.regions.prot_none[rows]  # faults since the last look are not this run's

    def visits(self, b, r, m, k0, k1, reasons, offset, forced):
        super().visits(b, r, m, k0, k1, reasons, offset, forced)
        now = b.regions.prot_none[r]
        new = now & ~self._seen[r]
        self._seen[r] = now
        self._newly[r] |= new
        vmas = b.lay.mm_vmas[m][k0:k1]
        q = np.flatnonzero(new)
        v = b.lay.region_vma[q]
        pages = np.bincount(v, weights=b.lay.region_present[q], minlength=b.wl.nvmas)
        huge = np.bincount(v, weights=b.lay.region_huge[q], minlength=b.wl.nvmas)
        self.visit_cols["pte"].append(pages[vmas].astype(np.int64))
        self.visit_cols["huge"].append(huge[vmas].astype(np.int64))


def scan_map(workload, policy, seeds=0, *, topology="2s-128", max_time=None, **options):
    """:func:`numalab.scan_trace` plus, per visit, the PTEs it changed and, per step and VMA, the
    hinting faults taken (see the module docstring); arguments as :func:`numalab.scan_trace`.

    Returns the trace Dataset (dims ``run`` and ``visit``) with ``visit_pte_updates`` and
    ``visit_huge_pte_updates`` on ``visit`` and a ``fault`` dim: ``fault_t`` (s, the step's
    end), ``fault_seed``, ``fault_vma``, ``fault_vma_kind`` and ``fault_count``
    (``numa_hint_faults`` increments); attrs also ``vma_kinds`` and ``vma_mm`` (each VMA's kind
    and process, by index)."""
    import xarray as xr

    b, rec, wl, pol, seed_list = _traced_batch(workload, policy, seeds, topology, max_time, options, _MapRecorder)
    rec.watch(b)
    b.run()
    ds = _trace_dataset(b, rec, wl, pol, seed_list)
    cat = _Recorder._cat
    F = rec.faults
    fvma = cat(F["vma"], np.int64)
    kinds = np.asarray(wl.vma_kind, dtype=object)
    seeds_arr = np.asarray(seed_list, dtype=np.int64)
    return ds.assign(
        visit_pte_updates=("visit", cat(rec.visit_cols["pte"], np.int64),
                           {"units": "pages", "kernel_name": "numa_pte_updates",
                            "long_name": "base pages change_prot_numa made PROT_NONE in the VMA"}),
        visit_huge_pte_updates=("visit", cat(rec.visit_cols["huge"], np.int64),
                                {"units": "PMDs", "kernel_name": "numa_huge_pte_updates"}),
        fault_t=("fault", cat(F["t"], float), {"units": "s", "long_name": "end of the step the faults fell in"}),
        fault_seed=("fault", seeds_arr[cat(F["replica"], np.int64)], {"long_name": "seed of the replica"}),
        fault_vma=("fault", fvma, {"long_name": "VMA index in the workload"}),
        fault_vma_kind=("fault", kinds[fvma].astype(str) if fvma.size else np.zeros(0, dtype=str)),
        fault_count=("fault", cat(F["count"], np.int64),
                     {"units": "faults", "kernel_name": "numa_hint_faults",
                      "long_name": "NUMA hinting faults in the VMA during the step"}),
    ).assign_attrs(vma_kinds=[str(k) for k in kinds], vma_mm=[int(m) for m in wl.vma_mm])

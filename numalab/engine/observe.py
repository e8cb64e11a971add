"""Observation: the time series a run records, and the invariants it checks.

Kernel counterparts: the ``numa_maps`` / ``/proc/vmstat`` view a harness samples once per
second (resident pages per process and node -- mmtests' ``numa-meminfo``/``nmstat`` -- the
hinting-fault rate, the mean ``numa_scan_period``), the write locality of the benchmark
loops, and a convergence measure that needs the ground truth of which node accesses what
(no kernel counter has it). The invariants (pages conserved, no node running more threads
than it has CPUs, counters non-negative, the PROT_NONE index in sync) guard the model.
"""

from __future__ import annotations

import numpy as np

from ..errors import EngineInvariantError
from ..workloads import PH_DONE
from .progress import live_entry_rates, running_mask

__all__ = ["sample", "check_invariants", "class_access", "converged_fraction", "pages_by", "pages_by_node"]


def pages_by(b, key, nkeys) -> np.ndarray:
    """Resident base pages per (replica, key) for a per-(replica, region) ``key`` in
    ``[0, nkeys)``, int64 (one bincount; float sums of page counts are exact)."""
    flat = (np.arange(b.R)[:, None] * nkeys + key).ravel()
    w = np.broadcast_to(b.lay.region_present, key.shape).ravel()
    return np.bincount(flat, weights=w, minlength=b.R * nkeys).reshape(b.R, nkeys).astype(np.int64)


def pages_by_node(b) -> np.ndarray:
    """Resident base pages per (replica, node), recounted from the regions."""
    return pages_by(b, b.regions.node, b.lay.N)


def check_invariants(b):
    """Raise EngineInvariantError when the state breaks a conservation law or goes out of sync."""
    if (b.regions.node < 0).any() or (b.regions.node >= b.lay.N).any():
        raise EngineInvariantError(f"pages not conserved at t={b.now:.3f}s: a region on no node")
    by_node = pages_by_node(b)
    pages_on = by_node.sum(axis=1)
    if (pages_on != b.regions.total_pages).any():
        raise EngineInvariantError(f"pages not conserved at t={b.now:.3f}s: {pages_on} != {b.regions.total_pages}")
    if (b.regions.node_pages != by_node).any():
        raise EngineInvariantError(f"resident pages per node out of sync at t={b.now:.3f}s")
    if (b.regions.cls_node < 0).any():
        raise EngineInvariantError(f"negative class node count at t={b.now:.3f}s")
    # one test over every counter (about twenty); the name only when one failed
    if np.concatenate(list(b.counters.events.values())).min(initial=0) < 0:
        k = next(k for k, v in b.counters.events.items() if (v < 0).any())
        raise EngineInvariantError(f"counter {k} went negative at t={b.now:.3f}s")
    if (b.counters.events["numa_hint_faults_local"] > b.counters.events["numa_hint_faults"]).any():
        raise EngineInvariantError("numa_hint_faults_local > numa_hint_faults")
    if (b.counters.reasons < 0).any() or (b.numa.buf_mem < 0).any() or (b.numa.numa_faults_locality < 0).any():
        raise EngineInvariantError(f"negative fault statistics at t={b.now:.3f}s")
    if b.prot.idx.size and np.count_nonzero(b.regions.prot_none) != b.prot.idx.size:
        raise EngineInvariantError("protected-region index out of sync")
    if not (np.array_equal(b.prot.lam, b.prot.class_index(b.lay, b.prot.idx))
            and np.array_equal(b.prot.thresh, b.regions.thresh.take(b.prot.idx))):
        raise EngineInvariantError("protected-region rate/threshold index out of sync")
    running = running_mask(b)
    R, N = b.R, b.lay.N
    at = (np.arange(R)[:, None] * N + b.tasks.node)[running]           # running threads' (replica, node)
    load = np.bincount(at, minlength=R * N).reshape(R, N)
    if (load > b.lay.node_cpus).any():
        raise EngineInvariantError(f"a node runs more threads than it has CPUs at t={b.now:.3f}s")


def sample(b):
    """Append one time-series sample (per replica)."""
    R, M, N = b.R, b.lay.M, b.lay.N
    if b.lay.cls_pages is not None:
        cls_pages = b.regions.cls_node * b.lay.cls_pages[None, :, None]                # (R, C, N), exact
        # one bincount over (replica, mm, node) bins instead of add.at with a slice (~35x
        # dearer); sums of whole page counts are exact in any order
        key = (np.arange(R)[:, None, None] * M + b.lay.cls_mm[None, :, None]) * N + np.arange(N)
        pn = np.bincount(key.ravel(), weights=cls_pages.ravel(), minlength=R * M * N).reshape(R, M, N)
    else:
        cls_pages = None
        pn = pages_by(b, b.lay.region_mm[None, :] * N + b.regions.node, M * N).reshape(R, M, N).astype(float)
    b.obs.series["pages_node"].append(pn)
    lf = np.where(b.obs.local_w > 0, b.obs.local_acc / np.maximum(b.obs.local_w, 1e-30), np.nan)
    b.obs.series["local_fraction"].append(lf)
    b.obs.local_acc[:] = 0
    b.obs.local_w[:] = 0
    sp = np.zeros((R, M))
    for m in range(M):
        sel = b.lay.sample_sel[m]
        sp[:, m] = b.numa.numa_scan_period[:, sel].mean(axis=1) if sel.any() else np.nan
    b.obs.series["scan_period"].append(sp)
    b.obs.series["converged_fraction"].append(converged_fraction(b, cls_pages))
    f = b.counters.events["numa_hint_faults"].copy()
    b.obs.series["faults"].append(f - b.obs.fault_acc)
    b.obs.fault_acc = f
    if b.tracer is not None:
        b.tracer.placement(b)           # scan_trace(placement=True): each thread's placement
    b.obs.series_t.append(b.now)


def class_access(b):
    """(R, C, N): access rate of each class from threads on each node, 1/s; recomputed only
    for the replicas whose rates, phases or placement changed since the last sample."""
    R, N, C, T = b.R, b.lay.N, b.lay.C, b.lay.T
    rows = np.flatnonzero(b.obs.conv_stale | b.rates.dirty)
    if rows.size:
        wl = b.wl
        n = rows.size
        # the entries of phases no thread is in add 0.0 to their bins: left out
        phases, rate = live_entry_rates(b, rows, b.rates.speed[rows])                # (n, k)
        ent = b.lay.phase_set_entries[phases][0] if phases is not None else np.zeros(0, dtype=np.int64)
        tnode = b.tasks.node.take(rows[:, None] * T + wl.entry_thread[ent][None, :])  # (n, k)
        key = (np.arange(n)[:, None] * C + wl.entry_class[ent][None, :]) * N + tnode
        b.obs.conv_acc[rows] = np.bincount(key.ravel(), weights=rate.ravel(),
                                           minlength=n * C * N).reshape(n, C, N)
        b.obs.conv_stale[:] = False
    return b.obs.conv_acc


def converged_fraction(b, cls_pages=None):
    """(R, M): share of each process's accessed pages that sit on the node most of their
    current accesses come from (ground truth the kernel cannot see; issue 9's convergence).
    Regions nobody touches in the current phase are left out; NaN when a process has none.
    ``cls_pages``: resident pages per (replica, class, node) when the classes are uniform
    (then the sums run over classes, not regions; all sums are of whole page counts, so
    exact either way)."""
    R, N, M, C = b.R, b.lay.N, b.lay.M, b.lay.C
    rows = np.arange(R)
    acc = class_access(b)
    best = acc.argmax(axis=2)                                                 # (R, C)
    touched = acc.sum(axis=2) > 0                                             # (R, C)
    if cls_pages is not None:
        tot_c = np.where(touched, cls_pages.sum(axis=2), 0.0)
        # cls_pages[r, c, best[r, c]] as one flat take (take_along_axis builds index arrays)
        at_best = cls_pages.take((np.arange(R * C) * N + best.ravel())).reshape(R, C)
        good_c = np.where(touched, at_best, 0.0)
        flat = (rows[:, None] * M + b.lay.cls_mm[None, :]).ravel()
        tot = np.bincount(flat, weights=tot_c.ravel(), minlength=R * M).reshape(R, M)
        good = np.bincount(flat, weights=good_c.ravel(), minlength=R * M).reshape(R, M)
    else:
        rc = b.lay.region_class[None, :]
        on_best = np.take_along_axis(best, np.broadcast_to(rc, b.regions.node.shape), axis=1) == b.regions.node
        live = np.take_along_axis(touched, np.broadcast_to(rc, b.regions.node.shape), axis=1)
        w = b.lay.region_present[None, :] * live
        mm = np.broadcast_to(b.lay.region_mm[None, :], b.regions.node.shape)
        flat = (rows[:, None] * M + mm).ravel()
        tot = np.bincount(flat, weights=w.ravel(), minlength=R * M).reshape(R, M)
        good = np.bincount(flat, weights=(w * on_best).ravel(), minlength=R * M).reshape(R, M)
    # only while every worker of the process still runs: the last stragglers' pages say
    # little about placement, and an idle process has nothing to converge
    finished = np.stack([(b.tasks.phase[:, sel] == PH_DONE).any(axis=1) for sel in b.lay.sample_sel], axis=1)
    return np.where((tot > 0) & ~finished, good / np.where(tot > 0, tot, 1.0), np.nan)

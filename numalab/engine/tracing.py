"""What the NUMA scanner did, run by run and VMA by VMA: the model's side of
``perf record -e sched:sched_skip_vma_numa``.

:func:`scan_trace` runs the engine with an observer on ``task_numa_work`` (spec §3.2) and
returns one xarray Dataset with two dims:

* ``run`` -- one entry per ``task_numa_work`` run that got past ``numa_next_scan``: when
  (``t``, s), which replica (``seed``) and mm, which thread scanned (``scanner``, its ``tid``),
  ``numa_scan_seq`` and ``numa_scan_offset`` before and after, the PTEs it changed, its kernel
  time, and whether the v6.7 forced retry (``vma_pids_forced``) ran;
* ``visit`` -- one entry per VMA the run's loop reached, in order: the VMA, its kind (stack,
  buffer, text, ...), its bounds, ``numa_scan_offset`` as the kernel's tracepoint would print it,
  the decision (``reason``: a skip reason named as ``sched_skip_vma_numa`` names it, or why the
  VMA was scanned), and whether it was visited in the forced retry.

With ``placement=True`` it also samples every thread's placement at each time-series sample
(``time_resolution``), dims ``replica`` x ``sample`` x ``thread``: the node it runs on
(``task_node``), ``numa_preferred_nid``, ``numa_group_id``, ``numa_scan_period`` and its
``numa_faults`` (NUMA_MEM, private + shared, and the private part) per node -- what
``/proc/PID/task/TID/sched`` shows on a kernel built with ``CONFIG_SCHED_DEBUG`` (the scan
period with the test kernel's addition; ``benchmarks/vm_trace.py`` samples it there).

:func:`format_runs` prints one line per run; :func:`format_perf` prints the skips as
``perf script`` prints the kernel's tracepoint (``numa_scan_offset=%lX vm_start=%lX
vm_end=%lX reason=%s``), so a trace taken on a real machine can be put beside the model's.
Tracing only reads engine state: a traced run's numbers equal an untraced run's.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..reasons import DECISIONS, REASONS

__all__ = ["scan_trace", "format_runs", "format_perf"]

PAGE = 4096
#: decisions the kernel's sched_skip_vma_numa tracepoint reports (v6.7+): the skips, and
#: NUMAB_SKIP_IGNORE_PID, which is traced although the VMA is then scanned (the decision
#: table's ``traced`` column; a policy's skip rules of its own are traced too, as a kernel
#: carrying the rule would add its reason to the tracepoint's enum)
TRACED = tuple(n for n, t in zip(DECISIONS.names, DECISIONS.traced) if t)


class _Recorder:
    """Engine observer: collects runs and visits as lists of small arrays (cheap when off,
    since the engine only calls it when attached)."""

    def __init__(self):
        self.runs = {k: [] for k in ("t", "replica", "mm", "scanner", "tid", "seq_before", "offset_before",
                                     "seq_after", "offset_after", "pte_updates", "huge_pte_updates",
                                     "kernel_s", "forced_retry")}
        self.visit_cols = {k: [] for k in ("run", "vma", "reason", "offset", "forced")}
        self._open = {}          # replica -> index of its current run
        self._nruns = 0
        self._cnt0 = None
        # per time-series sample, with placement=True (None: not recorded)
        self.placement_cols = None

    def run_begin(self, b, rows, m, scanner, when):
        for i, r in enumerate(rows.tolist()):
            self._open[r] = self._nruns + i
        self._nruns += rows.size
        self.runs["t"].append(np.asarray(when, dtype=float).copy())
        self.runs["replica"].append(rows.copy())
        self.runs["mm"].append(np.full(rows.size, m))
        self.runs["scanner"].append(np.asarray(scanner).copy())
        self.runs["tid"].append(b.tasks.tid[rows, scanner].copy())
        self.runs["seq_before"].append(b.mm.numa_scan_seq[rows, m].copy())
        self.runs["offset_before"].append(b.mm.numa_scan_offset[rows, m].copy())
        self._cnt0 = (b.counters.events["numa_pte_updates"][rows].copy(), b.counters.events["numa_huge_pte_updates"][rows].copy())

    def run_end(self, b, rows, m, ktime, retried):
        self.runs["seq_after"].append(b.mm.numa_scan_seq[rows, m].copy())
        self.runs["offset_after"].append(b.mm.numa_scan_offset[rows, m].copy())
        self.runs["pte_updates"].append(b.counters.events["numa_pte_updates"][rows] - self._cnt0[0])
        self.runs["huge_pte_updates"].append(b.counters.events["numa_huge_pte_updates"][rows] - self._cnt0[1])
        self.runs["kernel_s"].append(np.asarray(ktime, dtype=float).copy())
        self.runs["forced_retry"].append(np.isin(rows, retried))

    def visits(self, b, r, m, k0, k1, reasons, offset, forced):
        """VMAs at positions [k0, k1) of mm ``m`` reached by one walk of replica ``r`` that
        started at ``numa_scan_offset`` = ``offset`` (pages)."""
        vend = b.lay.mm_vend[m][k0:k1]
        # a seq_completed skip moves numa_scan_offset to that VMA's end before it is traced
        sc = reasons == REASONS.index("seq_completed")
        off = np.maximum(offset, np.maximum.accumulate(np.where(sc, vend, 0)))
        n = k1 - k0
        self.visit_cols["run"].append(np.full(n, self._open[r]))
        self.visit_cols["vma"].append(b.lay.mm_vmas[m][k0:k1].copy())
        self.visit_cols["reason"].append(np.asarray(reasons, dtype=np.int64).copy())
        self.visit_cols["offset"].append(off)
        self.visit_cols["forced"].append(np.full(n, bool(forced)))

    def placement(self, b):
        """Every thread's placement now (called by observe.sample when recording placement):
        its node, numa_preferred_nid, numa group (-1: none) and NUMA_MEM faults per node."""
        if self.placement_cols is None:
            return
        c = self.placement_cols
        c["t"].append(float(b.now))
        c["task_node"].append(b.tasks.node.copy())
        c["numa_preferred_nid"].append(b.numa.numa_preferred_nid.copy())
        c["gid"].append(b.groups.gid.copy())
        c["numa_faults"].append(b.numa.faults_mem.sum(axis=-1))
        c["numa_faults_private"].append(b.numa.faults_mem[..., 1].copy())
        c["numa_scan_period"].append(b.numa.numa_scan_period.copy())

    @staticmethod
    def _cat(parts, dtype):
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)


def scan_trace(workload, policy, seeds=0, *, topology="2s-128", max_time=None, placement=False, **options):
    """Run ``workload`` under ``policy`` and record every ``task_numa_work`` run and VMA visit.

    Parameters
    ----------
    workload : Workload or a name from :func:`numalab.workloads` (laid out on ``topology``).
    policy : Policy or a profile name.
    seeds : int seed, or a list of distinct seeds run as one batch (a seed's trace is the
        same alone or in a batch).
    max_time : stop after this many simulated seconds (s); default: run to the end.
    placement : also sample every thread's placement each ``time_resolution`` seconds (dims
        ``replica``, ``sample``, ``thread``; see the module docstring).
    **options : engine options (:class:`numalab.engine.EngineOptions`), e.g. ``scan_delay_ms``,
        ``time_resolution``.

    Returns
    -------
    xarray.Dataset with dims ``run`` and ``visit`` (see the module docstring); ``visit_run``
    indexes ``run``. attrs: workload, topology, policy, seeds, and per seed elsp (s) and
    finished (0 when ``max_time`` stopped it first); ``traced_reasons`` (space-separated): the
    decisions ``sched_skip_vma_numa`` reports for this policy (its own skip rules included).
    """
    return _scan_trace_run(workload, policy, seeds, topology, max_time, placement, options)[0]


def _scan_trace_run(workload, policy, seeds, topology, max_time, placement, options):
    """:func:`scan_trace`'s run: ``(trace, batch)``, the finished batch kept for a caller that
    also wants the run's own numbers (:func:`numalab.engine.results.to_dataset` of it is what
    :func:`numalab.simulate` returns for the same run; tracing only reads engine state)."""
    from ..errors import check_bool, check_memory

    placement = check_bool("placement", placement)
    b, rec, wl, pol, seed_list = _traced_batch(workload, policy, seeds, topology, max_time, options, _Recorder)
    if placement:
        # the samples kept: (seeds x threads) x (4 + 2 nodes) 8-byte values each time_resolution s
        samples = b.o.max_time / b.o.time_resolution + 2
        check_memory("seeds", len(seed_list), samples * b.R * b.lay.T * (4 + 2 * b.lay.N) * 8)
        rec.placement_cols = {k: [] for k in ("t", "task_node", "numa_preferred_nid", "gid", "numa_faults",
                                              "numa_faults_private", "numa_scan_period")}
    b.run()
    ds = _trace_dataset(b, rec, wl, pol, seed_list)
    return (_with_placement(ds, b, rec, wl) if placement else ds), b


def _with_placement(ds, b, rec, wl):
    """``ds`` with the placement samples (dims replica, sample, thread[, node])."""
    c = rec.placement_cols
    tid = b.tasks.tid                                                   # (R, T)
    gid = np.stack(c["gid"], axis=1)                                   # (R, S, T): thread index
    R = np.arange(b.R)[:, None, None]
    # the kernel names a group by the pid of the task that created it (0: none)
    group = np.where(gid >= 0, tid[R, np.maximum(gid, 0)], 0)
    dims = ("replica", "sample", "thread")
    return ds.assign(
        replica_seed=("replica", np.asarray(ds.attrs["seeds"], dtype=np.int64), {"long_name": "seed of the replica"}),
        sample_t=("sample", np.asarray(c["t"], dtype=float), {"units": "s", "long_name": "time of the sample"}),
        thread_tid=(("replica", "thread"), tid.copy(), {"long_name": "the thread's pid (tid)"}),
        thread_mm=("thread", np.asarray(wl.thread_mm, dtype=np.int64), {"long_name": "process (mm) index"}),
        thread_main=("thread", np.asarray(wl.thread_main, dtype=bool), {"long_name": "the process's main thread"}),
        task_node=(dims, np.stack(c["task_node"], axis=1), {"kernel_name": "task_node", "long_name": "node it runs on"}),
        numa_preferred_nid=(dims, np.stack(c["numa_preferred_nid"], axis=1), {"kernel_name": "numa_preferred_nid"}),
        numa_group_id=(dims, group, {"kernel_name": "numa_group_id", "long_name": "pid of the group's creator (0: none)"}),
        numa_faults=((*dims, "node"), np.stack(c["numa_faults"], axis=1),
                     {"units": "pages", "kernel_name": "numa_faults[NUMA_MEM] (private + shared)",
                      "long_name": "the task's decayed memory-fault statistics per node"}),
        numa_faults_private=((*dims, "node"), np.stack(c["numa_faults_private"], axis=1),
                             {"units": "pages", "kernel_name": "numa_faults[NUMA_MEM] (private)",
                              "long_name": "their private part (last_cpupid unset or the task's own)"}),
        numa_scan_period=(dims, np.stack(c["numa_scan_period"], axis=1),
                          {"units": "ms", "kernel_name": "numa_scan_period"}),
    )


def _traced_batch(workload, policy, seeds, topology, max_time, options, recorder):
    """The batch :func:`scan_trace` runs, with a ``recorder()`` attached as its tracer:
    ``(batch, recorder, workload, policy, seeds)`` (also what :mod:`.scanmap` builds on)."""
    from ..errors import NumalabValueError, check_seeds
    from .api import coerce_policies, coerce_workload, make_batch

    wl = coerce_workload(workload, topology)
    if isinstance(policy, (list, tuple)):
        raise NumalabValueError("scan_trace takes one policy; allowed: a Policy or a profile name")
    pol = coerce_policies(policy)[0]
    seed_list = check_seeds([seeds] if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool)
                            else seeds)
    if max_time is not None:
        options["max_time"] = max_time
    b = make_batch(wl, pol, seed_list, **options)
    rec = b.tracer = recorder()
    return b, rec, wl, pol, seed_list


def _trace_dataset(b, rec, wl, pol, seed_list):
    """The trace Dataset of a finished traced batch (see :func:`scan_trace`)."""
    import xarray as xr

    from .options import DEFAULTS

    o = b.o
    R = rec.runs
    cat = _Recorder._cat
    replica = cat(R["replica"], np.int64)
    seeds_arr = np.asarray(seed_list, dtype=np.int64)
    V = rec.visit_cols
    vma = cat(V["vma"], np.int64)
    reason = cat(V["reason"], np.int64)
    dec = pol.decisions
    kinds = np.asarray(wl.vma_kind, dtype=object)
    run_vars = {
        "t": ("run", cat(R["t"], float), {"units": "s", "long_name": "time of the task_numa_work run"}),
        "seed": ("run", seeds_arr[replica], {"long_name": "seed of the replica"}),
        "mm": ("run", cat(R["mm"], np.int64), {"long_name": "process (mm) index"}),
        "scanner": ("run", cat(R["scanner"], np.int64), {"long_name": "thread index that ran task_numa_work"}),
        "tid": ("run", cat(R["tid"], np.int64), {"long_name": "its pid (thread id)"}),
        "seq_before": ("run", cat(R["seq_before"], np.int64), {"kernel_name": "numa_scan_seq"}),
        "seq_after": ("run", cat(R["seq_after"], np.int64), {"kernel_name": "numa_scan_seq"}),
        "offset_before": ("run", cat(R["offset_before"], np.int64) * PAGE,
                          {"units": "bytes", "kernel_name": "numa_scan_offset"}),
        "offset_after": ("run", cat(R["offset_after"], np.int64) * PAGE,
                         {"units": "bytes", "kernel_name": "numa_scan_offset"}),
        "pte_updates": ("run", cat(R["pte_updates"], np.int64), {"kernel_name": "numa_pte_updates"}),
        "huge_pte_updates": ("run", cat(R["huge_pte_updates"], np.int64), {"kernel_name": "numa_huge_pte_updates"}),
        "kernel_s": ("run", cat(R["kernel_s"], float), {"units": "s"}),
        "forced_retry": ("run", cat(R["forced_retry"], bool), {"kernel_name": "vma_pids_forced"}),
    }
    visit_vars = {
        "visit_run": ("visit", cat(V["run"], np.int64), {"long_name": "index on the run dim"}),
        "vma": ("visit", vma, {"long_name": "VMA index in the workload"}),
        "vma_kind": ("visit", kinds[vma].astype(str), {"long_name": "what the VMA holds"}),
        "vm_start": ("visit", wl.vma_start[vma] * PAGE, {"units": "bytes"}),
        "vm_end": ("visit", wl.vma_end[vma] * PAGE, {"units": "bytes"}),
        "numa_scan_offset": ("visit", cat(V["offset"], np.int64) * PAGE, {"units": "bytes"}),
        "reason": ("visit", np.asarray(dec.names)[reason], {"kernel_name": "sched_skip_vma_numa.reason"}),
        "scanned": ("visit", dec.allowed[reason], {"long_name": "the VMA's PTEs were changed (not skipped)"}),
        "forced": ("visit", cat(V["forced"], bool), {"long_name": "visited in the forced retry"}),
    }
    ds = xr.Dataset({**run_vars, **visit_vars})
    ds.attrs.update(workload=wl.name, topology=wl.topology.name, policy=pol.name,
                    traced_reasons=" ".join(n for n, t in zip(dec.names, dec.traced) if t),
                    seeds=list(map(int, seed_list)), elsp=[float(x) for x in b.elsp],
                    finished=[int(x) for x in b.outcome.finished],
                    dt=float(o.dt), max_time=float(o.max_time),
                    options=repr({k: v for k, v in o.to_dict().items() if v != DEFAULTS[k]}))
    return ds


def _cols(ds, names):
    return {k: ds[k].values for k in names}


def format_runs(ds, *, seed=None, vmas=False) -> str:
    """One line per ``task_numa_work`` run: time (s), scanning thread index and tid,
    ``numa_scan_seq`` and ``numa_scan_offset`` (MiB) before and after, PTEs changed, and the
    decisions for the VMAs it reached, grouped by kind. With ``vmas=True`` also one line per
    visited VMA. ``seed`` keeps one seed's runs."""
    r = _cols(ds, ("t", "seed", "mm", "scanner", "tid", "seq_before", "seq_after", "offset_before", "offset_after",
                   "pte_updates", "forced_retry"))
    v = _cols(ds, ("visit_run", "vma_kind", "reason", "vm_start", "vm_end", "forced"))
    runs = np.arange(r["t"].size)
    if seed is not None:
        runs = runs[r["seed"] == seed]
    order = np.argsort(v["visit_run"], kind="stable")
    starts = np.searchsorted(v["visit_run"][order], np.arange(r["t"].size + 1))
    lines = [f"# {ds.attrs['workload']} on {ds.attrs['topology']}, {ds.attrs['policy']}: task_numa_work runs",
             f"{'t (s)':>8} {'seed':>4} {'mm':>2} {'thread':>6} {'tid':>7} {'seq':>6} {'offset (MiB)':>13}  {'ptes':>7}  "
             "VMAs reached (kind:decision)"]
    for i in runs.tolist():
        idx = order[starts[i]:starts[i + 1]]
        groups = Counter(zip(v["vma_kind"][idx].tolist(), v["reason"][idx].tolist()))
        vis = ", ".join(f"{k}:{d}×{n}" if n > 1 else f"{k}:{d}" for (k, d), n in groups.items())
        retry = " +forced retry" if r["forced_retry"][i] else ""
        lines.append(f"{r['t'][i]:8.3f} {r['seed'][i]:4d} {r['mm'][i]:2d} {r['scanner'][i]:6d} {r['tid'][i]:7d} "
                     f"{r['seq_before'][i]:>2d}->{r['seq_after'][i]:<2d} "
                     f"{r['offset_before'][i] >> 20:6d}->{r['offset_after'][i] >> 20:<6d} "
                     f"{r['pte_updates'][i]:7d}  {vis or '-'}{retry}")
        if vmas:
            for j in idx.tolist():
                lines.append(f"{'':>10} {v['vma_kind'][j]:<8} vm_start={v['vm_start'][j]:X} "
                             f"vm_end={v['vm_end'][j]:X} {v['reason'][j]}" + (" (forced)" if v["forced"][j] else ""))
    return "\n".join(lines)


def format_perf(ds, *, seed=None, comm=None) -> str:
    """The skips as ``perf script`` prints ``sched:sched_skip_vma_numa`` (v6.7+ kernels):
    ``COMM TID [000] SECONDS: sched:sched_skip_vma_numa: numa_scan_offset=%lX vm_start=%lX
    vm_end=%lX reason=%s``. Decisions the kernel does not trace (scans, and the RFC's
    ``disjoint_wait``) are left out. The CPU column is 000: the model does not track CPUs."""
    comm = comm or str(ds.attrs["workload"]).split("_")[0]
    r = _cols(ds, ("t", "seed", "tid"))
    v = _cols(ds, ("visit_run", "reason", "numa_scan_offset", "vm_start", "vm_end"))
    traced = str(ds.attrs["traced_reasons"]).split() if "traced_reasons" in ds.attrs else list(TRACED)
    keep = np.isin(v["reason"], traced)
    if seed is not None:
        keep &= r["seed"][v["visit_run"]] == seed
    out = []
    for j in np.flatnonzero(keep).tolist():
        i = v["visit_run"][j]
        out.append(f"{comm:>16} {r['tid'][i]:7d} [000] {r['t'][i]:12.6f}: sched:sched_skip_vma_numa: "
                   f"numa_scan_offset={v['numa_scan_offset'][j]:X} vm_start={v['vm_start'][j]:X} "
                   f"vm_end={v['vm_end'][j]:X} reason={v['reason'][j]}")
    return "\n".join(out)

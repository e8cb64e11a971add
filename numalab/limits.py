"""What a call will cost, estimated from its sizes before anything is allocated (issue 17).

Each estimator is a pure function of the sizes a call is given -- no model is built and no
array allocated -- so a caller can refuse a request that would exhaust the machine's memory or
run for hours, with a :class:`~numalab.errors.NumalabValueError` naming the parameter, its
value, the estimate and the limit (:func:`numalab.errors.check_memory`,
:func:`numalab.errors.check_steps`). The limits: :data:`numalab.errors.MEMORY_FRACTION` of
the available memory or ``$NUMALAB_MEMORY_LIMIT`` (e.g. ``8G``, or a ``memory_limit=``
argument), and :data:`numalab.errors.MAX_STEPS` time steps or ``$NUMALAB_MAX_STEPS``.

The estimates are upper bounds of the arrays each model allocates (counted from the code, with
a safety factor of :data:`SAFETY` for temporaries); ``docs/robustness.md`` lists them.

* :func:`simulate_bytes` / :func:`simulate_steps` / :func:`check_simulate` -- ``nl.simulate``
  (the NUMA engine): per replica, arrays over regions, threads x nodes, VMAs x windows, access
  entries, the random-number block, and the retained time series of every policy;
* :func:`futex_point_bytes` / :func:`check_futex` -- the futex model: per (workload, seed)
  point, the bucket stations (dense over the class x station keys), the thread x key arrays
  and, for the simulation, the pre-drawn event streams;
* :func:`futex_workload_bytes` -- building a futex workload (threads x futexes per thread);
* :func:`check_report_text` / :func:`check_report_stats` / :func:`check_report_cells` -- the
  report readers (:mod:`numalab.report`): the size of the text, the statistics it names (each a
  Dataset variable) and the cells of the Dataset it reads into.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from .errors import NumalabValueError, check_memory, check_steps, env_int, format_bytes, memory_limit as _limit

__all__ = [
    "SAFETY",
    "SAFETY_SIMULATE",
    "simulate_sizes",
    "simulate_bytes",
    "simulate_steps",
    "check_simulate",
    "futex_point_bytes",
    "futex_workload_bytes",
    "check_futex",
    "check_futex_workload",
    "MAX_REPORT_BYTES",
    "MAX_REPORT_STATS",
    "check_report_text",
    "check_report_stats",
    "check_report_cells",
]

#: factor on the counted arrays for numpy temporaries and the Dataset built at the end: the
#: futex estimate counts only the main arrays (2x); the engine's is a closer count (1.25x,
#: about 1.9x the measured peak growth per seed of numa01 on 2s-128, see docs/robustness.md)
SAFETY = 2.0
SAFETY_SIMULATE = 1.25


def simulate_sizes(workload) -> dict:
    """The sizes :func:`simulate_bytes` needs, read from a :class:`numalab.workloads.Workload`
    (attributes only: nothing is computed)."""
    topo = workload.topology
    classes = int(workload.region_class.max()) + 1 if getattr(workload.region_class, "size", 0) else 1
    return dict(
        threads=int(workload.nthreads),
        vmas=int(workload.nvmas),
        regions=int(workload.nregions),
        nodes=int(topo.nodes),
        processes=int(workload.nproc),
        classes=classes,
        entries=int(workload.entry_class.size),
    )


def simulate_steps(dt: float, max_time: float) -> float:
    """Time steps of the longest run: ``max_time / dt``."""
    return float(max_time) / float(dt)


def _engine_sizes(processes: int, vmas: int, scan_size_mb) -> tuple[int, int]:
    """(the engine's random-number block in steps, K: the most regions one step's scans can
    protect), read from the engine itself (``engine.batch.DRAW_BLOCK``,
    ``engine.layout.protect_bound``) so the estimate follows any change there."""
    from .engine.batch import DRAW_BLOCK
    from .engine.layout import protect_bound
    from .engine.options import EngineOptions

    if scan_size_mb is None:
        scan_size_mb = EngineOptions.describe()["scan_size_mb"]["default"]
    return int(DRAW_BLOCK), int(protect_bound(processes, vmas, int(scan_size_mb)))


def simulate_bytes(sizes: Mapping[str, int], seeds: int, policies: int, *, dt: float = 0.05,
                   max_time: float = 2000.0, time_resolution: float = 1.0, windows: int = 8,
                   scan_size_mb: int | None = None) -> float:
    """Bytes ``nl.simulate`` may hold at its peak for a workload of ``sizes`` (see
    :func:`simulate_sizes`), ``seeds`` replicas, ``policies`` policies (run one after the other,
    each one's results kept), ``windows`` PID windows of the widest policy, ``scan_size_mb``
    the scan budget (default: the engine's).

    Per replica: regions x ~12 arrays, threads x nodes x 9 arrays, threads x ~30 arrays, VMAs x
    (10 + windows) arrays, classes x nodes x 2, entries x 3, the random-number block
    (``DRAW_BLOCK`` steps x 2 (K + T), K the regions one step can protect: the engine's own
    ``protect_bound``, 410 for numa01 at 256 MB, 65,690 at 65536 MB), and the time series
    (nodes + 6 values per sample, ``max_time / time_resolution`` samples) of every policy."""
    T, V, NR = int(sizes["threads"]), int(sizes["vmas"]), int(sizes["regions"])
    N, M = int(sizes["nodes"]), int(sizes.get("processes", 1))
    C, E = int(sizes.get("classes", NR)), int(sizes.get("entries", T))
    R, P = int(seeds), max(1, int(policies))
    block, K = _engine_sizes(M, V, scan_size_mb)
    per_replica = (
        NR * 12 * 8
        + T * N * 9 * 8
        + T * 30 * 8
        + V * (10 + max(1, int(windows))) * 8
        + C * N * 2 * 8
        + E * 3 * 8
        + block * 2 * (K + T) * 8
    )
    static = T * 4 * V + (NR + V + E) * 8 * 8
    samples = math.ceil(float(max_time) / float(time_resolution)) + 2
    series = samples * (N + 6) * 8 * 2  # kept per policy, copied once into the Dataset
    return SAFETY_SIMULATE * (static + R * per_replica + P * R * series)


def check_simulate(workload, policies, seeds, *, dt: float = 0.05, max_time: float = 2000.0,
                   time_resolution: float = 1.0, scan_size_mb: int | None = None, memory_limit=None,
                   steps_limit=None) -> float:
    """Refuse an ``nl.simulate`` call whose step count or memory is over the limits; returns
    the memory estimate in bytes. ``workload``: a Workload; ``policies``: a list of Policy (or
    a count); ``seeds``: the checked list of seeds (or a count); ``scan_size_mb``: the engine
    option (default: the engine's). Call it at simulate's boundary, after the arguments are
    coerced and before any batch is built."""
    steps = simulate_steps(dt, max_time)
    check_steps("dt", dt, steps, steps_limit) if dt < 0.001 else check_steps("max_time", max_time, steps, steps_limit)
    n_seeds = seeds if isinstance(seeds, int) else len(seeds)
    pols = policies if isinstance(policies, (list, tuple)) else [policies] if not isinstance(policies, int) else []
    n_pol = policies if isinstance(policies, int) else len(pols)
    windows = max([int(getattr(p, "windows", 8) or 8) for p in pols] or [8])
    need = simulate_bytes(simulate_sizes(workload), n_seeds, n_pol, dt=dt, max_time=max_time,
                          time_resolution=time_resolution, windows=windows, scan_size_mb=scan_size_mb)
    per_seed = need / max(1, n_seeds)
    # name the knob that drives the cost: the seeds when one replica fits, else the workload
    if per_seed * 1 <= _limit(memory_limit):
        check_memory("seeds", n_seeds, need, memory_limit)
    else:
        check_memory("workload", getattr(workload, "name", workload), need, memory_limit)
    return need


# --------------------------------------------------------------------------------------------
# futex model


def futex_workload_bytes(threads: int, futexes: int) -> float:
    """Bytes of a futex workload's thread x key and futex arrays (about 10 int64 per key)."""
    return SAFETY * float(threads) * float(futexes) * 10 * 8


def futex_point_bytes(*, threads: int, futexes: int, buckets: int, classes: int, method: str = "mva",
                      ops: int = 400) -> float:
    """Bytes one (workload, seed) point of the futex solver holds: ``buckets`` stations (all
    buckets of its tables, global and private) with per-station arrays and the dense class x
    station key sums (``classes`` x buckets x 2 float64), the routing's thread x key arrays,
    and for ``method="simulation"`` the event streams (threads x (ops + 1) x 8 float64)."""
    U = float(buckets) + 1
    tf = float(threads) * float(futexes)
    b = U * (10 * 8 + 4 * 8 * max(1, int(classes))) + tf * 16 * 8 + float(threads) * 32 * 8
    if method == "simulation":
        b += float(threads) * (int(ops) + 1) * 12 * 8
    return SAFETY * b


def _futex_point(w, method, ops) -> tuple[float, int]:
    layout = w.layout()
    procs = int(w.processes)
    classes = procs * 2 * int(w.topology.nodes)
    fut = int(w.thread_futexes.shape[1]) if w.thread_futexes.ndim == 2 else 1
    return futex_point_bytes(threads=w.threads, futexes=fut, buckets=layout.n_buckets + procs,
                             classes=classes, method=method, ops=ops), layout.n_buckets


def check_futex(workloads, n_seeds: int, method: str = "mva", ops: int = 400, *, chunk: int | None = None,
                memory_limit=None) -> float:
    """Refuse a futex solve whose peak (the largest chunk of points solved together, see
    :func:`numalab.futex.api.solve_points`) is over the memory limit; returns the estimate.
    Names ``buckets`` when the tables drive the cost, else ``threads``/``seeds``."""
    workloads = list(workloads)
    if not workloads:
        return 0.0
    chunk = chunk or max(1, 16 // max(1, n_seeds))
    costs = [_futex_point(w, method, ops) for w in workloads]
    worst = max(range(len(costs)), key=lambda i: costs[i][0])
    per_point, nb = costs[worst]
    need = per_point * min(chunk, len(workloads)) * n_seeds
    w = workloads[worst]
    tf = float(w.threads) * (w.thread_futexes.shape[1] if w.thread_futexes.ndim == 2 else 1)
    if nb >= tf:
        check_memory("buckets", nb, need, memory_limit)
    elif per_point <= _limit(memory_limit):
        check_memory("seeds", n_seeds, need, memory_limit)
    else:
        check_memory("threads", w.threads, need, memory_limit)
    return need


def check_futex_workload(threads: int, futexes: int, memory_limit=None) -> float:
    """Refuse building a futex workload of ``threads`` x ``futexes`` keys over the limit."""
    need = futex_workload_bytes(threads, futexes)
    check_memory("threads x futexes", f"{threads} x {futexes}", need, memory_limit)
    return need


# --------------------------------------------------------------------------------------------
# report readers

#: largest report text a reader takes (``$NUMALAB_MAX_REPORT_BYTES``): the robot's mails and
#: mmtests reports posted to the lists are well under 1 MiB (the largest fixture of
#: tests/data is 9 KiB); 16 MiB is read in a few seconds (benchmarks/bench_readers.py)
MAX_REPORT_BYTES = 16 << 20
#: most distinct statistics one text may name (stat keys, ops, vmstat counters): each becomes
#: a Dataset variable (~30 us and a few KiB each); /proc/vmstat has ~250 counters, a robot
#: block 50-500 stats
MAX_REPORT_STATS = 20_000


def check_report_text(name: str, text) -> str:
    """The text a reader is given: a ``str`` of at most :data:`MAX_REPORT_BYTES` characters
    (or ``$NUMALAB_MAX_REPORT_BYTES``), refused before any line is read."""
    if not isinstance(text, str):
        raise NumalabValueError(f"{name} must be a str holding the report; got {type(text).__name__}")
    cap = env_int("NUMALAB_MAX_REPORT_BYTES", MAX_REPORT_BYTES, lo=1)
    size = len(text) if len(text) * 4 <= cap or text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if size > cap:
        raise NumalabValueError(
            f"{name} holds {format_bytes(size)}, more than a report reader takes ({format_bytes(cap)}; "
            f"reports posted to the lists are under 1 MiB); pass the part holding the table, or raise "
            f"NUMALAB_MAX_REPORT_BYTES"
        )
    return text


def check_report_stats(what: str, n: int, where: str = "") -> int:
    """Refuse a text naming more than :data:`MAX_REPORT_STATS` distinct statistics."""
    if n > MAX_REPORT_STATS:
        raise NumalabValueError(
            f"{where}{what}: {n} distinct names, more than a report holds; allowed: at most "
            f"{MAX_REPORT_STATS:,} (is this a report?)"
        )
    return n


def check_report_cells(what: str, cells: float, hint: str = "", memory_limit=None) -> float:
    """Refuse a Dataset of ``cells`` float64 values (its data variables, dense over its dims)
    that would not fit the memory budget (:func:`numalab.errors.memory_limit`)."""
    need, budget = 8.0 * 2 * float(cells), _limit(memory_limit)
    if need > budget:
        raise NumalabValueError(
            f"{what} make {int(cells):,} cells, about {format_bytes(need)} as one Dataset, more than the memory "
            f"limit of {format_bytes(budget)} (NUMALAB_MEMORY_LIMIT){'; ' + hint if hint else ''}"
        )
    return need

"""The explorers' pure functions: plain values in, a Dataset or a dict of summary numbers out
(tested without a browser). Figures of these results are in :mod:`.display`."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import xarray as xr

from ..errors import NumalabValueError, check_choice, check_int


# =============================================================================================
# PID hash

def pid_hash_summary(threads: int, width: int = 64, first_tid: int = 4100) -> dict:
    """What ``threads`` consecutive TIDs ``first_tid, first_tid+1, ...`` do to one access-PID map.

    Each sets bit ``hash_32(tid, log2(width))`` (``vma_set_access_pid_bit()``). Returns a dict:
    ``distinct_bits`` (popcount of the map), ``collisions`` (threads sharing a bit with an
    earlier one), ``p_outsider`` (fraction of the map set: the chance that a thread that never
    touched the VMA passes the PID test).
    """
    from ..hashing import pid_bit

    threads = check_int("threads", threads, lo=1, hi=1 << 16)
    first_tid = check_int("first_tid", first_tid, lo=1, hi=2**32 - 1 - threads)
    bits = pid_bit(np.arange(first_tid, first_tid + threads, dtype=np.uint32), width=width)
    distinct = int(np.unique(bits).size)
    return {"threads": threads, "width": int(width), "distinct_bits": distinct,
            "collisions": threads - distinct, "p_outsider": round(distinct / int(width), 4)}


# =============================================================================================
# decision matrix over scan passes

PATTERNS = ("disjoint", "phase-change")


def _vma_layout(threads: int):
    names = ["buffer"] + [f"stack{i}" for i in range(threads)] + ["init-only"]
    return names


def _touch_prob(pattern: str, threads: int, p: int, passes: int) -> np.ndarray:
    """(T, V) probability that thread t faults in VMA v during pass p (if v is scanned)."""
    names = _vma_layout(threads)
    prob = np.zeros((threads, len(names)))
    prob[:, 0] = 0.6  # the shared buffer: every thread, now and then
    own = np.arange(threads)
    if pattern == "phase-change" and p >= passes // 2:
        own = (own + 1) % threads  # each thread moves on to its neighbour's data
    prob[np.arange(threads), 1 + own] = 0.95
    if p < 2:
        prob[0, -1] = 1.0  # the main thread initialises a VMA nobody uses afterwards
    return prob


def decision_passes(profile="6.12", *, history=None, threads: int = 4, passes: int = 12,
                    rotate_every: int = 4, pattern: str = "disjoint", seed: int = 0,
                    first_tid: int = 4100) -> xr.Dataset:
    """Replay ``passes`` scan passes of one small process through a policy's scan filter
    (``Policy.parse(profile, history=history)``: any policy text, ``"6.12+my_rule"`` too, or a
    Policy; history None / "profile" / N; an adaptive history is refused, ``numalab.simulate``
    runs it).

    The process: ``threads`` threads (consecutive TIDs from ``first_tid``), a shared buffer
    VMA, one stack VMA per thread and a VMA only the main thread initialises (passes 0-1).
    Pass ``p`` (``mm->numa_scan_seq = p``, scan delay already elapsed):

    1. if a window rotation is due (every ``rotate_every`` passes, ``VMA_PID_RESET_PERIOD`` =
       4 x scan delay at the 1 s minimum scan period) and ``policy.rotate_before_access``
       (v6.7+), rotate every VMA's history (``history.rotate``);
    2. evaluate ``vma_is_accessed()`` for every thread as the scanner (the task x VMA matrix of
       ``policy.decision_matrix``); the pass's scanner is thread ``p % threads`` -- threads
       take turns winning ``task_numa_work``'s cmpxchg on ``numa_next_scan``;
    3. rotation due but not moved up (v6.4-v6.6): rotate the VMAs the scanner scanned;
    4. only VMAs the scanner scanned are PROT_NONE, so only they take hinting faults: every
       thread touching a scanned VMA (``pattern``, drawn with ``seed``) sets its bit in the
       current window (``history.set_pid_bits``). Skipped VMAs collect no bits -- the feedback
       that locks a thread out of memory it uses (a "false skip").

    Returns
    -------
    xarray.Dataset, dims ("pass", "task", "vma", "window", "bit"):
    ``decision`` (pass, task, vma) int8 reason codes (attrs ``reasons``), ``scanner`` (pass)
    tid, ``scanned`` (pass, vma) bool, ``touched`` (pass, task, vma) bool (ground truth: would
    have faulted had the VMA been scanned), ``bits`` (pass, vma, window, bit) bool -- the
    history the decision saw, window 0 newest.
    """
    from ..history import empty, rotate, set_pid_bits
    from ..policy import Policy, decide, decision_matrix
    from ..scanview import ScanView

    pattern = check_choice("pattern", pattern, PATTERNS)
    threads = check_int("threads", threads, lo=1, hi=64)
    passes = check_int("passes", passes, lo=1, hi=200)
    rotate_every = check_int("rotate_every", rotate_every, lo=1, hi=64)
    seed = check_int("seed", seed, lo=0)
    pol = Policy.parse(profile, history=history)
    if pol.adapt is not None:
        raise NumalabValueError(f"history={history!r}: the replay keeps a fixed number of PID windows, an adaptive "
                                "history changes it with the engine's faults; allowed: None, 'profile' or N in 1..64")
    names = _vma_layout(threads)
    nvma = len(names)
    tids = np.arange(first_tid, first_tid + threads, dtype=np.uint32)
    pids, idx = empty((nvma,), pol.windows, pol.width)
    vm_start = (np.arange(nvma) + 1) * 8192  # pages; 32 MiB apart
    vm_end = vm_start + 4096
    prev_scan_seq = np.full(nvma, -1)  # v6.7: a new VMA's state starts at seq - 1
    select = np.zeros(nvma, np.int64)
    rng = np.random.default_rng(seed)
    out_dec = np.zeros((passes, threads, nvma), np.int8)
    out_bits = np.zeros((passes, nvma, pol.windows, pol.width), bool)
    out_scanner = np.zeros(passes, np.int64)
    out_scanned = np.zeros((passes, nvma), bool)
    out_touched = np.zeros((passes, threads, nvma), bool)
    for p in range(passes):
        due = p > 0 and p % rotate_every == 0
        if due and pol.rotate_before_access:
            rotate(pids, idx, rotation=pol.rotation)
        scanner = p % threads
        view = ScanView(pids_active=pids, idx=idx, scanner_tid=np.uint32(tids[scanner]), numa_scan_seq=p,
                        start_scan_seq=np.zeros(nvma), prev_scan_seq=prev_scan_seq, scan_offset=0, vm_start=vm_start,
                        vm_end=vm_end, next_scan=np.zeros(nvma), now=p * 1000, nr_threads=threads,
                        vma_scan_select=select)
        out_dec[p] = decision_matrix(pol, view, tids=tids).values
        out_bits[p] = _age_ordered_bits(pids, idx, pol)
        allowed, _reason, select = decide(pol, view)
        select = np.asarray(select if select is not None else np.zeros(nvma), dtype=np.int64)
        if due and not pol.rotate_before_access:
            rotate(pids, idx, np.asarray(allowed, bool), rotation=pol.rotation)
        touched = rng.random((threads, nvma)) < _touch_prob(pattern, threads, p, passes)
        faults = touched & allowed[None, :]
        t_idx, v_idx = np.nonzero(faults)
        set_pid_bits(pids, idx, (v_idx,), tids[t_idx], width=pol.width, rotation=pol.rotation)
        prev_scan_seq = np.where(allowed, p, prev_scan_seq)
        out_scanner[p], out_scanned[p], out_touched[p] = tids[scanner], allowed, touched
    ds = xr.Dataset(
        {
            "decision": (("pass", "task", "vma"), out_dec, {
                "long_name": "scan decision of task_numa_work for (scanning task, VMA)", "units": "1",
                "kernel_name": "sched_skip_vma_numa.reason", "reasons": list(pol.reasons), "policy": pol.name,
                "allowed_codes": [i for i, ok in enumerate(pol.decisions.allowed) if ok],
                "refusal_codes": _refusal_codes(pol)}),
            "scanner": ("pass", out_scanner, {"long_name": "tid of the thread that ran task_numa_work", "units": "1"}),
            "scanned": (("pass", "vma"), out_scanned, {"long_name": "VMA scanned (made PROT_NONE) this pass", "units": "1"}),
            "touched": (("pass", "task", "vma"), out_touched, {"long_name": "thread accessed the VMA this pass (ground truth)", "units": "1"}),
            "bits": (("pass", "vma", "window", "bit"), out_bits, {
                "long_name": "pids_active bits seen by the decision, window 0 newest", "units": "1",
                "kernel_name": "vma_numab_state.pids_active"}),
        },
        coords={"pass": np.arange(passes), "task": np.arange(threads), "tid": ("task", tids.astype(np.int64)),
                "vma": names, "window": np.arange(pol.windows), "bit": np.arange(pol.width)},
        attrs={"policy": pol.name, "policy_json": pol.to_json(), "pattern": pattern, "seed": seed,
               "rotate_every": rotate_every},
    )
    return ds


def _refusal_codes(pol) -> list[int]:
    """Codes of the PID filter's refusals a false skip counts: ``pid_inactive`` and the skip
    rules of ``vma_is_accessed()`` (a user rule's refusals)."""
    dec = pol.decisions
    return [i for i, name in enumerate(dec.names)
            if name == "pid_inactive" or (dec.pid_skip[i] and name in {r.reason for r in pol.user_rules})]


def _age_ordered_bits(pids, idx, pol) -> np.ndarray:
    """(V, W, width) bool, window 0 = newest (shift: W-1 is newest; ring: idx is newest)."""
    w = pol.windows
    if pol.rotation == "shift":
        order = np.broadcast_to(np.arange(w)[::-1], (pids.shape[0], w))
    else:
        order = (idx[:, None] - np.arange(w)[None, :]) % w
    aged = np.take_along_axis(pids, order[:, :, None], axis=1)  # (V, W, words)
    le = np.ascontiguousarray(aged, dtype="<u8")
    return np.unpackbits(le.view(np.uint8), axis=-1, bitorder="little").astype(bool)


def decision_summary(ds: xr.Dataset, p: int) -> dict:
    """Numbers of pass ``p``: the scanner, how many VMAs it scanned / skipped, and the false
    skips in passes 0..p: VMAs the scanner skipped as ``pid_inactive`` (or refused by a skip
    rule of the policy's own) although it accessed them in that pass (issue 9's definition,
    with the pass as the span) -- the access could not fault, so its bit stays absent and the
    skip repeats."""
    from ..policy import CODE

    p = check_int("pass", p, lo=0, hi=ds.sizes["pass"] - 1)
    scanner = int(ds["scanner"][p])
    task = int(np.nonzero(ds["tid"].values == scanner)[0][0])
    codes = ds["decision"].values[: p + 1, :, :]
    rows = np.arange(p + 1)
    who = np.array([int(np.nonzero(ds["tid"].values == int(s))[0][0]) for s in ds["scanner"].values[: p + 1]])
    refusals = ds["decision"].attrs.get("refusal_codes", [int(CODE["pid_inactive"])])
    inactive = np.isin(codes[rows, who], refusals)  # (pass, vma) as the scanner decided
    false_skips = int((inactive & ds["touched"].values[rows, who]).sum())
    return {
        "pass (numa_scan_seq)": p,
        "scanner tid": scanner,
        "VMAs scanned": int(ds["scanned"][p].sum()),
        "VMAs skipped": int((~ds["scanned"][p]).sum()),
        "VMAs passing on the scanner's own bit": int((codes[p, task] == CODE["own_pid"]).sum()),
        "false skips so far": false_skips,
    }


# =============================================================================================
# futex

FUTEX_BUCKETS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


def futex_run(mode, buckets, threads: int, nodes: int, *, topology: str = "2s-128", seeds=(0,)) -> xr.Dataset:
    """``perf bench futex hash -t threads`` on ``topology`` with ``nodes`` nodes, in kernel
    ``mode`` ("classic", "numa", "private", or any mode :func:`numalab.futex.hash_mode`
    accepts), for each bucket count in ``buckets`` (private slots for a mode with private
    tables, the what-if table size otherwise) -> Dataset dims (buckets, seed) from
    :func:`numalab.futex.sweep`."""
    from .. import futex
    from ..topology import Topology

    futex.hash_mode(mode)
    nodes = check_int("nodes", nodes, lo=1, hi=64)
    if isinstance(topology, str) and topology in Topology.presets():
        topo = Topology.preset(topology, nodes=nodes)
    else:   # a topology file: the what-if machine has its nodes, with the default SLIT for another count
        base = Topology.coerce(topology)
        topo = base if nodes == base.nodes else dataclasses.replace(base, nodes=nodes, distance=None)
    buckets = [check_int("buckets", b, lo=2) for b in np.atleast_1d(buckets).tolist()]
    ds = futex.sweep(buckets=buckets, mode=mode, threads=check_int("threads", threads, lo=1, hi=topo.ncpus),
                     seeds=list(seeds), topology=topo)
    return ds.squeeze([d for d in ("threads",) if d in ds.dims], drop=True)


def futex_summary(ds: xr.Dataset, buckets: int) -> dict:
    """Mean over seeds at ``buckets``: the thread count, ops/s per thread (perf bench's 'Averaged
    ... operations/sec'), bucket utilisation and hash collisions."""
    from ..plots import futex_threads

    point = ds.sel(buckets=buckets)
    return {
        "threads": futex_threads(ds),
        "buckets": int(buckets),
        "ops/s per thread": float(point["ops_per_s_per_thread"].mean()),
        "ops/s (all threads)": float(point["ops_per_s"].mean()),
        "hb-lock utilisation": float(point["bucket_utilisation"].mean()),
        "futexes colliding": float(point["collisions"].mean()),
    }


# =============================================================================================
# history-length runs (numalab.simulate)

@functools.cache
def adaptive_available() -> bool:
    """True when ``Policy(history="adaptive")`` exists and :mod:`numalab.adaptive` has its rules
    (the engine runs every one of them: ``tests/test_adaptive.py``). No engine run: this is asked
    while an explorer is built, which must return at once."""
    from ..policy import Policy

    try:
        Policy(history="adaptive")
        from ..adaptive import ADAPT_RULES, hooks_for  # noqa: F401 - the engine's hook for each rule
    except (NumalabValueError, TypeError, ImportError):
        return False
    return bool(ADAPT_RULES)


def adaptive_rules() -> list[str]:
    """The adaptive-history rules ``Policy(history="adaptive", adapt=...)`` accepts (empty
    until numalab.adaptive exists)."""
    if not adaptive_available():
        return []
    from ..adaptive import ADAPT_RULES

    return list(ADAPT_RULES)


def history_policy(profile: str, history):
    """The policy of a (profile, N) choice: ``Policy.parse(profile, history=history)`` --
    N = "profile" keeps the profile's own length, an int sets ``NR_ACCESS_PID_HIST``,
    "adaptive" / "adaptive:<rule>" picks an adaptive rule."""
    from ..policy import Policy

    return Policy.parse(profile, history=history)


#: small defaults so an explorer answers in about a second per run
HISTORY_WORKLOAD_OPTIONS = {"size_bytes": 512 << 20}


def history_run(workload: str, topology: str, profile: str, history, threads, seed, *,
                workload_options=None, **engine_options) -> xr.Dataset:
    """``numalab.simulate(workload, [policy], seeds=[seed])``; ``seed`` is one int or a list of
    ints (one batched engine call; every seed gives the same numbers as it does alone).

    ``threads`` (per process; "default"/None keeps the workload's own count) and
    ``workload_options`` (e.g. ``size_bytes``, ``loops``) go to ``numalab.workload``;
    ``engine_options`` to ``numalab.simulate``."""
    from ..engine import simulate
    from ..workloads import workload as make  # laid out once per arguments in this process

    overrides = dict(workload_options or {})
    if threads not in (None, "default"):
        overrides["threads"] = int(threads)
    wl = make(workload, topology, **overrides)
    seeds = [int(x) for x in np.atleast_1d(seed).tolist()]
    return simulate(wl, [history_policy(profile, history)], seeds=seeds, **engine_options)


def history_summary(ds: xr.Dataset) -> dict:
    """mmtests-like numbers over the seeds of a one-policy run: Amean and Stddev of elsp/syst,
    the vmstat counters and the filter-quality metrics (means)."""
    rows = {"seeds": int(ds.sizes.get("seed", 1))}
    for v in ("elsp", "syst"):
        if v in ds:
            x = ds[v].values.astype(float).ravel()
            rows[f"{v} Amean [s]"] = float(x.mean())
            rows[f"{v} Stddev [s]"] = float(x.std(ddof=1)) if x.size > 1 else 0.0
    for v in ("numa_hint_faults", "numa_hint_faults_local", "numa_pages_migrated", "false_skips", "idle_scans"):
        if v in ds:
            rows[v] = float(ds[v].mean())
    return rows


def _concat(datasets, dim):
    """Concatenate one-seed / one-policy results along ``dim``; time series of different
    lengths are padded with NaN (outer join), attrs of the first kept."""
    return xr.concat(datasets, dim=dim, join="outer", data_vars="all", coords="different",
                     compat="equals", combine_attrs="override")

"""Futex workloads shaped like the programs researchers run (:mod:`numalab.futex.workloads`).

* :func:`perf_bench_hash` -- ``perf bench futex hash`` (``tools/perf/bench/futex-hash.c``,
  spec §5): ``-t`` threads pinned to ``cpu[i % ncpus]``, each looping ``FUTEX_WAIT`` with a wrong
  value over its own ``-f`` futexes (a per-thread ``calloc`` array), ``-S`` shared futexes,
  ``-b`` private-hash slots (``prctl(PR_FUTEX_HASH, SET_SLOTS)``), ``-I`` immutable (6.16 code).
* :func:`futex_numa` -- the ``futex_numa`` selftest (spec §3): ``-c`` contender threads that
  call ``futex2_wait(lock, ~0U)`` (one hb-lock visit, never sleeps), ``-t`` lock threads,
  ``-n`` nanosleep ns, ``-N[k]`` FUTEX2_NUMA with node word k (plain ``-N`` = first touch),
  run under ``numactl -N cpu_node -m cpu_node``.
* :func:`together` -- run several programs at once (the seed experiment runs two futex_numa
  processes, one per node).
* :func:`workload_for` -- one point of a sweep: a program (:data:`PROGRAMS`) with a bucket
  count and a thread count, as :func:`numalab.futex.sweep` and the calibration build them.

A workload is plain data; :func:`route` turns it into per-thread bucket lists for one seed
(the mm pointers and ASLR addresses, hence the collisions, change on every run).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from ..errors import NumalabValueError, check_choice, check_int, check_number
from ..topology import Topology
from .hash import (
    FUT_OFF_MMSHARED, HASHES, HashLayout, HashMode, check_table_size, futex_bucket, hash_mode,
    key_hashes, resolve_node,
)

__all__ = ["FutexWorkload", "Routing", "REFCOUNTS", "perf_bench_hash", "futex_numa", "together",
           "route", "workload_for", "PERF_BENCH", "FUTEX_NUMA", "PROGRAMS"]

PERF_BENCH = "perf-bench-futex-hash"
FUTEX_NUMA = "futex_numa"
PROGRAMS = (PERF_BENCH, FUTEX_NUMA)
#: private-hash reference counting per op (spec §4.4): 6.17 per-CPU, 6.16 rcuref, 6.16 immutable
REFCOUNTS = ("percpu", "rcuref", "immutable")
ROLE_WORKER, ROLE_LOCK = 0, 1


@dataclass(frozen=True, eq=False)
class FutexWorkload:
    """Threads, the futexes they hit, and the kernel they run on.

    Thread arrays have one entry per thread; ``thread_futexes`` is ``(threads, fmax)`` of
    indices into the futex arrays, padded with -1. Futex arrays describe distinct futex words:
    ``fx_proc`` owning process, ``fx_private`` PRIVATE flag, ``fx_numa`` FUTEX2_NUMA,
    ``fx_node_word`` the node word (-1 = FUTEX_NO_NODE), ``fx_mpol``/``fx_mpol_node``
    FUTEX2_MPOL and the node the VMA policy yields, ``fx_offset`` byte offset of the word from
    its process's region base (for jhash2 keys). ``mode`` is the kernel's futex hash, a
    :class:`~numalab.futex.hash.HashMode`.
    """

    program: str
    topology: Topology
    mode: HashMode
    thread_cpu: np.ndarray
    thread_proc: np.ndarray
    thread_role: np.ndarray          # 0 = counted worker/contender, 1 = futex_numa lock thread
    thread_futexes: np.ndarray
    fx_proc: np.ndarray
    fx_private: np.ndarray
    fx_numa: np.ndarray
    fx_node_word: np.ndarray
    fx_mpol: np.ndarray
    fx_mpol_node: np.ndarray
    fx_offset: np.ndarray
    proc_region: tuple               # "heap" | "bss" per process (address layout for jhash2)
    slots: tuple = ()                # per process: -1 default rule, 0 global hash, else prctl slots
    hashsize: int | None = None      # what-if global table size (classic total / per node)
    refcount: str = "percpu"
    squash: bool = False
    hash: str = "uniform"
    base_small: bool = False
    classic_home: str = "interleave"
    runtime_s: float = 10.0
    sleep_ns: float = 0.0            # futex_numa -n: requested nanosleep per lock-thread sleep
    params: dict = field(default_factory=dict)

    @property
    def threads(self) -> int:
        return int(self.thread_cpu.size)

    @property
    def processes(self) -> int:
        return len(self.proc_region)

    def layout(self) -> HashLayout:
        """The tables this workload sees (sizes from the spec's formulas unless overridden)."""
        topo = self.topology
        size = self.hashsize if self.hashsize is not None else self.mode.table_size(topo, self.base_small)
        slots, home = [], []
        for p in range(self.processes):
            mine = self.thread_proc == p
            s = self.slots[p] if self.slots else -1
            if s < 0:
                s = self.mode.private_slots(int(mine.sum()) or 1, topo, self.base_small)
            slots.append(int(s))
            home.append(int(topo.cpu_node[self.thread_cpu[mine][0]]) if mine.any() else 0)
        return HashLayout(self.mode, topo.nodes, int(size), tuple(slots), self.squash,
                          self.classic_home, tuple(home))


def _common(topology, mode, refcount, squash, hash, base_small, classic_home, runtime_s, hashsize,
            runtime_name="runtime"):
    topology = Topology.coerce(topology)
    # the futex model describes one kind of node: the same CPUs and SMT on every node
    topology.uniform("cpus_per_node"), topology.uniform("smt")
    mode = hash_mode(mode)
    check_choice("refcount", refcount, REFCOUNTS)
    check_choice("hash", hash, HASHES)
    check_choice("classic_home", classic_home, ("interleave", "node0"))
    check_number(runtime_name, runtime_s, lo=0.0, lo_open=True)
    if hashsize is not None:
        hashsize = check_table_size("hashsize", hashsize)
    return topology, mode, bool(squash), bool(base_small), hashsize


def _check_threads(name, n, topology, oversubscribe):
    n = check_int(name, n, lo=1)
    if n > topology.ncpus and not oversubscribe:
        raise NumalabValueError(
            f"{name}={n} exceeds the {topology.ncpus} CPUs of topology {topology.name!r}; allowed: "
            f"1..{topology.ncpus}, or pass oversubscribe=True (--oversubscribe)"
        )
    return n


def perf_bench_hash(topology="2s-128", *, threads=None, futexes=1024, buckets=-1, shared=False,
                    immutable=False, runtime=10, mode="private", hashsize=None, refcount=None,
                    squash=False, hash="uniform", base_small=False, classic_home="interleave",
                    oversubscribe=False) -> FutexWorkload:
    """``perf bench futex hash -t threads -f futexes -b buckets [-S] [-I] -r runtime``.

    ``threads`` defaults to all CPUs; thread i runs on Linux CPU ``i % ncpus``, which is a node's
    core or SMT sibling as the topology's ``cpu_numbering`` says (on the usual x86 numbering,
    half the CPUs are one thread on every core of every node). ``buckets``: -1 = don't call
    the prctl (default private size rule), 0 = global hash, else a power of two >= 2 private
    slots; it needs ``mode="private"`` (6.16 as shipped has the private hash compiled out and
    the prctl fails). ``immutable`` (6.16 code only) sets
    ``refcount="immutable"``; otherwise ``refcount`` defaults to 6.17's ``"percpu"``.
    ``hashsize`` is a what-if size of the global table(s) (not a kernel knob).
    """
    topology, mode, squash, base_small, hashsize = _common(topology, mode, refcount or "percpu", squash, hash,
                                                           base_small, classic_home, runtime, hashsize)
    threads = topology.ncpus if threads is None else threads
    threads = _check_threads("threads", threads, topology, oversubscribe)
    futexes = check_int("futexes", futexes, lo=1, hi=1 << 20)
    from ..limits import check_futex_workload

    check_futex_workload(threads, futexes)
    runtime = check_int("runtime", runtime, lo=1)
    buckets = check_int("buckets", buckets, lo=-1)
    if buckets not in (-1, 0):
        check_table_size("buckets", buckets, lo=2)
    if buckets != -1 and not mode.private_tables:
        raise NumalabValueError(
            f"buckets={buckets} needs mode='private' or another mode with private tables "
            f"(PR_FUTEX_HASH_SET_SLOTS fails with EINVAL when the private hash is not built, as in "
            f"{mode.name!r}); allowed with mode={mode.name!r}: -1"
        )
    if immutable and refcount not in (None, "immutable"):
        raise NumalabValueError(f"immutable=True contradicts refcount={refcount!r}; allowed: 'immutable' or None")
    refcount = "immutable" if immutable else (refcount or "percpu")
    T, f = threads, futexes
    arrays = dict(_perf_bench_arrays(T, f, bool(shared), topology.ncpus))
    # perf pins thread i to Linux CPU i mod ncpus; which node's core or SMT sibling that is
    # depends on how the machine numbers its CPUs (Topology.cpu_numbering)
    arrays["thread_cpu"] = _frozen_ids(topology.linux_cpu_index[arrays["thread_cpu"]])
    return FutexWorkload(
        program=PERF_BENCH, topology=topology, mode=mode, **arrays, proc_region=("heap",), slots=(buckets,),
        hashsize=hashsize, refcount=refcount, squash=squash, hash=hash, base_small=base_small,
        classic_home=classic_home, runtime_s=float(runtime),
        params=dict(threads=T, futexes=f, buckets=buckets, shared=bool(shared),
                    immutable=bool(immutable), runtime=runtime),
    )


def _frozen_ids(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.int64)
    a.flags.writeable = False
    return a


@lru_cache(maxsize=8)
def _perf_bench_arrays(T: int, f: int, shared: bool, ncpus: int) -> dict:
    """The thread and futex arrays of ``perf bench futex hash -t T -f f [-S]`` (read-only, so
    the workloads of a sweep over bucket counts share them)."""
    n = T * f
    # thread t's calloc'd u32 array: consecutive 4-byte words, arrays ~one malloc chunk apart
    stride = ((4 * f + 16 + 15) // 16) * 16
    offset = (np.arange(T)[:, None] * stride + 4 * np.arange(f)[None, :]).reshape(-1)
    out = dict(
        thread_cpu=np.arange(T, dtype=np.int64) % ncpus,
        thread_proc=np.zeros(T, dtype=np.int64), thread_role=np.zeros(T, dtype=np.int64),
        thread_futexes=np.arange(n, dtype=np.int64).reshape(T, f),
        fx_proc=np.zeros(n, dtype=np.int64), fx_private=np.full(n, not shared),
        fx_numa=np.zeros(n, dtype=bool), fx_node_word=np.full(n, -1, dtype=np.int64),
        fx_mpol=np.zeros(n, dtype=bool), fx_mpol_node=np.full(n, -1, dtype=np.int64),
        fx_offset=offset.astype(np.int64),
    )
    for a in out.values():
        a.flags.writeable = False
    return out


def futex_numa(topology="2s-ivb-40", *, contenders=0, threads=2, nanos=50000, sleeps=10,
               numa=False, node=-1, cpu_node=0, mpol=False, mpol_node=-1, mode="numa",
               squash=False, hashsize=None, refcount="percpu", hash="uniform", base_small=False,
               classic_home="interleave", oversubscribe=False) -> FutexWorkload:
    """``numactl -N cpu_node -m cpu_node futex_numa -c contenders -t threads -n nanos -s sleeps [-N[node]]``.

    ``numa=True`` is ``-N``: the lock is a FUTEX2_NUMA futex whose node word is ``node``
    (-1 = plain ``-N``: first touch, i.e. ``cpu_node``). All futexes are FUTEX2_PRIVATE; the
    lock is one static ``{u32 val; u32 node;}`` per process. The process's threads run on the
    CPUs of ``cpu_node``. ``mpol``/``mpol_node`` add FUTEX2_MPOL with the VMA policy's node.
    """
    topology, mode, squash, base_small, hashsize = _common(topology, mode, refcount, squash, hash,
                                                           base_small, classic_home, sleeps, hashsize,
                                                           runtime_name="sleeps")
    contenders = check_int("contenders", contenders, lo=0)
    threads = check_int("threads", threads, lo=0)
    if contenders + threads == 0:
        raise NumalabValueError("contenders=0 and threads=0: nothing runs; allowed: contenders + threads >= 1")
    check_number("nanos", nanos, lo=0.0)
    sleeps = check_int("sleeps", sleeps, lo=1)
    cpu_node = check_int("cpu_node", cpu_node, lo=0, hi=topology.nodes - 1)
    node = check_int("node", node, lo=-1, hi=topology.nodes - 1)
    mpol_node = check_int("mpol_node", mpol_node, lo=-1, hi=topology.nodes - 1)
    T = contenders + threads
    if T > topology.cpus_per_node and not oversubscribe:
        raise NumalabValueError(
            f"contenders + threads = {T} exceeds the {topology.cpus_per_node} CPUs of node {cpu_node} "
            f"(numactl -N {cpu_node}); allowed: 1..{topology.cpus_per_node}, or pass "
            f"oversubscribe=True (--oversubscribe)"
        )
    cpus = cpu_node * topology.cpus_per_node + np.arange(T) % topology.cpus_per_node
    role = np.concatenate([np.full(threads, ROLE_LOCK), np.full(contenders, ROLE_WORKER)]).astype(np.int64)
    return FutexWorkload(
        program=FUTEX_NUMA, topology=topology, mode=mode, thread_cpu=cpus.astype(np.int64),
        thread_proc=np.zeros(T, dtype=np.int64), thread_role=role,
        thread_futexes=np.zeros((T, 1), dtype=np.int64),
        fx_proc=np.zeros(1, dtype=np.int64), fx_private=np.ones(1, dtype=bool),
        fx_numa=np.array([bool(numa)]), fx_node_word=np.array([node], dtype=np.int64),
        fx_mpol=np.array([bool(mpol)]), fx_mpol_node=np.array([mpol_node], dtype=np.int64),
        fx_offset=np.array([0x40], dtype=np.int64), proc_region=("bss",), slots=(-1,),
        hashsize=hashsize, refcount=refcount, squash=squash, hash=hash, base_small=base_small,
        classic_home=classic_home, runtime_s=float(sleeps), sleep_ns=float(nanos),
        params=dict(contenders=contenders, threads=threads, nanos=float(nanos), sleeps=sleeps,
                    numa=bool(numa), node=node, cpu_node=cpu_node),
    )


def together(*workloads: FutexWorkload) -> FutexWorkload:
    """Run several single-program workloads at once as separate processes (separate mm).

    They must share topology, mode and table options; process p of the result is workload p.
    """
    if not workloads:
        raise NumalabValueError("together() needs at least one workload")
    first = workloads[0]
    for w in workloads[1:]:
        for name in ("topology", "mode", "hashsize", "refcount", "squash", "hash", "base_small",
                     "classic_home", "program"):
            if getattr(w, name) != getattr(first, name):
                raise NumalabValueError(
                    f"together(): {name}={getattr(w, name)!r} differs from {getattr(first, name)!r}; "
                    f"allowed: workloads with the same {name}"
                )
    thread_cols = max(w.thread_futexes.shape[1] for w in workloads)
    tf, fx_off, procs, regions, slots = [], 0, [], [], []
    fx = {k: [] for k in ("fx_proc", "fx_private", "fx_numa", "fx_node_word", "fx_mpol", "fx_mpol_node", "fx_offset")}
    for p, w in enumerate(workloads):
        pad = np.full((w.threads, thread_cols), -1, dtype=np.int64)
        pad[:, : w.thread_futexes.shape[1]] = np.where(w.thread_futexes >= 0, w.thread_futexes + fx_off, -1)
        tf.append(pad)
        procs.append(w.thread_proc + len(regions))
        for k in fx:
            fx[k].append(getattr(w, k) + (len(regions) if k == "fx_proc" else 0))
        fx_off += w.fx_proc.size
        regions.extend(w.proc_region)
        slots.extend(w.slots or (-1,) * w.processes)
    return replace(
        first,
        thread_cpu=np.concatenate([w.thread_cpu for w in workloads]),
        thread_proc=np.concatenate(procs), thread_role=np.concatenate([w.thread_role for w in workloads]),
        thread_futexes=np.concatenate(tf), proc_region=tuple(regions), slots=tuple(slots),
        runtime_s=max(w.runtime_s for w in workloads), sleep_ns=max(w.sleep_ns for w in workloads),
        params=dict(first.params, processes=[w.params for w in workloads]),
        **{k: np.concatenate(v) for k, v in fx.items()},
    )


def workload_for(program, topology, *, mode, buckets=None, threads=None, **kw) -> FutexWorkload:
    """One workload of a sweep: ``buckets`` is the private-hash slots for a mode with private
    tables (``"private"``; None = default rule, 0 = global hash) and the what-if size of each
    global table otherwise (``"classic"``: the whole table, ``"numa"``: each node's; None =
    the kernel's size)."""
    check_choice("program", program, PROGRAMS)
    mode = hash_mode(mode)
    if program == PERF_BENCH:
        if mode.private_tables:
            b = -1 if buckets is None else buckets
            return perf_bench_hash(topology, threads=threads, buckets=b, mode=mode, **kw)
        return perf_bench_hash(topology, threads=threads, mode=mode, hashsize=buckets, **kw)
    if threads is not None:
        kw["contenders"] = threads
    if mode.private_tables and buckets not in (None, -1):
        return replace(futex_numa(topology, mode=mode, **kw), slots=(int(buckets),))
    return futex_numa(topology, mode=mode, hashsize=buckets, **kw)


@dataclass(frozen=True, eq=False)
class Routing:
    """Where each thread's operations go, for one seed (input of the solvers).

    ``thread_buckets`` ``(T, fmax)`` flat bucket ids padded with -1; ``thread_private``
    ``(T, fmax)`` True where the key went to a private table (costs a private-hash reference
    get/put); ``bucket_home`` node of every bucket id.
    """

    workload: FutexWorkload
    layout: HashLayout
    thread_node: np.ndarray
    thread_buckets: np.ndarray
    thread_private: np.ndarray
    n_buckets: int


def _addresses(w: FutexWorkload, rng: np.random.Generator):
    """Kernel key fields (ptr, page word, offset) of every futex for one run: a random
    ``mm_struct`` slab address per process and ASLR-randomised region bases."""
    P = w.processes
    mm = np.uint64(0xFFFF888000000000) + rng.integers(0, 1 << 24, size=P).astype(np.uint64) * np.uint64(1024)
    heap = np.uint64(0x7F0000000000) + rng.integers(0, 1 << 26, size=P).astype(np.uint64) * np.uint64(4096)
    bss = np.uint64(0x550000000000) + rng.integers(0, 1 << 26, size=P).astype(np.uint64) * np.uint64(4096)
    base = np.where(np.array([r == "heap" for r in w.proc_region]), heap, bss)
    uaddr = base[w.fx_proc] + w.fx_offset.astype(np.uint64)
    offset = (uaddr & np.uint64(4095)).astype(np.int64)
    page = uaddr - offset.astype(np.uint64)
    shared = ~w.fx_private
    # shared futexes on private anonymous memory: key (mm, VA), offset | FUT_OFF_MMSHARED
    offset = np.where(shared, offset | FUT_OFF_MMSHARED, offset)
    return mm[w.fx_proc], page, offset


def route(w: FutexWorkload, seed: int, *, rng: np.random.Generator | None = None) -> Routing:
    """Map every thread's futexes to buckets for one run (seed = the run's randomness)."""
    rng = np.random.default_rng(seed) if rng is None else rng
    layout = w.layout()
    nfx = w.fx_proc.size
    if w.hash == "jhash2":
        ptr, word, offset = _addresses(w, rng)
        h_g, h_p = key_hashes(nfx, rng, hash="jhash2", ptr=ptr, word=word, offset=offset)
    else:
        h_g, h_p = key_hashes(nfx, rng)
    thread_node = w.topology.cpu_node[w.thread_cpu]
    tf = w.thread_futexes
    valid = tf >= 0
    fxi = tf if valid.all() else np.where(valid, tf, 0)
    # first touch: the node of the first thread (in thread order) that uses a FUTEX2_NUMA futex
    toucher_node = _first_user_node(w, thread_node, fxi, valid) if w.fx_numa.any() else np.zeros(nfx, dtype=np.int64)
    node = resolve_node(numa=w.fx_numa, node_word=w.fx_node_word, mpol=w.fx_mpol,
                        mpol_node=w.fx_mpol_node, cpu_node=toucher_node)
    bucket = futex_bucket(layout, h_global=h_g, h_private=h_p, node=node, proc=w.fx_proc,
                          private=w.fx_private,
                          memory_node=lambda: _first_user_node(w, thread_node, fxi, valid))
    if valid.all():
        # perf bench: thread t's futexes are ids t*f ... t*f+f-1, so its buckets are a reshape
        tb = bucket.reshape(tf.shape) if _is_identity(tf, nfx) else bucket[tf]
        tp = tb >= layout.n_global
    else:
        tb = np.where(valid, bucket[fxi], -1)
        tp = valid & (tb >= layout.n_global)
    return Routing(w, layout, thread_node, tb, tp, layout.n_buckets)


def _first_user_node(w: FutexWorkload, thread_node, fxi, valid) -> np.ndarray:
    """Node of the first thread (in thread order) that uses each futex: where first-touch
    placement puts the futex word's memory, and which node a FUTEX2_NUMA first touch claims."""
    nfx = w.fx_proc.size
    tf = w.thread_futexes
    first_thread = np.full(nfx, w.threads, dtype=np.int64)
    rows = np.broadcast_to(np.arange(w.threads)[:, None], tf.shape)
    np.minimum.at(first_thread, fxi[valid], rows[valid])
    return thread_node[np.minimum(first_thread, w.threads - 1)]


def _is_identity(tf: np.ndarray, n: int) -> bool:
    """thread_futexes lists the futex ids 0..n-1 in order (one row per thread)."""
    return tf.size == n and np.array_equal(tf.reshape(-1), np.arange(n))

"""Hardware costs of one futex operation (:mod:`numalab.futex.costs`).

The system the solvers price (spec §7.3, equations and sources in ``docs/futex.md``): a closed network. Each
thread loops "think" (user work, syscall entry/exit, the futex path, key and hash, two
atomics: a delay ``Z``) then visits
the FCFS server of the bucket its futex hashes to (the hb spinlock: ``futex_q_lock`` ...
``futex_q_unlock`` of ``futex_wait_setup``'s wrong-value path), and in the 6.16 ``rcuref``
private-hash variant first the per-process reference-count line. A visit's service time is

    s = cpu * hold + n_lines * c

* ``hold`` (``critical_section_ns``) is the CPU work done with the lock held, and ``cpu``
  the thread's SMT slowdown (:func:`smt_slowdown`: 1 alone on its core, ``n / (1 + g (n-1))``
  with n busy hardware threads on the core); the think time ``Z`` is scaled the same way.
* ``n_lines`` is how many times the bucket's cache line must be pulled to this CPU:
  ``lines_per_op`` (1) when the bucket is idle on arrival -- the ``waiters`` increment takes
  the line, the lock, the value check, the decrement and the unlock then hit in L1 -- and
  ``lines_contended`` (5) when the arrival finds the lock held: every access of the op
  (waiters increment, the queued spinlock's fast-path cmpxchg, the acquisition at the head
  of the queue, waiters decrement, unlock) then finds the line in another CPU's cache. A
  saturated bucket therefore serves one op per ``hold + lines_contended * L``, and a lock
  handed between sockets pays the remote transfer on each of those pulls.
* ``c`` is the cost of getting the bucket's line (:func:`handoff_matrix`) from where it is:

  - ``line_self_ns`` -- this very thread held it last: an L2 hit;
  - DRAM -- nobody held it yet (a cold line): ``Topology.latency_ns[node(j), h]`` from its
    home node h. A line once touched stays cached (the workloads touch at most a few thousand
    bucket lines per thread); the first touch only matters before the warm-up ends;
  - cache-to-cache from another core: ``L[node(p), node(j)]`` (the Topology's same-node /
    cross-node line transfer latency, SLIT-interpolated, :func:`line_matrix`) plus, with
    ``home_lookup`` (default 1), a trip to the home node's directory when h is neither
    node(p) nor node(j): ``home_lookup * (latency_ns[node(j), h] - latency_ns[node(j),
    node(j)])``, the interconnect part of a remote memory access (home-snoop / directory
    coherence: AMD's probe filter, Intel's home snoop with directory; ``home_lookup=0``
    models a source-snoop machine whose inclusive LLC answers without the home).

Models the costs of ``futex_wait_setup()``'s wrong-value path (``futex_q_lock`` ...
``futex_q_unlock``) and of ``__futex_hash()``'s private-hash reference on the hardware: the
:class:`FutexCosts` constants, the line transfer matrices (:func:`line_matrix`,
:func:`handoff_matrix`) and the SMT slowdown of a thread's CPU work (:func:`core_load`,
:func:`smt_slowdown`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

import numpy as np

from ..errors import check_number, coerce_dataclass
from ..topology import Topology

__all__ = ["FutexCosts", "COST_NAMES", "coerce_costs", "line_matrix", "handoff_matrix", "core_load",
           "smt_slowdown"]

@dataclass(frozen=True)
class FutexCosts:
    """Hardware cost constants of one futex operation [ns]. Defaults are documented figures
    (``docs/futex.md`` lists each with its source), NOT fitted to published benchmark
    results; every one can be overridden. The line latencies come from the Topology.

    syscall_ns : 100
        Syscall entry + exit of a null syscall on an x86-64 server core without
        speculative-execution mitigations: lmbench ``lat_syscall null`` / a ``getpid`` loop
        measure about 0.1 us (roughly 300 ns with KPTI + retpoline on Meltdown-affected
        Intel parts, which this default does not assume).
    hash_ns : 15
        ``get_futex_key`` for a private futex (``access_ok`` only) plus ``jhash2`` of 4 words
        (about 40 ALU instructions, lookup3 "mix"/"final"), at ~3 GHz.
    futex_path_ns : 15
        The rest of the futex syscall's own path: ``do_futex`` dispatch, ``futex_wait`` /
        ``futex_wait_setup`` bookkeeping (``futex_q`` initialisation, flag and timeout checks,
        the -EAGAIN return): some 50 branchy kernel instructions at ~1 per cycle, ~3 GHz.
    atomic_ns : 7
        One uncontended locked read-modify-write on a line already in L1 (``lock xadd`` /
        ``lock cmpxchg``): ~18-20 cycles on Intel cores from Sandy Bridge to Skylake (Agner
        Fog's instruction tables), ~7 ns at 2.7 GHz. An op does two outside the lock (the
        ``waiters`` increment with its full barrier, ``spin_lock``'s cmpxchg); the ones inside
        are in ``critical_section_ns``. The transfer of the line itself is counted apart.
    user_ns : 2
        The benchmark's own loop per operation (an index increment and a branch).
    critical_section_ns : 25
        CPU work with the hb lock held on the fail-fast WAIT path: the user-word read
        (``futex_get_value_locked``, an L1 hit), the compare, ``atomic_dec`` of ``waiters``
        and the unlock store; a locked RMW costs ~20 cycles on Intel cores (Agner Fog's
        instruction tables). Line transfers are counted apart (``lines_*``).
    lines_per_op : 1
        Bucket-line pulls per visit of an idle bucket: ``atomic_inc(waiters)`` brings the
        line in exclusive state; the lock, the value check, the decrement and the unlock
        then hit in L1 (spec §1.5 order of operations).
    lines_contended : 5
        Bucket-line pulls per visit that finds the lock held: the waiters increment, the
        queued spinlock's fast-path ``cmpxchg`` (which needs the line exclusive even when it
        fails), the acquisition at the head of the queue after the holder's release, and
        the waiters decrement and unlock store after the queue's arrivals and the spinning
        head pulled the line away -- each finds the line in another CPU's cache (spec §1.6
        "2-4 per op" counts the four futex accesses; the fifth is qspinlock's).
    line_self_ns : 4
        Touching a line this thread held last and which is still in its L2 (a thread cycles
        through up to 1024 bucket lines, 64 KiB, more than L1D): ~12-14 cycles L2 latency
        (Intel 64 and IA-32 Optimization Reference Manual, Sandy Bridge to Skylake-SP).
    line_same_node_ns, line_remote_ns : None
        Cache-to-cache transfer within a node / across the interconnect; ``None`` takes the
        Topology's ``line_same_node_ns`` / ``line_remote_ns`` (Intel MLC c2c latencies and
        Molka et al., PACT 2009, give ~40-60 ns on-socket and ~100-170 ns cross-socket).
    home_lookup : 1
        Whether (1) or not (0) a cache-to-cache handoff of a bucket line consults the line's
        home node when that node is neither the holder's nor the requester's (home-snoop /
        directory protocol; see the module docstring); fractions in between weight the
        extra trip. The trip itself costs the Topology's remote - local DRAM latency.
    smt_gain : 0.25
        Extra throughput a core gets from each additional busy hardware thread: two
        hyperthreads together run 1.25x one (Intel's "up to 30%" for Hyper-Threading, Marr
        et al., Intel Technology Journal 6(1), 2002), so each runs 1.6x slower than alone.
        CPU work (think time, hold time) of a thread whose core also runs another busy
        thread is scaled by :func:`smt_slowdown`; line transfers are not.
    rcuref_lines : 2
        ``rcuref_get`` + ``rcuref_put`` of the 6.16 private hash: two RMWs on one per-process
        line per op (spec §4.4), served as one visit of ``rcuref_lines`` transfers.
    percpu_ref_ns : 2
        6.17 per-CPU reference: ``this_cpu_inc`` + ``this_cpu_dec``, no shared line.
    gup_ns : 60
        Shared (non-PRIVATE) futexes: ``get_user_pages_fast`` page walk plus the folio
        reference get/put on an uncontended line (one per-thread page in perf bench -S).
    timer_slack_ns : 50000
        Default ``timer_slack_ns`` of a normal task (prctl PR_SET_TIMERSLACK, 50 us): a
        non-zero ``nanosleep`` lasts at least its request plus the slack.
    """

    syscall_ns: float = 100.0
    hash_ns: float = 15.0
    futex_path_ns: float = 15.0
    atomic_ns: float = 7.0
    user_ns: float = 2.0
    critical_section_ns: float = 25.0
    lines_per_op: float = 1.0
    lines_contended: float = 5.0
    line_self_ns: float = 4.0
    line_same_node_ns: float | None = None
    line_remote_ns: float | None = None
    home_lookup: float = 1.0
    smt_gain: float = 0.25
    rcuref_lines: float = 2.0
    percpu_ref_ns: float = 2.0
    gup_ns: float = 60.0
    timer_slack_ns: float = 50000.0

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if v is not None:
                check_number(f.name, v, lo=0.0, hi=1.0 if f.name in ("home_lookup", "smt_gain") else None)

    def resolve(self, topology: Topology) -> "FutexCosts":
        """Fill the line latencies from ``topology`` where they are None."""
        return replace(
            self,
            line_same_node_ns=topology.line_same_node_ns if self.line_same_node_ns is None else self.line_same_node_ns,
            line_remote_ns=topology.line_remote_ns if self.line_remote_ns is None else self.line_remote_ns,
        )

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


COST_NAMES = tuple(f.name for f in fields(FutexCosts))


def coerce_costs(costs) -> FutexCosts:
    """None -> defaults, a FutexCosts -> itself, a dict -> FutexCosts(**dict) (unknown keys refused)."""
    return coerce_dataclass(FutexCosts, costs, "costs")


def line_matrix(topology: Topology, costs: FutexCosts) -> np.ndarray:
    """Line transfer latency from a holder on node i to a CPU on node j, ``(nodes, nodes)`` ns:
    same-node on the diagonal, ``line_remote_ns`` at the largest SLIT distance, linear in
    between (Genoa NPS4's 11/12 quadrant distances cost a little more than local)."""
    c = costs.resolve(topology)
    d = topology.distance_matrix.astype(float)
    dmax = d.max()
    frac = np.zeros_like(d) if dmax <= 10 else (d - 10.0) / (dmax - 10.0)
    return c.line_same_node_ns + frac * (c.line_remote_ns - c.line_same_node_ns)


def handoff_matrix(topology: Topology, costs: FutexCosts) -> tuple[np.ndarray, np.ndarray]:
    """Bucket-line fetch costs [ns] of the module docstring's rule.

    Returns ``(C, cold)``: ``C[i, j, h]`` the cache-to-cache handoff from a holder on node i to
    a CPU on node j of a line homed on node h, ``(nodes, nodes, nodes)``; ``cold[j, h]`` the
    DRAM fetch of a never-touched line, ``Topology.latency_ns`` ``(nodes, nodes)``."""
    c = costs.resolve(topology)
    L = line_matrix(topology, c)
    lat = topology.latency_ns
    n = topology.nodes
    i, j, h = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")
    # the home's directory is on the way unless it sits on the holder's or the requester's node
    third = (h != i) & (h != j)
    trip = lat[j, h] - lat[j, j]
    return L[i, j] + c.home_lookup * third * trip, lat.copy()


def core_load(topology: Topology, thread_cpu, busy) -> np.ndarray:
    """Busy threads on each thread's physical core (itself included), ``(T,)``.

    CPUs are numbered node by node (``Topology.cpu_node``); within a node the first
    ``cores_per_node`` CPUs are distinct cores and the next ones their SMT siblings (the
    order Linux enumerates Intel and AMD server CPUs in), so CPU k of a node sits on core
    ``k % cores_per_node``. ``busy``: threads that run all the time (a futex_numa lock thread
    that sleeps in nanosleep does not load its core)."""
    cpu = np.asarray(thread_cpu, dtype=np.int64)
    cpn, cores = topology.cpus_per_node, topology.cores_per_node
    core = (cpu // cpn) * cores + (cpu % cpn) % cores
    busy = np.asarray(busy, dtype=bool)
    n = np.bincount(core[busy], minlength=topology.nodes * cores)[core]
    return n + ~busy  # a thread always counts itself


def smt_slowdown(load, smt: int, gain: float) -> np.ndarray:
    """How much slower a thread's CPU work runs with ``load`` busy threads on its core of
    ``smt`` hardware threads: ``n / (1 + gain * (min(n, smt) - 1))`` (1 alone; 1.6 for two
    hyperthreads at gain 0.25; beyond ``smt`` threads the core is time-shared)."""
    n = np.maximum(np.asarray(load, dtype=float), 1.0)
    return n / (1.0 + gain * (np.minimum(n, smt) - 1.0))

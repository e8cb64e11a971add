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

from ..errors import NumalabValueError, check_number, coerce_dataclass
from ..provenance import constant, provenance_of
from ..topology import KERNEL_COSTS, Topology

__all__ = ["FutexCosts", "COST_NAMES", "UNMEASURED", "MEASURED_FROM", "from_measurement", "measured_note",
           "RELATIVE_BANDS", "coerce_costs", "provenance_table", "line_matrix", "handoff_matrix",
           "contended_matrix", "core_load", "smt_slowdown", "active_cores", "package_cores", "core_clock_ghz",
           "clock_factor"]

@dataclass(frozen=True)
class FutexCosts:
    """Hardware cost constants of one futex operation [ns, or counts and weights as named].

    Every default's source is its field's provenance record (:func:`numalab.provenance.
    provenance_of` ``(FutexCosts)``: kind, source, plausible band and its source; the table in
    ``docs/futex.md`` is :func:`provenance_table`). None is fitted to a published benchmark;
    :func:`~numalab.futex.calibrate` fits chosen ones to rows a user gives. The line latencies
    come from the Topology (``None``), and so do ``syscall_ns``, ``futex_path_ns`` and ``gup_ns``
    where ``numalab probe`` measured the machine's kernel (``None``: the Topology's measurement,
    else the stated value, :data:`UNMEASURED`; :meth:`resolve`). Every one can be overridden.
    """

    syscall_ns: float | None = constant(
        None, kind="measurement", unmeasured=100.0,
        source="null syscall round trip on an x86-64 server core without speculative-execution "
               "mitigations: lmbench lat_syscall null / a getpid loop, ~0.1 us",
        band=(70.0, 400.0),
        band_source="an unmitigated 3 GHz core (~70-100 ns) to a Meltdown/MDS-affected Intel part "
                    "running KPTI CR3 switches, retpolines or IBRS and the VERW buffer clear on "
                    "every entry and exit (several hundred ns)")
    hash_ns: float = constant(
        15.0, kind="derived",
        source="get_futex_key for a private key (access_ok only) plus jhash2 of 4 words: ~40 ALU "
               "instructions of lookup3's mix and final at ~3 GHz",
        band=(8.0, 30.0), band_source="1-2 instructions per cycle, 2-4 GHz")
    futex_path_ns: float | None = constant(
        None, kind="derived", unmeasured=15.0,
        source="do_futex dispatch, futex_wait / futex_wait_setup bookkeeping and the -EAGAIN "
               "return: ~50 branchy kernel instructions at ~1 per cycle, ~3 GHz",
        band=(8.0, 40.0), band_source="0.5-2 instructions per cycle, 2-4 GHz")
    atomic_ns: float = constant(
        7.0, kind="measurement",
        source="one uncontended locked RMW on a line in L1 (lock xadd / lock cmpxchg): ~18-20 "
               "cycles on Intel cores Sandy Bridge to Skylake (Agner Fog's instruction tables); "
               "two per op outside the lock (the waiters increment, spin_lock's cmpxchg)",
        band=(5.0, 12.0), band_source="18-25 cycles at 2-3.5 GHz (Agner Fog's tables)")
    user_ns: float = constant(
        2.0, kind="derived", source="the benchmark's own loop per operation: an index increment and a branch")
    critical_section_ns: float = constant(
        25.0, kind="derived",
        source="CPU work with the hb lock held on the wrong-value path: the user-word read "
               "(futex_get_value_locked, an L1 hit), the compare, atomic_dec of waiters (~20 "
               "cycles, Agner Fog) and the unlock store; line transfers are counted apart",
        band=(15.0, 50.0), band_source="the same instructions at 2-4 GHz, with or without a second "
                                       "locked RMW's pipeline drain")
    lines_per_op: float = constant(
        1.0, kind="kernel",
        source="futex_q_lock's atomic_inc(waiters) pulls an idle bucket's line exclusive; spin_lock, "
               "the value check, atomic_dec and spin_unlock then hit in L1 (futex_wait_setup's "
               "order, spec section 1.5)")
    lines_contended: float = constant(
        5.0, kind="derived",
        source="a visit that finds the lock held pulls the line for the waiters increment, the "
               "queued spinlock's fast-path cmpxchg, the acquisition at the queue head after the "
               "release, the waiters decrement and the unlock, each after another CPU took it "
               "(spec section 1.6 counts the futex's four, the fifth is qspinlock's)",
        band=(3.0, 8.0),
        band_source="3 (the head's read and upgrade after the release, one re-fetch for the "
                    "decrement) to 8 (add the xchg_tail, the MCS link and the baton pass)")
    line_self_ns: float = constant(
        4.0, kind="measurement",
        source="touching a line this thread held last, still in its L2 (1024 bucket lines, 64 KiB, "
               "exceed L1D): 12-14 cycles L2 latency (Intel Optimization Reference Manual, Sandy "
               "Bridge to Skylake-SP)",
        band=(3.0, 8.0), band_source="12-16 cycles at 2-4 GHz")
    line_same_node_ns: float | None = constant(
        None, kind="derived",
        source="cache-to-cache transfer within a node: the Topology's line_same_node_ns (Intel MLC "
               "local HITM latency and core-to-core measurements, ~40-70 ns on Xeon sockets)",
        band=(0.8, 1.6),
        band_source="x the Topology's figure: core-to-core data for one machine spread ~+-25 % with "
                    "the uncore clock and the two cores' distance on the ring or mesh, more on "
                    "low-clocked parts")
    line_remote_ns: float | None = constant(
        None, kind="derived",
        source="cache-to-cache transfer between nodes: the Topology's line_remote_ns (Intel MLC "
               "remote HITM latency, Molka et al. PACT 2009: ~100-200 ns cross-socket)",
        band=(0.8, 1.8),
        band_source="x the Topology's figure: MLC's remote HITM latency homed in the writer's "
                    "socket vs in the reader's socket differ by ~1.5x, and low-clocked parts are "
                    "slower")
    home_lookup: float = constant(
        1.0, kind="derived",
        source="a line handed between two nodes that are neither its home goes through the home "
               "node's directory (Intel home snoop with directory, AMD's probe filter); a node "
               "that owns a line serves its own cores without the home (inclusive LLC / snoop "
               "filter), so same-node handoffs never detour",
        band=(0.0, 1.0), band_source="0: source-snoop broadcast (no detour) to 1: every such handoff via the home")
    conflict_trip: float = constant(
        1.0, kind="derived",
        source="a cross-node pull of a held lock's line meets the holder's own requests for it "
               "in flight (it takes the line back for the waiters decrement and the unlock): the "
               "coherence protocol resolves such conflicts through the home with one more "
               "interconnect round trip (Intel QPI/UPI: RspCnflt, AckCnflt, then the forward; within "
               "a node the LLC slice queues the requests in order without one), so the pull costs "
               "L[i, j] + conflict_trip * (L[i, j] - L[j, j]); an idle lock's line has no conflict",
        band=(0.0, 1.0), band_source="0: no conflict handshake, 1: one full extra interconnect round trip")
    smt_gain: float = constant(
        0.25, kind="measurement",
        source="extra throughput of a core from its second busy hardware thread: Intel's 'up to "
               "30 %' for Hyper-Threading (Marr et al., Intel Technology Journal 6(1), 2002); CPU "
               "work of a thread whose core runs another busy thread is 1 / 1.25 x 2 = 1.6x slower",
        band=(0.1, 0.35), band_source="10-35 % SMT gain reported for server integer workloads")
    queue_node_sorting: float = constant(
        1.0, kind="derived",
        source="an hb lock whose every visitor only ever visits it (one futex per thread, as "
               "futex_numa's contenders) keeps its qspinlock FIFO order from round to round; a "
               "thread whose successor runs on another node re-queues later (its waiters "
               "increment and xchg_tail pull the line from that node), so it falls behind until "
               "it follows a thread of its own node: the round sorts itself by node and a handoff "
               "crosses nodes only at the runs' boundaries, (nodes with visitors) / (visitors) "
               "of them",
        band=(0.0, 1.0), band_source="0: the FIFO order stays random (think-time jitter reshuffles "
                                     "it) to 1: fully sorted rounds")
    rcuref_lines: float = constant(
        2.0, kind="kernel",
        source="rcuref_get + rcuref_put of the 6.16 private hash: two atomic_add_negative RMWs on "
               "fph->users, one per-process line, per op (spec section 4.4)")
    atomic_node_batching: float = constant(
        1.0, kind="derived",
        source="a contended atomic line (the rcuref counter) is not a queued lock: the coherence "
               "fabric hands it to the next request it holds, and a node's own LLC / snoop filter "
               "serves that node's waiting cores before the line crosses the interconnect, so an "
               "RMW that finds a request of its own node ahead of it gets the line from its node",
        band=(0.0, 1.0), band_source="0: the line goes in arrival order, like a FIFO lock, to 1: a "
                                     "node's queued requests always first")
    smt_shared_l1: float = constant(
        1.0, kind="derived",
        source="SMT siblings share their core's L1D and L2: a line another thread on my core held "
               "last is an L1/L2 hit for me (line_self_ns), not a transfer; and a locked RMW issued "
               "while a sibling's RMW on the same atomic line (the rcuref counter) is pending "
               "completes from the L1 right after it, when the line arrives for it, ahead of the "
               "other cores' requests. A switch, not a weight: 1 on, 0 off (every hardware thread "
               "pulls the line as if it had a core of its own)")
    atomic_forward: float = constant(
        1.0, kind="assumed",
        source="share of a line transfer an RMW pays when it finds the atomic line busy; 1 counts "
               "the full core-to-core latency. Its request is queued at the line's caching agent "
               "already, so the line may be forwarded as the current RMW retires (a snoop and a "
               "data leg instead of request, snoop and data), which would make it ~2/3; not "
               "assumed by default: no measurement of the overlap on these parts",
        band=(0.5, 1.0), band_source="the data leg alone to the full round trip (no overlap)")
    percpu_ref_ns: float = constant(
        2.0, kind="derived",
        source="6.17 per-CPU reference: this_cpu_inc + this_cpu_dec, two unlocked RMWs on a "
               "per-CPU line (x86: one instruction each), no shared line",
        band=(1.0, 10.0),
        band_source="x86's single-instruction this_cpu ops to the generic irq-disabling ones "
                    "(PowerPC, before the preempt-based fix)")
    gup_ns: float | None = constant(
        None, kind="derived", unmeasured=60.0,
        source="shared (non-PRIVATE) futexes: get_user_pages_fast page walk plus the folio "
               "reference get/put on an uncontended line (one per-thread page in perf bench -S)",
        band=(30.0, 150.0), band_source="a 4-level walk in cache plus two locked RMWs, 2-4 GHz")
    clock_ref_ghz: float = constant(
        3.0, kind="derived",
        source="the core clock the CPU-side constants are stated at (syscall_ns, hash_ns, futex_path_ns, "
               "atomic_ns, user_ns, critical_section_ns, line_self_ns, percpu_ref_ns, gup_ns): their "
               "sources count cycles or instructions at ~3 GHz (18-20 cycles = 7 ns, 12-14 cycles = 4 ns, "
               "~50 instructions at ~1 per cycle = 15 ns). On a Topology that gives its clock "
               "(all_core_ghz, turbo_ghz) they are scaled by clock_ref_ghz / the clock of the thread's "
               "package; line transfers between cores are not (the uncore's clock)",
        band=(2.6, 3.5), band_source="18-20 cycles in 7 ns (2.6-2.9 GHz) to 12-14 cycles in 4 ns (3.0-3.5 GHz)")
    timer_slack_ns: float = constant(
        50000.0, kind="kernel",
        source="default timer_slack_ns of a normal task (init_task, 50 us; prctl "
               "PR_SET_TIMERSLACK): hrtimer_nanosleep sets the expiry range [request, request + "
               "slack] for every request, so even nanosleep(0) sleeps until the slack runs out")

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if v is not None:
                check_number(f.name, v, lo=0.0, hi=1.0 if f.name in _UNIT_WEIGHTS else None,
                             lo_open=f.name == "clock_ref_ghz")
        if self.smt_shared_l1 not in (0.0, 1.0):
            raise NumalabValueError(f"smt_shared_l1={self.smt_shared_l1!r}; allowed: 0 (off) or 1 (on), "
                                    "a switch of the queueing discipline")

    def resolve(self, topology: Topology) -> "FutexCosts":
        """Every constant left None, from ``topology``: the line latencies; and the kernel's
        costs where ``numalab probe`` measured them on the machine, else the stated defaults
        (:data:`UNMEASURED`). A constant given (or fitted) is kept.

        * ``syscall_ns``: the machine's null system call (``Topology.syscall_ns``);
        * ``futex_path_ns``: the machine's in-kernel futex operation (``futex_private_ns``) less
          the model's other in-kernel constants of a one-thread operation on a hot bucket
          (``hash_ns + 2 atomic_ns + critical_section_ns + line_self_ns``), at least 0. What a
          kernel's mitigations add (retpolines, return thunks) is paid per call and return, and
          the calls of the wrong-value path are outside the hb lock (the syscall dispatch,
          ``get_futex_key``, the hash), so the difference goes to the path outside the lock;
        * ``gup_ns``: ``futex_shared_ns - futex_private_ns``, at least 0.

        The probe measures with one busy core, so a measured figure is restated at
        ``clock_ref_ghz`` from one busy core's clock (:func:`clock_factor`; unchanged on a
        Topology without a clock): the model's clock scaling then gives it back at one busy
        core and slows it as more cores of the package run."""
        c = replace(
            self,
            line_same_node_ns=topology.line_same_node_ns if self.line_same_node_ns is None else self.line_same_node_ns,
            line_remote_ns=topology.line_remote_ns if self.line_remote_ns is None else self.line_remote_ns,
        )
        # clock_factor at one busy core: core_clock_ghz's turbo_ghz (all_core_ghz without one)
        ghz = topology.turbo_ghz or topology.all_core_ghz
        one_core = 1.0 if ghz is None else c.clock_ref_ghz / ghz

        taken = from_measurement(topology, c)
        fig = {f: getattr(topology, f) / one_core for f in KERNEL_COSTS if getattr(topology, f) is not None}
        inside = c.hash_ns + 2.0 * c.atomic_ns + c.critical_section_ns + c.line_self_ns
        derive = {"syscall_ns": lambda: fig["syscall_ns"],
                  "futex_path_ns": lambda: max(0.0, fig["futex_private_ns"] - inside),
                  "gup_ns": lambda: max(0.0, fig["futex_shared_ns"] - fig["futex_private_ns"])}
        return replace(c, **{n: derive[n]() if n in taken else UNMEASURED[n]
                              for n in UNMEASURED if getattr(c, n) is None})

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


COST_NAMES = tuple(f.name for f in fields(FutexCosts))
#: the kernel-path constants a machine's measurement (``numalab probe``: ``Topology.syscall_ns``,
#: ``futex_private_ns``, ``futex_shared_ns``) sets when they are not given, and their stated
#: values where it has none (:meth:`FutexCosts.resolve`)
UNMEASURED = {f.name: f.metadata["unmeasured"] for f in fields(FutexCosts) if "unmeasured" in f.metadata}
#: the Topology's measured figures each of them is derived from (all of them needed)
MEASURED_FROM = {"syscall_ns": ("syscall_ns",), "futex_path_ns": ("futex_private_ns",),
                 "gup_ns": ("futex_private_ns", "futex_shared_ns")}


def from_measurement(topology: Topology, costs=None) -> tuple:
    """The kernel-path constants :meth:`FutexCosts.resolve` takes from ``topology``'s
    measurement: not given in ``costs``, and every figure they need (:data:`MEASURED_FROM`)
    measured."""
    costs = coerce_costs(costs)
    return tuple(n for n in UNMEASURED if getattr(costs, n) is None
                 and all(getattr(topology, f) is not None for f in MEASURED_FROM[n]))


def measured_note(topology: Topology, costs=None) -> str:
    """One line saying which constants a run takes from the machine's measurement, with their
    values and the stated ones ('' when none): what ``numalab futex`` prints on stderr."""
    names = from_measurement(topology, costs)
    if not names:
        return ""
    c = coerce_costs(costs).resolve(topology)
    vals = ", ".join(f"{n} {getattr(c, n):.0f} ns (stated {UNMEASURED[n]:g})" for n in names)
    return f"from the kernel costs measured on topology {topology.name!r}: {vals}; --cost NAME=VALUE sets one instead"


#: the constants that are weights in [0, 1]
_UNIT_WEIGHTS = ("home_lookup", "conflict_trip", "smt_gain", "queue_node_sorting", "atomic_node_batching",
                 "smt_shared_l1", "atomic_forward")
#: the constants whose band is a factor of the Topology's figure (their default is None)
RELATIVE_BANDS = ("line_same_node_ns", "line_remote_ns")


def provenance_table() -> str:
    """``docs/futex.md``'s table of the defaults, generated from the field metadata: name,
    default, kind, plausible band and the source."""
    rows = ["| constant | default | kind | band | source |", "|---|---|---|---|---|"]
    for f in fields(FutexCosts):
        p = provenance_of(FutexCosts)[f.name]
        default = (f"{UNMEASURED[f.name]:g}, or measured" if f.name in UNMEASURED else
                   "Topology" if f.default is None else f"{f.default:g}")
        if p.band is None:
            band = ""
        elif f.name in RELATIVE_BANDS:
            band = f"x{p.band[0]:g} ... x{p.band[1]:g}"
        else:
            band = f"{p.band[0]:g} ... {p.band[1]:g}"
        rows.append(f"| `{f.name}` | {default} | {p.kind} | {band} | {p.source} |")
    return "\n".join(rows)


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
    # the home's directory is on the way of a cross-node handoff unless it sits on the
    # holder's or the requester's node; a node that owns the line serves its own cores
    third = (h != i) & (h != j) & (i != j)
    trip = lat[j, h] - lat[j, j]
    return L[i, j] + c.home_lookup * third * trip, lat.copy()


def contended_matrix(topology: Topology, costs: FutexCosts) -> np.ndarray:
    """The handoff costs [ns] of a pull that meets other requests for the line in flight (the
    lock is held),
    ``(nodes, nodes, nodes)`` like :func:`handoff_matrix`'s ``C``: a cross-node pull (i != j)
    adds ``conflict_trip * (L[i, j] - L[j, j])``, the conflict resolution's round trip."""
    c = costs.resolve(topology)
    C, _ = handoff_matrix(topology, c)
    L = line_matrix(topology, c)
    extra = np.maximum(L - np.diag(L)[None, :], 0.0)       # (holder i, requester j)
    return C + c.conflict_trip * extra[:, :, None]


def core_load(topology: Topology, thread_cpu, busy) -> np.ndarray:
    """Busy threads on each thread's physical core (itself included), ``(T,)``.

    The model numbers CPUs node by node (``Topology.cpu_node``); within a node the first
    ``cores_per_node`` CPUs are distinct cores and the next ones their SMT siblings, so CPU k
    of a node sits on core ``k % cores_per_node`` (Linux's own ids map onto these through
    ``Topology.linux_cpu_index``). ``busy``: threads that run all the time (a futex_numa lock thread
    that sleeps in nanosleep does not load its core)."""
    core = core_of(topology, thread_cpu)
    busy = np.asarray(busy, dtype=bool)
    n = np.bincount(core[busy], minlength=topology.nodes * topology.cores_per_node)[core]
    return n + ~busy  # a thread always counts itself


def core_of(topology: Topology, thread_cpu) -> np.ndarray:
    """The physical core of each model CPU, numbered node by node: CPU k of a node sits on core
    ``k % cores_per_node`` (each node's cores, then their siblings; :func:`core_load`)."""
    cpu = np.asarray(thread_cpu, dtype=np.int64)
    cpn, cores = topology.cpus_per_node, topology.cores_per_node
    return (cpu // cpn) * cores + (cpu % cpn) % cores


def smt_slowdown(load, smt: int, gain: float) -> np.ndarray:
    """How much slower a thread's CPU work runs with ``load`` busy threads on its core of
    ``smt`` hardware threads: ``n / (1 + gain * (min(n, smt) - 1))`` (1 alone; 1.6 for two
    hyperthreads at gain 0.25; beyond ``smt`` threads the core is time-shared)."""
    n = np.maximum(np.asarray(load, dtype=float), 1.0)
    return n / (1.0 + gain * (np.minimum(n, smt) - 1.0))


def active_cores(topology: Topology, thread_cpu, busy) -> np.ndarray:
    """Busy cores of every node's package, ``(nodes,)`` int64: the distinct cores
    (:func:`core_load`'s numbering) that run at least one busy thread, on all nodes of the
    node's package (:attr:`~numalab.topology.Topology.node_package`; turbo is the package's)."""
    core = np.unique(core_of(topology, thread_cpu)[np.asarray(busy, dtype=bool)])
    per_node = np.bincount(core // topology.cores_per_node, minlength=topology.nodes)
    package = topology.node_package
    return np.bincount(package, weights=per_node, minlength=package.max() + 1).astype(np.int64)[package]


def package_cores(topology: Topology) -> int:
    """Cores of one package: the cores of a node times the nodes of a package."""
    return topology.cores_per_node * (topology.cpu_nodes.size // (topology.packages or topology.cpu_nodes.size))


def core_clock_ghz(topology: Topology, active) -> np.ndarray | None:
    """The core clock [GHz] of a package with ``active`` busy cores (array): ``turbo_ghz`` with
    one, ``all_core_ghz`` with all of them (:func:`package_cores`), linear in between (Intel's
    turbo bins fall about one step per one or two more active cores); ``all_core_ghz`` alone
    when no turbo is given; None when the Topology gives no clock."""
    if topology.all_core_ghz is None:
        return None
    a = np.asarray(active, dtype=float)
    if topology.turbo_ghz is None:
        return np.full(a.shape, float(topology.all_core_ghz))
    c = package_cores(topology)
    frac = np.zeros(a.shape) if c <= 1 else (np.clip(a, 1.0, c) - 1.0) / (c - 1.0)
    return topology.turbo_ghz - (topology.turbo_ghz - topology.all_core_ghz) * frac


def clock_factor(topology: Topology, costs: FutexCosts, active) -> np.ndarray:
    """How much longer the CPU-side costs take on a package with ``active`` busy cores than as
    stated: ``clock_ref_ghz / core_clock_ghz`` (1 where the Topology gives no clock)."""
    ghz = core_clock_ghz(topology, active)
    if ghz is None:
        return np.ones(np.shape(active))
    return costs.clock_ref_ghz / ghz

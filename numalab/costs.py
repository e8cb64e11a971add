"""How memory placement becomes thread progress, and kernel work becomes system time.

Every constant is a field of :class:`Costs` with its source; override any of them with
``simulate(..., costs={"hint_fault_us": 3.0})`` or ``Costs(**fields)``.

Progress model (``progress_rates``): a thread writes its byte range (``bzero``, write-only,
sequential). Its speed is limited by (1) what one hardware thread can stream
(``Topology.thread_bw_GBps``), shared with an SMT sibling when both run, and divided by the
latency ratio for the remote share of its bytes (a core's outstanding misses are fixed, so
bandwidth ∝ 1/latency); (2) each node's memory controllers: the write (store + RFO) bandwidth of
a node is ``Topology.write_efficiency × node_bw_GBps``, both properties of the machine (STREAM
read figures overstate ``bzero``);
(3) the interconnect for the remote shares: a remote write moves its line once in each
direction (its read-for-ownership and its write-back), over every link direction of its route
there and back (``Topology.links``; by default a link per pair of nodes). A resource loaded
above its capacity slows every thread using it in proportion (processor-sharing).

A *shared init sweep* (numa01 / numa01_THREAD_ALLOC: every worker of a process zero-writes the
whole buffer at the same moment, spec benchmarks §1.2) is cache-coherence traffic, not DRAM
traffic (:func:`progress_rates`, ``shared_init``): no worker can write past the first-touch
frontier without taking the page fault itself, so the process's init sweeps advance together
and each line is written by one worker after another while it is still cached. A line then
reaches the memory controller once (its last write-back), and a writer takes it from the
previous writer's cache, across the socket link when that writer sits on another node. The
engine option ``init_coherence=False`` charges every sweep its full DRAM traffic instead (the
model before docs/fidelity.md "The shared init is coherence traffic").

Kernel time: per PTE/PMD made PROT_NONE (``change_prot_numa``), per hinting fault
(``do_numa_page``), per migrated byte (``migrate_misplaced_folio``: copy + unmap/remap), per
zeroed byte at first touch (``clear_huge_page``), per task migration (``migrate_task_to`` /
``migrate_swap``: runqueue work and cache refill), per ``task_numa_work`` run (TLB shootdown).
Kernel time is charged to the thread that does it, which then makes no user progress.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from functools import lru_cache

import numpy as np

from .errors import NumalabValueError, check_number, coerce_dataclass
from .provenance import constant

__all__ = ["Costs", "progress_rates"]


@dataclass(frozen=True)
class Costs:
    """Cost constants (units in the names).

    link_write_efficiency : 1.0
        Fraction of a link direction's ``link_bw_GBps`` that write traffic can use. A remote write
        moves its line once each way (the RFO's data from the memory's node, the write-back to
        it), so each direction carries the remote writes between its two nodes in both senses;
        the presets' ``link_bw_GBps`` is already a usable (sustained) figure.
    smt_share : 0.6
        Per-thread streaming rate when the SMT sibling also streams (fill buffers are shared
        per core; Intel optimisation manual: ~1.2× core throughput with 2 threads).
    pte_update_ns : 25
        ``change_pte_range`` per base page made PROT_NONE (ptep_modify_prot_start/commit).
    pmd_update_ns : 400
        ``change_huge_pmd`` per THP (one PMD, plus the page-table lock round trip).
    scan_run_us : 30
        Fixed cost of one ``task_numa_work`` run that changed something: mmap_lock, VMA walk
        and the ``flush_tlb_range`` IPI to the mm's CPUs (tens of µs with 64 CPUs).
    scan_virt_ns_per_mb : 50
        Walking page tables of unpopulated or already-protected address space.
    hint_fault_us : 2.5
        Trap, ``do_numa_page``/``do_huge_pmd_numa_page``, ``task_numa_fault`` (no migration).
    migrate_GBps : 6.0
        Kernel ``copy_page``/``folio_copy`` rate for a migration (single core, remote write).
    migrate_folio_us : 15
        Per-folio migration overhead: isolation, unmap with TLB flush, remap.
    zero_GBps : 8.0
        ``clear_page``/``clear_huge_page`` rate for first-touch zeroing (single core, erms).
    task_migration_us : 60
        Moving a task to another node: runqueue locks and the cold caches it finds there.
    harness_overhead_s : 0.0
        Added to ``elsp`` (mmtests' compile step is seconds; LKP ``seconds`` exclude it). The
        engine option ``harness_overhead=False`` switches it off; the LKP job time's own
        per-iteration overhead is ``numalab.fidelity.JOB_OVERHEAD_S``.
    """

    # where each value comes from (numalab.provenance; docs/fidelity.md "Where every constant comes from")
    link_write_efficiency: float = constant(
        1.0, kind="derived",
        source="a remote write moves its line once over each direction of the socket link (the RFO's data from the "
               "memory's node one way, the write-back the other; costs.progress_rates counts both senses on "
               "each direction), and every preset's link_bw_GBps is already the sustained share of the UPI peak; "
               "until 0.6.0 the value was 0.5 on one direction, which charged a one-way write stream twice",
        band=(0.7, 1.0), band_source="assumed: down to -30 % for UPI header and snoop traffic beyond the sustained "
                                     "link figure; no public UPI write-efficiency figure for these parts")
    smt_share: float = constant(
        0.6, kind="datasheet",
        source="Intel 64 and IA-32 Architectures Optimization Reference Manual: two hyper-threads of one "
               "core stream about 1.2x what one does (fill buffers shared per core)",
        band=(0.5, 0.7), band_source="1.0x-1.4x core throughput with both threads streaming (the manual's "
                                     "range of SMT gains for memory-bound code)")
    pte_update_ns: float = constant(
        25.0, kind="assumed", source="order of magnitude of change_pte_range per base page "
                                     "(ptep_modify_prot_start/commit, a few cache lines); not measured",
        band=(12.5, 50.0), band_source="assumed: x0.5-x2")
    pmd_update_ns: float = constant(
        400.0, kind="assumed", source="change_huge_pmd per THP with its page-table lock round trip; "
                                      "order of magnitude, not measured",
        band=(200.0, 800.0), band_source="assumed: x0.5-x2")
    scan_run_us: float = constant(
        30.0, kind="assumed", source="fixed cost of a task_numa_work run that changed something (mmap_lock, "
                                     "VMA walk, flush_tlb_range IPI to the mm's CPUs): tens of us with 64 "
                                     "CPUs; not measured",
        band=(10.0, 100.0), band_source="assumed: the 'tens of microseconds' of a TLB-shootdown IPI round")
    scan_virt_ns_per_mb: float = constant(
        50.0, kind="assumed", source="page-table walk of unpopulated or already protected address space; "
                                     "order of magnitude, not measured",
        band=(25.0, 100.0), band_source="assumed: x0.5-x2")
    hint_fault_us: float = constant(
        2.5, kind="assumed", source="trap + do_numa_page/do_huge_pmd_numa_page + task_numa_fault without a "
                                    "migration; order of magnitude, not measured",
        band=(1.25, 5.0), band_source="assumed: x0.5-x2")
    migrate_GBps: float = constant(
        6.0, kind="assumed", source="single-core copy_page/folio_copy rate with a remote write; about half "
                                    "the single-core rep stosb fill of an Ice Lake core (12 GB/s, "
                                    "shared/reference/machine-measurements.md)",
        band=(3.0, 12.0), band_source="assumed: x0.5-x2 (a copy reads and writes: at most the 12 GB/s "
                                      "single-core fill)")
    migrate_folio_us: float = constant(
        15.0, kind="assumed", source="per-folio isolation, unmap with TLB flush and remap; order of "
                                     "magnitude, not measured",
        band=(7.5, 30.0), band_source="assumed: x0.5-x2")
    zero_GBps: float = constant(
        8.0, kind="measurement",
        source="single-thread clearing of 2 MB pages at demand fault on a Xeon Platinum 8358 (the "
               "lkp-icl-2sp6 part): 8.76 GB/s page at a time (Ankur Arora's clear_page series, 2023; 7.95 "
               "GB/s in the 2025 series), shared/reference/machine-measurements.md",
        band=(6.5, 11.8), band_source="6.5 GB/s (Cascade Lake core, rep stosb) to 11.8 GB/s (Ice Lake, "
                                      "multi-page clearing), same sources")
    task_migration_us: float = constant(
        60.0, kind="assumed", source="runqueue locks and the cold caches a task finds on another node; "
                                     "order of magnitude, not measured",
        band=(20.0, 200.0), band_source="assumed: from a bare runqueue move to refilling a private L2")
    harness_overhead_s: float = constant(
        0.0, kind="derived", source="LKP's autonuma-benchmark.<test>.seconds time the benchmark binary "
                                    "alone (data/README.md), so nothing is added; mmtests' compile step "
                                    "is set by a user who needs it")

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "harness_overhead_s":
                check_number(f"costs.{f.name}", v, lo=0.0)
            elif f.name in ("link_write_efficiency", "smt_share"):
                check_number(f"costs.{f.name}", v, lo=0.0, hi=1.0, lo_open=True)
            else:
                check_number(f"costs.{f.name}", v, lo=0.0, lo_open=f.name.endswith("GBps"))

    @classmethod
    def coerce(cls, costs) -> "Costs":
        """None -> defaults, a Costs -> itself, a dict -> Costs(**dict) (unknown keys refused)."""
        if isinstance(costs, dict) and "write_efficiency" in costs:
            raise NumalabValueError(
                f"costs key 'write_efficiency' (= {costs['write_efficiency']!r}) is not a cost constant: it is "
                "a property of the machine, Topology.write_efficiency; set it on the topology, e.g. "
                "topology=Topology.preset('2s-128', write_efficiency=0.3), or in a topology file "
                "(numalab probe measures it)")
        return coerce_dataclass(cls, costs, "costs")

    def to_dict(self) -> dict:
        return asdict(self)

    # ---- kernel time of single events (seconds)
    def scan_time_s(self, pte_pages, huge_pmds, virt_pages, changed_chunk):
        """Kernel seconds of one ``task_numa_work`` run."""
        small = pte_pages - 512 * huge_pmds
        return (small * self.pte_update_ns + huge_pmds * self.pmd_update_ns) * 1e-9 \
            + virt_pages * (4096 / 2**20) * self.scan_virt_ns_per_mb * 1e-9 \
            + changed_chunk * self.scan_run_us * 1e-6

    def migrate_time_s(self, pages, folios):
        return pages * 4096 / (self.migrate_GBps * 1e9) + folios * self.migrate_folio_us * 1e-6


def progress_rates(costs: Costs, topo, node_of_thread, frac, running, shared_init=None, thread_mm=None,
                   both_directions=True):
    """Write speed of every thread, bytes/s.

    Parameters
    ----------
    node_of_thread : int (R, T) -- the node each thread runs on.
    frac : float (R, T, N) -- share of the thread's written bytes on each memory node.
    running : bool (R, T) -- thread is on a CPU (wants bandwidth).
    shared_init : bool (R, T) or None -- thread is in its process's shared init sweep
        (module docstring; :func:`_coherent_rates`). A replica with such a running thread takes
        the coherent rates, the others (and all with None) the closed form.
    thread_mm : int (T,) -- the process of each thread (needed with ``shared_init``).
    both_directions : bool -- a remote write loads both link directions, one line each (the
        engine option ``link_both_directions``); False: the 0.5.0 accounting, each remote
        write charged as two lines on its own (cpu node, memory node) direction.

    Returns (R, T) float, 0 for threads not running. Reductions run over the node and thread
    axes of one replica only, so a replica's result does not depend on the batch.
    """
    R, T, N = frac.shape
    lat = topo.latency_ns                                   # (N, N) cpu node -> mem node
    rel = np.diag(lat)[:, None] / lat                       # bandwidth ∝ 1/latency (vs the CPU's own node)
    # (takes along the first axis: fancy indexing with an (R, T) index costs ~10x more)
    on = np.eye(N, dtype=bool).take(node_of_thread, axis=0)  # (R, T, N): thread t runs on node n
    at_node = np.arange(R)[:, None] * N + node_of_thread    # flat (r, node of t) of an (R, N) array
    # SMT: on a node with k running threads and c cores, 2*(k-c) of them share a core
    k = np.bincount(at_node[running], minlength=R * N).reshape(R, N).astype(float)   # running threads per node
    c = topo.node_cores                                     # (N,) per node
    sharing = np.where(topo.per_node("smt") > 1, np.clip(2.0 * (k - c), 0.0, k), 0.0)
    smt = np.where(k > 0, (k - sharing + sharing * costs.smt_share) / np.maximum(k, 1), 1.0)
    tbw = (topo.per_node("thread_bw_GBps") * 1e9).take(node_of_thread) * smt.take(at_node)   # (R, T)
    relt = rel.take(node_of_thread, axis=0)                  # (R, T, N)
    coherent = None
    if shared_init is not None:
        init = shared_init & running
        # replica by replica: a replica's rates must not depend on the others of its batch
        coherent = np.flatnonzero(init.any(axis=1))
        if coherent.size and thread_mm is None:
            raise NumalabValueError("progress_rates: shared_init needs thread_mm (the process of each thread)")
        if coherent.size == R:
            return _coherent_rates(costs, topo, node_of_thread, frac, running, tbw, relt, init,
                                   np.asarray(thread_mm), both_directions=both_directions)
    out = _closed_form(costs, topo, node_of_thread, frac, running, tbw, relt, on, at_node, both_directions)
    if coherent is not None and coherent.size:
        c = coherent
        out[c] = _coherent_rates(costs, topo, node_of_thread[c], frac[c], running[c], tbw[c], relt[c], init[c],
                                 np.asarray(thread_mm), both_directions=both_directions)
    return out


@lru_cache(maxsize=64)
def link_incidence(topo) -> dict:
    """Which pair loads which link direction of ``topo``, in the one order every accounting sums
    them: ``"path"`` -> (pair ``x * nodes + y``, direction) for every direction of the route
    ``x -> y`` (a transfer's one way), ``"both"`` -> the same for the route ``a -> n`` and then
    ``n -> a`` (a remote write: its read-for-ownership one way, its write-back the other). Pairs
    in row-major order, each route's directions in order (``Topology.link_route``)."""
    r = topo.link_route
    n = topo.nodes
    out = {}
    for key, table in (("path", r), ("both", np.concatenate([r, r.transpose(1, 0, 2)], axis=2))):
        flat = table.reshape(n * n, -1)
        pair, k = np.nonzero(flat >= 0)
        out[key] = (pair.astype(np.int64), flat[pair, k].astype(np.int64))
    return out


def _link_load(pair_load, incidence, L):
    """(R, L) bytes/s on every link direction: ``pair_load`` (R, N, N) added onto the directions
    ``incidence`` (:func:`link_incidence`) gives each pair, in its order."""
    R = pair_load.shape[0]
    pair, direction = incidence
    flat = (np.arange(R)[:, None] * L + direction[None, :]).ravel()
    weights = pair_load.reshape(R, -1)[:, pair].ravel()
    return np.bincount(flat, weights=weights, minlength=R * L).reshape(R, L)


def _route_max(factor, route):
    """(R, N, N): the largest of the (R, L) per-direction ``factor`` over each pair's ``route``
    (N, N, H; -1 pads, read as 1.0)."""
    ext = np.concatenate([factor, np.ones((factor.shape[0], 1))], axis=1)
    return ext[:, np.where(route >= 0, route, factor.shape[1])].max(axis=3)


def _closed_form(costs, topo, node_of_thread, frac, running, tbw, relt, on, at_node, both_directions=True):
    """:func:`progress_rates` when no thread is in a shared init sweep: each thread's
    unconstrained time per byte, slowed by its memory controllers' and links' saturation."""
    R, T, N = frac.shape
    # A thread's time per byte adds its node terms node after node; each load is a sum over one
    # replica's threads (a C-contiguous row of T values per node, or per (cpu node, memory
    # node) pair, as one (R, T) row sum each would be)
    bw = tbw[:, :, None] * relt                              # (R, T, N)
    frac_t = np.ascontiguousarray(frac.transpose(0, 2, 1))  # (R, N, T)
    # unconstrained time per byte
    tpb = frac / bw
    u = np.zeros((R, T))
    for n in range(N):
        u += tpb[:, :, n]
    s = np.where(running, 1.0 / np.maximum(u, 1e-30), 0.0)
    # node controller saturation
    cap = topo.per_node("node_bw_GBps") * 1e9 * topo.per_node("write_efficiency")    # (N,) by mem node
    sigma = np.maximum(1.0, (s[:, None, :] * frac_t).sum(axis=2) / cap)                  # (R, N) by mem node
    # interconnect saturation per link direction x -> y: a remote write moves its line both ways
    # (the read-for-ownership's data from the memory's node, the write-back to it), so each
    # direction between a and n carries the writes of a's threads to n's memory and those of
    # n's threads to a's memory, against the capacity into its far end
    s_on = np.ascontiguousarray(np.where(on, s[:, :, None], 0.0).transpose(0, 2, 1))    # (R, a, T)
    remote_load = (s_on[:, :, None, :] * frac_t[:, None, :, :]).sum(axis=3)             # (R, a, n)
    remote_load[:, np.arange(N), np.arange(N)] = 0.0                                     # local: no link
    if both_directions:
        # each link direction carries the remote writes whose route (one way or the other)
        # crosses it, against its capacity; a write is slowed by the busiest direction it uses
        cap = topo.link_cap_GBps * 1e9 * costs.link_write_efficiency                    # (L,)
        ratio = np.maximum(1.0, _link_load(remote_load, link_incidence(topo)["both"], cap.size) / cap)
        slink = _route_max(ratio, np.concatenate([topo.link_route, topo.link_route.transpose(1, 0, 2)], axis=2))
    else:       # 0.5.0: a remote write as two lines on its own direction a -> n only, per pair
        link = topo.per_node("link_bw_GBps") * 1e9 * costs.link_write_efficiency        # (N,) into node n
        slink = np.maximum(1.0, remote_load / (link * 0.5))
    slink_t = slink.reshape(R * N, N)[at_node]                                           # (R, T, n): a = node of t
    slink_t = np.where(on, 1.0, slink_t)
    fac = np.maximum(sigma[:, None, :], slink_t)
    tpb2 = frac * fac / bw
    u2 = np.zeros((R, T))
    for n in range(N):
        u2 += tpb2[:, :, n]
    return np.where(running, 1.0 / np.maximum(u2, 1e-30), 0.0)


def _coherent_rates(costs, topo, node_of_thread, frac, running, tbw, relt, init, thread_mm, iterations=40,
                    both_directions=True):
    """:func:`progress_rates` while some threads are in a shared init sweep (``init``, running).

    Let ``n_p`` be the running init threads of process ``p`` and ``k_pb`` those on node ``b``.
    Of each line an init thread of ``p`` on node ``a`` writes,

    * ``1/n_p`` reaches the memory controllers (each line is written back once per process): on
      the link ``a -> n`` when the memory is on another node ``n``. The same share is read from
      memory (the process's first writer of the line takes it from DRAM): on ``n -> a``;
    * the rest is taken from the previous writer's cache, which sits on node ``b != a`` with
      probability ``k_pb / (n_p - 1)``: that share crosses the link ``b -> a``.

    A saturated resource slows the bytes that reach it by a common factor (``F`` per controller,
    ``G`` per link direction ``x -> y``, against the capacity into ``y``); the factors are the
    fixed point at which every saturated resource carries its capacity (to ~1e-7 after the 40
    rounds; the error shrinks ~60x per 10 rounds, a fixed count so that a replica's result does
    not depend on its batch). With ``n_p = 1`` this is the closed form (no peer cache to take
    lines from: every line read from and written back to memory, one transfer each way of the
    link when remote). No constant is added: the controller and link capacities are the closed
    form's.

    ``both_directions=False`` is the 0.5.0 accounting: the pulls are ``k_pb / (n_p - 1)`` of a
    line, and a thread on ``a`` puts its remote write-backs and its pulls from node ``n``'s caches
    on one resource per (cpu node, memory node) pair, ``G[a, n]``, of half the link's capacity
    (each line counted as two transfers on that direction)."""
    R, T, N = frac.shape
    a = 1.0 / (tbw[:, :, None] * relt)                        # (R, T, N) s/byte unconstrained
    cap = topo.per_node("node_bw_GBps") * 1e9 * topo.per_node("write_efficiency")
    if both_directions:     # per link direction (Topology.link_set)
        link = topo.link_cap_GBps * 1e9 * costs.link_write_efficiency
    else:                   # 0.5.0: per pair of nodes, into node n
        link = topo.per_node("link_bw_GBps") * 1e9 * costs.link_write_efficiency
    remote = node_of_thread[:, :, None] != np.arange(N)[None, None, :]
    rr = np.arange(R)[:, None]
    cs = np.ones((R, T))                                      # share of bytes reaching DRAM
    pull = np.zeros((R, T, N))                                # share taken from node b's caches
    for p in np.unique(thread_mm):
        mine = init & (thread_mm == p)[None, :]
        n_p = mine.sum(axis=1)                                                    # (R,)
        k_pb = np.stack([(mine & (node_of_thread == b)).sum(axis=1) for b in range(N)], axis=1)
        cs_p = 1.0 / np.maximum(n_p, 1)                                           # (R,)
        cs = np.where(mine, cs_p[:, None], cs)
        prob = k_pb / np.maximum(n_p - 1, 1)[:, None]                             # (R, N)
        if both_directions:                                   # the first writer's share comes from memory
            prob = (1.0 - cs_p)[:, None] * prob
        pull = np.where(mine[:, :, None] & remote, prob[:, None, :], pull)
    csn = cs[:, :, None]

    def speeds(F, Gp):      # Gp (R, N, N): the factor of the route x -> y (0.5.0: of the pair [a, n])
        Gout = Gp[rr, node_of_thread]                                             # (R, T, N) G[a_t -> n]
        # G[n -> a_t]; 0.5.0's pair resource G[a_t, n] carries the pulls as well
        Gin = Gp.transpose(0, 2, 1)[rr, node_of_thread] if both_directions else Gout
        fac = np.maximum(F[:, None, :], np.where(remote, np.maximum(Gout, Gin), 1.0))   # memory-bound bytes
        peer = 1.0 + (pull * (Gin - 1.0)).sum(axis=2, keepdims=True)              # cache-to-cache pulls
        fac = np.maximum(1.0 + csn * (fac - 1.0), peer)
        U = (frac * a * fac).sum(axis=2)
        return np.where(running, 1.0 / np.maximum(U, 1e-30), 0.0)

    F = np.ones((R, N))
    if both_directions:     # per link direction; a route's factor is its busiest direction's
        G = np.ones((R, link.size))
        route = topo.link_route

        def pair_factor(G):
            return _route_max(G, route)
    else:                   # 0.5.0: per pair [a, n]
        G = np.ones((R, N, N))

        def pair_factor(G):
            return G
    for _ in range(iterations):
        s = speeds(F, pair_factor(G))[:, :, None]
        dram = s * frac * csn                                 # bytes/s reaching memory node n
        F = np.maximum(1.0, F * dram.sum(axis=1) / cap)
        out = np.where(remote, dram, 0.0)                     # write-backs [a_t -> n]
        inflow = out + s * pull                               # memory reads and pulls [b -> a_t]
        out_sum = np.empty((R, N, N))
        in_sum = np.empty((R, N, N))
        for x in range(N):
            on = (node_of_thread == x)[:, :, None]
            in_sum[:, x, :] = np.where(on, inflow, 0.0).sum(axis=1)              # [y -> x] for x's threads
            if both_directions:
                out_sum[:, x, :] = np.where(on, out, 0.0).sum(axis=1)             # [x -> y] by x's threads
        if both_directions:     # pair x -> y's transfers onto every direction of its route
            G = np.maximum(1.0, G * _link_load(out_sum + in_sum.transpose(0, 2, 1), link_incidence(topo)["path"],
                                               link.size) / link)
        else:                                                 # 0.5.0: the pair [a, n], two lines each
            G = np.maximum(1.0, G * in_sum / (link * 0.5))
    return speeds(F, pair_factor(G))


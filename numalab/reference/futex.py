"""Scalar discrete-event simulator of futex hash-bucket contention (test oracle).

The same system as :func:`numalab.futex.solver.simulate`, written event by event with a
``heapq`` of thread arrivals, straight from the spec (§7.3), ``docs/futex.md`` and a routing
(:func:`numalab.futex.workloads.route`):

* thread t thinks for ``Z_t`` (syscall entry/exit + futex path + hashing + two atomics + user
  work [+ GUP, per-CPU ref, nanosleeps]), its CPU work stretched by the SMT slowdown of its
  core (:func:`cpu_slowdown`), then takes its next futex in a fixed cyclic order that starts
  at a random key (perf bench's ``for (i = 0; i < nfutexes; i++)`` loop);
* in the 6.16 ``rcuref`` private mode it first takes the process's refcount line
  (``rcuref_lines`` transfers, FCFS; an atomic, so with a request of its node ahead of it the
  line comes from its own node, weight ``atomic_node_batching``; with ``smt_shared_l1``
  = 1 and an RMW of an SMT sibling on its core pending there, it completes right after that
  one from the core's shared L1 at ``line_self_ns``), then the bucket's hb lock
  (FCFS): service
  ``slowdown * critical_section_ns + n * c`` with ``n = lines_contended`` if the lock is held
  when it arrives, else ``lines_per_op``; for a line homed on node h
  (``layout.bucket_home``; a refcount line lives on its process's private-hash node):
  ``c = line_self_ns`` when this thread, or another on its physical core (the shared L1/L2),
  held the line last; the home's DRAM latency
  ``Topology.latency_ns[my node, h]`` when nobody has held it yet (cold line); else the line
  latency from the last holder's node to this thread's node, plus
  ``home_lookup * (latency_ns[my node, h] - latency_ns[my node, my node])`` when h is neither
  of those two nodes (the trip to the home's directory);
* exponential (``dist="exponential"``) or fixed times.

It draws its random numbers from its own ``random.Random(seed)`` in event order, so it agrees
with the vectorised simulator statistically, not draw for draw.
"""

from __future__ import annotations

import heapq
import math
import random

import numpy as np

from ..futex.hash import CLASSIC, NUMA, PRIVATE, HashLayout, KeyView, hash_mode
from ..futex.costs import FutexCosts, core_clock_ghz, line_matrix
from ..futex.workloads import ROLE_LOCK, Routing


def line_cost(L, lat, costs: FutexCosts, holder_node, my_node: int, home: int, contended: bool = False) -> float:
    """Getting a bucket line homed on ``home`` to a CPU of ``my_node`` from another core on
    ``holder_node`` (None = nobody has held it: a cold line) [ns]. ``L``: line transfer
    latencies (:func:`numalab.futex.solver.line_matrix`), ``lat``: ``Topology.latency_ns``;
    ``contended``: other requests for the line are in flight (the station is busy)."""
    if holder_node is None:
        return float(lat[my_node][home])                                  # from the home's DRAM
    c = float(L[holder_node][my_node])                                    # cache-to-cache
    if holder_node != my_node and home not in (my_node, holder_node):     # + detour to the home directory
        c += costs.home_lookup * float(lat[my_node][home] - lat[my_node][my_node])
    if contended and holder_node != my_node:                              # + the conflict round trip
        c += costs.conflict_trip * max(float(L[holder_node][my_node] - L[my_node][my_node]), 0.0)
    return c


def core(topo, cpu) -> tuple[int, int]:
    """(node, core) of model CPU ``cpu``: CPU k of a node is on core ``k % cores_per_node``
    (the node's cores first, then their SMT siblings)."""
    cpu = int(cpu)
    return cpu // topo.cpus_per_node, (cpu % topo.cpus_per_node) % topo.cores_per_node


def clock_slowdown(rt: Routing, t: int, costs: FutexCosts) -> float:
    """How much slower thread t's CPU work runs at its package's clock than at the clock the
    costs are stated at (``clock_ref_ghz``): 1 when the Topology gives no clock; else the busy
    cores of the package (those that run a thread other than a sleeping lock thread) set it,
    from ``turbo_ghz`` with one busy core to ``all_core_ghz`` with all, linearly."""
    w = rt.workload
    topo = w.topology
    package = topo.node_package[int(w.thread_cpu[t]) // topo.cpus_per_node]
    cores = {core(topo, c) for u, c in enumerate(w.thread_cpu)
             if w.thread_role[u] != ROLE_LOCK and topo.node_package[int(c) // topo.cpus_per_node] == package}
    ghz = core_clock_ghz(topo, np.array([len(cores)]))
    return 1.0 if ghz is None else costs.clock_ref_ghz / float(ghz[0])


def cpu_slowdown(rt: Routing, t: int, costs: FutexCosts) -> float:
    """How much slower thread t's CPU work runs for the other busy threads on its core, and
    at its package's clock (:func:`clock_slowdown`).

    Model CPU k of a node is on core ``k % cores_per_node`` (:func:`core`);
    a futex_numa lock thread that nanosleeps does not load its core. With n busy threads on a
    core of ``smt`` hardware threads: ``n / (1 + smt_gain * (min(n, smt) - 1))``."""
    w = rt.workload
    topo = w.topology

    def busy(u):
        return w.thread_role[u] != ROLE_LOCK

    n = 1 + sum(1 for u in range(w.threads) if u != t and busy(u) and core(topo, w.thread_cpu[u]) == core(topo, w.thread_cpu[t]))
    return n / (1.0 + costs.smt_gain * (min(n, topo.smt) - 1)) * clock_slowdown(rt, t, costs)


def think_ns(rt: Routing, t: int, costs: FutexCosts) -> float:
    """Mean think time of thread t [ns], spelled out term by term."""
    w = rt.workload
    c = costs.resolve(w.topology)
    keys = [f for f in w.thread_futexes[t] if f >= 0]
    buckets = [b for b in rt.thread_buckets[t] if b >= 0]
    n = len(keys)
    z = c.syscall_ns + c.futex_path_ns + c.hash_ns + 2 * c.atomic_ns + c.user_ns
    z += c.gup_ns * sum(1 for f in keys if not w.fx_private[f]) / n
    if w.refcount == "percpu":
        z += c.percpu_ref_ns * sum(1 for b in buckets if b >= rt.layout.n_global) / n
    sleep = 0.0
    if w.thread_role[t] == ROLE_LOCK:
        z += 2 * c.syscall_ns                                   # the two nanosleep() calls
        sleep = 2 * (w.sleep_ns + c.timer_slack_ns)
    return cpu_slowdown(rt, t, c) * z + sleep


def simulate(rt: Routing, seed: int, *, costs: FutexCosts | None = None, ops: int = 400,
             warmup: int = 50, dist: str = "exponential") -> list[float]:
    """Per-thread throughput [ops/ns] of one routing, measured from each thread's
    ``warmup``-th to its last completion; stops when a thread has done ``ops`` operations."""
    costs = (costs or FutexCosts()).resolve(rt.workload.topology)
    w = rt.workload
    rng = random.Random(seed)
    L = line_matrix(w.topology, costs)
    T = w.threads
    use_ref = w.mode.private_tables and w.refcount == "rcuref"

    def draw():
        return -math.log(1.0 - rng.random()) if dist == "exponential" else 1.0

    z = [think_ns(rt, t, costs) for t in range(T)]
    cpu = [cpu_slowdown(rt, t, costs) for t in range(T)]
    clock = [clock_slowdown(rt, t, costs) for t in range(T)]
    keys = [[(int(b), bool(p)) for b, p in zip(rt.thread_buckets[t], rt.thread_private[t]) if b >= 0]
            for t in range(T)]
    nxt = [rng.randrange(len(keys[t])) for t in range(T)]   # cyclic order from a random first key
    free_at: dict = {}
    holder: dict = {}
    done = [0] * T
    t_warm = [0.0] * T
    t_last = [0.0] * T
    heap = []
    def arrival(t, when):
        """The thread's next operation: pick a futex, queue at its first station."""
        bucket, private = keys[t][nxt[t]]
        nxt[t] = (nxt[t] + 1) % len(keys[t])
        stage = 0 if (use_ref and private) else 1
        heapq.heappush(heap, (when, t, stage, bucket))

    for t in range(T):
        arrival(t, z[t] * draw())

    lat = w.topology.latency_ns
    priv_home = rt.layout.private_home
    sorted_round = sorted_rounds(rt, costs, L, lat)

    def bucket_home_of(ident):
        lay = rt.layout
        return bucket_home(ident, mode=lay.mode, nodes=lay.nodes, global_size=lay.global_size,
                           private_slots=lay.private_slots, private_home=lay.private_home,
                           classic_home=lay.classic_home)

    # the other threads on each thread's physical core: they share its L1/L2
    mates = [[u for u in range(T) if u != t and core(w.topology, w.thread_cpu[u]) == core(w.topology, w.thread_cpu[t])]
             for t in range(T)]

    def station_cost(station, prev, t, held):
        """Cost of getting the station's line to thread t, previous holder prev (or None),
        the lock held on arrival (``held``: cross-node pulls pay the conflict trip) or not."""
        kind, ident = station
        lay = rt.layout
        home = int(priv_home[ident]) if kind == "ref" else bucket_home(
            ident, mode=lay.mode, nodes=lay.nodes, global_size=lay.global_size,
            private_slots=lay.private_slots, private_home=lay.private_home, classic_home=lay.classic_home)
        if prev == t or (costs.smt_shared_l1 and prev in mates[t]):
            return costs.line_self_ns * clock[t]           # still in my (my core's) L1/L2 (core cycles)
        holder_node = None if prev is None else int(rt.thread_node[prev])
        return line_cost(L, lat, costs, holder_node, int(rt.thread_node[t]), home, held)

    node_until: dict = {}
    last: dict = {}                 # thread -> (station, end, rode a core-mate's) of its latest service
    carried: dict = {}              # thread -> riders its latest service took along

    def serve(station, arrive, t, base, lines, lines_held):
        prev = holder.get(station)
        held = arrive < free_at.get(station, 0.0)          # somebody holds the lock: contended
        c = station_cost(station, prev, t, held)
        my_node = int(rt.thread_node[t])
        if station[0] == "ref" and held and node_until.get((station, my_node), -math.inf) > arrive:
            # the refcount is an atomic, not a lock: with a request of my node ahead of me the
            # fabric hands the line over within my node
            local = line_cost(L, lat, costs, my_node, my_node, int(priv_home[station[1]]))
            c = costs.atomic_node_batching * local + (1.0 - costs.atomic_node_batching) * c
        if station[0] == "bucket" and held and station[1] in sorted_round:
            # a persistent lock's round is sorted by node: cross only at a boundary
            px, xnode = sorted_round[station[1]]
            local = line_cost(L, lat, costs, my_node, my_node, bucket_home_of(station[1]))
            srt = (1.0 - px) * local + px * xnode[my_node]
            c = (1.0 - costs.queue_node_sorting) * c + costs.queue_node_sorting * srt
        if station[0] == "ref" and held:
            c *= costs.atomic_forward          # forwarded: my request was queued already
        start = max(arrive, free_at.get(station, 0.0))
        # a queued RMW of a core-mate on this line that can take me along: it did not ride
        # itself, and fewer than the core's other hardware threads (smt - 1) rode it
        pending = [(last[m][1], m) for m in mates[t] if m in last and last[m][0] == station and last[m][1] > arrive
                   and not last[m][2] and carried.get(m, 0) < w.topology.smt - 1]
        ride = station[0] == "ref" and bool(costs.smt_shared_l1) and bool(pending)
        if ride:
            # the line comes to our shared L1 for that RMW and mine completes right after it,
            # an L1 hit, ahead of the queue behind it
            start, on = min(pending)
            carried[on] = carried.get(on, 0) + 1
            c = costs.line_self_ns * clock[t]
        carried[t] = 0
        end = start + (cpu[t] * base + (lines_held if held else lines) * c) * draw()
        if end >= free_at.get(station, 0.0):     # a rider is last only if nobody queued behind
            free_at[station] = end
            holder[station] = t
        last[t] = (station, end, ride)
        node_until[(station, my_node)] = max(node_until.get((station, my_node), -math.inf), end)
        return end

    while True:
        now, t, stage, bucket = heapq.heappop(heap)
        if stage == 0:  # rcuref_get/put on the process's refcount line, then the bucket
            end = serve(("ref", int(w.thread_proc[t])), now, t, 0.0, costs.rcuref_lines, costs.rcuref_lines)
            heapq.heappush(heap, (end, t, 1, bucket))
            continue
        end = serve(("bucket", bucket), now, t, costs.critical_section_ns, costs.lines_per_op,
                    costs.lines_contended)
        done[t] += 1
        if done[t] == warmup:
            t_warm[t] = end
        t_last[t] = end
        if done[t] >= ops:
            break
        arrival(t, end + z[t] * draw())
    # a thread with too few operations to measure after the warm-up (a lock thread asleep in
    # nanosleep) is measured over the whole run
    return [(done[t] - warmup) / (t_last[t] - t_warm[t]) if done[t] >= warmup + 2 else done[t] / end
            for t in range(T)]


def sorted_rounds(rt: Routing, costs: FutexCosts, L, lat) -> dict:
    """The hb locks whose every visiting thread has all its keys there (a FIFO order that
    persists from round to round, sorted by node): bucket -> (share of handoffs that cross
    nodes = nodes with busy visitors / busy visitors, {my node: mean contended pull from the
    other nodes' busy visitors, conflict round trip included [ns]}). Lock threads (they
    nanosleep) are not counted."""
    w = rt.workload
    visitors: dict = {}
    for t in range(w.threads):
        mine = {int(b) for b in rt.thread_buckets[t] if b >= 0}
        for b in mine:
            visitors.setdefault(b, []).append((t, len(mine) == 1))
    out = {}
    for b, vis in visitors.items():
        if b >= rt.layout.n_global + sum(rt.layout.private_slots) or not all(only for _, only in vis):
            continue
        nodes = [int(rt.thread_node[t]) for t, _ in vis if w.thread_role[t] != ROLE_LOCK]
        present = sorted(set(nodes))
        px = len(present) / len(nodes) if len(present) >= 2 else 0.0
        lay = rt.layout
        home = bucket_home(b, mode=lay.mode, nodes=lay.nodes, global_size=lay.global_size,
                           private_slots=lay.private_slots, private_home=lay.private_home,
                           classic_home=lay.classic_home)
        xnode = {}
        for j in range(w.topology.nodes):
            other = [i for i in nodes if i != j]
            xnode[j] = (sum(line_cost(L, lat, costs, i, j, home, True) for i in other) / len(other)) if other else 0.0
        out[b] = (px, xnode)
    return out


def futex_hash(*, mode, nodes: int, global_size: int, private_slots: int, private_offset: int,
               h_global: int, h_private: int, numa: bool, node_word: int, mpol: bool, mpol_node: int,
               cpu_node: int, private: bool, squash: bool) -> int:
    """Flat bucket id of ONE futex key, spelled out as ``get_futex_key`` + ``__futex_hash``
    (spec §2.3, §2.4, §7.2). ``private_offset`` is the id of the process's private bucket 0.

    ``mode``: a kernel mode (name or object: the kernel's code, written out here) or any other
    :class:`~numalab.futex.hash.HashMode` (its own methods, asked for this one key)."""
    # get_futex_key(): resolve the node
    node = -1
    if numa:
        node = node_word
    if node == -1 and mpol:
        node = mpol_node
    if numa and node == -1:
        node = cpu_node  # first touch: the local node, written back to the node word
    m = hash_mode(mode)
    # __futex_hash(): the private hash only for PRIVATE keys without a node
    if m.private_tables and node == -1 and private and private_slots > 0:
        index = 0 if squash else h_private % private_slots  # slots is a power of two
        return private_offset + index
    if not _kernel(m):
        return _mode_bucket(m, nodes, global_size, h_global, h_private, node, private, squash, cpu_node)
    index = 0 if squash else h_global % global_size
    if m is CLASSIC:
        return index
    if node == -1:
        node = (h_global // global_size) % nodes  # hash bits above the index bits
    return node * global_size + index


def _kernel(m) -> bool:
    """One of the three kernel designs written out here (not a researcher's mode or subclass)."""
    return any(m is k for k in (CLASSIC, NUMA, PRIVATE))


def _mode_bucket(m, nodes, global_size, h_global, h_private, node, private, squash, cpu_node) -> int:
    """A global bucket of a researcher's mode: its own ``table_of`` / ``index_of`` on one key
    (its memory on the first toucher's node ``cpu_node``)."""
    lay = HashLayout(m, nodes, global_size, squash=squash)
    keys = KeyView(h_global=[h_global], h_private=[h_private], node=[node], proc=[0], private=[private],
                   memory_node=[cpu_node])
    index = 0 if squash else int(m.index_of(lay, keys)[0])
    return int(m.table_of(lay, keys)[0]) * global_size + index


def bucket_home(bucket: int, *, mode, nodes: int, global_size: int, private_slots, private_home,
                classic_home: str) -> int:
    """Node whose memory holds flat bucket id ``bucket`` (spec §1.1, §2.1, §4.1): the classic
    table's 4 KiB pages (64 one-line buckets each) interleaved over the nodes or all on node 0;
    per-node table n on node n; a process's private table on its ``private_home`` node. A
    researcher's mode (not a kernel one) answers with its own ``home_of``."""
    m = hash_mode(mode)
    n_global = m.tables(nodes) * global_size
    if m.private_tables and bucket >= n_global:
        first = n_global
        for proc, slots in enumerate(private_slots):
            if bucket < first + slots:
                return int(private_home[proc])
            first += slots
        raise ValueError(f"bucket {bucket} beyond the private tables")
    if not _kernel(m):
        lay = HashLayout(m, nodes, global_size, classic_home=classic_home)
        return int(m.home_of(lay, np.array([bucket]))[0])
    if m is CLASSIC:
        return (bucket // 64) % nodes if classic_home == "interleave" else 0
    return bucket // global_size

"""Scalar, event-by-event reference of :mod:`numalab.engine` for small cases.

One replica, plain Python state (lists of ints and floats), VMA by VMA and fault by fault,
written from ``docs/engine.md`` and ``spec/kernel-numa-balancing.md`` §3–§5. It consumes the same
random numbers as the vectorised engine (the replica's ``numpy.random.Generator``: the initial
draws, then ``random(2K + 2T)`` per step) and must agree with it on every counter exactly
(tests/test_engine_reference.py). The scan filter comes from the scalar
:mod:`numalab.reference.policy` and the PID windows from :mod:`numalab.reference.history`.

What it shares with the engine, on purpose: the workload arrays, :func:`numalab.costs.progress_rates`
(the bandwidth model is physics, not balancing logic; called on one-row arrays) and numpy's
own float reductions where the engine reduces small axes (so the floating-point sums match).
Meant for <= 8 threads, <= 16 VMAs and short runs; it is slow.
"""

from __future__ import annotations

import math

import numpy as np

from ..costs import Costs, progress_rates
from ..workloads import (INIT_B, INIT_MAIN, INIT_OWNER, PH_DONE, PH_INIT, PH_LOOP, PH_WAIT, REGION_PAGES,
                         SHARED_RO, UNSUITABLE, INACCESSIBLE)
from . import history as H
from .hashing import pid_bit
from . import policy as RP

NO_NODE = -1
PID_UNSET = 0xFF
TICK_S = 1e-3
COUNTERS = ("numa_pte_updates", "numa_huge_pte_updates", "numa_hint_faults", "numa_hint_faults_local",
            "numa_pages_migrated", "false_skips", "idle_scans", "scan_runs", "task_migrations", "numa_sticks",
            "numa_migrate_fail", "group_joins", "lb_migrations", "scan_period_resets", "pid_windows",
            "pid_window_bits", "pid_tests", "pid_test_passes", "buffer_protections")


def nearest_node(topo, nid, ok):
    """The node ``m`` with ``ok(m)`` nearest to ``nid`` by SLIT distance, the first of equals
    (the kernel's ``numa_nearest_node``: a loop over the nodes keeping the smallest distance)."""
    best, best_d = nid, None
    for m in range(topo.nodes):
        if ok(m) and (best_d is None or topo.distance[nid][m] < best_d):
            best, best_d = m, topo.distance[nid][m]
    return best


class Replica:
    """One seed of one workload under one policy."""

    def __init__(self, wl, policy, seed, o: dict, costs: Costs):
        self.wl, self.pol, self.o, self.costs = wl, policy, o, costs
        topo = self.topo = wl.topology
        self.rng = np.random.default_rng(seed)
        self.dt = o["dt"]
        self.now = 0.0
        T, V, NR, N, M = wl.nthreads, wl.nvmas, wl.nregions, topo.nodes, wl.nproc
        self.T, self.V, self.NR, self.N, self.M = T, V, NR, N, M
        cpu_node = topo.cpu_node
        self.present = [int(x) for x in wl.region_present]
        self.huge = [bool(h) and o["thp"] and not (o["malloc_edges"] and bool(e))
                     for h, e in zip(wl.region_huge, wl.region_malloc_edge)]
        self.rvma = [int(v) for v in wl.region_vma]
        self.rclass = [int(c) for c in wl.region_class]
        self.C = max(self.rclass) + 1
        self.E = int(wl.entry_class.size)
        ec = [int(c) for c in wl.entry_class]
        self.cls_start = [ec.index(c) if c in ec else self.E for c in range(self.C)]
        self.cls_end = [self.cls_start[c] + ec.count(c) for c in range(self.C)]
        for c in range(self.C):       # classes without entries: empty segment at the next entry
            if ec.count(c) == 0:
                self.cls_start[c] = self.cls_end[c] = sum(1 for x in ec if x < c)
        self.vma_first = [self.rvma.index(v) for v in range(V)] + [NR]
        self.mm_vmas = [[v for v in range(V) if wl.vma_mm[v] == m] for m in range(M)]
        rmm = [int(wl.vma_mm[v]) for v in self.rvma]
        self.mm_rss = [sum(self.present[q] for q in range(NR) if rmm[q] == m) for m in range(M)]
        self.nr_threads = [int((wl.thread_mm == m).sum()) for m in range(M)]
        self.K = sum((o["scan_size_mb"] << 8) // REGION_PAGES + 2 + len(v) for v in self.mm_vmas)
        # ground truth: thread writes VMA in phase
        self.writes = set()
        for e in range(self.E):
            q = self.rclass.index(ec[e])
            self.writes.add((int(wl.entry_thread[e]), int(wl.entry_phase[e]), self.rvma[q]))

        # per node: its CPUs (0 on a memory-only node) and its memory in base pages
        self.node_cpus = [int(c) for c in np.broadcast_to(topo.cpus_per_node, (N,))]
        mem = [float(g) for g in np.broadcast_to(topo.mem_per_node_GiB, (N,))]
        self.cpu_nodes = [n for n in range(N) if self.node_cpus[n] > 0]
        # sweep segments: (thread, phase, first region, k_first, k_last, lo, hi, sigma, range)
        RB = REGION_PAGES * 4096
        self.segs = []
        for i in range(int(wl.seg_thread.size)):
            v = int(wl.seg_vma[i])
            nreg = self.vma_first[v + 1] - self.vma_first[v]
            lo, hi = float(wl.seg_lo[i]), float(wl.seg_hi[i])
            self.segs.append((int(wl.seg_thread[i]), int(wl.seg_phase[i]), self.vma_first[v], int(lo // RB),
                              min(int(math.ceil(hi / RB)) - 1, nreg - 1), lo, hi, float(wl.seg_sigma[i]),
                              float(wl.seg_range[i])))
        swept = {(s_[0], s_[1]) for s_ in self.segs}
        self.cls_sweep = []
        for c in range(self.C):
            es = range(self.cls_start[c], self.cls_end[c])
            self.cls_sweep.append(o["first_arrival"] and len(es) > 0 and all(
                float(wl.entry_fixed_hz[e]) == 0 and (int(wl.entry_thread[e]), int(wl.entry_phase[e])) in swept
                for e in es))
        # a thread's loop range shared with another thread's: an independent sweep phase
        self.loop_range = [0.0] * T
        shared = [False] * T
        loops = [s_ for s_ in self.segs if s_[1] == PH_LOOP]
        for s_ in loops:
            self.loop_range[s_[0]] = s_[8]
        for i in range(int(wl.seg_thread.size)):
            if int(wl.seg_phase[i]) != PH_LOOP:
                continue
            for j in range(int(wl.seg_thread.size)):
                if (int(wl.seg_phase[j]) == PH_LOOP and int(wl.seg_vma[j]) == int(wl.seg_vma[i])
                        and int(wl.seg_thread[j]) != int(wl.seg_thread[i])
                        and wl.seg_lo[j] < wl.seg_hi[i] and wl.seg_hi[j] > wl.seg_lo[i]):
                    shared[int(wl.seg_thread[i])] = True
        self.loop_shared = shared

        # initial draws: node B among the nodes with CPUs
        init_node = self.cpu_nodes[int(self.rng.integers(len(self.cpu_nodes)))]
        pid_base = int(self.rng.integers(o["pid_lo"], o["pid_hi"]))
        perm = self.rng.permutation(topo.ncpus)
        phi = self.rng.random(T) if o["first_arrival"] else np.zeros(T)
        if o["init_node"] is not None:
            init_node = int(o["init_node"])
        if o["pid_base"] is not None:
            pid_base = int(o["pid_base"])
        self.tid = [pid_base + int(x) for x in wl.thread_tid_offset]
        main = [bool(x) for x in wl.thread_main]
        self.mm = [int(x) for x in wl.thread_mm]
        node = [0] * T
        k = 0
        for t in range(T):
            if not main[t]:
                node[t] = int(cpu_node[perm[k % topo.ncpus]])
                k += 1
            else:   # on node B, or the nearest node with CPUs to a memory-only init_node
                node[t] = nearest_node(topo, init_node, lambda m: self.node_cpus[m] > 0)
            if wl.cpu_bind[t] >= 0:
                node[t] = int(wl.cpu_bind[t])
        self.node = node
        pb = wl.phase_bytes
        self.phase, self.left, self.finish = [], [], []
        for t in range(T):
            ph = PH_INIT if pb[t, 0] > 0 else (PH_LOOP if pb[t, 1] > 0 else PH_DONE)
            if wl.waits_for_main[t]:
                ph = PH_WAIT
            self.phase.append(ph)
            self.left.append(0.0 if ph == PH_DONE else float(pb[t, 0] if ph == PH_INIT else pb[t, 1]))
            self.finish.append(0.0 if ph == PH_DONE else math.nan)
        self.runtime = [0.0] * T
        # option sweep_convoy: the loops of a shared range start together; independent phases otherwise
        self.sweep_phase = [float(phi[t]) * self.loop_range[t] if self.loop_shared[t] and not o["sweep_convoy"]
                            else 0.0 for t in range(T)]
        self.node_stamp = [0.0 if main[t] else 2 * TICK_S for t in range(T)]
        self.period = [o["scan_delay_ms"]] * T
        self.period_max = [o["scan_period_max_ms"]] * T
        self.task_seq = [0] * T
        self.preferred = [NO_NODE] * T
        self.retry = [0.0] * T
        self.has_faults = [False] * T
        z = lambda: [[[0.0, 0.0] for _ in range(N)] for _ in range(T)]  # noqa: E731
        self.f_mem, self.f_cpu = z(), z()
        self.b_mem = [[[0, 0] for _ in range(N)] for _ in range(T)]
        self.b_cpu = [[[0, 0] for _ in range(N)] for _ in range(T)]
        self.loc = [[0, 0, 0] for _ in range(T)]
        self.last_place_t = [0.0] * T
        self.last_place_run = [0.0] * T
        self.group = [-1] * T
        self.kdebt = [0.0] * T
        self.mm_next_scan = [o["scan_delay_ms"] / 1000.0] * M
        self.mm_offset = [0] * M
        self.mm_seq = [0] * M
        W = policy.windows
        self.state = [None] * V      # dict per VMA once created
        self.v_scanned = [False] * V
        self.v_faulted = [False] * V
        # regions
        owner = [-1] * self.C
        for c in range(self.C):
            if self.cls_start[c] < self.cls_end[c]:
                owner[c] = int(wl.entry_thread[self.cls_start[c]])
        mm_main = [next((t for t in range(T) if main[t] and self.mm[t] == m), 0) for m in range(M)]
        self.r_node = []
        for q in range(NR):
            i = int(wl.region_init[q])
            if i == INIT_B:
                i = init_node
            elif i == INIT_MAIN:
                i = node[next(t for t in range(T) if main[t])]
            elif i == INIT_OWNER:
                ow = owner[self.rclass[q]]
                i = node[ow if ow >= 0 else mm_main[rmm[q]]]
            if int(wl.region_init[q]) < 0:   # a first touch lands on the nearest node with memory
                i = nearest_node(topo, i, lambda m: mem[m] > 0)
            self.r_node.append(i)
        self.prot = [False] * NR
        self.last8 = [PID_UNSET] * NR
        self.last_set = [False] * NR
        self.last_node = [0] * NR
        self.last_task = [-1] * NR
        self.thresh = [0.0] * NR
        self.hazard = [0.0] * NR
        self.sel = [0.0] * NR
        self.node_pages = [sum(self.present[q] for q in range(NR) if self.r_node[q] == n) for n in range(N)]
        self.node_cap = [int(g * (1 << 30) // 4096) for g in mem]
        self.cls_node = [[0] * N for _ in range(self.C)]
        for q in range(NR):
            self.cls_node[self.rclass[q]][self.r_node[q]] += 1
        self.cnt = {k: 0 for k in COUNTERS}
        dec = policy.decisions
        self.allowed = {name: bool(dec.allowed[i]) for i, name in enumerate(dec.names)}
        self.pid_skip = {name for i, name in enumerate(dec.names) if dec.pid_skip[i]}
        self.reasons = {name: 0 for name in dec.names}
        self.syst = wl.zero_bytes_init / (costs.zero_GBps * 1e9)
        if o["first_touch_wait"] and wl.zero_bytes_init > 0:
            # the first touches' zeroing, shared by the threads that start in their init
            starters = [t for t in range(T) if self.phase[t] == PH_INIT]
            for t in starters:
                self.kdebt[t] = wl.zero_bytes_init / len(starters) / (costs.zero_GBps * 1e9)
        self.done = False
        self.elsp = math.nan
        self.dirty = True
        self.speed = [0.0] * T
        self.cum = [0.0] * (self.E + 1)
        self.lam_c = [0.0] * self.C
        self.want = set()
        self.W = W

    # ------------------------------------------------------------------ helpers
    def running(self, t):
        return self.phase[t] in (PH_INIT, PH_LOOP)

    def bindp(self, t):
        return (self.phase[t] == PH_INIT and bool(self.wl.init_bind[t])) or bool(self.wl.mem_bind[t])

    def nr_scan_windows(self, m):
        per = self.o["scan_size_mb"] << 8
        rss = self.mm_rss[m] or per
        return -(-rss // per)

    def scan_min(self, t):
        o = self.o
        windows = 2560 // o["scan_size_mb"] if o["scan_size_mb"] < 2560 else 1
        return max(1000 // windows, o["scan_period_min_ms"] // self.nr_scan_windows(self.mm[t]))

    def gstats(self):
        """Group sums of member statistics (gid -> (mem, cpu)), and sizes."""
        N = self.N
        gm = {}
        gc = {}
        size = {}
        for t in range(self.T):   # in task order, like np.bincount
            g = self.group[t]
            if g < 0:
                continue
            if g not in gm:
                gm[g] = [[0.0, 0.0] for _ in range(N)]
                gc[g] = [[0.0, 0.0] for _ in range(N)]
                size[g] = 0
            size[g] += 1
            for n in range(N):
                for p in range(2):
                    gm[g][n][p] = gm[g][n][p] + self.f_mem[t][n][p]
                    gc[g][n][p] = gc[g][n][p] + self.f_cpu[t][n][p]
        return gm, gc, size

    def shared_scale(self, base, t, gm, size):
        g = self.group[t]
        s = int(math.floor(float(np.sum(np.array([gm[g][n][0] for n in range(self.N)])))))
        p = int(math.floor(float(np.sum(np.array([gm[g][n][1] for n in range(self.N)])))))
        return base * size[g] * (s + 1) // (p + s + 1)

    def scan_start(self, t, gm, size):
        smin = self.scan_min(t)
        if self.group[t] < 0:
            return smin
        return max(smin, self.shared_scale(smin, t, gm, size))

    def scan_max(self, t, gm, size):
        smin = self.scan_min(t)
        smax = self.o["scan_period_max_ms"] // self.nr_scan_windows(self.mm[t])
        if self.group[t] >= 0:
            smax = max(smax, self.shared_scale(smax, t, gm, size))
        return max(smin, smax)

    # ------------------------------------------------------------------ refresh
    def refresh(self):
        if not self.dirty:
            return
        wl, T, N = self.wl, self.T, self.N
        frac = np.zeros((1, T, N))
        for t in range(T):
            acc = [0.0] * N
            for ph in (PH_INIT, PH_LOOP):
                if self.phase[t] != ph:
                    continue
                for e in range(self.E):
                    if int(wl.entry_thread[e]) == t and int(wl.entry_phase[e]) == ph:
                        c = int(wl.entry_class[e])
                        for n in range(N):
                            acc[n] = acc[n] + float(wl.entry_share[e]) * float(self.cls_node[c][n])
            a = np.array(acc)
            tot = float(np.sum(a))
            if tot > 0:
                frac[0, t] = a / tot
            else:
                frac[0, t, self.node[t]] = 1.0
        running = np.array([[self.running(t) and not self.done for t in range(T)]])
        shared_init = np.array([[self.phase[t] == PH_INIT and bool(wl.init_bind[t]) for t in range(T)]]) \
            if self.o["init_coherence"] else None
        sp = progress_rates(self.costs, self.topo, np.array([self.node]), frac, running, shared_init,
                            wl.thread_mm, both_directions=self.o["link_both_directions"])[0]
        self.speed = [float(x) for x in sp]
        rates = []
        for e in range(self.E):
            t = int(wl.entry_thread[e])
            if self.phase[t] == int(wl.entry_phase[e]) and self.running(t) and not self.done:
                rates.append(self.speed[t] * float(wl.entry_touch_per_byte[e]) + float(wl.entry_fixed_hz[e]))
            else:
                rates.append(0.0)
        cum = [0.0]
        for x in rates:
            cum.append(cum[-1] + x)
        self.cum = cum
        self.lam_c = [cum[self.cls_end[c]] - cum[self.cls_start[c]] for c in range(self.C)]
        self.dirty = False

    # ------------------------------------------------------------------ step
    def step(self):
        T, dt = self.T, self.dt
        t0 = self.now
        u = self.rng.random(2 * self.K + 2 * T)
        self.u_prot = u[:2 * self.K].reshape(self.K, 2)
        self.u_task = u[2 * self.K:2 * self.K + T]
        self.u_lb = u[2 * self.K + T:]
        self.slot = 0
        live = not self.done
        running = [self.running(t) and live for t in range(T)]
        self.refresh()
        used = [0.0] * T
        work = [0.0] * T
        for t in range(T):
            used[t] = min(self.kdebt[t], dt)
            self.kdebt[t] = self.kdebt[t] - used[t]
            work[t] = dt - used[t] if running[t] else 0.0
            if running[t]:
                self.runtime[t] = self.runtime[t] + dt
        self.phase0, self.left0, self.used = list(self.phase), list(self.left), used
        self.advance(work, used, t0, running)
        self.scan_trigger(t0, running)
        self.faults(t0 + dt, running)
        self.move_tasks()
        self.lb_moves()
        self.now = t0 + dt
        if live and not any(self.running(t) for t in range(T)) and all(p == PH_DONE for p in self.phase):
            self.elsp = max(f for f in self.finish if not math.isnan(f)) + self.costs.harness_overhead_s
            self.done = True
            self.dirty = True

    def advance(self, work, used, t0, running):
        pb = self.wl.phase_bytes
        for t in range(self.T):
            if not running[t]:
                continue
            sp = self.speed[t]
            left = self.left[t] - sp * work[t]
            if left <= 0:
                spent = max(self.left[t], 0.0) / max(sp, 1e-30) if sp > 0 else 0.0
                tfin = t0 + used[t] + spent
                leftover = max(work[t] - spent, 0.0)
                if self.phase[t] == PH_INIT and pb[t, 1] > 0:
                    self.phase[t] = PH_LOOP
                    left = float(pb[t, 1]) - leftover * sp
                    self.finish[t] = math.nan
                else:
                    self.phase[t] = PH_DONE
                    left = 0.0
                    self.finish[t] = tfin
                self.dirty = True
            self.left[t] = left
        main_of = {self.mm[t]: t for t in range(self.T) if self.wl.thread_main[t]}
        for t in range(self.T):
            if self.phase[t] == PH_WAIT and self.phase[main_of[self.mm[t]]] == PH_DONE:
                self.phase[t] = PH_LOOP
                self.dirty = True

    # ------------------------------------------------------------------ scanning
    def jiffies(self, t_s):
        """``t_s`` on the tick grid (the kernel's next_scan and pids_active_reset are jiffies),
        or float seconds with tick_clock off (the 0.7.0 engine)."""
        return round(t_s / TICK_S) * TICK_S if self.o["tick_clock"] else t_s

    def scan_trigger(self, t0, running):
        # task_tick_numa at every tick: a thread past node_stamp + period triggers, adds the
        # period to node_stamp and queues the work if numa_next_scan has come; one still behind
        # triggers again at the next tick (a period just shortened: it catches up a period per
        # tick). Counted here tick by tick.
        T = self.T
        first_tick = [0] * T          # its first trigger tick
        ticks = [0] * T               # how many consecutive ticks trigger
        trig = [False] * T
        last = math.floor((t0 + self.dt) / TICK_S + 1e-6)
        for t in range(T):
            ps = self.period[t] / 1000.0
            thresh = self.node_stamp[t] + ps
            before = self.runtime[t] - (self.dt if running[t] else 0.0)
            trig[t] = running[t] and self.runtime[t] > thresh
            if not trig[t]:
                continue
            if not self.o["tick_clock"]:      # the 0.7.0 engine: one trigger, its crossing tick
                first_tick[t] = math.ceil((t0 + (thresh - before)) / TICK_S - 1e-6)
                ticks[t] = 1
                continue
            c = math.ceil((t0 + max(thresh - before, 0.0)) / TICK_S - 1e-6)
            first_tick[t] = c
            # at tick c + i the runtime is lag + i ticks past thresh, the threshold i periods
            # further: it triggers while lag > i * (period - tick) (tests/test_tick_triggers.py
            # counts it tick by tick)
            lag = (before + (c * TICK_S - t0)) - thresh
            n = min(math.ceil(lag / max(ps - TICK_S, TICK_S)), last - c + 1)
            ticks[t] = max(n, 1)
        if not any(trig):
            return
        for t in range(T):
            if trig[t]:
                ps = self.period[t] / 1000.0
                first = self.node_stamp[t] == 0
                if not self.o["tick_clock"]:
                    if first:
                        self.period[t] = self.scan_min(t)
                    self.node_stamp[t] = self.node_stamp[t] + self.period[t] / 1000.0
                    continue
                self.node_stamp[t] = self.node_stamp[t] + ticks[t] * ps
                if first:
                    self.period[t] = self.scan_min(t)
        for m in range(self.M):
            nxt = round(self.mm_next_scan[m] / TICK_S)
            best, win = None, None
            for t in range(T):
                if trig[t] and self.mm[t] == m:
                    at = max(first_tick[t], nxt)     # its first trigger tick at or after nxt
                    if at > first_tick[t] + ticks[t] - 1:
                        continue
                    key = (at, float(self.u_task[t]))
                    if best is None or key < best:
                        best, win = key, t
            if win is None:
                continue
            when = best[0] * TICK_S
            self.mm_next_scan[m] = when + self.period[win] / 1000.0
            self.node_stamp[win] = self.node_stamp[win] + 2 * TICK_S
            k = self.task_numa_work(m, win, when)
            self.kdebt[win] = self.kdebt[win] + k
            self.syst = self.syst + k
            self.node_stamp[win] = self.node_stamp[win] + 32 * k

    def visit(self, m, v, scanner, now, forced):
        """Suitability, lazy state, scan delay, rotation and the filter for one VMA; returns
        (reason, tentative state dict or None)."""
        wl, pol, o = self.wl, self.pol, self.o
        code = int(wl.vma_code[v])
        unsuitable = code == UNSUITABLE or self.bindp(scanner)
        shared_ro, inacc = code == SHARED_RO, code == INACCESSIBLE
        seq = self.mm_seq[m]
        if not pol.numab_state:
            reason = "unsuitable" if unsuitable else "shared_ro" if shared_ro else \
                "inaccessible" if inacc else "unfiltered"
            return reason, None
        st = self.state[v]
        st = None if st is None else {**st, "hist": [list(w) for w in st["hist"]]}
        delay = o["scan_delay_ms"] / 1000.0
        suit = not (unsuitable or shared_ro or inacc)
        if suit and st is None:
            hist, idx = H.empty(pol.windows, pol.width)
            # in jiffies: a delay ending at a pass's tick lets that pass scan (time_before)
            st = dict(next_scan=self.jiffies(now + delay), hist=hist, idx=idx, start_seq=seq,
                      prev_seq=seq - 1, select=0)
            st["reset"] = self.jiffies(st["next_scan"] + 4 * delay)
        due = False
        if st is not None:
            delayed = seq != 0 and now < st["next_scan"]
            due = suit and not delayed and seq != 0 and now > st["reset"]
            if pol.rotate_before_access and due:
                st["idx"] = H.rotate(st["hist"], st["idx"], pol.rotation)
                st["reset"] = self.jiffies(st["reset"] + 4 * delay)
        reason, sel = RP.visit(
            pol, st["hist"] if st else H.empty(pol.windows, pol.width)[0], st["idx"] if st else 0,
            self.tid[scanner], numa_scan_seq=seq, start_scan_seq=st["start_seq"] if st else 0,
            prev_scan_seq=st["prev_seq"] if st else 0, scan_offset=self.mm_offset[m],
            vm_start=int(wl.vma_start[v]), next_scan=(st["next_scan"] if st else 0.0) * 1000.0,
            now=now * 1000.0, nr_threads=self.nr_threads[m], forced=forced,
            vma_scan_select=st["select"] if st else 0, vm_end=int(wl.vma_end[v]),
            unsuitable=unsuitable, shared_ro=shared_ro, inaccessible=inacc)
        if st is not None:
            st["select"] = sel
            if not pol.rotate_before_access and due and self.allowed[reason]:
                st["idx"] = H.rotate(st["hist"], st["idx"], pol.rotation)
                st["reset"] = self.jiffies(st["reset"] + 4 * delay)
        return reason, st

    def history_stats(self, v, reason, st, scanner):
        """The access-PID history's counters of a buffer VMA's visit (engine.history_stats):
        the window a rotation retired, and the own-PID test's answer."""
        if self.wl.vma_kind[v] != "buffer":
            return
        pol, old = self.pol, self.state[v]
        if old is not None and st["reset"] > old["reset"]:
            cur = old["hist"][H.current_window_index(old["idx"], len(old["hist"]), pol.rotation)]
            self.cnt["pid_windows"] += 1
            self.cnt["pid_window_bits"] += H.popcount(cur)
        if pol.own_pid and reason not in ("unsuitable", "shared_ro", "inaccessible", "scan_delay"):
            self.cnt["pid_tests"] += 1
            union = H.union(st["hist"], st["idx"], None, pol.rotation)
            if H.test_bit(union, pid_bit(self.tid[scanner], pol.width)):
                self.cnt["pid_test_passes"] += 1

    def task_numa_work(self, m, scanner, now):
        vm = self.mm_vmas[m]
        vend = [int(self.wl.vma_end[v]) for v in vm]
        self.cnt["scan_runs"] += 1
        if self.mm_offset[m] >= vend[-1]:
            self.mm_seq[m] += 1
            self.mm_offset[m] = 0
        budget0 = self.o["scan_size_mb"] << 8
        k, retry, b_left, v_left = self.walk(m, scanner, now, forced=False, budget=budget0, virt=8 * budget0)
        if retry:
            if self.mm_offset[m] >= vend[-1]:
                self.mm_seq[m] += 1
                self.mm_offset[m] = 0
            k2, _, _, _ = self.walk(m, scanner, now, forced=True, budget=b_left, virt=v_left)
            k = k + k2
        return k

    def walk(self, m, scanner, now, *, forced, budget, virt):
        wl, pol = self.wl, self.pol
        vm = self.mm_vmas[m]
        seq = self.mm_seq[m]
        start = self.mm_offset[m]
        # decisions are taken against the state before this walk (the engine evaluates all
        # VMAs first); only visited VMAs keep their tentative state
        tentative = [self.visit(m, v, scanner, now, forced) for v in vm]
        pids_skipped = stopped = False
        pte = huge = walked = changed_any = 0
        completed_v = []
        kk = 0
        while kk < len(vm) and int(wl.vma_end[vm[kk]]) <= start:
            kk += 1
        newly = []
        while kk < len(vm):
            v = vm[kk]
            reason, st = tentative[kk]
            if pol.numab_state and st is not None:
                self.history_stats(v, reason, st, scanner)
                self.state[v] = st
            self.reasons[reason] += 1
            vstart, vend = int(wl.vma_start[v]), int(wl.vma_end[v])
            if not self.allowed[reason]:
                if reason == "seq_completed":
                    self.mm_offset[m] = vend
                if reason in self.pid_skip:
                    pids_skipped = True
                    if (scanner, self.phase[scanner], v) in self.writes:
                        self.cnt["false_skips"] += 1
                kk += 1
                continue
            if self.v_scanned[v] and not self.v_faulted[v]:
                self.cnt["idle_scans"] += 1
            self.v_scanned[v] = self.v_faulted[v] = False
            s = max(start, vstart)
            ra, rb = self.vma_first[v], self.vma_first[v + 1]
            completed = False
            while True:
                end = min(-(-(s + budget) // REGION_PAGES) * REGION_PAGES, vend)
                q0 = ra + (s - vstart) // REGION_PAGES
                q1 = min(ra + -(-(end - vstart) // REGION_PAGES), rb)
                chg = [q for q in range(q0, q1) if self.present[q] > 0 and not self.prot[q]]
                if chg:
                    for q in chg:
                        self.prot[q] = True
                        if self.wl.vma_kind[v] == "buffer":
                            self.cnt["buffer_protections"] += 1
                        pte += self.present[q]
                        huge += int(self.huge[q])
                    newly += chg
                    budget -= end - s
                    changed_any = 1
                    self.v_scanned[v] = True
                virt -= end - s
                walked += end - s
                s = end
                if budget <= 0 or virt <= 0:
                    stopped = True
                    break
                if end == vend:
                    completed = True
                    break
            start = s
            if stopped:
                break
            if completed and pol.numab_state:
                completed_v.append(v)
            if forced:
                break
            kk += 1
        for v in completed_v:
            self.state[v]["prev_seq"] = seq
        ran_off = kk >= len(vm) and not stopped
        retry = ran_off and not forced and pids_skipped and pol.forced_one
        if not ran_off:
            self.mm_offset[m] = start
        elif not retry:
            self.mm_seq[m] += 1
            self.mm_offset[m] = 0
        for q in newly:
            a, b = self.u_prot[self.slot]
            self.slot += 1
            self.thresh[q] = -math.log1p(-float(a))
            self.hazard[q] = 0.0
            self.sel[q] = float(b)
        self.cnt["numa_pte_updates"] += pte
        self.cnt["numa_huge_pte_updates"] += huge
        return self.costs.scan_time_s(pte, huge, walked, changed_any), retry, budget, virt

    # ------------------------------------------------------------------ faults
    def faults(self, now, running):
        hits = []
        for q in range(self.NR):
            if not self.prot[q]:
                continue
            c = self.rclass[q]
            if self.cls_sweep[c]:
                t = self.first_arrival(q, running)
                if t is not None and not self.done:
                    hits.append((q, t))
                continue
            lam = self.lam_c[c]
            h = self.hazard[q] + lam * self.dt
            self.hazard[q] = h
            if h >= self.thresh[q] and lam > 0 and not self.done:
                target = self.cum[self.cls_start[c]] + self.sel[q] * lam
                e = self.cls_start[c]
                for pos in range(self.cls_start[c] + 1, self.cls_end[c]):
                    if self.cum[pos] <= target:
                        e += 1
                hits.append((q, int(self.wl.entry_thread[e])))
        if not hits:
            return
        for q, _ in hits:
            self.prot[q] = False
        self.handle(hits, now)

    def pieces(self, t, running):
        """The thread's sweep pieces of this step: (phase, position, bytes written, start s)."""
        pb = self.wl.phase_bytes
        ph0, left0, used = self.phase0[t], self.left0[t], self.used[t]
        out = []
        if not running[t] or ph0 not in (PH_INIT, PH_LOOP):
            return out
        ph1, left1 = self.phase[t], self.left[t]
        x = float(pb[t, 0] if ph0 == PH_INIT else pb[t, 1]) - left0
        if ph0 == PH_LOOP:
            x = x + self.sweep_phase[t]
        w = left0 - left1 if ph1 == ph0 else max(left0, 0.0)
        out.append((ph0, x, w, used))
        if ph0 == PH_INIT and ph1 == PH_LOOP:
            tau = used + max(left0, 0.0) / max(self.speed[t], 1e-30)
            out.append((PH_LOOP, self.sweep_phase[t], float(pb[t, 1]) - left1, tau))
        return out

    def first_arrival(self, q, running):
        """The thread whose sweep crossed region q first this step, or None."""
        RB = REGION_PAGES * 4096
        best = None
        for (t, ph, r0, kf, kl, lo, hi, sig, rng) in self.segs:
            k = q - r0
            if k < kf or k > kl:
                continue
            for (pph, x, w, tau) in self.pieces(t, running):
                if pph != ph or not w > 0:
                    continue
                p = sig + max(0.0, k * float(RB) - lo)
                d = float(np.mod(p - float(np.mod(x, rng)), rng))
                if not d < w:
                    continue
                when = tau + d / max(self.speed[t], 1e-30)
                if best is None or (when, t) < best:
                    best = (when, t)
        return None if best is None else best[1]

    def handle(self, hits, now):
        pol, costs = self.pol, self.costs
        gm, gc, gsize = self.gstats()
        recs = []
        start_pages = list(self.node_pages)
        claimed = {}
        for q, t in hits:
            v = self.rvma[q]
            cn, fn = self.node[t], self.r_node[q]
            pages = self.present[q]
            if pol.numab_state and self.state[v] is not None:
                st = self.state[v]
                H.set_pid_bit(st["hist"], st["idx"], self.tid[t], pol.width, pol.rotation)
            self.v_faulted[v] = True
            inc = 1 if self.huge[q] else pages
            local = fn == cn
            self.cnt["numa_hint_faults"] += inc
            if local:
                self.cnt["numa_hint_faults_local"] += inc
            kt = costs.hint_fault_us * 1e-6 * inc
            last8, lset, lnode, ltask = self.last8[q], self.last_set[q], self.last_node[q], self.last_task[q]
            my8 = self.tid[t] & 0xFF
            check = not self.bindp(t) and not local
            unset, mine = last8 == PID_UNSET, last8 == my8
            early = (self.preferred[t] == NO_NODE or self.task_seq[t] <= 4) and (unset or mine)
            fail2 = (not unset) and lnode != cn
            g = self.group[t]
            if g >= 0:
                gcd, gcs = float(np.sum(np.array(gc[g][cn]))), float(np.sum(np.array(gc[g][fn])))
                gmd, gms = float(np.sum(np.array(gm[g][cn]))), float(np.sum(np.array(gm[g][fn])))
                grp_ok = gcd > 3 * gcs or 3 * gcd * gms > 4 * gcs * gmd
            else:
                grp_ok = False
            want = check and (early or (not fail2 and (mine or g < 0 or grp_ok)))
            migrate = failed = False
            if want:   # migrate_balanced_pgdat against the batch's starting residency
                claimed[cn] = claimed.get(cn, 0) + pages
                migrate = start_pages[cn] + claimed[cn] <= self.node_cap[cn]
                failed = not migrate
            if check:
                self.last8[q], self.last_set[q], self.last_node[q], self.last_task[q] = my8, True, cn, t
            if migrate:
                self.r_node[q] = cn
                self.dirty = True
                c = self.rclass[q]
                self.cls_node[c][fn] -= 1
                self.cls_node[c][cn] += 1
                self.cnt["numa_pages_migrated"] += pages
                self.node_pages[fn] -= pages
                self.node_pages[cn] += pages
                kt = kt + costs.migrate_time_s(pages, 1)
            mem_node = cn if migrate else fn
            self.kdebt[t] = self.kdebt[t] + kt
            self.syst = self.syst + kt
            priv = (not lset) or last8 == my8
            recs.append(dict(q=q, t=t, cn=cn, mem_node=mem_node, pages=pages, local=local, priv=priv,
                             last8=last8, ltask=ltask, failed=failed))
        # numa groups: creation for every shared fault first, then joins against those sizes
        shared = [r for r in recs if not r["priv"]]
        if shared:
            for r in shared:
                if self.group[r["t"]] < 0:
                    self.group[r["t"]] = r["t"]
            gm, gc, gsize = self.gstats()
            joins = {}
            for r in shared:
                t, lt = r["t"], r["ltask"]
                if lt < 0 or t in joins:
                    continue
                lg, my = self.group[lt], self.group[t]
                if lg < 0 or lg == my or self.mm[lt] != self.mm[t] or (self.tid[lt] & 0xFF) != r["last8"]:
                    continue
                if gsize[my] < gsize[lg] or (gsize[my] == gsize[lg] and my > lg):
                    joins[t] = lg
            for t, lg in joins.items():
                self.group[t] = lg
                self.cnt["group_joins"] += 1
            gm, gc, gsize = self.gstats()
        # placement, for every faulting task whose retry time passed, all at once
        due = [t for t in sorted({r["t"] for r in recs}) if now > self.retry[t]]
        if due:
            self.placement(due, now, gm, gsize)
        # buffers
        gm, gc, gsize = self.gstats()
        for r in recs:
            t, cn, mn, pages = r["t"], r["cn"], r["mem_node"], r["pages"]
            flocal = r["local"]
            g = self.group[t]
            if not r["priv"] and not flocal and g >= 0:
                tot = [float(np.sum(np.array(gc[g][n]))) for n in range(self.N)]
                mx = max(tot)
                act = [3 * x > mx for x in tot]
                if sum(act) > 1 and act[cn] and act[mn]:
                    flocal = True
            p = int(r["priv"])
            self.b_mem[t][mn][p] += pages
            self.b_cpu[t][cn][p] += pages
            self.loc[t][int(flocal)] += pages
            if r["failed"]:
                self.loc[t][2] += pages
                self.cnt["numa_migrate_fail"] += 1
            self.has_faults[t] = True

    def placement(self, due, now, gm, gsize):
        """task_numa_placement for the due tasks (each once per mm sequence), evaluated together:
        scan maxima from the group sums before, preferred nodes from the sums after all of
        them have folded their buffers; then numa_migrate_preferred."""
        go = [t for t in due if self.task_seq[t] != self.mm_seq[self.mm[t]]]
        ftypes = {}
        for t in go:
            self.task_seq[t] = self.mm_seq[self.mm[t]]
            self.period_max[t] = self.scan_max(t, gm, gsize)
        for t in go:
            total = float(self.loc[t][0] + self.loc[t][1])
            runtime = self.runtime[t] - self.last_place_run[t]
            period = now - self.last_place_t[t]
            self.last_place_run[t] = self.runtime[t]
            self.last_place_t[t] = now
            ftypes[t] = [float(np.sum(np.array([float(self.b_mem[t][n][p]) for n in range(self.N)])))
                         for p in range(2)]
            f = 65536.0 * runtime / (period + 1e-9)
            for n in range(self.N):
                for p in range(2):
                    bm, bc = float(self.b_mem[t][n][p]), float(self.b_cpu[t][n][p])
                    w = f * bc / (total + 1)
                    diff = bm - self.f_mem[t][n][p] / 2
                    fdiff = w - self.f_cpu[t][n][p] / 2
                    self.f_mem[t][n][p] = self.f_mem[t][n][p] + diff
                    self.f_cpu[t][n][p] = self.f_cpu[t][n][p] + fdiff
                    self.b_mem[t][n][p] = self.b_cpu[t][n][p] = 0
        if go:
            gm2, _, _ = self.gstats()
            for t in go:
                g = self.group[t]
                src = gm2[g] if g >= 0 else self.f_mem[t]
                score = [float(np.sum(np.array(src[n]))) for n in range(self.N)]
                best = int(np.argmax(score))
                if score[best] > 0:   # never a CPU-less node: its nearest node with CPUs instead
                    self.preferred[t] = nearest_node(self.topo, best, lambda m: self.node_cpus[m] > 0)
            for t in go:
                self.update_scan_period(t, int(ftypes[t][0]), int(ftypes[t][1]))
        for t in due:
            self.retry[t] = now + min(1.0, self.period[t] / 16.0 / 1000.0)
            if self.preferred[t] != NO_NODE and self.node[t] != self.preferred[t] and self.wl.cpu_bind[t] < 0:
                self.want.add(t)

    def update_scan_period(self, t, shared, private):
        remote, local, failed = self.loc[t]
        smin = self.scan_min(t)
        smax = self.period_max[t]
        per = self.period[t]
        if local + shared == 0 or failed > 0:
            self.period[t] = min(smax, 2 * per)
            self.mm_next_scan[self.mm[t]] = self.now + self.dt + self.period[t] / 1000.0
            if not self.o["sticky_locality"]:
                self.loc[t] = [0, 0, 0]
            return
        slot = -(-per // 10)
        lr = local * 10 // max(local + remote, 1)
        ps = private * 10 // max(private + shared, 1)
        if ps >= 7:
            diff = max(ps - 7, 1) * slot
        elif lr >= 7:
            diff = max(lr - 7, 1) * slot
        else:
            diff = -(7 - max(lr, ps)) * slot
        self.period[t] = min(max(per + diff, smin), max(smin, smax))
        self.loc[t] = [0, 0, 0]

    # ------------------------------------------------------------------ task moves
    def move_tasks(self):
        if not self.want:
            return
        want, self.want = self.want, set()
        N, T = self.N, self.T
        cap = self.node_cpus
        running = [self.running(t) for t in range(T)]
        gm, gc, gsize = self.gstats()

        def shares(vec):
            a = np.array(vec)
            return a / max(float(np.sum(a)), 1e-9)

        own = [[float(np.sum(np.array(self.f_mem[t][n]))) for n in range(N)] for t in range(T)]
        sc = []
        for t in range(T):
            g = self.group[t]
            sc.append(shares([float(np.sum(np.array(gm[g][n]))) for n in range(N)]) if g >= 0 else shares(own[t]))
        own_n = [shares(own[t]) for t in range(T)]
        moved = [False] * T
        load = [sum(1 for t in range(T) if self.node[t] == n and running[t]) for n in range(N)]
        cand = sorted((t for t in want if running[t]), key=lambda t: (float(self.u_task[t]), t))
        for t in cand:
            if moved[t]:
                continue
            a, b = self.node[t], self.preferred[t]
            spare = load[b] < cap[b]                      # an idle CPU on the preferred node
            maymove = self.o["numa_maymove"]
            # task_numa_find_cpu's maymove (equal loads): fewer tasks there than here (the mover
            # counted here), or as many and below imb_numa_nr = max(1, cpus / 8)
            if spare and (not maymove or load[b] < load[a]
                          or (load[b] == load[a] and load[b] + 1 <= max(1, cap[b] // 8))):
                self.move(t, b)
                load[a] -= 1
                load[b] += 1
                moved[t] = True
                continue
            kernel = self.o["stick_numa"]
            best, bj = None, None
            for q in range(T if self.o["task_swaps"] else 0):
                if spare and maymove and self.group[q] == self.group[t]:
                    continue                              # no swap in a group into spare capacity
                if self.node[q] == b and running[q] and not moved[q] and self.wl.cpu_bind[q] < 0:
                    same = self.group[q] == self.group[t] and self.group[t] >= 0
                    both = self.group[q] >= 0 and self.group[t] >= 0
                    # task_numa_compare: the partner's group shares only when both have a group
                    sq = own_n[q] if same or (kernel and not both) else sc[q]
                    st = own_n[t][b] - own_n[t][a] if same else sc[t][b] - sc[t][a]
                    tot = st + (sq[a] - sq[b])
                    if kernel:
                        if same:
                            tot = tot - tot / 16          # hysteresis inside a group
                        if self.preferred[q] == b:
                            tot = tot - tot / 16          # a partner already where it wants to be
                        if self.preferred[q] == a:
                            tot = tot + tot / 8           # a partner that wants to go to a
                    if best is None or tot > best:
                        best, bj = tot, q
            if bj is not None and (best >= 0.03 if kernel else best > 0):
                self.move(t, b)
                self.move(bj, a)
                moved[t] = moved[bj] = True
            else:                                         # no CPU found: sched_stick_numa
                self.cnt["numa_sticks"] += 1
                if kernel and self.group[t] >= 0:
                    self.preferred[t] = a                 # a grouped task prefers where it is

    def lb_moves(self):
        """The load balancer's cross-node pulls (docs/engine.md step 5b), task by task."""
        p = self.o["lb_migrate_hz"] * self.dt
        if p <= 0 or len(self.cpu_nodes) < 2:
            return
        T, N, cap = self.T, len(self.cpu_nodes), self.node_cpus
        running = [self.running(t) and not self.done for t in range(T)]
        free = [int(self.wl.cpu_bind[t]) < 0 for t in range(T)]
        ev = [t for t in range(T) if running[t] and free[t] and float(self.u_lb[t]) < p]
        if not ev:
            return
        load = [sum(1 for t in range(T) if running[t] and self.node[t] == n) for n in range(self.N)]
        for t in ev:
            v = float(self.u_lb[t]) / p
            a = self.node[t]
            x = v * (N - 1)
            k = min(int(x), N - 2)
            w = x - k
            dst = [n for n in self.cpu_nodes if n != a][k]   # the k-th other node with CPUs
            if load[dst] < cap[dst]:
                self.move(t, dst, lb=True)
                load[a] -= 1
                load[dst] += 1
                continue
            q = [j for j in range(T) if self.node[j] == dst and running[j] and free[j]]
            if not q:
                continue
            j = q[min(int(w * len(q)), len(q) - 1)]
            if self.o["lb_refill_locality"] and self.preferred[j] == dst and self.preferred[t] != dst:
                # the resident j waits (the arrival preempts it), but migrate_degrades_locality
                # vetoes moving it off its preferred node while t does not prefer dst: t goes back
                j = t
            self.move(t, dst, lb=True)
            self.move(j, a, lb=True)

    def move(self, t, dst, lb=False):
        src = self.node[t]
        if src == dst:
            return
        if self.has_faults[t]:
            pref = self.preferred[t]
            reset = True
            if self.task_seq[t] and (dst == pref or (pref != NO_NODE and src != pref)):
                reset = False
            if reset:
                gm, gc, gsize = self.gstats()
                self.period[t] = self.scan_start(t, gm, gsize)
                self.cnt["scan_period_resets"] += 1
        self.node[t] = dst
        self.dirty = True
        kt = self.costs.task_migration_us * 1e-6
        self.kdebt[t] = self.kdebt[t] + kt
        self.syst = self.syst + kt
        self.cnt["lb_migrations" if lb else "task_migrations"] += 1

    def run(self, max_steps=None):
        steps = 0
        while not self.done and self.now < self.o["max_time"]:
            if max_steps is not None and steps >= max_steps:
                break
            self.step()
            steps += 1
        if not self.done:
            self.elsp = self.now
        return self


def run(wl, policy, seed, o: dict, costs: Costs, max_steps=None) -> Replica:
    """Run one replica to the end (or ``max_steps``); returns it (``cnt``, ``reasons``, ``elsp``,
    ``syst``, ``r_node``)."""
    return Replica(wl, policy, seed, o, costs).run(max_steps)

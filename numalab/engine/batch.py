"""A batch: R replicas (one per seed) of one workload under one policy, advanced together.

:meth:`Batch.step` is the order of events of one step of ``dt`` seconds, one phase call per
kernel mechanism (docs/engine.md has the algorithm in full):

1. **draws** -- this step's uniforms, fixed shape per replica: ``u_prot`` (K, 2), ``u_task``
   (T,), ``u_lb`` (T,) from the replica's own Generator;
2. **progress** (:mod:`.progress`) -- threads write at the speed their memory placement gives;
3. **scan** (:mod:`.scan`) -- ``task_tick_numa`` triggers, ``task_numa_work`` runs;
4. **faults** (:mod:`.faults`) -- hinting faults on PROT_NONE regions, migration,
   ``task_numa_fault`` (numa groups :mod:`.groups`, placement :mod:`.placement`, scan period
   :mod:`.scan_period`);
5. **placement** -- ``numa_migrate_preferred`` moves and swaps, then the load balancer's
   cross-node pulls (:mod:`.balance`);
6. **observe** (:mod:`.observe`) -- the run's end, invariants; samples in :meth:`Batch.run`.

All per-replica arithmetic is elementwise or reduces over non-replica axes in a fixed order,
and the only randomness is the replica's Generator drawn in fixed shapes, so a seed's results
are identical in any batch.
"""

from __future__ import annotations

import numpy as np

from .. import history as hist
from ..adaptive import hooks_for
from ..errors import NumalabValueError, check_choice, check_int
from ..workloads import PH_DONE, PH_INIT, PH_LOOP, PH_WAIT
from . import balance, faults, memory, observe, placement, progress, quiet, scan
from .layout import Layout
from .state import (PID_UNSET, Counters, Draws, MmNuma, NumaGroups, Observations, Outcome, Protected,
                    Rates, Regions, StepContext, TaskNuma, Tasks, VmaNumab)

__all__ = ["Batch", "draws", "DRAW_BLOCK"]

DRAW_BLOCK = 32            # steps of random numbers drawn per Generator call (same stream)
#: the engines a batch can run on (Batch.kernel)
KERNELS = ("auto", "numpy", "numba")
SERIES = ("pages_node", "local_fraction", "scan_period", "faults", "converged_fraction")


class Batch:
    """State of R replicas (one per seed) of one workload under one policy.

    ``lay`` the static :class:`.layout.Layout` (shared by the batches of one simulate call),
    ``o`` the :class:`.options.EngineOptions`, ``costs`` the :class:`numalab.costs.Costs`,
    ``rule`` the adaptive rule's hook object; the state is one dataclass per kernel structure
    (:mod:`.state`): ``tasks``, ``numa``, ``groups``, ``mm``, ``vmas``, ``regions``, ``prot``,
    ``counters``, ``outcome``, ``rates``, ``obs``, ``draw``. ``now`` is the clock (s)."""

    def __init__(self, lay: Layout, policy, seeds, opts, costs, kernel: str = "auto"):
        self.lay, self.wl, self.topo = lay, lay.wl, lay.topo
        # "auto": the compiled steps (numalab.engine.compiled) when numba is there and the batch
        # allows them, else numpy's; "numpy": numpy's (the oracle); "numba": compiled or an error
        self.kernel = check_choice("kernel", kernel, KERNELS)
        self.pol, self.o, self.costs = policy, opts, costs
        self.rule = hooks_for(policy.adapt, policy.decisions)          # chosen once: no rule-name tests per scan
        self.seeds = list(seeds)
        self.R = len(self.seeds)
        self.rng = [np.random.default_rng(s) for s in self.seeds]
        self.dt = opts.dt
        self.now = 0.0
        self.steps = 0
        # optional observer of task_numa_work runs and VMA visits (numalab.engine.tracing); it only
        # reads engine state, so a traced run gives the same numbers as an untraced one
        self.tracer = None
        # take stretches of quiet steps in one go (the same state; False steps one by one,
        # the oracle the tests compare with)
        self.jump_quiet = True
        init_node, pid_base, perm, phi = self._seed_draws()
        self._init_tasks(init_node, pid_base, perm, phi)
        self._init_memory(init_node)
        self._init_rest()

    # ------------------------------------------------------------------ initial state
    def _seed_draws(self):
        """Per-seed draws, fixed order: init node (node B: one of the nodes with CPUs), pid base,
        CPU permutation, each thread's sweep phase (a uniform per thread, used by the threads
        whose loop range is shared; drawn only with option ``first_arrival``, so that without it
        a seed draws what it drew before). The option ``init_node`` may name any node with
        memory, a memory-only one included (numa01's init bound there); the main threads then
        run on its nearest node with CPUs."""
        R, N, o, ncpus, T = self.R, self.lay.N, self.o, self.topo.ncpus, self.lay.T
        cpu_nodes = self.topo.cpu_nodes
        init_node = np.zeros(R, dtype=np.int64)
        pid_base = np.zeros(R, dtype=np.int64)
        perm = np.zeros((R, ncpus), dtype=np.int64)
        phi = np.zeros((R, T))
        for i, g in enumerate(self.rng):
            init_node[i] = cpu_nodes[g.integers(cpu_nodes.size)]
            pid_base[i] = g.integers(o.pid_lo, o.pid_hi)
            perm[i] = g.permutation(ncpus)
            if o.first_arrival:
                phi[i] = g.random(T)
        if o.init_node is not None:
            init_node[:] = check_int("init_node", o.init_node, lo=0, hi=N - 1)
            if not self.topo.has_memory[o.init_node]:
                raise NumalabValueError(f"init_node={o.init_node} has no memory on topology {self.topo.name!r}; "
                                        f"allowed: a node with memory, {np.flatnonzero(self.topo.has_memory).tolist()}")
        if o.pid_base is not None:
            pid_base[:] = o.pid_base
        return init_node.astype(np.int64), pid_base, perm, phi

    def _init_tasks(self, init_node, pid_base, perm, phi):
        wl, lay, o, R, T, N = self.wl, self.lay, self.o, self.R, self.lay.T, self.lay.N
        tid = (pid_base[:, None] + wl.thread_tid_offset[None, :]).astype(np.int64)
        # each task's bit in the access-PID maps (history.bit_masks), fixed for the run
        tid_word, tid_mask = hist.bit_masks(tid.astype(np.uint32), self.pol.width)
        node = np.zeros((R, T), dtype=np.int64)
        node[:, lay.workers] = lay.cpu_node[perm[:, np.arange(lay.workers.size) % self.topo.ncpus]]
        # the main threads run on node B (numa02's first touch lands there), or on the nearest
        # node with CPUs to a memory-only init_node
        node[:, lay.mains] = self.topo.nearest_cpu_node.take(init_node)[:, None]
        bound = wl.cpu_bind >= 0
        node[:, bound] = wl.cpu_bind[bound]
        phase = np.where(wl.phase_bytes[:, 0] > 0, PH_INIT, np.where(wl.phase_bytes[:, 1] > 0, PH_LOOP, PH_DONE))
        phase = np.where(wl.waits_for_main, PH_WAIT, phase)
        phase = np.broadcast_to(phase, (R, T)).astype(np.int64).copy()
        bytes_left = np.where(phase == PH_INIT, wl.phase_bytes[:, 0], wl.phase_bytes[:, 1]).astype(float)
        self.tasks = Tasks(tid=tid, pid8=tid & 0xFF, tid_word=tid_word, tid_mask=tid_mask, node=node, phase=phase,
                           bytes_left=np.where(phase == PH_DONE, 0.0, bytes_left),
                           finish=np.where(phase == PH_DONE, 0.0, np.nan), runtime=np.zeros((R, T)),
                           kdebt=np.zeros((R, T)), ksys=np.zeros((R, T)),
                           sweep_phase=self._sweep_phase(phi))
        if o.first_touch_wait and wl.zero_bytes_init > 0:
            # the init's first touches zero each new folio in the faulting writer's time: the
            # threads that start in their init share the zeroing (clear_huge_page) as kernel debt
            init0 = phase == PH_INIT
            n = int(np.count_nonzero(init0[0]))
            if n:
                self.tasks.kdebt[init0] = wl.zero_bytes_init / n / (self.costs.zero_GBps * 1e9)
        # clone staggers each new thread's first trigger by 2 ticks (init_numa_balancing)
        stamp = np.where(wl.thread_main, 0.0, 2 * scan.TICK_S)[None, :].repeat(R, 0)
        self.numa = TaskNuma.fresh(R, T, N, o.scan_delay_ms, o.scan_period_max_ms, stamp)
        self.groups = NumaGroups(gid=np.full((R, T), -1, dtype=np.int64))
        M = lay.M
        self.mm = MmNuma(numa_next_scan=np.full((R, M), o.scan_delay_ms / 1000.0),
                         numa_scan_offset=np.zeros((R, M), dtype=np.int64),
                         numa_scan_seq=np.zeros((R, M), dtype=np.int64))
        V = lay.V
        pids, pidx = hist.empty((R, V), self.pol.windows, self.pol.width)
        z = lambda dtype=float: np.zeros((R, V), dtype=dtype)   # noqa: E731
        self.vmas = VmaNumab(pids_active=pids, pids_idx=pidx, has_state=z(bool), next_scan=z(),
                             pids_active_reset=z(), start_scan_seq=z(np.int64), prev_scan_seq=z(np.int64),
                             scan_select=z(np.int64), scanned=z(bool), faulted=z(bool),
                             adapt=self.rule.init_state(R, M, V))

    def _sweep_phase(self, phi):
        """Where each thread's loop sweep starts, bytes into its range. Threads writing a shared
        range (numa01's buffer) sweep it as independent streams: the cost model charges each its
        own DRAM traffic, which holds only when the writers are far apart in the buffer, not
        bunched on the same cache lines; so each starts at an independent uniform phase
        (``phi``) of its range. With option ``sweep_convoy`` they start together, at 0, as they
        leave the init sweep together (docs/fidelity.md, "numa01's writers on real hardware"),
        ``phi`` drawn all the same so that the seed's other draws do not move. A thread alone on
        its range starts at its beginning."""
        if self.o.sweep_convoy:
            return np.zeros_like(phi)
        return np.where(self.lay.loop_shared[None, :], phi * self.lay.loop_range[None, :], 0.0)

    def _init_memory(self, init_node):
        """First touch: each region starts where :func:`.memory.first_touch` puts it (node B, a
        binding, or where the main thread's or its owner's first touch lands); the counts per
        class and node follow (:func:`.memory.counts`)."""
        R, NR = self.R, self.lay.NR
        r_node = memory.first_touch(self, init_node)
        z = lambda dtype=float: np.zeros((R, NR), dtype=dtype)   # noqa: E731
        self.regions = Regions(
            node=r_node, prot_none=z(bool), thresh=z(), hazard=z(), selector=z(),
            last_pid8=np.full((R, NR), PID_UNSET, dtype=np.int64), last_set=z(bool), last_node=z(np.int64),
            last_task=np.full((R, NR), -1, dtype=np.int64), **memory.counts(self.lay, r_node))
        self.prot = Protected.empty()

    def _init_rest(self):
        R, T, N, C, E = self.R, self.lay.T, self.lay.N, self.lay.C, self.lay.E
        self.counters = Counters.zeros(R, len(self.pol.decisions), self.wl.zero_bytes_init / (self.costs.zero_GBps * 1e9))
        self.outcome = Outcome(done=np.zeros(R, dtype=bool), elsp=np.full(R, np.nan))
        self.obs = Observations(series={k: [] for k in SERIES}, series_t=[], conv_acc=np.zeros((R, C, N)),
                                conv_stale=np.ones(R, dtype=bool), fault_acc=np.zeros(R, dtype=np.int64),
                                local_acc=np.zeros(R), local_w=np.zeros(R))
        self.rates = Rates(dirty=np.ones(R, dtype=bool), frac=np.zeros((R, T, N)), speed=np.zeros((R, T)),
                           cum=np.zeros((R, E + 1)), lam_c=np.zeros((R, C)),
                           rt_base=np.arange(R * T, dtype=np.int64).reshape(R, T) * N)  # flat (r, t, 0) of frac
        self.draw = Draws()

    # ------------------------------------------------------------------ the step
    def step(self):
        """One step of ``dt``: the kernel's order of events."""
        ctx = self.begin_step()
        progress.run_threads(self, ctx)             # threads run and write; kernel debt paid
        scan.scan_trigger(self, ctx)                # task_tick_numa -> task_numa_work
        faults.hinting_faults(self, ctx)            # do_numa_page -> migrate -> task_numa_fault
        placement.numa_migrate_preferred(self, ctx)  # moves and swaps to the preferred node
        balance.lb_moves(self, ctx.u_lb)            # the load balancer's cross-node pulls
        self.end_step(ctx)

    def begin_step(self) -> StepContext:
        """The step's context: its times, who runs, and its draws."""
        live = ~self.outcome.done
        u_prot, u_task, u_lb = draws(self)      # fixed order and shapes, finished replicas too
        return StepContext(t0=self.now, t1=self.now + self.dt, live=live,
                           running=progress.running_mask(self) & live[:, None], u_prot=u_prot, u_task=u_task,
                           u_lb=u_lb, slot=np.zeros(self.R, dtype=np.int64))

    def end_step(self, ctx):
        """Advance the clock; replicas whose threads all finished are done (elapsed = last
        thread's finish, plus the harness overhead); invariants every 20 steps."""
        self.now = ctx.t1
        self.steps += 1
        # every thread PH_DONE implies none running (running_mask: PH_INIT / PH_LOOP)
        newly = ctx.live & np.all(self.tasks.phase == PH_DONE, axis=1)
        if np.count_nonzero(newly):
            overhead = self.costs.harness_overhead_s if self.o.harness_overhead else 0.0
            self.outcome.elsp[newly] = np.nanmax(self.tasks.finish[newly], axis=1) + overhead
            self.outcome.done |= newly
            self.rates.dirty |= newly
        if self.o.check_invariants and self.steps % 20 == 0:
            observe.check_invariants(self)

    def compiled(self) -> bool:
        """Whether :meth:`run` takes the compiled steps (:mod:`numalab.engine.compiled`): kernel
        "auto" when numba imports (and ``NUMALAB_JIT`` is not 0) and the batch has no tracer or
        user rule; kernel "numba" requires it."""
        if self.kernel == "numpy":
            return False
        from . import compiled
        why = "numba is not installed (pip install 'numalab[fast]') or NUMALAB_JIT=0" \
            if not compiled.available() else compiled.unsupported(self)
        if why is not None and self.kernel == "numba":
            raise NumalabValueError(f"kernel='numba' cannot run this batch: {why}; allowed: kernel='auto' or 'numpy'")
        return why is None

    def run(self):
        """Step until every replica is done or ``max_time``; sample every ``time_resolution``.
        Stretches of quiet steps (:mod:`.quiet`) are taken in one go, with the same result; with
        the compiled steps (:meth:`compiled`) every step is taken, compiled, with the same result."""
        if self.steps == 0 and self.compiled():
            from .compiled.loop import run
            return run(self)
        res = self.o.time_resolution
        next_sample = 0.0
        # a stretch is looked for after a step that took no fault and protected nothing (the
        # index of protected regions is the same object), or after a stretch that ended at a
        # sample rather than at an event: events come in runs, and a plan that fails costs
        plan_next = self.jump_quiet
        while np.count_nonzero(self.outcome.done) < self.outcome.done.size:  # not all done
            if self.now >= next_sample - 1e-9:
                observe.sample(self)
                next_sample += res
            if self.now >= self.o.max_time:
                break
            q = quiet.plan(self, next_sample) if plan_next else None
            if q is not None:
                quiet.skip(self, q)
                plan_next = not q.cut
            else:
                idx = self.prot.idx
                self.step()
                plan_next = self.jump_quiet and self.prot.idx is idx
        observe.sample(self)
        if self.o.check_invariants:
            observe.check_invariants(self)
        # unfinished replicas: elapsed so far, flagged
        self.outcome.finished = self.outcome.done.copy()
        self.outcome.elsp = np.where(self.outcome.done, self.outcome.elsp, self.now)
        return self

    def _coming_times(self, next_sample):
        """The clock after each of the coming steps, up to the first at which the run loop
        samples or stops, and no further than the rows of draws left in the block."""
        d = self.draw
        if d.block is None or d.pos >= d.block.shape[1]:
            _draw_block(self)                    # the next step draws them anyway
        times = []
        t, stop, dt, max_time = self.now, next_sample - 1e-9, self.dt, self.o.max_time
        for _ in range(d.block.shape[1] - d.pos):
            t = t + dt                           # the clock as end_step advances it
            times.append(t)
            if t >= stop or t >= max_time:
                break
        return times

    @property
    def elsp(self):
        """(R,) elapsed seconds (NaN until done; after :meth:`run`, the time reached if not done)."""
        return self.outcome.elsp

    @property
    def syst(self):
        """(R,) kernel CPU seconds."""
        return self.counters.syst

    @property
    def cnt(self):
        """Counter name -> (R,) int64 (the table of :mod:`numalab.counters`)."""
        return self.counters.events


def draws(b):
    """This step's random numbers: per replica, ``2*K + 2*T`` float64 uniforms from its own
    Generator -- ``u_prot`` (K, 2): one (threshold, selector) pair for each region the
    step's scans make PROT_NONE, in protection order (K bounds what one step can protect);
    then ``u_task`` (T,) and ``u_lb`` (T,). Drawn in blocks of ``DRAW_BLOCK`` steps (one
    ``random((k, n))`` call), which yields exactly the same stream as one ``random(n)`` call
    per step: a float64 uniform takes one 64-bit output."""
    K, T = b.lay.K, b.lay.T
    d = b.draw
    if d.block is None or d.pos >= d.block.shape[1]:
        _draw_block(b)
    blk = d.block[:, d.pos]
    d.pos += 1
    return blk[:, :2 * K].reshape(b.R, K, 2), blk[:, 2 * K:2 * K + T], blk[:, 2 * K + T:]


def _draw_block(b):
    """The next ``DRAW_BLOCK`` steps' uniforms of every replica (one Generator call each)."""
    d = b.draw
    if d.block is None:
        d.block = np.empty((b.R, DRAW_BLOCK, 2 * b.lay.K + 2 * b.lay.T))     # (R, k, n), reused
    for i, g in enumerate(b.rng):
        g.random(out=d.block[i])
    d.pos = 0

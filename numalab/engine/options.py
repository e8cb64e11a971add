"""Engine options: the sysctls of automatic NUMA balancing, the model's step and horizon, and one
off-switch per mechanism, as ONE frozen dataclass (:class:`EngineOptions`).

Every field carries its default, its bounds and its doc (``dataclasses.field(metadata=...)``);
:meth:`EngineOptions.describe` lists them, and is where the CLI, sweeps and widgets learn the
option names. :data:`DEFAULTS` is the same table as a plain dict (the sweeps' numa runner reads it).

Kernel sysctls modelled (``kernel/sched/fair.c``, spec §3.1): ``numa_balancing_scan_delay_ms``,
``numa_balancing_scan_period_min_ms``, ``numa_balancing_scan_period_max_ms``,
``numa_balancing_scan_size_mb``. The off-switches remove one mechanism each so that its share
of a result can be measured (the ablation table of ``docs/engine.md``); with every switch at
its default the engine is exactly the model as calibrated.
"""

from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from ..errors import NumalabValueError, check_int, check_number, coerce_dataclass
from ..provenance import Provenance

__all__ = ["EngineOptions", "DEFAULTS", "LB_MIGRATE_HZ", "SWITCHES", "option_fields"]

#: Cross-node pulls of a task by the scheduler's load balancer, per running task and second
#: (engine option ``lb_migrate_hz``; 0 disables). The path is load_balance -> detach_task ->
#: set_task_cpu -> migrate_task_rq_fair -> ``update_scan_period`` (spec §3.5), which resets the
#: pulled task's ``numa_scan_period`` to ``task_scan_start`` when it leaves its preferred node.
#: The benchmarks run one thread per CPU, so the balancer only pulls a benchmark thread across
#: the socket boundary when something else transiently loads a CPU (kworkers, the LKP monitors
#: and the harness's 1 s ``nmstat`` plotter) and NUMA-aware balancing (migrate_degrades_locality)
#: gives in; the place it frees is refilled by a pull the other way (a swap). Basis and limits:
#: the kernel test robot's ``perf-stat.ps.cpu-migrations`` for these RFC jobs is ~222/s on a
#: 224-CPU machine (~1 per CPU-second, all tasks and distances) -- an upper bound only; this
#: default (one cross-node pull per task every ~83 min, ~0.03/s machine-wide for 128 threads) is
#: set from one absolute number, numa01_THREAD_ALLOC's p4 seconds; see docs/fidelity.md.
LB_MIGRATE_HZ = 0.0002

PID_MAX = 1 << 22          # PID_MAX_LIMIT on 64-bit
#: the scan sysctls are C ints (proc_dointvec_minmax), so INT_MAX bounds them
SYSCTL_INT_MAX = 2**31 - 1


def _opt(default, doc, *, kind, lo=None, hi=None, lo_open=False, source: Provenance):
    """An option field: its doc and bounds, and where its default comes from (``source``, read
    back with :func:`numalab.provenance.provenance_of`)."""
    return field(default=default, metadata=dict(doc=doc, kind=kind, lo=lo, hi=hi, lo_open=lo_open,
                                                provenance=source))


def _kernel(source):
    return Provenance("kernel", source)


def _assumed(source):
    return Provenance("assumed", source)


#: the sysctls' defaults (kernel/sched/fair.c, spec kernel-numa-balancing.md §3.1)
_SYSCTL = "kernel default of sysctl_numa_balancing_{} in kernel/sched/fair.c ({}; spec §3.1)"
#: a mechanism every modelled kernel has (the switch exists to measure its share, docs/engine.md)
_MECHANISM = "present in every kernel numalab models ({}); the off-switch is for ablations only"


@dataclass(frozen=True)
class EngineOptions:
    """Options of one simulation (all recorded in the Dataset's ``parameters`` attr).

    Units are in the names (``_ms``, ``_mb``, ``_hz``) or the field docs (``dt`` etc. in s).
    Bounds are checked on construction (a ``NumalabValueError`` names the option); bools also
    accept 0/1, as a sweep grid stores them."""

    dt: float = _opt(0.05, "s per step (0 < dt <= 0.1: the scan period floor is 100 ms)",
                     kind="number", lo=0.0, hi=0.1, lo_open=True,
                     source=_assumed("the model's step, half the 100 ms scan-period floor; a coarser step "
                                     "changes results (docs/engine.md), so it is part of the model"))
    time_resolution: float = _opt(1.0, "s between time-series samples", kind="number", lo=0.0, lo_open=True,
                                  source=_assumed("sampling of the time series only; no result depends on it"))
    max_time: float = _opt(2000.0, "s of simulated time before giving up (the run is recorded as unfinished)",
                           kind="number", lo=0.0, lo_open=True,
                           source=_assumed("a horizon above every published run (the longest, 6.4's numa01 "
                                           "on lkp-csl-2sp9, is 435 s)"))
    scan_delay_ms: int = _opt(1000, "sysctl_numa_balancing_scan_delay (kernel default 1000)", kind="int", lo=1,
                              hi=SYSCTL_INT_MAX, source=_kernel(_SYSCTL.format("scan_delay", "1000 ms")))
    scan_period_min_ms: int = _opt(1000, "sysctl_numa_balancing_scan_period_min (kernel default 1000)",
                                   kind="int", lo=1, hi=SYSCTL_INT_MAX,
                                   source=_kernel(_SYSCTL.format("scan_period_min", "1000 ms")))
    scan_period_max_ms: int = _opt(60000, "sysctl_numa_balancing_scan_period_max (kernel default 60000)",
                                   kind="int", lo=1, hi=SYSCTL_INT_MAX,
                                   source=_kernel(_SYSCTL.format("scan_period_max", "60000 ms")))
    scan_size_mb: int = _opt(256, "sysctl_numa_balancing_scan_size (kernel default 256)", kind="int", lo=1,
                             hi=SYSCTL_INT_MAX, source=_kernel(_SYSCTL.format("scan_size", "256 MB")))
    lb_migrate_hz: float = _opt(
        LB_MIGRATE_HZ, "cross-node load-balancer pulls per running task and s (LB_MIGRATE_HZ, fitted; 0 = off; "
        "<= 1/dt)", kind="number", lo=0.0,
        source=Provenance(
            "fitted", "set from numa01_THREAD_ALLOC's p4 seconds on lkp-icl-2sp6 (simulated 185.6 s, published "
            "186.7 s), below the robot's perf-stat.ps.cpu-migrations bound of ~1 per CPU-second "
            "(docs/fidelity.md, the load balancer's cross-node moves)",
            fitted_to=("lkp-rfc2023-p5-vs-p4|autonuma-benchmark.numa01_THREAD_ALLOC.seconds|rfc2023-p4 seconds",),
            band=(0.0001, 0.0005),
            band_source="the values around the fitted one that keep that row within 5 % (188.9 s at 0.0001, "
                        "177.5 s at 0.0005; docs/fidelity.md); the cross-node pull rate is not measured"))
    lb_refill_locality: bool = _opt(
        True, "the pull back that refills the node a load-balancer pull left short follows can_migrate_task: "
        "of the two tasks on the doubly loaded CPU, the resident waits (the arrival preempts it) and goes back, "
        "unless migrate_degrades_locality vetoes that -- the resident prefers the crowded node and the pulled "
        "task does not -- and then the pulled task goes back; False = the resident always goes (0.10.0)",
        kind="bool",
        source=Provenance(
            "kernel", "load_balance -> detach_tasks -> can_migrate_task: migrate_degrades_locality calls a move "
            "away from the task's preferred node 'hot' when the runqueue also runs a task that does not prefer "
            "it, and a move to the preferred node never; traced in QEMU with a 6.12 kernel "
            "(benchmarks/vm_trace.py, balancer_refills): a writer pulled off its preferred node went back itself "
            "after 42 of 61 pulls with balancing on, a pulled writer without a preference after 14 of 56 with "
            "balancing off (docs/fidelity.md, 'the load balancer's pull back')"))
    stick_numa: bool = _opt(
        True, "task_numa_migrate decides as the kernel does: task_numa_compare's gain (with its 1/16 and 1/8 "
        "adjustments for the partner's preferred node, and 1/16 inside a group) must reach SMALLIMP (0.03 in "
        "fault shares), and a task in a numa group that finds no CPU sticks where it is and makes that node "
        "its preferred node (sched_setnuma; the sched_stick_numa tracepoint); False = the 0.10.0 swap: any "
        "positive gain, and the preference stays", kind="bool",
        source=Provenance(
            "kernel", "task_numa_compare's SMALLIMP bar and adjustments, task_numa_migrate's sched_setnuma of a "
            "grouped task to the node it found (its own when none); traced in QEMU with a 6.12 kernel: after "
            "every stick of a grouped writer whose preferred node was elsewhere, the next sample showed the "
            "source node preferred (benchmarks/vm_trace.py, docs/fidelity.md, 'the load balancer's pull back')"))
    numa_maymove: bool = _opt(
        True, "task_numa_find_cpu's maymove: an idle CPU on the preferred node is taken only when the move "
        "leaves the destination node running fewer tasks than the source (the mover counted on the source), "
        "or as many and fewer than imb_numa_nr (an eighth of the node's CPUs, at least 1: one LLC per node); "
        "and while the destination has an idle CPU (node_has_spare) no swap pairs two tasks of one numa "
        "group or two ungrouped tasks; False = any idle CPU there is taken and any partner may swap (0.12.0)",
        kind="bool",
        source=Provenance(
            "kernel", "task_numa_find_cpu: adjust_numa_imbalance and load_too_imbalanced decide maymove when the "
            "destination node has spare capacity, and task_numa_compare takes an idle CPU only if maymove; "
            "task_numa_compare does not swap within a group, or between two ungrouped tasks, into a node with "
            "spare capacity; imb_numa_nr is an eighth of the node's CPUs for one LLC per node "
            "(build_sched_domains); read in 6.12 for the kernel's sched_stick_numa: in a QEMU trace 8 of a 6.12 "
            "kernel's 110 sticks came with the preferred node holding an idle CPU and no more writers than "
            "the source, where only these checks refuse (benchmarks/vm_trace.py; docs/fidelity.md, 'The "
            "first touch's wait as the default, and the kernel's sticks')"))
    sticky_locality: bool = _opt(True, "the early-return path of update_task_scan_period keeps "
                                 "numa_faults_locality[] (kernels without e81ee0630837)", kind="bool",
                                 source=_kernel("the kernels before e81ee0630837 keep numa_faults_locality[] on "
                                                "the early-return path of update_task_scan_period (spec §3.5)"))
    thp: bool = _opt(True, "anonymous 2 MiB regions are transparent huge pages (False: 4 KiB semantics)",
                     kind="bool",
                     source=Provenance("measurement", "the robot's whole-job numa_pte_updates are 513.7-515.8 x "
                                       "its numa_huge_pte_updates on both kernels (data/lkp-spr-6.8-vs-6.7.csv): "
                                       "practically every update was a 2 MiB PMD, so THP was on"))
    malloc_edges: bool = _opt(True, "a malloc'd buffer (autonuma-benchmark's) has 513 base pages at its edges: "
                              "its first region is base pages, not a huge page (False: the whole buffer "
                              "is PMD-mapped, as if it were 2 MiB-aligned)", kind="bool",
                              source=Provenance(
                                  "measurement",
                                  "glibc serves malloc(SIZE) with an mmap of SIZE + 4 KiB at a page-aligned "
                                  "address; only whole 2 MiB blocks inside a VMA can be PMD-mapped THPs. Traced "
                                  "with real kernels 6.1 and 6.12 in QEMU (benchmarks/vm_trace.py): numa01's "
                                  "hint faults were 1.96-3.17 x its huge PTE updates with malloc, 1.02-1.06 x with "
                                  "a 2 MiB-aligned buffer"))
    numa_groups: bool = _opt(True, "numa groups: shared faults create and join numa_group "
                             "(task_numa_group); False = every task alone", kind="bool",
                             source=_kernel(_MECHANISM.format("task_numa_group")))
    task_swaps: bool = _opt(True, "numa_migrate_preferred may swap with a task on a full preferred node "
                            "(task_numa_compare / migrate_swap); False = moves into idle CPUs only", kind="bool",
                            source=_kernel(_MECHANISM.format("task_numa_compare / migrate_swap")))
    scan_period_adapt: bool = _opt(True, "update_task_scan_period adapts numa_scan_period after each "
                                   "placement; False = the period keeps its task_scan_start value", kind="bool",
                                   source=_kernel(_MECHANISM.format("update_task_scan_period")))
    migrate_filter: bool = _opt(True, "the two-stage filter of should_numa_migrate_memory (last_cpupid, "
                                "group fault shares); False = every misplaced fault migrates", kind="bool",
                                source=_kernel(_MECHANISM.format("should_numa_migrate_memory")))
    init_coherence: bool = _opt(True, "a shared init sweep (numa01's workers zero-writing the whole buffer "
                                "together) moves lines between caches: one DRAM write-back per line, "
                                "cross-socket pulls on the links (costs.progress_rates); False = every "
                                "sweep charged its full DRAM traffic", kind="bool",
                                source=_assumed("our reading of the first-touch fault path (the racers serialise "
                                                "on each huge page, so the init sweeps move as one convoy); the "
                                                "spec notes do not cover it (docs/fidelity.md)"))
    first_arrival: bool = _opt(True, "a swept region's hinting fault is taken by the first writer to reach it "
                               "(do_huge_pmd_numa_page restores the PMD; writers behind find it changed), at "
                               "the step its sweep crosses it (engine.faults.sweep_faults); False = every "
                               "region on the Poisson clock with a rate-proportional faulting thread", kind="bool",
                               source=Provenance("kernel", "the hinting fault path (spec: do_numa_page / "
                                                 "do_huge_pmd_numa_page restore the entry before the fault is "
                                                 "accounted; only a hinting fault sets a PID bit); the writers' "
                                                 "independent phases on a shared range are assumed "
                                                 "(docs/fidelity.md, '0.4.0')"))
    sweep_convoy: bool = _opt(False, "the writers of a shared swept range (numa01's buffer) start their loop "
                              "sweeps together, at its beginning, as they leave the init sweep together "
                              "(Batch._sweep_phase); a protected huge page is still faulted by the first "
                              "writer to reach it, the convoy's leader; False = independent uniform phases",
                              kind="bool",
                              source=_assumed("benchmarks/convoy.py: 2 unsynchronised whole-buffer bzero "
                                              "writers that start together stay within an eighth of a sweep "
                                              "over 50 sweeps; benchmarks/fault_race.py: in such a convoy the "
                                              "leader takes runs of consecutive protected chunks' faults "
                                              "(docs/fidelity.md, 'numa01's writers as a convoy'); that "
                                              "numa01's 64-224 writers on two sockets do the same is assumed"))
    first_touch_wait: bool = _opt(True, "the first touch of the init sweeps zeroes each new folio in the "
                                  "faulting writer's own time: every thread that starts in its init owes "
                                  "zero_bytes_init / (those threads) at costs.zero_GBps as kernel time before "
                                  "its init writes (the same seconds syst already counts); False = the zeroing "
                                  "is system time only and the init sweeps run at write speed", kind="bool",
                                  source=Provenance(
                                      "kernel",
                                      "do_anonymous_page / do_huge_pmd_anonymous_page allocate and zero the folio "
                                      "(clear_page / clear_huge_page) in the faulting task before the write "
                                      "completes; traced in QEMU with a 6.12 kernel (benchmarks/vm_trace.py): "
                                      "numa01's bound init took 1.1-1.45 s against 0.21 s for a later sweep of "
                                      "the same bytes, and the kernel's first task_numa_work run found every "
                                      "VMA unsuitable (the scanning writer still in its MPOL_BIND init); "
                                      "docs/fidelity.md, 'numa01's placement in a real kernel'"))
    link_both_directions: bool = _opt(True, "a remote write loads both directions of the socket link, one line "
                                      "each (the RFO's data in, the write-back out; costs.progress_rates); "
                                      "False = the 0.5.0 accounting: each remote write charged twice on its "
                                      "own (cpu node, memory node) direction", kind="bool",
                                      source=Provenance("derived", "the coherence protocol: a write to a line "
                                                        "homed on another node reads it for ownership from "
                                                        "that node and writes it back to it (docs/fidelity.md, "
                                                        "'0.6.0')"))
    tick_clock: bool = _opt(True, "the kernel's tick clock: task_tick_numa at every tick, so a thread behind "
                            "node_stamp + numa_scan_period (a period just shortened) triggers at the step's "
                            "first tick and again each tick until caught up, and can win numa_next_scan at any "
                            "of them; a first trigger advances node_stamp by the period it was compared with; "
                            "next_scan and pids_active_reset kept in jiffies (engine.scan.tick_triggers, "
                            "jiffies); False = the 0.7.0 engine: one trigger per step at a crossing tick that "
                            "may lie before the step, and float-second VMA timestamps", kind="bool",
                            source=_kernel("task_tick_numa and task_numa_work's time_before(jiffies, "
                                           "next_scan) (spec §3.1-§3.3; docs/fidelity.md, '0.8.0')"))
    harness_overhead: bool = _opt(True, "add costs.harness_overhead_s to elsp (default cost 0 s, so a no-op "
                                  "unless costs set it)", kind="bool",
                                  source=Provenance("derived", "a no-op with the default "
                                                    "costs.harness_overhead_s = 0"))
    pid_base: int | None = _opt(None, "first pid of the run; None = drawn per seed in [pid_lo, pid_hi)",
                                kind="int", lo=1, hi=PID_MAX - 1,
                                source=_assumed("drawn per seed: where the pid counter stands when the "
                                                "benchmark starts is not published"))
    pid_lo: int = _opt(2000, "lowest pid a seed draws (assumed: a booted system has used the first ~2000 pids; "
                       "not measured)", kind="int", lo=1,
                       source=_assumed("a booted system has used the first ~2000 pids; not measured"))
    pid_hi: int = _opt(40000, "pid draws stay below this", kind="int", hi=PID_MAX,
                       source=_assumed("a machine some time after boot, below the default pid_max (32768, or "
                                       "1024 per CPU); not measured"))
    init_node: int | None = _opt(None, "node B / the main thread's node; None = drawn per seed", kind="int", lo=0,
                                 source=_assumed("drawn per seed: the node numa01's main thread starts on is "
                                                 "not published"))
    check_invariants: bool = _opt(True, "check page conservation, CPU counts and counters every 20 steps",
                                  kind="bool", source=_assumed("a consistency check, not a model constant: "
                                                               "results are the same either way"))

    def __post_init__(self):
        for f in fields(self):
            object.__setattr__(self, f.name, _check_field(f, getattr(self, f.name)))
        self._check_relations()

    def _check_relations(self):
        # bounds that depend on another option
        check_number("lb_migrate_hz", self.lb_migrate_hz, lo=0.0, hi=1.0 / self.dt)
        if self.scan_period_max_ms < self.scan_period_min_ms:
            raise NumalabValueError("scan_period_max_ms must be >= scan_period_min_ms")
        check_int("pid_hi", self.pid_hi, lo=self.pid_lo + 1, hi=PID_MAX)

    @classmethod
    def coerce(cls, options) -> "EngineOptions":
        """None -> defaults, an EngineOptions -> itself, a dict -> EngineOptions(**dict)
        (unknown keys refused, naming the allowed ones)."""
        if isinstance(options, dict):
            unknown = sorted(set(options) - set(DEFAULTS))
            if unknown:
                raise NumalabValueError(f"unknown engine option {unknown[0]!r}; allowed: "
                                        f"{', '.join(sorted(DEFAULTS))}, costs, topology")
        return coerce_dataclass(cls, options, "engine options")

    def to_dict(self) -> dict:
        return asdict(self)

    def replace(self, **changes) -> "EngineOptions":
        return EngineOptions(**{**self.to_dict(), **changes})

    @classmethod
    def describe(cls) -> dict[str, dict]:
        """Option name -> ``{default, doc, kind, lo, hi}`` (None where a bound does not
        apply), in field order: the one source of option names for CLI, sweeps and widgets."""
        return option_fields()


def option_fields() -> dict[str, dict]:
    """See :meth:`EngineOptions.describe`."""
    return {f.name: dict(default=f.default, doc=f.metadata["doc"], kind=f.metadata["kind"],
                         lo=f.metadata["lo"], hi=f.metadata["hi"]) for f in fields(EngineOptions)}


def _check_field(f, value):
    md = f.metadata
    if value is None and f.default is None:
        return None
    if md["kind"] == "bool":
        if not (isinstance(value, (bool, np.bool_)) or (isinstance(value, numbers.Integral) and value in (0, 1))):
            raise NumalabValueError(f"{f.name}={value!r}; allowed: True or False (or 1/0)")
        return bool(value)
    if md["kind"] == "int":
        return check_int(f.name, value, lo=md["lo"], hi=md["hi"])
    return check_number(f.name, value, lo=md["lo"], hi=md["hi"], lo_open=md["lo_open"])


#: option name -> default (the dict form of EngineOptions()), in field order
DEFAULTS = {f.name: f.default for f in fields(EngineOptions)}
#: the mechanism switches (bool options whose flip removes one mechanism, or adds one that is off
#: by default: sweep_convoy), and lb_migrate_hz, whose 0 removes the load
#: balancer's pulls
SWITCHES = ("lb_migrate_hz", "numa_groups", "task_swaps", "scan_period_adapt", "migrate_filter", "thp",
            "init_coherence", "first_arrival", "sweep_convoy", "first_touch_wait", "lb_refill_locality",
            "stick_numa", "numa_maymove", "link_both_directions", "tick_clock", "malloc_edges", "harness_overhead")

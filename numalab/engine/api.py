"""The engine's public entry points: :func:`simulate` (the Dataset of DESIGN.md's contract),
:func:`run_batch` and :func:`make_batch` (one policy as one batch, for tests, tracing and
benchmarks). Inputs are checked here, at the boundary: workloads by name or object, policies
through :meth:`numalab.policy.Policy.parse`, seeds through :func:`numalab.errors.check_seeds`,
options through :meth:`.options.EngineOptions.coerce`.
"""

from __future__ import annotations

import numbers

from ..costs import Costs
from ..errors import NumalabValueError, check_int, check_seeds
from ..limits import check_simulate
from ..policy import Policy
from ..topology import Topology
from ..workloads import Workload, workload as make_workload
from .batch import Batch
from .layout import Layout
from .options import DEFAULTS, EngineOptions
from .results import to_dataset

__all__ = ["simulate", "run_batch", "make_batch", "coerce_workload", "coerce_policies", "engine_options"]


def engine_options(options: dict) -> EngineOptions:
    """The EngineOptions of ``options`` (a dict of engine options; ``costs`` and ``topology``
    are ignored here: they are not engine options)."""
    return EngineOptions.coerce({k: v for k, v in options.items() if k not in ("costs", "topology")})


def make_batch(wl: Workload, policy: Policy, seeds, *, layout: Layout | None = None, kernel: str = "auto",
               **options) -> Batch:
    """One policy over ``seeds`` as one batch, set up but not run (options checked).
    ``seeds``: a count or a list of ints >= 0; unlike :func:`simulate`, a list may repeat a
    seed (identical replicas, e.g. to time a batch whose events all line up).
    ``layout``: the workload's static arrays when already built for these options.
    ``kernel``: the engine that runs it (:attr:`numalab.engine.Batch.kernel`; the results are
    the same)."""
    opts = engine_options(options)
    if isinstance(seeds, numbers.Integral) and not isinstance(seeds, bool):
        seeds = check_seeds(seeds)
    else:
        seeds = [check_int("seeds", s, lo=0) for s in seeds]
    pol = coerce_policies(policy)[0]
    _check_cost(wl, [pol], seeds, opts)
    lay = Layout(wl, opts) if layout is None else layout
    return Batch(lay, pol, seeds, opts, Costs.coerce(options.get("costs")), kernel=kernel)


def _check_cost(wl, pols, seeds, opts: EngineOptions) -> None:
    """Refuse, before any array is allocated, a run whose step count or memory is over the
    limits (:func:`numalab.limits.check_simulate`; docs/robustness.md)."""
    check_simulate(wl, pols, seeds, dt=opts.dt, max_time=opts.max_time, time_resolution=opts.time_resolution,
                   scan_size_mb=opts.scan_size_mb)


def run_batch(wl: Workload, policy: Policy, seeds, **options) -> Batch:
    """Run one policy over ``seeds`` as one batch; returns the finished batch (arrays)."""
    return make_batch(wl, policy, seeds, **options).run()


def coerce_workload(workload, topology):
    """A Workload, or a workload name laid out on ``topology`` (a Topology or preset name)."""
    if isinstance(workload, str):
        workload = make_workload(workload, Topology.coerce(topology))
    elif not isinstance(workload, Workload):
        raise NumalabValueError(f"workload={workload!r} must be a Workload or a name")
    if not workload.thread_main.size:
        raise NumalabValueError("workload has no threads")
    return workload


def coerce_policies(policies) -> list[Policy]:
    """A Policy, a policy text (``Policy.parse``: profile names and every other text form) or a
    list of them -> a list of Policies with distinct names."""
    if isinstance(policies, (Policy, str)):
        policies = [policies]
    try:
        policies = list(policies)
    except TypeError:
        raise NumalabValueError(f"policies={policies!r} must be a Policy, a profile name or a list of them") from None
    if not policies:
        raise NumalabValueError("policies is empty; allowed: one or more Policy objects or profile names")
    out = []
    for p in policies:
        if isinstance(p, str):
            try:
                p = Policy.parse(p)
            except NumalabValueError as e:
                raise NumalabValueError(f"{e} (a policy is a profile name or a policy text, see Policy.parse)") from None
        if not isinstance(p, Policy):
            raise NumalabValueError(f"policy {p!r} must be a Policy or a profile name; allowed: {', '.join(Policy.profiles())}")
        out.append(p)
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        raise NumalabValueError(f"policies have duplicate names {names}; give each a distinct name=")
    return out


def simulate(workload, policies, seeds=8, *, dt=DEFAULTS["dt"], time_resolution=DEFAULTS["time_resolution"],
             max_time=DEFAULTS["max_time"], costs=None, topology="2s-128", kernel="auto", **options):
    """Simulate ``workload`` under each of ``policies`` for each seed.

    Parameters
    ----------
    workload : Workload or str (a name from :func:`numalab.workloads.workloads`, laid out on
        ``topology``).
    policies : Policy, policy text (:meth:`numalab.policy.Policy.parse`), or a list of them.
    seeds : int n (seeds 0..n-1) or a list of distinct ints.
    dt : step in seconds (0 < dt <= 0.1; the scan period floor is 100 ms).
    time_resolution : seconds between time-series samples.
    max_time : give up after this many simulated seconds (``finished`` = 0).
    costs : :class:`numalab.costs.Costs` or a dict of overrides.
    kernel : "auto" (the compiled steps of :mod:`numalab.engine.compiled` when numba is
        installed and the policy allows them, else numpy's), "numpy" or "numba": which engine
        takes the steps. The results are bit-identical; the compiled one is faster.
    **options : the other fields of :class:`numalab.engine.EngineOptions` (``EngineOptions.describe()``
        lists them with bounds and docs): the sysctls ``scan_delay_ms``, ``scan_period_min_ms``,
        ``scan_period_max_ms``, ``scan_size_mb``; ``lb_migrate_hz`` (:data:`LB_MIGRATE_HZ`);
        the mechanism switches ``numa_groups``, ``task_swaps``, ``scan_period_adapt``,
        ``migrate_filter``, ``thp``, ``harness_overhead``; ``sticky_locality``; ``pid_base``;
        ``init_node``; ``check_invariants``.

    Returns
    -------
    xarray.Dataset with dims ("policy", "seed") and "time" (see :mod:`numalab.engine.results`).
    """
    wl = coerce_workload(workload, topology)
    pols = coerce_policies(policies)
    seeds = check_seeds(seeds)
    costs = Costs.coerce(costs)
    opts = EngineOptions.coerce(dict(options, dt=dt, time_resolution=time_resolution, max_time=max_time))
    _check_cost(wl, pols, seeds, opts)
    lay = Layout(wl, opts)                      # once for every policy
    batches = [Batch(lay, p, seeds, opts, costs, kernel=kernel).run() for p in pols]
    return to_dataset(wl, pols, seeds, batches, opts.to_dict(), costs)

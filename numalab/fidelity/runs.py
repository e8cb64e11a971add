"""The simulations the published tables are judged on: every (machine, workload, profile) the
tables need, one engine call per (workload, profile) with all seeds in its batch, run on local
processes (:func:`numalab.sweeps.executors.run_local`) with a progress bar that ticks per call.

Every table runs on the topology preset of its machine (:data:`numalab.topology.PRESET_ALIASES`
maps the robot's machine names), with the same defaults everywhere. A run shared by several
tables (the Sapphire Rapids base ``6.4`` of the RFC summary and of the PID-filter table, the
Cascade Lake runs of the monitored and monitors-off tables) is simulated once. Results do not
depend on how the calls are grouped or which process runs them (a seed gives the same run in
any batch), so :func:`execute` may spread them over processes freely.

A *point* is one setting of the constants: point 0 the defaults (the centre), points 1.. the
uncertainty box of :mod:`.bands` or the candidates of :mod:`.crossval`, each given as
overrides of :class:`~numalab.costs.Costs` fields, engine options and topology fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import xarray as xr

from .tables import calibration_tables, job_tests, table_preset

__all__ = ["Call", "Point", "plan", "execute", "simulate_fidelity", "simulate_calibration", "needs"]


@dataclass(frozen=True)
class Point:
    """Overrides of the defaults: ``costs`` (Costs fields), ``options`` (engine options) and
    ``topology`` (``{preset: {field: value}}``, Topology fields per machine preset)."""

    costs: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    topology: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Call:
    """One engine call: ``workload`` under ``policy`` for ``seeds`` on ``preset`` (the key of
    the simulation it belongs to), at point ``point`` with ``overrides`` (a :class:`Point`)."""

    preset: str
    workload: str
    policy: str
    seeds: tuple
    point: int = 0
    overrides: Point = field(default_factory=Point)

    def as_dict(self) -> dict:
        return dict(preset=self.preset, workload=self.workload, policy=self.policy, seeds=list(self.seeds),
                    costs=dict(self.overrides.costs), options=dict(self.overrides.options),
                    topology=dict(self.overrides.topology.get(self.preset, {})))


#: rough relative cost of one call per workload (numa01 runs for minutes, numa02 for seconds),
#: to hand the long calls to the workers first
_WEIGHT = {"numa01": 10.0, "numa01_THREAD_ALLOC": 3.0}


def needs(pubs) -> dict[str, list[str]]:
    """workload -> the profiles the tables need it for (their rows and their job's tests)."""
    out: dict[str, list[str]] = {}
    for ds in pubs:
        profiles = [str(p) for p in ds.policy.values]
        wls = job_tests(ds) if any(str(v).startswith("job_") for v in ds.data_vars) else []
        for wl in [str(w) for w in ds.workload.values] + wls:
            have = out.setdefault(wl, [])
            have += [p for p in profiles if p not in have]
    return out


def plan(published: dict, seeds, *, topology=None, point: int = 0, overrides: Point | None = None) -> list[Call]:
    """The calls that simulate every table of ``published`` (``{name: Dataset}``) on its
    machine's preset (``topology=``: every table on that preset instead) at one point."""
    from ..errors import check_seeds

    seeds = tuple(check_seeds(seeds))
    overrides = overrides or Point()
    by_preset: dict[str, list] = {}
    for pub in published.values():
        by_preset.setdefault(topology or pub.attrs.get("preset") or table_preset(pub), []).append(pub)
    return [Call(preset, wl, pol, seeds, point, overrides)
            for preset, pubs in by_preset.items() for wl, pols in needs(pubs).items() for pol in pols]


def _topology(preset, overrides):
    from ..topology import Topology

    if isinstance(preset, Topology):
        if not overrides:
            return preset
        from dataclasses import replace

        return replace(preset, name=f"{preset.name}+custom", **overrides)
    return Topology.preset(preset, **overrides) if overrides else preset


#: the attr in which a worker reports the CPU seconds of one engine call (taken off by execute)
_CPU_ATTR = "fidelity_engine_cpu_s"


def run_calls(points: list[dict]) -> list[xr.Dataset]:
    """Worker side of :func:`execute`: each call's per-run Dataset (dims policy, seed), its
    engine CPU seconds in an attr."""
    import time

    from ..engine import simulate
    from ..engine.results import per_run

    out = []
    for c in points:
        t0 = time.process_time()
        ds = simulate(c["workload"], [c["policy"]], seeds=c["seeds"], topology=_topology(c["preset"], c["topology"]),
                      costs=c["costs"] or None, **c["options"])
        out.append(per_run(ds).assign_attrs({_CPU_ATTR: time.process_time() - t0}))
    return out


def _order(calls):
    """A cheap call first (the executor runs it alone as its probe: the bar ticks at once), then
    the longest first."""
    idx = sorted(range(len(calls)), key=lambda i: -_WEIGHT.get(calls[i].workload, 1.0))
    if idx:
        idx = [idx[-1]] + idx[:-1]
    return idx


def execute(calls: list[Call], *, workers=None, progress=False, desc="simulating", stats: dict | None = None) -> dict:
    """Run ``calls``; ``{(point, preset): Dataset}`` with dims ``("workload", "policy", "seed")``
    (a (workload, policy) no call asked for holds NaN). ``workers``: local processes (default:
    the CPUs this process may use; 1 runs here). ``progress``: a tqdm bar, one tick per call.
    ``stats``: a dict to fill with ``calls``, ``workers``, ``wall_s`` and ``engine_cpu_s`` (the
    CPU seconds of the engine calls, in whichever process ran them)."""
    import time

    from ..sweeps import executors

    workers = executors.default_workers() if workers is None else workers
    results: list = [None] * len(calls)
    cpu = [0.0] * len(calls)
    bar = _bar(len(calls), progress, desc)
    t0 = time.perf_counter()

    def on_done(batch, outs):
        for i, ds in zip(batch, outs):
            cpu[i] = float(ds.attrs.pop(_CPU_ATTR, 0.0))
            results[i] = ds
            if bar is not None:
                c = calls[i]
                bar.set_postfix_str(f"{c.preset} {c.workload} {c.policy}" + (f" point {c.point}" if c.point else ""),
                                    refresh=False)
                bar.update(1)

    try:
        executors.run_local(run_calls, [[i] for i in _order(calls)], [c.as_dict() for c in calls], workers,
                            on_done)
    finally:
        if bar is not None:
            bar.close()
    if stats is not None:
        stats.update(calls=len(calls), workers=workers, wall_s=time.perf_counter() - t0, engine_cpu_s=sum(cpu))
    return _assemble(calls, results)


def _bar(total, enabled, desc):
    if not enabled or not total:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="run")


def _assemble(calls, results) -> dict:
    groups: dict = {}
    for c, ds in zip(calls, results):
        groups.setdefault((c.point, c.preset), {}).setdefault(c.workload, []).append(ds)
    sims = {}
    for key, by_wl in groups.items():
        runs = [xr.concat(parts, dim="policy", combine_attrs="drop_conflicts").expand_dims(workload=[wl])
                for wl, parts in by_wl.items()]
        sim = xr.concat(runs, dim="workload", join="outer", combine_attrs="drop_conflicts")
        sim.attrs["workload"] = ",".join(by_wl)
        sim.attrs["topology"] = getattr(key[1], "name", key[1])
        sims[key] = sim
    return sims


def _point(engine_options) -> Point:
    opts = dict(engine_options)
    costs = opts.pop("costs", None) or {}
    if not isinstance(costs, dict):
        from ..costs import Costs

        costs = Costs.coerce(costs).to_dict()
    return Point(costs=dict(costs), options=opts)


def simulate_fidelity(tables=None, *, seeds=8, topology=None, progress=False, workers=None, **engine_options):
    """Simulate every published table (default: all of ``data/``) on the topology preset of its
    machine (:func:`numalab.fidelity.table_preset`; ``topology=`` puts every table on that one
    instead); ``engine_options`` (and ``costs=``) apply to every run.

    Returns ``(published, sims)``: ``{table: Dataset}`` and ``{preset: Dataset}`` with dims
    ``("workload", "policy", "seed")``; a (workload, policy) no table needs holds NaN."""
    from .. import data

    tables = calibration_tables() if tables is None else list(tables)
    published = {name: data.load(name) for name in tables}
    calls = plan(published, seeds, topology=topology, overrides=_point(engine_options))
    sims = execute(calls, workers=workers, progress=progress)
    return published, {preset: sim for (_, preset), sim in sims.items()}


def simulate_calibration(tables=None, *, seeds=8, topology="2s-128", progress=False, workers=None,
                         **engine_options):
    """Simulate every (workload, profile) the given tables need on one topology. ``tables``
    default: the Ice Lake tables of ``calibration.md`` (machine ``lkp-icl-2sp6``, preset
    ``"2s-128"``); for every table on its own machine use :func:`simulate_fidelity`.

    Returns ``(published, sim)``: the loaded tables ``{name: Dataset}`` and one Dataset with
    ``elsp``/``syst``/counters on dims ``("workload", "policy", "seed")``."""
    tables = calibration_tables("lkp-icl-2sp6") if tables is None else list(tables)
    published, sims = simulate_fidelity(tables, seeds=seeds, topology=topology, progress=progress, workers=workers,
                                        **engine_options)
    return published, sims[topology]

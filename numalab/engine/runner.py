"""The ``"numa"`` sweep runner: :func:`numalab.engine.simulate` driven by the sweep machinery.

Parameters: ``workload``, ``topology``, ``profile``, ``history`` (an int, ``"profile"`` = the
profile's own window count, ``"adaptive"`` or ``"adaptive:<rule>"``), or instead of those two
``policy`` (any text :meth:`numalab.policy.Policy.parse` reads, such as ``"6.12+N=4"``);
``workload_threads``, ``workload_loops``, ``workload_size_bytes``, ``workload_nproc``
(overrides of :func:`numalab.workloads.workload`, 0 = the workload's own); and every engine
option with a scalar default (``dt``, ``max_time``, ``scan_delay_ms``, ``thp`` as 0/1, ...).
Points that differ only in policy and seed share one ``simulate`` call; time series are dropped
(a sweep keeps the per-run figures).

It lives beside the engine and uses the public model APIs (engine, workloads, policy, topology)
and the sweeps registry only; importing it registers the runner. The engine options it offers
come from :meth:`numalab.engine.options.EngineOptions.describe`, the one list of option names.
"""

from __future__ import annotations

import itertools
import json
import numbers
from collections.abc import Mapping

import numpy as np

from numalab.errors import NumalabValueError, check_int, check_number, check_str
from numalab.limits import check_simulate
from numalab.policy import Policy
from numalab.rule_transport import check_travels, restore, transports
from numalab.rules import Rule
from numalab.sweeps.registry import Param, Runner, names_or_str, register_runner
from numalab.topology import check_topology
from numalab.workloads import workload, workloads

from .api import simulate
from .options import EngineOptions

__all__ = ["run_numa", "RUNNER", "HISTORY_WORDS"]

HISTORY_WORDS = ("profile", "adaptive")

_NUMA_FIXED = ("workload", "topology", "profile", "history", "policy")
_POLICY_KNOBS = ("policy", "profile", "history")
#: grid name -> numalab.workloads.workload() override; 0 means "the workload's own value"
_WORKLOAD_OVERRIDES = {
    "workload_threads": "threads",
    "workload_loops": "loops",
    "workload_size_bytes": "size_bytes",
    "workload_nproc": "nproc",
}


def _workload_names():
    return workloads()


def _profile_names():
    return Policy.profiles()


def _check_history(name, value):
    """An integer window count 1..64, "profile" (the profile's own count), "adaptive" or
    "adaptive:<rule>"."""
    if isinstance(value, str) and value in HISTORY_WORDS:
        return value
    if isinstance(value, str) and value.startswith("adaptive:"):
        try:
            Policy.parse("6.12", history=value)  # the one parser: refuses an unknown rule
        except NumalabValueError as exc:
            raise NumalabValueError(f"{name}={value!r}: {exc}") from None
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise NumalabValueError(
            f"{name}={value!r} must be an integer 1..64 or one of {', '.join(HISTORY_WORDS)}"
        )
    return check_int(name, value, lo=1, hi=64)


def _check_policy(name, value):
    """A policy text :meth:`numalab.policy.Policy.parse` reads (``"6.12"``, ``"6.12+N=4"``, ...),
    kept as written (it is part of the point's cache key), or a :class:`~numalab.policy.Policy`
    (stored as its text); ``""`` = built from ``profile`` and ``history``. A policy with user
    rules is stored pinned to their versions (``"6.12+my_rule@<digest>"``), so a point computed
    with one version of a rule is never reused for an edited one."""
    if value == "":
        return value
    if not isinstance(value, Policy):
        check_str(name, value)
    try:
        pol = Policy.parse(value)
    except NumalabValueError as exc:
        if str(exc).startswith(f"{name}={value!r}"):
            raise
        raise NumalabValueError(f"{name}={value!r}: {exc}") from None
    if pol.user_rules or isinstance(value, Policy):
        return pol.pinned
    return value


def _check_override(name, value):
    return check_int(name, value, lo=0)


def _typed_check(default, switch=False):
    """A check that keeps a value of the default's type (int 0/1 for bools), so 1 and 1.0 are
    one point, not two; a ``switch`` (a bool option) takes True/False as well as 1/0."""

    def check(name, value):
        if switch:
            if isinstance(value, (bool, np.bool_)) or (isinstance(value, numbers.Integral) and value in (0, 1)):
                return int(value)
            raise NumalabValueError(f"{name}={value!r}; allowed: True or False (or 1/0)")
        if isinstance(default, float):
            return check_number(name, value)
        if isinstance(default, int):
            return check_int(name, value)
        return check_str(name, value)

    return check


def _engine_options() -> dict:
    """Sweepable engine options: every :class:`EngineOptions` field with a scalar default
    (bools become 0/1 in the grid; options whose default is None, such as ``pid_base``, are
    not sweepable) -> (default, doc, whether it is a bool switch)."""
    out = {}
    for name, f in EngineOptions.describe().items():
        d = f["default"]
        if d is None or not isinstance(d, (str, int, float, bool)):
            continue
        switch = isinstance(d, bool)
        out[name] = (int(d) if switch else d, f["doc"], switch)
    return out


def _numa_params() -> list[Param]:
    params = [
        Param("workload", names_or_str("workloads", _workload_names), default="numa01",
              long_name="autonuma-benchmark workload"),
        Param("topology", check_topology, default="2s-128",
              long_name="machine topology: a preset, or a topology file as '<path>#<digest>'"),
        Param("profile", names_or_str("policy profiles", _profile_names), default="6.12",
              long_name="kernel scan-filter profile"),
        Param("history", _check_history, default="profile", units="windows",
              long_name="access-PID history length (profile = the profile's own)",
              kernel_name="NR_ACCESS_PID_HIST"),
        Param("policy", _check_policy, default="",
              long_name="scan-filter policy ('6.12', '6.12+N=4'); replaces profile and history"),
        Param("workload_threads", _check_override, default=0, units="threads",
              long_name="threads per process (0 = the workload's own)"),
        Param("workload_loops", _check_override, default=0, units="loops",
              long_name="benchmark loops (0 = the workload's own)"),
        Param("workload_size_bytes", _check_override, default=0, units="bytes",
              long_name="buffer bytes per process (0 = the workload's own)"),
        Param("workload_nproc", _check_override, default=0, units="processes",
              long_name="processes, numa01 only (0 = the workload's own)"),
    ]
    for name, (default, doc, switch) in _engine_options().items():
        params.append(Param(name, _typed_check(default, switch), default=default,
                            long_name=f"engine option {name}: {doc}"))
    return params


def _engine_kwargs(point: Mapping) -> dict:
    """The engine options of a point, with 0/1 turned back into bools where the option is a
    bool."""
    bools = {k for k, f in EngineOptions.describe().items() if f["kind"] == "bool"}
    skip = ("seed", *_NUMA_FIXED, *_WORKLOAD_OVERRIDES)
    return {k: (bool(v) if k in bools else v) for k, v in point.items() if k not in skip}


def _numa_policy(point: Mapping):
    """The :class:`~numalab.policy.Policy` of a point: ``Policy.parse`` of ``policy`` if given,
    else of ``profile`` with ``history`` windows ("profile": the profile's own)."""
    return Policy.parse(point.get("policy") or point["profile"], history=point["history"])


def _numa_workload(point: Mapping):
    overrides = {w: point[g] for g, w in _WORKLOAD_OVERRIDES.items() if point.get(g, 0)}
    return workload(point["workload"], point["topology"], **overrides)


def _numa_prepare(values: dict) -> None:
    """Build every policy and every workload once, so a bad combination fails before any work."""
    if values["policy"] != [""] and (values["profile"] != ["6.12"] or values["history"] != ["profile"]):
        raise NumalabValueError("give policy= or profile=/history=, not both (policy names the profile)")
    for combo in itertools.product(values["policy"], values["profile"], values["history"]):
        for rule in _numa_policy(dict(zip(("policy", "profile", "history"), combo))).user_rules:
            check_travels(rule)  # a task may run on another process or machine: refused by name here
    names = ["workload", "topology", *_WORKLOAD_OVERRIDES]
    wls = [_numa_workload(dict(zip(names, combo))) for combo in itertools.product(*(values[n] for n in names))]
    # the cost of one point (one seed, one policy): steps and memory, before any work is sent out
    timing = [dict(zip(_TIMING, combo)) for combo in itertools.product(*(values.get(n, [None]) for n in _TIMING))]
    for wl in wls:
        for t in timing:
            check_simulate(wl, 1, 1, **_timing_kwargs(t))


_TIMING = ("dt", "max_time", "time_resolution", "scan_size_mb")


def _timing_kwargs(point: Mapping) -> dict:
    """dt / max_time / time_resolution / scan_size_mb of a point (the engine's defaults when not
    swept): what the cost of a point depends on besides its workload."""
    defaults = EngineOptions.describe()
    out = {}
    for k in _TIMING:
        v = point.get(k)
        out[k] = check_number(k, defaults[k]["default"] if v is None else v, lo=0.0, lo_open=True)
    return out


def _point_record(ds, j: int, n_policies: int, policy) -> dict:
    """Attrs of the ``j``-th policy of a call: the engine records the call's policy list; a
    point records its own policy only, so what is stored does not depend on which policies
    shared the call."""
    try:
        record = json.loads(ds.attrs.get("parameters", "{}"))
    except ValueError:
        record = None
    if not (isinstance(record, dict) and "policies" in record):
        return ds.attrs
    rec = {k: v for k, v in record.items() if k != "policies"}
    rec["policy"] = record["policies"][j] if len(record["policies"]) == n_policies else policy.name
    return {**ds.attrs, "parameters": json.dumps(rec, sort_keys=True)}  # a new dict: isel shares attrs


def run_numa(points: list[dict]):
    """Point runner of the NUMA engine: one ``simulate`` call per set of policies that
    share their seeds (all points share workload, topology and engine options)."""
    p0 = points[0]
    wl = _numa_workload(p0)
    opts = _engine_kwargs(p0)
    seeds_of: dict[tuple, list[int]] = {}
    for p in points:
        pk = tuple(p[k] for k in _POLICY_KNOBS)
        seeds_of.setdefault(pk, []).append(p["seed"])
    # policies with the same seed set go into one call (policies x seeds vectorised)
    calls: dict[tuple, list[tuple]] = {}
    for pk, s in seeds_of.items():
        calls.setdefault(tuple(sorted(s)), []).append(pk)
    out: dict = {}
    for seeds, pks in calls.items():
        pols = [_numa_policy(dict(zip(_POLICY_KNOBS, pk))) for pk in pks]
        ds = simulate(wl, pols, seeds=list(seeds), **opts)
        if "time" in ds.dims:  # series have run-dependent lengths; a sweep keeps per-run figures
            ds = ds.drop_dims("time")
        for j, pk in enumerate(pks):
            # a point keeps the decision counters of its own policy only (another policy's user
            # rule would otherwise show as 0 here and be missing from a point computed alone)
            own = {f"{k}_{n}" for n in pols[j].reasons for k in ("allow", "skip")}
            one = ds.isel(policy=j).drop_vars([v for v in ds.data_vars if str(v).startswith(("allow_", "skip_"))
                                               and v not in own])
            attrs = _point_record(ds, j, len(pks), pols[j])
            if attrs is not ds.attrs:
                one.attrs = attrs
            for si, s in enumerate(seeds):
                out[(pk, s)] = one.isel(seed=si)
    return [out[(tuple(p[k] for k in _POLICY_KNOBS), p["seed"])] for p in points]


class _RunNuma:
    """:func:`run_numa` as a sweep task carries it: pickled (to a worker process or a dask
    cluster), it takes along every user rule this process knows (:mod:`numalab.rule_transport`:
    by reference and by value), and unpickling registers them, so the worker reads the points'
    pinned policy texts (``"6.12+my_rule@<digest>"``) as the caller did."""

    def __init__(self, rules=()):
        self.__qualname__ = "run_numa"  # what the executors' messages name
        for t, values in rules:
            restore(Rule, t, values)

    def __call__(self, points):
        return run_numa(points)

    def __reduce__(self):
        return (_RunNuma, (transports(),))


RUNNER = register_runner(Runner(
    "numa", _numa_params, _RunNuma(),
    batch_vary=_POLICY_KNOBS,
    requires=("numalab.engine", "numalab.workloads", "numalab.policy"),
    prepare=_numa_prepare,
    description="NUMA-balancing engine (numalab.engine.simulate)",
))

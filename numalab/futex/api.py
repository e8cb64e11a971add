"""The futex model's front door: :func:`simulate` one workload, :func:`sweep` a grid.

Both solve per (workload, seed) points with :mod:`numalab.futex.solver` (MVA or the
discrete-event simulation) and wrap the metrics in an xarray Dataset whose attrs record the
workload, the resolved costs and every parameter.
"""

from __future__ import annotations

import json
from itertools import product

import numpy as np

from .._version import __version__
from ..errors import NumalabValueError, check_choice, check_distinct, check_int, check_seeds
from ..topology import Topology
from .hash import MODES, hash_mode
from .solver import FutexCosts, coerce_costs, mva, network
from .solver import simulate as _des
from .workloads import FUTEX_NUMA, PERF_BENCH, PROGRAMS, FutexWorkload, route, workload_for

__all__ = ["METHODS", "DISTS", "simulate", "sweep", "solve_points", "method_note"]

METHODS = ("mva", "simulation")
DISTS = ("exponential", "deterministic")
#: futexes a thread at which the MVA is known to depart from the event simulation by more than
#: its 8 % tolerance: 16-20 % at 8 keys, 6 % at 16, 1-2 % at one key and within 5 % from 32 on
#: (per-thread classes; docs/futex.md, "Where the MVA departs from the simulation")
MVA_DEPARTS_KEYS = range(2, 16)

_VARS = {
    "ops_per_s": ("1/s", "futex operations per second, all counted threads"),
    "ops_per_s_per_thread": ("1/s", "futex operations per second per counted thread "
                             "(perf bench futex hash: 'Averaged ... operations/sec')"),
    "loops": ("1", "operations completed by the counted threads in the run "
              "(futex_numa: the 'contenders:' sum)"),
    "bucket_utilisation": ("1", "hb-lock utilisation of the bucket an operation visits, "
                           "averaged over operations (method mva: the MVA's; simulation: measured)"),
    "collisions": ("1", "futexes sharing a hash bucket with another futex "
                   "(distinct futexes - occupied buckets)"),
}


def solve_points(workloads: list[FutexWorkload], seeds: list[int], costs: FutexCosts, method: str, ops: int,
                 dist: str, chunk: int | None = None) -> dict:
    """Per (workload, seed) point metrics, as a dict of arrays shaped (len(workloads), len(seeds)),
    plus ``thread_rate``: one array of per-thread ops/s per point (what perf bench prints).

    Points are solved in chunks of workloads (bounded memory; one MVA fixed point per chunk).
    The method is checked and the peak memory estimated (:func:`numalab.limits.check_futex`)
    before anything is built."""
    from ..limits import check_futex

    check_choice("method", method, METHODS)
    check_choice("dist", dist, DISTS)
    seeds = check_seeds(list(seeds))
    chunk = chunk or max(1, 16 // len(seeds))
    check_futex(workloads, len(seeds), method, ops, chunk=chunk)
    parts = [_solve_chunk(workloads[i:i + chunk], seeds, costs, method, ops, dist)
             for i in range(0, len(workloads), chunk)]
    nproc = max(p["contenders"].shape[-1] for p in parts)
    out = {}
    for k in parts[0]:
        if k in ("contenders", "total"):
            out[k] = np.concatenate([np.pad(p[k], ((0, 0), (0, 0), (0, nproc - p[k].shape[-1]))) for p in parts])
        elif k == "thread_rate":
            out[k] = [r for p in parts for r in p[k]]
        else:
            out[k] = np.concatenate([p[k] for p in parts])
    return out


def _solve_chunk(workloads, seeds, costs, method, ops, dist):
    routings = [route(w, s) for w in workloads for s in seeds]
    net = network(routings, costs, keep_threads=(method == "simulation"))
    del routings
    P = net.n_points
    if method == "mva":
        # fixed service times: residual-service correction (scv = 0), see solver.mva
        res = mva(net, scv=1.0 if dist == "exponential" else 0.0)
        thr_rate = (res["x"] * 1e9)[net.thr_cls]
        rho = res["rho"]
        # visit rate of every station (operations through it per ns)
        lam_st = np.bincount(net.ent_station, weights=net.cls_n[net.ent_cls] * net.ent_visit *
                             (res["x"][net.ent_cls]), minlength=net.st_home.size)
    else:
        sim = _des(net, [s for _ in workloads for s in seeds], ops=ops, dist=dist)
        thr_rate = sim["rate"] * 1e9
        rho, lam_st = sim["rho"], sim["visits"]   # the simulation's own measured utilisation
    thr_point = net.cls_point[net.thr_cls]
    counted = net.cls_counted[net.thr_cls]
    ops_s = np.bincount(thr_point, weights=thr_rate * counted, minlength=P)
    n_counted = np.bincount(thr_point, weights=counted.astype(float), minlength=P)
    runtime = np.repeat([w.runtime_s for w in workloads], len(seeds))
    # op-weighted lock utilisation over bucket stations (a merged row stands for st_mult stations)
    lam_st = lam_st * net.st_is_bucket * net.st_mult
    util = np.bincount(net.st_point, weights=lam_st * np.minimum(rho, 1.0), minlength=P) / np.maximum(
        np.bincount(net.st_point, weights=lam_st, minlength=P), 1e-300)
    coll = net.pt_collisions
    out = {
        "ops_per_s": ops_s,
        "ops_per_s_per_thread": ops_s / np.maximum(n_counted, 1),
        "loops": np.floor(ops_s * runtime),
        "bucket_utilisation": util,
        "collisions": coll.astype(np.int64),
    }
    shape = (len(workloads), len(seeds))
    out = {k: v.reshape(shape) for k, v in out.items()}
    # per-process counters of futex_numa: contenders / total (lock threads)
    nproc = max(w.processes for w in workloads)
    proc = np.concatenate([w.thread_proc for w in workloads for _ in seeds])
    key = thr_point * nproc + proc
    for name, mask in (("contenders", counted), ("total", ~counted)):
        per = np.bincount(key, weights=thr_rate * mask, minlength=P * nproc).reshape(P, nproc)
        out[name] = np.floor(per * runtime[:, None]).reshape(*shape, nproc)
    out["thread_rate"] = [thr_rate[thr_point == p] for p in range(P)]
    return out


def _attrs(workloads: list[FutexWorkload], costs: FutexCosts, method: str, extra: dict) -> dict:
    """The Dataset's attrs: the first workload's description, the resolved costs, every
    parameter, and the solver's caveat for all of them (:func:`method_note`) where it has one."""
    w = workloads[0]
    attrs = {"numalab_version": __version__, "workload": w.program, "method": method,
             "costs": json.dumps(costs.resolve(w.topology).to_dict()),
             "parameters": json.dumps({**_jsonable(w.params), **_jsonable(extra), "refcount": w.refcount,
                                       "squash": w.squash, "hash": w.hash, "base_small": w.base_small,
                                       "classic_home": w.classic_home})}
    attrs.update(w.topology.to_attrs())
    note = method_note(workloads, method)
    if note:
        attrs["method_note"] = note
    return attrs


def method_note(workloads, method: str) -> str | None:
    """A sentence for the Dataset (``attrs["method_note"]``) and the CLI when ``method`` is the
    MVA and a workload's threads each hash a few futexes (:data:`MVA_DEPARTS_KEYS`), where the
    MVA is known to depart from the simulation; None elsewhere."""
    if method != "mva":
        return None
    keys = max(int((w.thread_futexes >= 0).sum(axis=1).max(initial=0)) for w in workloads)
    if keys not in MVA_DEPARTS_KEYS:
        return None
    return (f"{keys} futexes a thread: here the MVA departs from the event simulation by up to 16-20 % "
            f"(docs/futex.md, 'Where the MVA departs from the simulation'); method='simulation' "
            f"(numalab futex hash|sweep --method simulation) measures it")


def _jsonable(d):
    return json.loads(json.dumps(d, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))


def _dataset(out, dims, coords, shape, attrs, program):
    import xarray as xr

    data_vars = {}
    for name, (units, long_name) in _VARS.items():
        data_vars[name] = (dims + ("seed",), out[name].reshape(shape), {"units": units, "long_name": long_name})
    if program == FUTEX_NUMA:
        nproc = out["contenders"].shape[-1]
        data_vars["contenders"] = (dims + ("seed", "process"), out["contenders"].reshape(*shape, nproc),
                                   {"units": "1", "long_name": "futex_numa 'contenders:' line: completed "
                                    "futex2_wait calls of the contender threads over -s seconds"})
        data_vars["total"] = (dims + ("seed", "process"), out["total"].reshape(*shape, nproc),
                              {"units": "1", "long_name": "futex_numa 'total:' line: lock acquisitions "
                               "of the lock threads (approximate: one bucket visit per cycle)"})
        coords = {**coords, "process": np.arange(nproc)}
    ds = xr.Dataset(data_vars, coords=coords, attrs=attrs)
    for name, a in _COORD_ATTRS.items():
        if name in ds.coords:
            ds[name].attrs.update(a)
    return ds


_COORD_ATTRS = {
    "buckets": {"units": "buckets", "long_name": "private-hash slots (private) or global table size "
                "(classic: whole table, numa: per node)",
                "kernel_name": "PR_FUTEX_HASH_SET_SLOTS / futex_hashmask + 1"},
    "mode": {"long_name": "kernel futex hash mode (classic <= 6.15, numa 6.16, private 6.17)"},
    "threads": {"units": "threads", "long_name": "perf bench -t / futex_numa -c"},
    "seed": {"long_name": "run seed (mm pointer / ASLR randomness of the hash; event times)"},
    "process": {"long_name": "process (separate mm) of a together() workload"},
}


def simulate(config: FutexWorkload, seeds=8, *, costs=None, method="mva", ops=400, dist="exponential"):
    """Solve one workload for several runs (seeds: the mm/ASLR randomness of the hash, and
    for ``method="simulation"`` the event times too) -> xarray Dataset with dims ``("seed",)``
    (+ ``"process"`` for futex_numa's per-process ``contenders``/``total`` lines).

    ``costs``: a :class:`FutexCosts` or dict overriding documented constants. ``method``:
    ``"mva"`` (approximate mean-value analysis, fast) or ``"simulation"`` (vectorised
    discrete-event simulation, ``ops`` operations per thread). ``dist``: ``"exponential"`` or
    ``"deterministic"`` think/service times; the simulation draws them, the MVA applies a
    residual-service correction for the deterministic case. ``bucket_utilisation`` is the
    MVA's for ``"mva"`` and the simulation's measured one for ``"simulation"``.
    """
    if not isinstance(config, FutexWorkload):
        raise NumalabValueError(
            f"config of type {type(config).__name__}; allowed: a FutexWorkload from "
            f"perf_bench_hash(), futex_numa() or together()"
        )
    check_choice("method", method, METHODS)
    check_choice("dist", dist, DISTS)
    seeds = check_seeds(seeds)
    costs = coerce_costs(costs)
    out = solve_points([config], seeds, costs, method, check_int("ops", ops, lo=10), dist)
    ds = _dataset(out, (), {"seed": seeds}, (len(seeds),), _attrs([config], costs, method, {"mode": config.mode.name}),
                  config.program)
    return ds


def sweep(buckets=None, mode=MODES, threads=None, *, seeds=8, program=PERF_BENCH, topology="2s-128",
          costs=None, method="mva", ops=400, dist="exponential", **workload_kw):
    """Sweep bucket counts x kernel modes x thread counts -> one Dataset.

    Each of ``buckets``, ``mode``, ``threads`` given as a list becomes a dimension (in that
    order), a scalar or None stays fixed. ``mode``: kernel mode names, :class:`HashMode`
    objects (a researcher's own hash) or ``"package.module:NAME"`` specs; the coordinate holds
    the names. ``buckets``: private-hash slots for a mode with private tables (``"private"``)
    or the global table size (``"classic"`` whole table, ``"numa"`` per node); None = the
    kernel's size. ``threads``: perf bench ``-t`` (None = all CPUs) or futex_numa ``-c``. Other keyword
    arguments go to the workload constructor (e.g. ``futexes=1024``, ``shared=True``).
    """
    check_choice("program", program, PROGRAMS)
    check_choice("method", method, METHODS)
    check_choice("dist", dist, DISTS)
    topology = Topology.coerce(topology)
    seeds = check_seeds(seeds)
    costs = coerce_costs(costs)
    # a mode is an object or a string; sweep by the objects, label by their names
    if isinstance(mode, (list, tuple, np.ndarray)):
        objs = [hash_mode(m) for m in mode]
        mode = [m if isinstance(m, str) else o.name for m, o in zip(mode, objs)]
        by_label = dict(zip(mode, objs))
    else:
        by_label = {str(mode) if isinstance(mode, str) else hash_mode(mode).name: hash_mode(mode)}
        mode = next(iter(by_label))
    axes = {"mode": mode, "buckets": buckets, "threads": threads}
    dims, coords, values = [], {}, {}
    for name in ("mode", "buckets", "threads"):
        v = axes[name]
        if isinstance(v, (list, tuple, np.ndarray)):
            v = list(v)
            if not v:
                raise NumalabValueError(f"{name} is empty; allowed: a value or a non-empty list")
            check_distinct(name, v)
            dims.append(name)
            coords[name] = v
            values[name] = v
        else:
            values[name] = [v]
    if "buckets" in coords and any(b is None for b in coords["buckets"]):
        raise NumalabValueError("buckets list holds None; allowed: ints (use buckets=None alone for the kernel default)")
    workloads = [workload_for(program, topology, mode=by_label[m], buckets=b, threads=t, **workload_kw)
                 for m, b, t in product(values["mode"], values["buckets"], values["threads"])]
    out = solve_points(workloads, seeds, costs, method, check_int("ops", ops, lo=10), dist)
    shape = tuple(len(coords[d]) for d in dims) + (len(seeds),)
    coords["seed"] = seeds
    extra = {k: values[k][0] for k in ("mode", "buckets", "threads") if k not in dims}
    ds = _dataset(out, tuple(dims), coords, shape, _attrs(workloads, costs, method, extra), program)
    ds.attrs["swept"] = ",".join(dims)
    return ds

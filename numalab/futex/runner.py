"""The ``"futex"`` sweep runner: :func:`numalab.futex.simulate` driven by the sweep machinery.

Parameters: ``mode``, ``buckets`` (-1 = kernel size), ``threads`` (default: the program's own),
``topology``, ``program``, ``futexes``, ``shared``, ``method``, ``ops``. One call per point (see
:func:`run_futex`).

It lives beside the model it runs and uses the public futex and topology APIs and the sweeps
registry only; importing it registers the runner.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from numalab import futex
from numalab.errors import check_int, check_str
from numalab.sweeps.registry import Param, Runner, names_or_str, register_runner
from numalab.topology import check_topology

__all__ = ["run_futex", "RUNNER"]


def _futex_choices(attr: str):
    def lister():

        return getattr(futex, attr)

    return lister


def _check_mode(name, value):
    """A kernel mode's name, a registered one, or 'package.module:NAME' (imported here, so a
    spec that does not resolve fails before any work; the string travels to the workers)."""
    futex.hash_mode(check_str(name, value), name)
    return value


def _check_buckets(name, value):
    return check_int(name, value, lo=-1, hi=1 << 30)


def _check_threads(name, value):
    """A thread count >= 1, or None: the program's own (perf bench: one per CPU). 0 is refused:
    it ran the program's default while the coordinate said 0."""
    if value is None:
        return None
    return check_int(name, value, lo=1, hi=1 << 20)


def _check_flag(name, value):
    return check_int(name, value, lo=0, hi=1)


def _check_pos_int(name, value):
    return check_int(name, value, lo=1)


def _futex_params() -> list[Param]:
    return [
        Param("mode", _check_mode, default="private",
              long_name="futex hash mode (classic <= 6.15, numa 6.16, private 6.17, or package.module:NAME)"),
        Param("buckets", _check_buckets, default=-1, units="buckets",
              long_name="private-hash slots (private) or global table size (classic/numa); "
                        "-1 = the kernel's size, 0 = global hash (private mode)",
              kernel_name="futex_hash_mask + 1"),
        Param("threads", _check_threads, default=None, units="threads",
              long_name="perf bench -t / futex_numa -c (default: the program's own, perf bench: every CPU)"),
        Param("topology", check_topology, default="2s-128",
              long_name="machine topology: a preset, or a topology file as '<path>#<digest>'"),
        Param("program", names_or_str("futex programs", _futex_choices("PROGRAMS")),
              default="perf-bench-futex-hash", long_name="benchmark program"),
        Param("futexes", _check_pos_int, default=1024, units="futexes",
              long_name="futexes per thread (perf bench -f)"),
        Param("shared", _check_flag, default=0, units="1",
              long_name="1 = process-shared futexes (perf bench -S)"),
        Param("method", names_or_str("futex solvers", _futex_choices("METHODS")), default="mva",
              long_name="solver: mva or simulation"),
        Param("ops", _check_pos_int, default=400, units="operations",
              long_name="operations per thread (method=simulation)"),
    ]


def _futex_workload(point: Mapping):

    kw = {}
    if point["program"] == "perf-bench-futex-hash":
        kw = {"futexes": point["futexes"], "shared": bool(point["shared"])}
    return futex.workload_for(
        point["program"], point["topology"], mode=point["mode"],
        buckets=None if point["buckets"] == -1 else point["buckets"],
        threads=point["threads"] or None, **kw,
    )


def _futex_prepare(values: dict) -> None:
    """Build every futex workload once, so a bad combination fails before any work."""
    names = ["program", "topology", "mode", "buckets", "threads", "futexes", "shared"]
    for combo in itertools.product(*(values[n] for n in names)):
        _futex_workload(dict(zip(names, combo)))


def run_futex(points: list[dict]):
    """Point runner of the futex model: one ``futex.simulate`` call per point.

    Not one call for all seeds: the MVA fixed point stops when the *largest* change over the
    call's points is below tolerance, so a seed solved next to other seeds can differ in the
    last bits from the same seed solved alone -- and a sweep must not depend on its batching.
    The workload is built once per batch (all points share it)."""

    p0 = points[0]
    wl = _futex_workload(p0)
    return [futex.simulate(wl, seeds=[p["seed"]], method=p0["method"], ops=p0["ops"]).isel(seed=0)
            for p in points]


RUNNER = register_runner(Runner(
    "futex", _futex_params, run_futex,
    batch_vary=(),
    requires=("numalab.futex",),
    prepare=_futex_prepare,
    description="futex hash-bucket model (numalab.futex.simulate)",
))

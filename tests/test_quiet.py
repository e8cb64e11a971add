"""Quiet steps taken in one go (numalab/engine/quiet.py) leave bit for bit the state of the
same steps taken one by one (``Batch.jump_quiet = False``, the oracle): every array of every
state dataclass, the time series, the clock, the step count and the draws' position."""

import dataclasses

import numpy as np
import pytest

import numalab as nl
from numalab.engine import make_batch, quiet
from numalab.topology import Topology

MiB = 1 << 20
STATE = ("tasks", "numa", "groups", "mm", "vmas", "regions", "counters", "outcome", "obs", "rates")


def _same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def state(b) -> dict:
    out = {"now": b.now, "steps": b.steps, "draw.pos": b.draw.pos, "prot.idx": b.prot.idx,
           "prot.thresh": b.prot.thresh}
    for name in STATE:
        obj = getattr(b, name)
        for f in dataclasses.fields(obj):
            if name == "rates" and f.name == "step_local":   # a cache: recomputed alike
                continue
            out[f"{name}.{f.name}"] = getattr(obj, f.name)
    return out


def both(wl, policy, seeds, **options):
    """The batch run step by step and with quiet stretches taken in one go; the number of
    steps the second took in stretches."""
    runs = []
    taken = []
    orig = quiet.skip

    def counting(b, q):
        taken.append(q.k)
        orig(b, q)
    for jump in (False, True):
        b = make_batch(wl, nl.Policy.parse(policy), seeds, kernel="numpy", **options)
        b.jump_quiet = jump
        quiet.skip = counting if jump else orig
        try:
            b.run()
        finally:
            quiet.skip = orig
        runs.append(b)
    return runs[0], runs[1], sum(taken)


def assert_same(a, b):
    sa, sb = state(a), state(b)
    changed = sorted(k for k in sa if not _same(sa[k], sb[k]))
    assert not changed, f"state differs in {changed}"


CASES = [
    ("numa02", "2s-ivb-40", dict(size_bytes=256 * MiB, loops=200), "6.12", [0], {}),
    ("numa01", "2s-ivb-40", dict(size_bytes=256 * MiB, loops=3), "6.4", [0, 5], {}),
    ("numa01_THREAD_ALLOC", "2s-ivb-40", dict(size_bytes=256 * MiB, loops=3), "rfc2024-hot-shared", [3],
     dict(max_time=20.0)),
    # the load balancer pulling often (pulls end stretches), a short sample interval
    ("numa02", "2s-ivb-40", dict(size_bytes=128 * MiB, loops=600), "pre-6.4", [1, 2],
     dict(lb_migrate_hz=0.05, time_resolution=0.3)),
    # a step that does not divide the sample interval, and max_time inside a stretch
    ("numa02", "4s-144", dict(size_bytes=256 * MiB, loops=300), "6.12+N=4", [0], dict(dt=0.03, max_time=7.31)),
]


@pytest.mark.parametrize("name,topo,kw,policy,seeds,options", CASES)
def test_quiet_stretches_leave_the_same_state(name, topo, kw, policy, seeds, options):
    wl = nl.workload(name, Topology.preset(topo), **kw)
    one, jumped, taken = both(wl, policy, seeds, **options)
    assert taken > one.steps // 4                    # the stretches are taken, and are not rare
    assert_same(one, jumped)


def test_kernel_debt_and_phase_ends_inside_reach():
    # tiny chunks end their phases every few steps; kernel debt larger than a step
    wl = nl.workloads.from_access_matrix(np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0], [0.2, 0.2, 1.0]]),
                                         topology=Topology(nodes=2, cpus_per_node=4, smt=2, name="tiny"),
                                         chunk_bytes=2 * MiB, loops=3000)
    one, jumped, taken = both(wl, "6.12", [0, 1, 2], costs={"task_migration_us": 90000.0, "hint_fault_us": 30000.0},
                              lb_migrate_hz=1.0)
    assert taken > 0 and np.all(one.outcome.done)
    assert_same(one, jumped)


def test_a_plan_never_reaches_past_an_event():
    # every stretch a plan offers is quiet when stepped: the same steps one by one change
    # nothing but the running sums (no scan, fault, phase end or refresh)
    wl = nl.workload("numa01", Topology.preset("2s-ivb-40"), size_bytes=256 * MiB, loops=3)
    b = make_batch(wl, nl.Policy.profile("6.12"), [0], kernel="numpy", max_time=15.0)
    b.jump_quiet = False
    covered = 0
    from numalab.engine import observe
    next_sample = 0.0
    while b.now < 15.0 and not b.outcome.done.all():
        if b.now >= next_sample - 1e-9:
            observe.sample(b)
            next_sample += b.o.time_resolution
        q = quiet.plan(b, next_sample)
        if q is not None:
            covered += q.k
            runs, faults = b.counters.events["scan_runs"].copy(), b.counters.events["numa_hint_faults"].copy()
            phase, prot = b.tasks.phase.copy(), b.prot.idx
            for _ in range(q.k):
                b.step()
                assert not b.rates.dirty.any()
            assert np.array_equal(runs, b.counters.events["scan_runs"])
            assert np.array_equal(faults, b.counters.events["numa_hint_faults"])
            assert np.array_equal(phase, b.tasks.phase) and b.prot.idx is prot
        else:
            b.step()
    assert covered > b.steps // 3

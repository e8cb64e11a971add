"""Phase-by-phase checks of the compiled engine against the numpy engine.

:func:`before_phase` runs the numpy engine step by step and stops a batch right before one phase
of :meth:`numalab.engine.Batch.step`, returning two identical copies of the batch and of the
step's :class:`~numalab.engine.state.StepContext`. A test runs the numpy phase on one copy and
the compiled phase on the other (:func:`scratch_of` gives the compiled scratch of a context,
:func:`context_back` copies the compiled scratch's per-step fields back for comparison) and then
:func:`assert_same_state` holds every state array of the two batches (and the contexts) equal,
bit for bit (NaNs equal).

The cases (:data:`CASES`, :func:`small_cases`) cover the built-in workloads on presets of 2, 4
and 8 nodes (8 nodes: numpy's 8-way pairwise sums), every policy family, the switches, and
moments from the start of a run (numa01's bound init) to its end.
"""

from __future__ import annotations

import copy

import numpy as np

import numalab as nl
from numalab.engine import make_batch
from numalab.engine.compiled.state import ST_SOURCES, _get, make_scratch
from numalab.engine import balance, faults, placement, progress, scan

#: the phases of Batch.step in order (name -> the numpy phase call on (b, ctx))
PHASES = {
    "run_threads": lambda b, ctx: progress.run_threads(b, ctx),
    "scan_trigger": lambda b, ctx: scan.scan_trigger(b, ctx),
    "hinting_faults": lambda b, ctx: faults.hinting_faults(b, ctx),
    "numa_migrate_preferred": lambda b, ctx: placement.numa_migrate_preferred(b, ctx),
    "lb_moves": lambda b, ctx: balance.lb_moves(b, ctx.u_lb),
    "end_step": lambda b, ctx: b.end_step(ctx),
}
ORDER = tuple(PHASES)

#: (workload, preset, policy, seeds, engine options, overrides of the workload) -- full-size
#: runs are long, so most cases shrink the workload (threads, bytes, loops)
CASES = [
    ("numa01_THREAD_ALLOC", "2s-128", "6.12", [0, 3], {}, dict(threads=16, size_bytes=256 << 20, loops=40)),
    ("numa01", "2s-128", "rfc2023-p4", [1], {}, dict(threads=16, size_bytes=512 << 20, loops=20)),
    ("numa01", "8n-genoa-nps4", "6.4", [2], {}, dict(threads=12, size_bytes=256 << 20, loops=20)),
    ("numa02", "4s-144", "rfc2023-p6", [0, 5], {}, dict(threads=36, size_bytes=256 << 20)),
    ("numa02_SMT", "2s-224-spr", "rfc2024-pid-bits", [4], {}, dict(threads=56, size_bytes=256 << 20)),
    ("numa01", "2s-ivb-40", "rfc2023-p2", [0], dict(first_arrival=False), dict(size_bytes=512 << 20, loops=20)),
    ("numa01_THREAD_ALLOC", "2s-88-csl", "6.7", [7], dict(init_coherence=False, lb_migrate_hz=0.05),
     dict(threads=22, size_bytes=256 << 20, loops=30)),
    ("numa02", "2s-ivb-40", "pre-6.4", [2], dict(thp=False, scan_size_mb=64), dict(size_bytes=64 << 20, loops=2000)),
    ("numa01", "2s-128", "rfc2024-hot-shared", [3], dict(lb_migrate_hz=0.2, sticky_locality=False),
     dict(threads=24, size_bytes=256 << 20, loops=20)),
]


def _copy(b):
    """A deep copy of batch ``b`` that shares its read-only parts (layout, workload, policy)."""
    memo = {id(b.lay): b.lay, id(b.wl): b.wl, id(b.topo): b.topo, id(b.pol): b.pol, id(b.costs): b.costs,
            id(b.o): b.o, id(b.rule): b.rule}
    out = copy.deepcopy(b, memo)
    # deepcopy copies each counter column on its own: make them the copied table's views again
    out.counters.events = {k: out.counters.table[:, i] for i, k in enumerate(out.counters.events)}
    return out


def _copy_ctx(ctx, memo=None):
    return copy.deepcopy(ctx, memo or {})


def make_case(name, preset, policy, seeds, options, overrides):
    """A fresh numpy batch of one case."""
    wl = nl.workload(name, nl.Topology.preset(preset), **overrides)
    return make_batch(wl, policy, seeds, **options)


def before_phase(b, phase: str, steps):
    """Step numpy batch ``b`` and, at each step index of ``steps`` (ascending), yield
    ``(b_numpy, ctx_numpy, b_other, ctx_other)``: two copies of the batch and of its step context
    positioned right before ``phase`` of that step. ``b`` itself advances past the last one."""
    want = sorted(set(int(s) for s in steps))
    k = 0
    for target in want:
        while k < target:
            b.step()
            k += 1
        ctx = b.begin_step()
        for name in ORDER:
            if name == phase:
                b1, c1 = _copy(b), _copy_ctx(ctx)
                b2, c2 = _copy(b), _copy_ctx(ctx)
                yield b1, c1, b2, c2
            PHASES[name](b, ctx)
        k += 1


def scratch_of(b, ctx):
    """The compiled scratch of numpy step context ``ctx`` of batch ``b``: one step (k = 0) from
    ``ctx.t0`` to ``ctx.t1`` whose uniforms are the context's, and its per-step fields."""
    R, K, T = b.R, b.lay.K, b.lay.T
    X = make_scratch(b, [ctx.t0, ctx.t1])
    X.draws[:, 0, :2 * K] = ctx.u_prot.reshape(R, 2 * K)
    X.draws[:, 0, 2 * K:2 * K + T] = ctx.u_task
    X.draws[:, 0, 2 * K + T:] = ctx.u_lb
    X.running[:] = ctx.running
    if ctx.phase0 is not None:
        X.phase0[:] = ctx.phase0
        X.left0[:] = ctx.left0
        X.used_k[:] = ctx.used_k
    X.slot[:] = ctx.slot
    if ctx.want is not None:
        X.want[:] = ctx.want
    return X


def compiled_phase(name, L, Q, S, X, r, k=0, b=None):
    """Phase ``name`` (numalab.engine.compiled.loop.PHASES) of replica ``r`` at step ``k``, called
    from Python with the named tuples (the phases themselves take structs and have no Python
    entry); ``Q`` None: the policy of batch ``b``."""
    from numalab.engine.compiled.loop import PHASES, call_phase

    call_phase(PHASES.index(name), L, compiled_policy(b) if Q is None else Q, S, X, r, k)


def compiled_policy(b):
    """The compiled policy of batch ``b``. A policy with a user rule, which the compiled engine
    leaves to numpy, is encoded without it: the phases that read only the history (progress,
    detect, handle) are checked on those random cases too."""
    from numalab.engine.compiled.decide import encode

    pol = b.pol
    if pol.user_rules:
        values = pol.values()
        values.pop("windows")
        pol = nl.Policy(history=pol.windows, base=values.pop("base", pol.base), **values)
    return encode(pol)


def context_back(X):
    """The per-step fields of compiled scratch ``X`` as a dict to compare with a numpy context."""
    return dict(running=X.running.copy(), phase0=X.phase0.copy(), left0=X.left0.copy(), used_k=X.used_k.copy(),
                slot=X.slot.copy(), want=X.want.copy())


def _equal(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        return bool(np.array_equal(a, b, equal_nan=True)) and bool(np.array_equal(np.signbit(a), np.signbit(b)))
    return bool(np.array_equal(a, b))


def assert_same_state(b_np, b_c, *, skip=(), where=""):
    """Every array of the batch state (:data:`numalab.engine.compiled.state.ST_SOURCES`, plus
    ``now``) equal in both batches, bit for bit; ``skip``: field names to leave out (e.g. state
    the numpy engine keeps only while a region is protected)."""
    bad = []
    for name, path in ST_SOURCES:
        if name in skip:
            continue
        x, y = _get(b_np, path), _get(b_c, path)
        if not _equal(x, y):
            diff = np.argwhere(~np.isclose(np.asarray(x, float), np.asarray(y, float), rtol=0, atol=0,
                                           equal_nan=True)) if np.asarray(x).shape == np.asarray(y).shape else "shape"
            bad.append(f"{name} ({path}) differs at {diff[:5].tolist() if not isinstance(diff, str) else diff}")
    if bad:
        raise AssertionError(f"{where}: " + "; ".join(bad))


def assert_same_context(ctx, X, *, fields=("slot", "want", "phase0", "left0", "used_k"), where=""):
    """The numpy step context's per-step fields equal the compiled scratch's (``want``: None in
    numpy means no request)."""
    got = context_back(X)
    bad = []
    for f in fields:
        ref = getattr(ctx, f)
        if f == "want" and ref is None:
            ref = np.zeros_like(got["want"])
        if ref is None:
            continue
        if not _equal(ref, got[f]):
            bad.append(f)
    if bad:
        raise AssertionError(f"{where}: step context differs in {bad}")


def small_case(draw_like_reference):
    """A small random workload, policy, seed and options, as ``tests/test_engine_reference.py``'s
    ``cases`` strategy draws them (pass its drawn tuple through)."""
    wl, policy, seed, opts = draw_like_reference
    return make_batch(wl, policy, [seed], **opts)

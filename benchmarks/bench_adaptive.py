"""Adaptive histories on the compiled engine against the numpy engine (figures printed; not a test).

Until 0.9.1 a policy with an adaptive history (``history="adaptive"``, :mod:`numalab.adaptive`)
ran on the numpy engine only; :mod:`numalab.engine.compiled.adapt` runs its rules compiled.
For each rule and workload this prints the CPU seconds per seed of ``nl.simulate`` with
``kernel="numpy"`` and ``kernel="numba"`` in one process (the two alternated, best of
``--rounds``), their ratio, the fixed N = 2 compiled for scale, and whether the two engines'
Datasets are identical (they must be: the compiled engine is bit-identical)::

    python benchmarks/bench_adaptive.py                 # 2 seeds, 2 rounds
    python benchmarks/bench_adaptive.py --seeds 4 --rounds 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import numalab as nl
from numalab.adaptive import ADAPT_RULES

CASES = (("numa01_THREAD_ALLOC", "2s-ivb-40"), ("numa01", "2s-ivb-40"), ("numa01_THREAD_ALLOC", "2s-128"))


def _cpu(wl, policy, seeds, kernel):
    t = time.process_time()
    ds = nl.simulate(wl, policy, seeds=seeds, kernel=kernel)
    return time.process_time() - t, ds


def _same(a, b) -> bool:
    return all(np.array_equal(a[v].values, b[v].values, equal_nan=a[v].dtype.kind == "f") for v in a.data_vars)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=2, help="seeds per run (default 2)")
    p.add_argument("--rounds", type=int, default=2, help="alternated rounds, best kept (default 2)")
    args = p.parse_args(argv)
    seeds = list(range(args.seeds))
    # compile once (the first compiled run of a process loads the engine from numba's cache)
    nl.simulate(nl.workload("numa02", "2s-ivb-40"), nl.Policy.profile("6.12", history="adaptive", adapt="span"),
                seeds=[0], kernel="numba", max_time=2.0)
    print(f"CPU s per seed, {args.seeds} seeds, best of {args.rounds} alternated rounds")
    print(f"{'workload':<20} {'preset':<10} {'history':<12} {'numpy':>8} {'compiled':>9} {'ratio':>7} "
          f"{'N=2 compiled':>13}  identical")
    for name, preset in CASES:
        wl = nl.workload(name, preset)
        fixed = min(_cpu(wl, "6.12", seeds, "numba")[0] for _ in range(args.rounds)) / len(seeds)
        for rule in ADAPT_RULES:
            policy = nl.Policy.profile("6.12", history="adaptive", adapt=rule)
            best = {"numpy": np.inf, "numba": np.inf}
            out = {}
            for _ in range(args.rounds):
                for kernel in ("numpy", "numba"):
                    t, out[kernel] = _cpu(wl, policy, seeds, kernel)
                    best[kernel] = min(best[kernel], t / len(seeds))
            print(f"{name:<20} {preset:<10} {rule:<12} {best['numpy']:8.2f} {best['numba']:9.3f} "
                  f"{best['numpy'] / best['numba']:6.1f}x {fixed:13.3f}  {_same(out['numpy'], out['numba'])}")


if __name__ == "__main__":
    main()

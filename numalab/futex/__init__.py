"""Futex hash-bucket contention: the public face of numalab's futex model.

Kernel modes (:data:`MODES`, objects in :data:`HASH_MODES`): ``"classic"`` (one global
table, <= 6.15), ``"numa"`` (6.16 per-node tables, FUTEX2_NUMA / FUTEX2_MPOL), ``"private"``
(6.17 per-process tables). A mode is a :class:`HashMode` (its tables, where a bucket lives,
what ``buckets`` sets, how a key is routed); a researcher's own hash is a subclass, accepted
wherever ``mode=`` is (docs/futex.md, "Your own hash mode"). Spec:
``spec/kernel-futex-hash.md``. The package's modules, in import order (each imports only
the ones above it):

``hash``         key -> bucket: the hash modes, table sizes, ``__futex_hash``, the private-hash
                 size rule
``workloads``    perf bench futex hash / futex_numa shapes, :func:`workload_for`, :func:`route`
``costs``        :class:`FutexCosts`: what one bucket visit costs on the hardware
``stations``     the closed network (:func:`network`): who visits which hb lock, priced
``meanvalue``    :func:`mva`, approximate mean-value analysis of the network
``events_compiled``  the simulation's event loop compiled with numba (optional; imports none
                 of the others)
``events``       the discrete-event simulation of the same network
``solver``       the four above, re-exported (the contention solver's one import)
``calibration``  :func:`calibrate`: fit cost constants to measured rows (with standard
                 errors); :func:`predict`: the MVA's figure for such rows
``api``          :func:`simulate` and :func:`sweep` -> xarray Datasets

Every public name is re-exported here; import from ``numalab.futex``, not from the modules.
No module is named like a function the package exports (``calibrate`` is the function,
``calibration`` its module), so ``import numalab.futex.calibration`` cannot shadow it.

::

    import numalab as nl
    wl = nl.futex.perf_bench_hash("2s-128", threads=64, buckets=256)
    ds = nl.futex.simulate(wl, seeds=8)            # dims ("seed",)
    sw = nl.futex.sweep(buckets=[2, 16, 1024], mode=["numa", "private"], threads=[16, 64])
    fit = nl.futex.calibrate(rows, "2s-128")        # fitted constants, residuals, predictions
    print(fit.summary())                            # each constant +- its standard error

The cost model (which term dominates where, every default and its source) is in
``docs/futex.md``.
"""

from .api import DISTS, METHODS, method_note, simulate, solve_points, sweep
from .calibration import (
    DEFAULT_FIT, CalibrationResult, CrossValidation, banded_constants, calibrate, cross_validate, predict, predict_band,
)
from .hash import (
    CLASSIC, HASH_MODES, HASHES, MODES, NUMA, PRIVATE, ClassicHash, HashMode, KeyView, NodeHash, PrivateHash,
    classic_hashsize, hash_mode, mode_names, node_hashsize, private_default_slots, register_mode,
)
from .solver import COST_NAMES, UNMEASURED, FutexCosts, coerce_costs, mva, network
from .workloads import (
    FUTEX_NUMA, PERF_BENCH, PROGRAMS, REFCOUNTS, FutexWorkload, futex_numa, perf_bench_hash, route,
    together, workload_for,
)

__all__ = [
    # constants
    "MODES", "REFCOUNTS", "HASHES", "PROGRAMS", "METHODS", "DISTS", "PERF_BENCH", "FUTEX_NUMA",
    "DEFAULT_FIT", "COST_NAMES", "UNMEASURED",
    # workloads
    "FutexWorkload", "perf_bench_hash", "futex_numa", "together", "workload_for", "route",
    # hash modes and table sizes
    "HashMode", "ClassicHash", "NodeHash", "PrivateHash", "CLASSIC", "NUMA", "PRIVATE", "HASH_MODES",
    "KeyView", "hash_mode", "register_mode", "mode_names",
    "classic_hashsize", "node_hashsize", "private_default_slots",
    # costs and solvers
    "FutexCosts", "coerce_costs", "network", "mva",
    # results
    "simulate", "sweep", "solve_points", "method_note", "calibrate", "predict", "CalibrationResult", "cross_validate",
    "CrossValidation", "predict_band", "banded_constants",
]

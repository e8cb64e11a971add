"""numalab: a Jupyter-first research toolkit for Linux automatic NUMA balancing's access-PID
history and futex hash-bucket contention.

The top-level names are imported lazily, so ``import numalab`` stays cheap and no module
imports everything::

    import numalab as nl
    topo = nl.Topology.preset("2s-128")
    pol = nl.Policy.profile("6.12")
"""

from importlib import import_module

from ._version import __version__

# public name -> (module, attribute or None for the module itself)
_LAZY = {
    "Topology": ("numalab.topology", "Topology"),
    "Policy": ("numalab.policy", "Policy"),
    "Rule": ("numalab.rules", "Rule"),
    "rule": ("numalab.rules", "rule"),
    "rules": ("numalab.rules", None),
    "ScanView": ("numalab.scanview", "ScanView"),
    "policy": ("numalab.policy", None),
    "decision_matrix": ("numalab.policy", "decision_matrix"),
    "workload": ("numalab.workloads", "workload"),
    # the module, which is callable: nl.workloads() lists the names and nl.workloads.<name> is
    # the module's, whichever of the two was touched first (importing the submodule rebinds it)
    "workloads": ("numalab.workloads", None),
    "simulate": ("numalab.engine", "simulate"),
    "scan_trace": ("numalab.engine.tracing", "scan_trace"),
    "scan_map": ("numalab.engine.scanmap", "scan_map"),
    "sweep": ("numalab.sweeps", "sweep"),
    "futex": ("numalab.futex", None),
    "report": ("numalab.report", None),
    "stats": ("numalab.stats", None),
    "interpret": ("numalab.interpret", None),
    "data": ("numalab.data", None),
    "plots": ("numalab.plots", None),
    "widgets": ("numalab.widgets", None),
    "hashing": ("numalab.hashing", None),
    "history": ("numalab.history", None),
    "adaptive": ("numalab.adaptive", None),
    "fidelity": ("numalab.fidelity", None),
    "compare": ("numalab.comparison", "compare"),
    "errors": ("numalab.errors", None),
    "engine": ("numalab.engine", None),
    "counters": ("numalab.counters", None),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name):
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'numalab' has no attribute {name!r}") from None
    module = import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)

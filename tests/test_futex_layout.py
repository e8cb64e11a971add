"""Layout of the numalab.futex package: what importing it gives a user.

The package re-exports every public name; no submodule shares a name with an exported
function (importing such a submodule would replace the function by the module on the
package, the old ``import numalab.sweep`` bug); modules import only those below them in the
layering the package docstring documents; the flat pre-package modules are gone."""

import ast
import importlib
import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import numalab.futex as futex

SUBMODULES = sorted(m.name for m in pkgutil.iter_modules(futex.__path__))
#: import order of numalab/futex/__init__.py's docstring: a module may import only earlier ones
LAYERS = ["hash", "workloads", "costs", "stations", "meanvalue", "events_compiled", "events", "solver", "calibration", "api",
          "runner"]  # runner: the sweeps' "futex" kind

#: every public name numalab.futex had as a flat module (its __all__ and the other public
#: names it exposed), which notebooks, the CLI and the sweep runner use
NAMES_BEFORE_THE_PACKAGE = [
    "COST_NAMES", "CalibrationResult", "DEFAULT_FIT", "FutexCosts", "FutexWorkload", "HASHES",
    "METHODS", "MODES", "PROGRAMS", "REFCOUNTS", "calibrate", "classic_hashsize", "futex_numa",
    "node_hashsize", "perf_bench_hash", "private_default_slots", "simulate", "sweep", "together",
    "workload_for", "DISTS", "FUTEX_NUMA", "PERF_BENCH", "coerce_costs", "mva", "network", "route",
]


def test_layers_name_every_submodule():
    assert sorted(LAYERS) == SUBMODULES


@pytest.mark.parametrize("name", NAMES_BEFORE_THE_PACKAGE)
def test_old_public_names_are_exported(name):
    assert name in futex.__all__
    assert not isinstance(getattr(futex, name), types.ModuleType)


def test_importing_every_submodule_shadows_no_export():
    exported = {n: getattr(futex, n) for n in futex.__all__}
    for m in SUBMODULES:
        importlib.import_module(f"numalab.futex.{m}")
    assert not set(SUBMODULES) & set(futex.__all__)
    for n, obj in exported.items():
        assert getattr(futex, n) is obj, n


def test_calibrate_is_the_function_after_importing_calibration():
    import numalab.futex.calibration as calibration
    import numalab as nl

    assert nl.futex.calibrate is calibration.calibrate and callable(nl.futex.calibrate)
    assert nl.futex.simulate.__module__ == "numalab.futex.api"


def _package_imports(path: Path) -> set[str]:
    """Sibling modules of numalab.futex that a module imports, at top level or in a function."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                out.add(node.module.split(".")[0])
            elif node.level == 1:
                out |= {a.name for a in node.names}
            elif node.level == 0 and (node.module or "").startswith("numalab.futex"):
                out.add((node.module.split(".") + ["__init__"])[2])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[2] for a in node.names if a.name.startswith("numalab.futex.")}
    return out


@pytest.mark.parametrize("module", LAYERS)
def test_modules_import_only_lower_layers(module):
    path = Path(futex.__file__).with_name(f"{module}.py")
    below = set(LAYERS[:LAYERS.index(module)])
    assert _package_imports(path) <= below, f"{module} imports {sorted(_package_imports(path) - below)}"


@pytest.mark.parametrize("old", ["futex_hash", "futex_workloads", "futex_solver", "futex_calibrate"])
def test_flat_modules_are_gone(old):
    # no shim left behind (looked up on disk: an editable install's finder may map
    # numalab.* names to another checkout)
    assert not (Path(futex.__file__).parent.parent / f"{old}.py").exists()


def test_model_import_loads_no_xarray():
    # the model is numpy; xarray is imported only when a Dataset is built
    code = "import sys, numalab.futex; print(sorted(m for m in ('xarray', 'pandas', 'matplotlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

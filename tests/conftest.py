"""Shared pytest configuration: hypothesis profiles and a headless matplotlib backend."""

import os

import matplotlib
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")

# Agreement tests ask for max_examples explicitly (>= 300, see tests/test_*_reference.py);
# this profile only removes the wall-clock deadline, which flakes on a busy 2-core CI box.
settings.register_profile("numalab", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "numalab"))


# Files that cost the most (CPU seconds of a whole-suite run, --durations=0, summed per file),
# most expensive first. pytest-xdist (--dist loadfile --no-loadscope-reorder, pyproject.toml)
# hands files to workers in collection order, so these start first and the short files fill
# in behind them; with xdist's own order (most tests first) the browser file, six tests, came
# last and ran alone on one worker for minutes. The notebooks (nbval, 10-70 s each) follow
# these, then every other file in collection order; the order never changes what a test asserts.
COSTLY_FIRST = (
    "tests/test_browser.py", "tests/test_plots.py", "tests/test_reproduce.py", "tests/test_futex_solver.py",
    "tests/test_golden.py", "tests/test_widgets.py", "tests/test_report.py", "tests/test_robust.py",
    "tests/test_sweep.py", "tests/test_futex_published.py", "tests/test_fuzz_cli.py",
)


def pytest_configure(config):
    # The compiled engine (numalab.engine.compiled, numba) compiles once per install (~45 s of
    # CPU) and numba caches it beside the package. Compile it here, in the controller, before
    # pytest-xdist starts its workers: the workers, the notebook kernels and the sweep workers
    # then load it (~0.5 s each) instead of compiling it side by side on the same two cores.
    if hasattr(config, "workerinput"):
        return
    from numalab.engine.compiled import available
    if not available():
        return
    import numalab as nl
    from numalab.engine import make_batch
    from numalab.engine.compiled.decide import pack_policy
    from numalab.engine.compiled.loop import call_phase
    from numalab.engine.compiled.state import make_scratch, pack_layout, pack_state

    wl = nl.workload("numa01", nl.Topology.preset("2s-128"), threads=2, size_bytes=4 << 20, loops=1)
    make_batch(wl, "6.12", [0], kernel="numba", max_time=0.2).run()           # loop.advance
    b = make_batch(wl, "6.12", [0], kernel="numba", max_time=0.2)
    call_phase(0, pack_layout(b), pack_policy(b), pack_state(b), make_scratch(b, [0.0, b.dt]), 0, 0)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(COSTLY_FIRST)}
    first = {}
    for i, item in enumerate(items):
        first.setdefault(item.nodeid.split("::", 1)[0], i)
    # a stable sort on (rank, where the file began): each file's tests stay together, in order
    def key(item):
        f = item.nodeid.split("::", 1)[0]
        return rank.get(f, len(rank) + (not f.startswith("notebooks/"))), first[f]
    items.sort(key=key)

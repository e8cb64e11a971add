"""Shared pytest configuration: hypothesis profiles and a headless matplotlib backend."""

import os

import matplotlib
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")

# Agreement tests ask for max_examples explicitly (>= 300, see tests/test_*_reference.py);
# this profile only removes the wall-clock deadline, which flakes on a busy 2-core CI box.
settings.register_profile("numalab", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "numalab"))


# Files that never run the NUMA-balancing engine compiled (found by logging each compiled
# run's PYTEST_CURRENT_TEST over a whole session), costliest first: they go right after the
# browser file, so they keep the other core busy while the engine compiles (pytest_configure;
# ~70 s of CPU against a ~50 s compile). The phase tests (test_compiled_*) are not here: they
# compile the engine's phases through call_phase.
ENGINE_FREE_FIRST = (
    "test_report", "test_futex_published", "test_plots", "test_stats", "test_core_reference",
    "test_adaptive", "test_futex_fidelity", "test_futex_compiled", "test_futex_reference", "test_history",
    "test_report_robust", "test_futex_solver", "test_hashing", "test_layout", "test_explore",
    "test_futex_api", "test_cli", "test_futex_hash", "test_probe_clock", "test_engine_fastpaths",
    "test_libm", "test_futex_cli", "test_futex_modes", "test_futex_clock", "test_futex_layout",
)

# Files that cost the most (CPU seconds of a whole-suite run, --durations=0, summed per file),
# most expensive first. pytest-xdist (--dist loadfile --no-loadscope-reorder, pyproject.toml)
# hands files to workers in collection order, so these start first and the short files fill
# in behind them; with xdist's own order (most tests first) the browser file, six tests, came
# last and ran alone on one worker for minutes. The notebooks (nbval, 10-70 s each) follow
# these, then every other file in collection order; the order never changes what a test asserts.
COSTLY_FIRST = (
    "tests/test_browser.py",
    *(f"tests/{name}.py" for name in ENGINE_FREE_FIRST),   # while the engine compiles
    "tests/test_reproduce.py", "tests/test_golden.py", "tests/test_widgets.py", "tests/test_robust.py",
    "tests/test_sweep.py", "tests/test_fuzz_cli.py",
)


def pytest_configure(config):
    # Every child Python a test starts imports the numalab under test, as the console script
    # `numalab` does, never the checkout's files because its working directory (or `-c`/`-m`)
    # puts them first on sys.path: in a checkout installed without -e (.ci/run) those are a
    # second, untested copy, and numba compiled the engine again for it (~45 s of CPU). A child
    # that needs a directory names it on PYTHONPATH. Set before pytest-xdist starts its workers.
    os.environ["PYTHONSAFEPATH"] = "1"
    # The compiled engine (numalab.engine.compiled, numba) compiles once per install (~45 s of
    # CPU on one core) and numba caches it beside the package. tests/_warm_engine.py compiles
    # it in the background while the session starts; it holds the engine's compile lock
    # (numalab.engine.compiled._nb.compile_lock) from before the workers start, so a worker or
    # notebook kernel that reaches the engine meanwhile waits and then loads the cache instead
    # of compiling the same code beside it, and the files that never run the engine
    # (ENGINE_FREE_FIRST) use the other core. With a warm cache the script ends in a second.
    if hasattr(config, "workerinput"):
        return
    from numalab.engine.compiled import available
    if not available():
        return
    import subprocess
    import sys
    from pathlib import Path

    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("_warm_engine.py"))],
                            stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()          # "locked", or "" if it ended (its error is on stderr)
    config._numalab_warm = proc


def pytest_unconfigure(config):
    # a whole run ends long after the compile; a run of a few files may end before it: stop it
    # then (numba writes no cache for an unfinished compile, so the next run compiles again)
    proc = getattr(config, "_numalab_warm", None)
    if proc is None:
        return
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    proc.stdout.close()


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

"""nl.sweep: grid expansion, validation, cache and resume, executors (local processes, a real
dask LocalCluster), progress and the ``numalab sweep`` command.

The machinery is driven by the deterministic "toy" runner of tests/_sweep_helpers.py, registered
through the public ``numalab.sweeps.register_runner`` hook; the real engine / futex runners have
their own tests at the end of this file.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import _sweep_helpers as helpers
import numalab.sweeps as S
from numalab.cli import main
from numalab.errors import NumalabEnvironmentError, NumalabValueError

GRID = {"size": [3, 5], "rate": [1.0, 2.0, 0.5], "label": ["a", "b"]}


@pytest.fixture(autouse=True)
def _fresh_counter(monkeypatch, tmp_path):
    helpers.CALLS.clear()
    monkeypatch.delenv("NUMALAB_TOY_SLEEP_S", raising=False)
    # a stray cache=True must never touch the real home directory
    monkeypatch.setenv("NUMALAB_CACHE", str(tmp_path / "default-cache"))
    yield


def computed_points() -> int:
    return sum(helpers.CALLS)


def cache_files(root: Path) -> list[Path]:
    return sorted(root.glob("v*/*.nc"))


# ------------------------------------------------------------------------------ grid -> dims
def test_grid_dims_coords_and_attrs():
    grid = {"label": ["a", "b"], "size": [3, 5], "rate": [2.0]}
    ds = S.sweep(grid, seeds=[7, 1, 4], cache=False, progress=False, workers=1)
    # swept names in grid order, then seed, then the model's own dims; single values are scalars
    assert ds["value"].dims == ("label", "size", "seed")
    assert ds["counts"].dims == ("label", "size", "seed", "bin")
    assert ds["rate"].ndim == 0 and float(ds["rate"]) == 2.0
    assert list(ds["seed"].values) == [7, 1, 4]
    assert list(ds["label"].values) == ["a", "b"] and ds["size"].dtype == np.int64
    assert ds["size"].attrs["units"] == "draws" and ds["value"].attrs["units"] == "s"
    assert ds["counts"].attrs["kernel_name"] == "toy_hist" and ds["counts"].dtype == np.uint64
    params = json.loads(ds.attrs["parameters"])
    assert params == {"label": ["a", "b"], "size": [3, 5], "rate": 2.0, "ragged": 0}
    assert ds.attrs["swept"] == ["label", "size"] and json.loads(ds.attrs["seeds"]) == [7, 1, 4]
    assert ds.attrs["model"] == "toy" and ds.attrs["sweep_kind"] == "toy"
    # every cell is the runner's answer for exactly that point
    for label in ("a", "b"):
        for size in (3, 5):
            for seed in (7, 1, 4):
                one = helpers.run_toy([{"size": size, "rate": 2.0, "label": label, "seed": seed}])
                cell = ds.sel(label=label, size=size, seed=seed)
                assert cell["value"].item() == one["value"].values[0]
                np.testing.assert_array_equal(cell["counts"].values, one["counts"].values[0])


def test_defaults_fill_unnamed_parameters_and_seed_count():
    ds = S.sweep({"size": [2, 6]}, seeds=2, cache=False, progress=False, workers=1)
    assert ds["value"].dims == ("size", "seed") and list(ds.seed.values) == [0, 1]
    # parameters left at their default are recorded in attrs, not as coordinates
    assert "label" not in ds.coords and "rate" not in ds.coords
    assert json.loads(ds.attrs["parameters"]) == {"size": [2, 6], "rate": 1.0, "label": "a", "ragged": 0}
    assert ds.attrs["swept"] == "size"  # netCDF stores a one-element list as a scalar


def test_batches_respect_the_batch_key_and_do_not_change_results():
    """size fixes shapes (run_toy asserts one size per call); rate and label may share a call."""
    S.sweep(GRID, seeds=4, cache=False, progress=False, workers=1)
    assert helpers.CALLS == [24, 24]  # one call per size: 3 rates x 2 labels x 4 seeds batched
    helpers.CALLS.clear()
    one_by_one = S.sweep(GRID, seeds=4, cache=False, progress=False, workers=1, batch_size=1)
    assert helpers.CALLS == [1] * 48
    batched = S.sweep(GRID, seeds=4, cache=False, progress=False, workers=1)
    xr.testing.assert_identical(one_by_one, batched)


def test_model_dims_of_different_length_are_padded_with_nan(tmp_path):
    """A model variable whose length depends on the point (a time series) is joined on its
    index coordinate; cells a point does not have are NaN."""
    grid = {"size": [3, 5], "ragged": 1}
    ds = S.sweep(grid, seeds=2, cache=tmp_path, progress=False, workers=1)
    assert ds["draws"].dims == ("size", "seed", "draw") and list(ds["draw"].values) == [0, 1, 2, 3, 4]
    assert np.isnan(ds["draws"].sel(size=3, draw=[3, 4])).all()
    for size in (3, 5):
        for seed in (0, 1):
            np.testing.assert_array_equal(ds["draws"].sel(size=size, seed=seed).values[:size],
                                          np.random.default_rng([seed, size]).random(size))
    assert ds["counts"].dtype == np.uint64  # variables of equal shape keep their dtype
    xr.testing.assert_identical(ds, S.sweep(grid, seeds=2, cache=tmp_path, progress=False, workers=1))


def test_kind_is_inferred_from_the_grid_keys():
    ds = S.sweep({"label": ["x", "y"]}, seeds=1, cache=False, progress=False, workers=1)
    assert ds.attrs["sweep_kind"] == "toy"
    # keys of two models: the error names the keys unknown to the model sharing most of them
    with pytest.raises(NumalabValueError, match=r"unknown toy sweep parameter\(s\) 'workload'; allowed: size"):
        S.sweep({"label": ["x"], "size": [3], "workload": ["numa01"]}, cache=False, progress=False)
    with pytest.raises(NumalabValueError, match=r"unknown numa sweep parameter\(s\) 'colour'; allowed: workload"):
        S.sweep({"colour": ["x"]}, cache=False, progress=False)


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "grid, seeds, match",
    [
        ({"sise": [3]}, 2, r"unknown toy sweep parameter\(s\) 'sise'; allowed: size, rate, label"),
        ({"size": []}, 2, r"grid\['size'\] is an empty list"),
        ({"size": ["three"]}, 2, r"size='three' must be an integer"),
        ({"size": [2.5]}, 2, r"size=2.5 must be an integer"),
        ({"size": [0]}, 2, r"size=0 is out of range"),
        ({"rate": [float("nan")]}, 2, r"rate=nan must be a finite number"),
        ({"label": [3]}, 2, r"label=3 must be a non-empty string"),
        ({"size": [3, 3]}, 2, r"holds duplicates"),
        ({"size": [3], "seed": [1]}, 2, r"'seed' is not allowed; pass seeds="),
        ({"size": [3]}, [], r"seeds is empty; allowed: a count in \[1, 100000\]"),
        ({"size": [3]}, 0, r"seeds=0 is out of range"),
        ({"size": [3]}, [1, 1], r"seeds=\[1, 1\] has duplicates"),
        ({"size": [3]}, "8", r"seeds='8'; allowed: a count"),
        ({"size": [3]}, [-1], r"seeds=-1 is out of range"),
        ([("size", [3])], 2, r"must be a mapping"),
    ],
)
def test_bad_input_names_the_parameter(grid, seeds, match):
    with pytest.raises(NumalabValueError, match=match):
        S.sweep(grid, seeds=seeds, cache=False, progress=False, kind="toy")
    assert helpers.CALLS == []


def test_bad_options():
    with pytest.raises(NumalabValueError, match="kind='nope' is not known"):
        S.sweep({"size": [3]}, kind="nope", cache=False)
    with pytest.raises(NumalabValueError, match="cache=3 must be True, False or a directory"):
        S.sweep({"size": [3]}, cache=3, progress=False)
    with pytest.raises(NumalabValueError, match="workers=0 is out of range"):
        S.sweep({"size": [3]}, cache=False, workers=0)
    with pytest.raises(NumalabValueError, match="client=.* must be a dask.distributed.Client"):
        S.sweep({"size": [3]}, cache=False, client=object(), progress=False)
    with pytest.raises(NumalabValueError, match="already registered"):
        S.register_runner(S.Runner("toy", [], helpers.run_toy))
    with pytest.raises(NumalabValueError, match="history='x' must be an integer 1..64 or one of profile, adaptive"):
        S.sweep({"history": ["x"]}, cache=False, kind="numa")


# ------------------------------------------------------------------------------ cache
def test_second_run_computes_nothing_and_is_identical(tmp_path):
    first = S.run_sweep(GRID, seeds=4, cache=tmp_path, progress=False, workers=1)
    assert (first.computed, first.cached) == (48, 0) and computed_points() == 48
    assert len(cache_files(tmp_path)) == 48
    assert not list(tmp_path.rglob("*.tmp"))  # every file went through os.replace
    helpers.CALLS.clear()
    second = S.run_sweep(GRID, seeds=4, cache=tmp_path, progress=False, workers=1)
    assert helpers.CALLS == [] and (second.computed, second.cached, second.tasks) == (0, 48, 0)
    xr.testing.assert_identical(first.dataset, second.dataset)
    fresh = S.sweep(GRID, seeds=4, cache=False, progress=False, workers=1)
    xr.testing.assert_identical(first.dataset, fresh)


def test_growing_grid_computes_only_new_points(tmp_path):
    S.sweep(GRID, seeds=4, cache=tmp_path, progress=False, workers=1)
    helpers.CALLS.clear()
    bigger = {**GRID, "label": ["a", "b", "c"]}
    res = S.run_sweep(bigger, seeds=5, cache=tmp_path, progress=False, workers=1)
    assert res.points == 2 * 3 * 3 * 5 and res.cached == 48
    assert computed_points() == res.computed == 90 - 48


def test_cache_key_covers_version_every_parameter_and_seed():
    p = {"size": 3, "rate": 1.0, "label": "a", "seed": 0}
    keys = {
        S.point_key("toy", p),
        S.point_key("toy", {**p, "seed": 1}),
        S.point_key("toy", {**p, "rate": 1.5}),
        S.point_key("toy", {**p, "label": "b"}),
        S.point_key("toy", p, version="0.0.0+c1"),
        S.point_key("numa", p),
    }
    assert len(keys) == 6
    assert S.point_key("toy", dict(reversed(list(p.items())))) == S.point_key("toy", p)


def test_cache_version_holds_a_digest_of_the_sources(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "engine" / "__pycache__").mkdir(parents=True)
    (pkg / "costs.py").write_text("WRITE_EFFICIENCY = 0.21\n")
    (pkg / "engine" / "scan.py").write_text("def task_numa_work(): pass\n")
    d0 = S.grid.model_digest(pkg)
    assert len(d0) == 12 and int(d0, 16) >= 0
    (pkg / "engine" / "__pycache__" / "scan.cpython-312.pyc").write_bytes(b"\x00compiled")
    (pkg / "notes.txt").write_text("not a source")
    S.grid.model_digest.cache_clear()
    assert S.grid.model_digest(pkg) == d0                  # compiled files and non-sources are not read
    (pkg / "costs.py").write_text("WRITE_EFFICIENCY = 0.22\n")
    S.grid.model_digest.cache_clear()
    d1 = S.grid.model_digest(pkg)
    assert d1 != d0                                        # an edited constant is a new cache
    (pkg / "costs.py").rename(pkg / "engine" / "costs.py")  # same bytes, another module
    S.grid.model_digest.cache_clear()
    assert S.grid.model_digest(pkg) not in (d0, d1)
    version = S.grid.code_version()
    assert version.startswith(f"{S.grid.__version__}+c{S.CACHE_FORMAT}+m") and version.endswith(S.grid.model_digest())


def test_incompatible_version_is_recomputed_with_one_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(S.grid, "code_version", lambda: "0.0.1+c1")
    S.sweep(GRID, seeds=2, cache=tmp_path, progress=False, workers=1)
    monkeypatch.undo()
    os.environ["NUMALAB_CACHE"] = str(tmp_path / "unused")  # undo() dropped the fixture's env
    helpers.CALLS.clear()
    with pytest.warns(S.StaleCacheWarning, match=r"numalab 0\.0\.1\+c1.*computing 24 point") as rec:
        res = S.run_sweep(GRID, seeds=2, cache=tmp_path, progress=False, workers=1)
    assert len(rec) == 1 and res.computed == 24 and computed_points() == 24
    helpers.CALLS.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to compute -> nothing to say
        again = S.run_sweep(GRID, seeds=2, cache=tmp_path, progress=False, workers=1)
    assert again.computed == 0 and helpers.CALLS == []


def test_cache_layout_and_damaged_files_are_recomputed(tmp_path):
    S.sweep({"size": [3, 4]}, seeds=3, cache=tmp_path, progress=False, workers=1)
    links = cache_files(tmp_path)
    assert len(links) == 6 and all(p.is_symlink() for p in links)
    with xr.open_dataset(links[0], engine="h5netcdf") as f:  # a point's name opens a file holding it
        assert links[0].stem in list(f["sweep_key"].values)
    batches = sorted(tmp_path.glob("v*/batches/*.nc"))
    assert len(batches) == 2  # one file per model call (one per size)
    lost = {links[1].stem} | {p.stem for p in links if os.readlink(p) == f"batches/{batches[0].name}"}
    batches[0].write_bytes(b"not hdf5")
    links[1].unlink()
    helpers.CALLS.clear()
    res = S.run_sweep({"size": [3, 4]}, seeds=3, cache=tmp_path, progress=False, workers=1)
    assert res.computed == len(lost) == computed_points() and 3 <= len(lost) <= 4
    xr.testing.assert_identical(res.dataset, S.sweep({"size": [3, 4]}, seeds=3, cache=False, progress=False, workers=1))


def test_cache_false_and_default_location(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMALAB_CACHE", str(tmp_path / "envcache"))
    assert S.default_cache_dir() == tmp_path / "envcache"
    S.sweep({"size": [3]}, seeds=2, cache=False, progress=False, workers=1)
    assert not (tmp_path / "envcache").exists()
    S.sweep({"size": [3]}, seeds=2, cache=True, progress=False, workers=1)
    assert len(cache_files(tmp_path / "envcache")) == 2
    monkeypatch.delenv("NUMALAB_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert S.default_cache_dir() == tmp_path / "xdg" / "numalab" / "sweep"


def test_killed_sweep_resumes_computing_only_missing_points(tmp_path):
    """A real child process runs a slow sweep; SIGKILL it once part of the points are cached."""
    env = {**os.environ, "NUMALAB_TOY_SLEEP_S": "0.08"}
    child = subprocess.Popen(
        [sys.executable, helpers.__file__, str(tmp_path)], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    try:
        while len(cache_files(tmp_path)) < 12:
            assert child.poll() is None, child.stderr.read().decode()
            assert time.monotonic() < deadline, "child sweep made no progress"
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stderr.close()
    done = len(cache_files(tmp_path))
    total = 48
    assert 12 <= done < total
    res = S.run_sweep(helpers.KILL_GRID, seeds=helpers.KILL_SEEDS, cache=tmp_path, progress=False, workers=1)
    assert res.cached == done and res.computed == total - done == computed_points()
    fresh = S.sweep(helpers.KILL_GRID, seeds=helpers.KILL_SEEDS, cache=False, progress=False, workers=1)
    xr.testing.assert_identical(res.dataset, fresh)


# ------------------------------------------------------------------------------ executors
def test_local_processes_match_in_process(monkeypatch):
    serial = S.sweep(GRID, seeds=4, cache=False, progress=False, workers=1)
    assert helpers.CALLS == [24, 24]
    helpers.CALLS.clear()
    monkeypatch.setattr(S.executors, "POOL_MIN_S", 0.0)  # toy points are too quick to be worth processes
    res = S.run_sweep(GRID, seeds=4, cache=False, progress=False, workers=2)
    assert res.executor == "local" and res.tasks >= 4
    xr.testing.assert_identical(res.dataset, serial)
    # one point ran here as the probe, every batch in the worker processes
    assert helpers.CALLS == [1]


def test_quick_sweeps_stay_in_process():
    res = S.run_sweep(GRID, seeds=4, cache=False, progress=False, workers=2)
    assert res.executor == "in-process" and res.tasks >= 4 and computed_points() == 48
    assert helpers.CALLS[0] == 1  # the probe point


def test_a_quick_probe_does_not_keep_costly_batches_here():
    """The probe point is quick, the batches after it are not: one of them runs here (the
    pace seen so far said the rest was cheap), then its pace sends the others to the worker
    processes, with the results the in-process run gives."""
    points = [dict(size=3, rate=1.0, label="a", seed=s, sleep_s=0.0 if s == 0 else 1.2) for s in range(4)]
    batches = [[i] for i in range(4)]
    got: dict = {}
    helpers.run_toy([dict(points[0])])                  # this process's first Dataset: not the probe's pace
    helpers.CALLS.clear()

    def on_done(batch, out):
        got[batch[0]] = out

    executor = S.executors.run_local(helpers.run_toy, batches, points, 2, on_done)
    assert executor == "local"
    assert helpers.CALLS == [1, 1]                       # the probe and one costly batch, here
    assert sorted(got) == list(range(4))
    for i, p in enumerate(points):
        xr.testing.assert_identical(got[i][0], S.executors.call_runner(helpers.run_toy, [dict(p, sleep_s=0.0)])[0])


def test_a_worker_that_dies_is_named_with_the_likely_cause(monkeypatch):
    """A worker process killed mid-batch (here by the point itself; in a script without the
    ``__main__`` guard, by the re-import of the script) gives one numalab error that names
    the guard and workers=1, not concurrent.futures' BrokenProcessPool."""
    monkeypatch.setattr(S.executors, "POOL_MIN_S", 0.0)
    points = [dict(size=3, rate=1.0, label="a", seed=s, die_in_worker=s > 0) for s in range(3)]
    with pytest.raises(NumalabEnvironmentError, match="__name__ == .__main__.*workers=1") as info:
        S.executors.run_local(helpers.run_toy, [[0], [1], [2]], points, 2, lambda batch, out: None)
    assert type(info.value.__cause__).__name__ == "BrokenProcessPool"


def test_local_workers_start_with_the_runner_already_imported(tmp_path):
    """The forkserver the local workers fork from imports the runner's module (and xarray) once,
    so no worker imports it again; the results are the same as in this process. In a fresh
    interpreter: the server starts once per process, with the first pool."""
    log = tmp_path / "imports.log"
    code = (
        "import _sweep_helpers as helpers\n"
        "import numalab.sweeps as S\n"
        "if __name__ == '__main__':\n"
        "    S.executors.POOL_MIN_S = 0.0\n"
        "    points = [dict(size=3, rate=1.0, label='a', seed=s) for s in range(4)]\n"
        "    got = {}\n"
        "    S.executors.run_local(helpers.run_toy, [[0], [1], [2], [3]], points, 2,\n"
        "                          lambda b, out: got.update({b[0]: out[0]}))\n"
        "    for i, p in enumerate(points):\n"
        "        assert got[i].identical(S.executors.call_runner(helpers.run_toy, [p])[0])\n"
    )
    script = tmp_path / "pool.py"
    script.write_text(code)
    # the server imports from the interpreter's own path (Python 3.11 passes it no sys.path):
    # numalab's runners are installed; this toy module is found through PYTHONPATH (by the
    # script too)
    here = str(Path(__file__).parent)
    env = dict(os.environ, NUMALAB_TOY_IMPORT_LOG=str(log),
               PYTHONPATH=os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [tuple(map(int, line.split())) for line in log.read_text().split("\n") if line]
    in_workers = [(pid, imported) for pid, imported, worker in rows if worker]
    assert in_workers, rows  # the probe ran here, the other batches in worker processes
    # every worker found the module imported by another process (the server it was forked from)
    assert all(pid != imported for pid, imported in in_workers), rows
    assert len({imported for _, imported in in_workers}) == 1, rows


@pytest.fixture(scope="module")
def cluster():
    import distributed

    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        # ":0": a free port (None binds the default 8787, which another test file or notebook
        # running on the other pytest-xdist worker may hold: "Port 8787 is already in use")
        dashboard_address=":0", worker_dashboard_address=":0",
    ) as lc:
        yield lc


def test_dask_local_cluster_is_bit_identical_to_local(cluster, tmp_path):
    from distributed import Client

    local = S.sweep(GRID, seeds=4, cache=False, progress=False, workers=2)
    helpers.CALLS.clear()
    with Client(cluster, set_as_default=False) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        res = S.run_sweep(GRID, seeds=4, cache=tmp_path, progress=False, client=client)
        assert res.executor == "dask" and res.computed == 48 and res.tasks >= 2
        assert client.status == "running"  # a Client we were given is left open
    xr.testing.assert_identical(res.dataset, local)
    assert helpers.CALLS == []  # the points ran in the workers, not here
    # an address works too (connected and closed by sweep); the cache written from the dask run
    # (by this process) serves the whole grid
    again = S.run_sweep(GRID, seeds=4, cache=tmp_path, progress=False, client=cluster.scheduler_address)
    assert again.computed == 0
    # with every point cached the scheduler is not even contacted
    assert S.run_sweep(GRID, seeds=4, cache=tmp_path, progress=False, client="tcp://127.0.0.1:9").computed == 0
    more = S.run_sweep({**GRID, "size": [7]}, seeds=4, cache=False, progress=False, client=cluster.scheduler_address)
    assert more.executor == "dask"
    xr.testing.assert_identical(more.dataset, S.sweep({**GRID, "size": [7]}, seeds=4, cache=False, progress=False, workers=1))


def test_unreachable_scheduler_is_a_clear_error_within_10_s():
    with socket.socket() as s:  # a port on loopback that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(NumalabValueError, match=rf"scheduler='tcp://127.0.0.1:{port}' is not reachable") as err:
        S.sweep({"size": [3]}, seeds=2, cache=False, progress=False, client=f"tcp://127.0.0.1:{port}")
    assert time.monotonic() - t0 < 10
    assert err.value.__cause__ is None and err.value.__suppress_context__
    with pytest.raises(NumalabValueError, match="is not an address"):
        S.sweep({"size": [3]}, cache=False, progress=False, client="nowhere")


# ------------------------------------------------------------------------------ progress
def test_progress_is_silent_when_not_interactive(capsys):
    S.sweep({"size": [3]}, seeds=3, cache=False, progress=True, workers=1)
    assert capsys.readouterr().err == ""


def test_progress_bar_counts_points_when_interactive(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(S.executors, "_interactive", lambda: True)
    S.sweep({"size": [3]}, seeds=2, cache=tmp_path, progress=True, workers=1)
    S.sweep({"size": [3]}, seeds=5, cache=tmp_path, progress=True, workers=1)
    err = capsys.readouterr().err
    assert "2/2" in err and "5/5" in err and "numalab sweep (toy)" in err
    S.sweep({"size": [4]}, seeds=2, cache=False, progress=False, workers=1)
    assert capsys.readouterr().err == ""


# ------------------------------------------------------------------------------ CLI
def test_cli_writes_the_dataset_and_reruns_from_cache(tmp_path, capsys):
    out = tmp_path / "sweep.nc"
    argv = ["sweep", "--kind", "toy", "--set", "size=3,5", "--set", "rate=1.5", "--set", "label=a,b",
            "--seeds", "3", "--out", str(out), "--cache", str(tmp_path / "c"), "--workers", "1"]
    assert main(argv) == 0
    assert "12 points, 12 computed" in capsys.readouterr().out
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert ds["value"].dims == ("size", "label", "seed") and float(ds["rate"]) == 1.5
        assert ds["counts"].dtype == np.uint64
        expected = S.sweep({"size": [3, 5], "rate": 1.5, "label": ["a", "b"]}, seeds=3, cache=False,
                           progress=False, workers=1)
        np.testing.assert_array_equal(ds["value"].values, expected["value"].values)
        np.testing.assert_array_equal(ds["counts"].values, expected["counts"].values)
    helpers.CALLS.clear()
    assert main(argv) == 0
    assert "12 points, 0 computed" in capsys.readouterr().out and helpers.CALLS == []
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--set", "sise=3"], "unknown toy sweep parameter 'sise'; allowed: size, rate, label"),
        (["--set", "size="], "--set size='' is an empty list"),
        (["--set", "size=3,x"], "size='x' must be an integer"),
        (["--seeds", "a,b"], "--seeds 'a,b' must be a count"),
        (["--set", "size"], "--set 'size' must look like NAME=V1,V2"),
    ],
)
def test_cli_bad_input_is_one_line(tmp_path, capsys, extra, match):
    argv = ["sweep", "--kind", "toy", "--out", str(tmp_path / "o.nc"), "--no-cache", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "o.nc").exists()


def test_cli_scheduler_unreachable_exits_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(S.executors, "SCHEDULER_TIMEOUT_S", 1)  # the 10 s bound is tested above
    argv = ["sweep", "--kind", "toy", "--set", "size=3", "--out", str(tmp_path / "o.nc"), "--no-cache",
            "--scheduler", "127.0.0.1:9"]
    t0 = time.monotonic()
    assert main(argv) == 2
    assert time.monotonic() - t0 < 10
    err = capsys.readouterr().err
    assert "is not reachable" in err and "Traceback" not in err


def test_cli_types_values_by_parameter():
    """'6.12' stays a profile name, '4' becomes a history length, 'adaptive' a history word."""
    from numalab.cli import build_parser
    from numalab.commands.sweep import build_grid

    args = build_parser().parse_args(["sweep", "--workload", "numa01,numa02", "--history", "4,adaptive",
                                      "--profile", "6.12", "--out", "x.nc"])
    kind, grid = build_grid(args)
    assert kind == "numa" and grid == {"workload": ["numa01", "numa02"], "history": [4, "adaptive"],
                                       "profile": ["6.12"]}
    args = build_parser().parse_args(["sweep", "--kind", "toy", "--set", "rate=2,0.5", "--out", "x.nc"])
    assert build_grid(args) == ("toy", {"rate": [2.0, 0.5]})


# ------------------------------------------------------------------------------ real models
def test_numa_sweep_cells_are_engine_results():
    """Each cell equals numalab.engine.simulate for that workload, policy and seed alone, and
    batching (policies x seeds per call) changes nothing."""
    from numalab import engine
    from numalab.policy import Policy
    from numalab.workloads import workload

    grid = {"workload": ["numa02", "numa02_SMT"], "history": [2, 6], "profile": "6.12", "workload_loops": 2}
    res = S.run_sweep(grid, seeds=[0, 3], cache=False, progress=False, workers=1)
    ds = res.dataset
    assert res.tasks == 2  # one call per workload: 2 histories x 2 seeds batched
    assert ds["elsp"].dims == ("workload", "history", "seed")
    assert ds["numa_hint_faults"].attrs["kernel_name"] == "numa_hint_faults"
    assert ds["history"].attrs["kernel_name"] == "NR_ACCESS_PID_HIST"
    assert "time" not in ds.dims
    for w in grid["workload"]:
        for h in grid["history"]:
            for s in (0, 3):
                one = engine.simulate(workload(w, "2s-128", loops=2), [Policy.profile("6.12", history=h)], seeds=[s])
                for v in ("elsp", "syst", "numa_hint_faults", "numa_pages_migrated", "numa_pte_updates"):
                    assert ds[v].sel(workload=w, history=h, seed=s).item() == one[v].item(), (w, h, s, v)
    alone = S.sweep(grid, seeds=[0, 3], cache=False, progress=False, workers=1, batch_size=1)
    xr.testing.assert_identical(alone, ds)


def test_numa_policy_parameter_and_bad_combinations():
    ds = S.sweep({"workload": "numa02", "policy": ["6.12", "6.12+N=4", "rfc2024-hot-shared"], "workload_loops": 1},
                 seeds=1, cache=False, progress=False, workers=1)
    assert list(ds.policy.values) == ["6.12", "6.12+N=4", "rfc2024-hot-shared"]
    assert ds["elsp"].dims == ("policy", "seed") and ds["workload"].item() == "numa02"
    from numalab.engine import simulate
    from numalab.policy import Policy
    from numalab.workloads import workload

    one = simulate(workload("numa02", "2s-128", loops=1), [Policy.profile("6.12", history=4)], seeds=[0])
    assert ds["numa_pte_updates"].sel(policy="6.12+N=4").item() == one["numa_pte_updates"].item()
    with pytest.raises(NumalabValueError, match="give policy= or profile=/history=, not both"):
        S.sweep({"policy": ["6.12+N=4"], "history": [4]}, cache=False, progress=False)
    with pytest.raises(NumalabValueError, match=r"policy='6.12\+N=x': policy N='x' must be an integer in \[1, 64\]"):
        S.sweep({"policy": ["6.12+N=x"]}, cache=False, progress=False)
    with pytest.raises(NumalabValueError, match="workload='numa03' is not known"):
        S.sweep({"workload": ["numa03"]}, cache=False, progress=False)
    with pytest.raises(NumalabValueError, match="history=65 is out of range"):
        S.sweep({"history": [2, 65]}, cache=False, progress=False)
    with pytest.raises(NumalabValueError, match="unknown numa sweep parameter.*'scan_dely_ms'.*scan_delay_ms"):
        S.sweep({"scan_dely_ms": [100]}, cache=False, progress=False)


def test_cli_issue_example_writes_workload_history_seed_and_reruns_from_cache(tmp_path, capsys):
    out = tmp_path / "sweep.nc"
    # the issue's command, with short runs (workload_loops=1) and 3 seeds to keep the test quick
    argv = ["sweep", "--workload", "numa01_THREAD_ALLOC,numa02", "--history", "2,4,6,8", "--profile", "6.12",
            "--seeds", "3", "--out", str(out), "--cache", str(tmp_path / "c"), "--set", "workload_loops=1",
            "--no-progress", "--workers", "1"]
    assert main(argv) == 0
    assert "24 points, 24 computed" in capsys.readouterr().out
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert ds["elsp"].dims == ("workload", "history", "seed")
        assert tuple(ds.sizes) == ("workload", "history", "seed")  # no leftovers of dropped series
        assert list(ds.history.values) == [2, 4, 6, 8] and ds["profile"].item() == "6.12"
        assert ds["elsp"].attrs["units"] == "s" and np.isfinite(ds["elsp"].values).all()
    assert main(argv) == 0
    assert "24 points, 0 computed" in capsys.readouterr().out   # every point from the cache


def test_futex_sweep_cells_are_model_results():
    from numalab import futex
    grid = {"mode": ["classic", "numa"], "threads": [16, 128]}
    ds = S.sweep(grid, seeds=3, cache=False, progress=False, workers=1)
    assert ds["ops_per_s"].dims == ("mode", "threads", "seed") and ds["ops_per_s"].attrs["units"] == "1/s"
    for m in grid["mode"]:
        for t in grid["threads"]:
            wl = futex.workload_for("perf-bench-futex-hash", "2s-128", mode=m, threads=t)
            for s in range(3):
                one = futex.simulate(wl, seeds=[s])
                for v in ("ops_per_s", "collisions", "bucket_utilisation"):
                    assert ds[v].sel(mode=m, threads=t, seed=s).item() == one[v].item(), (m, t, s, v)
    with pytest.raises(NumalabValueError, match="buckets=3 is not a power of two"):
        S.sweep({"mode": "private", "buckets": [16, 3]}, cache=False, progress=False)
    with pytest.raises(NumalabValueError, match="mode='privat' is not known"):
        S.sweep({"mode": ["privat"]}, cache=False, progress=False)


def test_cli_futex_kind_is_inferred(tmp_path, capsys):
    out = tmp_path / "f.nc"
    assert main(["sweep", "--mode", "classic,private", "--threads", "16", "--seeds", "2", "--out", str(out),
                 "--no-cache", "--workers", "1"]) == 0
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert ds.attrs["sweep_kind"] == "futex" and ds["ops_per_s"].dims == ("mode", "seed")


# ------------------------------------------------------------------------------ package shape (issue 10)
_IMPORT_ORDERS = [
    "import numalab.sweeps; import numalab as nl",
    "import numalab as nl; f = nl.sweep; import numalab.sweeps, numalab.sweeps.api, numalab.sweeps.grid",
    "import numalab.commands.sweep, numalab.cli; import numalab as nl",
    "from numalab.sweeps import *; import importlib, numalab.sweeps.registry as R; "
    "[importlib.import_module(m) for m in R.BUILTIN_RUNNERS.values()]; import numalab as nl",
]


@pytest.mark.parametrize("imports", _IMPORT_ORDERS)
def test_nl_sweep_is_the_function_however_modules_are_imported(imports):
    """``nl.sweep`` is the function whatever was imported before, and no module ``numalab.sweep``
    exists to shadow it (``import numalab.sweep`` fails instead of replacing the function)."""
    code = f"""
import sys, types
# only the checkout under test: an editable install of another checkout (which may still hold
# numalab/sweep.py) must not answer for modules this one does not have
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in str(getattr(f, "__module__", "")).lower()]
sys.path.insert(0, {str(Path(helpers.__file__).parent)!r})
{imports}
import _sweep_helpers
import numalab.sweeps
try:
    import numalab.sweep
except ModuleNotFoundError:
    pass
else:
    raise SystemExit("numalab.sweep is importable")
import numalab as nl
assert isinstance(nl.sweep, types.FunctionType) and nl.sweep is numalab.sweeps.sweep, nl.sweep
ds = nl.sweep({{"size": [3, 4]}}, seeds=2, cache=False, progress=False, kind="toy", workers=1)
assert ds["value"].dims == ("size", "seed")
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(S.__file__).parents[2]), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_machinery_knows_no_model_and_loads_builtin_runners_lazily():
    """The machinery modules import no model and no runner; a built-in kind's module (found in
    registry.BUILTIN_RUNNERS) is imported the first time that kind is asked for."""
    import ast

    pkg = Path(S.__file__).parent
    runner_modules = set(S.registry.BUILTIN_RUNNERS.values())
    models = ("numalab.engine", "numalab.futex", "numalab.policy", "numalab.workloads", "numalab.topology")

    def imported(path: Path) -> set[str]:
        """Absolute names of the modules (and from-imported names) a module imports."""
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative to numalab.sweeps
                    base = ".".join(["numalab", "sweeps"][: 3 - node.level] + ([base] if base else []))
                names |= {base} | {f"{base}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
        return names

    def hits(names, prefixes):
        return sorted(n for n in names for p in prefixes if n == p or n.startswith(p + "."))

    for path in sorted(pkg.glob("*.py")):
        module = "numalab.sweeps" if path.stem == "__init__" else f"numalab.sweeps.{path.stem}"
        names = imported(path)
        if module in runner_modules:  # a runner: models, the registry and the checks, no other sweeps module
            sweeps = [n for n in hits(names, ["numalab.sweeps"]) if not n.startswith("numalab.sweeps.registry")]
            assert not sweeps and not hits(names, runner_modules - {module}), (path, sweeps)
            continue
        assert not hits(names, [*models, *runner_modules]), (path, hits(names, [*models, *runner_modules]))
    code = """
import sys
import numalab.sweeps as S
numa, futex = S.registry.BUILTIN_RUNNERS["numa"], S.registry.BUILTIN_RUNNERS["futex"]
assert numa not in sys.modules and futex not in sys.modules
assert "numalab.engine" not in sys.modules and "numalab.futex" not in sys.modules
assert S.runners()[:2] == ["numa", "futex"]
assert S.get_runner("futex").kind == "futex"
assert futex in sys.modules and numa not in sys.modules
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": str(Path(S.__file__).parents[2])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_public_names_and_stable_cache_keys():
    for name in ("sweep", "run_sweep", "register_runner", "get_runner", "runners", "point_key",
                 "default_cache_dir", "MAX_BATCH", "SweepResult", "Param", "Runner", "StaleCacheWarning",
                 "CACHE_FORMAT"):
        assert name in S.__all__ and hasattr(S, name), name
    # the keys numalab/sweep.py gave before it became a package: existing caches stay valid
    assert S.point_key("toy", {"size": 3, "rate": 1.0, "label": "a", "seed": 0}, version="0.3.0+c1") == \
        "ff03a3718993e5eed587d20f5b0bc4cc9a9eb4e9eb42b730dce08ee75367a87e"
    point = {"workload": "numa02", "history": 4, "profile": "6.12", "policy": "", "seed": 7}
    assert S.point_key("numa", point, version="0.3.0+c1") == \
        "1b9af5ef38464da423d99036661faf09205836219c04cdf415656a0e0bbc065d"


def test_policy_texts_are_read_by_policy_parse():
    """The sweep's policy= and history= values are whatever Policy.parse reads, kept as written."""
    from numalab.policy import Policy

    grid = S.grid.expand({"policy": ["adaptive:span", "6.4+N=8+rules=own_pid,hot>=1,shared>=3"]}, 1, "numa")
    assert grid.values["policy"] == ["adaptive:span", "6.4+N=8+rules=own_pid,hot>=1,shared>=3"]
    assert S.grid.expand({"history": ["adaptive:span", 4]}, 1, "numa").values["history"] == ["adaptive:span", 4]
    numa_runner = importlib.import_module(S.registry.BUILTIN_RUNNERS["numa"])
    assert numa_runner._numa_policy({"policy": "adaptive:span", "profile": "6.12", "history": "profile"}) == \
        Policy.parse("6.12+adaptive=span")
    assert numa_runner._numa_policy({"policy": "", "profile": "6.8", "history": 6}) == Policy.profile("6.8", history=6)
    with pytest.raises(NumalabValueError, match="policy='6.13' is not known"):
        S.sweep({"policy": ["6.13"]}, cache=False, progress=False)
    with pytest.raises(NumalabValueError, match="history='adaptive:nope': adapt='nope' is not known"):
        S.sweep({"history": ["adaptive:nope"]}, cache=False, progress=False)


def test_cli_policy_list_keeps_rules_lists_whole():
    from numalab.cli import build_parser
    from numalab.commands.sweep import build_grid

    text = "6.12,6.4+N=8+rules=own_pid,hot>=1,shared>=3,N=4,adaptive:span"
    args = build_parser().parse_args(["sweep", "--policy", text, "--out", "x.nc"])
    assert build_grid(args) == ("numa", {"policy": ["6.12", "6.4+N=8+rules=own_pid,hot>=1,shared>=3", "N=4",
                                                    "adaptive:span"]})
    args = build_parser().parse_args(["sweep", "--policy", "6.12,6.12+N=x", "--out", "x.nc"])
    with pytest.raises(NumalabValueError, match=r"--policy '6.12\+N=x': policy N='x' must be an integer"):
        build_grid(args)


def test_a_mechanism_switch_is_a_grid_dimension_of_true_and_false():
    """A bool engine option sweeps as True/False (stored as 1/0, so True and 1 are one point);
    anything else names the switch and what it takes."""
    grid = S.grid.expand({"link_both_directions": [True, False], "init_coherence": [1]}, 1, "numa")
    assert grid.values["link_both_directions"] == [1, 0] and grid.values["init_coherence"] == [1]
    with pytest.raises(NumalabValueError, match=r"link_both_directions='yes'; allowed: True or False \(or 1/0\)"):
        S.grid.expand({"link_both_directions": ["yes"]}, 1, "numa")
    with pytest.raises(NumalabValueError, match=r"first_arrival=2; allowed: True or False"):
        S.grid.expand({"first_arrival": [2]}, 1, "numa")

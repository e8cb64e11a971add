"""Issue 17: nothing a user types crashes numalab, nothing a fault does loses work.

One regression test per defect of the issue (bad inputs, resource bounds, output paths,
faults while writing, signals); the readers' and statistics' regressions are in
tests/test_report_robust.py, the fuzz tests in tests/test_fuzz_cli.py.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import numalab as nl
from numalab import limits
from numalab.cli import main
from numalab.errors import (
    EngineInvariantError,
    NumalabValueError,
    check_memory,
    check_out_path,
    check_steps,
    memory_limit,
)

HERE = Path(__file__).resolve().parent


def run_cli(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def assert_user_error(rc, err, *words):
    assert rc == 2, err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    for w in words:
        assert w in err, err


# ------------------------------------------------------------------ resource bounds (item 1)
def test_futex_hash_huge_bucket_table_is_refused_before_allocating(capsys):
    # issue: `futex hash -t 8 -f 16 -b 1073741824 -s` ran 82 s and was OOM-killed at 22.6 GB
    t0 = time.monotonic()
    rc, out, err = run_cli(["futex", "hash", "-t", "8", "-f", "16", "-b", "1073741824", "-s"], capsys)
    assert_user_error(rc, err, "buckets=", "GiB", "limit", "NUMALAB_MEMORY_LIMIT")
    assert time.monotonic() - t0 < 5 and out == ""


def test_memory_limit_env_and_keyword(monkeypatch):
    monkeypatch.setenv("NUMALAB_MEMORY_LIMIT", "1M")
    assert memory_limit() == 1 << 20
    with pytest.raises(NumalabValueError, match=r"seeds=9 needs about 2\.0 MiB .* limit of 1\.0 MiB"):
        check_memory("seeds", 9, 2 << 20)
    assert check_memory("seeds", 9, 2 << 20, limit="4M") == 2 << 20
    monkeypatch.setenv("NUMALAB_MEMORY_LIMIT", "lots")
    with pytest.raises(NumalabValueError, match="NUMALAB_MEMORY_LIMIT"):
        memory_limit()


def test_futex_many_seeds_refused_naming_seeds(monkeypatch):
    monkeypatch.setenv("NUMALAB_MEMORY_LIMIT", "64M")
    wl = nl.futex.perf_bench_hash("2s-128", threads=128, futexes=1024)
    with pytest.raises(NumalabValueError, match="seeds=100000 needs about"):
        nl.futex.simulate(wl, seeds=100_000)


def test_futex_workload_too_many_keys_refused():
    # threads x futexes past memory: refused when the workload is built, not by MemoryError
    with pytest.raises(NumalabValueError, match="threads x futexes"):
        nl.futex.perf_bench_hash("2s-128", threads=50_000_000, futexes=1 << 20, oversubscribe=True)


def test_topology_past_the_cpu_cap_refused():
    with pytest.raises(NumalabValueError, match="NR_CPUS"):
        nl.Topology(nodes=1024, cpus_per_node=65536)


def test_simulate_estimator_refuses_tiny_dt_and_huge_seed_counts():
    # issue: `--dt 1e-9` runs for hours; the estimator bounds max_time / dt before any work
    wl = nl.workload("numa02", nl.Topology.preset("2s-128"))
    pols = [nl.Policy.profile("6.12")]
    with pytest.raises(NumalabValueError, match=r"dt=1e-09 makes 2e\+12 time steps"):
        limits.check_simulate(wl, pols, [0], dt=1e-9)
    with pytest.raises(NumalabValueError, match="seeds=100000 needs about"):
        limits.check_simulate(wl, pols, list(range(100_000)), memory_limit="1G")
    need = limits.check_simulate(wl, pols, list(range(4)))
    assert 1 << 20 < need < 1 << 30
    # a pure function of the sizes: more seeds or policies never cost less
    sizes = limits.simulate_sizes(wl)
    assert limits.simulate_bytes(sizes, 8, 2) > limits.simulate_bytes(sizes, 4, 2) > limits.simulate_bytes(sizes, 4, 1)
    with pytest.raises(NumalabValueError, match="NUMALAB_MAX_STEPS"):
        check_steps("max_time", 1e9, 1e9 / 0.05)


def test_numa_sweep_refuses_tiny_dt_before_running():
    with pytest.raises(NumalabValueError, match="time steps"):
        nl.sweep({"workload": "numa02", "dt": 1e-9}, seeds=1, cache=False, progress=False, workers=1)


# ------------------------------------------------------------------- options checked (item 5)
def test_futex_hash_unknown_method_is_one_line(capsys):
    rc, out, err = run_cli(["futex", "hash", "-t", "4", "-f", "4", "--method", "bogus", "-s"], capsys)
    assert_user_error(rc, err, "--method='bogus'", "mva, simulation")


def test_futex_sweep_duplicate_values_is_one_line(capsys):
    rc, _, err = run_cli(["futex", "sweep", "--buckets", "2,2", "--threads", "4", "--seeds", "1"], capsys)
    assert_user_error(rc, err, "--buckets", "repeats 2")
    rc, _, err = run_cli(["futex", "sweep", "--buckets", "2,4", "--mode", "numa,numa", "--seeds", "1"], capsys)
    assert_user_error(rc, err, "--mode", "repeats")
    with pytest.raises(NumalabValueError, match="repeats"):
        nl.futex.sweep(buckets=[16, 16], mode="private", threads=4, seeds=1)


@pytest.mark.parametrize("argv", [
    ["futex", "hash", "-t", "4", "-f", "4", "-s", "--seed", str(2**64)],
    ["futex", "numa", "-c", "2", "-t", "2", "--seed", str(2**63)],
    ["futex", "hash", "-t", "4", "-f", "4", "-s", "--seed", "-1"],
])
def test_seeds_beyond_int64_are_one_line(argv, capsys):
    rc, _, err = run_cli(argv, capsys)
    assert_user_error(rc, err, "--seed")


def test_sweep_seeds_beyond_int64(tmp_path, capsys):
    rc, _, err = run_cli(["sweep", "--workload", "numa02", "--seeds", f"0,{2**63}", "--out",
                          str(tmp_path / "s.nc"), "--no-cache"], capsys)
    assert_user_error(rc, err, "seeds")


def test_corrupt_netcdf_given_to_report_is_one_line(tmp_path, capsys):
    ds = xr.Dataset({"elsp": (("policy", "seed"), np.ones((2, 3)))}, coords={"policy": ["a", "b"]},
                    attrs={"workload": "numa01"})
    good = tmp_path / "good.nc"
    ds.to_netcdf(good, engine="h5netcdf")
    raw = bytearray(good.read_bytes())
    rng = np.random.default_rng(1)
    for i in range(2000, len(raw), 97):  # damaged metadata: h5py raised a KeyError here
        raw[i] = int(rng.integers(256))
    bad = tmp_path / "bad.nc"
    bad.write_bytes(bytes(raw))
    trunc = tmp_path / "trunc.nc"
    trunc.write_bytes(good.read_bytes()[: len(raw) // 2])
    text = tmp_path / "text.nc"
    text.write_text("not netcdf\n")
    for path in (bad, trunc, text, tmp_path / "missing.nc", tmp_path):
        rc, _, err = run_cli(["report", str(path)], capsys)
        assert_user_error(rc, err, "FILE=")
    proc = subprocess.run([sys.executable, "-m", "numalab", "report", str(bad)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


def test_bad_scheduler_scheme_fails_fast(tmp_path, capsys):
    # issue: printed its clear message, then stalled 10 s with a stray traceback
    t0 = time.monotonic()
    rc, _, err = run_cli(["sweep", "--workload", "numa02", "--seeds", "1", "--out", str(tmp_path / "x.nc"),
                          "--no-cache", "--scheduler", "foo://bar:1"], capsys)
    assert_user_error(rc, err, "unknown scheme 'foo'")
    assert time.monotonic() - t0 < 3


@pytest.mark.parametrize("argv", [["simulate", "--seeds", "x"], ["futex", "hash", "-t"], ["bogus"],
                                  ["sweep", "--workload", "numa02"]])
def test_usage_errors_are_one_line(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and "--help" in err, err


def test_internal_error_prints_traceback_and_asks_for_a_report(monkeypatch, capsys):
    from numalab.commands import demo

    def boom(args):
        return [][1]

    monkeypatch.setattr(demo, "run", boom)
    rc, _, err = run_cli(["demo"], capsys)
    assert rc == 1 and "Traceback" in err and "IndexError" in err and "please report it" in err


# ------------------------------------------------------------------- outputs first (item 2)
@pytest.mark.parametrize("case", ["directory", "under_file", "long_name", "empty", "missing_dir"])
@pytest.mark.parametrize("command", ["simulate", "trace", "sweep", "futex-sweep", "futex-plot"])
def test_bad_out_path_refused_before_any_work(case, command, tmp_path, capsys, monkeypatch):
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    out = {"directory": str(tmp_path), "under_file": str(plain / "x.nc"), "long_name": str(tmp_path / ("a" * 300)),
           "empty": "", "missing_dir": str(tmp_path / "nope" / "x.nc")}[case]
    argv = {
        "simulate": ["simulate", "--workload", "numa02", "--seeds", "1", "--out", out],
        "trace": ["trace", "--workload", "numa02", "--out", out],
        "sweep": ["sweep", "--workload", "numa02", "--seeds", "1", "--no-cache", "--out", out],
        "futex-sweep": ["futex", "sweep", "--buckets", "2", "--threads", "4", "--seeds", "1", "--out", out],
        "futex-plot": ["futex", "sweep", "--buckets", "2", "--threads", "4", "--seeds", "1", "--plot", out],
    }[command]
    from numalab.commands import futex, simulate, sweep, trace

    def never(args):  # the work must not start
        raise AssertionError("ran before the output path was checked")

    for mod in (futex, simulate, sweep, trace):
        monkeypatch.setattr(mod, "run", never)
    before = sorted(os.listdir(tmp_path))
    rc, _, err = run_cli(argv, capsys)
    assert_user_error(rc, err, "--out" if command != "futex-plot" else "--plot")
    assert sorted(os.listdir(tmp_path)) == before


def test_cache_path_under_a_file_refused(tmp_path, capsys):
    plain = tmp_path / "plain"
    plain.write_text("x")
    rc, _, err = run_cli(["sweep", "--workload", "numa02", "--seeds", "1", "--out", str(tmp_path / "o.nc"),
                          "--cache", str(plain / "cache")], capsys)
    assert_user_error(rc, err, "--cache")


def test_check_out_path_accepts_what_it_should(tmp_path):
    assert check_out_path("--out", tmp_path / "x.nc") == tmp_path / "x.nc"
    assert check_out_path("--out", str(tmp_path / "new" / "deeper"), kind="dir", create=True)
    with pytest.raises(NumalabValueError, match="is a file"):
        (tmp_path / "f").write_text("")
        check_out_path("--out", tmp_path / "f", kind="dir", create=True)


def _write_fails(argv, tmp_path, limit_blocks=4):
    """Run the CLI in a subprocess under `ulimit -f` (SIGXFSZ on the first large write)."""
    code = f"import resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, ({limit_blocks * 1024}, " \
           f"{limit_blocks * 1024})); from numalab.cli import main; sys.exit(main({argv!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)


@pytest.mark.parametrize("flag", ["--out", "--plot"])
def test_full_disk_leaves_no_partial_file_and_one_line(flag, tmp_path):
    # issue: `ulimit -f` gave dozens of tracebacks then a segfault
    name = "x.nc" if flag == "--out" else "x.png"
    proc = _write_fails(["futex", "sweep", "--buckets", "2,4", "--threads", "4", "--seeds", "2", flag, name], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert f"cannot write '{name}': File too large" in proc.stderr
    assert os.listdir(tmp_path) == []


def test_atomic_write_failure_keeps_the_old_file(tmp_path):
    from numalab.storage import WriteError, atomic_write

    target = tmp_path / "keep.txt"
    target.write_text("old")

    def failing(tmp):
        tmp.write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(WriteError, match="No space left on device"):
        atomic_write(target, failing)
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["keep.txt"]


# ------------------------------------------------------------------------ signals (item 4)
def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (read from /proc; psutil is not a dependency)."""
    kids: dict[int, list[int]] = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            raw = Path(stat).read_bytes()
        except OSError:
            continue
        ppid = int(raw[raw.rfind(b")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(stat.split("/")[2]))
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _running(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return raw[raw.rfind(b")") + 2:].split()[0] != b"Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signame", ["SIGKILL", "SIGTERM", "SIGINT"])
def test_killed_sweep_leaves_no_worker_and_resumes(signame, tmp_path):
    import _sweep_helpers as helpers
    from numalab import sweeps as S

    cache = tmp_path / "cache"
    env = {**os.environ, "NUMALAB_TOY_SLEEP_S": "0.1"}
    child = subprocess.Popen([sys.executable, str(HERE / "_robust_child.py"), str(cache), str(tmp_path / "o.nc")],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while len(glob.glob(str(cache / "v*" / "*.nc"))) < 6:
            assert child.poll() is None, child.stderr.read().decode()
            assert time.monotonic() < deadline, "the sweep made no progress"
            time.sleep(0.05)
        workers = _children(child.pid)
        assert len(workers) >= 2  # the forkserver and its workers (and the resource tracker)
        child.send_signal(getattr(signal, signame))
        rc = child.wait(timeout=20)
        t0 = time.monotonic()
        while any(_running(p) for p in workers) and time.monotonic() - t0 < 10:
            time.sleep(0.05)
        assert [p for p in workers if _running(p)] == [], "workers outlived the sweep"
        # nobody holds the sweep's stdout any more: reading it reaches EOF
        out, err = child.communicate(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    if signame == "SIGKILL":
        assert rc == -signal.SIGKILL
    else:
        assert rc == {"SIGTERM": 128 + signal.SIGTERM, "SIGINT": 130}[signame], err.decode()
        assert "Traceback" not in err.decode() and err.decode().count("numalab sweep:") == 1
    assert not (tmp_path / "o.nc").exists()
    done = len(glob.glob(str(cache / "v*" / "*.nc")))
    res = S.run_sweep({"size": [3, 5], "rate": [1.0, 2.0, 0.5], "label": ["a", "b"]}, seeds=4, cache=cache,
                      progress=False, workers=1, kind="toy")
    assert res.cached >= done >= 6 and res.cached + res.computed == 48
    fresh = S.sweep(helpers.KILL_GRID, seeds=helpers.KILL_SEEDS, cache=False, progress=False, workers=1, kind="toy")
    xr.testing.assert_identical(res.dataset, fresh)


def test_parent_alive_sees_zombies_and_reused_pids():
    from numalab.sweeps.executors import _start_time, parent_alive

    me = os.getpid()
    assert parent_alive(me, _start_time(me))
    assert not parent_alive(me, (b"R", -1))  # same pid, another start time: a reused pid
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    start = _start_time(proc.pid)
    t0 = time.monotonic()
    while _running(proc.pid) and time.monotonic() - t0 < 20:
        time.sleep(0.02)
    assert not parent_alive(proc.pid, start)  # exited, not yet reaped: a zombie
    proc.wait()
    assert not parent_alive(proc.pid, start)


def test_workload_regions_past_memory_refused():
    topo = nl.Topology(nodes=2, cpus_per_node=4, mem_per_node_GiB=1e9)
    with pytest.raises(NumalabValueError, match="size_bytes=.* needs about"):
        nl.workload("numa02", topo, size_bytes=1e16)


def test_sweep_grid_too_large_refused_before_expanding():
    t0 = time.monotonic()
    with pytest.raises(NumalabValueError, match=r"grid x seeds='63360000 points' needs about"):
        nl.sweep({"workload": "numa02", "history": list(range(1, 65)), "max_time": [float(i) for i in range(1, 100)]},
                 seeds=list(range(10000)), cache=False, progress=False)
    assert time.monotonic() - t0 < 10


def test_cli_simulate_tiny_dt_and_many_seeds_refused_at_once(capsys):
    # issue: `--dt 1e-9` ran for hours without a word; many seeds ended in MemoryError
    t0 = time.monotonic()
    rc, out, err = run_cli(["simulate", "--dt", "1e-9"], capsys)
    assert_user_error(rc, err, "dt=1e-09", "time steps", "NUMALAB_MAX_STEPS")
    rc, out, err = run_cli(["trace", "--max-time", "1e12"], capsys)
    assert_user_error(rc, err, "max_time=", "time steps")
    rc, out, err = run_cli(["simulate", "--workload", "numa01", "--seeds", "10000"], capsys)
    assert_user_error(rc, err, "seeds=10000 needs about", "GiB")  # 50% of this machine's memory or less
    assert time.monotonic() - t0 < 10


def test_tilde_of_an_unknown_user_is_a_plain_path(tmp_path, monkeypatch):
    # found by tests/test_fuzz_cli.py: Path.expanduser("~0") raised RuntimeError
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NumalabValueError, match="does not exist"):
        check_out_path("--out", "~nosuchuser0/x.nc")
    assert str(check_out_path("--out", "~0")) == "~0"


# ============================================================ issue 27: the third reliability pass
# One regression test per class (3-8; the readers' classes 1, 2 and 9 are in
# tests/test_report_robust.py): a dask scheduler that dies or has no workers, work kept through
# a fault, numalab explore's port and lifetime, refusals before any work, our own output read
# back, and one source of truth for what the guard and the engine share.

import json  # noqa: E402
import socket  # noqa: E402

from numalab import sweeps as S  # noqa: E402
from numalab.storage import INCOMPLETE, MANIFEST, WriteError, staged_dir, write_text  # noqa: E402

sys.path.insert(0, str(HERE))
import _sweep_helpers as helpers  # noqa: E402

TOY = {"size": [3, 5], "rate": [1.0, 2.0], "label": ["a"]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------- class 3: dask
def test_dask_scheduler_without_workers_is_given_up_with_a_message(monkeypatch, tmp_path, capsys):
    # issue: the client waited forever in silence
    import distributed

    from numalab.sweeps import executors

    monkeypatch.setattr(executors, "WORKER_TIMEOUT_S", 2.0)
    # dashboard on a free port: None binds 8787, which a test on the other worker may hold
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as lc:
        t0 = time.monotonic()
        with pytest.raises(OSError, match=rf"the dask scheduler {lc.scheduler_address} has no workers \(waited 2 s\); "
                                          rf"start one with `dask worker"):
            S.sweep(TOY, seeds=2, cache=False, progress=False, client=lc.scheduler_address, kind="toy")
        assert time.monotonic() - t0 < 20
        rc, _, err = run_cli(["sweep", "--kind", "toy", "--set", "size=3", "--seeds", "2", "--no-progress",
                              "--scheduler", lc.scheduler_address, "--no-cache", "--out", str(tmp_path / "o.nc")], capsys)
    assert rc == 1 and err.count("\n") == 1 and "has no workers" in err and "Traceback" not in err
    assert not (tmp_path / "o.nc").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_dask_scheduler_that_dies_mid_sweep_is_one_line_naming_it_and_the_sweep_resumes(tmp_path):
    # issue: 54 lines ending in an internal error (the cached points survived)
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PYTHONPATH": str(HERE), "NUMALAB_TOY_SLEEP_S": "0.2"}
    sched = subprocess.Popen([str(bindir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                              "--no-dashboard"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = subprocess.Popen([str(bindir / "dask"), "worker", address, "--nthreads", "1", "--no-dashboard"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cache = tmp_path / "cache"
    code = ("import sys, _sweep_helpers; from numalab.cli import main; sys.exit(main(sys.argv[1:]))")
    argv = ["sweep", "--kind", "toy", "--set", "size=3,5", "--set", "rate=1.0,2.0,0.5", "--set", "label=a,b",
            "--seeds", "4", "--batch-size", "1", "--no-progress", "--cache", str(cache), "--out", str(tmp_path / "o.nc")]
    child = subprocess.Popen([sys.executable, "-c", code, *argv, "--scheduler", address], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 150
        while len(glob.glob(str(cache / "v*" / "*.nc"))) < 3:
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the sweep made no progress"
            time.sleep(0.1)
        sched.kill()
        t0 = time.monotonic()
        out, err = child.communicate(timeout=90)
        waited = time.monotonic() - t0
    finally:
        for p in (child, worker, sched):
            if p.poll() is None:
                p.kill()
            p.wait()
    assert child.returncode == 1, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"the dask scheduler {address} stopped answering" in err and "run the same command again" in err
    assert waited < 60
    done = len(glob.glob(str(cache / "v*" / "*.nc")))
    res = S.run_sweep(helpers.KILL_GRID, seeds=4, cache=cache, progress=False, workers=1, kind="toy")
    assert res.cached == done >= 3
    fresh = S.sweep(helpers.KILL_GRID, seeds=4, cache=False, progress=False, workers=1, kind="toy")
    xr.testing.assert_identical(res.dataset, fresh)


# ---------------------------------------------------------------- class 4: no lost work
def test_full_cache_disk_keeps_every_point_and_writes_out(monkeypatch, tmp_path, capsys):
    # issue: a full cache disk aborted the sweep: every computed point lost, --out not written
    from numalab.sweeps.cache import Cache

    real, calls = Cache.store, []

    def store(self, keys, points, dsets):
        calls.append(len(keys))
        if len(calls) > 2:
            raise WriteError(28, f"cannot write '{self.batches}/x.nc': No space left on device")
        return real(self, keys, points, dsets)

    monkeypatch.setattr(Cache, "store", store)
    with pytest.warns(S.CacheWriteWarning, match="No space left on device.*2 point\\(s\\) of this run were stored"):
        res = S.run_sweep({"size": [3, 4, 5, 6]}, seeds=1, cache=tmp_path / "c", progress=False, workers=1,
                          kind="toy", batch_size=1)
    assert res.computed == 4 and calls == [1, 1, 1]  # no further write once the disk is full
    xr.testing.assert_identical(res.dataset, S.sweep({"size": [3, 4, 5, 6]}, seeds=1, cache=False, progress=False,
                                                     workers=1, kind="toy"))
    assert any("No space left" in n for n in res.notes)
    calls.clear()
    out = tmp_path / "o.nc"
    rc, stdout, err = run_cli(["sweep", "--kind", "toy", "--set", "size=3,4,5,6", "--seeds", "1", "--batch-size", "1",
                               "--workers", "1", "--no-progress", "--cache", str(tmp_path / "c2"), "--out", str(out)],
                              capsys)
    assert rc == 0 and out.exists() and "wrote" in stdout
    assert err.count("\n") == 1 and "note: cannot write the cache" in err


def test_out_that_cannot_be_written_says_the_points_are_cached(monkeypatch, tmp_path, capsys):
    from numalab import storage

    def full(ds, path, **kw):
        raise WriteError(28, f"cannot write {str(path)!r}: No space left on device")

    monkeypatch.setattr(storage, "write_netcdf", full)
    rc, _, err = run_cli(["sweep", "--kind", "toy", "--set", "size=3", "--seeds", "2", "--workers", "1",
                          "--no-progress", "--cache", str(tmp_path / "c"), "--out", str(tmp_path / "o.nc")], capsys)
    assert rc == 1 and err.count("\n") == 1
    assert "No space left on device; the 2 points are in the cache" in err and "run the same command again" in err


def _one_batch(tmp_path):
    S.sweep({"size": [3]}, seeds=3, cache=tmp_path, progress=False, workers=1, kind="toy")
    (batch,) = tmp_path.glob("v*/batches/*.nc")
    return batch


def test_edited_cache_file_is_not_trusted(tmp_path, caplog):
    # issue: an edited cache file was trusted (no content checksum)
    batch = _one_batch(tmp_path)
    with xr.open_dataset(batch, engine="h5netcdf") as f:
        edited = f.load()
    edited["value"] = edited["value"] + 1.0  # a valid file, other numbers
    data = edited.to_netcdf(engine="h5netcdf")
    batch.write_bytes(data)
    helpers.CALLS.clear()
    res = S.run_sweep({"size": [3]}, seeds=3, cache=tmp_path, progress=False, workers=1, kind="toy")
    assert res.computed == 3 and sum(helpers.CALLS) == 3
    assert "was changed after it was written" in caplog.text
    xr.testing.assert_identical(res.dataset, S.sweep({"size": [3]}, seeds=3, cache=False, progress=False, workers=1,
                                                     kind="toy"))


def test_cache_batch_missing_a_variable_is_recomputed_not_nan(tmp_path, caplog):
    # issue: a batch file missing a variable gave NaN reported as "from cache", or a KeyError;
    # here the file is rewritten under its new checksum, as a careful editor would
    import hashlib

    batch = _one_batch(tmp_path)
    with xr.open_dataset(batch, engine="h5netcdf") as f:
        edited = f.load().drop_vars("counts")
    data = edited.to_netcdf(engine="h5netcdf")
    renamed = batch.with_name(hashlib.sha256(data).hexdigest() + ".nc")
    renamed.write_bytes(data)
    for link in batch.parent.parent.glob("*.nc"):
        link.unlink()
        link.symlink_to(f"batches/{renamed.name}")
    res = S.run_sweep({"size": [3]}, seeds=3, cache=tmp_path, progress=False, workers=1, kind="toy")
    assert res.computed == 3 and "lacks variables" in caplog.text
    assert np.isfinite(res.dataset["counts"].values.astype(float)).all()


def test_points_of_one_batch_get_back_only_their_own_variables(tmp_path):
    from numalab.sweeps.cache import Cache

    a = xr.Dataset({"x": ((), 1.0), "y": ((), 2.0)})
    b = xr.Dataset({"x": ((), 3.0)})  # no y: the batch file holds NaN for it
    store = Cache(tmp_path, "toy")
    store.store(["k1", "k2"], [{"p": 1}, {"p": 2}], [a, b])
    got = store.load_many(["k1", "k2"], [{"p": 1}, {"p": 2}])
    assert set(got[0].data_vars) == {"x", "y"} and set(got[1].data_vars) == {"x"}


def test_interrupted_reproduce_never_leaves_a_folder_mixing_two_runs(monkeypatch, tmp_path, capsys):
    # issue: interrupted while writing, the results folder mixed two runs with no marker
    from numalab import fidelity, outputs

    out = tmp_path / "results"
    out.mkdir()
    (out / "mine.txt").write_text("the user's own file")
    monkeypatch.setattr(fidelity, "plan", lambda *a, **k: [])

    def execute(centre, *, workers=None, progress=True, stats=None):
        stats.update(calls=0, workers=1, engine_cpu_s=0.0, wall_s=0.0)
        return {}

    monkeypatch.setattr(fidelity, "execute", execute)
    run = {"n": 0}

    def write(folder, published, sims, rows=None, shown=None):
        run["n"] += 1
        for name in (["a.txt", "b.txt", "c.txt"] if run["n"] == 1 else ["a.txt", "b.txt"]):
            write_text(Path(folder) / name, f"run {run['n']}\n")
            if run["n"] == 2 and name == "b.txt":
                raise KeyboardInterrupt  # Ctrl-C half-way through the second run's files
        return {"summary": "ok"}

    monkeypatch.setattr(outputs, "write_reproduction", write)
    assert run_cli(["reproduce", "--out", str(out), "--no-notebooks", "--no-progress", "--band-points", "0"], capsys)[0] == 0
    first = {p.name: p.read_text() for p in out.iterdir()}
    assert json.loads(first[MANIFEST])["files"] == ["a.txt", "b.txt", "c.txt"]
    assert json.loads(first[MANIFEST])["complete"] is True
    rc, _, err = run_cli(["reproduce", "--out", str(out), "--no-notebooks", "--no-progress", "--band-points", "0"], capsys)
    assert rc == 130
    assert {p.name: p.read_text() for p in out.iterdir()} == first  # the first run, whole: nothing mixed
    # a third run that writes fewer files leaves none of the first run's behind
    run["n"] = 5
    assert run_cli(["reproduce", "--out", str(out), "--no-notebooks", "--no-progress", "--band-points", "0"], capsys)[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["a.txt", "b.txt", "mine.txt", MANIFEST]
    assert (out / "a.txt").read_text() == "run 6\n" and (out / "mine.txt").read_text() == "the user's own file"


def test_staged_folder_commits_in_steps_and_marks_the_run_incomplete(tmp_path):
    out = tmp_path / "o"
    with pytest.raises(RuntimeError):
        with staged_dir(out, command="test") as run:
            write_text(run.path / "tables.txt", "1")
            run.commit()
            write_text(run.path / "figures.png", "2")
            raise RuntimeError("the notebooks failed")
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["files"] == ["tables.txt"] and manifest["complete"] is False
    assert sorted(os.listdir(out)) == ["numalab-run.json", "tables.txt"]  # no staging folder, no marker
    assert not (out / INCOMPLETE).exists()


# ------------------------------------------------------------------- class 5: numalab explore
@pytest.mark.parametrize("port, why", [("65536", "out of range"), ("-1", "out of range"), ("70000", "out of range")])
def test_explore_port_outside_tcp_is_refused(port, why, capsys):
    rc, _, err = run_cli(["explore", "--port", port], capsys)
    assert_user_error(rc, err, f"--port={port}", why, "[0, 65535]")


def test_explore_taken_port_is_refused_not_moved(capsys):
    # issue: with the port taken it printed the other program's URL while Voila moved on
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        rc, out, err = run_cli(["explore", "--port", str(port)], capsys)
    assert_user_error(rc, err, f"port {port} on 127.0.0.1 is in use", "--port 0")
    assert out == ""
    from numalab.commands.explore import command

    assert "--Voila.port_retries=0" in command(Path("x.ipynb"), 8866)


def _listeners(port: int) -> set[int]:
    """The pids that hold a listening TCP socket on ``port`` of any address (from /proc: the
    socket's inode in /proc/net/tcp{,6}, then the processes whose fds point at it)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if int(f[1].rsplit(":", 1)[1], 16) == port and f[3] == "0A":      # 0A = LISTEN
                inodes.add(f"socket:[{f[9]}]")
    pids = set()
    for fd in glob.glob("/proc/[0-9]*/fd/*") if inodes else ():
        try:
            if os.readlink(fd) in inodes:
                pids.add(int(fd.split("/")[2]))
        except OSError:
            continue
    return pids


def _explore_dirs():
    import tempfile

    return set(glob.glob(os.path.join(tempfile.gettempdir(), "numalab-explore-*")))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signame", ["SIGKILL", "SIGTERM"])  # Ctrl-C takes SIGTERM's path (an exception)
def test_explore_server_never_outlives_numalab_explore(signame, tmp_path):
    # issue: after SIGTERM/SIGKILL the Voila child kept serving; every run left temporary folders
    pytest.importorskip("voila")
    before = _explore_dirs()
    parent = subprocess.Popen([sys.executable, "-m", "numalab", "explore", "--port", "0"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = parent.stdout.readline()
        assert "serving" in line, line
        port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # listening when the URL is printed
        server = _children(parent.pid)
        assert server
        assert _listeners(port) & set(server), "the check below sees this run's server listen"
        parent.send_signal(getattr(signal, signame))
        t0 = time.monotonic()
        while any(_running(p) for p in server) and time.monotonic() - t0 < 30:
            time.sleep(0.2)
        assert [p for p in server if _running(p)] == [], "the server outlived numalab explore"
        # nobody of this run serves there any more (another test's server or kernel, on the
        # other pytest-xdist worker, may have been given the freed port meanwhile)
        assert _listeners(port) & {parent.pid, *server} == set()
        # this run's folders only (named after the pid that made them): a `numalab explore` of
        # a test on the other pytest-xdist worker may make its own meanwhile
        ours = tuple(f"numalab-explore-{p}-" for p in (parent.pid, *server))
        left = lambda: {d for d in _explore_dirs() - before if os.path.basename(d).startswith(ours)}  # noqa: E731
        t0 = time.monotonic()
        while left() and time.monotonic() - t0 < 10:
            time.sleep(0.2)
        assert left() == set()
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.wait()
        parent.stdout.close()
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------ class 6: refused before any work
@pytest.mark.parametrize("argv, words", [
    (["futex", "sweep", "--buckets", "2", "--threads", "4", "--seeds", "1", "--plot", "fig.bogus"],
     ["--plot='fig.bogus'", "png"]),
    (["futex", "sweep", "--buckets", "2", "--threads", "4", "--seeds", "1", "--plot", "same.png", "--out", "same.png"],
     ["names the same file as"]),
    (["sweep", "--mode", "classic", "--threads", "0", "--no-cache", "--out", "o.nc"], ["threads=0", "[1, 1048576]"]),
    (["sweep", "--workload", "numa02", "--set", "workload=numa01", "--no-cache", "--out", "o.nc"],
     ["already given by --workload"]),
    (["sweep", "--workload", "numa02,", "--no-cache", "--out", "o.nc"], ["--workload='numa02,' has an empty item"]),
    (["demo", "--profiles", ","], ["--profiles=','", "empty list"]),
    (["demo", "--threads", "4,4"], ["repeats 4"]),
    (["futex", "numa", "--method", "simulation", "-c", "4"], ["--method simulation with -c 4", "--method mva"]),
    (["simulate", "--option", "scan_size_mb=x", "--seeds", "1"], ["scan_size_mb='x'"]),
])
def test_refused_before_any_work(argv, words, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    from numalab import futex
    from numalab.sweeps import api

    def never(*a, **k):
        raise AssertionError("the work started before the arguments were checked")

    for mod, name in ((api, "_compute"), (futex, "simulate"), (futex, "sweep"), (futex, "solve_points")):
        monkeypatch.setattr(mod, name, never)
    rc, _, err = run_cli(argv, capsys)
    assert_user_error(rc, err, *words)
    assert os.listdir(tmp_path) == []


def test_report_refuses_a_repeated_metric(tmp_path, capsys):
    # issue: --metric elsp,elsp printed every row twice
    from numalab.storage import write_netcdf

    ds = xr.Dataset({"elsp": (("policy", "seed"), np.ones((2, 2)))}, coords={"policy": ["a", "b"]},
                    attrs={"workload": "numa01"})
    write_netcdf(ds, tmp_path / "r.nc")
    for metric in ("elsp,elsp", ",", "elsp,"):
        rc, out, err = run_cli(["report", str(tmp_path / "r.nc"), "--metric", metric], capsys)
        assert rc == 2 and out == "" and "--metric" in err
    with pytest.raises(NumalabValueError, match="repeats 'elsp'"):
        nl.report.mmtests(ds, metric=["elsp", "elsp"])


@pytest.mark.parametrize("value", ["inf", "nan", "1.5", "-3", "lots"])
def test_step_limit_from_the_environment_is_checked(value, monkeypatch, capsys):
    # issue: NUMALAB_MAX_STEPS=inf was an internal error
    monkeypatch.setenv("NUMALAB_MAX_STEPS", value)
    rc, _, err = run_cli(["simulate", "--workload", "numa02", "--seeds", "1", "--max-time", "1"], capsys)
    assert_user_error(rc, err, f"NUMALAB_MAX_STEPS={value!r}", "whole number")


def test_futex_sweep_thread_count_is_what_ran():
    # issue: --threads 0 was labelled 0 but ran the default (128 threads)
    with pytest.raises(NumalabValueError, match=r"threads=0 is out of range"):
        nl.sweep({"mode": ["classic"], "threads": [0]}, seeds=1, cache=False, progress=False, kind="futex")
    ds = nl.sweep({"mode": ["classic"], "buckets": [16, 256]}, seeds=1, cache=False, progress=False, kind="futex",
                  workers=1)
    assert json.loads(ds.attrs["parameters"])["threads"] is None  # not given: the program's own count


# ------------------------------------------------------------- class 7: our own output read back
def test_report_reads_numalab_sweep_output(tmp_path, capsys):
    # issue: `numalab report sweep.nc --along history` was a KeyError; without --along it said
    # there was no policy dim; --along workload asked to select a point with no way to do so
    out = tmp_path / "s.nc"
    rc, stdout, _ = run_cli(["sweep", "--workload", "numa02,numa02_SMT", "--history", "2,4", "--profile", "6.12",
                             "--seeds", "2", "--set", "max_time=1", "--no-cache", "--no-progress", "--workers", "1",
                             "--out", str(out)], capsys)
    assert rc == 0
    assert "Amean     elsp-NUMA02" in stdout and "elsp-NUMA02_SMT" in stdout  # sweep prints its table
    assert f"numalab report {out} --along history" in stdout
    rc, default, _ = run_cli(["report", str(out)], capsys)
    assert rc == 0 and "Amean     elsp-NUMA02 " in default  # along the first swept dim but the workload
    rc, text, _ = run_cli(["report", str(out), "--along", "history", "--baseline", "4", "--format", "lkp"], capsys)
    assert rc == 0 and text.split("\n")[0].split() == ["4", "2"]
    rc, one, _ = run_cli(["report", str(out), "--sel", "workload=numa02", "--format", "lkp"], capsys)
    assert rc == 0 and "autonuma-benchmark.numa02.seconds" in one and "numa02_SMT" not in one
    for argv, words in ((["--along", "workload"], ["--sel workload=NAME"]),
                        (["--sel", "workload=numa03"], ["did you mean 'numa02'"]),
                        (["--sel", "bogus=1"], ["--sel DIM='bogus'"]),
                        (["--baseline", "9"], ["baseline='9'"])):
        rc, _, err = run_cli(["report", str(out), *argv], capsys)
        assert_user_error(rc, err, *words)


def test_report_of_integer_columns():
    # issue: lkp() with an integer policy coordinate was a KeyError
    ds = xr.Dataset({"elsp": (("policy", "seed"), np.array([[1.0, 2.0], [3.0, 4.0]]))}, coords={"policy": [4, 8]},
                    attrs={"workload": "numa01"})
    assert nl.report.lkp(ds, baseline=8).split("\n")[0].split() == ["8", "4"]
    assert "elsp-NUMA01" in nl.report.mmtests(ds, baseline="8")
    assert nl.report.lkp(ds).columns == ["4", "8"]


# -------------------------------------------------------------- class 8: one source of truth
@pytest.mark.parametrize("mb, K", [(256, 410), (4096, 4250), (65536, 65690)])
def test_memory_guard_reads_the_engines_protect_bound(mb, K, monkeypatch):
    # issue: the guard copied the draw block and a 256 MB scan budget (K = 409 whatever the size)
    from numalab.engine import batch
    from numalab.engine.layout import Layout
    from numalab.engine.options import EngineOptions

    wl = nl.workload("numa01", nl.Topology.preset("2s-128"))
    assert Layout(wl, EngineOptions.coerce({"scan_size_mb": mb})).K == K
    sizes = limits.simulate_sizes(wl)
    assert limits._engine_sizes(sizes["processes"], sizes["vmas"], mb) == (batch.DRAW_BLOCK, K)
    small = limits.simulate_bytes(sizes, 100, 1, scan_size_mb=mb)
    monkeypatch.setattr(batch, "DRAW_BLOCK", 2 * batch.DRAW_BLOCK)  # an engine change moves the estimate
    assert limits.simulate_bytes(sizes, 100, 1, scan_size_mb=mb) > small
    if mb == 65536:  # 1000 seeds at 64 GiB of scan budget: refused at once, naming the seeds
        monkeypatch.setenv("NUMALAB_MEMORY_LIMIT", "8G")
        with pytest.raises(NumalabValueError, match=r"seeds=1000 needs about"):
            limits.check_simulate(wl, 1, 1000, scan_size_mb=mb)


@pytest.mark.parametrize("first", ["nl.workloads()", "import numalab.workloads", "nl.workload('numa02', '2s-128')",
                                   "nl.simulate"])
def test_nl_workloads_is_one_thing_whatever_was_imported_first(first):
    # issue: nl.workloads was a function or a module depending on import order
    code = f"""
import numalab as nl
{first}
import numalab.workloads
w = nl.workloads
assert w is numalab.workloads and callable(w) and "numa01" in w() and hasattr(w, "from_access_matrix"), w
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_decision_passes_says_what_it_takes():
    # issue: its docstring offered an adaptive history, which it then refused
    from numalab.widgets.compute import decision_passes

    assert "adaptive[" not in decision_passes.__doc__
    with pytest.raises(NumalabValueError, match=r"history='adaptive:span': the replay keeps a fixed number of PID windows"):
        decision_passes("6.12", history="adaptive:span")
    assert decision_passes("6.12", history=4, passes=2).sizes["window"] == 4


def test_cli_holds_no_copy_of_engine_defaults():
    import inspect

    from numalab import cli

    assert "ImportError" not in inspect.getsource(cli.preflight)
    assert "0.05" not in inspect.getsource(cli)


def test_protected_index_has_one_write_path_and_no_per_step_sync():
    # issue: engine.faults.sync_prot served only a test (which replaced prot.idx by hand) and
    # ran every step; now the engine keeps idx/lam/thresh aligned where it changes them and
    # Protected.replace is the one path for a caller that sets the index whole
    import inspect

    from numalab.engine import faults, make_batch, observe, quiet, scan

    for mod in (faults, quiet, scan):
        assert "sync_prot" not in inspect.getsource(mod)
    wl = nl.workload("numa01", nl.Topology.preset("2s-128"))
    b = make_batch(wl, "6.12", seeds=[0], max_time=20.0)
    while b.prot.idx.size == 0:            # run until a scan has protected regions
        b.step()
        observe.check_invariants(b)                   # aligned at every step the engine ran
    regions = np.flatnonzero(~b.regions.prot_none[0])[:3]
    b.regions.prot_none[0] = False
    b.regions.prot_none[0, regions] = True
    b.prot.replace(regions, b.lay, b.regions.thresh)
    observe.check_invariants(b)
    assert np.array_equal(b.prot.lam, b.lay.region_class[regions])
    b.prot.idx = regions[:2]                # set by hand: the invariant check names it
    b.regions.prot_none[0, regions[2]] = False
    with pytest.raises(EngineInvariantError, match="rate/threshold index out of sync"):
        observe.check_invariants(b)

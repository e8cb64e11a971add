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
                          env={**os.environ, "PYTHONPATH": str(HERE.parent)}, timeout=60)
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
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(HERE.parent)})


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
    env = {**os.environ, "NUMALAB_TOY_SLEEP_S": "0.1", "PYTHONPATH": str(HERE.parent)}
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

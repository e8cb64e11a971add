"""The explorers' worker processes (numalab.widgets.pool): same numbers as in this process,
cancellation mid-task, workers that die with their parent, no pool on one CPU."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from numalab import widgets as W
from numalab.widgets import pool as P
from numalab.widgets.compute import _concat

SMALL = {"size_bytes": 128 << 20, "loops": 100}


def _alive(pid: int) -> bool:
    """Whether any thread of ``pid`` still runs: a killed process's main thread is a zombie
    while its other threads exit, and its file descriptors close with the last one."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] != "Z":
                    return True
        except OSError:
            pass
    return False


@pytest.fixture
def pool2():
    """A 2-worker pool and the dict its results are stored in; closed after the test."""
    got = {}
    pool = P.SeedPool(lambda k, v: got.__setitem__(k, v), 2).start()
    try:
        yield pool, got
    finally:
        pool.close()


def test_pooled_explorer_shows_the_pure_functions_numbers():
    ex = W.HistoryExplorer(workload="numa02", topology="2s-ivb-40", history=4, threads=2, seeds=3,
                           workload_options=SMALL, live=True, workers=2)
    try:
        assert ex.pool is not None and ex.pool.size == 2
        ex.prefetch_enabled = False
        ex.timings.clear()
        ex.controls["history"].value = 8
        assert ex.wait(120) and ex.error is None
        assert [t["stage"] for t in ex.timings] == [0, 1]  # preliminary, then refined
        want = _concat([W.history_run("numa02", "2s-ivb-40", "6.12", 8, 2, s, workload_options=SMALL)
                        for s in range(3)], "seed")
        assert W.history_summary(ex.result[8]) == W.history_summary(want)
        assert ex.timings[-1]["cpu_seconds"] > 0
    finally:
        ex.pool.close()


def test_preliminary_answer_is_labelled():
    ex = W.HistoryExplorer(workload="numa02", topology="2s-ivb-40", history=4, threads=2, seeds=2,
                           workload_options=SMALL, live=True, workers=2)
    try:
        ex.prefetch_enabled = False
        seen = []
        ex.summary.observe(lambda ch: seen.append(ch["new"]), names="value")
        ex.controls["history"].value = 6
        assert ex.wait(120)
        assert any("preliminary (1 seed of 2), refining" in s for s in seen)
        assert "preliminary" not in ex.summary.value
    finally:
        ex.pool.close()


def test_a_new_plan_cancels_a_running_task_mid_call(pool2):
    pool, got = pool2
    pool.plan([("warm", time.sleep, (0.0,), {})])
    pool.wait(["warm"], poll=0.05)
    pids = pool.pids
    pool.plan([("long", time.sleep, (60.0,), {})])
    time.sleep(0.3)
    t0 = time.monotonic()
    pool.plan([("short", abs, (-3,), {})])  # "long" is not in the new plan: cancelled
    pool.wait(["short"])
    deadline = time.monotonic() + 30
    while pool.cancelled < 1 and time.monotonic() < deadline:
        pool._collect(0.1)
    assert pool.cancelled == 1 and got == {"warm": None, "short": 3} and "long" not in got
    assert time.monotonic() - t0 < 30 and pool.pids == pids  # the worker lives on, warm
    pool.plan([("again", abs, (-4,), {})])
    pool.wait(["again"])
    assert got["again"] == 4


def test_a_task_error_reaches_the_caller_and_the_worker_survives(pool2):
    pool, got = pool2
    pool.plan([("bad", W.history_policy, ("no-such-profile", "profile"), {})])
    with pytest.raises(Exception, match="no-such-profile"):
        pool.wait(["bad"])
    pids = pool.pids
    pool.plan([("ok", abs, (-1,), {})])
    pool.wait(["ok"])
    assert got == {"ok": 1} and pool.pids == pids


def test_workers_die_with_their_parent(tmp_path):
    code = textwrap.dedent("""
        import sys, time
        from numalab.widgets.pool import SeedPool
        pool = SeedPool(lambda k, v: None, 2).start()
        pool.plan([("w", time.sleep, (0.0,), {})]); pool.wait(["w"])
        print(" ".join(map(str, pool.pids)), flush=True)
        pool.plan([("long", time.sleep, (600.0,), {})])
        time.sleep(600)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    try:
        pids = [int(p) for p in child.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        child.kill()  # SIGKILL: no finalizer, no atexit
        child.wait(10)
        deadline = time.monotonic() + 15
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(p) for p in pids)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        child.stdout.close()


def test_no_pool_on_one_cpu(monkeypatch):
    from numalab.sweeps import executors

    assert P.pool_size(1) == 0 and P.pool_size(0) == 0 and P.pool_size(2) == 2
    monkeypatch.setattr(executors, "default_workers", lambda: 1)
    assert P.pool_size() == 0
    ex = W.HistoryExplorer(workload="numa02", topology="2s-ivb-40", history=4, threads=2, seeds=2,
                           workload_options=SMALL, live=True)
    assert ex.pool is None
    ex.controls["history"].value = 8
    assert ex.wait(120) and ex.error is None
    want = _concat([W.history_run("numa02", "2s-ivb-40", "6.12", 8, 2, s, workload_options=SMALL)
                    for s in range(2)], "seed")
    assert W.history_summary(ex.result[8]) == W.history_summary(want)
    ex.prefetch_enabled = False


def test_synchronous_explorer_has_no_pool():
    ex = W.HistoryExplorer(workload="numa02", topology="2s-ivb-40", history=4, threads=2, seeds=1,
                           workload_options=SMALL)
    assert ex.pool is None  # outside a kernel (tests, scripts): computed in this process


def test_at_most_two_pools_keep_their_workers():
    got = {}
    pools = [P.SeedPool(lambda k, v: got.__setitem__(k, v), 2).start() for _ in range(3)]
    try:
        first = pools[0]
        assert not first.pids and all(len(p.pids) == 2 for p in pools[1:])  # re-running a cell
        first.plan([("again", abs, (-2,), {})])  # used again: its workers come back
        first.wait(["again"])
        assert got == {"again": 2} and len(first.pids) == 2 and not pools[1].pids
    finally:
        for p in pools:
            p.close()


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[1])


def test_workers_are_forked_from_one_warm_server_per_process():
    from numalab.widgets.forks import fork_server

    got = {}
    pools = [P.SeedPool(lambda k, v: got.__setitem__(k, v), 2).start() for _ in range(2)]
    try:
        server = fork_server(P.PRELOAD, P.WARM_UP)
        pools[0].plan([(("a", i), os.getppid, (), {}) for i in range(2)])
        pools[1].plan([(("b", i), os.getppid, (), {}) for i in range(2)])
        pools[0].wait([("a", 0), ("a", 1)])
        pools[1].wait([("b", 0), ("b", 1)])
        pids = pools[0].pids + pools[1].pids
        assert len(set(pids)) == 4 and server.proc.pid not in pids and os.getpid() not in pids
        # every worker of both pools is a child of the one server, which is this process's child
        assert {_ppid(p) for p in pids} == {server.proc.pid} and _ppid(server.proc.pid) == os.getpid()
        assert set(got.values()) == {server.proc.pid}
        # the server imported and ran the engine before forking: a worker starts with it imported
        pools[0].plan([("mods", P._preloaded, (), {})])
        pools[0].wait(["mods"])
        assert got["mods"] == (True, True)
    finally:
        for p in pools:
            p.close()


def test_a_killed_worker_is_reported_and_replaced(pool2):
    pool, got = pool2
    pool.plan([("long", time.sleep, (600.0,), {})])
    deadline = time.monotonic() + 60
    while not pool.running_keys() and time.monotonic() < deadline:
        time.sleep(0.05)
    w = pool._running["long"]
    victim = P._worker_pid(w, 60.0)
    time.sleep(0.2)
    os.kill(victim, 9)
    with pytest.raises(P.NumalabError, match=rf"pid {victim}\) exited while computing long"):
        pool.wait(["long"])
    pool.plan([("after", abs, (-5,), {}), ("other", abs, (-6,), {})])
    pool.wait(["after", "other"])
    assert got == {"after": 5, "other": 6} and victim not in pool.pids and len(pool.pids) == 2


def test_workers_of_a_killed_fork_server_are_replaced_by_a_new_one(pool2):
    from numalab.widgets.forks import fork_server

    pool, got = pool2
    old = fork_server(P.PRELOAD, P.WARM_UP)
    pids = pool.pids
    old.proc.kill()  # its idle workers die with it (PR_SET_PDEATHSIG)
    old.proc.wait(10)
    deadline = time.monotonic() + 15
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)
    pool.plan([("x", abs, (-7,), {}), ("y", abs, (-8,), {})])  # never started: not lost
    pool.wait(["x", "y"])
    new = fork_server(P.PRELOAD, P.WARM_UP)
    assert got == {"x": 7, "y": 8} and new is not old and new.alive()
    assert {_ppid(p) for p in pool.pids} == {new.proc.pid}


def test_the_fork_server_never_outlives_its_process():
    code = textwrap.dedent("""
        import time
        from numalab.widgets import pool as P
        from numalab.widgets.forks import fork_server
        pool = P.SeedPool(lambda k, v: None, 2).start()
        pool.plan([("w", time.sleep, (0.0,), {})]); pool.wait(["w"])
        print(fork_server(P.PRELOAD, P.WARM_UP).proc.pid, flush=True)
        time.sleep(600)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    for how in ("kill", "exit"):
        child = subprocess.Popen([sys.executable, "-c", code if how == "kill" else code.replace(
            "time.sleep(600)", "import sys; sys.stdin.readline()")], stdout=subprocess.PIPE,
            stdin=subprocess.PIPE, text=True, env=env)
        try:
            server = int(child.stdout.readline())
            assert _alive(server)
            if how == "kill":
                child.kill()  # SIGKILL: no finalizer, no atexit
            else:
                child.stdin.close()  # a normal exit: atexit closes the server
            child.wait(10)
            deadline = time.monotonic() + 15
            while _alive(server) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not _alive(server), how
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(10)
            child.stdout.close()
            child.stdin.close()

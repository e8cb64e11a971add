"""numalab.engine.compiled._nb.compile_lock: processes that reach the same first compile of a
fresh install compile it once; the others wait, then load numba's cache."""

import os
import subprocess
import sys
import textwrap

import pytest

from numalab.engine.compiled import available

pytestmark = pytest.mark.skipif(not available() or os.name != "posix", reason="numba and fcntl locks")

#: a module with one cached function, compiled by the children below
MODULE = textwrap.dedent('''
    from numalab.engine.compiled._nb import jit

    @jit
    def twice(x):
        return 2 * x
''')

#: a child: takes the lock around the function's first call, says whether it compiles, waits
#: for a file named on its command line before calling (so the test decides when it ends)
CHILD = textwrap.dedent('''
    import pathlib, sys, time
    sys.path.insert(0, sys.argv[1])
    import mod
    from numalab.engine.compiled._nb import compile_lock

    go = pathlib.Path(sys.argv[2])
    with compile_lock(mod.twice, "compiling twice") as compiling:
        print("inside", compiling, flush=True)
        while not go.exists():
            time.sleep(0.02)
        assert mod.twice(21) == 42
    print("signatures", len(mod.twice.signatures), flush=True)
''')


def _child(tmp_path, env):
    return subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), str(tmp_path / "go")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_second_process_waits_for_the_first_compile_and_loads_it(tmp_path):
    (tmp_path / "mod.py").write_text(MODULE)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), NUMALAB_JIT_CACHE="1")
    first = _child(tmp_path, env)
    assert first.stdout.readline().split() == ["inside", "True"]       # holds the lock, will compile
    second = _child(tmp_path, env)
    # the second reaches the lock while the first holds it: it says it waits, and stays outside
    assert "another process is compiling the same numba code (twice" in second.stderr.readline()
    (tmp_path / "go").touch()
    out1, err1 = first.communicate(timeout=120)
    out2, err2 = second.communicate(timeout=120)
    assert first.returncode == 0 and second.returncode == 0, err1 + err2
    assert "compiling twice" in err1
    # after the wait the cache holds the function: the second loads it and does not compile
    assert out2.splitlines()[0].split() == ["inside", "False"]
    assert "compiling twice" not in err2
    assert out2.splitlines()[1] == "signatures 1"
    assert list((tmp_path / "cache").rglob("*twice*.nbi"))


def test_without_a_cache_each_process_compiles_and_says_so(tmp_path):
    (tmp_path / "mod.py").write_text(MODULE)
    (tmp_path / "go").touch()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), NUMALAB_JIT_CACHE="0")
    for _ in range(2):
        out, err = _child(tmp_path, env).communicate(timeout=120)
        assert out.split()[:2] == ["inside", "True"] and "compiling twice" in err
    assert not list((tmp_path / "cache").rglob("*.lock"))

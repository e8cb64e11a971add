"""Issue 17, item 5: hypothesis-generated argument vectors for every subcommand (valid,
invalid, extreme) and random bad values for the public API.

Every CLI case must exit 0 or 2 with no Python traceback, leave no file it was not asked to
write (and never a temporary file), and finish in bounded time. Sizes are kept small (a
``--max-time`` of at most 2 simulated seconds, one or two seeds, a few threads) so each valid
case is quick; the invalid ones must be refused before any work. Most cases run in-process
(``numalab.cli.main``) for speed; ``test_cli_fuzz_subprocess`` runs a few through
``python -m numalab``.

Case counts (``max_examples``) are chosen to keep the file under about 60 s on a 2-core CI
box; set ``NUMALAB_FUZZ_SCALE=10`` to run ten times as many.
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numalab as nl
from numalab.cli import main

SCALE = float(os.environ.get("NUMALAB_FUZZ_SCALE", "1"))
HERE = Path(__file__).resolve().parent
#: wall-clock bound of one case (a 2-core box shared with other jobs)
CASE_S = 30.0


def n(k: int) -> int:
    return max(1, int(k * SCALE))


FUZZ = dict(deadline=None, derandomize=True, database=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                   HealthCheck.filter_too_much])

BAD_INT = ["-1", "0", str(2**31), str(2**63), str(2**64), "1e3", "nan", "", "abc", "٣", "0x10"]
BAD_FLOAT = ["nan", "inf", "-inf", "-1", "0", "1e308", "1e-300", "", "x", "1e-9"]
BAD_TEXT = ["", "bogus", "a" * 300, "../x", "ü", "-", "%s%n", "6.12+N=999", "numa02,", ",", " "]
OUT_KINDS = ["file", "empty", "dir", "under_file", "long", "missing_dir", "file_png"]


def vals(good, bad, p_good=0.7):
    """A value: mostly one of ``good``, else one of ``bad``."""
    return st.one_of(st.sampled_from(good), st.sampled_from(bad)) if bad else st.sampled_from(good)


@st.composite
def options(draw, spec, required=()):
    """argv pieces: each option of ``spec`` (name -> value strategy or None for a flag) kept
    with probability 1/2 (``required`` ones always), in random order."""
    argv = []
    names = list(spec)
    order = draw(st.permutations(names))
    for name in order:
        if name not in required and not draw(st.booleans()):
            continue
        strat = spec[name]
        if strat is None:
            argv.append(name)
        else:
            argv += [name, draw(strat)]
    return argv


def out_path(kind: str, root: Path, name: str = "out.nc") -> str:
    plain = root / "plain.txt"
    return {"file": name, "empty": "", "dir": str(root), "under_file": str(plain / name),
            "long": "a" * 300 + ".nc", "missing_dir": str(root / "nope" / name),
            "file_png": "fig.png"}[kind]


@contextlib.contextmanager
def sandbox():
    """A fresh working directory holding one plain file (for 'path under a file' cases)."""
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="numalab-fuzz-") as d:
        root = Path(d)
        (root / "plain.txt").write_text("x\n")
        os.chdir(root)
        try:
            yield root
        finally:
            os.chdir(old)


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink()}


STATS = {}


def check_case(argv, capsys, root: Path, allowed=()):
    """Run one argument vector in-process and assert the issue's contract."""
    before = files(root)
    t0 = time.monotonic()
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse: usage errors (2) and --help (0)
        rc = exc.code if isinstance(exc.code, int) else 2
    dt = time.monotonic() - t0
    out, err = capsys.readouterr()
    key = argv[0] if argv[0] != "futex" or len(argv) < 2 else f"futex {argv[1]}"
    s = STATS.setdefault(key, {"cases": 0, "rc0": 0, "rc2": 0, "s": 0.0})
    s["cases"] += 1
    s["rc0" if rc == 0 else "rc2"] += 1
    s["s"] += dt
    assert rc in (0, 2), f"{argv!r}: exit {rc}\n{err}"
    assert "Traceback" not in err and "Exception ignored" not in err, f"{argv!r}:\n{err}"
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("numalab") and ": error: " in lines[0], f"{argv!r}:\n{err}"
    new = files(root) - before
    assert not [f for f in new if ".tmp" in f], f"{argv!r} left temporary files {new}"
    stray = {f for f in new if not any(f == a or f.startswith(a.rstrip("/") + "/") for a in allowed)}
    if rc != 0:
        stray = {f for f in stray if not f.startswith("cache/")}
    assert not stray, f"{argv!r} (exit {rc}) left {stray}"
    assert dt < CASE_S, f"{argv!r} took {dt:.1f} s"
    return rc


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    yield
    if STATS:
        lines = [f"{k:<14} {v['cases']:>4} cases ({v['rc0']} ok, {v['rc2']} refused) {v['s']:6.1f} s"
                 for k, v in sorted(STATS.items())]
        sys.stderr.write("\nfuzz cases per subcommand:\n" + "\n".join(lines) + "\n")


# ------------------------------------------------------------------------------ simulate/trace
MAXTIME = vals(["0.5", "1", "2"], ["nan", "-1", "0", "1e12", "inf", ""])

SIMULATE = {
    "--workload": vals(["numa02", "numa02_SMT"], BAD_TEXT),
    "--topology": vals(["2s-128", "2s-ivb-40"], ["bogus", "", "2S-128"]),
    "--profile": vals(["6.12", "6.4", "rfc2024-hot-shared", "pre-6.4"], BAD_TEXT),
    "--history": vals(["2", "4", "8"], BAD_INT + ["65"]),
    "--seeds": vals(["1", "2"], BAD_INT + ["10001"]),
    "--dt": vals(["0.05", "0.1"], BAD_FLOAT + ["0.2"]),
    "--max-time": MAXTIME,
    "--no-thp": None,
    "--fixed-locality": None,
}


@settings(max_examples=n(30), **FUZZ)
@given(argv=options(SIMULATE, required=("--max-time",)), out=st.sampled_from(OUT_KINDS + [None] * 4))
def test_cli_fuzz_simulate(argv, out, capsys):
    with sandbox() as root:
        extra = [] if out is None else ["--out", out_path(out, root)]
        check_case(["simulate", *argv, *extra], capsys, root, allowed=("out.nc", "fig.png"))


TRACE = {
    "--workload": vals(["numa02"], BAD_TEXT),
    "--topology": vals(["2s-128"], ["bogus"]),
    "--profile": vals(["6.12", "6.4"], BAD_TEXT),
    "--history": vals(["2", "4"], BAD_INT),
    "--seed": vals(["0", "7"], ["-1", str(2**63), str(2**64), "x"]),
    "--max-time": MAXTIME,
    "--format": vals(["runs", "vmas", "perf"], ["bogus", ""]),
}


@settings(max_examples=n(15), **FUZZ)
@given(argv=options(TRACE, required=("--max-time",)), out=st.sampled_from(OUT_KINDS + [None] * 4))
def test_cli_fuzz_trace(argv, out, capsys):
    with sandbox() as root:
        extra = [] if out is None else ["--out", out_path(out, root)]
        check_case(["trace", *argv, *extra], capsys, root, allowed=("out.nc", "fig.png"))


# ------------------------------------------------------------------------------------ sweep
SWEEP_NUMA = {
    "--workload": vals(["numa02"], BAD_TEXT + ["numa02,numa02"]),
    "--history": vals(["2", "2,4", "profile"], ["0", "2,2", "x", ""]),
    "--profile": vals(["6.12", "6.4,6.12"], BAD_TEXT),
    "--seeds": vals(["1", "0,3"], ["0", "-1", f"0,{2**63}", "1,1", "x", "", "100001"]),
    "--workers": vals(["1"], ["0", "-1", "99999", "x"]),
    "--batch-size": vals(["1", "4"], ["0", "513", "x"]),
    "--set": vals(["max_time=1"], ["max_time=nan", "max_time=-1", "dt=1e-9", "foo=1", "max_time", "=1",
                                   "max_time=1,1"]),
}
SWEEP_FUTEX = {
    "--mode": vals(["private", "classic,numa"], ["bogus", "", "numa,numa"]),
    "--buckets": vals(["16", "16,256"], ["3", "0", "16,16", str(2**40), "x"]),
    "--threads": vals(["4", "4,8"], ["0", "-1", str(2**30), "x"]),
    "--seeds": vals(["1", "2"], ["0", "x", "100001"]),
    "--workers": vals(["1"], ["0", "x"]),
}


@settings(max_examples=n(25), **FUZZ)
@given(kind=st.sampled_from(["numa", "futex"]), data=st.data(),
       out=st.sampled_from(OUT_KINDS), cache=st.sampled_from(["none", "dir", "under_file", "bad"]))
def test_cli_fuzz_sweep(kind, data, out, cache, capsys):
    spec = SWEEP_NUMA if kind == "numa" else SWEEP_FUTEX
    req = ("--set", "--workers") if kind == "numa" else ("--workers",)
    argv = data.draw(options(spec, required=req))
    if kind == "numa" and "max_time=1" not in argv:
        argv += ["--set", "max_time=1"]  # every valid NUMA case stays quick
    with sandbox() as root:
        cache_arg = {"none": ["--no-cache"], "dir": ["--cache", "cache"],
                     "under_file": ["--cache", "plain.txt/cache"], "bad": ["--cache", ""]}[cache]
        check_case(["sweep", *argv, "--no-progress", *cache_arg, "--out", out_path(out, root)], capsys, root,
                   allowed=("out.nc", "fig.png", "cache"))


# ------------------------------------------------------------------------------------ futex
FUTEX_COMMON = {
    "--mode": vals(["private", "numa", "classic"], ["bogus", ""]),
    "--method": vals(["mva", "simulation"], ["bogus", "MVA", ""]),
    "--hash": vals(["uniform", "jhash2"], ["bogus"]),
    "--refcount": vals(["percpu", "rcuref"], ["bogus"]),
    "--seed": vals(["0", "3"], ["-1", str(2**63), str(2**64), "x"]),
    "--squash": None,
    "--oversubscribe": None,
}
FUTEX = {
    "numa": {"-c": vals(["0", "2"], BAD_INT), "-t": vals(["1", "2"], BAD_INT), "-s": vals(["1", "10"], BAD_INT),
             "-n": vals(["50000", "0"], BAD_FLOAT), "-N": vals(["0", "1"], ["-5", "x"]),
             "--cpu-node": vals(["0", "1"], ["-1", "9", "x"]), "--peer": vals(["1:0", "1"], ["x", "1:x", ":", "9:0"]),
             "--topology": vals(["2s-ivb-40"], ["bogus"]), **FUTEX_COMMON},
    "hash": {"-t": vals(["1", "4", "8"], BAD_INT + ["100000000"]), "-f": vals(["1", "16"], BAD_INT + [str(2**21)]),
             "-b": vals(["-1", "0", "16"], ["3", "-2", str(2**30), str(2**62), "x"]),
             "-r": vals(["1", "10"], BAD_INT), "-S": None, "-I": None, "-s": None,
             "--topology": vals(["2s-128", "2s-ivb-40"], ["bogus"]), **FUTEX_COMMON},
    "sweep": {"--buckets": vals(["2,16", "16"], ["2,2", "", "x", "3", str(2**40), ","]),
              "--mode": vals(["classic,numa,private", "private"], ["bogus", "", "numa,numa"]),
              "--threads": vals(["4", "4,8"], ["0", "4,4", "x", str(2**30)]),
              "--topology": vals(["2s-128"], ["bogus"]), "--futexes": vals(["1", "16"], BAD_INT),
              "--seeds": vals(["1", "2"], BAD_INT + ["10001"]), "--method": vals(["mva"], ["bogus", "simulation"])},
}


@settings(max_examples=n(60), **FUZZ)
@given(program=st.sampled_from(["numa", "hash", "sweep"]), data=st.data(),
       out=st.sampled_from(OUT_KINDS + [None] * 3), plot=st.sampled_from(["file_png", "dir", "empty", None, None, None]))
def test_cli_fuzz_futex(program, data, out, plot, capsys):
    spec = FUTEX[program]
    req = ("-t", "-f") if program == "hash" else ("--threads", "--buckets") if program == "sweep" else ()
    argv = data.draw(options(spec, required=req))
    with sandbox() as root:
        extra = []
        if program == "sweep":
            extra += [] if out is None else ["--out", out_path(out, root)]
            extra += [] if plot is None else ["--plot", out_path(plot, root)]
        check_case(["futex", program, *argv, *extra], capsys, root, allowed=("out.nc", "fig.png"))


# ----------------------------------------------------------------------------------- report
@pytest.fixture(scope="module")
def saved_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz-report") / "run.nc"
    ds = nl.simulate("numa02", ["6.12", "6.4"], seeds=2, max_time=1.0)
    from numalab.storage import write_netcdf

    write_netcdf(ds, path)
    return path


REPORT = {
    "--format": vals(["mmtests", "lkp"], ["bogus", ""]),
    "--metric": vals(["elsp", "syst", "elsp,syst", "numa_hint_faults"], ["bogus", "", ",", "seed"]),
    "--baseline": vals(["6.12", "6.4"], ["bogus", ""]),
    "--era": vals(["2023", "2024-09", "2024-12", "2026"], ["1999", ""]),
    "--along": vals(["policy"], ["seed", "bogus", "time", ""]),
    "--no-monitors": None,
}


@settings(max_examples=n(30), **FUZZ)
@given(argv=options(REPORT), file=st.sampled_from(["run", "run", "run", "missing", "dir", "text", "corrupt", "empty"]))
def test_cli_fuzz_report(argv, file, saved_run, capsys):
    with sandbox() as root:
        (root / "text.nc").write_text("not netcdf\n")
        raw = bytearray(saved_run.read_bytes())
        for i in range(1500, len(raw), 101):
            raw[i] ^= 0x5A
        (root / "corrupt.nc").write_bytes(bytes(raw))
        (root / "empty.nc").write_bytes(b"")
        path = {"run": str(saved_run), "missing": "missing.nc", "dir": str(root), "text": "text.nc",
                "corrupt": "corrupt.nc", "empty": "empty.nc"}[file]
        check_case(["report", path, *argv], capsys, root)


# ------------------------------------------------------------------------------ demo, reproduce
DEMO = {
    "--threads": vals(["4", "4,16"], ["0", "x", "", "5000", ","]),
    "--vmas": vals(["4", "32"], BAD_INT + ["70000"]),
    "--profiles": vals(["6.12", "6.4,6.12+N=4"], BAD_TEXT),
    "--history": vals(["2", "8"], BAD_INT + ["65"]),
    "--seed": vals(["0", "5"], ["-1", str(2**64), "x"]),
}


@settings(max_examples=n(25), **FUZZ)
@given(argv=options(DEMO))
def test_cli_fuzz_demo(argv, capsys):
    with sandbox() as root:
        check_case(["demo", *argv], capsys, root)


@settings(max_examples=n(10), **FUZZ)
@given(seeds=st.sampled_from(["1", "0", "-5", "10001", "x", ""]), out=st.sampled_from(OUT_KINDS),
       table=st.sampled_from([None, "bogus", ""]), topo=st.sampled_from([None, "bogus", "2s-128"]))
def test_cli_fuzz_reproduce_refused_before_work(seeds, out, table, topo, capsys):
    # valid reproduce runs take minutes: only refused vectors here (seeds < 2 or not an int)
    with sandbox() as root:
        argv = ["reproduce", "--seeds", seeds, "--out", out_path(out, root, "res"), "--no-notebooks", "--no-progress"]
        argv += [] if table is None else ["--table", table]
        argv += [] if topo is None else ["--topology", topo]
        assert check_case(argv, capsys, root) == 2


@settings(max_examples=n(15), **FUZZ)
@given(argv=st.lists(st.sampled_from(["simulate", "sweep", "futex", "report", "--help", "-h", "--version",
                                      "--bogus", "", "x", "-", "--", "hash", "numa", "--out"]), max_size=4))
def test_cli_fuzz_top_level(argv, capsys):
    with sandbox() as root:
        if any(a in ("--help", "-h", "--version") for a in argv) or argv in ([], ["futex"]) or not argv:
            try:
                main(argv)
            except SystemExit:
                pass
            capsys.readouterr()
            return
        if argv[0] in ("simulate",) and len(argv) == 1:
            return  # the full default job: valid, but minutes long
        if argv[0] == "report" or argv[0] == "sweep" or argv[0] == "futex":
            check_case(argv, capsys, root)


# ------------------------------------------------------------------------------ subprocess
SUBPROCESS_CASES = [
    ["futex", "hash", "-t", "8", "-f", "16", "-b", "1073741824", "-s"],
    ["futex", "hash", "-t", "4", "-f", "4", "--method", "bogus"],
    ["simulate", "--dt", "1e-9"],
    ["simulate", "--out", ""],
    ["report", "/nonexistent.nc"],
    ["sweep", "--workload", "numa02", "--seeds", "1", "--out", "x.nc", "--no-cache", "--scheduler", "foo://x:1"],
    ["futex", "sweep", "--buckets", "2,2"],
    ["demo", "--threads", "4", "--vmas", "4"],
]


@pytest.mark.parametrize("argv", SUBPROCESS_CASES, ids=lambda a: " ".join(a)[:40])
def test_cli_fuzz_subprocess(argv, tmp_path):
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "numalab", *argv], capture_output=True, text=True, cwd=tmp_path,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(HERE.parent)})
    assert proc.returncode in (0, 2), proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    assert os.listdir(tmp_path) == []
    assert time.monotonic() - t0 < 30


# ------------------------------------------------------------------------------ public API
BAD_VALUES = [None, -1, 0, 2**63, 2**64, -2**70, math.nan, math.inf, -math.inf, 1e-300, 1e300, "", "x", "6.12",
              [], [1, 1], [-1], [2**64], (), {}, {"a": 1}, object(), b"1", True, 3.5, np.int64(2), np.float64("nan"),
              np.array([1, 2]), [0, 1.5], "a" * 300]


def api_ok(fn, *args, **kwargs):
    """``fn`` returns, or raises a ValueError (NumalabValueError) -- nothing else."""
    try:
        fn(*args, **kwargs)
    except ValueError:
        pass


@settings(max_examples=n(60), **FUZZ)
@given(param=st.sampled_from(["threads", "futexes", "buckets", "runtime", "mode", "hash", "topology", "refcount"]),
       value=st.sampled_from(BAD_VALUES))
def test_api_fuzz_futex_workload(param, value):
    kw = {"threads": 4, "futexes": 4}
    kw[param] = value
    topo = kw.pop("topology", "2s-128")
    api_ok(nl.futex.perf_bench_hash, topo, **kw)


@settings(max_examples=n(60), **FUZZ)
@given(param=st.sampled_from(["seeds", "method", "ops", "dist", "costs"]), value=st.sampled_from(BAD_VALUES))
def test_api_fuzz_futex_simulate(param, value):
    wl = nl.futex.perf_bench_hash("2s-128", threads=4, futexes=4)
    kw = {"seeds": 1}
    kw[param] = value
    api_ok(nl.futex.simulate, wl, **kw)


@settings(max_examples=n(40), **FUZZ)
@given(param=st.sampled_from(["buckets", "mode", "threads", "seeds", "program", "topology", "method"]),
       value=st.sampled_from(BAD_VALUES + [[16, 16], ["numa", "numa"], [4, 4]]))
def test_api_fuzz_futex_sweep(param, value):
    kw = {"buckets": [16], "mode": "private", "threads": 4, "seeds": 1}
    kw[param] = value
    api_ok(nl.futex.sweep, **kw)


@settings(max_examples=n(40), **FUZZ)
@given(param=st.sampled_from(["nodes", "cpus_per_node", "smt", "distance", "local_latency_ns", "node_bw_GBps"]),
       value=st.sampled_from(BAD_VALUES + [[[10, 10.4], [10.4, 10]], [[10, 300], [300, 10]], 65536]))
def test_api_fuzz_topology(param, value):
    kw = {"nodes": 2, "cpus_per_node": 4}
    kw[param] = value
    api_ok(nl.Topology, **kw)


@settings(max_examples=n(40), **FUZZ)
@given(grid_key=st.sampled_from(["workload", "history", "profile", "max_time", "dt", "bogus", "seed"]),
       value=st.sampled_from(BAD_VALUES + [[1e-9]]), seeds=st.sampled_from([1, 0, -1, [2**64], [1, 1], "x", None]))
def test_api_fuzz_sweep(grid_key, value, seeds):
    grid = {"workload": "numa02", "max_time": 1.0}
    grid[grid_key] = value
    api_ok(nl.sweep, grid, seeds=seeds, cache=False, progress=False, workers=1)


@settings(max_examples=n(40), **FUZZ)
@given(text=st.one_of(st.text(max_size=200), st.sampled_from(["", "\n", "6.12+N=", "+", "6.12++", "rules=", "N=999"])))
def test_api_fuzz_policy_parse(text):
    api_ok(nl.Policy.parse, text)


@settings(max_examples=n(30), **FUZZ)
@given(name=st.sampled_from(["--out", "cache"]), path=st.one_of(st.text(max_size=300), st.sampled_from(BAD_VALUES)),
       kind=st.sampled_from(["file", "dir"]))
def test_api_fuzz_check_out_path(name, path, kind):
    from numalab.errors import check_out_path

    api_ok(check_out_path, name, path, kind=kind, create=kind == "dir")


SIM_PARAMS = ["seeds", "dt", "max_time", "time_resolution", "costs", "topology", "scan_delay_ms", "pid_base",
              "init_node", "thp", "bogus"]
@settings(max_examples=n(40), **FUZZ)
@given(param=st.sampled_from(SIM_PARAMS), value=st.sampled_from(BAD_VALUES))
def test_api_fuzz_simulate(param, value):
    kw = {"seeds": 1, "max_time": 0.5}
    kw[param] = value
    api_ok(nl.simulate, "numa02", "6.12", **kw)


@pytest.mark.parametrize("param, value", [("seeds", [2**64]), ("scan_delay_ms", 2**63)])
def test_api_simulate_refuses_values_past_int64(param, value):
    kw = {"seeds": 1, "max_time": 0.5}
    kw[param] = value
    with pytest.raises(ValueError, match=param):
        nl.simulate("numa02", "6.12", **kw)

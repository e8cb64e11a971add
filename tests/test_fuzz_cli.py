"""Issue 17, item 5: hypothesis-generated argument vectors for every subcommand (valid,
invalid, extreme) and random bad values for the public API.

Every CLI case must exit 0 or 2 with no Python traceback, leave no file it was not asked to
write (and never a temporary file), and finish in bounded time. Sizes are kept small (a
``--max-time`` of at most 2 simulated seconds, one or two seeds, a few threads) so each valid
case is quick; the invalid ones must be refused before any work. Most cases run in-process
(``numalab.cli.main``) for speed; ``test_cli_fuzz_subprocess`` runs a few through
``python -m numalab``.

Case counts (``max_examples``) are chosen to keep the file under about 60 s on a 2-core CI
box; set ``NUMALAB_FUZZ_SCALE=10`` to run ten times as many. Issue 27's targets (at the end:
damaged and huge reports, corrupted caches, full disks, signals, the options it added) add
about 25 s of CPU at scale 1.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import numalab as nl
from numalab.cli import main
from numalab.errors import NumalabValueError

SCALE = float(os.environ.get("NUMALAB_FUZZ_SCALE", "1"))
HERE = Path(__file__).resolve().parent
#: CPU-time bound of one in-process case (what it costs, whatever the load of the box)
CASE_S = 30.0
#: wall-clock bound of one case (a hang: waiting costs no CPU); generous, as a 2-core box
#: shared with other jobs runs a 20-CPU-second case in 95 s at a load average of 7
HANG_S = 180.0


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
    t0, c0 = time.monotonic(), time.process_time()
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse: usage errors (2) and --help (0)
        rc = exc.code if isinstance(exc.code, int) else 2
    dt, cpu = time.monotonic() - t0, time.process_time() - c0
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
    assert cpu < CASE_S and dt < HANG_S, f"{argv!r} took {cpu:.1f} s of CPU, {dt:.1f} s"
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
    # every valid case stays quick: an omitted size option would run its full-size default (the
    # default futex grid, 8 seeds: 150 s on a loaded 2-core box, over CASE_S); options given,
    # valid or not, are kept as drawn
    small = {"--seeds": "1"} if kind == "numa" else {"--threads": "4", "--buckets": "16", "--seeds": "1"}
    if kind == "numa" and "max_time=1" not in argv:
        argv += ["--set", "max_time=1"]
    for name, value in small.items():
        if name not in argv:
            argv += [name, value]
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
                          timeout=60)
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


# ====================================================================== issue 27: the classes
# Open-ended classes get a fuzz target each: damaged and huge report text (labels, sizes),
# corrupted caches, full disks at any write, signals at any moment, and the CLI options added
# (report --along/--sel/--baseline, environment limits).

sys.path.insert(0, str(HERE))
import _sweep_helpers  # noqa: E402,F401  registers the "toy" kind

#: the targets below run a case in seconds: no shrinking (a failing case is printed as found,
#: and derandomize=True makes it the same case on the next run)
FAST = dict(FUZZ, phases=(Phase.explicit, Phase.generate))

DATA = HERE / "data"
REPORTS = sorted(p.name for p in DATA.glob("*.txt"))
_DAMAGE = list("aZ09 -_.%()*±\t") + ["\x00", "\x1b", "\x1c", "\x7f", "\x85", "\u200b", "\u2028", "\ufeff", "\u00a0",
                                     "nan", "inf", "1e999", "-", "\n", "\n\n", " " * 40]


@st.composite
def damaged(draw):
    """A fixture report with a few random edits: characters replaced, inserted or deleted,
    lines repeated, dropped or swapped, blank lines added."""
    name = draw(st.sampled_from(REPORTS))
    lines = (DATA / name).read_text().split("\n")
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        how = draw(st.sampled_from(["replace", "insert", "delete", "repeat", "drop", "swap", "blank"]))
        pos = draw(st.integers(0, max(0, len(line) - 1)))
        ch = draw(st.sampled_from(_DAMAGE))
        if how == "replace" and line:
            lines[i] = line[:pos] + ch + line[pos + 1:]
        elif how == "insert":
            lines[i] = line[:pos] + ch + line[pos:]
        elif how == "delete" and line:
            lines[i] = line[:pos] + line[pos + draw(st.integers(1, 5)):]
        elif how == "repeat":
            lines.insert(i, line)
        elif how == "drop":
            del lines[i]
        elif how == "swap" and i + 1 < len(lines):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
        elif how == "blank":
            lines.insert(i, draw(st.sampled_from(["", "   ", "\t"])))
        if not lines:
            lines = [""]
    return name, "\n".join(lines)


def _read_any(text):
    """Each reader reads ``text`` (and prints what it read) or refuses it with one line; the
    refusals, by reader name."""
    from numalab import report

    refused = {}
    for read in (report.read_mmtests, report.read_lkp):
        t0 = time.process_time()
        try:
            ds = read(text)
        except ValueError as exc:  # a refusal: one line naming where
            msg = str(exc)
            assert "\n" not in msg and len(msg) < 600, msg
            assert isinstance(exc, NumalabValueError), repr(exc)
            refused[read.__name__] = msg
        else:
            printer = report.mmtests if read is report.read_mmtests else report.lkp
            printer(ds)  # what was read prints again
        assert time.process_time() - t0 < CASE_S
    return refused


@settings(max_examples=n(60), **FAST)
@given(case=damaged())
def test_fuzz_damaged_reports_are_refused_or_read_never_a_crash(case):
    _read_any(case[1])


@settings(max_examples=n(8), **FAST)
@example(name="mmtests_6kernels.txt", times=18, line="")  # 124 KiB: read
@example(name="lkp_mail_several_blocks.txt", times=40, line="")  # 112 KiB, 120 blocks: read
@example(name="mmtests_6kernels.txt", times=19, line="")  # 131 KiB: refused at once
@given(name=st.sampled_from(REPORTS), times=st.integers(1, 120), line=st.sampled_from(["", "1" * 5000, "± " * 2000]))
def test_fuzz_huge_reports_read_or_refused_in_bounded_time(name, times, line, monkeypatch):
    monkeypatch.setenv("NUMALAB_MAX_REPORT_BYTES", str(1 << 17))  # 128 KiB: above it, refused at once
    text = (DATA / name).read_text()
    text = (text + line + "\n") * times
    refused = _read_any(text)
    if len(text.encode()) > 1 << 17:
        assert len(refused) == 2 and all("NUMALAB_MAX_REPORT_BYTES" in m for m in refused.values()), refused
    elif name.startswith("mmtests") and not line:  # the same table again and again: one per table
        assert "read_mmtests" not in refused, refused


@settings(max_examples=n(20), **FAST)
@given(before=st.text(max_size=300), after=st.text(max_size=300))
def test_fuzz_read_vmstat_any_text(before, after):
    from numalab import report

    try:
        report.read_vmstat(before, after)
    except ValueError as exc:
        assert isinstance(exc, NumalabValueError) and "\n" not in str(exc)


# -------------------------------------------------------------------------- corrupted caches
@settings(max_examples=n(6), **FAST)
@given(damage=st.lists(st.tuples(st.sampled_from(["flip", "truncate", "retarget", "delete", "garbage"]),
                                 st.integers(0, 10**6)), min_size=1, max_size=4))
def test_fuzz_damaged_cache_never_changes_a_result(damage):
    from numalab import sweeps as S

    grid = {"size": [3, 4], "rate": [1.0, 2.0]}
    with tempfile.TemporaryDirectory(prefix="numalab-fuzz-cache-") as d:
        root = Path(d)
        fresh = S.sweep(grid, seeds=2, cache=root, progress=False, workers=1, kind="toy", batch_size=2)
        batches = sorted(root.glob("v*/batches/*.nc"))
        links = sorted(root.glob("v*/*.nc"))
        for how, k in damage:
            b, link = batches[k % len(batches)], links[k % len(links)]
            if how == "flip" and b.exists():
                raw = bytearray(b.read_bytes())
                raw[k % len(raw)] ^= 0xFF
                b.write_bytes(bytes(raw))
            elif how == "truncate" and b.exists():
                b.write_bytes(b.read_bytes()[: k % max(1, b.stat().st_size)])
            elif how == "retarget" and link.is_symlink():
                link.unlink()
                link.symlink_to(f"batches/{batches[(k + 1) % len(batches)].name}")
            elif how == "delete":
                b.unlink(missing_ok=True)
            elif how == "garbage":
                b.write_bytes(hashlib.sha256(str(k).encode()).digest() * 20)
        again = S.run_sweep(grid, seeds=2, cache=root, progress=False, workers=1, kind="toy", batch_size=2)
        xr.testing.assert_identical(again.dataset, fresh)


# ------------------------------------------------------------------ full disks at any write
@settings(max_examples=n(8), **FAST)
@given(fail_at=st.integers(0, 12), target=st.sampled_from(["cache", "out", "any"]))
def test_fuzz_full_disk_at_any_write(fail_at, target, capsys, monkeypatch):
    """ENOSPC at the k-th write: the sweep finishes and writes --out when only the cache's disk
    is full; when --out's disk is full it is one line naming the file (exit 1) and the points
    are cached; never a traceback, a partial file or a temporary file."""
    from numalab import storage

    real = storage._write_bytes
    count = {"n": 0}

    def write(tmp, data):
        hit = target == "any" or (target == "out") == (tmp.name.startswith(".o.nc."))
        if hit:
            count["n"] += 1
            if count["n"] > fail_at:
                raise OSError(28, "No space left on device")
        return real(tmp, data)

    monkeypatch.setattr(storage, "_write_bytes", write)
    with sandbox() as root:
        before = files(root)
        rc = main(["sweep", "--kind", "toy", "--set", "size=3,4,5", "--seeds", "2", "--batch-size", "1",
                   "--workers", "1", "--no-progress", "--cache", "cache", "--out", "o.nc"])
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        new = files(root) - before
        assert not [f for f in new if ".tmp" in f], new
        if rc == 0:
            assert "o.nc" in new and ("note: cannot write the cache" in err or count["n"] <= fail_at)
            import xarray as _xr

            with _xr.open_dataset(root / "o.nc", engine="h5netcdf") as ds:
                assert np.isfinite(ds["value"].values).all()
        else:
            lines = err.strip().split("\n")
            assert rc == 1 and "No space left on device" in lines[-1] and "o.nc" in lines[-1], err
            assert all(": note: " in ln for ln in lines[:-1]), err
            assert "o.nc" not in new


# ------------------------------------------------------------------ signals at any moment
#: the child prints this once numalab's handlers are in place: a signal before that is
#: Python's own start-up, not the sweep's
_READY = ("import sys, _sweep_helpers; from numalab import signals; from numalab.cli import main\n"
          "install = signals.install\n"
          "def ready():\n"
          "    old = install(); print('ready', flush=True); return old\n"
          "signals.install = ready\n"
          "sys.exit(main(sys.argv[1:]))\n")
SIGNAL_GRID = {"size": [3, 5], "rate": [1.0, 2.0]}


@pytest.fixture(scope="module")
def signal_fresh():
    from numalab import sweeps as S

    return S.sweep(SIGNAL_GRID, seeds=3, cache=False, progress=False, workers=1, kind="toy")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals and /proc")
@settings(max_examples=n(2), **FAST)
@given(signame=st.sampled_from(["SIGINT", "SIGTERM", "SIGHUP"]), delay=st.floats(0.0, 1.5))
def test_fuzz_signal_at_a_random_moment_of_a_sweep(signame, delay, signal_fresh):
    """Whenever the signal comes: exit 0 (it came after the end) or 128 + signal with one
    line; no temporary file, an --out that is whole when it is there, and the cache resumes
    to the same Dataset as a fresh run."""
    from numalab import sweeps as S

    sig = getattr(signal, signame)
    with tempfile.TemporaryDirectory(prefix="numalab-fuzz-sig-") as d:
        root = Path(d)
        env = {**os.environ, "PYTHONPATH": str(HERE),
               "NUMALAB_TOY_SLEEP_S": "0.05"}
        child = subprocess.Popen([sys.executable, "-c", _READY, "sweep", "--kind", "toy", "--set", "size=3,5",
                                  "--set", "rate=1.0,2.0", "--seeds", "3", "--batch-size", "1", "--workers", "1",
                                  "--no-progress", "--cache", str(root / "cache"), "--out", str(root / "o.nc")],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert child.stdout.readline() == "ready\n"
            time.sleep(delay)
            child.send_signal(sig)
            _, err = child.communicate(timeout=120)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
        rc = child.returncode
        assert rc in (0, 128 + sig), (rc, err)
        assert "Traceback" not in err and "Exception ignored" not in err, err
        if rc:
            assert err.count("\n") == 1 and ("interrupted" in err or f"signal {sig}" in err), err
        if (root / "o.nc").exists():  # written before the signal came: whole
            with xr.open_dataset(root / "o.nc", engine="h5netcdf") as out:
                xr.testing.assert_identical(out.load(), signal_fresh)
        else:
            assert rc
        left = [p for p in glob.glob(str(root / "**" / "*"), recursive=True) if ".tmp" in p]
        assert not left, left
        res = S.run_sweep(SIGNAL_GRID, seeds=3, cache=root / "cache", progress=False, workers=1, kind="toy",
                          batch_size=1)
        xr.testing.assert_identical(res.dataset, signal_fresh)


# ---------------------------------------------------------------- new options and variables
@pytest.fixture(scope="module")
def saved_sweep(tmp_path_factory):
    from numalab.storage import write_netcdf

    path = tmp_path_factory.mktemp("fuzz-sweep") / "sweep.nc"
    ds = nl.sweep({"workload": ["numa02", "numa02_SMT"], "history": [2, 4], "max_time": 1.0}, seeds=2, cache=False,
                  progress=False, workers=1)
    write_netcdf(ds, path)
    return path


SWEEP_REPORT = {
    "--format": vals(["mmtests", "lkp"], ["bogus"]),
    "--along": vals(["history"], ["workload", "seed", "bogus", "", "max_time"]),
    "--baseline": vals(["2", "4"], ["3", "", "2.0", "x"]),
    "--sel": vals(["workload=numa02", "workload=numa02_SMT", "history=4"],
                  ["workload=", "=numa02", "workload", "bogus=1", "seed=0", "history=x", "workload=numa02,numa02"]),
    "--metric": vals(["elsp", "syst", "elsp,syst", "numa_hint_faults"], ["elsp,elsp", ",", "bogus", "elsp,"]),
    "--no-monitors": None,
}


@settings(max_examples=n(8), **FAST)
@given(argv=options(SWEEP_REPORT), sel2=st.sampled_from([None, "history=2", "workload=numa02"]))
def test_cli_fuzz_report_of_a_sweep(argv, sel2, saved_sweep, capsys):
    with sandbox() as root:
        extra = [] if sel2 is None else ["--sel", sel2]
        check_case(["report", str(saved_sweep), *argv, *extra], capsys, root)


@settings(max_examples=n(6), **FAST)
@given(var=st.sampled_from(["NUMALAB_MAX_STEPS", "NUMALAB_MEMORY_LIMIT", "NUMALAB_MAX_REPORT_BYTES"]),
       value=st.sampled_from(["inf", "-inf", "nan", "0", "-1", "1.5", "1e3", "2e6", "x", "", " ", "8G", "1T", "10",
                              "1e400", str(2**70)]))
def test_cli_fuzz_environment_limits(var, value, capsys, monkeypatch, saved_run):
    monkeypatch.setenv(var, value)
    with sandbox() as root:
        check_case(["simulate", "--workload", "numa02", "--seeds", "1", "--max-time", "0.5"], capsys, root)
        check_case(["report", str(saved_run)], capsys, root)


@settings(max_examples=n(7), **FAST)
@given(port=st.sampled_from(["-1", "65536", "70000", str(2**40), "x", "1e3", ""]))
def test_cli_fuzz_explore_bad_ports_refused_before_starting(port, capsys):
    with sandbox() as root:
        assert check_case(["explore", "--port", port], capsys, root) == 2


@settings(max_examples=n(6), **FAST)
@given(plot=st.sampled_from(["fig.png", "fig.pdf", "fig.svg", "fig.bogus", "fig", "fig.", "fig.PNG", "o.nc"]),
       out=st.sampled_from([None, "o.nc", "fig.png", "fig.pdf"]))
def test_cli_fuzz_futex_outputs_are_distinct_and_figures_known(plot, out, capsys):
    with sandbox() as root:
        argv = ["futex", "sweep", "--buckets", "16", "--threads", "4", "--seeds", "1", "--plot", plot]
        argv += [] if out is None else ["--out", out]
        rc = check_case(argv, capsys, root, allowed=(plot, out or ""))
        if out == plot or plot.rsplit(".", 1)[-1].lower() not in ("png", "pdf", "svg"):
            assert rc == 2

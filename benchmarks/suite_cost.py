"""What the README's test command spends its time on: every test file's wall and CPU seconds.

The suite runs on every core (pytest-xdist, pyproject.toml), so one file's duration there
includes waiting for the other worker's processes. This script runs it in one process
(``-n 0``), where each test's seconds are its own, and records per test the wall time and the
CPU time of the pytest process and of every child it has reaped (servers, kernels, Chromium,
CLI runs: ``getrusage(RUSAGE_CHILDREN)``; a module fixture's server is counted at the teardown
that reaps it, so per file the sum is whole). It prints the files by CPU seconds with their
share, and the groups the suite's speed decisions are about (the browser file, the notebooks
under nbval, the compiled-vs-numpy agreement tests, the rest)::

    python benchmarks/suite_cost.py                      # the whole suite, ~10 min on 2 cores
    python benchmarks/suite_cost.py tests/test_report.py notebooks/01-quickstart.ipynb
    python benchmarks/suite_cost.py --json /tmp/cost.json

The wall time of the parallel run is roughly the CPU total over the cores used, plus the start
(collection on every worker) and what neither worker can fill; compare with ``pytest``'s own
"passed in" on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# the pytest plugin, written to a temporary folder and loaded with -p
PLUGIN = '''
import json, os, resource, time

_out = open(os.environ["SUITE_COST_OUT"], "a")


def _cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def pytest_runtest_logstart(nodeid, location):
    global _t, _c
    _t, _c = time.monotonic(), _cpu()


def pytest_runtest_logfinish(nodeid, location):
    _out.write(json.dumps([nodeid, time.monotonic() - _t, _cpu() - _c]) + "\\n")
    _out.flush()
'''

GROUPS = (
    ("browser (tests/test_browser.py)", lambda f: f == "tests/test_browser.py"),
    ("notebooks under nbval", lambda f: f.startswith("notebooks/")),
    ("compiled vs numpy (tests/test_compiled_*.py)", lambda f: f.startswith("tests/test_compiled_")),
    ("subprocess-heavy (robust, fuzz_cli, sweep, widgets*)",
     lambda f: any(f.startswith(f"tests/test_{n}") for n in ("robust", "fuzz_cli", "sweep", "widgets"))),
)


def per_file(rows):
    """{file: [wall s, CPU s, tests]} from the plugin's rows."""
    out = defaultdict(lambda: [0.0, 0.0, 0])
    for nodeid, wall, cpu in rows:
        f = out[nodeid.split("::", 1)[0]]
        f[0] += wall
        f[1] += cpu
        f[2] += 1
    return dict(out)


def report(files: dict, total_wall: float, top: int = 25) -> str:
    cpu = sum(v[1] for v in files.values()) or 1.0
    lines = [f"{len(files)} files, {sum(v[2] for v in files.values())} tests: "
             f"{sum(v[0] for v in files.values()):.0f} s in tests, {cpu:.0f} CPU s; "
             f"pytest's whole run {total_wall:.0f} s (start-up and collection included)",
             "", f"{'CPU s':>7} {'share':>6} {'wall s':>7} {'tests':>5}  file"]
    for f, (wall, c, n) in sorted(files.items(), key=lambda kv: -kv[1][1])[:top]:
        lines.append(f"{c:7.1f} {100 * c / cpu:5.1f}% {wall:7.1f} {n:5d}  {f}")
    lines += ["", "by group:"]
    rest = dict(files)
    for name, pick in GROUPS:
        sel = [f for f in files if pick(f)]
        c = sum(files[f][1] for f in sel)
        lines.append(f"{c:7.1f} {100 * c / cpu:5.1f}%  {name} ({len(sel)} files)")
        for f in sel:
            rest.pop(f, None)
    c = sum(v[1] for v in rest.values())
    lines.append(f"{c:7.1f} {100 * c / cpu:5.1f}%  the rest ({len(rest)} files)")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="test files or notebooks (default: the whole suite)")
    ap.add_argument("--json", type=Path, help="also write {file: [wall s, CPU s, tests]} here")
    ap.add_argument("--top", type=int, default=25, help="files listed (default 25)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "suite_cost_plugin.py").write_text(PLUGIN)
        out = Path(tmp) / "rows.jsonl"
        env = dict(os.environ, SUITE_COST_OUT=str(out),
                   PYTHONPATH=os.pathsep.join(filter(None, [tmp, os.environ.get("PYTHONPATH")])))
        t0 = time.monotonic()
        rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "suite_cost_plugin",
                              "-p", "no:cacheprovider", *args.paths], cwd=ROOT, env=env)
        wall = time.monotonic() - t0
        rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    if not rows:
        print(f"no test ran (pytest exit status {rc})", file=sys.stderr)
        return rc or 1
    files = per_file(rows)
    print(report(files, wall, args.top))
    if args.json:
        args.json.write_text(json.dumps(files, indent=1))
        print(f"wrote {args.json}")
    return rc


if __name__ == "__main__":
    sys.exit(main())

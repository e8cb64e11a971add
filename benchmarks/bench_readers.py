"""CPU time and peak memory of the report readers on large inputs (issue 27, class 2).

Each case runs in a fresh interpreter (so the peak resident memory is that reader's alone)::

    python benchmarks/bench_readers.py                 # every case at its default size
    python benchmarks/bench_readers.py --mb 0.5 --case lkp_mail
    PYTHONPATH=/path/to/other/checkout python benchmarks/bench_readers.py --mb 0.5

Cases (text built from the shipped fixtures, so it reads as a real report would):

* ``lkp_mail``: the 3-block robot mail of tests/data repeated (a mail of many blocks);
* ``lkp_block``: one LKP block with many stat lines (distinct perf-stat keys);
* ``mmtests``: one compare table with many ops (``elsp-<op>`` of another test), then its
  Duration table;
* ``vmstat``: two /proc/vmstat snapshots of many lines (distinct counters).

Prints per case: the input size, CPU seconds (``time.process_time`` in the child), the peak
resident memory growth over the interpreter with numalab imported, and the outcome (read, or
the first words of the error a reader refused it with).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data"

CHILD = r"""
import json, resource, sys, time
sys.setrecursionlimit(10000)
from numalab import report
case, path = sys.argv[1], sys.argv[2]
text = open(path).read()
if case == "vmstat":
    before, after = text.split("\n\n", 1)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.process_time()
try:
    if case.startswith("lkp"):
        ds = report.read_lkp(text)
    elif case == "mmtests":
        ds = report.read_mmtests(text)
    else:
        ds = report.read_vmstat(before, after)
    outcome = f"read ({len(ds.data_vars)} variables)"
except ValueError as exc:
    outcome = "refused: " + " ".join(str(exc).split())[:90]
cpu = time.process_time() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"cpu_s": cpu, "peak_mib": (peak - base) / 1024, "outcome": outcome}))
"""


def lkp_mail(size: int) -> str:
    block = (DATA / "lkp_mail_3blocks_2023.txt").read_text()
    return block * max(1, size // len(block))


def lkp_block(size: int) -> str:
    head = (DATA / "lkp_email_icl.txt").read_text().split("\n")
    top = head[:12]
    lines = []
    i = 0
    total = sum(len(x) + 1 for x in top)
    while total < size:
        line = f"    {100 + i % 997:6d}.{i % 100:02d} ±  3%      -2.1%     {99 + i % 991:6d}.{i % 100:02d} ±  4%  perf-stat.ps.k{i}"
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(top + lines) + "\n"


def mmtests(size: int) -> str:
    out = ["autonumabench", " " * 38 + "6.6.0-rc1".rjust(23) * 2, " " * 38 + "vanilla".rjust(23) + "numab-v1r1".rjust(23)]
    total, i = 0, 0
    rows = []
    while total < size:
        op = f"elsp-{i}"
        row = f"{'Amean':<9} {op:<28}{292.51 + i % 13:12.2f} (   0.00%){290.0 + i % 7:12.2f} (   0.86%)"
        rows.append(row)
        total += len(row) + 1
        i += 1
    return "\n".join(out + rows) + "\n\n" + " " * 17 + "6.6.0-rc1".rjust(12) * 2 + "\n" + " " * 17 + \
        "vanilla".rjust(12) + "numab-v1r1".rjust(12) + "\nDuration User     100.00      99.00\n"


def vmstat(size: int) -> str:
    n = max(1, size // 2 // 24)
    before = "\n".join(f"counter_{i} {i}" for i in range(n))
    after = "\n".join(f"counter_{i} {2 * i}" for i in range(n))
    return before + "\n\n" + after + "\n"


CASES = {"lkp_mail": lkp_mail, "lkp_block": lkp_block, "mmtests": mmtests, "vmstat": vmstat}


def run_case(case: str, mb: float, tmp: Path, timeout: float) -> dict:
    text = CASES[case](int(mb * (1 << 20)))
    path = tmp / f"{case}.txt"
    path.write_text(text)
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, case, str(path)], capture_output=True, text=True,
                              timeout=timeout, env=os.environ)
    except subprocess.TimeoutExpired:
        return {"bytes": len(text), "cpu_s": float("nan"), "peak_mib": float("nan"), "outcome": f"> {timeout:.0f} s"}
    finally:
        path.unlink()
    if proc.returncode:
        return {"bytes": len(text), "cpu_s": float("nan"), "peak_mib": float("nan"),
                "outcome": "crashed: " + (proc.stderr.strip().splitlines() or ["?"])[-1][:90]}
    return {"bytes": len(text), **json.loads(proc.stdout)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--case", action="append", choices=sorted(CASES), help="case (repeatable; default: all)")
    p.add_argument("--mb", type=float, action="append", help="input size in MiB (repeatable; default 0.5, 2, 8)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds before a case is given up")
    args = p.parse_args(argv)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="numalab-bench-readers-") as d:
        print(f"{'case':<10} {'MiB':>6} {'CPU s':>8} {'peak MiB':>9}  outcome")
        for case in args.case or sorted(CASES):
            for mb in args.mb or [0.5, 2.0, 8.0]:
                r = run_case(case, mb, Path(d), args.timeout)
                print(f"{case:<10} {r['bytes'] / (1 << 20):6.2f} {r['cpu_s']:8.2f} {r['peak_mib']:9.1f}  {r['outcome']}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

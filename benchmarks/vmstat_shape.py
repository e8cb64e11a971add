"""The model's scan and fault volume against the machine's own counters (issue 24 item 1; not a test).

The robot's Sapphire Rapids table of v6.8's ``start_scan_seq`` fix (``data/lkp-spr-6.8-vs-6.7.csv``)
prints the whole job's ``proc-vmstat`` counters on both kernels. Their %changes are judged
rows; their base values are not (``fidelity.rules.NOT_JUDGED``), and the ratios between them are
a trace of the machine that no row of the tables scores:

* ``numa_huge_pte_updates`` -- huge PMDs ``change_prot_numa`` made PROT_NONE (how much the
  scanner protected);
* base PTEs = ``numa_pte_updates`` - 512 x ``numa_huge_pte_updates`` -- 4 KiB pages it
  protected (a THP PMD counts 512 in the first counter, kernel-numa-balancing.md §5.1);
* ``numa_hint_faults`` per protected entry (huge PMDs + base PTEs) -- how many protected
  entries were touched and took a hinting fault (one fault per entry, §5.2), i.e. how many
  chances a window had to record a PID (``vma_set_access_pid_bit``).

For each kernel, the script simulates one iteration of each of the job's tests on the machine's
preset (``fidelity.job_tests``: numa01, numa01_THREAD_ALLOC, numa02), prints the per-test
counters and the whole job (``JOB_ITERATIONS`` x the sum, :func:`numalab.fidelity.job_counter`)
beside the published values, and the ratios. The numbers docs/fidelity.md quotes.

Run: ``python benchmarks/vmstat_shape.py [--seeds 8]``
"""

from __future__ import annotations

import argparse

import xarray as xr

import numalab as nl
from numalab import data, fidelity
from numalab.workloads import REGION_PAGES

TABLE = "lkp-spr-6.8-vs-6.7"
COUNTERS = ("numa_huge_pte_updates", "numa_pte_updates", "numa_hint_faults")


def shape(huge: float, pte: float, faults: float) -> dict:
    """Huge PMDs, base PTEs, faults and the two ratios of one set of counters."""
    base = pte - REGION_PAGES * huge
    return {"huge PMDs": huge, "base PTEs": base, "hint faults": faults,
            "base PTEs per huge PMD": base / max(huge, 1.0),
            "faults per protected entry": faults / max(huge + base, 1.0)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=8, help="seeds per kernel (default: %(default)s)")
    args = ap.parse_args(argv)
    pub = data.load(TABLE)
    preset = fidelity.table_preset(pub)
    kernels = [str(k) for k in pub.policy.values]
    tests = fidelity.job_tests(pub)
    # the counters only: the runs' time axes differ in length between the tests
    sim = xr.concat([nl.simulate(w, kernels, seeds=args.seeds, topology=preset)[list(COUNTERS)] for w in tests],
                    xr.DataArray(tests, dims="workload", name="workload"))
    print(f"# {TABLE} on {preset}: one iteration per test ({args.seeds} seeds, mean), whole job = "
          f"{fidelity.rules.JOB_ITERATIONS} x the sum; published = the robot's base values\n")
    head = "| kernel | source | huge PMDs | base PTEs | hint faults | base PTEs per huge PMD | faults per protected entry |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for k in kernels:
        m = sim.sel(policy=k).mean("seed")
        for w in tests:
            _row(k, f"model, {w}", [float(m[c].sel(workload=w)) for c in COUNTERS])
        _row(k, "**model, whole job**", [float(fidelity.job_counter(sim.sel(policy=k), c).mean("seed"))
                                         for c in COUNTERS])
        _row(k, "**machine, whole job**", [float(pub[f"job_vmstat_{c}"].sel(policy=k)) for c in COUNTERS])


def _row(kernel: str, source: str, counters: list) -> None:
    """One table line: the :func:`shape` of ``counters`` (in :data:`COUNTERS` order)."""
    print(f"| {kernel} | {source} | " + " | ".join(_fmt(v) for v in shape(*counters).values()) + " |")


def _fmt(v: float) -> str:
    return f"{v:.2f}" if abs(v) < 100 else f"{v:,.0f}"


if __name__ == "__main__":
    main()

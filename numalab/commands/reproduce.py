"""``numalab reproduce``: the kernel test robot's calibration tables, published and simulated."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser(
        "reproduce",
        help="reproduce the published kernel test robot results (calibration set)",
        description=(
            "Simulate the kernel test robot's 2023 runs of the RFC 'sched/numa: Enhance disjoint "
            "VMA scanning' (patch 5 vs 4, patch 6 vs 5) on the matching topology and write, per "
            "table, the published and simulated LKP blocks one above the other, a figure of "
            "published vs simulated %%change, and fidelity.csv with a verdict per published number. "
            "Exit status 0 even when a row misses: the verdicts say so."
        ),
    )
    p.add_argument("--out", default="results", metavar="DIR", help="output folder (default: %(default)s)")
    p.add_argument("--seeds", type=int, default=8, help="replicas per policy (default: %(default)s)")
    p.add_argument("--topology", default="2s-128", help="topology preset (default: %(default)s, lkp-icl-2sp6)")
    p.add_argument("--table", action="append", dest="tables", metavar="NAME",
                   help="only this published table (repeatable; default: all calibration tables)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-notebooks", action="store_true",
                   help="do not execute the notebooks to write their figures as PNG")


def run(args: argparse.Namespace) -> int:
    from ..errors import check_int
    from .. import fidelity as fid
    from ..outputs import write_reproduction

    check_int("--seeds", args.seeds, lo=2, hi=10000)
    published, sim = fid.simulate_calibration(
        args.tables, seeds=args.seeds, topology=args.topology, progress=not args.no_progress)
    written = write_reproduction(args.out, published, sim)
    print(written["summary"])
    if not args.no_notebooks:
        from ..notebook_figures import export_figures

        figs = export_figures(args.out, progress=not args.no_progress)
        print(f"{len(figs)} notebook figures written to {args.out}/ (<notebook>-fig<k>.png)")
    return 0

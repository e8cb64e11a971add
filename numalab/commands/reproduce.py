"""``numalab reproduce``: the kernel test robot's calibration tables, published and simulated."""

from __future__ import annotations

import argparse

from . import add_output


def add_parser(sub) -> None:
    p = sub.add_parser(
        "reproduce",
        help="reproduce the published kernel test robot results (calibration set)",
        description=(
            "Simulate every published kernel test robot table in data/ (the RFC 2023 series on "
            "lkp-icl-2sp6 and lkp-spr-r02, v6.4's PID filter on lkp-csl-2sp9 and lkp-spr-r02, "
            "v6.8's start_scan_seq fix on lkp-spr-r02), each on the topology preset of its machine, "
            "and write, per table, the published and simulated LKP blocks one above the other and "
            "a figure of published vs simulated %change; fidelity.png with every row (one marker "
            "per machine) and fidelity.csv with a verdict per published number. "
            "Exit status 0 even when a row misses: the verdicts say so."
        ),
    )
    add_output(p, "--out", kind="dir", create=True, default="results", metavar="DIR",
               help="output folder (default: %(default)s)")
    p.add_argument("--seeds", type=int, default=8, help="replicas per policy (default: %(default)s)")
    p.add_argument("--topology", default=None,
                   help="run every table on this preset instead of its machine's (default: each table's "
                        "machine: lkp-icl-2sp6 -> 2s-128, lkp-csl-2sp9 -> 2s-88-csl, lkp-spr-r02 -> 2s-224-spr)")
    p.add_argument("--table", action="append", dest="tables", metavar="NAME",
                   help="only this published table (repeatable; default: all calibration tables)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-notebooks", action="store_true",
                   help="do not execute the notebooks to write their figures as PNG")


def run(args: argparse.Namespace) -> int:
    from ..errors import check_int
    from .. import fidelity as fid
    from ..outputs import write_reproduction
    from ..storage import staged_dir

    check_int("--seeds", args.seeds, lo=2, hi=10000)
    published, sims = fid.simulate_fidelity(
        args.tables, seeds=args.seeds, topology=args.topology, progress=not args.no_progress)
    # the folder never mixes two runs: written beside it, moved in (numalab.storage.staged_dir)
    with staged_dir(args.out) as out:
        written = write_reproduction(out.path, published, sims, shown=args.out)
        out.commit()
        print(written["summary"])
        if not args.no_notebooks:
            from ..notebook_figures import export_figures

            figs = export_figures(out.path, progress=not args.no_progress)
            print(f"{len(figs)} notebook figures written to {args.out}/ (<notebook>-fig<k>.png)")
    return 0

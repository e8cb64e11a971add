"""``numalab compare``: your own mmtests or LKP table beside the model's."""

from __future__ import annotations

import argparse
import sys

from . import add_output


def add_parser(sub) -> None:
    from ..fidelity.bands import DEFAULT_SEEDS
    from .simulate import add_option_arguments

    p = sub.add_parser(
        "compare",
        help="judge your own mmtests / kernel-test-robot table against the model (numalab reproduce for any table)",
        description=(
            "Read an mmtests compare-kernels (autonumabench) or kernel test robot (LKP autonuma-benchmark) "
            "table -- a file, or '-' for standard input; a whole posted mail is fine -- map its kernels to "
            "numalab profiles (by name, commit id, kernel version, or --kernel NAME=PROFILE), simulate the "
            "same kernels and workloads on the stated machine, and print published against simulated with "
            "the verdicts of numalab reproduce: the published rule, the strict rule and, with --band-points, "
            "the range over the constants' plausible box and robustness. Exit status 0 even when a row "
            "misses: the verdicts say so."
        ),
    )
    p.add_argument("table", metavar="FILE", help="the mmtests or LKP table (a text file, or - for stdin)")
    p.add_argument("--topology", default=None,
                   help="the machine: a preset or a robot machine name (default: a robot machine named in the "
                        "table, e.g. lkp-spr-r02)")
    p.add_argument("--kernel", action="append", default=None, metavar="NAME=PROFILE",
                   help="map a kernel name (or commit-id prefix) to a profile or policy text, e.g. "
                        "--kernel mypatch=6.12+N=4 (repeatable; tried before the built-in mapping)")
    p.add_argument("--seeds", type=int, default=8, help="replicas per kernel (default: %(default)s)")
    p.add_argument("--band-points", type=int, default=0, metavar="K",
                   help="points of the uncertainty box (default: %(default)s, no bands; numalab reproduce uses 4)")
    p.add_argument("--band-seeds", type=int, default=DEFAULT_SEEDS, metavar="N",
                   help="seeds per band point (default: %(default)s)")
    p.add_argument("--band-seed", type=int, default=0, metavar="S", help="seed of the box's sample (default: %(default)s)")
    p.add_argument("--workers", type=int, default=None, help="local processes (default: the CPUs this process may use)")
    add_output(p, "--plot", figure=True, default=None, metavar="PNG", help="write the published-vs-simulated figure here")
    add_output(p, "--csv", default=None, metavar="CSV", help="write the rows (fidelity.csv's columns) here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_option_arguments(p)


def _mapping(items) -> dict:
    from ..errors import NumalabValueError

    out = {}
    for item in items or []:
        name, sep, profile = item.partition("=")
        if not sep or not name.strip() or not profile.strip():
            raise NumalabValueError(f"--kernel {item!r}; allowed: NAME=PROFILE, e.g. --kernel v6.9-mine=6.8")
        out[name.strip()] = profile.strip()
    return out


def run(args: argparse.Namespace) -> int:
    from .. import comparison
    from ..errors import check_in_file, check_int
    from ..outputs import rows_csv
    from ..storage import write_text
    from .simulate import options_from_args

    check_int("--seeds", args.seeds, lo=2, hi=10000)
    check_int("--band-points", args.band_points, lo=0, hi=1000)
    check_int("--band-seeds", args.band_seeds, lo=1, hi=10000)
    check_int("--band-seed", args.band_seed, lo=0)
    if args.workers is not None:
        check_int("--workers", args.workers, lo=1, hi=1024)
    from pathlib import Path

    text = sys.stdin.read() if args.table == "-" else check_in_file("FILE", args.table).read_text(errors="replace")
    if "\n" not in text:
        text += "\n"   # a one-line table is still a table, not a path
    kernels = _mapping(args.kernel)
    c = comparison.compare(text, topology=args.topology, kernels=kernels, seeds=args.seeds,
                           band_points=args.band_points, band_seeds=args.band_seeds, band_seed=args.band_seed,
                           workers=args.workers, progress=not args.no_progress,
                           name="stdin" if args.table == "-" else Path(args.table).stem, **options_from_args(args))
    print(c)
    if args.csv:
        print(f"rows written to {write_text(args.csv, rows_csv(c.rows))}")
    if args.plot:
        from .. import plots

        print(f"figure written to {plots.save(c.plot(), args.plot, dpi=120)}")
    return 0

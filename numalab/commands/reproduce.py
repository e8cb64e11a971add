"""``numalab reproduce``: the kernel test robot's calibration tables, published and simulated."""

from __future__ import annotations

import argparse

from . import add_output


def add_parser(sub) -> None:
    from ..fidelity.bands import DEFAULT_POINTS, DEFAULT_SEEDS

    p = sub.add_parser(
        "reproduce",
        help="reproduce the published kernel test robot results (calibration set)",
        description=(
            "Simulate every published kernel test robot table in data/ (the RFC 2023 series on "
            "lkp-icl-2sp6 and lkp-spr-r02, v6.4's PID filter on lkp-csl-2sp9 and lkp-spr-r02, "
            "v6.8's start_scan_seq fix on lkp-spr-r02), each on the topology preset of its machine, "
            "and write, per table, the published and simulated LKP blocks one above the other and "
            "a figure of published vs simulated %change; fidelity.png with every row (one marker "
            "per machine), fidelity-bands.png with each row's range over the uncertainty box, "
            "provenance.md with the source of every default constant, and fidelity.csv with per "
            "published number the published rule's verdict, the strict rule's (the published value "
            "inside the simulated interval, base seconds within 25 %), the range over the box of "
            "plausible constants and whether the row is robust, and the fitted constants set from "
            "it (such rows are not counted). Exit status 0 even when a row misses: the verdicts say so."
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
    p.add_argument("--band-points", type=int, default=DEFAULT_POINTS, metavar="K",
                   help="points of the Latin hypercube over the constants' plausible ranges (default: "
                        "%(default)s; 0 = no bands)")
    p.add_argument("--band-seeds", type=int, default=DEFAULT_SEEDS, metavar="N",
                   help="seeds per band point (default: %(default)s)")
    p.add_argument("--band-seed", type=int, default=0, metavar="S",
                   help="seed of the hypercube's permutations (default: %(default)s)")
    p.add_argument("--workers", type=int, default=None,
                   help="local processes for the engine calls (default: the CPUs this process may use)")
    p.add_argument("--option", action="append", default=None, metavar="NAME=VALUE",
                   help="an engine option for every run, at the centre and at every band point "
                        "(repeatable; e.g. first_touch_wait=False: the tables with a mechanism switched; "
                        "an option the band varies, such as lb_migrate_hz, is then held at this value)")
    p.add_argument("--cross-validate", action="store_true",
                   help="also refit every fitted constant and choose every mechanism switch on all machines "
                        "(tables) but one, score the one left out, and write crossval.md / crossval.csv "
                        "(numalab.fidelity.crossval: every table once per candidate, 15 candidates at the "
                        "default --cv-grid 3 and --cv-design separate, 63 with product; about 2.5 min on 2 "
                        "cores with the compiled engine)")
    p.add_argument("--cv-seeds", type=int, default=8,
                   help="seeds per cross-validation candidate (default: %(default)s; at 2 the seed noise "
                        "moved whole rows, docs/fidelity.md)")
    p.add_argument("--cv-grid", type=int, default=3,
                   help="values per fitted constant over its band, the default included (default: %(default)s)")
    p.add_argument("--cv-design", choices=["separate", "product"], default="separate",
                   help="separate: refit the fitted constants with the switches at their defaults, and flip each "
                        "switch at the fitted defaults; product: every combination (default: %(default)s)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-notebooks", action="store_true",
                   help="do not execute the notebooks to write their figures as PNG")


def run(args: argparse.Namespace) -> int:
    from .. import data
    from .. import fidelity as fid
    from ..errors import check_int
    from ..outputs import write_reproduction
    from ..storage import staged_dir

    check_int("--seeds", args.seeds, lo=2, hi=10000)
    check_int("--band-points", args.band_points, lo=0, hi=1000)
    check_int("--band-seeds", args.band_seeds, lo=1, hi=10000)
    check_int("--band-seed", args.band_seed, lo=0)
    check_int("--cv-seeds", args.cv_seeds, lo=1, hi=10000)
    check_int("--cv-grid", args.cv_grid, lo=1, hi=20)
    if args.workers is not None:
        check_int("--workers", args.workers, lo=1, hi=1024)
    progress = not args.no_progress
    options = _options(args)
    tables = fid.calibration_tables() if args.tables is None else list(args.tables)
    published = {name: data.load(name) for name in tables}
    centre = fid.plan(published, args.seeds, topology=args.topology, overrides=fid.Point(options=options))
    stats: dict = {}
    if args.band_points:
        sims, rows = fid.simulate_bands(published, centre, points=args.band_points, seeds=args.band_seeds,
                                        seed=args.band_seed, topology=args.topology, workers=args.workers,
                                        progress=progress, stats=stats, options=options)
    else:
        sims = {preset: sim for (_, preset), sim in fid.execute(centre, workers=args.workers, progress=progress,
                                                                 stats=stats).items()}
        rows = None
    # the folder never mixes two runs: written beside it, moved in (numalab.storage.staged_dir)
    with staged_dir(args.out) as out:
        written = write_reproduction(out.path, published, sims, rows, shown=args.out)
        out.commit()
        print(written["summary"])
        if options:
            print("engine options for every run: " + ", ".join(f"{k}={v}" for k, v in options.items()))
        print(f"{stats['calls']} engine calls ({len(centre)} at the centre, {args.seeds} seeds; "
              f"{stats['calls'] - len(centre)} over {args.band_points} band points, {args.band_seeds} seeds) on "
              f"{stats['workers']} process(es): {stats['engine_cpu_s']:.0f} s of engine CPU, "
              f"{stats['wall_s']:.0f} s wall")
        if args.cross_validate:
            from ..fidelity import crossval

            cv = crossval.cross_validate(published, seeds=args.cv_seeds, grid=args.cv_grid, design=args.cv_design,
                                         topology=args.topology, workers=args.workers, progress=progress)
            paths = crossval.write(cv, out.path)
            out.commit()
            print(f"\n{cv.summary()}\ncross-validation written to "
                  f"{args.out}/ ({', '.join(p.name for p in paths)})")
        if not args.no_notebooks:
            from ..notebook_figures import export_figures

            figs = export_figures(out.path, progress=progress)
            print(f"{len(figs)} notebook figures written to {args.out}/ (<notebook>-fig<k>.png)")
    return 0


def _options(args) -> dict:
    """``--option NAME=VALUE`` items, checked by EngineOptions before any run (simulate's
    :func:`~numalab.commands.simulate.options_from_args`); not with ``--cross-validate``, whose
    candidates are the switches themselves."""
    from ..errors import NumalabValueError
    from .simulate import options_from_args

    options = options_from_args(args)
    if options and args.cross_validate:
        raise NumalabValueError("--option with --cross-validate; allowed: one of them (cross-validation "
                                "chooses the switches itself)")
    return options

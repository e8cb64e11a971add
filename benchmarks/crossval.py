"""Cross-validation of the fitted constants and the mechanism switches (not a test).

Every candidate of :func:`numalab.fidelity.crossval.candidates` (each fitted constant on a grid
over its band, and every switch state; separately or crossed) is simulated once over every calibration table;
then each machine, and each table, is left out in turn: the candidate with the most reproduced
rows on the others is scored on it. Prints the in-sample and the cross-validated scores
(published and strict rule) and the per-fold choices as the markdown of docs/fidelity.md.

Run: ``python benchmarks/crossval.py [--seeds 8] [--grid 3] [--design separate|product] [--out DIR]``;
reduced: ``--grid 1 --switch init_coherence`` (two candidates); ``--together A+B`` adds the
candidate with switches A and B flipped together. ``numalab reproduce
--cross-validate`` runs the same and writes crossval.md / crossval.csv next to the other outputs.
"""

from __future__ import annotations

import argparse
import time

from numalab import data, fidelity
from numalab.fidelity import crossval


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=8, help="seeds per candidate (default: %(default)s)")
    ap.add_argument("--grid", type=int, default=3, help="values per fitted constant (default: %(default)s)")
    ap.add_argument("--switch", action="append", default=None,
                    help="only these switches (default: every bool of numalab.engine.SWITCHES that is a choice)")
    ap.add_argument("--design", choices=crossval.DESIGNS, default="separate",
                    help="separate (default) or product: see numalab.fidelity.crossval")
    ap.add_argument("--together", action="append", default=[], metavar="A+B[+C]",
                    help="also these switches flipped together, as one candidate (repeatable)")
    ap.add_argument("--table", action="append", default=None, help="only these tables (default: all)")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--out", default=None, help="also write crossval.md and crossval.csv here")
    args = ap.parse_args(argv)
    tables = args.table or fidelity.calibration_tables()
    published = {name: data.load(name) for name in tables}
    together = [tuple(g.split("+")) for g in args.together]
    try:
        n = len(crossval.candidates(args.grid, args.switch, args.design, together))
    except ValueError as e:
        ap.error(f"--together: {e}")
    print(f"{n} candidates x {len(fidelity.plan(published, args.seeds))} engine calls, {args.seeds} seeds")
    t0, c0 = time.perf_counter(), time.process_time()
    cv = crossval.cross_validate(published, seeds=args.seeds, grid=args.grid, switches=args.switch,
                                 design=args.design, together=together, workers=args.workers, progress=True)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(cv.summary())
    print()
    print(cv.markdown())
    print(f"{wall:.0f} s wall, {cpu:.0f} s CPU in this process (the workers' CPU not counted)")
    if args.out:
        for path in crossval.write(cv, args.out):
            print(f"written: {path}")


if __name__ == "__main__":
    main()

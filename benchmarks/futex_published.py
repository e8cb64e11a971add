"""The futex model against the published perf bench futex hash curves (data/futex-e5-2650.csv).

    python benchmarks/futex_published.py [--seeds 4] [--markdown] [--cross-validate] [--bands N]

Prints, for T=28 (both nodes) and T=14 (node 0) of the 2-socket Xeon E5-2650: the published
ops/s per thread, the model with the documented default constants, and the model calibrated
on the T=28 rows alone (``nl.futex.calibrate``, default fit) -- so its T=14 column is a
prediction -- with each model / published ratio; then the plateau rise, the cross-socket
penalty of a saturated bucket and the fitted constants. ``--cross-validate``: calibrate on
each thread count and score on both (``nl.futex.cross_validate``), the in-sample and the
cross-validated error side by side. ``--bands N``: the model's range per row over the
constants' plausible bands (``nl.futex.predict_band``, an N-point Latin hypercube) and
whether the published value lies inside. The topology is ``nl.data.futex_topology()``: 2
nodes of 16 CPUs numbered node by node (the T=14 rows ran all on node 0), every latency at the
Topology's class default: nothing in it is taken from this machine's measurements.
``--clock``: the same with the E5-2650's published core clock (``all_core_ghz=2.4``,
``turbo_ghz=2.8``: 2.0 GHz base, +4 turbo bins with all 8 cores busy, +8 with one or two; Intel's
Xeon E5-2600 specification update), so the CPU-side costs run at the machine's clock.
docs/futex.md quotes this output.
"""

from __future__ import annotations

import argparse

import numpy as np


def _curves(args, nl, topo, pub, curves):
    fit = nl.futex.calibrate(curves[28], topo, seeds=args.seeds, refcount="immutable")
    out = {}
    for t, rows in curves.items():
        y = rows.ops_per_s_per_thread.values
        d = nl.futex.predict(rows, topo, seeds=args.seeds, refcount="immutable")
        c = nl.futex.predict(rows, topo, costs=fit.costs, seeds=args.seeds, refcount="immutable")
        out[t] = (rows.buckets.values.astype(int), y, d, c)
        label = "calibrated on T=28" + (" (fit)" if t == 28 else " (prediction)")
        print(f"\nT={t} ({'both nodes' if t == 28 else 'node 0'}), ops/s per thread")
        if args.markdown:
            print(f"| B | published | default | ratio | {label} | ratio |")
            print("|---:|---:|---:|---:|---:|---:|")
        else:
            print(f"{'B':>6} {'published':>10} {'default':>10} {'ratio':>6} {'calibrated':>11} {'ratio':>6}")
        for b, yy, dd, cc in zip(*out[t]):
            name = "global" if b == 0 else str(b)
            if args.markdown:
                print(f"| {name} | {yy:,.0f} | {dd:,.0f} | {dd / yy:.2f} | {cc:,.0f} | {cc / yy:.2f} |")
            else:
                print(f"{name:>6} {yy:10.0f} {dd:10.0f} {dd / yy:6.2f} {cc:11.0f} {cc / yy:6.2f}")
        r_d, r_c = d / y, c / y
        print(f"default: ratio in [{r_d.min():.2f}, {r_d.max():.2f}]; calibrated: [{r_c.min():.2f}, {r_c.max():.2f}]")
    for t in (28, 14):
        b, y, d, _ = out[t]
        flat = b >= 8 * t
        print(f"plateau T={t} (B >= {8 * t}): published rises {100 * (y[flat].max() / y[flat].min() - 1):.1f} %, "
              f"model {100 * (d[flat].max() / d[flat].min() - 1):.1f} %")

    def per_bucket(t, k):
        b, arr = out[t][0], out[t][k]
        return t * arr[b == 2][0] / 2

    print("cross-socket penalty (saturated per-bucket rate at B=2, T=14 / T=28): published "
          f"{per_bucket(14, 1) / per_bucket(28, 1):.2f}, model {per_bucket(14, 2) / per_bucket(28, 2):.2f}")
    print(f"\ncalibrate on T=28 ({fit.seconds:.1f} s, {fit.evaluations} model evaluations):")
    print(fit.summary())
    print("correlation:", np.array2string(fit.correlation, precision=2))


def _cross_validate(args, nl, topo, pub):
    for fit in (nl.futex.DEFAULT_FIT, ("syscall_ns",)):
        cv = nl.futex.cross_validate(pub, topo, by="threads", fit=fit, seeds=args.seeds, refcount="immutable")
        print(f"\ncross-validation by thread count, fit {', '.join(fit)}:")
        if args.markdown:
            print("| calibrated on | scored on | in-sample | cross-validated | rms log |")
            print("|---|---|---:|---:|---:|")
            for r in cv.table:
                cell = f"{100 * r['max_error']:.0f} %"
                print(f"| T={r['train']} | T={r['test']} | {cell if r['in_sample'] else ''} | "
                      f"{'' if r['in_sample'] else cell} | {r['rms_log']:.3f} |")
        else:
            print(cv.summary())
        for t, f in cv.fits.items():
            print(f"  fit on T={t}: " + ", ".join(f"{k} = {v:.1f}" for k, v in f.constants.items())
                  + (f" (not identified: {', '.join(f.unidentified)})" if f.unidentified else ""))


def _bands(args, nl, topo, pub):
    band = nl.futex.predict_band(pub, topo, samples=args.bands, seeds=min(args.seeds, 2), refcount="immutable")
    print(f"\nmodel range over the bands ({args.bands}-point Latin hypercube of {band.attrs['banded']}):")
    if args.markdown:
        print("| T | B | published | default | low | high | inside |")
        print("|---:|---:|---:|---:|---:|---:|:---:|")
    for i in range(band.sizes["row"]):
        t, b = int(band.threads[i]), int(band.buckets[i])
        vals = [float(band[v][i]) for v in ("measured", "ops_per_s_per_thread", "low", "high")]
        inside = "yes" if bool(band.inside[i]) else "no"
        name = "global" if b == 0 else str(b)
        if args.markdown:
            print(f"| {t} | {name} | " + " | ".join(f"{v:,.0f}" for v in vals) + f" | {inside} |")
        else:
            print(f"T={t:>2} {name:>6} " + " ".join(f"{v:11.0f}" for v in vals) + f"  {inside}")
    print(f"published inside the band: {int(band.inside.sum())} of {band.sizes['row']} rows")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    ap.add_argument("--cross-validate", action="store_true", help="calibrate on each thread count, score on both")
    ap.add_argument("--bands", type=int, default=0, metavar="N", help="model range over the constants' bands")
    ap.add_argument("--clock", action="store_true",
                    help="give the topology the E5-2650's core clock (2.4 GHz all cores, 2.8 GHz turbo)")
    args = ap.parse_args()

    import numalab as nl

    clock = dict(all_core_ghz=2.4, turbo_ghz=2.8) if args.clock else {}
    topo = nl.data.futex_topology(**clock)
    pub = nl.data.load("futex-e5-2650")
    curves = {t: pub.where(pub.threads == t, drop=True) for t in (28, 14)}
    _curves(args, nl, topo, pub, curves)
    if args.cross_validate:
        _cross_validate(args, nl, topo, pub)
    if args.bands:
        _bands(args, nl, topo, pub)


if __name__ == "__main__":
    main()

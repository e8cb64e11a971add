"""What one thread count on two nodes can identify (docs/futex.md, "Calibration"): the four
fits of that table, each calibrated on the E5-2650's T=28 rows (4 seeds, the MVA) and its T=14
prediction's ratio range to the published rates.

    python benchmarks/futex_fits.py [--seeds 4]
"""

from __future__ import annotations

import argparse

FITS = [("syscall_ns", "line_remote_ns"), ("syscall_ns", "line_remote_ns", "critical_section_ns"),
        ("line_same_node_ns", "line_remote_ns", "critical_section_ns"),
        ("syscall_ns", "line_remote_ns", "critical_section_ns", "lines_contended")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    args = ap.parse_args()

    import numpy as np

    import numalab as nl

    e5 = nl.data.futex_topology()
    pub = nl.data.load("futex-e5-2650")
    t28 = pub.where(pub.threads == 28, drop=True)
    t14 = pub.where(pub.threads == 14, drop=True)
    for fit in FITS:
        f = nl.futex.calibrate(t28, e5, fit=fit, seeds=args.seeds, refcount="immutable")
        print(f.summary())
        r = nl.futex.predict(t14, e5, costs=f.costs, seeds=args.seeds, refcount="immutable") \
            / np.asarray(t14.ops_per_s_per_thread.values)
        print(f"T=14 ratio {r.min():.2f}-{r.max():.2f}")
        print("-----")


if __name__ == "__main__":
    main()

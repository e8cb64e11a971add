"""What one thread count on two nodes can identify (docs/futex.md, "Calibration"): the four
fits of that table, each calibrated on the E5-2650's T=28 rows (4 seeds, the MVA) and its T=14
prediction's ratio range to the published rates.

    python benchmarks/futex_fits.py
"""

import numpy as np, numalab as nl
E5 = nl.data.futex_topology()
pub = nl.data.load("futex-e5-2650")
t28 = pub.where(pub.threads == 28, drop=True)
t14 = pub.where(pub.threads == 14, drop=True)
fits = [("syscall_ns", "line_remote_ns"), ("syscall_ns", "line_remote_ns", "critical_section_ns"),
        ("line_same_node_ns", "line_remote_ns", "critical_section_ns"),
        ("syscall_ns", "line_remote_ns", "critical_section_ns", "lines_contended")]
if __name__ == "__main__":
    for fit in fits:
        f = nl.futex.calibrate(t28, E5, fit=fit, seeds=4, refcount="immutable")
        print(f.summary() if hasattr(f, "summary") else f)
        pred = nl.futex.predict(t14, E5, costs=f.costs, seeds=4, refcount="immutable") if hasattr(nl.futex, "predict") else None
        if pred is not None:
            r = np.asarray(pred) / t14.ops_per_s_per_thread.values
            print("T=14 ratio %.2f-%.2f" % (r.min(), r.max()))
        print("-----")

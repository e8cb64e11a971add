"""The history length in a real kernel beside the model's: reads the JSON files that
``benchmarks/vm_trace.py --history N --model --json FILE`` wrote (one or more a history, the same
workload arguments) and prints, per PID-window count, the kernel's mean and standard deviation
over every run and the model's mean, then the change from the first history to each other one
(docs/fidelity.md, "The history length in a real kernel").

    python benchmarks/vm_trace.py --kernel bzImage --cpus 8 --size-mib 256 --loops 150 \\
        --history 2 --runs 3 --model --json h2.json
    python benchmarks/vm_trace.py ... --history 4 ... --json h4.json
    python benchmarks/vm_history.py h2.json h4.json

The kernel's change is marked significant as mmtests marks one (a two-sample t-test, p < 0.10,
``numalab.stats.ttest_significant``), with its 90 % interval (the same t); the model's mean is over
its seeds and every file's run, and "inside" says whether the model's change lies in that interval.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from numalab.stats import t_ppf, ttest_significant


def change_interval(b, sb, nb, x, sx, nx, level: float = 0.90):
    """The kernel's change of the mean from ``b`` to ``x`` (%) and its two-sided ``level``
    interval, with the standard error and degrees of freedom of ``ttest_significant``."""
    se = np.sqrt(sb**2 / nb + sx**2 / nx)
    half = float(t_ppf(0.5 + level / 2, max(nb + nx - 2, 1))) * se
    d = x - b
    return 100 * d / b, 100 * (d - half) / b, 100 * (d + half) / b

# what is compared: vmstat counters, then the tracepoint's skips by reason and kind of VMA
ROWS = [
    ("numa_pte_updates", "PTE updates"),
    ("numa_huge_pte_updates", "huge PTE updates"),
    ("numa_hint_faults", "hint faults"),
    ("numa_hint_faults_local", "local hint faults"),
    ("numa_pages_migrated", "pages migrated"),
    ("pid_inactive/buffer", "buffer skipped: pid_inactive"),
    ("seq_completed/buffer", "buffer skipped: seq_completed"),
    ("pid_inactive/rest", "stacks and small VMAs skipped: pid_inactive"),
]


def _value(run: dict, key: str) -> float:
    """A run's number for one row (a kernel run's dict or the model's mean of a run)."""
    skips = run.get("skips", {})
    if key == "pid_inactive/rest":
        return float(skips.get("pid_inactive/other", 0) + skips.get("pid_inactive/stack", 0))
    if "/" in key:
        return float(skips.get(key, 0))
    return float(run.get(key, 0))


def kernel_stats(by: dict, h, key: str) -> tuple[float, float, int]:
    """The kernel's mean, standard deviation (NaN for one run) and run count for one row at N=h."""
    v = np.array([_value(r, key) for r in by[h]["kernel"]])
    return float(v.mean()), (float(v.std(ddof=1)) if len(v) > 1 else float("nan")), len(v)


def model_mean(by: dict, h, key: str) -> float:
    """The model's mean for one row at N=h over every file's run (NaN when none was simulated)."""
    m = [_value(r, key) for r in by[h]["model"]]
    return float(np.mean(m)) if m else float("nan")


def collect(paths: list[Path]) -> dict:
    """``{history: {"kernel": [runs], "model": [model means], "kernels": set}}`` from the files."""
    by = defaultdict(lambda: {"kernel": [], "model": [], "kernels": set()})
    for p in paths:
        try:
            results = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            raise SystemExit(f"vm_history.py: {p}: not a vm_trace.py --json file ({e})")
        for res in results:
            h = res.get("history")
            if h is None:
                raise SystemExit(f"vm_history.py: {p}: written without --history; nothing to compare")
            by[h]["kernel"] += res["runs"]
            by[h]["kernels"].add(res["kernel"])
            if "model" in res:
                by[h]["model"].append(res["model"])
    return dict(sorted(by.items()))


def table(by: dict) -> str:
    """The side-by-side table (markdown)."""
    hs = list(by)
    head = ["", *(f"kernel, N={h} ({len(by[h]['kernel'])} runs)" for h in hs),
            *(f"model, N={h}" for h in hs)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    changes = []
    for key, label in ROWS:
        k_stats = [kernel_stats(by, h, key) for h in hs]
        m_means = [model_mean(by, h, key) for h in hs]
        cells = [label, *(f"{m:,.1f} ± {sd:,.1f}" for m, sd, _ in k_stats),
                 *("-" if np.isnan(m) else f"{m:,.1f}" for m in m_means)]
        lines.append("| " + " | ".join(cells) + " |")
        (b, sb, nb) = k_stats[0]
        for h, (x, sx, nx), mm in zip(hs[1:], k_stats[1:], m_means[1:]):
            sig = bool(ttest_significant(b, sb, nb, x, sx, nx))
            if b and m_means[0]:
                c, lo, hi = change_interval(b, 0.0 if np.isnan(sb) else sb, nb, x, 0.0 if np.isnan(sx) else sx, nx)
                mc = 100 * (mm - m_means[0]) / m_means[0]
                kc = f"{c:+.0f} % [{lo:+.0f}, {hi:+.0f}]"
                cells = f"{mc:+.0f} % | {'yes' if lo <= mc <= hi else 'no'}"
            else:
                kc, cells = f"{b:.1f} -> {x:.1f}", f"{m_means[0]:.1f} -> {mm:.1f} | -"
            changes.append(f"| {label} | N={hs[0]} -> {h} | {kc}{' (significant)' if sig else ''} | {cells} |")
    out = "\n".join(lines)
    if changes:
        out += ("\n\n| | | the kernel (90 % interval) | the model | inside |\n|---|---|---|---|---|\n"
                + "\n".join(changes))
    return out


#: the rows the figure draws: the refusal, the scanning that follows, and placement
FIGURE_ROWS = ("pid_inactive/buffer", "numa_pte_updates", "numa_pages_migrated")


def plot(by: dict, rows=FIGURE_ROWS, axes=None):
    """Each row against the PID-window count N: the kernel's runs (points), their mean and
    standard deviation (bars), the model's mean (line). ``axes``: one Axes a row, or None
    for a new figure. Returns the Figure."""
    import matplotlib.pyplot as plt

    if axes is None:
        fig, axes = plt.subplots(1, len(rows), figsize=(3.6 * len(rows), 3.2), layout="constrained")
    axes = np.atleast_1d(axes)
    if len(axes) != len(rows):
        raise ValueError(f"axes: {len(axes)} given, one a row needed ({len(rows)})")
    labels = dict(ROWS)
    hs = np.array(list(by), dtype=float)
    for ax, key in zip(axes, rows):
        for h in by:
            v = [_value(r, key) for r in by[h]["kernel"]]
            ax.plot(np.full(len(v), h) - 0.08, v, ".", color="0.6", ms=4)
        km, ks, _ = zip(*(kernel_stats(by, h, key) for h in by))
        ax.errorbar(hs, km, yerr=np.nan_to_num(ks), fmt="o", color="C0", capsize=3, label="kernel (mean ± sd)")
        ax.plot(hs, [model_mean(by, h, key) for h in by], "s-", color="C1", label="model")
        ax.set_xticks(hs)
        ax.set_xlabel("PID windows the access test ORs (N)")
        ax.set_title(labels.get(key, key), fontsize="medium")
    axes[0].legend(fontsize="small")
    return axes[0].figure


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", type=Path, nargs="+", help="vm_trace.py --json files (--history given)")
    ap.add_argument("--figure", type=Path, help="also draw the refusals, PTE updates and migrations against N here")
    args = ap.parse_args(argv)
    if args.figure and args.figure.suffix.lower() not in (".png", ".svg", ".pdf"):
        ap.error(f"--figure {args.figure}: allowed: a .png, .svg or .pdf path")
    for p in args.json:
        if not p.is_file():
            ap.error(f"{p}: no such file")
    by = collect(args.json)
    kernels = sorted(set().union(*(v["kernels"] for v in by.values())))
    print(f"kernels: {', '.join(kernels)}; histories: {', '.join(map(str, by))}\n")
    print(table(by))
    if args.figure:
        import matplotlib

        matplotlib.use("Agg")
        fig = plot(by)
        fig.suptitle(f"numalab vs {', '.join(kernels)}: the history length", fontsize="medium")
        tmp = args.figure.with_name(args.figure.name + ".part")
        fig.savefig(tmp, format=args.figure.suffix[1:], dpi=110)
        tmp.replace(args.figure)           # never a half-written figure
        print(f"\nfigure: {args.figure}")


if __name__ == "__main__":
    main()

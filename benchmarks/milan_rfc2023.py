"""The 2023 RFC on an AMD machine the model was never given (issue 24; not a test).

The RFC's cover letter ("[RFC PATCH V1 0/6] sched/numa: Enhance disjoint VMA scanning",
Raghavendra K T, 2023-08-29, ``<cover.1693287931.git.raghavendra.kt@amd.com>``) reports one
manual mmtests run of numa01_THREAD_ALLOC on "Milan w/ 2 numa nodes 256 cpus", on its base
(6.5.0-rc6+, the v6.4 rule set) and with the series: ``time``'s real, user and sys, and four
``/proc/vmstat`` counters (:data:`PUBLISHED`). Patch 2's commit message
(``<87e3c08bd1770dd3e6eee099c01e595f14c76fc3.1693287931.git.raghavendra.kt@amd.com>``) repeats
the same numbers ("Patch description is again repeated in some patches", says the cover
letter), so "patched" is read as the whole series (``rfc2023-p6``); patch 2 alone is shown
too. No number of it was in the repository's tables, and no constant was set from it: the
machine is described from public specifications in ``benchmarks/machines/2s-256-milan.json``,
as a user would enter it, and this script is the model's answer on that file as it stands.

It prints, with ``--seeds`` seeds under each kernel (the same seeds, so the changes are
paired):

* the base seconds against the published ones, under the published rule (a factor of 2) and
  the strict one (25 %);
* the series' %change (and patch 2's) against the published one, under the published rule and
  the strict interval of :mod:`numalab.fidelity.rules` -- for one published run, so its
  prediction error is ``std * sqrt(1 + 1/seeds)`` (the tables' numbers are means of 4 runs);
* the patched kernels' counters beside the published ones, and their shape (hint faults per
  protected PTE, the local share, migrations per fault), which no rule judges;
* with ``--bands``, each banded figure of the machine file and each banded cost constant and
  engine option of ``numalab reproduce``'s box at the low and the high end of its range, one
  at a time (``--band-seeds`` seeds each), and the range of the results.

The machine ran with base pages: 1,022,623 hinting faults in 69 s cannot come from 2 MiB
PMDs (numa01_THREAD_ALLOC's 6 GiB is 3,072 of them, so that many faults would mean every PMD
protected and faulted 330 times), so the model runs ``thp=False``; ``--thp`` runs huge pages.

``--option NAME=VALUE`` (repeatable) runs every kernel with an engine option away from its
default, a what-if whose header says so (e.g. ``--option scan_size_mb=96``, docs/fidelity.md).

Run: ``python benchmarks/milan_rfc2023.py [--seeds 32] [--bands] [--thp] [--option NAME=VALUE]``
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

import numalab as nl
from numalab.commands.simulate import options_from_args
from numalab.fidelity import rules, unpaired_std
from numalab.fidelity.constants import banded
from numalab.topology import Topology

MACHINE = Path(__file__).with_name("machines") / "2s-256-milan.json"
WORKLOAD = "numa01_THREAD_ALLOC"
#: the cover letter's kernels -> the model's profiles (6.5-rc6 carries the v6.4 rules); patches
#: 1 and 2 are shown beside the series
KERNELS = {"base": "6.4", "patch 1": "rfc2023-p1", "patch 2": "rfc2023-p2", "patched": "rfc2023-p6"}
#: the cover letter's numbers: time's real and sys (s), and the vmstat counters of the run
PUBLISHED = {
    "base": {"elsp": 82.758, "syst": 25.040, "numa_pte_updates": 6985, "numa_hint_faults": 2705,
             "numa_hint_faults_local": 2279, "numa_pages_migrated": 426},
    "patched": {"elsp": 69.200, "syst": 190.451, "numa_pte_updates": 1573363, "numa_hint_faults": 1022623,
                "numa_hint_faults_local": 389633, "numa_pages_migrated": 632990},
}
COUNTERS = ("numa_pte_updates", "numa_hint_faults", "numa_hint_faults_local", "numa_pages_migrated")
#: the figures of the machine file that carry a band and that the NUMA-balancing model reads
BANDED = ("node_bw_GBps", "write_efficiency", "link_bw_GBps", "local_latency_ns", "remote_latency_ns",
          "thread_bw_GBps")


def run(topo: Topology, seeds: int, thp: bool, kernels=tuple(KERNELS), **options):
    """``(elsp, ds)``: elapsed seconds per kernel (names of :data:`KERNELS`) and seed, and the
    Dataset (``options``: engine options and ``costs=``)."""
    ds = nl.simulate(WORKLOAD, [KERNELS[k] for k in kernels], seeds=seeds, topology=topo, thp=thp, **options)
    elsp = {k: ds["elsp"].sel(policy=KERNELS[k]).values.ravel() for k in kernels}
    return elsp, ds


def change(elsp: dict, kernel: str = "patched") -> np.ndarray:
    """Per seed, ``kernel``'s %change of the elapsed time against the base."""
    return 100.0 * (elsp[kernel] - elsp["base"]) / elsp["base"]


def one_run_interval(pct: np.ndarray, run_std: float, lo: float | None = None,
                     hi: float | None = None) -> tuple[float, float]:
    """The strict interval (:func:`numalab.fidelity.rules.interval`) for a published value that
    is a single run: ``pct`` the per-seed paired changes, ``run_std`` one run's unpaired spread
    (:func:`numalab.fidelity.unpaired_std`; the published mail gives no spread); ``lo`` / ``hi``
    the range of the band ends' means, if any."""
    mean = float(pct.mean())
    row = {"simulated_mean": mean, "simulated_std": float(pct.std(ddof=1)) if pct.size > 1 else 0.0,
           "run_std": run_std, "seeds": pct.size, "published_runs": 1}
    if lo is not None:
        row.update(band_lo=lo, band_hi=hi)
    return rules.interval(row)


def band_ends(topo: Topology, seeds: int, thp: bool):
    """``name -> ((value, base s, {kernel: %change}) at the low end, (...) at the high end)``:
    each banded figure of the machine file, then each banded cost constant and engine option of
    ``numalab reproduce``'s box (:func:`numalab.fidelity.banded`), one at a time."""
    out, prov = {}, topo.provenance()
    kernels = ("base", "patch 2", "patched")     # patch 1 runs as the base does
    axes = [(name, prov[name].band, "topology") for name in BANDED]
    axes += [(name, p.band, owner) for (owner, name), p in banded().items()]
    for name, (lo, hi), owner in axes:
        ends = []
        for value in (lo, hi):
            if owner == "topology":
                kw = {name: value}
                if name == "local_latency_ns":
                    kw["remote_latency_ns"] = max(topo.remote_latency_ns, value)
                elsp, _ = run(dataclasses.replace(topo, **kw), seeds, thp, kernels)
            elif owner == "costs":
                elsp, _ = run(topo, seeds, thp, kernels, costs={name: value})
            else:
                elsp, _ = run(topo, seeds, thp, kernels, **{name: value})
            ends.append((value, float(elsp["base"].mean()),
                         {k: float(change(elsp, k).mean()) for k in ("patched", "patch 2")}))
        out[name] = tuple(ends)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=32, help="seeds per kernel (default: %(default)s)")
    ap.add_argument("--bands", action="store_true", help="each banded figure at both ends of its range")
    ap.add_argument("--band-seeds", type=int, default=8, help="seeds per band end (default: %(default)s)")
    ap.add_argument("--thp", action="store_true", help="huge pages (the machine ran base pages)")
    ap.add_argument("--option", action="append", default=None, metavar="NAME=VALUE",
                    help="a what-if: set an engine option for every kernel (numalab.engine.EngineOptions), "
                         "e.g. scan_size_mb=96; not with --bands")
    args = ap.parse_args(argv)
    if args.seeds < 2 or args.band_seeds < 1:
        ap.error(f"--seeds={args.seeds} must be at least 2 (a change's spread needs two runs) and "
                 f"--band-seeds={args.band_seeds} at least 1")
    if args.option and args.bands:
        ap.error("--option is a what-if away from the defaults; --bands spans the defaults' box, so not both")
    whatif = options_from_args(args, ap)       # the CLI's reader of --option, checked by EngineOptions
    topo = Topology.coerce(MACHINE)
    elsp, ds = run(topo, args.seeds, args.thp, **whatif)
    pub_pct = 100.0 * (PUBLISHED["patched"]["elsp"] - PUBLISHED["base"]["elsp"]) / PUBLISHED["base"]["elsp"]
    ends = band_ends(topo, args.band_seeds, args.thp) if args.bands else {}

    print(f"# {WORKLOAD} on {topo.name} ({MACHINE.name}), thp={args.thp}, {args.seeds} seeds a kernel; "
          f"published: the RFC's cover letter (one run each; 'patched' = the series)"
          + (f"\n# WHAT-IF, not the model's defaults: {', '.join(f'{k}={v}' for k, v in whatif.items())}"
             if whatif else "") + "\n")
    print("| kernel | profile | simulated s (mean ± std) | published s |")
    print("|---|---|---|---|")
    for k, p in KERNELS.items():
        pub = PUBLISHED.get(k, {}).get("elsp")
        print(f"| {k} | {p} | {elsp[k].mean():.2f} ± {elsp[k].std(ddof=1):.2f} | "
              f"{'' if pub is None else f'{pub:.2f}'} |")
    base_pub, base_sim = PUBLISHED["base"]["elsp"], float(elsp["base"].mean())
    base_range = [e[1] for v in ends.values() for e in v]
    print(f"\nbase seconds: {base_sim:.2f} against {base_pub:.2f} ({base_sim / base_pub:.3f}x): published rule "
          f"{rules.verdict_base(base_pub, base_sim)}, strict rule "
          f"{rules.verdict_base(base_pub, base_sim, tol=rules.STRICT_BASE_TOL)}"
          + (f"; over the bands {min(base_range):.1f} .. {max(base_range):.1f} s" if ends else ""))
    for k, what in (("patched", "the series' change"), ("patch 2", "patch 2's change, if 'patched' were patch 2")):
        pct = change(elsp, k)
        rng = [e[2][k] for v in ends.values() for e in v]
        lo, hi = one_run_interval(pct, unpaired_std(elsp["base"], elsp[k]), min(rng) if rng else None,
                                  max(rng) if rng else None)
        strict = rules.REPRODUCED if lo <= pub_pct <= hi else ("simulated above" if pub_pct < lo else "simulated below")
        print(f"{what}: {pct.mean():+.1f} ± {pct.std(ddof=1):.1f} % (per-seed std) against {pub_pct:+.1f} %: "
              f"published rule {rules.verdict_change(pub_pct, float(pct.mean()))}; strict interval "
              f"{lo:+.1f} .. {hi:+.1f} %: {strict}")

    print("\n| counter | base: simulated / published | series: simulated / published | ratio | "
          "patch 2: simulated | ratio |")
    print("|---|---|---|---|---|---|")
    sim = {k: {c: float(ds[c].sel(policy=KERNELS[k]).mean()) for c in (*COUNTERS, "syst")}
           for k in ("base", "patched", "patch 2")}
    for c in (*COUNTERS, "syst"):
        fmt = (lambda x: f"{x:.2f}") if c == "syst" else (lambda x: f"{x:,.0f}")
        pb, pp = PUBLISHED["base"][c], PUBLISHED["patched"][c]
        print(f"| {c}{' (kernel CPU s)' if c == 'syst' else ''} | {fmt(sim['base'][c])} / {fmt(pb)} | "
              f"{fmt(sim['patched'][c])} / {fmt(pp)} | {sim['patched'][c] / pp:.2f} | "
              f"{fmt(sim['patch 2'][c])} | {sim['patch 2'][c] / pp:.2f} |")

    def shape(d):
        return (d["numa_hint_faults"] / d["numa_pte_updates"], d["numa_hint_faults_local"] / d["numa_hint_faults"],
                d["numa_pages_migrated"] / d["numa_hint_faults"])
    print("\n| shape | hint faults per protected PTE | local share of the faults | migrations per fault |")
    print("|---|---|---|---|")
    for src, d in (("series, simulated", sim["patched"]), ("patch 2, simulated", sim["patch 2"]),
                   ("published", PUBLISHED["patched"])):
        a, b, c = shape(d)
        print(f"| {src} | {a:.2f} | {b:.2f} | {c:.2f} |")

    if ends:
        print("\n| figure (machine file, then costs and options) | low end: value, base s, series %, patch 2 % | "
              "high end: value, base s, series %, patch 2 % |")
        print("|---|---|---|")
        for name, ((v0, b0, c0), (v1, b1, c1)) in ends.items():
            print(f"| {name} | {v0:g}, {b0:.1f}, {c0['patched']:+.1f}, {c0['patch 2']:+.1f} | "
                  f"{v1:g}, {b1:.1f}, {c1['patched']:+.1f}, {c1['patch 2']:+.1f} |")


if __name__ == "__main__":
    main()

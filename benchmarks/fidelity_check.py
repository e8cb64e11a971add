"""Quick fidelity check against the kernel test robot's RFC 2023 results (not a test).

Prints, for numa01, numa01_THREAD_ALLOC and numa02 on "2s-128": the simulated base seconds
under rfc2023-p4 (published 341 / 187 / 21 s) and the %change of p5 vs p4 (published -4.1,
-27.1, -33.6) and of p6 vs p5 (published -1.1, -25.1, +1.5), mean over a few seeds.

Also prints, per policy, the load balancer's cross-node moves and the scan-period resets per
run (the mechanism behind the hot-VMA gain, docs/fidelity.md).

Run: ``python benchmarks/fidelity_check.py [--seeds 4] [--workloads numa02,...] [--lb-migrate-hz X]``

``--machines`` instead judges every table of calibration-intel.md (lkp-csl-2sp9, lkp-spr-r02) on
its machine's preset, as ``numalab reproduce`` does, and prints one line per row that misses
(the CI check, tests/test_reproduce.py, runs the same with 2 seeds); ``--all`` adds the Ice Lake
tables, and ``--cost NAME=VALUE`` (repeatable) overrides a :class:`numalab.costs.Costs` field for
a probe, e.g. ``--machines --all --cost link_write_efficiency=0.6`` (docs/fidelity.md; a machine's
``write_efficiency`` is a topology figure: ``benchmarks/bandwidth_floor.py --capacity``), and ``--option
NAME=VALUE`` or ``--no-<mechanism>`` sets an engine option as ``numalab simulate`` does, e.g.
``--no-init-coherence`` (the model before the shared init became coherence traffic).
"""

from __future__ import annotations

import argparse
import time

import numalab as nl
from numalab.commands.simulate import add_option_arguments, options_from_args

PUBLISHED = {
    "numa01": (341.49, -4.1, -1.1),
    "numa01_THREAD_ALLOC": (186.67, -27.1, -25.1),
    "numa02": (21.17, -33.6, +1.5),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--workloads", default=",".join(PUBLISHED))
    ap.add_argument("--lb-migrate-hz", type=float, default=None,
                    help="engine option lb_migrate_hz (default: engine.LB_MIGRATE_HZ)")
    ap.add_argument("--machines", action="store_true",
                    help="judge the calibration-intel.md tables on their machines' presets instead")
    ap.add_argument("--all", action="store_true", help="with --machines: the Ice Lake tables too")
    ap.add_argument("--cost", action="append", default=[], metavar="NAME=VALUE",
                    help="with --machines: override a Costs field (a probe, not a default)")
    add_option_arguments(ap)        # --no-<mechanism> and --option NAME=VALUE, as numalab simulate
    args = ap.parse_args(argv)
    if args.machines:
        return machines(args)
    topo = nl.Topology.preset("2s-128")
    print(f"{'workload':<22}{'p4 s (pub)':>18}{'p5 vs p4 % (pub)':>22}{'p6 vs p5 % (pub)':>22}{'cpu s':>8}")
    for name in args.workloads.split(","):
        t = time.process_time()
        opts = {} if args.lb_migrate_hz is None else {"lb_migrate_hz": args.lb_migrate_hz}
        opts.update(options_from_args(args))
        ds = nl.simulate(nl.workload(name, topo), ["rfc2023-p4", "rfc2023-p5", "rfc2023-p6"], seeds=args.seeds,
                         **opts)
        m = ds.elsp.mean("seed")
        p4, p5, p6 = (float(m.sel(policy=p)) for p in ("rfc2023-p4", "rfc2023-p5", "rfc2023-p6"))
        pub = PUBLISHED.get(name, (float("nan"),) * 3)
        print(f"{name:<22}{p4:>9.1f} ({pub[0]:>5.1f}){100 * (p5 / p4 - 1):>+12.1f} ({pub[1]:+6.1f})"
              f"{100 * (p6 / p5 - 1):>+12.1f} ({pub[2]:+6.1f}){time.process_time() - t:>8.1f}")
        sd = ds.elsp.std("seed")
        print(f"{'':<22}stddev over seeds: " + ", ".join(f"{p}={float(sd.sel(policy=p)):.1f}s" for p in ds.policy.values))
        mm = ds.mean("seed")
        print(f"{'':<22}per run (lb moves / scan-period resets / allow_hot): " + ", ".join(
            f"{p}={float(mm.lb_migrations.sel(policy=p)):.1f}/{float(mm.scan_period_resets.sel(policy=p)):.1f}/"
            f"{float(mm.allow_hot.sel(policy=p)):.1f}" for p in ds.policy.values))


def machines(args):
    from numalab import fidelity

    opts = {} if args.lb_migrate_hz is None else {"lb_migrate_hz": args.lb_migrate_hz}
    costs = {}
    for kv in args.cost:
        name, _, value = kv.partition("=")
        costs[name] = float(value)
    if costs:
        opts["costs"] = costs
    opts.update(options_from_args(args))
    tables = fidelity.calibration_tables()
    if not args.all:
        tables = [n for n in tables if n not in fidelity.calibration_tables("lkp-icl-2sp6")]
    t = time.process_time()
    published, sims = fidelity.simulate_fidelity(tables, seeds=args.seeds, **opts)
    judged = ok = strict = fitted = 0
    for name, pub in published.items():
        for r in fidelity.compare(pub, fidelity.table_sim(pub, sims)):
            if r["verdict"] == fidelity.NOT_JUDGED:
                continue
            judged += 1
            ok += r["verdict"] == fidelity.REPRODUCED
            strict += r["strict_verdict"] == fidelity.REPRODUCED
            fitted += bool(r["fitted"])
            if r["verdict"] != fidelity.REPRODUCED:
                print(f"{name:<40} {r['metric']:<48} {r['quantity']:<34} published {r['published']:>+9.4g} "
                      f"simulated {r['simulated_mean']:>+9.4g} {r['verdict']}")
    extra = {k: v for k, v in opts.items() if k != "costs"}
    print(f"strict rule: {strict} of {judged}; {fitted} rows a fitted constant was set from (counted here)")
    print(f"{ok} of {judged} rows reproduced ({args.seeds} seeds; base columns shared by tables counted per "
          f"table{'; costs ' + str(costs) if costs else ''}{'; options ' + str(extra) if extra else ''}), "
          f"{time.process_time() - t:.1f} cpu s")


if __name__ == "__main__":
    main()

"""``numalab simulate``: run the NUMA-balancing engine and print a per-policy summary.

With no arguments it runs the main job: numa01_THREAD_ALLOC on the 2-socket 128-CPU Ice Lake
preset (the kernel test robot's lkp-icl-2sp6) under v6.4 (whose sequence-based early passes are
spent during the benchmark's MPOL_BIND init phase, so its PID filter then starves every VMA),
v6.12 and the 2024 "hot + shared VMA" RFC, 4 seeds, and prints mean ± stddev of elapsed and
system seconds and the /proc/vmstat NUMA counters per policy (with units, in 100 columns), a
legend of the model's own metrics, and what the numbers say: each policy's elapsed-time change
against the first with its paired 95 % interval, the runs a real machine would need to see it,
and why in kernel terms.
"""

from __future__ import annotations

import argparse

from . import add_output, name_values

HELP = "simulate automatic NUMA balancing for a workload under one or more kernel profiles"
DEFAULT_PROFILES = ["6.4", "6.12", "rfc2024-hot-shared"]



def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("simulate", help=HELP, description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--workload", default="numa01_THREAD_ALLOC",
                   help="workload name (default: %(default)s; numa01, numa01_THREAD_ALLOC, numa02, numa02_SMT, "
                        "their _HARD_BIND/_INVERSE_BIND variants)")
    p.add_argument("--topology", default="2s-128",
                   help="topology preset, or a topology file such as numalab probe writes (default: %(default)s)")
    p.add_argument("--profile", action="append", default=None,
                   help="kernel profile or policy text (e.g. 6.12+N=4); repeat for several "
                        "(default: 6.4, 6.12 and rfc2024-hot-shared)")
    p.add_argument("--history", action="append", type=int, default=None,
                   help="number of PID windows N; repeat to run every profile with each N")
    p.add_argument("--seeds", type=int, default=4, help="number of seeds 0..n-1 (default: %(default)s)")
    p.add_argument("--dt", type=float, default=None, help="step in seconds (default: engine default 0.05)")
    p.add_argument("--max-time", type=float, default=None, help="give up after this many simulated seconds")
    p.add_argument("--no-thp", action="store_true", help="4 KiB page semantics instead of 2 MiB THPs")
    p.add_argument("--fixed-locality", action="store_true",
                   help="clear numa_faults_locality on the slow-down path too (the e81ee0630837 fix)")
    add_option_arguments(p)
    add_rule_argument(p)
    add_output(p, "--out", default=None, help="write the Dataset to this NetCDF file (h5netcdf)")
    p.set_defaults(command="simulate")
    return p


def add_rule_argument(p) -> None:
    """``--rule MODULE:FUNCTION``: a scan-filter rule of one's own (numalab.rules)."""
    p.add_argument("--rule", action="append", default=None, metavar="MODULE:FUNCTION",
                   help="load a scan-filter rule of your own: a numalab.Rule, or a function view -> bool array "
                        "(numalab.ScanView), imported from an installed package or the current directory; "
                        "repeatable. Policy texts may name it (6.12+NAME); when none does, every policy gets it")


def rules_from_args(args) -> list:
    """The rules ``--rule`` names, loaded (and so known to policy text), in order."""
    import os
    import sys

    from ..errors import NumalabValueError
    from ..rules import resolve

    specs = getattr(args, "rule", None) or []
    if specs and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())  # as `python -m numalab` would find a module of the current directory
    out = []
    for spec in specs:
        try:
            out.append(resolve(spec if ":" in spec else f"{spec}:"))
        except NumalabValueError as exc:
            raise NumalabValueError(f"--rule {spec!r}: {exc}") from None
    return out


def with_rules(policies: list, rules: list) -> list:
    """``policies`` with ``rules`` added to each, unless one of them names one of the rules
    already (then they are run as written)."""
    names = {r.name for r in rules}
    if not rules or any(names & {u.name for u in p.user_rules} for p in policies):
        return policies
    return [p.replace(add_rules=rules) for p in policies]


def add_option_arguments(p) -> None:
    """``--no-<mechanism>`` for every off-switch of EngineOptions (but thp, which has --no-thp)
    and ``--option NAME=VALUE`` for any engine option: the names come from
    ``EngineOptions.describe()``."""
    from ..engine.options import DEFAULTS, SWITCHES, option_fields

    for name, f in option_fields().items():
        if name in SWITCHES and DEFAULTS[name] is True and name != "thp":
            p.add_argument(f"--no-{name.replace('_', '-')}", dest=f"off_{name}", action="store_true",
                           help=f"switch off: {f['doc']}")
    p.add_argument("--option", action="append", default=None, metavar="NAME=VALUE",
                   help="set any engine option (see numalab.engine.EngineOptions.describe())")


def options_from_args(args, parser=None) -> dict:
    """The engine options the arguments set (validated by EngineOptions). With an argparse
    ``parser`` (a script's own), a bad name or value is that parser's usage error."""
    if parser is not None:
        try:
            return options_from_args(args)
        except ValueError as exc:
            parser.error(str(exc))
    from ..engine.options import EngineOptions, option_fields

    opts = {}
    if getattr(args, "dt", None) is not None:
        opts["dt"] = args.dt
    if getattr(args, "max_time", None) is not None:
        opts["max_time"] = args.max_time
    if getattr(args, "no_thp", False):
        opts["thp"] = False
    if getattr(args, "fixed_locality", False):
        opts["sticky_locality"] = False
    for name in option_fields():
        if getattr(args, f"off_{name}", False):
            opts[name] = False
    opts.update(name_values("--option", getattr(args, "option", None), option_fields()))
    EngineOptions.coerce(opts)          # every name and bound checked here, before any run
    return opts


def policies_from_args(profiles, histories):
    from ..policy import Policy

    profiles = profiles or DEFAULT_PROFILES
    out = []
    for name in profiles:
        for n in histories or [None]:
            out.append(Policy.parse(name, history=n))
    return out


def summary_table(ds) -> str:
    """The printed summary: the table of mean ± stddev per policy (units, at most 100 columns,
    wrapping by policy), the legend of the model's own metrics, and the interpretation lines
    generated from the numbers (:func:`numalab.interpret.explain`)."""
    from ..interpret import explain

    return explain(ds)


def run(args) -> int:
    from ..engine import simulate
    from ..errors import check_int
    from ..topology import Topology
    from ..workloads import workload

    seeds = check_int("--seeds", args.seeds, lo=1, hi=10000)
    topo = Topology.coerce(args.topology)
    wl = workload(args.workload, topo)
    rules = rules_from_args(args)  # before the policy texts, which may name them
    pols = with_rules(policies_from_args(args.profile, args.history), rules)
    opts = options_from_args(args)
    ds = simulate(wl, pols, seeds=seeds, **opts)
    print(summary_table(ds))
    if args.out:
        from ..storage import write_netcdf

        write_netcdf(ds, args.out)
        print(f"wrote {args.out}")
    return 0

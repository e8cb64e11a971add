"""``numalab trace``: what the NUMA scanner did in one simulated run, run by run.

Prints one line per task_numa_work run (time, scanning thread, numa_scan_seq and
numa_scan_offset before and after, PTEs changed, and the decision for every VMA the run
reached, grouped by VMA kind), or with --format perf the skips as `perf script` prints the
kernel's sched:sched_skip_vma_numa tracepoint, to put beside a trace from a real machine. With
--plot it also draws where the scanner went: per VMA and time, its decision, the PTEs it made
PROT_NONE and the hinting faults the VMA took (a damo-style heatmap).
"""

from __future__ import annotations

import argparse

from . import add_output

HELP = "print the scanner's runs and per-VMA decisions for one simulated run (sched_skip_vma_numa)"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("trace", help=HELP, description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("--workload", default="numa02",
                   help="workload name (default: %(default)s)")
    p.add_argument("--topology", default="2s-128",
                   help="topology preset, or a topology file such as numalab probe writes (default: %(default)s)")
    p.add_argument("--profile", default="6.12", help="kernel profile or policy text (default: %(default)s)")
    p.add_argument("--history", type=int, default=None, help="number of PID windows N (default: the profile's)")
    p.add_argument("--seed", type=int, default=0, help="seed (default: %(default)s)")
    p.add_argument("--max-time", type=float, default=None, help="stop after this many simulated seconds")
    p.add_argument("--format", choices=("runs", "vmas", "perf"), default="runs",
                   help="runs: a line per run (default); vmas: also a line per visited VMA; "
                        "perf: the skips in `perf script` form")
    from .simulate import add_option_arguments, add_rule_argument

    add_option_arguments(p)
    add_rule_argument(p)
    add_output(p, "--out", default=None, help="also write the trace Dataset to this NetCDF file (h5netcdf)")
    add_output(p, "--plot", default=None, metavar="PATH",
               help="also draw where the scanner went (plots.scan_heatmap: per VMA and time, its decision, the "
                    "PTEs it changed and the hinting faults taken) to PATH (.png, .pdf or .svg)")
    p.add_argument("--by", choices=("vma", "kind"), default="vma",
                   help="--plot rows: one per VMA (default) or one per VMA kind")
    p.set_defaults(command="trace")
    return p


def run(args) -> int:
    from ..errors import check_int
    from ..engine.tracing import format_perf, format_runs, scan_trace
    from ..policy import Policy
    from .simulate import options_from_args, rules_from_args, with_rules

    seed = check_int("--seed", args.seed, lo=0)
    rules = rules_from_args(args)
    pol = with_rules([Policy.parse(args.profile, history=args.history)], rules)[0]
    opts = options_from_args(args)
    opts.pop("max_time", None)
    if args.plot:
        from ..engine.scanmap import scan_map
        from ..plots import SAVE_FORMATS
        from ..errors import check_choice
        from pathlib import Path

        check_choice("--plot suffix", Path(args.plot).suffix.lstrip(".").lower() or "png", SAVE_FORMATS)
        trace = scan_map  # the trace plus the PTEs per visit and the faults per VMA the heatmap needs
    else:
        trace = scan_trace
    ds = trace(args.workload, pol, seed, topology=args.topology, max_time=args.max_time, **opts)
    if args.format == "perf":
        text = format_perf(ds)
    else:
        text = format_runs(ds, vmas=args.format == "vmas")
        elsp = ds.attrs["elsp"][0]
        end = "elapsed" if ds.attrs["finished"][0] else "stopped by --max-time at"
        text += f"\n# {ds.sizes['run']} runs, {ds.sizes['visit']} VMA visits; {end} {elsp:.2f} s"
    if text:
        print(text)
    if args.out:
        from ..storage import write_netcdf

        write_netcdf(ds, args.out)
        print(f"wrote {args.out}")
    if args.plot:
        from ..plots import save, scan_heatmap

        save(scan_heatmap(ds, by=args.by), args.plot, dpi=150)
        print(f"wrote {args.plot}")
    return 0

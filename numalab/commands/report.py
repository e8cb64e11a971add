"""``numalab report FILE.nc``: print a saved simulation as an mmtests or kernel-test-robot table."""

from __future__ import annotations

ERAS = ("2023", "2024-09", "2024-12", "2026")  # = numalab.stats.ERAS, kept here so --help stays light


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "report",
        help="print a saved Dataset as an mmtests compare table or an LKP %%change block",
        description=(
            "Read a Dataset written by `numalab simulate --out FILE.nc` (dims policy, seed; "
            "variables elsp, syst, vmstat counters) and print it as mmtests' compare-kernels "
            "table (with the Duration and vmstat Ops tables) or as the kernel test robot's "
            "%%stddev/%%change block."
        ),
    )
    p.add_argument("file", metavar="FILE.nc", help="NetCDF file written by `numalab simulate --out`")
    p.add_argument("--format", choices=("mmtests", "lkp"), default="mmtests", help="table layout (default: mmtests)")
    p.add_argument(
        "--metric",
        action="append",
        metavar="VAR",
        help="variable to report (repeatable or comma-separated; default: syst and elsp for mmtests, "
        "elsp, syst and the vmstat counters for lkp)",
    )
    p.add_argument("--baseline", metavar="NAME", help="column to compare against (default: the first policy)")
    p.add_argument(
        "--era",
        choices=ERAS,
        default="2023",
        help="mmtests code generation: 2023 = t-test asterisks, 2024-09 = none, 2024-12 = ±1.96·s "
        "bands, 2026 = Elapsed-/System-/User- layout (default: 2023)",
    )
    p.add_argument("--along", metavar="DIM", help="dim holding the compared kernels (default: policy)")
    p.add_argument("--no-monitors", action="store_true", help="mmtests: omit the Duration and Ops tables")


def run(args) -> int:
    from .. import report
    from ..storage import read_netcdf

    ds = read_netcdf(args.file, "FILE")
    metric = None
    if args.metric:
        metric = [m for item in args.metric for m in item.split(",") if m]
    if args.format == "mmtests":
        text = report.mmtests(
            ds, metric=metric, along=args.along, baseline=args.baseline, era=args.era, monitors=not args.no_monitors
        )
    else:
        text = report.lkp(ds, metric=metric, along=args.along, baseline=args.baseline)
    print(text, end="")
    return 0

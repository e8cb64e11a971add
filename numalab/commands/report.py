"""``numalab report FILE.nc``: print a saved simulation or sweep as an mmtests or kernel-test-robot table."""

from __future__ import annotations

ERAS = ("2023", "2024-09", "2024-12", "2026")  # = numalab.stats.ERAS, kept here so --help stays light


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "report",
        help="print a saved Dataset as an mmtests compare table or an LKP %%change block",
        description=(
            "Read a Dataset written by `numalab simulate --out FILE.nc` (dims policy, seed; "
            "variables elsp, syst, vmstat counters) or `numalab sweep --out FILE.nc` (the swept "
            "dims, seed) and print it as mmtests' compare-kernels table (with the Duration and "
            "vmstat Ops tables) or as the kernel test robot's %stddev/%change block. The columns "
            "lie along --along (default: policy, or a sweep's first swept dim other than "
            "workload); every other swept dim but workload is fixed with --sel."
        ),
    )
    p.add_argument("file", metavar="FILE.nc", help="NetCDF file written by `numalab simulate --out` or `numalab sweep --out`")
    p.add_argument("--format", choices=("mmtests", "lkp"), default="mmtests", help="table layout (default: mmtests)")
    p.add_argument(
        "--metric",
        action="append",
        metavar="VAR",
        help="variable to report (repeatable or comma-separated; default: syst and elsp for mmtests, "
        "elsp, syst and the vmstat counters for lkp)",
    )
    p.add_argument("--along", metavar="DIM",
                   help="dim whose values are the columns (default: policy, else a sweep's first swept dim "
                        "other than workload), e.g. history")
    p.add_argument("--baseline", metavar="VALUE", help="column to compare against, a value of --along as printed "
                                                      "(default: the first)")
    p.add_argument("--sel", action="append", default=[], metavar="DIM=VALUE",
                   help="keep only this value of a dim (repeatable), e.g. --sel workload=numa02 --sel profile=6.12")
    p.add_argument(
        "--era",
        choices=ERAS,
        default="2023",
        help="mmtests code generation: 2023 = t-test asterisks, 2024-09 = none, 2024-12 = ±1.96·s "
        "bands, 2026 = Elapsed-/System-/User- layout (default: 2023)",
    )
    p.add_argument("--no-monitors", action="store_true", help="mmtests: omit the Duration and Ops tables")


def select(ds, items: list[str]):
    """``ds`` with each ``DIM=VALUE`` of ``items`` selected (the dim dropped, its value kept as a
    scalar coordinate). VALUE is matched against the coordinate's values as printed
    (``history=4``, ``workload=numa02``)."""
    from ..errors import NumalabValueError, check_choice

    done = set()
    for item in items:
        dim, sep, value = item.partition("=")
        dim, value = dim.strip(), value.strip()
        if not sep or not dim or not value:
            raise NumalabValueError(f"--sel {item!r}; allowed: DIM=VALUE, e.g. --sel workload=numa02")
        if dim in done:
            raise NumalabValueError(f"--sel {item!r}: {dim} is selected twice")
        check_choice("--sel DIM", dim, [d for d in ds.dims if d != "seed"])
        names = [str(v) for v in ds[dim].values]
        check_choice(f"--sel {dim}", value, names)
        ds = ds.isel({dim: names.index(value)})
        done.add(dim)
    return ds


def run(args) -> int:
    from .. import report
    from ..errors import check_list
    from ..storage import read_netcdf

    metric = None
    if args.metric:
        metric = check_list("--metric", ",".join(args.metric))
    ds = select(read_netcdf(args.file, "FILE"), args.sel)
    if args.format == "mmtests":
        text = report.mmtests(
            ds, metric=metric, along=args.along, baseline=args.baseline, era=args.era, monitors=not args.no_monitors
        )
    else:
        text = report.lkp(ds, metric=metric, along=args.along, baseline=args.baseline)
    print(text, end="")
    return 0

"""``numalab sweep``: run a parameter grid (NUMA engine or futex model) and write one NetCDF file.

Example::

    numalab sweep --workload numa01_THREAD_ALLOC,numa02 --history 2,4,6,8 --profile 6.12 \\
        --seeds 8 --out sweep.nc [--scheduler tcp://HOST:8786] [--cache DIR]

Every list is comma-separated; a parameter given one value is fixed (a scalar coordinate), one
given several values becomes a dim of the written Dataset, followed by ``seed``.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import warnings
from pathlib import Path

from . import add_output

_NUMA_OPTS = ("workload", "history", "profile", "policy")
_FUTEX_OPTS = ("mode", "buckets", "threads")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "sweep",
        help="run a parameter grid and write one NetCDF Dataset (cached, resumable, local or dask)",
        description=(
            "Run the full factorial grid of the given parameter lists x seeds with the NUMA engine "
            "(default) or the futex model and write one labelled Dataset (h5netcdf). Points already "
            "in the cache are not recomputed, so a killed sweep resumes where it stopped."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            "  numalab sweep --workload numa01_THREAD_ALLOC,numa02 --history 2,4,6,8 --profile 6.12 "
            "--seeds 8 --out sweep.nc\n"
            "  numalab sweep --mode classic,numa --buckets 1024,65536 --threads 64,128 "
            "--out futex.nc\n"
            "  dask scheduler & dask worker tcp://HOST:8786 &   # on each node\n"
            "  numalab sweep ... --scheduler tcp://HOST:8786\n"
            "default cache: $NUMALAB_CACHE, else $XDG_CACHE_HOME/numalab/sweep, else ~/.cache/numalab/sweep"
        ),
    )
    p.add_argument("--kind", default=None,
                   help="model: numa (default) or futex (inferred from --mode/--buckets/--threads)")
    g = p.add_argument_group("NUMA engine parameters (comma-separated lists)")
    g.add_argument("--workload", help="e.g. numa01,numa01_THREAD_ALLOC,numa02,numa02_SMT")
    g.add_argument("--history", help="access-PID history lengths N, e.g. 2,4,6,8 ('profile' = the profile's own; adaptive or adaptive:RULE)")
    g.add_argument("--profile", help="kernel profiles, e.g. 6.12,rfc2024-hot-shared")
    g.add_argument("--policy", help="policies instead of --profile/--history, any text Policy.parse reads, "
                                    "e.g. 6.12,6.12+N=4,adaptive:span,6.4+rules=own_pid,hot>=1")
    g.add_argument("--topology", help="topology presets or topology files, e.g. 2s-128,host.json (also for futex)")
    f = p.add_argument_group("futex model parameters (comma-separated lists)")
    f.add_argument("--mode", help="futex hash modes: classic, numa, private")
    f.add_argument("--buckets", help="hash bucket counts, e.g. 16,256,4096")
    f.add_argument("--threads", help="thread counts, e.g. 110,240")
    from .simulate import add_rule_argument

    add_rule_argument(g)
    p.add_argument("--set", action="append", default=[], metavar="NAME=V1,V2",
                   help="any other model parameter (engine or futex option); repeatable")
    p.add_argument("--seeds", default="8", help="a count N (seeds 0..N-1) or a list like 0,5,9 (default 8)")
    add_output(p, "--out", required=True, help="output NetCDF file (h5netcdf)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="dask scheduler address, e.g. tcp://host:8786")
    c = p.add_mutually_exclusive_group()
    add_output(c, "--cache", kind="dir", create=True, metavar="DIR", help="cache directory (default: see below)")
    c.add_argument("--no-cache", action="store_true", help="compute every point, store nothing")
    p.add_argument("--workers", type=int, default=None, help="local worker processes (default: all CPUs)")
    p.add_argument("--batch-size", type=int, default=None, help="most points per model call")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _split(option: str, text: str) -> list[str]:
    """A comma-separated option value (:func:`numalab.errors.check_list`: no empty item)."""
    from numalab.errors import check_list

    return check_list(option, text, distinct=False)


def _parses(text: str) -> bool:
    from numalab.errors import NumalabValueError
    from numalab.policy import Policy

    try:
        Policy.parse(text)
    except NumalabValueError:
        return False
    return True


def _policy_texts(text: str) -> list[str]:
    """The policies of ``--policy``, each read by :meth:`numalab.policy.Policy.parse`.

    Commas separate policies, but a policy's ``rules=`` list has commas of its own
    (``6.4+N=8+rules=own_pid,hot>=1,shared>=3``, as ``Policy.name`` writes it, and
    ``...+rules=early_passes(vma),starvation+my_rule`` with a user rule after it): a piece that
    continues a ``rules=`` list (the joined text parses and the piece starts with no profile)
    is joined to the policy before it. Each text is kept as written (it is part of the points'
    cache keys)."""
    from numalab.errors import NumalabValueError
    from numalab.policy import Policy

    out: list[str] = []
    for piece in _split("--policy", text):
        if (out and out[-1].rsplit("+", 1)[-1].startswith("rules=")
                and piece.split("+", 1)[0] not in Policy.profiles() and _parses(f"{out[-1]},{piece}")):
            out[-1] = f"{out[-1]},{piece}"
        else:
            out.append(piece)
    for policy in out:
        try:
            Policy.parse(policy)
        except NumalabValueError as exc:
            raise NumalabValueError(f"--policy {policy!r}: {exc}") from None
    return out


def _coerce(param, token: str):
    """The first of int, float, str that the parameter's own check accepts."""
    from numalab.errors import NumalabValueError

    candidates = []
    try:
        candidates.append(int(token))
    except ValueError:
        pass
    try:
        candidates.append(float(token))
    except ValueError:
        pass
    candidates.append(token)
    err = None
    for cand in candidates:
        try:
            return param.check(param.name, cand)
        except NumalabValueError as exc:
            err = err or exc  # the first reading's refusal: '0' is refused as the integer 0
    raise err


def _seeds(text: str):
    from numalab.errors import NumalabValueError

    items = _split("--seeds", text)
    try:
        nums = [int(t) for t in items]
    except ValueError:
        raise NumalabValueError(f"--seeds {text!r} must be a count or a comma-separated list of integers") from None
    if len(nums) == 1 and "," not in text:
        return nums[0]
    return nums


def build_grid(args) -> tuple[str | None, dict]:
    """(kind, grid) from parsed arguments; values are typed by each parameter's own check."""
    from numalab.errors import NumalabValueError
    from numalab.sweeps import get_runner

    from .simulate import rules_from_args

    rules = rules_from_args(args)  # before the policy texts, which may name them

    raw: dict[str, str] = {}
    given: dict[str, str] = {}  # parameter -> the option that gave it
    for name in (*_NUMA_OPTS, "topology", *_FUTEX_OPTS):
        value = getattr(args, name, None)
        if value is not None:
            raw[name], given[name] = value, f"--{name}"
    for item in args.set:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise NumalabValueError(f"--set {item!r} must look like NAME=V1,V2")
        if name in given:  # one value per parameter: a second one silently replaced the first
            raise NumalabValueError(f"--set {item!r}: {name} is already given by {given[name]}; give each "
                                    "parameter once (a list of values: NAME=V1,V2)")
        raw[name], given[name] = value, f"--set {name}"
    kind = args.kind
    if kind is None and any(n in raw for n in _FUTEX_OPTS):
        kind = "futex"
    runner = get_runner(kind or "numa")
    params = runner.params()
    grid = {}
    for name, text in raw.items():
        if name not in params:
            raise NumalabValueError(
                f"unknown {runner.kind} sweep parameter {name!r}; allowed: {', '.join(params)}"
            )
        tokens = _policy_texts(text) if name == "policy" and runner.kind == "numa" else _split(given[name], text)
        if not tokens:
            raise NumalabValueError(f"{given[name]} {text!r} is an empty list; give at least one value")
        if name == "policy" and rules:
            tokens = _with_rule_labels(tokens, rules)
        grid[name] = [_coerce(params[name], t) for t in tokens]
    if rules and "policy" not in grid:
        raise NumalabValueError(f"--rule {rules[0].name}: name the policies it joins with --policy "
                                f"(e.g. --policy 6.12,6.12+{rules[0].name})")
    return runner.kind, grid


def _with_rule_labels(texts: list[str], rules: list) -> list[str]:
    """``--policy`` texts with the ``--rule`` rules added (``+NAME``), unless one names one."""
    from numalab.policy import Policy

    names = {r.name for r in rules}
    if any(names & {u.name for u in Policy.parse(t).user_rules} for t in texts):
        return texts
    return ["+".join([t, *(r.label() for r in rules)]) for t in texts]


def run(args) -> int:
    from numalab.storage import WriteError, write_netcdf
    from numalab.sweeps import CacheWriteWarning, StaleCacheWarning, run_sweep

    kind, grid = build_grid(args)
    out = Path(args.out)  # checked before any work (numalab.cli.add_output)
    cache = False if args.no_cache else (args.cache if args.cache else True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StaleCacheWarning)
        warnings.simplefilter("always", CacheWriteWarning)
        res = run_sweep(
            grid, seeds=_seeds(args.seeds), cache=cache, client=args.scheduler,
            progress=not args.no_progress, kind=kind, workers=args.workers, batch_size=args.batch_size,
        )
    for w in caught:
        if issubclass(w.category, (StaleCacheWarning, CacheWriteWarning)):
            print(f"numalab sweep: note: {w.message}", file=sys.stderr)
        else:  # pragma: no cover - pass other warnings on unchanged
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    ds = res.dataset
    encoding = {v: {"_FillValue": None} for v in ds.variables if ds[v].dtype.kind in "iufc"}
    try:
        write_netcdf(ds, out, encoding=encoding)
    except WriteError as exc:  # the work is not lost when it is cached: say so
        stored = not any(issubclass(w.category, CacheWriteWarning) for w in caught) and res.cache_dir
        hint = (f"; the {res.points} points are in the cache {res.cache_dir}: run the same command again once "
                f"{out} can be written" if stored else "; the points were not cached")
        raise WriteError(exc.errno, f"{exc}{hint}") from None
    dims = ", ".join(f"{d}: {n}" for d, n in ds.sizes.items())
    print(
        f"wrote {out} ({dims}): {res.points} points, {res.computed} computed "
        f"({res.executor}, {res.tasks} tasks), {res.cached} from cache, {res.seconds:.1f} s"
        + (f"; cache {res.cache_dir}" if res.cache_dir else "")
    )
    print(summary(ds, str(out)), end="")
    return 0


#: most tables (one per value of the swept dims besides the compared one) printed at the end
MAX_TABLES = 6


def summary(ds, path: str) -> str:
    """What ``numalab sweep`` prints when it finishes: for the NUMA engine, the mmtests compare
    table along the first swept dim other than the workload (one per value of any further
    swept dim, up to :data:`MAX_TABLES`); for another model, the mean over seeds of its first
    variable, the last swept dim across. Then how to print it again (``numalab report``)."""
    from numalab import report
    from numalab.errors import NumalabValueError
    from numalab.report.common import _swept

    swept = [d for d in ds.dims if d != "seed" and d in _swept(ds)]
    again = f"numalab report {path}"
    if "elsp" in ds.data_vars:
        along = next((d for d in swept if d != "workload"), None)
        if along is None:
            return f"(nothing to compare: no swept dim but the workload; see {again} --help)\n"
        others = [d for d in swept if d not in (along, "workload")]
        combos = list(itertools.product(*(range(ds.sizes[d]) for d in others)))
        if len(combos) > MAX_TABLES:
            return (f"({len(combos)} tables along {along}, one per {' x '.join(others)}: print one with "
                    f"{again} --along {along} " + " ".join(f"--sel {d}={ds[d].values[0]}" for d in others) + ")\n")
        parts = []
        for combo in combos:
            sel = {d: i for d, i in zip(others, combo)}
            head = ", ".join(f"{d}={ds[d].values[i]}" for d, i in sel.items())
            try:
                text = report.mmtests(ds.isel(sel), along=along, monitors=False,
                                      title=f"autonumabench ({head})" if head else None)
            except NumalabValueError as exc:  # a grid the table cannot show: say how to print it
                return f"(no table: {exc}; see {again} --help)\n"
            parts.append(text)
        sels = " ".join(f"--sel {d}=VALUE" for d in others)
        return "\n".join(parts) + f"(again, with the Duration and vmstat tables: {again} --along {along}" + \
            (f" {sels}" if sels else "") + ")\n"
    if not swept or not ds.data_vars:
        return ""
    var = next(iter(ds.data_vars))
    mean = ds[var].mean("seed") if "seed" in ds[var].dims else ds[var]
    cols, rows = swept[-1], swept[:-1]
    keys = list(itertools.product(*(range(ds.sizes[d]) for d in rows)))
    if len(keys) > 64:
        return f"(mean of {var}: {len(keys)} rows; read it with xarray.open_dataset({path!r}))\n"
    label = " ".join(rows) or var
    width = max([len(label)] + [len(" ".join(str(ds[d].values[i]) for d, i in zip(rows, k))) for k in keys])
    lines = [f"# {var} ({ds[var].attrs.get('units', '')}), mean of {ds.sizes.get('seed', 1)} seeds; "
             f"columns: {cols}",
             label.ljust(width) + "".join(f"{str(v):>14}" for v in ds[cols].values)]
    for k in keys:
        row = mean.isel(dict(zip(rows, k)))
        lines.append(" ".join(str(ds[d].values[i]) for d, i in zip(rows, k)).ljust(width)
                     + "".join(f"{float(v):14.6g}" for v in row.values))
    return "\n".join(lines) + "\n"


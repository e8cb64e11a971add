"""``numalab futex``: the futex hash model, speaking the benchmarks' own options and output.

Examples::

    numalab futex numa -c10 -t2 -n0 -N1 --topology 2s-ivb-40 --squash --cpu-node 1 --peer 0:0
    numalab futex hash -t 64 -f 1024 -b 256 --topology 2s-128
    numalab futex sweep --buckets 2,16,256,4096,65536 --mode classic,numa,private \\
        --threads 32,128 --topology 2s-128 --plot futex.png

``numa`` prints the lines the ``futex_numa`` selftest prints (``node:``, ``total:``,
``contenders:``), ``hash`` those of ``perf bench futex hash`` (``Averaged ... operations/sec``,
``Futex hashing: ...``); the numbers come from the model, not from a kernel.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from . import add_output, name_values


def _int_list(text):
    from ..errors import NumalabValueError, check_list

    try:
        return check_list("list", str(text), int, distinct=False)
    except ValueError as exc:
        if isinstance(exc, NumalabValueError) and "empty" in str(exc):
            raise argparse.ArgumentTypeError(f"{text!r} has an empty item; allowed: comma-separated integers") from None
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "futex", help="futex hash-bucket contention: futex_numa, perf bench futex hash, sweeps",
        description="Model futex hash-bucket contention (classic, per-node numa and private hashes).",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("::", 1)[1].split("``numa``")[0],
    )
    sub = p.add_subparsers(dest="futex_command", metavar="PROGRAM")

    def common(q, mode_default):
        q.add_argument("--topology", default=None, help="topology preset (see Topology.presets())")
        q.add_argument("--mode", default=mode_default, help="kernel mode: classic, numa (6.16), private (6.17) "
                       "or package.module:NAME (a HashMode of your own)")
        q.add_argument("--refcount", default=None, help="private-hash refcount: percpu (6.17), rcuref or immutable (6.16 code)")
        q.add_argument("--squash", action="store_true", help="FUTEX_SQUASH debug patch: one bucket per table")
        q.add_argument("--hash", default="uniform", help="uniform (random per run) or jhash2 (kernel hash of modelled keys)")
        q.add_argument("--method", default="mva", help="mva (default) or simulation")
        q.add_argument("--seed", type=int, default=0, help="run seed (the mm/ASLR randomness)")
        q.add_argument("--oversubscribe", action="store_true", help="allow more threads than CPUs")
        cost_argument(q)

    def cost_argument(q):
        q.add_argument("--cost", action="append", default=None, metavar="NAME=VALUE",
                       help="set a cost constant, repeatable (e.g. smt_shared_l1=0; see docs/futex.md, "
                            "'Defaults and their sources')")

    n = sub.add_parser("numa", help="the futex_numa selftest (tools/testing/selftests/futex/functional)")
    n.add_argument("-c", dest="contenders", type=int, default=0, help="contender threads (default 0)")
    n.add_argument("-t", dest="threads", type=int, default=2, help="lock threads (default 2)")
    n.add_argument("-s", dest="sleeps", type=int, default=10, help="run time in seconds (default 10)")
    n.add_argument("-n", dest="nanos", type=float, default=50000, help="nanosleep ns in/after the critical section (default 50000)")
    n.add_argument("-N", dest="node", nargs="?", type=int, const=-1, default=None,
                   help="FUTEX2_NUMA; attached value = the lock's node word (-N1); plain -N = first touch")
    n.add_argument("--cpu-node", type=int, default=0, help="numactl -N/-m node the process runs on (default 0)")
    n.add_argument("--peer", action="append", default=[], metavar="CPU_NODE[:N]",
                   help="also run the same program on CPU_NODE with node word N (e.g. 1:0); repeatable")
    common(n, "numa")

    h = sub.add_parser("hash", help="perf bench futex hash (tools/perf/bench/futex-hash.c)")
    h.add_argument("-t", "--threads", type=int, default=None, help="threads (default: all CPUs)")
    h.add_argument("-f", "--futexes", type=int, default=1024, help="futexes per thread (default 1024)")
    h.add_argument("-b", "--buckets", type=int, default=-1, help="private-hash slots via prctl (0 = global hash)")
    h.add_argument("-S", "--shared", action="store_true", help="shared (non-PRIVATE) futexes")
    h.add_argument("-I", "--immutable", action="store_true", help="immutable private hash (6.16 code)")
    h.add_argument("-r", "--runtime", type=int, default=10, help="seconds (default 10)")
    h.add_argument("-s", "--silent", action="store_true", help="silent: no per-thread lines")
    common(h, "private")

    s = sub.add_parser("sweep", help="throughput against bucket counts per mode; optional figure")
    s.add_argument("--buckets", type=_int_list, default=[2 ** k for k in range(1, 18)], help="comma-separated bucket counts")
    s.add_argument("--mode", default="classic,numa,private",
                   help="comma-separated kernel modes (classic, numa, private, package.module:NAME)")
    s.add_argument("--threads", type=_int_list, default=None, help="comma-separated thread counts")
    s.add_argument("--topology", default=None, help="topology preset (default 2s-128)")
    s.add_argument("--futexes", type=int, default=1024, help="futexes per thread (default 1024)")
    s.add_argument("--seeds", type=int, default=8, help="runs per point (default 8)")
    s.add_argument("--method", default="mva", help="mva (default) or simulation")
    cost_argument(s)
    add_output(s, "--plot", figure=True, default=None, metavar="FILE.png",
               help="write the throughput-vs-buckets figure (.png, .pdf, .svg, ...)")
    add_output(s, "--out", default=None, metavar="FILE.nc", help="write the Dataset (h5netcdf)")


def run(args) -> int:
    cmd = getattr(args, "futex_command", None)
    if cmd is None:
        print("numalab futex: choose a program: numa, hash or sweep (numalab futex --help)", file=sys.stderr)
        return 2
    return {"numa": _run_numa, "hash": _run_hash, "sweep": _run_sweep}[cmd](args)


def _costs(args):
    """The FutexCosts the ``--cost NAME=VALUE`` items give (every name and value checked here,
    before any run)."""
    from ..futex.costs import COST_NAMES, coerce_costs

    return coerce_costs(name_values("--cost", args.cost, COST_NAMES))


def _run_numa(args) -> int:
    from .. import futex
    from ..errors import check_choice, check_seed

    check_choice("--method", args.method, futex.METHODS)
    check_seed("--seed", args.seed)
    costs = _costs(args)
    if args.method == "simulation" and args.contenders:
        # the event simulation measures every thread from its 50th operation on; futex_numa's
        # lock threads (each holding the lock across a nanosleep) finish fewer than that while
        # the contenders finish theirs, whatever the number of operations asked
        from ..errors import NumalabValueError

        raise NumalabValueError(f"--method simulation with -c {args.contenders}: the event simulation cannot measure "
                                "futex_numa's lock threads beside contenders (they finish too few operations); use "
                                "--method mva (the default), or -c 0")

    topo = args.topology or "2s-ivb-40"
    numa = args.node is not None
    kw = dict(contenders=args.contenders, threads=args.threads, nanos=args.nanos, sleeps=args.sleeps,
              mode=args.mode, squash=args.squash, hash=args.hash, oversubscribe=args.oversubscribe,
              refcount=args.refcount or "percpu")
    procs = [futex.futex_numa(topo, numa=numa, node=-1 if args.node is None else args.node,
                              cpu_node=args.cpu_node, **kw)]
    for spec in args.peer:
        cpu, _, nd = spec.partition(":")
        try:
            cpu_node, node = int(cpu), (int(nd) if nd else -1)
        except ValueError:
            from ..errors import NumalabValueError

            raise NumalabValueError(f"--peer {spec!r}: allowed: CPU_NODE or CPU_NODE:N with integers") from None
        procs.append(futex.futex_numa(topo, numa=numa or bool(nd), node=node, cpu_node=cpu_node, **kw))
    wl = futex.together(*procs) if len(procs) > 1 else procs[0]
    ds = futex.simulate(wl, seeds=[args.seed], method=args.method, costs=costs).isel(seed=0)
    _measured(procs[0].topology, costs)
    for p, w in enumerate(procs):
        if len(procs) > 1:
            pr = w.params
            print(f"# process {p}: numactl -N {pr['cpu_node']} -m {pr['cpu_node']} futex_numa -c{pr['contenders']} "
                  f"-t{pr['threads']} -n{int(pr['nanos'])} -s{pr['sleeps']}"
                  + (f" -N{pr['node']}" if pr['numa'] and pr['node'] >= 0 else " -N" if pr['numa'] else ""))
        pr = w.params
        if pr["numa"] and pr["threads"]:
            node = pr["node"] if pr["node"] >= 0 else pr["cpu_node"]
            for _ in range(pr["threads"]):
                print(f"node: {node}")
        print(f"total: {int(ds['total'].values[p])}")
        if pr["contenders"]:
            print(f"contenders: {int(ds['contenders'].values[p])}")
    return 0


def _measured(topology, costs) -> None:
    """Which constants the run takes from the topology's measured kernel costs (``numalab
    probe``), on stderr: a probed topology file changes the futex model's constants."""
    from ..futex.costs import measured_note
    from ..topology import Topology

    _note(measured_note(Topology.coerce(topology), costs))


def _note(note) -> None:
    """The solver's caveat (:func:`numalab.futex.method_note`) on stderr, so that stdout keeps
    the program's own format."""
    if note:
        print(f"numalab futex: note: {note}", file=sys.stderr)


def _run_hash(args) -> int:
    import numpy as np

    from .. import futex
    from ..errors import check_choice, check_seed

    check_choice("--method", args.method, futex.METHODS)
    check_seed("--seed", args.seed)
    costs = _costs(args)

    wl = futex.perf_bench_hash(args.topology or "2s-128", threads=args.threads, futexes=args.futexes,
                               buckets=args.buckets, shared=args.shared, immutable=args.immutable,
                               runtime=args.runtime, mode=args.mode, refcount=args.refcount,
                               squash=args.squash, hash=args.hash, oversubscribe=args.oversubscribe)
    out = futex.solve_points([wl], [args.seed], costs, args.method, 400, "exponential")
    _note(futex.method_note([wl], args.method))
    _measured(wl.topology, costs)
    rates = np.floor(out["thread_rate"][0])  # per-thread ops/sec, as perf divides ops by seconds
    p = wl.params
    print("# Running 'futex/hash' benchmark:")
    print(f"Run summary [PID {os.getpid()}]: {p['threads']} threads, each operating on {p['futexes']} "
          f"[{'shared' if p['shared'] else 'private'}] futexes for {p['runtime']} secs.")
    print()
    if not args.silent:
        base = 0x7F0000000000
        for i, r in enumerate(rates):
            lo = base + int(wl.fx_offset[i * p["futexes"]])
            hi = base + int(wl.fx_offset[(i + 1) * p["futexes"] - 1])
            if p["futexes"] == 1:
                print(f"[thread {i:2d}] futex: {lo:#x} [ {int(r)} ops/sec ]")
            else:
                print(f"[thread {i:2d}] futexes: {lo:#x} ... {hi:#x} [ {int(r)} ops/sec ]")
        print()
    avg = rates.mean()
    # perf's stddev_stats(): standard error of the mean; rel_stddev_stats(): in % of the mean
    sem = math.sqrt(rates.var(ddof=1) / rates.size) if rates.size > 1 else 0.0
    print(f"Averaged {int(avg)} operations/sec (+- {100.0 * sem / avg if avg else 0.0:.2f}%), "
          f"total secs = {p['runtime']}")
    if wl.mode.pr_futex_hash:  # the line exists from perf 6.16 on, for kernels with the prctl
        layout = wl.layout()
        # PR_FUTEX_HASH_GET_SLOTS reports the private table even when -S keys bypass it
        if not wl.mode.private_tables or p["buckets"] == 0:
            print("Futex hashing: global hash")
        elif p["buckets"] > 0:
            print(f"Futex hashing: {p['buckets']} hash buckets {'(immutable)' if p['immutable'] else ''}".rstrip())
        else:
            print(f"Futex hashing: auto resized to {layout.private_slots[0]} buckets")
    return 0


def _run_sweep(args) -> int:
    from .. import futex
    from ..errors import NumalabValueError, check_choice, check_distinct, check_int, check_list

    check_choice("--method", args.method, futex.METHODS)
    check_int("--seeds", args.seeds, lo=1, hi=10000)
    costs = _costs(args)
    modes = check_list("--mode", args.mode, distinct=False)
    if not args.buckets:
        raise NumalabValueError("--buckets is an empty list; give at least one bucket count")
    check_distinct("--mode", modes)
    check_distinct("--buckets", args.buckets)
    if args.threads is not None:
        if not args.threads:
            raise NumalabValueError("--threads is an empty list; give at least one thread count")
        check_distinct("--threads", args.threads)
    threads = args.threads if args.threads and len(args.threads) > 1 else (args.threads[0] if args.threads else None)
    ds = futex.sweep(buckets=list(args.buckets), mode=modes, threads=threads, seeds=args.seeds,
                     topology=args.topology or "2s-128", method=args.method, futexes=args.futexes, costs=costs)
    _note(ds.attrs.get("method_note"))
    _measured(args.topology or "2s-128", costs)
    mean = ds["ops_per_s_per_thread"].mean("seed")
    from ..plots import futex_threads

    tlist = list(ds["threads"].values) if "threads" in mean.dims else [None]
    width = max(len(str(b)) for b in ds["buckets"].values) + 2
    for t in tlist:
        sub = mean.sel(threads=t) if t is not None else mean
        print(f"# ops/s per thread (mean of {ds.sizes['seed']} seeds), {ds.attrs['workload']}, "
              f"{ds.attrs.get('topology_name')}, {t if t is not None else futex_threads(ds)} threads")
        print("buckets".rjust(width) + "".join(m.rjust(12) for m in modes))
        for b in ds["buckets"].values:
            print(str(b).rjust(width) + "".join(f"{float(sub.sel(mode=m, buckets=b)):12.0f}" for m in modes))
    for path, write in ((args.out, _write_nc), (args.plot, _write_png)):
        if path:
            write(ds, path)
            print(f"wrote {path}")
    return 0


def _write_png(ds, path):
    from ..plots import futex_buckets, save

    save(futex_buckets(ds), path, dpi=120)


def _write_nc(ds, path):
    from ..storage import write_netcdf

    write_netcdf(ds, path)

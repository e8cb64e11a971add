"""``numalab probe``: describe this machine as a topology file, with measured bandwidths.

Reads the nodes, CPUs, SMT, memory and SLIT from /sys (Topology.from_host), then measures with
numpy threads pinned to each node's CPUs: every node's fill (libc's memset of zeros, as the
benchmarks' bzero) and read bandwidth with all its CPUs and with one thread, its fill of ones, and
the read bandwidth of every node's memory from every other node's CPUs; then the core clock with
one core and with every core busy (cpufreq, where the machine has it), a null system call and a
futex operation beyond it (what the futex model's kernel constants stand for). Writes a topology
file that --topology, nl.Topology.load, sweeps, the futex model and the explorers accept; every
measured field's provenance says how, when and where it was measured.
"""

from __future__ import annotations

import argparse

from . import add_output

HELP = ("measure this machine's memory bandwidths per node, its core clock and its kernel's syscall and futex "
        "costs, and write a topology file (--topology PATH)")

#: a zero fill this much faster than a fill of ones is the machine's, not the repeats' noise: a margin
#: over that noise, far below the 2.6-3.1 x the development VM's zero fill showed over its fill of ones
#: in four probes (docs/machines.md)
ZERO_STORE_GAIN = 1.15

#: the fields a probe sets, with what it measured for them
MEASURED = {
    "node_bw_GBps": "read bandwidth of all the node's CPUs on its memory (int64 add.reduce)",
    "write_efficiency": "fill / read bandwidth of all the node's CPUs on its memory (memset of zeros over zeros, "
                        "as the benchmarks' bzero, over int64 add.reduce)",
    "thread_bw_GBps": "one thread's fill bandwidth on its node's memory (memset of zeros over zeros)",
    "link_bw_GBps": "the slowest read of the node's memory by all CPUs of another node",
    "remote_latency_ns": "the local latency x one thread's local/remote read ratio at the largest distance",
}


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("probe", help=HELP, description=" ".join(__doc__.split("\n\n")[1].split()))
    add_output(p, "--out", default="topology-host.json",
                   help="topology file to write (JSON; default: %(default)s)")
    p.add_argument("--buffer-mb", type=int, default=None,
                   help="MiB of buffers per node, shared by its CPUs (default: 1024, at most a quarter of "
                        "the node's free memory)")
    p.add_argument("--thread-mb", type=int, default=None, help="MiB of the one-thread buffer (default: 512)")
    p.add_argument("--repeats", type=int, default=None, help="repeats of each measurement, best kept (default: 5)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(command="probe")
    return p


def run(args) -> int:
    from .. import machine
    from ..errors import check_int
    from ..topology import Topology

    total = check_int("--buffer-mb", args.buffer_mb if args.buffer_mb is not None else machine.PROBE_DEFAULT_MB,
                      lo=16, hi=1 << 20)
    single = check_int("--thread-mb", args.thread_mb if args.thread_mb is not None else machine.PROBE_SINGLE_MB,
                       lo=16, hi=1 << 20)
    repeats = check_int("--repeats", args.repeats if args.repeats is not None else machine.PROBE_REPEATS, lo=1, hi=100)
    data = probe_host("/", total_mb=total, single_mb=single, repeats=repeats, progress=not args.no_progress)
    topo = Topology.from_dict(data, where="the probed machine")
    topo.save(args.out, extra={"probe": data["probe"], "host": data["host"]})
    print(summary(topo, data["probe"]))
    print(f"wrote {args.out}")
    return 0


def probe_host(root="/", *, total_mb=None, single_mb=None, repeats=None, progress=False, measure=None,
               clock=None, syscall=None, futex=None) -> dict:
    """This machine's topology file content with measured bandwidths: :func:`numalab.machine.
    read_host`, then :func:`numalab.machine.probe_bandwidth` (``measure``) on its nodes, which
    sets per node (:data:`MEASURED`)

    * ``node_bw_GBps``: the read bandwidth of all its CPUs on its own memory (a node without
      CPUs: the best read of its memory by another node's CPUs);
    * ``thread_bw_GBps``: one thread's fill bandwidth on its own memory (the model's threads
      write);
    * ``link_bw_GBps``: the slowest read of its memory by all CPUs of another node (on a
      multi-socket machine, the interconnect most remote traffic crosses);
    * ``remote_latency_ns``: its local latency times one thread's local/remote read ratio at
      the largest distance (``costs.progress_rates`` scales one thread's bandwidth by the
      latency ratio, so this is the latency that ratio implies).

    Then :func:`numalab.machine.probe_clock` (``clock``) sets ``all_core_ghz`` and ``turbo_ghz``
    from cpufreq under load; without cpufreq they stay unset, with a warning. Last,
    :func:`numalab.machine.probe_syscall` (``syscall``) times a null system call, the entry and
    exit every futex operation pays, and :func:`numalab.machine.probe_futex` (``futex``) a
    wrong-value ``FUTEX_WAIT`` beyond it, private and shared: they set ``syscall_ns``,
    ``futex_private_ns`` and ``futex_shared_ns`` (:func:`numalab.machine.apply_kernel`), from which the futex
    model takes its kernel-path constants (``FutexCosts.resolve``).

    A figure that could not be measured (one node: no remote pair) keeps the host's value, with
    a warning. The measurements are the ``"probe"`` section, with the date and the host."""
    import socket

    from .. import machine
    from ..topology import Topology

    data = machine.read_host(root)
    base = Topology.from_dict(data, where="the host")
    host = data["host"]
    ids = host["node_ids"]
    cpus = {n: host["node_cpus"][str(n)] for n in ids}
    cpu_nodes = [n for n in ids if cpus[n]]
    # the steps of probe_bandwidth: per node its placing, its 5 local measurements if it has CPUs,
    # and one read of its memory from every other node with CPUs; then the clock's two, the syscall and the futex
    bar = _bar(progress, sum(1 + 5 * bool(cpus[n]) + len([m for m in cpu_nodes if m != n]) for n in ids) + 4)
    kw = {k: v for k, v in (("total_mb", total_mb), ("single_mb", single_mb), ("repeats", repeats)) if v is not None}
    try:
        res = (measure or machine.probe_bandwidth)(cpus, mem_free_GiB=machine.mem_free_gib(root, ids),
                                                   progress=bar.step if bar else None, **kw)
        res["clock"] = (clock or machine.probe_clock)(cpus, root, progress=bar.step if bar else None)
        if bar:
            bar.step("null system call")
        res["syscall"] = (syscall or machine.probe_syscall)()
        if bar:
            bar.step("futex operation")
        res["futex"] = (futex or machine.probe_futex)()
    finally:
        if bar:
            bar.close()
    when = machine.utc_minute()
    res.update(date=when, host=socket.gethostname(), model_name=host["model_name"])
    where = f"numalab probe on {res['host']} ({host['model_name'] or 'unknown CPU'}), {when}"
    warnings = [w for w in data["warnings"] if "numalab probe measures" not in w] + res["warnings"]
    data["warnings"] = (warnings + apply_probe(data, base, res, ids, where) + apply_clock(data, res["clock"], where)
                        + machine.apply_kernel(data, res["syscall"], res["futex"], where))
    data["probe"] = res
    data["source"] = f"{data['source']}; bandwidths measured by numalab probe, {when}"
    return data


class _bar:
    """A tqdm bar of the measurements done, its text the one running."""

    def __init__(self, enabled, total):
        from tqdm.auto import tqdm

        self.t = tqdm(total=total, desc="numalab probe", unit="step", disable=not enabled)
        self.running = False

    def step(self, text):
        if self.running:
            self.t.update(1)
        self.running = True
        self.t.set_postfix_str(text)

    def close(self):
        if self.running:
            self.t.update(1)
        self.t.close()


def apply_probe(data: dict, base, res: dict, ids: list, where: str) -> list[str]:
    """Set the measured fields of ``data`` (a read_host result, ``base`` its Topology) from
    ``res`` (a probe_bandwidth result); returns the warnings for the fields it could not set."""
    per = {f: base.per_node(f).tolist() for f in (*MEASURED, "local_latency_ns")}
    bands = {f: [] for f in MEASURED}
    for i, n in enumerate(ids):
        rec = res["nodes"].get(str(n), {})
        into = [r for r in res["remote"] if r["mem_node"] == n]
        if "read_GBps" in rec:
            per["node_bw_GBps"][i] = rec["read_GBps"]
            bands["node_bw_GBps"].append(rec["read_band"])
            if "fill_GBps" in rec and rec["read_GBps"] > 0:
                # a store stream's share of the read bandwidth, at most 1 (Topology.write_efficiency)
                per["write_efficiency"][i] = round(min(1.0, rec["fill_GBps"] / rec["read_GBps"]), 3)
                lo, hi = (min(1.0, f / r) for f, r in ((rec["fill_band"][0], rec["read_band"][1]),
                                                       (rec["fill_band"][1], rec["read_band"][0])))
                bands["write_efficiency"].append([round(lo, 3), round(max(lo, hi), 3)])
            per["thread_bw_GBps"][i] = rec["thread_fill_GBps"]
            bands["thread_bw_GBps"].append(rec["thread_fill_band"])
        elif into:
            best = max(into, key=lambda r: r["read_GBps"])
            per["node_bw_GBps"][i] = best["read_GBps"]
            bands["node_bw_GBps"].append(best["read_band"])
        if not into:
            continue
        worst = min(into, key=lambda r: r["read_GBps"])
        per["link_bw_GBps"][i] = worst["read_GBps"]
        bands["link_bw_GBps"].append(worst["read_band"])
        far = max(into, key=lambda r: base.distance[ids.index(r["cpu_node"])][i])
        local = res["nodes"].get(str(far["cpu_node"]), {}).get("thread_read_GBps")
        if local:
            # remote >= local latency: a remote read measured faster (noise) is the local latency
            per["remote_latency_ns"][i] = round(per["local_latency_ns"][i] * max(1.0, local / far["thread_read_GBps"]), 1)
            bands["remote_latency_ns"].append([per["remote_latency_ns"][i]] * 2)
    warnings = [f"write_efficiency: node {n}'s fill is {rec['fill_GBps'] / rec['read_GBps']:.2f} x its read "
                "bandwidth; stored as 1, the field's bound (the model's controllers write at most what they read)"
                for n in ids if fill_above_read(rec := res["nodes"].get(str(n), {}))]
    for f, text in MEASURED.items():
        if not bands[f]:
            why = "one node: no remote pair" if len(ids) == 1 else "no measurement"
            warnings.append(f"{f}: not measured ({why}); kept from the host description")
            continue
        data["topology"][f] = per[f]
        data["provenance"][f] = {
            "kind": "derived" if f == "remote_latency_ns" else "measurement",
            "source": f"{where}: {text}, best of {res['repeats']} repeats",
            "band": [min(b[0] for b in bands[f]), max(b[1] for b in bands[f])],
            "band_source": f"the range of the repeats over all nodes ({where})"}
    return warnings


def fill_above_read(rec: dict) -> bool:
    """Whether a node's measured fill beats its read bandwidth (a probe_bandwidth node record):
    its write_efficiency is then stored at the field's bound, 1, with a warning."""
    return rec.get("fill_GBps", 0.0) > rec.get("read_GBps", float("inf"))


def apply_clock(data: dict, clk: dict, where: str) -> list[str]:
    """Set ``all_core_ghz`` and ``turbo_ghz`` of ``data`` from ``clk`` (a probe_clock result)
    when it measured them; returns its warnings. A one-core clock read below the all-core one
    (turbo off, or noise) is taken as the all-core clock: the Topology requires turbo >= all-core."""
    if "all_core_GHz" not in clk:
        return list(clk["warnings"])
    all_core = round(clk["all_core_GHz"], 2)
    turbo = round(max(clk["turbo_GHz"], clk["all_core_GHz"]), 2)
    data["topology"].update(all_core_ghz=all_core, turbo_ghz=turbo)
    how = (f"cpufreq scaling_cur_freq (the APERF/MPERF average) after {clk['spin_s']} s of one pinned process per "
           "busy core spinning an integer loop")
    data["provenance"]["all_core_ghz"] = {
        "kind": "measurement", "source": f"{where}: {how} on every core ({clk['cores']}), their mean",
        "band": clk["all_core_band"], "band_source": f"the slowest and fastest core ({where})"}
    data["provenance"]["turbo_ghz"] = {
        "kind": "measurement", "source": f"{where}: {how} on CPU {clk['turbo_cpu']} alone"
                                         + ("" if turbo == round(clk["turbo_GHz"], 2) else
                                            f" (read {clk['turbo_GHz']} GHz, below the all-core clock: taken as it)")}
    return list(clk["warnings"])


def _kernel_lines(topo, sc: dict, fx: dict) -> list[str]:
    """The kernel costs measured, and the futex model's constants that follow from them."""
    from ..futex import UNMEASURED, FutexCosts

    c = FutexCosts().resolve(topo)
    lines = [f"null system call: {sc['null_syscall_ns']:.0f} ns ({sc['band'][0]:.0f}-{sc['band'][1]:.0f}): the futex "
             f"model's syscall_ns on this topology (stated default {UNMEASURED['syscall_ns']:g})"]
    if "skipped" in fx:
        return lines + [f"futex operation: not measured ({fx['skipped']})"]
    return lines + [
        f"futex operation beyond it: private {fx['futex_private_ns']:.0f} ns ({fx['private_band'][0]:.0f}-"
        f"{fx['private_band'][1]:.0f}), shared {fx['futex_shared_ns']:.0f} ns ({fx['shared_band'][0]:.0f}-"
        f"{fx['shared_band'][1]:.0f}): the futex model's futex_path_ns {c.futex_path_ns:.0f} (stated "
        f"{UNMEASURED['futex_path_ns']:g}) and gup_ns {c.gup_ns:.0f} (stated {UNMEASURED['gup_ns']:g}) on this topology"]


def summary(topo, probe: dict) -> str:
    """The measured bandwidths, one line per node and per remote pair, and the warnings."""
    lines = [f"{topo.name}: {topo.nodes} node(s), {topo.ncpus} CPUs ({topo.source.split(';')[0]})",
             f"{'node':>4} {'cpus':>5} {'mem GiB':>8} {'fill':>7} {'read':>7} {'1-thread fill':>14} "
             f"{'1-thread read':>14}   GB/s, best of {probe['repeats']}"]
    for n, rec in probe["nodes"].items():
        i = int(n) if int(n) < topo.nodes else 0
        lines.append(f"{n:>4} {len(rec['cpus']):>5} {topo.per_node('mem_per_node_GiB')[i]:>8.1f} "
                     + " ".join(f"{rec.get(k, float('nan')):>{w}.2f}" for k, w in
                                (("fill_GBps", 7), ("read_GBps", 7), ("thread_fill_GBps", 14), ("thread_read_GBps", 14))))
    for r in probe["remote"]:
        lines.append(f"node {r['cpu_node']} CPUs reading node {r['mem_node']}: {r['read_GBps']:.2f} GB/s "
                     f"(one thread {r['thread_read_GBps']:.2f})")
    fills = [(rec["fill_GBps"], rec["read_GBps"]) for rec in probe["nodes"].values() if "fill_GBps" in rec]
    if fills:
        capped = any(fill_above_read(rec) for rec in probe["nodes"].values())
        lines.append("fill / read bandwidth: " + ", ".join(f"{f / r:.2f}" for f, r in fills)
                     + " (the topology's write_efficiency: bzero's share of node_bw_GBps"
                     + (", stored as at most 1, its bound)" if capped else ")"))
    zeros = [(n, rec["fill_GBps"] / rec["fill_nonzero_GBps"]) for n, rec in probe["nodes"].items()
             if rec.get("fill_nonzero_GBps", 0) > 0 and "fill_GBps" in rec]
    if zeros:
        lines.append("zeros over zeros / ones over ones fill: " + ", ".join(f"{z:.2f}" for _, z in zeros)
                     + " (above 1: this machine writes zeros faster than data)")
        fast = [n for n, z in zeros if z > ZERO_STORE_GAIN]
        if fast:
            lines.append(f"note: node(s) {', '.join(fast)} fill zeros over zeros more than {ZERO_STORE_GAIN:g} x "
                         "faster than ones: autonuma-benchmark's bzero loops get that speed and write_efficiency "
                         "is theirs; a workload that writes changing data sustains the ones' fill_nonzero_GBps")
    lines += _kernel_lines(topo, probe["syscall"], probe["futex"])
    clk = probe.get("clock", {})
    if "all_core_GHz" in clk:
        lines.append(f"core clock: {clk['turbo_GHz']:.2f} GHz with one core busy, {clk['all_core_GHz']:.2f} GHz "
                     f"({clk['all_core_band'][0]:.2f}-{clk['all_core_band'][1]:.2f}) with all {clk['cores']} busy "
                     f"(cpufreq {clk['driver'] or 'driver unknown'}, governor {clk['governor'] or 'unknown'})")
    took = probe["seconds"] + sum(part.get("seconds", 0.0) for part in (clk, probe["syscall"], probe["futex"]))
    lines.append(f"measured in {took:.1f} s")
    lines += [f"warning: {w}" for w in topo.warnings]
    return "\n".join(lines)

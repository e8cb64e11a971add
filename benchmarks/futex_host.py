"""The futex model against ``perf bench futex hash`` on this machine (not a test).

Runs ``perf bench futex hash`` for a small grid (threads, futexes per thread, private or ``-S``
shared futexes; the kernel's default hash, as a ``perf`` without ``-b`` leaves it), and the model
of the same runs on this machine as ``Topology.from_host()`` describes it, three times: with the
documented default constants; with one constant measured here, the null system call
(``numalab.machine.probe_syscall``), as ``syscall_ns``; and on the Topology with the kernel's
costs measured as ``numalab probe`` measures them (``Topology.from_host(kernel_costs=True)``: the
null call and the futex operation beyond it, ``futex_private_ns``, ``futex_shared_ns``, from which
``FutexCosts.resolve`` derives ``futex_path_ns`` and ``gup_ns``). Nothing is fitted to perf's
figures: each column says how much of the gap the machine's own measurements close, from one
uncontended thread, for the contended and many-futex cells. docs/futex.md quotes its output
("An unseen machine: a Zen 4 guest").

Run: ``python benchmarks/futex_host.py [--threads 1,2] [--futexes 1,1024] [--runtime 3]
[--repeats 2] [--seeds 4]`` (needs ``perf``, Debian's ``linux-perf``; about 10 s a cell).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess

_AVERAGED = re.compile(r"Averaged\s+(\d+)\s+operations/sec")


def parse_perf(text: str) -> float:
    """The ``Averaged N operations/sec`` of one ``perf bench futex hash`` run (per thread)."""
    m = _AVERAGED.search(text)
    if not m:
        raise ValueError(f"no 'Averaged ... operations/sec' line in perf's output: {text.strip()[-200:]!r}")
    return float(m.group(1))


def perf_run(threads: int, futexes: int, shared: bool, runtime: int, perf: str = "perf") -> float:
    cmd = [perf, "bench", "futex", "hash", "-t", str(threads), "-f", str(futexes), "-r", str(runtime)]
    if shared:
        cmd.append("-S")
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=runtime + 60)
    return parse_perf(out.stdout + out.stderr)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    ap.add_argument("--threads", type=ints, default=[1, 2])
    ap.add_argument("--futexes", type=ints, default=[1, 1024])
    ap.add_argument("--runtime", type=int, default=3, help="seconds a perf run (-r)")
    ap.add_argument("--repeats", type=int, default=2, help="perf runs a cell (their mean is the measurement)")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--perf", default="perf")
    a = ap.parse_args(argv)
    if shutil.which(a.perf) is None:
        ap.error(f"--perf={a.perf!r} is not on PATH (Debian: apt-get install linux-perf)")
    if min(a.threads) < 1 or min(a.futexes) < 1 or a.runtime < 1 or a.repeats < 1 or a.seeds < 1:
        ap.error("--threads, --futexes, --runtime, --repeats and --seeds take positive integers")

    import numalab as nl
    from numalab.futex import UNMEASURED

    topo = nl.Topology.from_host()
    probed = nl.Topology.from_host(kernel_costs=True)   # numalab probe's syscall and futex figures, alone
    if probed.futex_private_ns is None:
        ap.error(f"the futex probe cannot run here: {'; '.join(probed.warnings)}")
    measured = {"syscall_ns": probed.syscall_ns}
    derived = nl.futex.FutexCosts().resolve(probed)
    band = {f: probed.provenance()[f].band for f in ("syscall_ns", "futex_private_ns", "futex_shared_ns")}
    print(f"{topo.name}: {topo.nodes} node(s), {topo.ncpus} CPUs; null system call {probed.syscall_ns:.0f} ns "
          f"({band['syscall_ns'][0]:.0f}-{band['syscall_ns'][1]:.0f}), the model's default syscall_ns "
          f"{UNMEASURED['syscall_ns']:.0f}; futex operation beyond it: private {probed.futex_private_ns:.0f} ns "
          f"({band['futex_private_ns'][0]:.0f}-{band['futex_private_ns'][1]:.0f}), shared "
          f"{probed.futex_shared_ns:.0f} ns ({band['futex_shared_ns'][0]:.0f}-{band['futex_shared_ns'][1]:.0f}): "
          f"futex_path_ns {derived.futex_path_ns:.0f} (default {UNMEASURED['futex_path_ns']:.0f}), gup_ns "
          f"{derived.gup_ns:.0f} (default {UNMEASURED['gup_ns']:.0f})")
    print("| futexes | T | perf bench, ops/s per thread | model, default | ratio | model, measured syscall | ratio "
          "| model, probed kernel | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for shared in (False, True):
        for f in a.futexes:
            for t in a.threads:
                pub = sum(perf_run(t, f, shared, a.runtime, a.perf) for _ in range(a.repeats)) / a.repeats
                wl = nl.futex.perf_bench_hash(topo, threads=t, futexes=f, shared=shared)
                d = float(nl.futex.simulate(wl, seeds=a.seeds).ops_per_s_per_thread.mean())
                m = float(nl.futex.simulate(wl, seeds=a.seeds, costs=measured).ops_per_s_per_thread.mean())
                wp = nl.futex.perf_bench_hash(probed, threads=t, futexes=f, shared=shared)
                k = float(nl.futex.simulate(wp, seeds=a.seeds).ops_per_s_per_thread.mean())
                kind = f"{f} {'shared (-S)' if shared else 'private'}"
                print(f"| {kind} | {t} | {pub:,.0f} | {d:,.0f} | {d / pub:.2f} | {m:,.0f} | {m / pub:.2f} "
                      f"| {k:,.0f} | {k / pub:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

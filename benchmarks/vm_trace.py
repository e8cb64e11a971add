"""numa01 under a real kernel's NUMA balancing, in a virtual machine, beside the model's account
of the same machine (a trace; figures printed, not a test; docs/fidelity.md, "A real kernel's
scanner in a virtual machine").

The engine models ``task_numa_work``'s VMA filters from the kernel's code paths (spec
kernel-numa-balancing.md). This runs the kernel's own: a distribution kernel booted in QEMU on
two emulated NUMA nodes, with ``benchmarks/vm/numa01.c`` (numa01 made small: ``--threads``
writers a process, ``--size-mib`` a process, the MPOL_BIND init to node ``--node-b``) as the
only program. ``benchmarks/vm/init`` enables the ``sched_skip_vma_numa`` tracepoint (one event
per VMA the scanner skips, with the reason: the model's ``skip_*`` counters), samples
``/proc/vmstat`` and each buffer's ``numa_maps`` while numa01 runs, and prints them on the
serial console.

The emulated machine has no NUMA latency (every node's memory is the host's) and its CPUs are
QEMU's software emulation (TCG) sharing the host's cores, so its seconds say nothing about a
server's; what the kernel decides does not depend on that. ``--model`` describes the virtual
machine to the model with the rate it measures itself (the same numa01 with balancing off:
``numa_balancing=0``), simulates the same workload under the profile of the kernel's version
(6.1 -> ``pre-6.4``, 6.12 -> ``6.12``) and prints both side by side.

Kernels: Debian's, unpacked, not installed (nothing of a kernel is committed)::

    apt-get install qemu-system-x86 busybox-static
    apt-get download linux-image-6.1.0-57-amd64          # bookworm; 6.12 from bookworm-backports:
    apt-get download linux-image-6.12.95+deb12-amd64-unsigned
    for d in linux-image-*.deb; do dpkg -x $d /tmp/k; done

    python benchmarks/vm_trace.py --kernel /tmp/k/boot/vmlinuz-6.1.0-57-amd64 \\
        --kernel /tmp/k/boot/vmlinuz-6.12.95+deb12-amd64 --model
    python benchmarks/vm_trace.py --kernel ... --thread-alloc --loops 600   # numa01_THREAD_ALLOC

The history length (``--history N``) needs a test kernel, built outside this repository (no
kernel source is kept here): Debian's ``linux-source-6.12`` with ``vma_numab_state.pids_active``
made four windows, the hinting fault setting its bit in the newest, the rotation in
``task_numa_work`` shifting every window one older (RFC 2023 patch 4's ring, written as a shift),
and ``vma_is_accessed`` ORing the newest N, N read from a boot parameter ``numa_pid_hist=`` (1-4,
default 2, which is mainline's test) that the kernel logs when it takes it. One build then runs
the same kernel at every N; ``x86_64_defconfig`` plus NUMA, NUMA balancing, THP always, HZ=250,
voluntary preemption and event tracing, as Debian's 6.12 sets them (docs/fidelity.md, "The
history length in a real kernel")::

    python benchmarks/vm_trace.py --kernel bzImage --cpus 8 --history 2 --model
    python benchmarks/vm_trace.py --kernel bzImage --cpus 8 --history 4 --model

Placement (docs/fidelity.md, "numa01's placement in a real kernel"): on a kernel built with
``CONFIG_SCHED_DEBUG`` the init samples every thread's ``/proc/PID/task/TID/sched`` (its node,
preferred node, numa group, CPU migrations, private and shared faults per node; the test
kernel's ``sched_show_numa`` also prints ``numa_scan_period`` and ``numa_faults_locality``), and
numa01 reports when each of its sweeps ended; each run then prints its processes' placement
summary and how far apart their writers run, and ``--model`` the same for the model's
``nl.scan_trace(..., placement=True)``. ``--first-touch`` gives the model the first touches'
zeroing at the rate the balancing-off run measures (option ``first_touch_wait``)::

    python benchmarks/vm_trace.py --kernel bzImage-dbg --cpus 8 --size-mib 256 --loops 150 --history 2 --model
    python benchmarks/vm_trace.py ... --from-log DIR --model --first-touch

What moves the writers between nodes (docs/fidelity.md, "What moves numa01's writers between
nodes"): ``init`` also records ``sched_migrate_task`` for numa01's threads and each node's CPU
list, and each run prints its writers' node changes by what made them (:func:`writer_moves`:
a NUMA move or swap, the stopper's active balance, the periodic load balance, another path).
The balancing-off run's changes, all the load balancer's, give the virtual machine's rate of
cross-node pulls (:func:`balancer_hz`); ``--balancer`` gives the model that rate (option
``lb_migrate_hz``)::

    python benchmarks/vm_trace.py ... --from-log DIR --model --first-touch --balancer

What follows a pull (docs/fidelity.md, "The load balancer's pull back"): each invocation also
prints who crossed back after the balancer's moves (:func:`balancer_refills`: the pulled writer
or another, by the balancer or by placement), and task_numa_compare's best swap for every
grouped writer seen off its full preferred node, the kernel's and the model's
(:func:`swap_gains`).

Why ``task_numa_migrate`` stuck (docs/fidelity.md, "task_numa_migrate's outcomes"): a test
kernel whose ``task_numa_compare`` prints one ``trace_printk`` line per candidate CPU of a
numa01 thread ("tnc p=MOVER c=TASK_THERE cpu=CPU BRANCH imp=.. mi=.. best=.. bt=..", the
branch that refused or took the candidate) gives each run's calls by outcome and the stuck ones
by what refused them (:func:`migrate_outcomes`); ``--model`` prints the model's requests by the
same outcomes (:func:`simulate_counting_calls`)::

    python benchmarks/vm_trace.py --kernel bzImage-tnc --cpus 8 --size-mib 256 --loops 150 \\
        --history 2 --runs 2 --sample 1.0 --log DIR
    python benchmarks/vm_trace.py ... --from-log DIR --model --first-touch --balancer --seeds 16

About 20 s of the host's time per run at the defaults (4 virtual CPUs, 2 writers a process,
512 MiB, 60 sweeps).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent / "vm"
MiB = 1 << 20
STACK_BYTES = 8 * MiB          # glibc's default pthread stack (RLIMIT_STACK 8 MiB)
COUNTERS = ("numa_pte_updates", "numa_huge_pte_updates", "numa_hint_faults",
            "numa_hint_faults_local", "numa_pages_migrated")


# ------------------------------------------------------------------------------ the machine
def _newc(entries) -> bytes:
    """A cpio "newc" archive (what the kernel unpacks as an initramfs) of (name, mode, data)."""
    out = io.BytesIO()

    def put(ino, name, mode, data):
        nb = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{x:08x}" for x in (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0,
                                                       len(nb), 0))
        out.write(hdr.encode() + nb)
        out.write(b"\0" * ((4 - (110 + len(nb)) % 4) % 4))
        out.write(data)
        out.write(b"\0" * ((4 - len(data) % 4) % 4))

    for i, (name, mode, data) in enumerate(entries, start=1):
        put(i, name, mode, data)
    put(0, "TRAILER!!!", 0, b"")
    return out.getvalue()


def build_initramfs(work: Path) -> Path:
    """Compile numa01.c statically and pack it with a static busybox and ``vm/init``."""
    cc = shutil.which("cc") or shutil.which("gcc")
    busybox = shutil.which("busybox")
    if cc is None:
        sys.exit("vm_trace.py: no C compiler (cc or gcc) on PATH")
    if busybox is None or b"ld-linux" in Path(busybox).read_bytes()[:65536]:
        sys.exit("vm_trace.py: needs a statically linked busybox on PATH (Debian: apt-get install busybox-static)")
    exe = work / "numa01"
    subprocess.run([cc, "-O2", "-static", "-pthread", "-o", str(exe), str(HERE / "numa01.c")], check=True)
    d, f = 0o040755, 0o100755
    entries = [("bin", d, b""), ("proc", d, b""), ("sys", d, b""), ("dev", d, b""),
               ("bin/busybox", f, Path(busybox).read_bytes()), ("numa01", f, exe.read_bytes()),
               ("init", f, (HERE / "init").read_bytes())]
    initrd = work / "initrd.gz"
    initrd.write_bytes(gzip.compress(_newc(entries), compresslevel=1))
    return initrd


def run_vm(kernel: Path, initrd: Path, args, balancing: bool, timeout: float) -> str | None:
    """Boot ``kernel`` with two NUMA nodes of ``args.cpus // 2`` CPUs and ``args.mem_mib`` each;
    the serial console's text, or None when the kernel panicked before numa01 started."""
    qemu = shutil.which("qemu-system-x86_64")
    if qemu is None:
        sys.exit("vm_trace.py: needs qemu-system-x86_64 (Debian: apt-get install qemu-system-x86)")
    c, h, m = args.cpus, args.cpus // 2, args.mem_mib
    wl = (f"{args.threads} {args.size_mib} {args.loops} {int(args.thread_alloc)} {args.node_b} {args.processes} "
          f"{int(args.align)}")
    cmd = [qemu, "-accel", "tcg,thread=multi", "-cpu", "qemu64", "-smp", str(c), "-m", f"{2 * m}M",
           "-object", f"memory-backend-ram,size={m}M,id=m0", "-object", f"memory-backend-ram,size={m}M,id=m1",
           "-numa", f"node,nodeid=0,cpus=0-{h - 1},memdev=m0", "-numa", f"node,nodeid=1,cpus={h}-{c - 1},memdev=m1",
           "-kernel", str(kernel), "-initrd", str(initrd),
           "-append", f'console=ttyS0 rdinit=/init panic=-1 quiet wl="{wl}" nb={int(balancing)} sample={args.sample}'
           + (f" numa_pid_hist={args.history}" if args.history else ""),
           "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot"]
    try:
        out = subprocess.run(cmd, capture_output=True, timeout=timeout).stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b"").decode(errors="replace")
        sys.exit(f"vm_trace.py: the virtual machine ran past --timeout {timeout:g} s; its console:\n{text[-3000:]}")
    if "=== start" not in out and "Kernel panic" in out:
        return None
    if "=== end" not in out:
        sys.exit(f"vm_trace.py: the virtual machine did not finish; its console:\n{out[-3000:]}")
    if args.history and f"=== pid_hist {args.history}" not in out:
        sys.exit(f"vm_trace.py: --history {args.history}: {kernel} did not report taking numa_pid_hist= "
                 "(a stock kernel has no such parameter; see the module docstring for the test build)")
    return out


# ------------------------------------------------------------------------------ reading the console
# "numa01-193  (  190) [002] .....  8.360413: sched_skip_vma_numa: numa_scan_offset=7F3DEEEA5000 vm_start=..
# vm_end=.. reason=.." (the three addresses in hex, as the tracepoint prints them: %lX)
_SKIP = re.compile(r"-\d+\s+\(\s*(\d+)\)\s.*\s(\d+\.\d+): sched_skip_vma_numa: numa_scan_offset=([0-9A-Fa-f]+) "
                   r"vm_start=([0-9A-Fa-f]+) vm_end=([0-9A-Fa-f]+) reason=(\w+)")


# init's trace_marker at the start: the tracepoints' clock is not /proc/uptime's (1.45 s ahead of
# it in a 6.12 guest), so trace times are taken from this mark when the console has it
_MARK = re.compile(r"\s(\d+\.\d+): tracing_mark_write: numalab_start")


# "numa01-201 (  190) [005] d..2.  9.120004: sched_migrate_task: comm=numa01 pid=203 prio=120 orig_cpu=5
# dest_cpu=1", and the NUMA moves' own events (sched_move_numa, sched_swap_numa, sched_stick_numa):
# the task that ran when the event fired (its comm, for the migrate: who moved it), the trace flags
# ("s" in the third place: in a softirq, the periodic load balancer), the time, and the fields
_EVENT = re.compile(r"^(.+?)-\d+\s+\(\s*[\d-]+\)\s+\[\d+\]\s+(\S+)\s+(\d+\.\d+): "
                    r"(sched_migrate_task|sched_move_numa|sched_swap_numa|sched_stick_numa): (.*)$")


# one line per candidate CPU of task_numa_compare, from a test kernel instrumented for it (built
# outside this repository, docs/fidelity.md, "task_numa_migrate's outcomes"): the mover, the task
# running on the candidate CPU (-1: none, -2: the CPU was already in a NUMA migration), the
# branch that decided the candidate ("A:" when it became the best so far), imp and moveimp on
# the kernel's 1000 scale
_COMPARE = re.compile(r"\s(\d+\.\d+): \S+: tnc p=(\d+) c=(-?\d+) cpu=(\d+) (\S+)"
                      r"(?: imp=(-?\d+) mi=(-?\d+) best=(-?\d+) bt=(-?\d+))?")


def parse(text: str, size_bytes: int) -> dict:
    """The run's numbers: kernel, elapsed seconds, final vmstat counters, skipped VMAs by reason
    and kind (buffer / thread stack / other), the vmstat and buffer-node samples over time, the
    threads' placement samples (``tasks``) and sweep ends (``sweeps``), the scheduler events
    (``events``), each CPU's node (``cpulist``) and the writers' node changes (``moves``,
    :func:`writer_moves`). Trace times (skips, passes, events) count from init's
    ``numalab_start`` mark on the trace clock; a console without it (before the mark was added)
    counts them from the uptime of ``=== start``, which runs behind the trace clock
    (``trace_clock_known`` False)."""
    r = {"samples": [], "maps": [], "skips": Counter(), "buffer_skip_times": defaultdict(list),
         "threads": [], "passes": defaultdict(list), "tasks": [],
         "sweeps": [], "events": [], "cpulist": {}, "compares": []}
    start = tstart = 0.0
    mark = _MARK.search(text)
    r["trace_clock_known"] = mark is not None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("=== uname"):
            r["kernel"] = line.split()[2]
        elif line.startswith("=== pid_hist"):
            r["pid_hist"] = int(line.split()[2])
        elif line.startswith("=== cpulist"):
            _, _, node, cpus = line.split()
            for part in cpus.split(","):
                lo, _, hi = part.partition("-")
                for c in range(int(lo), int(hi or lo) + 1):
                    r["cpulist"][c] = int(node)
        elif line.startswith("=== start"):
            start = float(line.split()[2])
            tstart = float(mark.group(1)) if mark else start
        elif line.startswith("numa01_elapsed_s"):
            r["elapsed_s"] = float(line.split()[1])
        elif line.startswith("=== vmstat"):
            name, value = line.split()[2:4]
            if name in COUNTERS:
                r[name] = int(value)
        elif line.startswith("S "):
            v = line.split()[1:]
            r["samples"].append([round(float(v[0]) - start, 3), *map(int, v[1:6])])
        elif line.startswith("M "):
            _, t, pid, _, anon, n0, n1 = line.split()
            r["maps"].append([round(float(t) - start, 3), int(pid), int(anon), int(n0), int(n1)])
        elif line.startswith("T ") or line.startswith("C "):
            # a thread's placement (benchmarks/vm/init): T: node, numa_scan_seq, numa_preferred_nid,
            # numa_group_id, se.nr_migrations, numa_scan_period, numa_faults_locality[0..2] ("-":
            # not printed, None here), then per node the task's private/shared and the group's
            # private/shared faults (CONFIG_SCHED_DEBUG); C: only its CPU
            v = line.split()
            r["tasks"].append([v[0], round(float(v[1]) - start, 3)] + [int(x) if x.lstrip("-").isdigit() else None
                                                                         for x in v[2:]])
        elif line.startswith("sweeps "):
            v = line.split()
            r["sweeps"].append([int(v[1]), int(v[2]), [float(x) for x in v[3:]]])
        elif line.startswith("thread "):
            _, pid, i, _, init_end, _, loop_end = line.split()
            r["threads"].append([int(pid), int(i), float(init_end), float(loop_end)])
        elif m := _EVENT.match(line):
            ctx, flags, t, name, rest = m.groups()
            fields = {k: int(v) for k, v in re.findall(r"(\w+)=(-?\d+)(?=\s|$)", rest)}
            r["events"].append([round(float(t) - tstart, 6), name, ctx.strip(), flags, fields])
        elif m := _COMPARE.search(line):
            t, pid, cur, cpu, why, imp = m.groups()[:6]
            r["compares"].append([round(float(t) - tstart, 6), int(pid), int(cur), int(cpu), why,
                                  None if imp is None else int(imp)])
        elif m := _SKIP.search(line):
            tgid, t, offset, lo, hi, reason = m.groups()
            n = int(hi, 16) - int(lo, 16)
            if int(offset, 16) == 0 and int(lo, 16) == 0x400000:
                # a task_numa_work run that starts at the first VMA (numa01's text): a new pass
                r["passes"][tgid].append(round(float(t) - tstart, 3))
            kind = "buffer" if n >= size_bytes else "stack" if abs(n - STACK_BYTES) <= 2 * 4096 else "other"
            r["skips"][f"{reason}/{kind}"] += 1
            if kind == "buffer":
                r["buffer_skip_times"][reason].append(round(float(t) - tstart, 2))
    r["skips"] = dict(r["skips"])
    r["buffer_skip_times"] = dict(r["buffer_skip_times"])
    r["passes"] = dict(r["passes"])
    r["moves"] = writer_moves(r)
    r["migrate_outcomes"] = migrate_outcomes(r)
    return r


def migrate_outcomes(r: dict, gap_s: float = 0.002, window_s: float = 0.05) -> dict | None:
    """task_numa_migrate's calls by outcome and, for the calls that stuck, what refused each
    candidate CPU, from an instrumented kernel's per-candidate lines (``compares``; None
    without them). A call is a run of one mover's candidate lines less than ``gap_s`` apart; its
    outcome is the mover's next ``sched_swap_numa`` / ``sched_move_numa`` / ``sched_stick_numa``
    within ``window_s``. A stuck call is classed by what refused its candidates:
    ``all_below_smallimp`` (every task there loses the swap: imp under SMALLIMP or not above the
    best; a task that cannot run on the source CPU, or the mover itself, refused too),
    ``load_imbalance`` (some candidate passed the bar and ``load_too_imbalanced`` refused
    it: the two tasks' ``task_h_load`` differ), ``spare_no_move`` (the node had an idle CPU, the
    move was not allowed and the group's own tasks are no swap partners: option
    ``numa_maymove``), ``in_migration`` (a candidate CPU already in a NUMA migration), else
    ``other``. ``after``: the calls by what last moved the mover across nodes before them
    (:func:`writer_moves`' kinds, ``none`` when nothing had; empty without a CPU map)."""
    comp = r.get("compares") or []
    if not comp:
        return None
    calls = []
    for t, pid, cur, cpu, why, imp in comp:
        c = calls[-1] if calls and calls[-1]["pid"] == pid and t - calls[-1]["t1"] < gap_s else None
        if c is None:
            c = {"pid": pid, "t0": t, "t1": t, "whys": [], "imps": []}
            calls.append(c)
        c["t1"] = t
        c["whys"].append(why)
        if why == "smallimp":
            c["imps"].append(imp)
    ends = [(t, name, f.get("src_pid", f.get("pid"))) for t, name, _, _, f in r.get("events", ())
            if name in ("sched_swap_numa", "sched_move_numa", "sched_stick_numa")]
    outcome, stuck, imps, after = Counter(), Counter(), [], Counter()
    log = (r.get("moves") or {}).get("log", [])        # [t, kind, writer, off_pref, src, dst]
    for c in calls:
        if log:
            last = [m[1] for m in log if m[2] == c["pid"] and m[0] <= c["t0"]]
            after[last[-1] if last else "none"] += 1
        end = next((name for t, name, pid in ends if pid == c["pid"] and c["t0"] <= t <= c["t1"] + window_s), None)
        kind = {"sched_swap_numa": "swap", "sched_move_numa": "move", "sched_stick_numa": "stick"}.get(end, "unseen")
        outcome[kind] += 1
        if kind == "stick":
            imps += c["imps"]
            w = set(c["whys"])
            stuck["load_imbalance" if "loadimb" in w else "spare_no_move" if "spare" in w
                  else "in_migration" if "mig_on" in w else "all_below_smallimp" if w <= {"smallimp", "notpref", "cpus", "self"}
                  else "other"] += 1
    return {"calls": dict(outcome), "stuck": dict(stuck),
            "stuck_below_smallimp_imps": sorted(imps), "after": dict(after)}


#: what moved a writer to another node (:func:`writer_moves`), in the order they are tested
MOVE_KINDS = ("numa_move", "numa_swap", "active_balance", "load_balance", "other")


def writer_moves(r: dict, window_s: float = 0.05) -> dict | None:
    """What moved numa01's writers between nodes, from ``sched_migrate_task`` (None when the
    console has no such events or no CPU-to-node map): each cross-node CPU change of a writer
    (a thread listed in the "T" samples other than its process's main thread) is a
    ``numa_move`` / ``numa_swap`` when a ``sched_move_numa`` / ``sched_swap_numa`` event for
    that task and that destination CPU came at most ``window_s`` before it
    (``migrate_task_to`` / ``migrate_swap``, both through the stopper), else
    ``active_balance`` when the stopper (``migration/N``) moved it (``active_load_balance_cpu_stop``:
    a running task the load balancer could not detach), ``load_balance`` when it was moved in a
    softirq (the periodic ``load_balance`` -> ``detach_task``), else ``other`` (a wake-up's
    ``select_task_rq``, or a newly idle CPU's pull). Returns per-kind counts (``kinds``), the
    number of cross-node moves (``cross``) and of same-node CPU changes (``same_node``), the
    stick events (``sched_stick_numa``: ``task_numa_migrate`` found no CPU), how many moves of
    each kind left the writer's numa_preferred_nid as last sampled (``left_preferred``), the
    swaps whose partner was a writer of the same process (``swaps_within``), how the balancer's
    pulls were refilled (``refills``, :func:`balancer_refills`), and each move's (time s, kind,
    writer, whether it left the preferred node, source node, destination node) in ``log``."""
    cpu_node = r.get("cpulist") or {}
    mig = [e for e in r.get("events", ()) if e[1] == "sched_migrate_task"]
    if not mig or not cpu_node:
        return None
    writer_pid = {tid: pid for _, _, pid, tid, *_ in r.get("tasks", ()) if tid != pid}
    pref_at = defaultdict(list)                 # tid -> [(t, numa_preferred_nid)] from the samples
    for kind, t, pid, tid, _node, _seq, pref, *_ in r.get("tasks", ()):
        if kind == "T" and pref is not None:
            pref_at[tid].append((t, pref))
    numa = [e for e in r["events"] if e[1] in ("sched_move_numa", "sched_swap_numa")]
    kinds, left, log = Counter(), Counter(), []
    same = cross = within = 0
    for t, _, ctx, flags, f in mig:
        p = f.get("pid")
        if p not in writer_pid:
            continue
        src, dst = cpu_node.get(f["orig_cpu"]), cpu_node.get(f["dest_cpu"])
        if src == dst:
            same += 1
            continue
        cross += 1
        kind = None
        for te, name, _, _, g in numa:
            if not t - window_s <= te <= t:
                continue
            if name == "sched_move_numa" and g.get("pid") == p and g.get("dst_cpu") == f["dest_cpu"]:
                kind = "numa_move"
            elif name == "sched_swap_numa" and ((g.get("src_pid") == p and g.get("dst_cpu") == f["dest_cpu"])
                                                or (g.get("dst_pid") == p and g.get("src_cpu") == f["dest_cpu"])):
                kind = "numa_swap"
                other = g["dst_pid"] if g.get("src_pid") == p else g["src_pid"]
                within += writer_pid.get(other) == writer_pid[p]
        if kind is None:
            kind = ("active_balance" if ctx.startswith("migration/")
                    else "load_balance" if len(flags) > 2 and flags[2] in "sH" else "other")
        kinds[kind] += 1
        seen = [x for x in pref_at.get(p, ()) if x[0] <= t]
        off_pref = bool(seen) and seen[-1][1] == src
        left[kind] += off_pref
        log.append([round(t, 3), kind, p, off_pref, src, dst])
    return {"kinds": {k: kinds[k] for k in MOVE_KINDS}, "cross": cross, "same_node": same,
            "sticks": sum(e[1] == "sched_stick_numa" for e in r["events"]),
            "left_preferred": {k: left[k] for k in MOVE_KINDS}, "swaps_within": within // 2,
            "refills": balancer_refills(log), "log": log}


def balancer_refills(log, window_s: float = 0.5) -> dict:
    """What refilled the node a balancer pull left short, from :func:`writer_moves`' ``log``:
    each balancer move of a writer (any kind but a NUMA move or swap) from node A to B, in time
    order, is paired with the first later, not yet paired balancer move from B to A within
    ``window_s``: ``returned`` when the same writer went back, ``exchanged`` when another writer
    went (the engine's refill without option ``lb_refill_locality``), ``unpaired`` when none did
    (a free CPU took the pull, or the refill was not a writer). Each count also split by whether
    the first move took the writer off its preferred node (``*_off_preferred``): can_migrate_task's
    migrate_degrades_locality refuses to pull the resident back off its preferred node and
    never refuses the pulled writer's return to it (with balancing off it has no say). Also, for
    every balancer move, who crossed back first, by any path and at any later time:
    ``back_same`` (the pulled writer: the balancer, or a NUMA move or swap), ``back_other``,
    ``back_never`` (split the same way)."""
    out = Counter()
    # and, for every balancer move, the next move of any kind (a NUMA move or swap too) and at
    # any later time that crossed back: the same writer, another one, or none
    for i, (t, kind, p, off, src, dst) in enumerate(log):
        if kind.startswith("numa_"):
            continue
        nxt = next((x for x in log[i + 1:] if x[4] == dst and x[5] == src), None)
        how = "back_never" if nxt is None else "back_same" if nxt[2] == p else "back_other"
        out[how] += 1
        out[how + "_off_preferred"] += bool(off)
    lb = [x for x in log if not x[1].startswith("numa_")]
    used = [False] * len(lb)
    for i, (t, _kind, p, off, src, dst) in enumerate(lb):
        if used[i]:
            continue
        used[i] = True
        how = "unpaired"
        for j in range(i + 1, len(lb)):
            t2, _, p2, _, s2, d2 = lb[j]
            if t2 - t > window_s:
                break
            if not used[j] and s2 == dst and d2 == src:
                used[j] = True
                how = "returned" if p2 == p else "exchanged"
                break
        out[how] += 1
        out[how + "_off_preferred"] += bool(off)
    return {k + o: out[k + o] for k in ("returned", "exchanged", "unpaired", "back_same", "back_other", "back_never")
            for o in ("", "_off_preferred")}


def first_buffer_scan(samples) -> float | None:
    """Seconds after the start at which the first huge PMD was made PROT_NONE (the buffer is the
    only THP-backed VMA that numa01 writes)."""
    for t, _, huge, *_ in samples:
        if huge > 0:
            return t
    return None


# ------------------------------------------------------------------------------ the model's account
def profile_for(release: str) -> str:
    """The engine's profile for a kernel release string ("6.12.95+deb12-amd64" -> "6.12")."""
    major, minor = (int(x) for x in re.match(r"(\d+)\.(\d+)", release).groups())
    v = (major, minor)
    if v < (6, 4):
        return "pre-6.4"
    if v < (6, 7):
        return "6.4"
    if v < (6, 8):
        return "6.7"
    if v < (6, 12):
        return "6.8"
    return "6.12"


def first_touch_GBps(base: dict, args, rate_GBps: float) -> float | None:
    """The virtual machine's first-touch rate a writer (GB/s), from the balancing-off run: its
    writers' bound init (one sweep of the whole buffer) ended at ``init_end_s``; a sweep of the
    same bytes at the measured rate takes SIZE / (rate / cpus); the rest is the first touches'
    page allocation and zeroing, in the faulting writer (do_huge_pmd_anonymous_page), of its
    share of the buffer (SIZE / threads: a process's writers share its first touches). None
    when the init was no slower than a sweep."""
    ends = [x[2] for x in base.get("threads", [])]
    if not ends:
        return None
    sweep_s = args.size_mib * MiB / (rate_GBps * 1e9 / args.cpus)
    extra = float(np.median(ends)) - sweep_s
    return args.size_mib * MiB / args.threads / extra / 1e9 if extra > 0 else None


def balancer_hz(base: dict, args) -> float | None:
    """The virtual machine's load balancer, from the balancing-off run (no NUMA moves there):
    its cross-node pulls per writer and second, in the engine's terms (option
    ``lb_migrate_hz``: a pull onto a node with no free CPU is refilled by a pull the other way,
    and numa01 keeps every CPU busy, so a pull is two node changes). None when the console has no
    ``sched_migrate_task`` events."""
    mv = base.get("moves")
    if not mv or not base.get("elapsed_s"):
        return None
    writers = args.processes * args.threads
    return mv["cross"] / 2 / (writers * base["elapsed_s"])


def model(args, rate_GBps: float, profile: str, seeds: int, zero_GBps: float | None = None,
          lb_hz: float | None = None) -> dict:
    """The engine's run of the same numa01 on a topology describing the virtual machine; with
    ``zero_GBps`` (``--first-touch``) the init's first touches cost the writers that rate
    (option ``first_touch_wait``); with ``lb_hz`` (``--balancer``) the load balancer pulls
    tasks across nodes at the rate the balancing-off run measured (option ``lb_migrate_hz``)."""
    import numalab as nl

    t = args.cpus // 2
    topo = nl.Topology(
        nodes=2, cpus_per_node=t, smt=1, distance=((10, 20), (20, 10)),
        # no NUMA latency: every emulated node's memory is the host's
        local_latency_ns=90.0, remote_latency_ns=90.0,
        # the aggregate write rate the VM measured with balancing off (CPU-bound: TCG), reachable
        # from any node's memory, over any link; a virtual CPU's share of it when all are busy
        node_bw_GBps=rate_GBps, write_efficiency=1.0, link_bw_GBps=rate_GBps,
        thread_bw_GBps=rate_GBps / args.cpus, mem_per_node_GiB=args.mem_mib / 1024,
        name="qemu-tcg", source="benchmarks/vm_trace.py: QEMU TCG, 2 emulated nodes")
    name = "numa01_THREAD_ALLOC" if args.thread_alloc else "numa01"
    wl = nl.workload(name, topology=topo, threads=args.threads, size_bytes=args.size_mib * MiB,
                     loops=args.loops, nproc=args.processes)
    # --align: the buffer on a 2 MiB boundary, so no malloc edges
    # --history N: the profile's access test over N PID windows (the test kernel's numa_pid_hist=N)
    policy = nl.Policy.parse(profile, history=args.history) if args.history else profile
    opts = {"malloc_edges": not args.align, **args.options}
    if zero_GBps is not None:
        opts.update(first_touch_wait=True, costs={"zero_GBps": zero_GBps})
    if lb_hz is not None:
        opts["lb_migrate_hz"] = lb_hz
    # one run gives the counters, the requests by outcome and the trace (tracing only reads state)
    ds, migrate_calls, tr = simulate_counting_calls(wl, policy, seeds, topo, args.node_b, opts)
    out = {"elapsed_s": float(ds.elsp.mean()), "elapsed_sd": float(ds.elsp.std())}
    for c in COUNTERS + ("task_migrations", "lb_migrations", "scan_period_resets", "numa_sticks"):
        out[c] = float(ds[c].mean())
    for v in ds.data_vars:
        if v.startswith("skip_") and float(ds[v].sum()) > 0:
            out[v] = float(ds[v].mean())
    for v in ("pids_per_window", "pid_pass_rate"):
        if v in ds:
            out[v] = float(ds[v].mean())
    out["migrate_calls"] = migrate_calls
    # the skips as the kernel's tracepoint reports them, by reason and kind of VMA (a run's mean)
    writers = [model_writers(tr, i) for i in range(seeds)]
    out["placement"] = [placement_summary(w) for w in writers]
    out["swap_gains"] = gains_summary([swap_gains(w) for w in writers])
    kinds = np.where(np.isin(tr.vma_kind.values, ("buffer", "stack")), tr.vma_kind.values, "other")
    reasons = tr.reason.values
    skipped = np.isin(reasons, tr.attrs["traced_reasons"].split()) & ~tr.scanned.values
    out["skips"] = {f"{r}/{k}": round(n / seeds, 2) for (r, k), n in
                    sorted(Counter(zip(reasons[skipped], kinds[skipped])).items())}
    return out


def simulate_counting_calls(wl, policy, seeds: int, topo, node_b: int, opts: dict):
    """One traced run of the model, three views of it: the Dataset ``nl.simulate`` returns for
    it; its ``numa_migrate_preferred`` requests by outcome, a run's mean, beside
    :func:`migrate_outcomes`: ``swap``, ``move`` (into an idle CPU), ``stick_below_smallimp``
    (the node full, no partner reaches SMALLIMP) and ``stick_spare`` (an idle CPU there and no
    move allowed: option ``numa_maymove``); and ``nl.scan_trace(..., placement=True)`` of it,
    sampled every 0.5 s. Counted by wrapping the numpy engine's
    :func:`numalab.engine.placement.task_swap` and ``move_task`` (``kernel="numpy"``:
    bit-identical to the compiled engine's Dataset; the sampling interval changes no number)."""
    from numalab.engine import placement
    from numalab.engine.results import to_dataset
    from numalab.engine.tracing import _scan_trace_run

    n, in_swap = Counter(), [False]
    task_swap, move_task = placement.task_swap, placement.move_task

    def counted_swap(b, r, t, a, dst, running, moved, scores, spare=False):
        in_swap[0] = True
        try:
            ok = task_swap(b, r, t, a, dst, running, moved, scores, spare=spare)
        finally:
            in_swap[0] = False
        n["swap" if ok else "stick_spare" if spare else "stick_below_smallimp"] += 1
        return ok

    def counted_move(b, r, t, dst, lb=False):
        if not lb and not in_swap[0]:
            n["move"] += 1
        return move_task(b, r, t, dst, lb=lb)

    placement.task_swap, placement.move_task = counted_swap, counted_move
    seed_list = list(range(seeds))
    try:
        tr, b = _scan_trace_run(wl, policy, seed_list, topo, None, True,
                                {"time_resolution": 0.5, **opts, "init_node": node_b, "kernel": "numpy"})
    finally:
        placement.task_swap, placement.move_task = task_swap, move_task
    ds = to_dataset(b.wl, [b.pol], seed_list, [b], b.o.to_dict(), b.costs)   # as nl.simulate builds it
    return ds, {k: round(n[k] / seeds, 2) for k in ("swap", "move", "stick_below_smallimp", "stick_spare")}, tr


# ------------------------------------------------------------------------------ placement
def kernel_writers(tasks) -> dict:
    """The kernel's writer threads per process from the "T" samples: {pid: {"t": (S,), "node",
    "gid", "faults", "private", "period", "pref": (S, W), "task_nodes", "group_nodes": (S, W, N)}},
    W the writers (the main thread, tid == pid, left out) in tid order, only samples where every
    writer was listed (the last ones, as writers exit, are dropped); "period" is NaN where the
    kernel does not print it; "task_nodes" / "group_nodes": the task's / its group's memory
    faults per node (private + shared; the group's are 0 without a group)."""
    by = defaultdict(lambda: defaultdict(dict))
    for kind, t, pid, tid, node, _seq, pref, gid, _mig, period, _l0, _l1, _l2, *faults in tasks:
        if kind != "T" or tid == pid:
            continue
        f = [x or 0 for x in faults]
        by[pid][t][tid] = (node, gid, sum(x for i, x in enumerate(f) if i % 4 < 2), sum(f[0::4]),
                           np.nan if period is None else period, -1 if pref is None else pref,
                           [f[i] + f[i + 1] for i in range(0, len(f) - 3, 4)],
                           [f[i + 2] + f[i + 3] for i in range(0, len(f) - 3, 4)])
    out = {}
    for pid, samples in by.items():
        tids = sorted({tid for s in samples.values() for tid in s})
        ts = [t for t in sorted(samples) if len(samples[t]) == len(tids)]
        out[pid] = {k: np.array([[samples[t][tid][i] for tid in tids] for t in ts], dtype=float)
                    for i, k in enumerate(("node", "gid", "faults", "private", "period", "pref",
                                           "task_nodes", "group_nodes"))}
        out[pid]["t"] = np.array(ts)
    return out


def model_writers(tr, replica: int) -> dict:
    """:func:`kernel_writers`' view of one replica of ``nl.scan_trace(..., placement=True)``;
    a group's faults are its members' (group_faults sums what its tasks record)."""
    gid = tr.numa_group_id.values[replica]                              # (S, T)
    f = tr.numa_faults.values[replica].astype(float)                    # (S, T, N)
    same = (gid[:, :, None] == gid[:, None, :]) & (gid[:, :, None] > 0)  # (S, T, T)
    group_nodes = np.einsum("stu,sun->stn", same.astype(float), f)
    out = {}
    for m in np.unique(tr.thread_mm.values):
        w = np.flatnonzero((tr.thread_mm.values == m) & ~tr.thread_main.values)
        out[int(m)] = {"t": tr.sample_t.values,
                       "node": tr.task_node.values[replica][:, w].astype(float),
                       "gid": tr.numa_group_id.values[replica][:, w].astype(float),
                       "faults": tr.numa_faults.values[replica][:, w].sum(axis=-1),
                       "private": tr.numa_faults_private.values[replica][:, w].sum(axis=-1),
                       "period": tr.numa_scan_period.values[replica][:, w].astype(float),
                       "pref": tr.numa_preferred_nid.values[replica][:, w].astype(float),
                       "task_nodes": tr.numa_faults.values[replica][:, w].astype(float),
                       "group_nodes": group_nodes[:, w]}
    return out


def placement_summary(writers: dict, loop_start_s: float = 1.5) -> list[dict]:
    """Per process: ``split`` -- writers on the node fewer of them ran on at the first sample
    after ``loop_start_s`` (0: all on one node); ``grouped_s`` -- first sample at which every
    writer is in one numa group (None: never); ``groups_10s`` -- distinct groups (no group counts
    as one of its own) among the writers at 10 s; ``top_share`` -- the median, over the samples
    from 5 s on, of the busiest writer's share of the writers' numa_faults (1/W: even);
    ``private_10s`` / ``private_20s`` -- the private share of the writers' numa_faults at 10 and
    20 s (update_task_scan_period's ps_ratio reads the same split); ``period_ms`` -- the median
    numa_scan_period of the writers from 5 s on (None where the kernel does not print it);
    ``node_changes`` / ``pref_changes`` -- how often, between samples, a writer was seen on
    another node / with another numa_preferred_nid (once it had one): what keeps asking
    numa_migrate_preferred, and what resets the scan period (update_scan_period)."""
    out = []
    for w in writers.values():
        t, node, gid, faults = w["t"], w["node"], w["gid"], w["faults"]
        if t.size == 0:
            continue

        def sample_at(s):
            """The first sample at or after ``s`` seconds (the last one if none is)."""
            return min(int(np.searchsorted(t, s)), t.size - 1)

        on1 = int(node[sample_at(loop_start_s)].sum())
        split = min(on1, node.shape[1] - on1)
        one = (gid > 0).all(axis=1) & (gid == gid[:, :1]).all(axis=1)
        grouped = float(t[np.argmax(one)]) if one.any() else None
        g10 = gid[sample_at(10.0)]
        groups = len(set(g10[g10 > 0].tolist())) + int((g10 <= 0).sum())
        tot = faults.sum(axis=1)
        late = (t >= 5.0) & (tot > 0)
        top = float(np.median(faults[late].max(axis=1) / tot[late])) if late.any() else None
        priv = {}
        for at in (10.0, 20.0):
            i = sample_at(at)
            priv[at] = float(w["private"][i].sum() / tot[i]) if tot[i] > 0 else None
        per = w["period"][t >= 5.0]
        period = float(np.nanmedian(per)) if per.size and np.isfinite(per).any() else None
        pref = w["pref"]
        out.append({"split": split, "grouped_s": grouped, "groups_10s": groups, "top_share": top,
                    "private_10s": priv[10.0], "private_20s": priv[20.0], "period_ms": period,
                    "node_changes": int((np.diff(node, axis=0) != 0).sum()),
                    "pref_changes": int(((np.diff(pref, axis=0) != 0) & (pref[:-1] >= 0)).sum())})
    return out


def swap_gains(writers: dict, from_s: float = 10.0, cpus_per_node: int | None = None) -> np.ndarray:
    """task_numa_compare's best swap, read off the placement samples: at every sample from
    ``from_s`` on, for every writer in a numa group seen off its numa_preferred_nid while that
    node runs ``cpus_per_node`` writers (default: half of all writers, numa01's one writer a CPU),
    the largest gain over the writers there (any process), in fault shares. A partner of the same
    group: the two tasks' own shares, less 1/16 (hysteresis inside a group); of another group or
    none: the writer's group shares and the partner's group (or own) shares. Then a partner
    already on its preferred node loses 1/16 of the gain, and one whose preferred node is the
    writer's node gains 1/8 (the engine's ``compare_adjust``). The kernel swaps only at
    ``SMALLIMP`` (0.03) or more; below it (and with no free CPU) ``task_numa_migrate`` sticks.
    Works on :func:`kernel_writers` and :func:`model_writers` alike; returns the gains (one per
    such writer and sample)."""
    from numalab.engine.placement import compare_adjust

    procs = [w for w in writers.values() if w["t"].size]
    if not procs:
        return np.zeros(0)
    common = procs[0]["t"]
    for w in procs[1:]:
        common = np.intersect1d(common, w["t"])
    col = {k: np.concatenate([w[k][np.searchsorted(w["t"], common)] for w in procs], axis=1)
           for k in ("node", "gid", "pref", "task_nodes", "group_nodes")}
    W = col["node"].shape[1]
    full = cpus_per_node or W // 2

    def shares(f):
        tot = f.sum(axis=-1, keepdims=True)
        return np.divide(f, tot, out=np.zeros_like(f), where=tot > 0)

    gains = []
    for i in np.flatnonzero(common >= from_s):
        node, gid, pref = col["node"][i].astype(int), col["gid"][i], col["pref"][i].astype(int)
        tw, gw = shares(col["task_nodes"][i]), shares(col["group_nodes"][i])
        for p in range(W):
            src, dst = node[p], pref[p]
            if gid[p] <= 0 or dst < 0 or dst == src:
                continue
            cand = np.flatnonzero(node == dst)
            if cand.size < full:
                continue
            # the partner's own shares inside the writer's group or without a group, else its group's
            same = gid[cand] == gid[p]
            part = np.where((same | (gid[cand] <= 0))[:, None], tw[cand], gw[cand])
            imp = np.where(same, tw[p, dst] - tw[p, src], gw[p, dst] - gw[p, src]) + (part[:, src] - part[:, dst])
            gains.append(compare_adjust(imp, same, pref[cand], src, dst).max())
    return np.array(gains)


def gains_summary(per_run) -> dict:
    """:func:`swap_gains` over runs (a list of arrays): how many such requests a run, their
    median gain and the share at or above ``SMALLIMP`` (None without any)."""
    from numalab.engine.placement import SMALLIMP

    g = np.concatenate([np.asarray(x, dtype=float) for x in per_run]) if per_run else np.zeros(0)
    return {"per_run": round(g.size / max(len(per_run), 1), 1),
            "median": round(float(np.median(g)), 3) if g.size else None,
            "at_smallimp": round(float((g >= SMALLIMP).mean()), 3) if g.size else None}


def sweep_phases(sweeps, at=(5, -5)) -> list[list[float]]:
    """Per process, how far apart its writers run: for the sweep indices ``at``, the median over
    writer pairs of the distance between their positions, in sweeps (0: together; 0.25: the
    mean for independent uniform phases; at most 0.5), from each writer's sweep end times."""
    by = defaultdict(dict)
    for pid, i, ends in sweeps:
        by[pid][i] = np.asarray(ends)
    out = []
    for ws in by.values():
        ends = np.array([ws[i] for i in sorted(ws)])              # (W, loops)
        if ends.shape[1] < 12:
            continue
        row = []
        for k in at:
            k = k % ends.shape[1]
            sweep_s = np.median(np.diff(ends[:, max(k - 3, 0):k + 4], axis=1))
            d = [abs((a - b) / sweep_s) for j, a in enumerate(ends[:, k]) for b in ends[j + 1:, k]]
            row.append(float(np.median([abs(x - round(x)) for x in d])))
        out.append(row)
    return out


def _placement_lines(summaries) -> list[str]:
    """Printed lines pooling :func:`placement_summary` over runs (or seeds)."""
    p = [x for s in summaries for x in s]
    if not p:
        return []
    splits = Counter(x["split"] for x in p)
    g = [x["grouped_s"] for x in p if x["grouped_s"] is not None]
    tops = [x["top_share"] for x in p if x["top_share"] is not None]
    lines = [f"writers on the fewer-used node at the loops' start: "
             + ", ".join(f"{k}: {splits[k]}" for k in sorted(splits)) + f" of {len(p)} processes",
             f"all writers in one numa group: {len(g)} of {len(p)}"
             + (f", from {np.median(g):.1f} s (median)" if g else "")
             + f"; groups among the writers at 10 s: {np.mean([x['groups_10s'] for x in p]):.2f} (mean)"]
    if tops:
        lines.append(f"busiest writer's share of the numa_faults: {np.median(tops):.2f} (median)")
    per_run = len(p) / max(len(summaries), 1)
    for key, what in (("node_changes", "writers seen on another node"),
                      ("pref_changes", "writers seen with another numa_preferred_nid")):
        lines.append(f"{what}: {np.mean([x[key] for x in p]) * per_run:.1f} a run (mean)")
    for key, what, fmt in (("private_10s", "private share of the writers' numa_faults at 10 s", ".2f"),
                           ("private_20s", "private share of the writers' numa_faults at 20 s", ".2f"),
                           ("period_ms", "writers' numa_scan_period from 5 s on (ms)", ".0f")):
        v = [x[key] for x in p if x.get(key) is not None]
        if v:
            lines.append(f"{what}: {np.median(v):{fmt}} (median)")
    return lines


# ------------------------------------------------------------------------------ main
def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", type=Path, action="append", required=True, help="a bzImage (vmlinuz); repeatable")
    ap.add_argument("--cpus", type=int, default=4, help="virtual CPUs, half on each node (default 4)")
    ap.add_argument("--mem-mib", type=int, default=2048, help="memory of each node (default 2048)")
    ap.add_argument("--threads", type=int, default=None, help="writers a process (default cpus/2, numa01's)")
    ap.add_argument("--size-mib", type=int, default=512, help="buffer a process (default 512)")
    ap.add_argument("--loops", type=int, default=60, help="sweeps after the init (default 60)")
    ap.add_argument("--thread-alloc", action="store_true", help="numa01_THREAD_ALLOC: each writer its slice")
    ap.add_argument("--node-b", type=int, default=0, choices=(0, 1), help="the init's MPOL_BIND node")
    ap.add_argument("--processes", type=int, default=2, choices=(1, 2))
    ap.add_argument("--align", action="store_true",
                    help="the buffer on a 2 MiB boundary (aligned_alloc), not numa01's malloc")
    ap.add_argument("--history", type=int, default=None, choices=(1, 2, 3, 4),
                    help="PID windows the access test ORs: boots with numa_pid_hist=N (a test kernel only, "
                         "see the docstring) and gives the model the same history")
    ap.add_argument("--runs", type=int, default=1, help="runs a kernel (default 1)")
    ap.add_argument("--sample", type=float, default=0.25, help="seconds between samples (default 0.25)")
    ap.add_argument("--model", action="store_true", help="also the model's account of the same machine")
    ap.add_argument("--seeds", type=int, default=64,
                    help="the model's seeds (default 64: its rare balancer swaps move whole slices, so 8 scatter)")
    ap.add_argument("--first-touch", action="store_true",
                    help="the model's init writers pay the first touches' zeroing at the rate the balancing-off "
                         "run measures (option first_touch_wait; docs/fidelity.md, numa01's placement)")
    ap.add_argument("--balancer", action="store_true",
                    help="the model's load balancer pulls tasks across nodes at the rate the balancing-off run "
                         "measures from sched_migrate_task (option lb_migrate_hz; docs/fidelity.md, what moves "
                         "numa01's writers between nodes)")
    ap.add_argument("--option", action="append", default=None, metavar="NAME=VALUE",
                    help="an engine option for the model (repeatable), as numalab simulate --option")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds a boot may take (default 900)")
    ap.add_argument("--json", type=Path, help="write every run's numbers here")
    ap.add_argument("--log", type=Path, help="keep every run's console text in this directory")
    ap.add_argument("--from-log", type=Path,
                    help="read the runs' console text kept by --log in this directory instead of booting "
                         "(the same --kernel, --runs and workload arguments)")
    args = ap.parse_args(argv)
    from numalab.commands.simulate import options_from_args
    args.options = options_from_args(args, ap)   # the CLI's reader of --option, checked by EngineOptions
    if args.threads is None:
        args.threads = max(1, args.cpus // 2)
    for name, value, lo, hi in (("--threads", args.threads, 1, 256), ("--loops", args.loops, 0, 10**6),
                                ("--runs", args.runs, 1, 100), ("--size-mib", args.size_mib, 2, 1 << 20),
                                ("--seeds", args.seeds, 1, 1024)):
        if not lo <= value <= hi:
            ap.error(f"{name} {value}: allowed: {lo} to {hi}")
    if not 0 < args.sample <= 10:
        ap.error(f"--sample {args.sample}: allowed: more than 0, at most 10 seconds")
    if args.cpus < 2 or args.cpus % 2:
        ap.error(f"--cpus {args.cpus}: allowed: an even number >= 2 (two nodes)")
    for k in args.kernel:
        if args.from_log:
            for kept in [f"{k.name}-off-0.txt"] + [f"{k.name}-on-{i}.txt" for i in range(args.runs)]:
                if not (args.from_log / kept).is_file():
                    ap.error(f"--from-log {args.from_log}: no {kept} (kept by --log for --kernel {k} and --runs {args.runs})")
        elif not k.is_file():
            ap.error(f"--kernel {k}: no such file")
    need = args.processes * args.size_mib
    if need > 0.8 * 2 * args.mem_mib:
        ap.error(f"--size-mib {args.size_mib}: {need} MiB of buffers does not fit 80 % of 2 x --mem-mib {args.mem_mib}")

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        initrd = build_initramfs(Path(tmp))
        for kernel in args.kernel:
            def boot(balancing, k):
                kept = f"{kernel.name}-{'on' if balancing else 'off'}-{k}.txt"
                if args.from_log:
                    return parse((args.from_log / kept).read_text(), args.size_mib * MiB)
                for attempt in range(3):
                    text = run_vm(kernel, initrd, args, balancing, args.timeout)
                    if text is not None:
                        break
                    # a panic before the workload started (an emulation flake at boot, not a result)
                    print(f"   {kernel.name}: boot {attempt + 1} panicked before numa01 started; booting again",
                          file=sys.stderr)
                else:
                    sys.exit(f"vm_trace.py: {kernel}: three boots panicked before numa01 started")
                if args.log:
                    args.log.mkdir(parents=True, exist_ok=True)
                    (args.log / kept).write_text(text)
                return parse(text, args.size_mib * MiB)

            base = boot(False, 0)
            written = args.processes * args.threads * (args.size_mib * MiB) * \
                (1 + (args.loops / args.threads if args.thread_alloc else args.loops))
            rate = written / base["elapsed_s"] / 1e9
            zero = first_touch_GBps(base, args, rate)
            lb = balancer_hz(base, args)
            print(f"== {base['kernel']}: balancing off {base['elapsed_s']:.2f} s, {rate:.2f} GB/s written"
                  + (f"; first touch {zero * 1e3:.0f} MB/s a writer" if zero else "")
                  + (f"; the balancer's cross-node pulls {lb:.4f} a writer and s" if lb is not None else ""))
            runs = [boot(True, k) for k in range(args.runs)]
            for r in runs:
                first = first_buffer_scan(r["samples"])
                print(f"   balancing on: {r['elapsed_s']:.2f} s; first huge PMD protected at "
                      + ("never" if first is None else f"{first:.2f} s") + "; "
                      + ", ".join(f"{c[5:]} {r.get(c, 0)}" for c in COUNTERS))
                print(f"   skipped VMAs: {json.dumps(r['skips'], sort_keys=True)}")
                print(f"   buffer skips at (s): {json.dumps(r['buffer_skip_times'])}")
                if r["tasks"] or r["sweeps"]:
                    r["placement"] = placement_summary(kernel_writers(r["tasks"]))
                    r["phases"] = sweep_phases(r["sweeps"])
                    print(f"   placement: {json.dumps(r['placement'])}; writers apart (sweeps, at sweep 5 and "
                          f"the 5th-last): {json.dumps([[round(x, 3) for x in v] for v in r['phases']])}")
                if r.get("moves"):
                    mv = r["moves"]
                    print(f"   writers' node changes (sched_migrate_task): {mv['cross']}: "
                          + ", ".join(f"{k} {v}" for k, v in mv["kinds"].items())
                          + f"; left the preferred node: {json.dumps(mv['left_preferred'])}; {mv['swaps_within']} swaps "
                          f"between a process's writers; {mv['sticks']} sticks; {mv['same_node']} same-node CPU changes")
                if r.get("migrate_outcomes"):
                    mo = r["migrate_outcomes"]
                    print(f"   task_numa_migrate's calls (instrumented kernel): {json.dumps(mo['calls'])}; "
                          f"stuck ones by what refused the candidates: {json.dumps(mo['stuck'])}")
                    if mo["after"]:
                        print(f"   the calls by what last moved the mover across nodes: {json.dumps(mo['after'])}")
                    imps = mo["stuck_below_smallimp_imps"]
                    if imps:
                        print(f"   their candidates below SMALLIMP: imp {np.percentile(imps, 25):.0f} / "
                              f"{np.median(imps):.0f} / {np.percentile(imps, 75):.0f} (quartiles, median; n {len(imps)})")
                if r["threads"]:
                    ie = [x[2] for x in r["threads"]]
                    print(f"   bound init ended at {min(ie):.2f}-{max(ie):.2f} s; passes started at (s, per mm): "
                          + "; ".join(" ".join(f"{x:.2f}" for x in v[:5]) for v in r["passes"].values()))
            res = {"kernel": base["kernel"], "history": args.history, "balancing_off_s": base["elapsed_s"], "rate_GBps": rate,
                   "first_touch_GBps": zero, "runs": runs}
            if args.model:
                prof = profile_for(base["kernel"])
                res["model_profile"] = prof
                if args.first_touch and zero is None:
                    sys.exit("vm_trace.py: --first-touch: the balancing-off run's init was no slower than a sweep")
                if args.balancer and lb is None:
                    sys.exit("vm_trace.py: --balancer: the balancing-off run's console has no sched_migrate_task events")
                res["model"] = m = model(args, rate, prof, args.seeds, zero if args.first_touch else None,
                                         lb if args.balancer else None)
                print(f"   model ({prof}, {args.seeds} seeds): {m['elapsed_s']:.2f} +- {m['elapsed_sd']:.2f} s; "
                      + ", ".join(f"{c[5:]} {m[c]:.0f}" for c in COUNTERS))
                print(f"   model's node changes (mean a run, all tasks): NUMA moves and swaps {m['task_migrations']:.1f}, "
                      f"load balancer {m['lb_migrations']:.1f}; scan period resets {m['scan_period_resets']:.1f}; "
                      f"sticks (sched_stick_numa) {m['numa_sticks']:.1f}")
                print(f"   model's numa_migrate_preferred requests (mean a run): {json.dumps(m['migrate_calls'])}")
                print(f"   model skipped VMAs (mean a run): {json.dumps(m['skips'], sort_keys=True)}")
            if any(r.get("tasks") for r in runs):
                kg = gains_summary([swap_gains(kernel_writers(r["tasks"])) for r in runs])
                res["swap_gains"] = kg
                print(f"   task_numa_compare's best swap for a grouped writer off its preferred node, from 10 s "
                      f"(swap_gains): kernel {json.dumps(kg)}"
                      + (f"; model {json.dumps(res['model']['swap_gains'])}" if args.model else ""))
            moves = [r["moves"] for r in runs if r.get("moves")]
            if moves:
                print(f"   the kernel's writers' node changes, mean a run over {len(moves)} runs (sched_migrate_task): "
                      f"{np.mean([x['cross'] for x in moves]):.1f}: "
                      + ", ".join(f"{k} {np.mean([x['kinds'][k] for x in moves]):.1f}" for k in MOVE_KINDS)
                      + f"; balancing off: {base['moves']['cross'] if base.get('moves') else '-'}")
                print("   the balancer's pulls, refilled by (sum over runs; balancing off in brackets): "
                      + ", ".join(f"{k} {sum(x['refills'][k] for x in moves)}"
                                  + (f" ({base['moves']['refills'][k]})" if base.get("moves") else "")
                                  for k in moves[0]["refills"]))
            if any(r.get("placement") for r in runs):
                print("   the kernel's placement, over its runs:")
                for line in _placement_lines([r["placement"] for r in runs if r.get("placement")]):
                    print("     " + line)
                if args.model:
                    print(f"   the model's placement, over its {args.seeds} seeds:")
                    for line in _placement_lines(m["placement"]):
                        print("     " + line)
            results.append(res)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

"""Reading the machine numalab runs on from ``/sys``: its nodes, CPUs, SMT, memory and SLIT.

:func:`read_host` returns the content of a topology file (:data:`numalab.topology.FORMAT`) that
:meth:`numalab.topology.Topology.from_dict` turns into a Topology; ``Topology.from_host()`` is the
usual way in. It reads

* ``/sys/devices/system/node``: the online nodes (``online``), each node's ``cpulist``,
  ``distance`` (its SLIT row) and ``meminfo`` (``MemTotal``), the ``has_cpu`` / ``has_memory``
  masks, and where the firmware's HMAT gives them each node's ``access0/initiators/
  read_latency`` (ns) and ``read_bandwidth`` (MB/s);
* ``/sys/devices/system/cpu``: the ``online`` and ``offline`` CPUs and every online CPU's
  ``topology/thread_siblings_list`` (SMT, and with the nodes' cpulists how the machine numbers
  its CPUs: :data:`CPU_NUMBERINGS`);
* the CPU's model name from ``lscpu`` (on the live machine) or ``/proc/cpuinfo``.

``numalab probe`` measures what sysfs has no figure for: the bandwidths
(:func:`probe_bandwidth`, numpy threads pinned per node), the core clock under load
(:func:`probe_clock`, cpufreq's ``scaling_cur_freq`` while one core, then every core, spins), and
the kernel's cost of a null system call and of a futex operation (:func:`probe_syscall`,
:func:`probe_futex`), which the futex model's kernel-path constants stand for.

Nothing is silently guessed: whatever cannot be read, or does not add up (an offline CPU, a
node whose ``has_cpu`` bit disagrees with its ``cpulist``, a sparse node numbering), is a
sentence in the result's ``warnings``; a field sysfs has no figure for (the bandwidths without
HMAT, the cache-line latencies) keeps the Topology class default with an ``assumed``
provenance naming ``numalab probe``. ``root`` is the file-system root, so tests read fixture
trees (``tests/fixtures/sysfs/``).

No numpy: plain parsing of small text files.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from .errors import NumalabValueError, check_int

__all__ = ["read_host", "parse_cpulist", "node_cpus", "probe_bandwidth", "probe_clock", "probe_syscall",
           "probe_futex", "apply_kernel", "core_cpus", "cpu_order", "CPU_NUMBERINGS"]

NODE_DIR = ("sys", "devices", "system", "node")
CPU_DIR = ("sys", "devices", "system", "cpu")

#: how a machine numbers its logical CPUs, i.e. which node's core or SMT sibling each Linux CPU
#: id (each entry of perf's CPU map) is (``Topology.cpu_numbering``; None there is the first)
CPU_NUMBERINGS = {
    "cores-first": "the first hardware thread of every core, node after node, then every core's next thread, node "
                   "after node (the order x86 firmware lists CPUs in; lscpu on 2 x 32 cores: node0 0-31,64-95)",
    "node": "node after node, each node's cores and then their SMT siblings (2 x 8 cores x 2: node0 0-15)",
    "siblings": "node after node, the hardware threads of a core adjacent (cpu0 and cpu1 share a core)",
}


def cpu_order(cpus_per_node, smt, numbering: str) -> list[int]:
    """The model's CPU of every Linux CPU id under ``numbering`` (:data:`CPU_NUMBERINGS`). The
    model numbers CPUs node by node, each node's cores first: node n's core k's j-th hardware
    thread is ``start[n] + j * cores[n] + k``. ``cpus_per_node``, ``smt``: one int per node."""
    start, cores = [], []
    for c, s in zip(cpus_per_node, smt):
        start.append(sum(cpus_per_node[:len(start)]))
        cores.append(c // s)
    nodes = range(len(cores))
    if numbering == "node":
        return list(range(sum(cpus_per_node)))
    if numbering == "cores-first":      # thread j of every core of every node, for j = 0, 1, ...
        return [start[n] + j * cores[n] + k for j in range(max(smt, default=1)) for n in nodes if j < smt[n]
                for k in range(cores[n])]
    # "siblings": node by node, core by core, a core's threads together
    return [start[n] + j * cores[n] + k for n in nodes for k in range(cores[n]) for j in range(smt[n])]


def parse_cpulist(text: str) -> list[int]:
    """``"0-3,8,10-11"`` -> ``[0, 1, 2, 3, 8, 10, 11]`` (the kernel's cpulist / nodelist
    format); an empty string is no CPU. ValueError on anything else."""
    out: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"{text.strip()!r} is not a cpulist (e.g. 0-3,8)")
        out.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    return sorted(set(out))


def _cpus_text(ids) -> str:
    """``[7]`` -> ``"CPU 7 is"``, ``[5, 6, 7]`` -> ``"CPUs 5-7 are"``."""
    return f"CPU {ids[0]} is" if len(ids) == 1 else f"CPUs {_list_text(ids)} are"


def _list_text(ids) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"``."""
    ids = sorted(ids)
    parts, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


class _Reader:
    """Files under ``root``, each read at most once; a missing or unreadable file is None and a
    warning."""

    def __init__(self, root: Path):
        self.root = root
        self.warnings: list[str] = []

    def path(self, *parts) -> Path:
        return self.root.joinpath(*parts)

    def text(self, *parts, quiet=False) -> str | None:
        p = self.path(*parts)
        try:
            return p.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            if not quiet:
                self.warnings.append(f"cannot read /{'/'.join(parts)}: {exc.strerror or exc}")
            return None

    def cpulist(self, *parts, quiet=False) -> list[int] | None:
        text = self.text(*parts, quiet=quiet)
        if text is None:
            return None
        try:
            return parse_cpulist(text)
        except ValueError as exc:
            self.warnings.append(f"/{'/'.join(parts)}: {exc}")
            return None


def node_cpus(root="/") -> dict[int, list[int]]:
    """Node id -> its online CPU ids, as :func:`read_host` counts them (what ``numalab probe``
    pins its threads to)."""
    return {int(k): v for k, v in read_host(root, lscpu=False)["host"]["node_cpus"].items()}


def _nodes(rd: _Reader) -> list[int]:
    online = rd.cpulist(*NODE_DIR, "online", quiet=True)
    dirs = sorted(int(m.group(1)) for p in (rd.path(*NODE_DIR).iterdir() if rd.path(*NODE_DIR).is_dir() else [])
                  if (m := re.fullmatch(r"node(\d+)", p.name)))
    if online is None:
        if dirs:
            rd.warnings.append("no /sys/devices/system/node/online: every node<N> directory taken as online")
        online = dirs
    missing = [n for n in online if n not in dirs]
    if missing:
        rd.warnings.append(f"online nodes {_list_text(missing)} have no node<N> directory; left out")
    nodes = [n for n in online if n in dirs]
    if nodes != list(range(len(nodes))):
        rd.warnings.append(f"node ids {_list_text(nodes)} are not 0..{len(nodes) - 1}: numalab numbers them "
                           f"{', '.join(f'{n} as {i}' for i, n in enumerate(nodes))}")
    return nodes


def _cpus(rd: _Reader, nodes: list[int]):
    """Per node its online CPUs; warnings for offline CPUs and CPUs on no node."""
    online = rd.cpulist(*CPU_DIR, "online")
    offline = rd.cpulist(*CPU_DIR, "offline", quiet=True) or []
    per_node = {}
    for n in nodes:
        cpus = rd.cpulist(*NODE_DIR, f"node{n}", "cpulist")
        if cpus is None:
            cpus = []
        if online is not None:
            off = [c for c in cpus if c not in online]
            if off:
                rd.warnings.append(f"node {n}: {_cpus_text(off)} offline; not counted")
            cpus = [c for c in cpus if c in online]
        per_node[n] = cpus
    if offline:
        rd.warnings.append(f"{_cpus_text(offline)} offline (/sys/devices/system/cpu/offline); "
                           "the topology has the online ones")
    if online is not None:
        placed = {c for cs in per_node.values() for c in cs}
        stray = [c for c in online if c not in placed]
        if stray:
            rd.warnings.append(f"online CPUs {_list_text(stray)} are on no online node; left out")
    return per_node


def _cores(rd: _Reader, cpus: list[int], quiet: bool = False) -> list[tuple]:
    """A node's physical cores: each the sorted tuple of its online CPUs among ``cpus``
    (``thread_siblings_list``; a CPU whose list names none of them is a core of its own), in the
    order of their lowest CPU."""
    mine, cores = set(cpus), set()
    for c in cpus:
        sib = rd.cpulist(*CPU_DIR, f"cpu{c}", "topology", "thread_siblings_list", quiet=quiet)
        cores.add(tuple(sorted(s for s in (sib or [c]) if s in mine)) or (c,))
    return sorted(cores, key=min)


def _smt(rd: _Reader, n: int, cpus: list[int], cores: list[tuple]) -> int:
    """Hardware threads per core of a node: its online CPUs over its ``cores`` (:func:`_cores`);
    1, with a warning, when a core has fewer online siblings than the others."""
    if not cpus:
        return 1
    sizes = {len(core) for core in cores}
    if len(sizes) == 1:
        return sizes.pop()
    rd.warnings.append(f"node {n}: {len(cpus)} online CPUs on {len(cores)} cores with {sorted(sizes)} online "
                       "threads each (an SMT sibling is offline); smt taken as 1")
    return 1


def _numbering(rd: _Reader, nodes: list[int], cpus: dict, smt: list[int], cores: dict) -> str | None:
    """Which of :data:`CPU_NUMBERINGS` the online CPU ids follow: the i-th online CPU (perf's
    CPU map) must be the model CPU :func:`cpu_order` says. ``cores``: node -> :func:`_cores`.
    None, with a warning, when none fits (the model then takes ``cores-first``)."""
    model, start = {}, 0
    for n, s in zip(nodes, smt):
        # an offline sibling made smt 1 on this node (_smt): every CPU its own core, as the model has it
        mine = cores[n] if all(len(g) == s for g in cores[n]) else [(c,) for c in sorted(cpus[n])]
        for k, core in enumerate(mine):
            for j, c in enumerate(core):
                model[c] = start + j * len(mine) + k
        start += len(cpus[n])
    actual = [model[c] for c in sorted(model)]
    counts = [len(cpus[n]) for n in nodes]
    for name in CPU_NUMBERINGS:
        if cpu_order(counts, smt, name) == actual:
            return name
    if len(actual) > 1:
        rd.warnings.append("cpu_numbering: the online CPU ids follow none of " + ", ".join(CPU_NUMBERINGS) +
                           "; taken as cores-first, so where perf bench futex hash's pinned threads run may differ")
    return None


def _packages(rd: _Reader, nodes: list[int], cpus: dict) -> int | None:
    """How many packages the nodes with CPUs sit in (``physical_package_id`` of their CPUs),
    when each node is in one package and the packages hold the nodes evenly, in node order, as
    ``Topology.packages`` describes them; None (with a warning if read but not so) otherwise."""
    of_node = []
    for n in nodes:
        if not cpus[n]:
            continue
        ids = {(rd.text(*CPU_DIR, f"cpu{c}", "topology", "physical_package_id", quiet=True) or "").strip()
               for c in cpus[n]}
        if "" in ids:
            return None                                   # not in this sysfs: one package per node
        if len(ids) > 1:
            rd.warnings.append(f"node {n}: CPUs in packages {sorted(ids)}; packages not given")
            return None
        of_node.append(ids.pop())
    order = list(dict.fromkeys(of_node))
    k = len(of_node) // max(len(order), 1)
    if len(of_node) % max(len(order), 1) or of_node != [p for p in order for _ in range(k)]:
        rd.warnings.append(f"the nodes' packages {of_node} are not consecutive, equal runs; packages not given")
        return None
    return len(order)


def _mem_gib(rd: _Reader, n: int) -> float | None:
    text = rd.text(*NODE_DIR, f"node{n}", "meminfo")
    if text is None:
        return None
    m = re.search(r"MemTotal:\s+(\d+)\s*kB", text)
    if not m:
        rd.warnings.append(f"node {n}: no MemTotal line in meminfo")
        return None
    return round(int(m.group(1)) / (1 << 20), 3)


def _distance(rd: _Reader, nodes: list[int]):
    rows = []
    for n in nodes:
        text = rd.text(*NODE_DIR, f"node{n}", "distance")
        try:
            row = [int(x) for x in (text or "").split()]
        except ValueError:
            row = []
        if len(row) != len(nodes):
            rd.warnings.append(f"node {n}: distance row {text.strip() if text else None!r} does not have "
                               f"{len(nodes)} values; the SLIT left at 10 local / 20 remote")
            return None
        rows.append(row)
    return rows


def _hmat(rd: _Reader, nodes: list[int]):
    """Per node (read_latency ns, read_bandwidth MB/s) from HMAT's access0 class, or None."""
    out = []
    for n in nodes:
        lat = rd.text(*NODE_DIR, f"node{n}", "access0", "initiators", "read_latency", quiet=True)
        bw = rd.text(*NODE_DIR, f"node{n}", "access0", "initiators", "read_bandwidth", quiet=True)
        try:
            out.append((float(lat), float(bw)) if lat and bw and float(lat) > 0 and float(bw) > 0 else None)
        except ValueError:
            out.append(None)
    return out


def _model_name(rd: _Reader, lscpu: bool) -> str | None:
    if lscpu and rd.root == Path("/") and shutil.which("lscpu"):
        try:
            res = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10, env={"LC_ALL": "C"})
            m = re.search(r"^Model name:\s*(.+)$", res.stdout, re.M)
            if m:
                return m.group(1).strip()
        except (OSError, subprocess.SubprocessError):
            pass
        rd.warnings.append("lscpu gave no model name; trying /proc/cpuinfo")
    text = rd.text("proc", "cpuinfo", quiet=True)
    m = re.search(r"^model name\s*:\s*(.+)$", text or "", re.M)
    if m:
        return m.group(1).strip()
    rd.warnings.append("no CPU model name (lscpu, /proc/cpuinfo)")
    return None


def _masks(rd: _Reader, nodes, cpus, mem):
    for mask, have, what in (("has_cpu", [n for n in nodes if cpus[n]], "CPUs"),
                             ("has_memory", [n for n in nodes if (mem[n] or 0) > 0], "memory")):
        listed = rd.cpulist(*NODE_DIR, mask, quiet=True)
        if listed is None:
            rd.warnings.append(f"no /sys/devices/system/node/{mask}; which nodes have {what} taken from the nodes")
        elif sorted(set(listed) & set(nodes)) != have:
            rd.warnings.append(f"{mask} lists nodes {_list_text(listed) or 'none'} but nodes {_list_text(have) or 'none'} "
                               f"have {what}; numalab follows the per-node files")


def read_host(root="/", lscpu: bool = True) -> dict:
    """The machine under ``root`` as a topology file's content (module docstring), with a
    ``"host"`` section: node ids, each node's online CPU ids, the model name and the raw HMAT
    figures."""
    rd = _Reader(Path(root))
    nodes = _nodes(rd)
    if not nodes:
        _raise_no_nodes(root, rd.warnings)
    cpus = _cpus(rd, nodes)
    mem = {n: _mem_gib(rd, n) for n in nodes}
    _masks(rd, nodes, cpus, mem)
    cores = {n: _cores(rd, cpus[n]) for n in nodes}      # each sibling list read once
    smt = [_smt(rd, n, cpus[n], cores[n]) for n in nodes]
    dist = _distance(rd, nodes)
    numbering = _numbering(rd, nodes, cpus, smt, cores)
    packages = _packages(rd, nodes, cpus)
    hmat = _hmat(rd, nodes)
    model = _model_name(rd, lscpu)
    top = str(root).rstrip("/")
    here = f"read from {top}/sys/devices/system"
    where = f"{model or 'unknown CPU'}, {here}"
    values = {"nodes": len(nodes), "cpus_per_node": [len(cpus[n]) for n in nodes], "smt": smt}
    prov = {
        "nodes": _p("measurement", f"the online nodes ({here}/node/online)"),
        "cpus_per_node": _p("measurement", f"online CPUs of each node (node<N>/cpulist and cpu/online), {here}"),
        "smt": _p("measurement", f"online CPUs over cores (cpu<N>/topology/thread_siblings_list), {here}"),
    }
    if packages is not None:
        values["packages"] = packages
        prov["packages"] = _p("measurement", f"the distinct physical_package_id of the nodes' CPUs "
                                             f"(cpu<N>/topology/physical_package_id), {here}")
    if numbering is not None:
        values["cpu_numbering"] = numbering
        prov["cpu_numbering"] = _p("measurement", f"the online CPU ids of each node (node<N>/cpulist) and their "
                                                  f"cores (cpu<N>/topology/thread_siblings_list), {here}")
    missing_mem = [n for n in nodes if mem[n] is None]
    if missing_mem:
        rd.warnings.append(f"nodes {_list_text(missing_mem)}: no MemTotal; memory taken as 128 GiB (the class default)")
    values["mem_per_node_GiB"] = [128.0 if mem[n] is None else mem[n] for n in nodes]
    prov["mem_per_node_GiB"] = _p("measurement" if not missing_mem else "assumed",
                                  f"MemTotal of node<N>/meminfo, {here}")
    if dist is not None:
        values["distance"] = dist
        prov["distance"] = _p("measurement", f"the firmware's SLIT as node<N>/distance, {here}")
    if all(h is not None for h in hmat):
        lat = [h[0] for h in hmat]
        values["local_latency_ns"] = lat
        # HMAT gives one (best-initiator) latency; the remote one keeps the class default's ratio
        values["remote_latency_ns"] = [round(x * 140.0 / 90.0, 1) for x in lat]
        values["node_bw_GBps"] = [h[1] / 1000.0 for h in hmat]
        src = f"the firmware's HMAT, node<N>/access0/initiators/read_latency and read_bandwidth, {here}"
        prov["local_latency_ns"] = _p("datasheet", f"{src} (from the node's nearest CPUs)")
        prov["remote_latency_ns"] = _p("derived", f"the HMAT read latency x 140/90 (the class default's remote/local "
                                                  f"ratio; HMAT gives only the nearest initiator's), {here}")
        prov["node_bw_GBps"] = _p("datasheet", f"{src}: a firmware figure, usually the peak; numalab probe measures "
                                               "the sustained one")
    elif any(h is not None for h in hmat):
        rd.warnings.append("HMAT access0 figures exist for some nodes only; latencies and bandwidths left at the "
                           "class defaults")
    unset = [f for f in ("local_latency_ns", "remote_latency_ns", "node_bw_GBps", "link_bw_GBps", "thread_bw_GBps")
             if f not in values]
    if unset:
        rd.warnings.append(f"{', '.join(unset)}: sysfs has no figure; the class defaults (numalab probe measures "
                           "the bandwidths)")
    for f in unset + ["line_same_node_ns", "line_remote_ns"]:
        prov[f] = _p("assumed", "the Topology class default: sysfs has no figure" +
                     ("; numalab probe measures it" if f.endswith("GBps") else ""))
    host = (rd.text("proc", "sys", "kernel", "hostname", quiet=True) or "").strip()
    return {
        "format": "numalab-topology/1",
        "name": f"host-{host}" if host else "host",
        "source": where,
        "topology": values,
        "provenance": prov,
        "warnings": list(rd.warnings),
        "host": {"node_ids": nodes, "node_cpus": {str(n): cpus[n] for n in nodes}, "model_name": model,
                 "hmat": [None if h is None else {"read_latency_ns": h[0], "read_bandwidth_MBps": h[1]} for h in hmat]},
    }


def _p(kind: str, source: str) -> dict:
    return {"kind": kind, "source": source}


def _raise_no_nodes(root, warnings):
    raise NumalabValueError(f"root={str(root)!r}: no NUMA node under sys/devices/system/node (a kernel without "
                            f"CONFIG_NUMA, or not a Linux sysfs tree)" + (f"; {'; '.join(warnings)}" if warnings else ""))


# --------------------------------------------------------------------------------- numalab probe
#: bytes a pinned reader or filler streams per call are whole buffers: one call releases the GIL
#: for the whole stream (libc's memset through ctypes, an int64 add.reduce), so threads run in parallel
PROBE_DEFAULT_MB = 1024         # per node: the buffers of all its CPUs together
PROBE_SINGLE_MB = 512           # one thread's buffer
PROBE_REPEATS = 5
_MIN_THREAD_MB = 16


def _now() -> float:
    import time

    return time.perf_counter()


class _Pinned:
    """A thread pinned to one CPU (``os.sched_setaffinity(0, ...)`` pins the calling thread on
    Linux) that runs the calls it is given, one at a time, and hands back their results."""

    def __init__(self, cpu: int):
        import queue
        import threading

        self.cpu = cpu
        self._todo, self._done = queue.Queue(), queue.Queue()
        self._thread = threading.Thread(target=self._loop, name=f"numalab-probe-cpu{cpu}", daemon=True)
        self._thread.start()

    def _loop(self):
        import os

        try:
            os.sched_setaffinity(0, {self.cpu})
        except OSError as exc:
            self._done.put((False, exc))
            return
        while True:
            fn = self._todo.get()
            if fn is None:
                return
            try:
                self._done.put((True, fn()))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                self._done.put((False, exc))

    def submit(self, fn):
        self._todo.put(fn)

    def result(self):
        ok, value = self._done.get()
        if not ok:
            raise value
        return value

    def stop(self):
        self._todo.put(None)


_MEMSET = None


def _memset(buf, value: int) -> None:
    """libc's ``memset`` over ``buf``: the call glibc's ``bzero`` makes, so the probe's store
    stream is the benchmark's own (rep stosb for large sizes on x86). ctypes releases the GIL
    for the call, as numpy's ``fill`` would; numpy's ``fill`` is the fallback without a libc."""
    global _MEMSET
    if _MEMSET is None:
        import ctypes

        try:
            fn = ctypes.CDLL(None).memset
            fn.argtypes, fn.restype = (ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t), ctypes.c_void_p
            _MEMSET = fn
        except (OSError, AttributeError):
            _MEMSET = False
    if _MEMSET:
        _MEMSET(buf.ctypes.data, value, buf.nbytes)
    else:
        buf.fill(value)


def _bzero(buf):
    """Zeros over the buffer's zeros: autonuma-benchmark's ``bzero`` loops (numa01, numa02 and
    the others write zeros over zeros after their first pass). Some machines write zero lines
    faster than data (a zeroing fill that skips the read-for-ownership, or a dropped write-back of
    an unchanged zero line); the benchmarks get that speed, so the probe measures it."""
    _memset(buf, 0)


def _fill_ones(buf):
    """Ones by the same call: a data store stream, which no zero optimisation applies to, for
    comparison with :func:`_bzero` (the probe runs it after the zero fill, so every repeat but
    the first writes ones over ones)."""
    _memset(buf, 1)


def _read(buf):
    import numpy as np

    np.add.reduce(buf.view(np.int64))


def _alloc(nbytes: int, node: int | None = None):
    """A buffer first-touched by the calling (pinned) thread: on its node, or on ``node`` under a
    thread-local MPOL_BIND (for a node without CPUs)."""
    import numpy as np

    if node is not None:
        _set_mempolicy_bind(node)
    try:
        buf = np.empty(nbytes, dtype=np.uint8)
        buf.fill(0)
    finally:
        if node is not None:
            _set_mempolicy_bind(None)
    return buf


#: set_mempolicy's system call number per machine (asm/unistd_64.h; the generic table for arm64)
_SYS_SET_MEMPOLICY = {"x86_64": 238, "aarch64": 237, "ppc64le": 261, "s390x": 270}


def _set_mempolicy_bind(node: int | None) -> None:
    """The calling thread's policy: MPOL_BIND to ``node``, or MPOL_DEFAULT for None (through
    ctypes: no compiler, no libnuma)."""
    import ctypes
    import os

    nr = _SYS_SET_MEMPOLICY.get(os.uname().machine)
    if nr is None:
        raise OSError(f"set_mempolicy: unknown system call number on {os.uname().machine}")
    libc = ctypes.CDLL(None, use_errno=True)
    if node is None:
        res = libc.syscall(nr, 0, None, ctypes.c_ulong(0))
    else:
        words = node // 64 + 1
        mask = (ctypes.c_ulong * words)()
        mask[node // 64] = 1 << (node % 64)
        res = libc.syscall(nr, 2, mask, ctypes.c_ulong(words * 64 + 1))   # MPOL_BIND
    if res != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"set_mempolicy: {os.strerror(err)}")


def _timed(workers, bufs, op, repeats: int):
    """``op`` on every (worker, buffer) pair at once, ``repeats`` times: aggregate GB/s of each
    repeat (the bytes of all buffers over the time from the common start to the last finish)."""
    import threading

    total = sum(b.nbytes for b in bufs)
    rates = []
    for _ in range(repeats):
        start = threading.Barrier(len(workers) + 1)

        def job(buf, start=start):
            start.wait()
            t0 = _now()
            op(buf)
            return t0, _now()

        for w, b in zip(workers, bufs):
            w.submit(lambda b=b: job(b))
        start.wait()
        times = [w.result() for w in workers]
        rates.append(total / (max(t1 for _, t1 in times) - min(t0 for t0, _ in times)) / 1e9)
    return rates


def probe_bandwidth(node_cpus: dict, *, mem_free_GiB: dict | None = None, total_mb: int = PROBE_DEFAULT_MB,
                    single_mb: int = PROBE_SINGLE_MB, repeats: int = PROBE_REPEATS, progress=None) -> dict:
    """Measure each node's memory bandwidth with numpy threads pinned to its CPUs (what ``numalab
    probe`` runs): per node with CPUs, the fill (libc ``memset`` of zeros over zeros, as the
    benchmarks' ``bzero``) and read (an int64 ``add.reduce``) bandwidth of all its CPUs at once on
    buffers each thread first-touched, and of one thread, and the fill of ones over ones by all
    its CPUs (``fill_nonzero``: against the zero fill it shows a machine that writes zeros
    faster than data); per pair of nodes, the read bandwidth of all CPUs of one node (and of one
    of its threads) on memory first-touched on the other (a node without CPUs: placed by a
    thread-local MPOL_BIND). Every figure is the best of ``repeats`` (GB/s = 1e9 B/s) with the
    range of the repeats. ``node_cpus``: node id -> its CPU ids; ``progress(step_text)`` is
    called once per measurement. Returns the ``"probe"`` section of the topology file."""
    import os

    out = {"repeats": repeats, "nodes": {}, "remote": [], "warnings": []}
    # a cpuset (a container, taskset) may withhold online CPUs: pin only to the allowed ones
    allowed = os.sched_getaffinity(0)
    held = sorted(c for cs in node_cpus.values() for c in cs if c not in allowed)
    if held:
        out["warnings"].append(f"{_cpus_text(held)} not allowed to this process (its CPU affinity or "
                               "cpuset); measured without them")
    node_cpus = {n: [c for c in cs if c in allowed] for n, cs in node_cpus.items()}
    nodes = sorted(node_cpus)
    cpu_nodes = [n for n in nodes if node_cpus[n]]
    if not cpu_nodes:
        raise NumalabValueError("no CPU of any node is allowed to this process; nothing can be measured")
    workers = {c: _Pinned(c) for n in cpu_nodes for c in node_cpus[n]}
    step = progress or (lambda text: None)
    t_start = _now()
    try:
        for n in nodes:
            _probe_node(n, nodes, node_cpus, workers, out, mem_free_GiB, total_mb, single_mb, repeats, step)
    finally:
        for w in workers.values():
            w.stop()
    out["seconds"] = round(_now() - t_start, 2)
    return out


def _budget_bytes(n, mem_free_GiB, mb) -> int:
    free = (mem_free_GiB or {}).get(n)
    cap = mb << 20
    if free is not None:
        cap = min(cap, int(free * (1 << 30) / 4))     # never more than a quarter of the free memory
    return max(cap, _MIN_THREAD_MB << 20)


def _probe_node(n, nodes, node_cpus, workers, out, mem_free_GiB, total_mb, single_mb, repeats, step):
    """The local measurements of node ``n`` (if it has CPUs) and the reads of its memory from the
    other nodes' CPUs."""
    cpu_nodes = [m for m in nodes if node_cpus[m]]
    mine = [workers[c] for c in node_cpus[n]]
    budget = _budget_bytes(n, mem_free_GiB, total_mb)
    # who places the buffers: the node's own CPUs, or (no CPUs) the first CPU of the first node
    # with CPUs under MPOL_BIND to n (where it runs does not matter to a bound allocation)
    placers = mine or [workers[node_cpus[cpu_nodes[0]][0]]]
    count = len(mine) or len(node_cpus[cpu_nodes[0]])          # one buffer per placing (or reading) CPU
    per = max(_MIN_THREAD_MB << 20, budget // count) // 4096 * 4096
    single = min(single_mb << 20, budget) // 4096 * 4096
    step(f"node {n}: placing {count} x {per >> 20} MiB + {single >> 20} MiB")
    bind = None if mine else n
    # every placer first-touches its buffers at once; each thread's results in submission order
    order = [placers[i % len(placers)] for i in range(count)] + [placers[0]]
    for w, size in zip(order, [per] * count + [single]):
        w.submit(lambda size=size: _alloc(size, bind))
    results = []
    for w in order:                       # all collected, so no result is left for a later call
        try:
            results.append(w.result())
        except OSError as exc:
            results.append(exc)
    failed = [r for r in results if isinstance(r, OSError)]
    if failed:
        out["warnings"].append(f"node {n}: its memory cannot be placed ({failed[0]}); not measured")
        return
    bufs, one = results[:-1], results[-1]
    rec = {"cpus": list(node_cpus[n]), "buffer_MiB_per_thread": per >> 20, "single_MiB": single >> 20}
    if mine:
        # zeros first, while the buffers hold the zeros _alloc wrote; the ones after them
        for key, ws, bs, op in (("fill", mine, bufs, _bzero), ("thread_fill", mine[:1], [one], _bzero),
                                ("fill_nonzero", mine, bufs, _fill_ones), ("read", mine, bufs, _read),
                                ("thread_read", mine[:1], [one], _read)):
            step(f"node {n}: {key.replace('_', ' ')}")
            rates = _timed(ws, bs, op, repeats)
            rec[f"{key}_GBps"], rec[f"{key}_band"] = round(max(rates), 2), [round(min(rates), 2), round(max(rates), 2)]
    out["nodes"][str(n)] = rec
    for m in cpu_nodes:
        if m == n:
            continue
        theirs = [workers[c] for c in node_cpus[m]]
        step(f"node {m} CPUs reading node {n} memory")
        rates = _timed(theirs, [bufs[i % len(bufs)] for i in range(len(theirs))], _read, repeats)
        one_rates = _timed(theirs[:1], [one], _read, repeats)
        out["remote"].append({"cpu_node": m, "mem_node": n, "read_GBps": round(max(rates), 2),
                              "read_band": [round(min(rates), 2), round(max(rates), 2)],
                              "thread_read_GBps": round(max(one_rates), 2),
                              "thread_read_band": [round(min(one_rates), 2), round(max(one_rates), 2)]})


# ------------------------------------------------------------------------- the core clock (probe)
#: seconds the clock probe keeps the cores busy before it reads their clocks. On x86, cpufreq's
#: ``scaling_cur_freq`` is the APERF/MPERF average since the last read or tick, so the governor's
#: ramp-up is over and a few ticks are averaged well within this
CLOCK_SPIN_S = 0.5
#: what each spinning process runs (``python -I -S -c``, argv[1] its CPU): pin, say "ready", wait
#: for the common deadline (CLOCK_MONOTONIC is one clock for every process), spin an integer loop
#: until then, print its CPU time over its wall time. Processes, not threads: no GIL to share, so
#: every core of a large machine stays busy; no numpy, so each starts in milliseconds
_SPIN = """
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
print("ready", flush=True)
deadline = float(sys.stdin.readline())
c0, t0, x = time.process_time(), time.monotonic(), 0
while time.monotonic() < deadline:
    for _ in range(10000):
        x += 1
print((time.process_time() - c0) / max(time.monotonic() - t0, 1e-9), flush=True)
"""


def core_cpus(root, node_cpus: dict) -> dict:
    """Node id -> one CPU of each of its physical cores (the lowest online thread sibling), in
    order: the CPUs the clock probe keeps busy (the futex model's clock counts busy cores,
    :func:`numalab.futex.costs.active_cores`)."""
    rd = _Reader(Path(root))
    return {n: [core[0] for core in _cores(rd, cpus, quiet=True)] for n, cpus in node_cpus.items()}


def _khz(rd: _Reader, cpu: int, name: str) -> int | None:
    text = rd.text(*CPU_DIR, f"cpu{cpu}", "cpufreq", name, quiet=True)
    try:
        return int(text.split()[0]) if text else None
    except ValueError:
        return None


def spin_and_read(cpus: list, seconds: float, read):
    """Keep every CPU of ``cpus`` busy (one pinned process each, :data:`_SPIN`), call ``read()``
    once all have spun ``seconds``, stop them; returns ``(read(), the lowest busy share)``, the
    share being a process's CPU time over its wall time (0 for one that could not pin)."""
    import subprocess
    import sys
    import time

    procs = [subprocess.Popen([sys.executable, "-I", "-S", "-c", _SPIN, str(c)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for c in cpus]
    try:
        ready = [p.stdout.readline().strip() == "ready" for p in procs]
        deadline = time.monotonic() + seconds + 0.2
        for p, ok in zip(procs, ready):
            if ok:
                p.stdin.write(f"{deadline!r}\n")
                p.stdin.flush()
        time.sleep(seconds)
        values = read()
        shares = []
        for p, ok in zip(procs, ready):
            out = p.communicate(timeout=seconds + 30)[0].strip() if ok else ""
            shares.append(float(out) if out else 0.0)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return values, min(shares)


def probe_clock(node_cpus: dict, root="/", *, seconds: float = CLOCK_SPIN_S, spin=None, progress=None) -> dict:
    """Measure the core clock under load (what ``numalab probe`` runs after the bandwidths):
    cpufreq's ``scaling_cur_freq`` of a core while it alone spins (``turbo_GHz``: the maximum
    turbo) and of every core while all of every node spin (``all_core_GHz``: their mean, with
    the lowest and highest core as its band). One CPU per physical core spins
    (:func:`core_cpus`): an SMT sibling does not raise the busy-core count turbo depends on.
    Without cpufreq (a virtual machine, a kernel without CONFIG_CPU_FREQ) nothing is measured
    and a warning says so. ``spin(cpus, seconds, read)`` replaces :func:`spin_and_read` (tests);
    ``progress(step_text)`` is called before each of the two measurements. Returns the
    ``"clock"`` part of the topology file's ``"probe"`` section (GHz = 1e6 kHz)."""
    import os

    rd = _Reader(Path(root))
    allowed = os.sched_getaffinity(0) if spin is None else None
    cores = core_cpus(root, node_cpus)
    busy = [c for n in sorted(cores) for c in cores[n] if allowed is None or c in allowed]
    here = f"{str(root).rstrip('/')}/sys/devices/system/cpu"
    out = {"warnings": [], "seconds": 0.0}
    if not busy or _khz(rd, busy[0], "scaling_cur_freq") is None:
        out["warnings"].append(f"core clock: not measured: no cpu<N>/cpufreq/scaling_cur_freq under {here} (a "
                               "virtual machine, or a kernel without CONFIG_CPU_FREQ); all_core_ghz and turbo_ghz "
                               "not given, so the futex costs stay at their reference clock")
        return out
    held = sum(len(cs) for cs in cores.values()) - len(busy)
    if held:
        out["warnings"].append(f"core clock: {held} core(s) not allowed to this process; the all-core clock was "
                               f"measured with {len(busy)} busy cores, so it may read high")
    step = progress or (lambda text: None)
    spin = spin or spin_and_read
    t0 = _now()
    step("core clock: one core busy")
    one, share_one = spin([busy[0]], seconds, lambda: [_khz(rd, busy[0], "scaling_cur_freq")])
    step(f"core clock: {len(busy)} cores busy")
    every, share_all = spin(busy, seconds, lambda: [_khz(rd, c, "scaling_cur_freq") for c in busy])
    every = [v for v in every if v]
    if not one[0] or not every:
        out["warnings"].append(f"core clock: not measured: scaling_cur_freq unreadable under load under {here}")
        return out
    out.update(turbo_GHz=round(one[0] / 1e6, 3), turbo_cpu=busy[0],
               all_core_GHz=round(sum(every) / len(every) / 1e6, 3),
               all_core_band=[round(min(every) / 1e6, 3), round(max(every) / 1e6, 3)], cores=len(busy),
               busy_share=round(min(share_one, share_all), 3), spin_s=seconds, seconds=round(_now() - t0, 2))
    for key, name in (("driver", "scaling_driver"), ("governor", "scaling_governor")):
        out[key] = (rd.text(*CPU_DIR, f"cpu{busy[0]}", "cpufreq", name, quiet=True) or "").strip() or None
    for key, name in (("cpuinfo_max_GHz", "cpuinfo_max_freq"), ("base_GHz", "base_frequency")):
        khz = _khz(rd, busy[0], name)
        out[key] = None if khz is None else round(khz / 1e6, 3)
    if out["busy_share"] < 0.9:
        out["warnings"].append(f"core clock: a spinning process was busy only {out['busy_share']:.0%} of the time "
                               "(other load); the clocks may be averaged with idle time")
    return out




#: calls a syscall probe times per repeat, and its repeats: ~0.1 s each at a few hundred ns a call
SYSCALL_CALLS = 200_000
SYSCALL_REPEATS = 5


def utc_minute() -> str:
    """Now, to the minute, as the probes' provenance dates it ("2026-12-08 03:41 UTC")."""
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _ns_per_call(fn, calls: int) -> float:
    """Wall ns per call of ``fn()`` over ``calls`` calls in a plain loop (the syscall probes:
    what the loop and the call cost cancels in their differences)."""
    import time

    t0 = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    return (time.perf_counter_ns() - t0) / calls


def probe_syscall(*, calls: int = SYSCALL_CALLS, repeats: int = SYSCALL_REPEATS) -> dict:
    """A null system call's round trip (ns): ``os.getppid()`` (one ``getppid`` system call, no
    work in the kernel) timed in a loop, less the same loop calling ``int()`` (a builtin call that
    enters no kernel), so the interpreter's call overhead cancels to within the few ns of building
    the result. That is the entry and exit with this kernel's and CPU's mitigations (KPTI,
    retpolines, return thunks, buffer clears), the part of every futex operation
    ``FutexCosts.syscall_ns`` stands for. The best (lowest) of ``repeats``, with their range, and
    the seconds it took. On the Zen 4 guest of docs/futex.md it gave 180-188 ns (three probes)
    where a C loop of ``syscall(SYS_getppid)`` took 170-181 ns."""
    import os

    calls, repeats = check_int("calls", calls, lo=1, hi=10**8), check_int("repeats", repeats, lo=1, hi=1000)
    t_start = _now()
    runs = [max(0.0, _ns_per_call(os.getppid, calls) - _ns_per_call(int, calls)) for _ in range(repeats)]
    return {"null_syscall_ns": round(min(runs), 1), "band": [round(min(runs), 1), round(max(runs), 1)],
            "calls": calls, "repeats": repeats, "seconds": round(_now() - t_start, 2),
            "method": "os.getppid() loop less an int() loop, per call"}


#: (futex, getppid) system call numbers by ``platform.machine()``: the futex probe calls them
#: through libc's ``syscall``, which Python's ``os`` module does not expose for futex
_SYSCALL_NR = {"x86_64": (202, 110), "aarch64": (98, 173), "arm64": (98, 173), "riscv64": (98, 173)}
#: calls of each kind per repeat: ~0.05 s at a few hundred ns a call (ctypes' own cost included)
FUTEX_CALLS = 100_000
#: FUTEX_WAIT, and FUTEX_PRIVATE_FLAG (uapi linux/futex.h)
_FUTEX_WAIT, _FUTEX_PRIVATE_FLAG = 0, 128


def probe_futex(*, calls: int = FUTEX_CALLS, repeats: int = SYSCALL_REPEATS) -> dict:
    """What one ``perf bench futex hash`` operation costs in the kernel beyond a null system call
    (ns), on this machine: a ``FUTEX_WAIT`` whose expected value is wrong, so ``futex_wait_setup``
    finds the mismatch under the hash-bucket lock and returns ``-EAGAIN`` (the benchmark's
    operation), one thread, its bucket line hot in this core's cache.

    Three loops through the same ctypes call with the same five arguments -- ``getppid`` (a null
    system call that ignores them), ``FUTEX_WAIT | FUTEX_PRIVATE_FLAG`` and ``FUTEX_WAIT`` (a
    shared key: ``get_futex_key``'s ``get_user_pages_fast`` page walk and folio reference) -- run
    alternately; the best (lowest) of ``repeats`` of each. The interpreter's and ctypes' cost per
    call is the same in all three and cancels in the differences:

    * ``futex_private_ns``: private less null -- dispatch, key, hash, the private hash's
      reference where the kernel takes one, the bucket's waiters count, lock, value check and
      unlock, with this kernel's mitigations on every call and return (the futex model's
      ``futex_path_ns + hash_ns + 2 atomic_ns + critical_section_ns + line_self_ns``);
    * ``futex_shared_ns``: shared less null (the same plus the page walk, ``gup_ns``).

    Each difference's ``band`` is the lowest and highest of the repeats' (and the figure). Not on
    an architecture without a known futex system call number, where libc has no ``syscall``, nor
    where the call does not return ``EAGAIN`` (a seccomp filter's ``ENOSYS``): then
    ``{"skipped": why}``."""
    import ctypes
    import errno
    import functools
    import platform

    calls, repeats = check_int("calls", calls, lo=1, hi=10**8), check_int("repeats", repeats, lo=1, hi=1000)
    nrs = _SYSCALL_NR.get(platform.machine())
    try:
        libc_syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        libc_syscall = None
    if nrs is None or libc_syscall is None:
        why = (f"no futex system call number known for {platform.machine()!r}" if nrs is None
               else "libc has no syscall()")
        return {"skipped": why}
    libc_syscall.restype = ctypes.c_long
    futex_nr, null_nr = nrs
    word = (ctypes.c_int * 16)()           # a 64-byte futex word area, value 0
    addr, wrong, timeout = ctypes.c_void_p(ctypes.addressof(word)), ctypes.c_int(1), ctypes.c_void_p(0)
    kinds = {"null": (ctypes.c_long(null_nr), ctypes.c_int(_FUTEX_WAIT | _FUTEX_PRIVATE_FLAG)),
             "private": (ctypes.c_long(futex_nr), ctypes.c_int(_FUTEX_WAIT | _FUTEX_PRIVATE_FLAG)),
             "shared": (ctypes.c_long(futex_nr), ctypes.c_int(_FUTEX_WAIT))}

    # the timed path must be the wrong-value return (-EAGAIN), not a refusal (ENOSYS under a
    # seccomp filter, EINVAL): anything else would time a different path
    for k in ("private", "shared"):
        ctypes.set_errno(0)
        rc = libc_syscall(kinds[k][0], addr, kinds[k][1], wrong, timeout)
        err = ctypes.get_errno()
        if rc != -1 or err != errno.EAGAIN:
            return {"skipped": f"a {k} FUTEX_WAIT with a wrong value returned {rc} ({errno.errorcode.get(err, err)}), "
                               "not -1 (EAGAIN): the futex system call is not the benchmark's here"}
    t_start = _now()
    runs = {k: [] for k in kinds}
    for _ in range(repeats):
        for k, (nr, op) in kinds.items():
            runs[k].append(_ns_per_call(functools.partial(libc_syscall, nr, addr, op, wrong, timeout), calls))
    out = {"calls": calls, "repeats": repeats}
    for k in ("private", "shared"):
        best = round(max(0.0, min(runs[k]) - min(runs["null"])), 1)
        diffs = [max(0.0, t - n) for t, n in zip(runs[k], runs["null"])]
        out[f"futex_{k}_ns"] = best
        out[f"{k}_band"] = [min(round(min(diffs), 1), best), max(round(max(diffs), 1), best)]
    out.update(seconds=round(_now() - t_start, 2),
               method="FUTEX_WAIT with a wrong value (private, then shared) less getppid, through the same "
                      "ctypes syscall() call")
    return out


def apply_kernel(data: dict, sc: dict, fx: dict, where: str) -> list[str]:
    """Set ``syscall_ns``, ``futex_private_ns`` and ``futex_shared_ns`` of ``data`` (a topology
    file's content) from ``sc`` (a :func:`probe_syscall` result) and ``fx`` (a :func:`probe_futex`
    result), each with its provenance; returns a warning where the futex operation could not be
    timed. ``numalab probe`` and ``Topology.from_host(kernel_costs=True)`` call it."""
    fields = [("syscall_ns", sc["null_syscall_ns"], sc["band"], f"{sc['method']}, best of {sc['repeats']}")]
    if "skipped" in fx:
        warning = [f"futex_private_ns, futex_shared_ns: not measured ({fx['skipped']}); the futex model's "
                   "futex_path_ns and gup_ns stay as stated"]
    else:
        warning = []
        fields += [(f"futex_{k}_ns", fx[f"futex_{k}_ns"], fx[f"{k}_band"], f"{fx['method']} ({k}), best of "
                    f"{fx['repeats']}; the range is the repeats' differences") for k in ("private", "shared")]
    for name, value, band, how in fields:
        data["topology"][name] = value
        data["provenance"][name] = {"kind": "measurement", "source": f"{where}: {how}", "band": band,
                                    "band_source": f"the range of the repeats ({where})"}
    return warning


def mem_free_gib(root, node_ids) -> dict:
    """Node id -> its MemFree in GiB (None where meminfo has none): the probe's buffers stay
    within a quarter of it."""
    out = {}
    for n in node_ids:
        try:
            text = Path(root).joinpath(*NODE_DIR, f"node{n}", "meminfo").read_text()
        except OSError:
            text = ""
        m = re.search(r"MemFree:\s+(\d+)\s*kB", text)
        out[n] = int(m.group(1)) / (1 << 20) if m else None
    return out

"""Machine topologies: nodes, their CPUs and memory, SLIT distances, latencies and bandwidths.

A :class:`Topology` is plain data that the NUMA-balancing engine (through :mod:`numalab.costs`)
and the futex model read. Every field but ``nodes``, ``distance`` and the two cache-line
latencies holds one value per node: a tuple of ``nodes`` values, or one scalar meaning the same
on every node (``Topology(nodes=2, cpus_per_node=64)``; a tuple of equal values is stored as that
scalar, so both spellings are the same machine). Code that models the machine reads the per-node
form (:meth:`Topology.per_node`, :attr:`Topology.node_cpus`, ...), never the scalar.

A node may have no CPUs (``cpus_per_node`` 0: a memory-only node such as CXL memory, HBM or
PMEM, ``has_cpu`` false in sysfs): it holds pages but runs no thread and is never a task's
preferred node (the kernel's ``task_numa_placement`` moves a CPU-less choice to the nearest node
with CPUs, :attr:`Topology.nearest_cpu_node`). A node may have no memory (``mem_per_node_GiB``
0): its threads' first touches land on the nearest node with memory
(:attr:`Topology.local_memory_node`, the kernel's ``numa_mem_id``), and a migration to it fails
as to a full node.

Presets are files under ``data/topologies/`` (one JSON file per machine, :data:`FORMAT`), every
field with its :class:`~numalab.provenance.Provenance`; :meth:`Topology.load` reads such a file
(``numalab probe`` writes one for the machine it runs on, :meth:`Topology.from_host` describes
the machine from ``/sys``), :meth:`Topology.save` writes one.

Units are in the field names: ``_ns`` nanoseconds, ``_GBps`` gigabytes (1e9 B) per second,
``_GiB`` gibibytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import textwrap
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path

import numpy as np

from .errors import NumalabValueError, check_choice, check_in_file, check_int, check_number
from .machine import CPU_NUMBERINGS, cpu_order
from .provenance import Provenance
from .resources import shipped_dir

__all__ = ["Topology", "PRESET_SOURCES", "PRESET_ALIASES", "PER_NODE", "FIELDS", "FORMAT", "check_topology", "dumps"]


#: most logical CPUs a topology may have (the kernel's largest CONFIG_NR_CPUS)
MAX_CPUS = 8192

#: most switches (link endpoints that are not nodes: an IO die, a CXL switch) a topology may have
MAX_SWITCHES = 64

#: the fields that hold one value per node, with their kind and bounds: (integer?, lo, lo open?)
PER_NODE = {
    "cpus_per_node": (True, 0, False),
    "smt": (True, 1, False),
    "mem_per_node_GiB": (False, 0.0, False),
    "node_bw_GBps": (False, 0.0, True),
    "write_efficiency": (False, 0.0, True),
    "link_bw_GBps": (False, 0.0, True),
    "local_latency_ns": (False, 0.0, True),
    "remote_latency_ns": (False, 0.0, True),
    "thread_bw_GBps": (False, 0.0, True),
}
_HI = {"cpus_per_node": 65536, "smt": 8, "write_efficiency": 1.0}

#: the fields of the model, in file order (``name`` and ``source`` describe it)
FIELDS = ("nodes", "cpus_per_node", "distance", "smt", "local_latency_ns", "remote_latency_ns", "node_bw_GBps",
          "write_efficiency", "link_bw_GBps", "mem_per_node_GiB", "thread_bw_GBps", "line_same_node_ns", "line_remote_ns",
          "links", "all_core_ghz", "turbo_ghz", "cpu_numbering", "packages", "syscall_ns", "futex_private_ns",
          "futex_shared_ns")

#: the fields that may be None (not given): a topology file and a Dataset's attrs leave them out
OPTIONAL = ("links", "all_core_ghz", "turbo_ghz", "cpu_numbering", "packages", "syscall_ns", "futex_private_ns",
            "futex_shared_ns")

#: the kernel's costs on this machine that ``numalab probe`` measures (ns, at one busy core's
#: clock): None where not measured, and the futex model's stated constants stand
KERNEL_COSTS = ("syscall_ns", "futex_private_ns", "futex_shared_ns")


#: the ``format`` of a topology file
FORMAT = "numalab-topology/1"


@dataclass(frozen=True)
class Topology:
    """A NUMA machine as the kernel sees it.

    Every per-node field (:data:`PER_NODE`) takes a scalar (the same on every node) or one value
    per node.

    Parameters
    ----------
    nodes : int
        Number of NUMA nodes (``num_online_nodes``), memory-only nodes included.
    cpus_per_node : int or sequence of int
        Logical CPUs of each node, SMT siblings included (``ncpus`` is their sum: what
        ``numactl --hardware`` lists and autonuma-benchmark's ``preproc.awk`` counts as C). 0
        for a memory-only node (CXL, HBM).
    distance : 2-D array-like of int, optional
        The ACPI SLIT matrix (10 = local); row ``i`` is node ``i``'s ``/sys/devices/system/node/
        node<i>/distance``. Default: 10 on the diagonal, 20 elsewhere.
    smt : int or sequence of int
        Hardware threads per core on each node (1 or 2).
    local_latency_ns, remote_latency_ns : float or sequence of float
        Idle load-to-use latency of each node's memory from a CPU at SLIT distance 10 (for a
        memory-only node: as if a CPU sat on it) and from a CPU at the topology's largest
        distance; the latency from node ``i`` to node ``j``'s memory interpolates linearly in
        SLIT units (:attr:`latency_ns`).
    node_bw_GBps : float or sequence of float
        Sustainable (STREAM-like read) bandwidth of each node's memory controllers.
    write_efficiency : float or sequence of float
        What the memory controllers of each node sustain for a store stream (``bzero``, rep
        stosb) as a share of ``node_bw_GBps``, in (0, 1]: the node's write capacity is
        ``write_efficiency x node_bw_GBps`` (:mod:`numalab.costs`). Default 0.5: an ordinary
        store stream moves every line twice, the read-for-ownership and the write-back
        (``shared/reference/machine-measurements.md``: about 0.5 on Cascade Lake; Ice Lake-SP and
        Sapphire Rapids can elide the read near saturation, up to about 1.0). A property of the
        machine, not of the kernel: ``numalab probe`` measures it (fill / read bandwidth per node).
    link_bw_GBps : float or sequence of float
        Sustainable bandwidth of the interconnect into each node's memory from another node
        (UPI/QPI/Infinity Fabric for a socket, the CXL link for a CXL device), one direction.
    mem_per_node_GiB : float or sequence of float
        Installed memory of each node (0: a memoryless node).
    thread_bw_GBps : float or sequence of float
        Bandwidth a single thread on each node can draw from its local memory when nothing else
        competes (a core's limit on outstanding misses), used by :mod:`numalab.costs`.
    line_same_node_ns, line_remote_ns : float
        Cache-line transfer latency between cores of one node, and between nodes; used by
        the futex contention model.
    links : sequence of (a, b, GBps) or (a, b, GBps a->b, GBps b->a), optional
        The interconnect's physical links, GB/s per direction (a QPI link per pair of sockets,
        a socket's IO die, a CXL device's one link); an end ``>= nodes`` is a switch (no CPUs,
        no memory). Each link direction is one shared resource (:mod:`numalab.costs`), traffic
        between unlinked nodes takes :attr:`link_route`. Default: a link per pair of nodes, its
        direction into ``y`` at ``link_bw_GBps[y]`` (docs/machines.md, "The interconnect").
    all_core_ghz, turbo_ghz : float, optional
        The core clock [GHz] with every core of a package busy (the all-core turbo, or the base
        clock with turbo off) and with one core busy (the maximum turbo); a package with ``n`` of
        its ``c`` cores busy runs at ``turbo - (turbo - all_core) (n - 1) / (c - 1)``
        (:func:`numalab.futex.costs.core_clock_ghz`). The futex model's CPU-side costs, stated
        in ns at ``FutexCosts.clock_ref_ghz``, are scaled to this clock. Default None: not
        given, the costs as stated. ``turbo_ghz`` needs ``all_core_ghz``.
    cpu_numbering : str, optional
        How the machine numbers its CPUs (:data:`CPU_NUMBERINGS`): which Linux CPU id is which
        node's core or sibling (:attr:`linux_cpu_index`), so where a program that pins thread i
        to CPU i (``perf bench futex hash``) puts its threads. Default None: ``"cores-first"``,
        the order x86 firmware lists CPUs in; ``Topology.from_host`` reads it from sysfs.
    packages : int, optional
        CPU packages (sockets), the nodes with CPUs split evenly among them in node order
        (:attr:`node_package`; SNC / NPS put several nodes in one): the core clock counts the busy
        cores of the whole package, as turbo does. Default None: a package per node with CPUs.
    syscall_ns : float, optional
        This machine's null system call round trip [ns], entry and exit with its kernel's
        mitigations (KPTI, retpolines, return thunks, buffer clears), one busy core: what
        ``numalab probe`` measures (:func:`numalab.machine.probe_syscall`). The futex model
        uses it for ``FutexCosts.syscall_ns`` unless that is given. Default None: not measured.
    futex_private_ns, futex_shared_ns : float, optional
        What a wrong-value ``FUTEX_WAIT`` (``perf bench futex hash``'s operation) costs in this
        machine's kernel beyond a null system call [ns], one thread, its bucket hot; private and
        shared keys (:func:`numalab.machine.probe_futex`). The futex model derives
        ``futex_path_ns`` and ``gup_ns`` from them unless those are given
        (:meth:`numalab.futex.FutexCosts.resolve`). Default None: not measured.
    name : str
        Preset name or ``"custom"``.
    source : str
        One line on where the description comes from.
    sources : dict, optional
        Field name -> :class:`~numalab.provenance.Provenance` (what :meth:`provenance` returns
        for the fields it names).
    warnings : tuple of str
        What :meth:`from_host` could not read (empty for a preset).
    """

    nodes: int
    cpus_per_node: int | tuple
    distance: tuple = None  # type: ignore[assignment]  # normalised in __post_init__
    smt: int | tuple = 2
    local_latency_ns: float | tuple = 90.0
    remote_latency_ns: float | tuple = 140.0
    node_bw_GBps: float | tuple = 100.0
    write_efficiency: float | tuple = 0.5
    link_bw_GBps: float | tuple = 40.0
    mem_per_node_GiB: float | tuple = 128.0
    thread_bw_GBps: float | tuple = 10.0
    line_same_node_ns: float = 50.0
    line_remote_ns: float = 130.0
    links: tuple | None = None
    all_core_ghz: float | None = None
    turbo_ghz: float | None = None
    cpu_numbering: str | None = None
    packages: int | None = None
    syscall_ns: float | None = None
    futex_private_ns: float | None = None
    futex_shared_ns: float | None = None
    name: str = "custom"
    source: str = field(default="user-defined", compare=False)
    sources: dict = field(default=None, compare=False, repr=False)  # type: ignore[assignment]
    warnings: tuple = field(default=(), compare=False, repr=False)

    def __post_init__(self):
        _validate(self)

    # ----------------------------------------------------------------- per-node values
    def per_node(self, name: str) -> np.ndarray:
        """The ``(nodes,)`` array of a per-node field (:data:`PER_NODE`): int64 for CPUs and
        SMT, float64 otherwise; read-only."""
        check_choice("field", name, list(PER_NODE))
        return self._arrays[name]

    @cached_property
    def _arrays(self) -> dict:
        out = {}
        for name, (integer, _, _) in PER_NODE.items():
            v = np.broadcast_to(np.asarray(getattr(self, name), dtype=np.int64 if integer else float),
                                (self.nodes,)).copy()
            v.flags.writeable = False
            out[name] = v
        return out

    @property
    def node_cpus(self) -> np.ndarray:
        """Logical CPUs per node, ``(nodes,)`` int64 (0 on a memory-only node)."""
        return self.per_node("cpus_per_node")

    @cached_property
    def node_cores(self) -> np.ndarray:
        """Cores per node, ``(nodes,)`` int64."""
        return _frozen(self.node_cpus // self.per_node("smt"))

    @cached_property
    def has_cpu(self) -> np.ndarray:
        """Nodes with CPUs (sysfs ``has_cpu``, the kernel's ``N_CPU``), ``(nodes,)`` bool."""
        return _frozen(self.node_cpus > 0)

    @cached_property
    def has_memory(self) -> np.ndarray:
        """Nodes with memory (sysfs ``has_memory``, ``N_MEMORY``), ``(nodes,)`` bool."""
        return _frozen(self.per_node("mem_per_node_GiB") > 0)

    @cached_property
    def cpu_nodes(self) -> np.ndarray:
        """The nodes with CPUs, in node order (every node on a machine without memory-only ones)."""
        return _frozen(np.flatnonzero(self.has_cpu).astype(np.int64))

    @cached_property
    def node_package(self) -> np.ndarray:
        """Package of every node (:attr:`packages`; a memory-only node: its nearest CPU node's)."""
        return _frozen(_node_package(self))

    @cached_property
    def nearest_cpu_node(self) -> np.ndarray:
        """For every node, the nearest node with CPUs (itself if it has CPUs; ties: the lowest
        id), ``(nodes,)`` int64: the kernel's ``numa_nearest_node(nid, N_CPU)``, which
        ``task_numa_placement`` applies to its choice (5c7b1aaf139d, v5.18)."""
        return _frozen(_nearest(self.distance_matrix, self.has_cpu))

    @cached_property
    def local_memory_node(self) -> np.ndarray:
        """For every node, the nearest node with memory (itself if it has memory; ties: the
        lowest id), ``(nodes,)`` int64: where a first touch of a thread on that node lands under
        the default policy (the kernel's ``numa_mem_id`` / ``local_memory_node``)."""
        return _frozen(_nearest(self.distance_matrix, self.has_memory))

    def uniform(self, name: str):
        """The one value a per-node field has on every node (int or float); a NumalabValueError
        naming the field when the nodes differ (for models that describe one kind of node)."""
        check_choice("field", name, list(PER_NODE))
        value = getattr(self, name)
        if isinstance(value, tuple):
            raise NumalabValueError(f"topology {self.name!r} has {name}={_text(value)}, not one value for every "
                                    "node; this model needs the same on every node (read per_node() instead)")
        return value

    # ----------------------------------------------------------------- derived values
    @property
    def ncpus(self) -> int:
        """Logical CPUs (``num_possible_cpus``)."""
        return int(self.node_cpus.sum())

    @property
    def cores_per_node(self) -> int:
        """Cores of every node (one value for all nodes; see :attr:`node_cores`)."""
        return self.uniform("cpus_per_node") // self.uniform("smt")

    @cached_property
    def distance_matrix(self) -> np.ndarray:
        """SLIT distances as an ``(nodes, nodes)`` int array."""
        return _frozen(np.array(self.distance, dtype=np.int64))

    @cached_property
    def cpu_node(self) -> np.ndarray:
        """Node of every logical CPU, CPUs numbered node by node (``cpu_to_node``)."""
        return _frozen(np.repeat(np.arange(self.nodes, dtype=np.int64), self.node_cpus))

    @cached_property
    def linux_cpu_index(self) -> np.ndarray:
        """The model's CPU (numbered node by node, each node's cores before their siblings) of
        every Linux CPU id, ``(ncpus,)``, in the order :attr:`cpu_numbering` names."""
        return _frozen(_linux_cpu_index(self))

    @cached_property
    def latency_ns(self) -> np.ndarray:
        """Memory latency from a CPU on node i to memory on node j, ``(nodes, nodes)`` ns: node
        j's ``local_latency_ns`` at SLIT 10, its ``remote_latency_ns`` at the largest distance,
        linear in between."""
        d = self.distance_matrix.astype(float)
        local, remote = self.per_node("local_latency_ns"), self.per_node("remote_latency_ns")
        dmax = d.max()
        if dmax <= 10:
            return _frozen(np.broadcast_to(local, d.shape).copy())
        return _frozen(local + (d - 10.0) / (dmax - 10.0) * (remote - local))

    @cached_property
    def link_set(self) -> tuple:
        """The links as ``(a, b, GBps a->b, GBps b->a)``: ``links``, or its default (a link per
        pair ``x < y``, ``link_bw_GBps[y]`` into ``y``, ``link_bw_GBps[x]`` into ``x``)."""
        bw = self.per_node("link_bw_GBps").tolist()
        return self.links if self.links is not None else tuple(
            (x, y, bw[y], bw[x]) for x in range(self.nodes) for y in range(x + 1, self.nodes))

    @cached_property
    def link_cap_GBps(self) -> np.ndarray:
        """GB/s of every link direction, ``(L,)``: ``2k`` is link ``k`` of :attr:`link_set` from
        its first end to its second, ``2k + 1`` the reverse."""
        return _frozen(np.array([c for _, _, ab, ba in self.link_set for c in (ab, ba)], dtype=float))

    @cached_property
    def link_route(self) -> np.ndarray:
        """Link directions from node ``x`` to ``y``, ``(nodes, nodes, H)`` int64, -1 padded: a
        pair's own link, else the fewest links (:func:`_routes`)."""
        return _frozen(_routes(self.nodes, self.link_set))

    @property
    def mem_total_GiB(self) -> float:
        return float(self.per_node("mem_per_node_GiB").sum())

    def to_attrs(self) -> dict:
        """Flat attrs for an xarray Dataset (netCDF-safe: numbers and strings only; a per-node
        field that differs between nodes as its values joined by commas)."""
        return _to_attrs(self)

    # ----------------------------------------------------------------- provenance
    def provenance(self) -> dict:
        """Field name -> :class:`~numalab.provenance.Provenance` for every field of
        :data:`FIELDS`: a preset's from its file, a probed or host-read machine's from what was
        read or measured; a field the caller set or left at the class default says so
        (``assumed``)."""
        return _provenance(self)

    # ----------------------------------------------------------------- files
    def to_dict(self) -> dict:
        """The topology file's content (:data:`FORMAT`): the fields' values, name, source, the
        provenance of every field and the warnings."""
        values = {}
        for name in FIELDS:
            v = getattr(self, name)
            if name in OPTIONAL and v is None:
                continue                   # not given (older files have none)
            values[name] = [list(r) for r in v] if name in ("distance", "links") else \
                (list(v) if isinstance(v, tuple) else v)
        prov = {k: _prov_dict(p) for k, p in self.provenance().items()}
        return {"format": FORMAT, "name": self.name, "source": self.source, "topology": values,
                "provenance": prov, "warnings": list(self.warnings)}

    @classmethod
    def from_dict(cls, data, where: str = "topology") -> "Topology":
        """A Topology from :meth:`to_dict`'s layout (a topology file's content); every field
        checked, errors naming ``where`` and the field."""
        return _from_dict(cls, data, where)

    def save(self, path, extra: dict | None = None) -> Path:
        """Write the topology file (JSON, written atomically); ``extra`` adds sections (``numalab
        probe`` stores its raw measurements under ``"probe"``). Returns the path."""
        from .errors import check_out_path
        from .storage import write_text

        path = check_out_path("path", path)
        data = self.to_dict()
        for key, value in (extra or {}).items():
            if key in data:
                raise NumalabValueError(f"extra section {key!r} would replace a topology file field")
            data[key] = value
        return write_text(path, dumps(data))

    @classmethod
    def load(cls, path) -> "Topology":
        """Read a topology file (what :meth:`save` and ``numalab probe`` write, and the presets
        under ``data/topologies/``). A file that is not JSON, is truncated or holds a bad value
        raises NumalabValueError naming the file and the field."""
        path = check_in_file("path", path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise NumalabValueError(f"topology file {str(path)!r} cannot be read: {exc}") from None
        except json.JSONDecodeError as exc:
            raise NumalabValueError(f"topology file {str(path)!r} is not JSON (truncated or not a topology "
                                    f"file): {exc}") from None
        return cls.from_dict(data, where=f"topology file {str(path)!r}")

    @classmethod
    def from_host(cls, root="/", lscpu: bool = True, kernel_costs: bool = False) -> "Topology":
        """This machine as ``/sys/devices/system/node`` and ``/sys/devices/system/cpu`` describe
        it (:mod:`numalab.machine`): nodes, online CPUs per node, SMT, memory, the SLIT and,
        where the firmware's HMAT gives them, each node's read latency and bandwidth; the
        fields sysfs has no figure for keep the class defaults. ``root`` is the file-system
        root (a fixture tree in tests). ``kernel_costs=True`` also times this kernel's null
        system call and futex operation (about 1.5 s; ``syscall_ns``, ``futex_private_ns``,
        ``futex_shared_ns``), what the futex model's kernel-path constants come from; ``numalab
        probe`` measures them and the bandwidths. What could not be read is in :attr:`warnings`,
        each field's source in :meth:`provenance`."""
        import socket

        from . import machine

        data = machine.read_host(root, lscpu=lscpu)
        if kernel_costs:
            data["warnings"] += machine.apply_kernel(data, machine.probe_syscall(), machine.probe_futex(),
                                                     f"Topology.from_host(kernel_costs=True) on {socket.gethostname()}, "
                                                     f"{machine.utc_minute()}")
        return cls.from_dict(data, where=f"host {str(root)!r}")

    def with_memory_node(self, mem_GiB: float, distance, *, node_bw_GBps: float, link_bw_GBps: float,
                         local_latency_ns: float, remote_latency_ns: float, write_efficiency: float = 0.5,
                         attach: int | None = None, name: str | None = None) -> "Topology":
        """This machine with one more node that has memory and no CPUs (a CXL memory expander,
        HBM): ``distance`` is its SLIT row to the existing nodes (without its own 10),
        ``write_efficiency`` its store-stream share of ``node_bw_GBps``. It hangs off node
        ``attach`` (default: the nearest with CPUs) by one link of ``link_bw_GBps`` each way,
        which every node's traffic to it shares."""
        return _with_memory_node(self, mem_GiB, distance, node_bw_GBps=node_bw_GBps, link_bw_GBps=link_bw_GBps,
                                 local_latency_ns=local_latency_ns, remote_latency_ns=remote_latency_ns,
                                 write_efficiency=write_efficiency, attach=attach, name=name)

    # ----------------------------------------------------------------- presets
    @staticmethod
    def presets() -> list[str]:
        """Names of the built-in topologies (aliases such as the kernel test robot's machine
        names are in :data:`PRESET_ALIASES`, accepted by :meth:`preset` too)."""
        return list(_presets())

    @staticmethod
    def preset(name: str, **overrides) -> "Topology":
        """A built-in topology (a file of ``data/topologies/``), optionally with fields
        overridden (a per-node field by a scalar or one value per node). The presets:
        """
        check_choice("topology", name, [*_presets(), *PRESET_ALIASES])
        name = PRESET_ALIASES.get(name, name)
        base = _presets()[name]
        if not overrides:
            return base
        _check_overrides(name, base, overrides)
        kwargs = {k: getattr(base, k) for k in FIELDS}
        if "distance" not in overrides and base.distance == _check_distance(None, base.nodes):
            kwargs["distance"] = None      # the default SLIT: the default of any node count
        kwargs.update(overrides)
        sources = dict(base.sources or {})
        for k in overrides:
            sources[k] = Provenance("assumed", f"set by the caller: Topology.preset({name!r}, {k}=...) "
                                               f"(the preset's value: {_text(getattr(base, k))})")
        return Topology(name=f"{name}+custom", source=base.source, sources=sources, **kwargs)

    @staticmethod
    def coerce(topology) -> "Topology":
        """Accept a :class:`Topology`, a preset name or alias, or the path of a topology file
        (what :func:`check_topology` returns for one, ``"<path>#<digest>"``, too)."""
        return _coerce(topology)


# --------------------------------------------------------------------------------- helpers
def _validate(topo) -> None:
    """Check every field of a new Topology (``__post_init__``) and store the normalised forms: the
    per-node fields as scalars or tuples, the SLIT, the links, the warnings and sources; a value
    out of its range raises NumalabValueError naming the field, the value and what is allowed."""
    check_int("nodes", topo.nodes, lo=1, hi=1024)
    for name in PER_NODE:
        object.__setattr__(topo, name, _per_node_value(name, getattr(topo, name), topo.nodes))
    cpus, smt = topo.per_node("cpus_per_node"), topo.per_node("smt")
    if cpus.sum() > MAX_CPUS:
        raise NumalabValueError(
            f"nodes x cpus_per_node = {topo.nodes} x {_text(topo.cpus_per_node)} = {int(cpus.sum())} "
            f"CPUs is more than the kernel's NR_CPUS limit; allowed: at most {MAX_CPUS} CPUs"
        )
    if cpus.sum() < 1:
        raise NumalabValueError(f"cpus_per_node={_text(topo.cpus_per_node)} gives no CPU; allowed: "
                                "at least one node with CPUs (0 marks a memory-only node)")
    bad = np.flatnonzero(cpus % smt)
    if bad.size:
        n = int(bad[0])
        raise NumalabValueError(f"cpus_per_node={_text(topo.cpus_per_node)} must be a multiple of smt="
                                f"{_text(topo.smt)} on every node (node {n}: {int(cpus[n])} CPUs, smt {int(smt[n])})")
    mem = topo.per_node("mem_per_node_GiB")
    if mem.sum() <= 0:
        raise NumalabValueError(f"mem_per_node_GiB={_text(topo.mem_per_node_GiB)} gives no memory; allowed: "
                                "at least one node with memory (0 marks a memoryless node)")
    empty = np.flatnonzero((cpus == 0) & (mem == 0))
    if empty.size:
        raise NumalabValueError(f"node {int(empty[0])} has neither CPUs nor memory; allowed: every node with "
                                "CPUs (cpus_per_node > 0) or memory (mem_per_node_GiB > 0)")
    for name in ("line_same_node_ns", "line_remote_ns"):
        check_number(name, getattr(topo, name), lo=0.0, lo_open=True)
    low = np.flatnonzero(topo.per_node("remote_latency_ns") < topo.per_node("local_latency_ns"))
    if low.size:
        raise NumalabValueError(
            f"remote_latency_ns={_text(topo.remote_latency_ns)} must be >= local_latency_ns="
            f"{_text(topo.local_latency_ns)} (node {int(low[0])})"
        )
    _check_clock(topo.all_core_ghz, topo.turbo_ghz)
    for name in KERNEL_COSTS:
        if getattr(topo, name) is not None:
            check_number(name, getattr(topo, name), lo=0.0, hi=1e6)
    if topo.cpu_numbering is not None:
        check_choice("cpu_numbering", topo.cpu_numbering, list(CPU_NUMBERINGS))
    _check_packages(topo.packages, int(np.count_nonzero(cpus)))
    object.__setattr__(topo, "distance", _check_distance(topo.distance, topo.nodes))
    object.__setattr__(topo, "links", _check_links(topo.links, topo.nodes))
    object.__setattr__(topo, "warnings", tuple(str(w) for w in topo.warnings))
    if topo.sources is not None:
        object.__setattr__(topo, "sources", _check_sources(topo.sources, "sources"))


def _coerce(topology) -> Topology:
    """:meth:`Topology.coerce`."""
    if isinstance(topology, Topology):
        return topology
    if isinstance(topology, str) and (topology in _presets() or topology in PRESET_ALIASES):
        return Topology.preset(topology)
    if isinstance(topology, (str, os.PathLike)) and _looks_like_path(topology):
        return _load_checked(os.fspath(topology))
    if isinstance(topology, str):
        check_choice("topology", topology, [*_presets(), *PRESET_ALIASES])
    raise NumalabValueError(
        f"topology={topology!r} must be a Topology, a preset name or a topology file (.json); allowed "
        f"presets: {', '.join([*_presets(), *PRESET_ALIASES])}"
    )


def _to_attrs(topo) -> dict:
    """:meth:`Topology.to_attrs`."""
    out = {}
    for key in (*FIELDS, "name", "source"):
        value = getattr(topo, key)
        if key == "distance":
            out["topology_distance"] = " ".join(",".join(map(str, r)) for r in value)
        elif key == "links":
            if value is not None:      # "a-b:GBps a->b/GBps b->a" per link
                out["topology_links"] = " ".join(f"{a}-{b}:{ab:g}/{ba:g}" for a, b, ab, ba in value)
        elif value is None:            # an optional field not given
            continue
        else:
            out[f"topology_{key}"] = ",".join(map(str, value)) if isinstance(value, tuple) else value
    return out


def _linux_cpu_index(topo) -> np.ndarray:
    """:attr:`Topology.linux_cpu_index` (:func:`numalab.machine.cpu_order`)."""
    order = cpu_order(topo.per_node("cpus_per_node").tolist(), topo.per_node("smt").tolist(),
                      topo.cpu_numbering or "cores-first")
    return np.asarray(order, dtype=np.int64)


def _node_package(topo) -> np.ndarray:
    """:attr:`Topology.node_package`: the k-th of the c nodes with CPUs is in package
    ``k * packages // c``."""
    cpu_nodes = topo.cpu_nodes
    packages = topo.packages or cpu_nodes.size
    of_cpu_node = np.zeros(topo.nodes, dtype=np.int64)
    of_cpu_node[cpu_nodes] = np.arange(cpu_nodes.size) * packages // max(cpu_nodes.size, 1)
    return of_cpu_node[topo.nearest_cpu_node]


def _check_packages(packages, cpu_nodes: int) -> None:
    if packages is None:
        return
    check_int("packages", packages, lo=1, hi=cpu_nodes)
    if cpu_nodes % packages:
        raise NumalabValueError(f"packages={packages} does not divide the {cpu_nodes} nodes with CPUs; allowed: a "
                                "divisor of that count (each package holds as many nodes)")


def _text(value) -> str:
    return "(" + ", ".join(map(str, value)) + ")" if isinstance(value, tuple) else str(value)


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def dumps(data) -> str:
    """A topology file's text: JSON, one key per line, a list of numbers (a per-node value, a
    SLIT row) on one line."""
    return _dumps(data, 0) + "\n"


def _dumps(value, indent: int) -> str:
    pad = " " * indent
    if isinstance(value, dict) and value:
        items = [f"{pad} {json.dumps(str(k))}: {_dumps(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and any(isinstance(v, (list, dict)) for v in value):
        items = [pad + " " + _dumps(v, indent + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(value, ensure_ascii=False)


def _per_node_value(name, value, nodes):
    """A per-node field's value checked and normalised: a scalar, or a tuple of ``nodes``
    values that are not all equal (equal ones become the scalar)."""
    integer, lo, lo_open = PER_NODE[name]

    def one(label, v):
        if integer:
            return check_int(label, v, lo=lo, hi=_HI[name])
        return check_number(label, v, lo=lo, lo_open=lo_open, hi=_HI.get(name))

    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__"):
        return one(name, value.item() if isinstance(value, np.generic) else value)
    values = list(np.asarray(value).tolist()) if isinstance(value, np.ndarray) else list(value)
    if len(values) != nodes:
        raise NumalabValueError(f"{name} has {len(values)} values; allowed: one number, or {nodes} (one per node)")
    values = [one(f"{name}[{i}]", v) for i, v in enumerate(values)]
    return values[0] if all(v == values[0] for v in values) else tuple(values)


def _check_distance(dist, nodes):
    if dist is None:
        dist = np.full((nodes, nodes), 20, dtype=int)
        np.fill_diagonal(dist, 10)
    try:
        dist = np.asarray(dist, dtype=float)
    except (TypeError, ValueError):
        raise NumalabValueError(f"distance must be a {nodes}x{nodes} matrix of numbers") from None
    if dist.shape != (nodes, nodes):
        raise NumalabValueError(f"distance has shape {dist.shape}; allowed: ({nodes}, {nodes}) for nodes={nodes}")
    if not np.all(np.isfinite(dist)):
        raise NumalabValueError("distance must hold finite SLIT values (integers 10..254)")
    frac = np.argwhere(dist != np.round(dist))
    if frac.size:
        i, j = (int(v) for v in frac[0])
        raise NumalabValueError(
            f"distance[{i}][{j}]={float(dist[i, j])!r} is not an integer; allowed: SLIT distances are "
            f"integers 10..254 (ACPI SLIT entries are bytes), e.g. {int(np.floor(dist[i, j]))} or "
            f"{int(np.ceil(dist[i, j]))}"
        )
    if np.any(dist < 10) or np.any(dist > 254) or np.any(np.diag(dist) != 10):
        raise NumalabValueError("distance must hold SLIT values 10..254 with 10 on the diagonal")
    return tuple(tuple(int(x) for x in row) for row in dist)


def _with_memory_node(self, mem_GiB, distance, *, node_bw_GBps, link_bw_GBps, local_latency_ns, remote_latency_ns,
                      write_efficiency, attach, name):
    """:meth:`Topology.with_memory_node`."""
    d = np.asarray(self.distance_matrix)
    try:
        row = [int(check_int(f"distance[{i}]", v, lo=11, hi=254)) for i, v in enumerate(distance)]
    except TypeError:
        raise NumalabValueError(f"distance must be {self.nodes} SLIT values, one per existing node") from None
    if len(row) != self.nodes:
        raise NumalabValueError(f"distance has {len(row)} values; allowed: {self.nodes}, one per existing node")
    dist = np.block([[d, np.array(row)[:, None]], [np.array(row)[None, :], np.array([[10]])]])
    if attach is None:
        attach = int(_nearest(np.array([row]), self.has_cpu)[0])
    attach = check_int("attach", attach, lo=0, hi=self.nodes - 1)
    bw = check_number("link_bw_GBps", link_bw_GBps, lo=0.0, lo_open=True)
    links = (*self.link_set, (int(attach), self.nodes, float(bw), float(bw)))
    per = {k: (*np.broadcast_to(np.asarray(getattr(self, k)), (self.nodes,)).tolist(), v) for k, v in (
        ("cpus_per_node", 0), ("smt", 1), ("mem_per_node_GiB", mem_GiB), ("node_bw_GBps", node_bw_GBps),
        ("write_efficiency", write_efficiency), ("link_bw_GBps", link_bw_GBps), ("local_latency_ns", local_latency_ns),
        ("remote_latency_ns", remote_latency_ns), ("thread_bw_GBps", self.per_node("thread_bw_GBps").min()))}
    return Topology(nodes=self.nodes + 1, distance=dist.tolist(), **per, links=links,
                    line_same_node_ns=self.line_same_node_ns, line_remote_ns=self.line_remote_ns,
                    name=name or f"{self.name}+memory-node", source=f"{self.source}; plus a memory-only node")


def _check_overrides(name, base, overrides):
    """:meth:`Topology.preset`'s overrides: topology fields, and no link figure a preset's own
    ``links`` would leave unread."""
    bad = sorted(set(overrides) - set(FIELDS))
    if bad:
        raise NumalabValueError(f"override {bad[0]}= is not a topology field; allowed: {', '.join(FIELDS)}")
    if base.links is not None and "link_bw_GBps" in overrides and "links" not in overrides:
        raise NumalabValueError(f"override link_bw_GBps= does not change preset {name!r}: its links give every "
                                f"link's bandwidth; allowed: override links= (now {list(base.links)})")


def _provenance(topo) -> dict:
    """:meth:`Topology.provenance` of ``topo``."""
    known = topo.sources or {}
    out = {}
    for name in FIELDS:
        if name in known:
            out[name] = known[name]
        elif name == "links" and topo.links is None:
            out[name] = Provenance("derived", "no links given: a link between every pair of nodes, its "
                                              "direction into node y carrying link_bw_GBps[y]")
        elif name == "packages" and topo.packages is None:
            out[name] = Provenance("assumed", "not given: a package (socket) per node with CPUs")
        elif name == "cpu_numbering" and topo.cpu_numbering is None:
            out[name] = Provenance("assumed", "not given: 'cores-first', " + CPU_NUMBERINGS["cores-first"])
        elif name in KERNEL_COSTS and getattr(topo, name) is None:
            out[name] = Provenance("assumed", "not measured (numalab probe measures it): the futex model's "
                                              "FutexCosts constants as stated")
        elif name in OPTIONAL and getattr(topo, name) is None:   # a clock not given
            out[name] = Provenance("assumed", "not given: the futex model's CPU-side costs as stated, at "
                                              "FutexCosts.clock_ref_ghz")
        elif topo.source == "user-defined":
            out[name] = Provenance("assumed", f"given by the caller (Topology({name}=...)) or the class default")
        else:
            out[name] = Provenance("assumed", f"not stated by {topo.name!r}'s source: the class default or "
                                              "the caller's value")
    return out


def _check_clock(all_core, turbo):
    """The two core clocks: each None or a number of GHz in (0, 10]; ``turbo_ghz`` only with
    ``all_core_ghz`` and not below it (one busy core never runs slower than all of them)."""
    for name, v in (("all_core_ghz", all_core), ("turbo_ghz", turbo)):
        if v is not None:
            check_number(name, v, lo=0.0, hi=10.0, lo_open=True)
    if turbo is not None and all_core is None:
        raise NumalabValueError(f"turbo_ghz={turbo} needs all_core_ghz (the clock with every core busy); "
                                "allowed: all_core_ghz alone, both, or neither")
    if turbo is not None and turbo < all_core:
        raise NumalabValueError(f"turbo_ghz={turbo} is below all_core_ghz={all_core}; allowed: turbo_ghz >= "
                                "all_core_ghz (one busy core runs at least as fast as all of them)")


def _check_links(links, nodes):
    """``links`` checked and normalised to a tuple of ``(a, b, GBps a->b, GBps b->a)`` (None
    stays None: the default :attr:`Topology.link_set` derives)."""
    if links is None:
        return None
    if isinstance(links, (str, bytes, dict)) or not hasattr(links, "__len__"):
        raise NumalabValueError(f"links={links!r} must be a list of (a, b, GBps) or (a, b, GBps a->b, GBps b->a)")
    out, seen = [], {}
    for i, link in enumerate(links):
        if isinstance(link, (str, bytes, dict)) or not hasattr(link, "__len__") or len(link) not in (3, 4):
            raise NumalabValueError(f"links[{i}]={link!r} must be (a, b, GBps) or (a, b, GBps a->b, GBps b->a)")
        a = check_int(f"links[{i}][0]", link[0], lo=0, hi=nodes + MAX_SWITCHES - 1)
        b = check_int(f"links[{i}][1]", link[1], lo=0, hi=nodes + MAX_SWITCHES - 1)
        if a == b:
            raise NumalabValueError(f"links[{i}] joins {a} to itself; allowed: two different nodes or switches")
        ab = check_number(f"links[{i}][2]", link[2], lo=0.0, lo_open=True)
        ba = check_number(f"links[{i}][3]", link[3], lo=0.0, lo_open=True) if len(link) == 4 else ab
        key = (min(a, b), max(a, b))
        if key in seen:
            raise NumalabValueError(f"links[{i}] joins nodes {key[0]} and {key[1]} again (links[{seen[key]}]); "
                                    "allowed: one link per pair of nodes (give its total bandwidth)")
        seen[key] = i
        out.append((int(a), int(b), float(ab), float(ba)))
    if nodes > 1 and _routes(nodes, out, check=True) is None:
        raise AssertionError("unreachable")  # pragma: no cover - _routes raised
    return tuple(out)


def _routes(nodes, links, check=False):
    """:attr:`Topology.link_route` of ``links`` (4-tuples): a pair's own link, else the first
    route of fewest links a breadth-first search from the lower node finds (neighbours in
    ascending order), the way back that route reversed. A NumalabValueError names two nodes no
    route joins."""
    direction = {}
    adj = [[] for _ in range(max([nodes, *(max(a, b) + 1 for a, b, _, _ in links)]))]
    for k, (a, b, _, _) in enumerate(links):
        direction[(a, b)], direction[(b, a)] = 2 * k, 2 * k + 1
        adj[a].append(b)
        adj[b].append(a)
    adj = [sorted(v) for v in adj]
    paths = {}
    for x in range(nodes):
        parent = None
        for y in range(x + 1, nodes):
            if (x, y) in direction:
                paths[(x, y)] = [x, y]
                continue
            if parent is None:                 # one breadth-first search from x
                parent = {x: x}
                queue = [x]
                for u in queue:
                    for v in adj[u]:
                        if v not in parent:
                            parent[v] = u
                            queue.append(v)
            if y not in parent:
                raise NumalabValueError(f"links join no route from node {x} to node {y}; allowed: links that "
                                        "connect every node to every other")
            seq = [y]
            while seq[-1] != x:
                seq.append(parent[seq[-1]])
            paths[(x, y)] = seq[::-1]
    if check:
        return paths
    hops = max((len(p) - 1 for p in paths.values()), default=1)
    route = np.full((nodes, nodes, max(hops, 1)), -1, dtype=np.int64)
    for (x, y), seq in paths.items():
        fwd = [direction[(u, v)] for u, v in zip(seq, seq[1:])]
        back = [direction[(v, u)] for u, v in zip(seq, seq[1:])][::-1]
        route[x, y, :len(fwd)] = fwd
        route[y, x, :len(back)] = back
    return route


def _nearest(d: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """For every node, the node among ``ok`` at the smallest distance (the lowest id of equals;
    a node in ``ok`` is its own nearest, distance 10 being the smallest)."""
    cand = np.where(ok[None, :], d, np.iinfo(np.int64).max)
    return cand.argmin(axis=1).astype(np.int64)


def _prov_dict(p: Provenance) -> dict:
    out = {"kind": p.kind, "source": p.source}
    if p.fitted_to:
        out["fitted_to"] = list(p.fitted_to)
    if p.band is not None:
        out["band"] = list(p.band)
        out["band_source"] = p.band_source
    return out


def _check_sources(sources, where) -> dict:
    if not isinstance(sources, dict):
        raise NumalabValueError(f"{where} must be a mapping of field name -> provenance")
    out = {}
    for key, p in sources.items():
        if key not in FIELDS:
            raise NumalabValueError(f"{where}: {key!r} is not a topology field; allowed: {', '.join(FIELDS)}")
        if isinstance(p, dict):
            unknown = sorted(set(p) - {"kind", "source", "fitted_to", "band", "band_source"})
            if unknown:
                raise NumalabValueError(f"{where}[{key!r}]: {unknown[0]!r} is not a provenance key; allowed: "
                                        "kind, source, fitted_to, band, band_source")
            try:
                band = p.get("band")
                p = Provenance(kind=p.get("kind"), source=p.get("source"), fitted_to=p.get("fitted_to", ()),
                               band=tuple(band) if band is not None else None, band_source=p.get("band_source", ""))
            except (TypeError, ValueError) as exc:
                raise NumalabValueError(f"{where}[{key!r}]: {exc}") from None
        if not isinstance(p, Provenance):
            raise NumalabValueError(f"{where}[{key!r}] must be a Provenance or a dict of its fields")
        out[key] = p
    return out


def _from_dict(cls, data, where):
    if not isinstance(data, dict):
        raise NumalabValueError(f"{where}: must be a JSON object with 'format' and 'topology'")
    if data.get("format") != FORMAT:
        raise NumalabValueError(f"{where}: format={data.get('format')!r}; allowed: {FORMAT!r}")
    values = data.get("topology")
    if not isinstance(values, dict):
        raise NumalabValueError(f"{where}: 'topology' must be an object of field values")
    unknown = sorted(set(values) - set(FIELDS))
    if unknown:
        raise NumalabValueError(f"{where}: field {unknown[0]!r} is not known; allowed: {', '.join(FIELDS)}")
    for required in ("nodes", "cpus_per_node"):
        if required not in values:
            raise NumalabValueError(f"{where}: field {required!r} is missing")
    for key in ("name", "source"):
        if not isinstance(data.get(key, ""), str):
            raise NumalabValueError(f"{where}: {key} must be a string")
    warnings = data.get("warnings", [])
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        raise NumalabValueError(f"{where}: warnings must be a list of strings")
    sources = _check_sources(data.get("provenance", {}), f"{where}: provenance")
    try:
        return cls(**values, name=data.get("name") or "custom", source=data.get("source") or "topology file",
                   sources=sources, warnings=tuple(warnings))
    except NumalabValueError as exc:
        raise NumalabValueError(f"{where}: {exc}") from None


def _looks_like_path(value) -> bool:
    text = os.fspath(value)
    return isinstance(value, os.PathLike) or text.endswith(".json") or "/" in text or "#" in text \
        or os.path.exists(text)


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def _load_checked(text: str) -> Topology:
    """A topology file by path, or by ``"<path>#<digest>"`` (refused if the file changed)."""
    path, _, digest = text.partition("#")
    topo = Topology.load(path)
    if digest and _file_digest(Path(path)) != digest:
        raise NumalabValueError(f"topology file {path!r} changed since it was checked (digest {digest}, now "
                                f"{_file_digest(Path(path))}); run the sweep again")
    return topo


def check_topology(name: str, value) -> str:
    """The one check of a topology named in a sweep grid or on the command line: a preset name
    or alias (returned as is), or a topology file's path, returned as ``"<absolute path>#<12 hex
    of its sha256>"`` so a sweep's cache key changes when the file does (and the workers that
    load it refuse an edited file)."""
    if isinstance(value, str) and (value in _presets() or value in PRESET_ALIASES):
        return value
    if isinstance(value, (str, os.PathLike)) and _looks_like_path(value):
        path, _, digest = os.fspath(value).partition("#")
        p = Path(path).expanduser().resolve()
        try:
            Topology.load(p)
        except NumalabValueError as exc:
            raise NumalabValueError(f"{name}: {exc}") from None
        if digest and digest != _file_digest(p):
            raise NumalabValueError(f"{name}={value!r}: the file changed since its digest was taken")
        return f"{p}#{_file_digest(p)}"
    check_choice(name, value if isinstance(value, str) else repr(value), [*_presets(), *PRESET_ALIASES])
    raise AssertionError("unreachable")  # pragma: no cover - check_choice raised


def _preset_dir() -> Path:
    return shipped_dir(os.path.join("data", "topologies"), os.path.join("published", "topologies"), "*.json")


_PRESET_CACHE: dict = {}


def _presets() -> dict:
    """Preset name -> Topology, read once from ``data/topologies/`` (file order: the
    ``order`` key of each file)."""
    if not _PRESET_CACHE:
        loaded = []
        for path in sorted(_preset_dir().glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            topo = Topology.from_dict(data, where=f"preset file {path.name}")
            loaded.append((data.get("order", 0), topo, data))
        for _, topo, data in sorted(loaded, key=lambda x: x[0]):
            _PRESET_CACHE[topo.name] = topo
            for alias in data.get("aliases", []):
                PRESET_ALIASES[alias] = topo.name
            _PRESET_DOCS[topo.name] = data.get("doc", topo.source)
    return _PRESET_CACHE


#: other names :meth:`Topology.preset` accepts: the kernel test robot's machines -> their preset
#: (each preset file's ``aliases``).
PRESET_ALIASES: dict[str, str] = {}
_PRESET_DOCS: dict[str, str] = {}
_presets()

#: preset name -> its one-line source (the file's ``source``)
PRESET_SOURCES = {name: topo.source for name, topo in _presets().items()}

def _preset_doc() -> str:
    """The presets' paragraphs of :meth:`Topology.preset`'s docstring, from their files."""
    paras = [f"        ``{name}``\n" + textwrap.fill(_PRESET_DOCS[name], 96, initial_indent=" " * 12,
                                                     subsequent_indent=" " * 12) for name in _presets()]
    return "\n".join(paras) + """

        The bandwidth and latency figures are vendor peak rates and widely published
        STREAM / Intel MLC measurements of those parts, rounded; they are defaults to
        override, not measurements of the exact machines. Each field's source and plausible
        range: ``Topology.preset(name).provenance()``.
        """


if Topology.preset.__doc__:  # None under python -OO
    Topology.preset.__doc__ += "\n" + _preset_doc()

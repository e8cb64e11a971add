"""Machine topologies: nodes, CPUs, SLIT distances, latencies and bandwidths.

A :class:`Topology` is plain data that the NUMA-balancing engine (through :mod:`numalab.costs`)
and the futex model read. Presets mirror machines whose published results numalab is judged
against; each preset's figures and their sources are listed in :data:`PRESET_SOURCES` and in
``Topology.preset.__doc__``.

Units are in the field names: ``_ns`` nanoseconds, ``_GBps`` gigabytes (1e9 B) per second,
``_GiB`` gibibytes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from .errors import NumalabValueError, check_choice, check_int, check_number

__all__ = ["Topology", "PRESET_SOURCES", "PRESET_ALIASES"]


#: most logical CPUs a topology may have (the kernel's largest CONFIG_NR_CPUS)
MAX_CPUS = 8192


@dataclass(frozen=True)
class Topology:
    """A NUMA machine as the kernel sees it.

    Parameters
    ----------
    nodes : int
        Number of NUMA nodes with CPUs and memory (``num_possible_nodes``).
    cpus_per_node : int
        Logical CPUs per node, SMT siblings included (so ``ncpus = nodes * cpus_per_node``
        is what ``numactl --hardware`` lists and what autonuma-benchmark's ``preproc.awk``
        counts as C).
    distance : 2-D array-like of int, optional
        The ACPI SLIT matrix (10 = local). Default: 10 on the diagonal, 20 elsewhere.
    smt : int
        Hardware threads per core (1 or 2).
    local_latency_ns, remote_latency_ns : float
        Idle load-to-use latency of DRAM on the same node and on a node at the largest
        distance; intermediate distances interpolate linearly in SLIT units.
    node_bw_GBps : float
        Sustainable (STREAM-like) memory bandwidth of one node's memory controllers.
    link_bw_GBps : float
        Sustainable bandwidth of the socket interconnect for traffic from one node to
        the other nodes (UPI/QPI/Infinity Fabric), one direction.
    mem_per_node_GiB : float
        Installed memory per node.
    thread_bw_GBps : float
        Bandwidth a single thread can draw when nothing else competes (a core's limit on
        outstanding misses), used by :mod:`numalab.costs`.
    line_same_node_ns, line_remote_ns : float
        Cache-line transfer latency between cores of one node, and between nodes; used by
        the futex contention model.
    name : str
        Preset name or ``"custom"``.
    """

    nodes: int
    cpus_per_node: int
    distance: tuple = None  # type: ignore[assignment]  # normalised in __post_init__
    smt: int = 2
    local_latency_ns: float = 90.0
    remote_latency_ns: float = 140.0
    node_bw_GBps: float = 100.0
    link_bw_GBps: float = 40.0
    mem_per_node_GiB: float = 128.0
    thread_bw_GBps: float = 10.0
    line_same_node_ns: float = 50.0
    line_remote_ns: float = 130.0
    name: str = "custom"
    source: str = field(default="user-defined", compare=False)

    def __post_init__(self):
        check_int("nodes", self.nodes, lo=1, hi=1024)
        check_int("cpus_per_node", self.cpus_per_node, lo=1, hi=65536)
        check_int("smt", self.smt, lo=1, hi=8)
        if self.nodes * self.cpus_per_node > MAX_CPUS:
            raise NumalabValueError(
                f"nodes x cpus_per_node = {self.nodes} x {self.cpus_per_node} = {self.nodes * self.cpus_per_node} "
                f"CPUs is more than the kernel's NR_CPUS limit; allowed: at most {MAX_CPUS} CPUs"
            )
        if self.cpus_per_node % self.smt:
            raise NumalabValueError(
                f"cpus_per_node={self.cpus_per_node} must be a multiple of smt={self.smt}"
            )
        for name in ("local_latency_ns", "remote_latency_ns", "node_bw_GBps", "link_bw_GBps",
                     "mem_per_node_GiB", "thread_bw_GBps", "line_same_node_ns", "line_remote_ns"):
            check_number(name, getattr(self, name), lo=0.0, lo_open=True)
        if self.remote_latency_ns < self.local_latency_ns:
            raise NumalabValueError(
                f"remote_latency_ns={self.remote_latency_ns} must be >= local_latency_ns={self.local_latency_ns}"
            )
        dist = self.distance
        if dist is None:
            dist = np.full((self.nodes, self.nodes), 20, dtype=int)
            np.fill_diagonal(dist, 10)
        try:
            dist = np.asarray(dist, dtype=float)
        except (TypeError, ValueError):
            raise NumalabValueError(f"distance must be a {self.nodes}x{self.nodes} matrix of numbers") from None
        if dist.shape != (self.nodes, self.nodes):
            raise NumalabValueError(
                f"distance has shape {dist.shape}; allowed: ({self.nodes}, {self.nodes}) for nodes={self.nodes}"
            )
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
        object.__setattr__(self, "distance", tuple(tuple(int(x) for x in row) for row in dist))

    # ----------------------------------------------------------------- derived values
    @property
    def ncpus(self) -> int:
        """Logical CPUs (``num_possible_cpus``)."""
        return self.nodes * self.cpus_per_node

    @property
    def cores_per_node(self) -> int:
        return self.cpus_per_node // self.smt

    @property
    def distance_matrix(self) -> np.ndarray:
        """SLIT distances as an ``(nodes, nodes)`` int array."""
        return np.array(self.distance, dtype=np.int64)

    @property
    def cpu_node(self) -> np.ndarray:
        """Node of every logical CPU, CPUs numbered node by node (``cpu_to_node``)."""
        return np.repeat(np.arange(self.nodes, dtype=np.int64), self.cpus_per_node)

    @property
    def latency_ns(self) -> np.ndarray:
        """Memory latency from a CPU on node i to memory on node j, ``(nodes, nodes)`` ns."""
        d = self.distance_matrix.astype(float)
        dmax = d.max()
        if dmax <= 10:
            return np.full_like(d, self.local_latency_ns)
        return self.local_latency_ns + (d - 10.0) / (dmax - 10.0) * (self.remote_latency_ns - self.local_latency_ns)

    @property
    def mem_total_GiB(self) -> float:
        return self.nodes * self.mem_per_node_GiB

    def to_attrs(self) -> dict:
        """Flat attrs for an xarray Dataset (netCDF-safe: numbers and strings only)."""
        out = {}
        for key, value in asdict(self).items():
            if key == "distance":
                out["topology_distance"] = " ".join(",".join(map(str, r)) for r in value)
            else:
                out[f"topology_{key}"] = value
        return out

    # ----------------------------------------------------------------- presets
    @staticmethod
    def presets() -> list[str]:
        """Names of the built-in topologies (aliases such as the kernel test robot's machine
        names are in :data:`PRESET_ALIASES`, accepted by :meth:`preset` too)."""
        return list(_PRESETS)

    @staticmethod
    def preset(name: str, **overrides) -> "Topology":
        """A built-in topology, optionally with fields overridden.

        ``2s-128``
            The kernel test robot's ``lkp-icl-2sp6`` (alias): 2 sockets of Ice Lake-SP (Xeon
            Gold 6338 class, 32 cores / 64 threads each), 128 logical CPUs, 2 nodes. DRAM: 8
            channels of DDR4-3200 per socket (204.8 GB/s peak, ~150 GB/s STREAM); UPI 3 links
            at 11.2 GT/s; idle latency ~90 ns local / ~140 ns remote (Intel MLC figures
            commonly published for Ice Lake-SP).
        ``2s-88-csl``
            The kernel test robot's ``lkp-csl-2sp9`` (alias), described in its reports as "88
            threads 2 sockets Intel(R) Xeon(R) Gold 6238M CPU @ 2.10GHz (Cascade Lake) with 128G
            memory": 2 nodes of 22 cores / 44 threads, 64 GiB each. From the ark.intel.com
            product page "Intel Xeon Gold 6238M Processor (30.25M Cache, 2.10 GHz)": 22 cores,
            44 threads, 6 memory channels of DDR4-2933 (6 x 2933 MT/s x 8 B = 140.8 GB/s peak
            per socket), 3 UPI links at 10.4 GT/s (20.8 GB/s per direction each, 62.4 GB/s).
            Sustained figures are derived from those peaks with the ratios ``2s-128`` uses
            (STREAM 150 / 204.8 = 0.73 of the DRAM peak -> ~105 GB/s; link 60 / 67.2 = 0.89 of
            the UPI peak -> ~55 GB/s); idle latency ~85 / ~140 ns (Intel MLC figures commonly
            published for 2-socket Cascade Lake); per-thread bandwidth and cache-line transfer
            latencies as ``2s-128`` (no vendor figure; assumed equal).
        ``2s-224-spr``
            The kernel test robot's ``lkp-spr-r02`` (alias), described in its reports as "224
            threads 2 sockets Intel(R) Xeon(R) Platinum 8480CTDX (Sapphire Rapids) with 256G
            memory": 2 nodes of 56 cores / 112 threads, 128 GiB each. The 8480CTDX is a custom
            SKU without an ark page; its listed sibling, the ark.intel.com product page "Intel
            Xeon Platinum 8480+ Processor (105M Cache, 2.00 GHz)", gives 56 cores, 112 threads,
            8 memory channels of DDR5-4800 (307.2 GB/s peak per socket), 4 UPI links at 16 GT/s.
            Memory, interconnect, latency and cache-line figures are those of ``2s-240`` (the
            same Sapphire Rapids platform: same channels, DDR5 speed and UPI links); only the
            core count differs.
        ``2s-240``
            2 sockets of Sapphire Rapids (60 cores / 120 threads each, Xeon Platinum 8490H
            class), 240 logical CPUs, 2 nodes: 8 × DDR5-4800 per socket (307 GB/s peak),
            UPI 4 links at 16 GT/s; ~110 / ~190 ns.
        ``2s-ivb-40``
            2-node Ivy Bridge-EP (Xeon E5-2680 v2 class: 10 cores / 20 threads per socket),
            40 logical CPUs: 4 × DDR3-1866 per socket (59.7 GB/s peak, ~40 GB/s STREAM), QPI
            2 links at 8 GT/s; ~80 / ~130 ns. The machine of the 2023 futex_numa experiment
            (spec/kernel-futex-hash.md §3.4).
        ``4s-144``
            4 sockets of Xeon E7-8890 v3 (Haswell-EX, 18 cores / 36 threads), 144 logical CPUs,
            4 nodes, all at SLIT 21 (glueless QPI mesh); ~85 GB/s STREAM per socket.
        ``8n-genoa-nps4``
            2 × AMD EPYC 9654 (Genoa, 96 cores / 192 threads each) in NPS4 mode: 8 nodes of
            24 cores / 48 threads, 384 logical CPUs. SLIT 10 local, 11 to the neighbour
            quadrant, 12 to the far quadrants of the same socket, 32 across sockets (the
            values Genoa firmware reports in NPS4); 3 × DDR5-4800 channels per node (115 GB/s
            peak, ~90 GB/s STREAM).

        The bandwidth and latency figures are vendor peak rates and widely published
        STREAM / Intel MLC measurements of those parts, rounded; they are defaults to
        override, not measurements of the exact machines.
        """
        check_choice("topology", name, [*_PRESETS, *PRESET_ALIASES])
        name = PRESET_ALIASES.get(name, name)
        kwargs = dict(_PRESETS[name])
        kwargs.update(overrides)
        return Topology(name=name if not overrides else f"{name}+custom", **kwargs)

    @staticmethod
    def coerce(topology) -> "Topology":
        """Accept a :class:`Topology` or a preset name."""
        if isinstance(topology, Topology):
            return topology
        if isinstance(topology, str):
            return Topology.preset(topology)
        raise NumalabValueError(
            f"topology={topology!r} must be a Topology or a preset name; allowed: "
            f"{', '.join([*_PRESETS, *PRESET_ALIASES])}"
        )


def _genoa_nps4_distance() -> list[list[int]]:
    d = np.full((8, 8), 32, dtype=int)
    for s in (0, 4):
        for i in range(4):
            for j in range(4):
                # quadrants 0-1 and 2-3 are neighbours (11); the others are far (12)
                d[s + i, s + j] = 10 if i == j else (11 if i // 2 == j // 2 else 12)
    return d.tolist()


#: the 2-socket Sapphire Rapids platform's memory, UPI, latency and cache-line figures, shared by
#: its two presets (same channels, DDR5 speed and UPI links; they differ in cores and memory size)
_SAPPHIRE_RAPIDS = dict(
    nodes=2, smt=2, local_latency_ns=110.0, remote_latency_ns=190.0, node_bw_GBps=230.0, link_bw_GBps=90.0,
    thread_bw_GBps=14.0, line_same_node_ns=60.0, line_remote_ns=150.0,
)

_PRESETS: dict[str, dict] = {
    "2s-128": dict(
        nodes=2, cpus_per_node=64, smt=2, local_latency_ns=90.0, remote_latency_ns=140.0,
        node_bw_GBps=150.0, link_bw_GBps=60.0, mem_per_node_GiB=128.0, thread_bw_GBps=12.0,
        line_same_node_ns=50.0, line_remote_ns=130.0,
        source="kernel test robot lkp-icl-2sp6 (Ice Lake-SP, 2x32c/64t, 256 GiB)",
    ),
    "2s-88-csl": dict(
        nodes=2, cpus_per_node=44, smt=2, local_latency_ns=85.0, remote_latency_ns=140.0,
        node_bw_GBps=105.0, link_bw_GBps=55.0, mem_per_node_GiB=64.0, thread_bw_GBps=12.0,
        line_same_node_ns=50.0, line_remote_ns=130.0,
        source="kernel test robot lkp-csl-2sp9 (2x Xeon Gold 6238M, Cascade Lake, 2x22c/44t, 128 GB): "
               "ark.intel.com 'Intel Xeon Gold 6238M Processor (30.25M Cache, 2.10 GHz)' -- 22 cores, "
               "44 threads, 6 x DDR4-2933 (140.8 GB/s peak), 3 UPI at 10.4 GT/s; sustained = peak x the "
               "2s-128 ratios (0.73 DRAM, 0.89 UPI); latency ~85/~140 ns (published MLC figures)",
    ),
    "2s-224-spr": dict(
        _SAPPHIRE_RAPIDS, cpus_per_node=112, mem_per_node_GiB=128.0,
        source="kernel test robot lkp-spr-r02 (2x Xeon Platinum 8480CTDX, Sapphire Rapids, 2x56c/112t, "
               "256 GB): ark.intel.com 'Intel Xeon Platinum 8480+ Processor (105M Cache, 2.00 GHz)' "
               "(listed sibling of the custom CTDX SKU) -- 56 cores, 112 threads, 8 x DDR5-4800 "
               "(307.2 GB/s peak), 4 UPI at 16 GT/s; memory/UPI/latency figures as 2s-240 (same platform)",
    ),
    "2s-240": dict(
        _SAPPHIRE_RAPIDS, cpus_per_node=120, mem_per_node_GiB=256.0,
        source="2-socket Sapphire Rapids (Xeon Platinum 8490H class, 2x60c/120t)",
    ),
    "2s-ivb-40": dict(
        nodes=2, cpus_per_node=20, smt=2, local_latency_ns=80.0, remote_latency_ns=130.0,
        node_bw_GBps=40.0, link_bw_GBps=16.0, mem_per_node_GiB=64.0, thread_bw_GBps=8.0,
        line_same_node_ns=45.0, line_remote_ns=120.0,
        source="2-socket Ivy Bridge-EP (Xeon E5-2680 v2 class, 2x10c/20t)",
    ),
    "4s-144": dict(
        nodes=4, cpus_per_node=36, smt=2,
        distance=[[10, 21, 21, 21], [21, 10, 21, 21], [21, 21, 10, 21], [21, 21, 21, 10]],
        local_latency_ns=100.0, remote_latency_ns=170.0, node_bw_GBps=85.0, link_bw_GBps=25.0,
        mem_per_node_GiB=128.0, thread_bw_GBps=8.0, line_same_node_ns=60.0, line_remote_ns=170.0,
        source="4-socket Xeon E7-8890 v3 (Haswell-EX, 4x18c/36t)",
    ),
    "8n-genoa-nps4": dict(
        nodes=8, cpus_per_node=48, smt=2, distance=_genoa_nps4_distance(),
        local_latency_ns=110.0, remote_latency_ns=200.0, node_bw_GBps=90.0, link_bw_GBps=50.0,
        mem_per_node_GiB=96.0, thread_bw_GBps=12.0, line_same_node_ns=40.0, line_remote_ns=200.0,
        source="2x AMD EPYC 9654 (Genoa) in NPS4 mode, 8 nodes of 24c/48t",
    ),
}

PRESET_SOURCES = {name: spec["source"] for name, spec in _PRESETS.items()}

#: other names :meth:`Topology.preset` accepts: the kernel test robot's machines -> their preset.
PRESET_ALIASES = {"lkp-icl-2sp6": "2s-128", "lkp-csl-2sp9": "2s-88-csl", "lkp-spr-r02": "2s-224-spr"}

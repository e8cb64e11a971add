"""Futex key -> hash bucket mapping, vectorised (:mod:`numalab.futex.hash`).

Models ``kernel/futex/core.c``: ``futex_init()`` (table sizes), ``get_futex_key()`` (the key
and, from 6.16, the FUTEX2_NUMA / FUTEX2_MPOL node), ``__futex_hash()`` (which table and which
bucket) and ``futex_hash_allocate_default()`` (the 6.17 private-hash size rule), as paraphrased
in ``spec/kernel-futex-hash.md`` §1-§4 and §7.2.

A kernel's futex hash is a :class:`HashMode` object: its global tables (how many, how big),
which table and index a key goes to, where a bucket's memory lives, whether processes get
private tables (and so what ``buckets`` sets) and how big those are. The three kernel designs
(:data:`MODES`, by name in :data:`HASH_MODES`):

``"classic"``  :data:`CLASSIC`, one global table of ``roundup_pow_of_two(256 *
               num_possible_cpus())`` buckets (v3.13 ... v6.15).
``"numa"``     :data:`NUMA`, 6.16 as shipped: one table of ``S = roundup_pow_of_two(max(4,
               256*P // N))`` buckets per node; non-NUMA futexes pick the node from the hash
               bits above the index bits, FUTEX2_NUMA / FUTEX2_MPOL futexes use their node.
``"private"``  :data:`PRIVATE`, 6.17+: the per-node global tables plus one private table per
               process for its PRIVATE futexes with no node (default size by the clone-time
               rule, or the slots set with ``prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS,
               n)``; 0 = global hash).

A researcher's proposed hash is a subclass that overrides the parts it changes (docs/futex.md,
"Your own hash mode"); :func:`hash_mode` accepts such an object, a name registered with
:func:`register_mode`, or ``"package.module:NAME"`` (what ``--mode`` and sweep grids take).

Buckets get flat integer ids: global buckets first (``table * S + index``; the classic design
has one table), then each process's private table in process order.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass

import numpy as np

from ..errors import NumalabValueError, check_choice, check_int, check_str
from ..hashing import jhash2
from ..topology import Topology

__all__ = [
    "MODES", "HASH_MODES", "HashMode", "ClassicHash", "NodeHash", "PrivateHash", "CLASSIC", "NUMA",
    "PRIVATE", "KeyView", "hash_mode", "register_mode", "mode_names", "HASHES", "FUT_OFF_INODE", "FUT_OFF_MMSHARED", "FUTEX_NO_NODE", "BUCKET_BYTES",
    "roundup_pow_of_two", "is_power_of_two", "classic_hashsize", "node_hashsize",
    "private_default_slots", "check_table_size", "HashLayout", "resolve_node",
    "private_key_words", "global_key_words", "key_hashes", "futex_bucket",
]

HASHES = ("uniform", "jhash2")
#: ``include/linux/futex.h``: low bits of ``key.both.offset`` telling the key kind apart.
FUT_OFF_INODE = 1
FUT_OFF_MMSHARED = 2
#: ``include/uapi/linux/futex.h``: the FUTEX2_NUMA node word value meaning "no node yet".
FUTEX_NO_NODE = -1
#: ``struct futex_hash_bucket`` is one x86-64 cache line (dmesg "32768 (2097152 bytes ...)").
BUCKET_BYTES = 64
PAGE_SIZE = 4096
#: a 4 KiB page holds 64 line-aligned buckets; page-interleaved tables change node every 64.
BUCKETS_PER_PAGE = PAGE_SIZE // BUCKET_BYTES


def roundup_pow_of_two(n):
    """``roundup_pow_of_two(n)`` of ``include/linux/log2.h`` (n >= 1), int or int64 array."""
    arr = np.maximum(np.asarray(n, dtype=np.int64), 1)
    # 1 << fls(n - 1): frexp's exponent of n - 1 is its bit length (exact for n <= 2**53; no
    # log2, whose last bit depends on the CPU's numpy loop, numalab.libm)
    out = np.left_shift(np.int64(1), np.frexp((arr - 1).astype(np.float64))[1].astype(np.int64))
    return int(out) if out.ndim == 0 else out


def is_power_of_two(n) -> bool:
    """``is_power_of_2(n)``: n > 0 with a single bit set."""
    n = int(n)
    return n > 0 and (n & (n - 1)) == 0


def classic_hashsize(topology: Topology, base_small: bool = False) -> int:
    """Buckets of the single global table before 6.16 (``futex_init``, v3.13 ... v6.15).

    ``16`` with ``CONFIG_BASE_SMALL``, else ``roundup_pow_of_two(256 * num_possible_cpus())``
    (4 CPUs -> 1024, 32 -> 8192, 144 -> 65536, 256 -> 65536).
    """
    return 16 if base_small else roundup_pow_of_two(256 * topology.ncpus)


def node_hashsize(topology: Topology, base_small: bool = False) -> int:
    """Buckets of EACH per-node table from 6.16 (``futex_init`` at cec199c5e39b).

    ``16`` with ``CONFIG_BASE_SMALL``, else
    ``roundup_pow_of_two(max(4, 256 * num_possible_cpus() // num_possible_nodes()))``
    (256 CPUs on 2 nodes -> 2 x 32768).
    """
    if base_small:
        return 16
    return roundup_pow_of_two(max(4, (256 * topology.ncpus) // topology.nodes))


def private_default_slots(threads: int, topology: Topology, base_small: bool = False,
                          online_cpus: int | None = None) -> int:
    """Private-hash size chosen by ``futex_hash_allocate_default()`` (6.17), in buckets.

    ``roundup_pow_of_two(4 * min(threads, num_online_cpus()))`` clamped to
    ``[16, S_node]`` where ``S_node`` is the per-node global table size (so 32 CPUs -> at most
    128, 144 or 256 CPUs -> at most 1024). ``threads`` is the process's worker count: the table
    only ever grows, so the last worker's clone decides, and ``copy_process()`` calls
    ``futex_hash_allocate_default()`` before it counts the new thread (before ``tasklist_lock``
    and ``nr_threads++``; the order as quoted in the 2025-09-18 LKML review of its error path),
    so ``get_nr_threads()`` then counts the main thread and the workers before it: the workers.
    """
    threads = check_int("threads", threads, lo=1)
    online = topology.ncpus if online_cpus is None else check_int("online_cpus", online_cpus, lo=1)
    want = roundup_pow_of_two(4 * min(threads, online))
    return int(min(max(want, 16), node_hashsize(topology, base_small)))


def check_table_size(name: str, value, *, lo: int = 1) -> int:
    """A table size must be a power of two >= ``lo`` (the kernel masks with ``size - 1``)."""
    value = check_int(name, value, lo=lo)
    if not is_power_of_two(value):
        raise NumalabValueError(
            f"{name}={value} is not a power of two; allowed: a power of two >= {lo} "
            f"(the kernel indexes buckets with hash & (size - 1))"
        )
    return value


class KeyView:
    """The distinct futex keys a :class:`HashMode` routes, as arrays over keys.

    ``h_global`` (int64, the 32-bit hash of the whole key: ``jhash2`` of mm/inode and page
    word, ``initval`` = offset), ``h_private`` (int64, the hash of the address words only, as
    the private hash computes it), ``node`` (the node ``get_futex_key`` resolved, -1 = none,
    :func:`resolve_node`), ``proc`` (the owning process), ``private`` (PRIVATE key: no FUT_OFF
    bits). ``memory_node``: the node holding the futex word's memory, taken as the node of the
    first thread (in thread order) that uses it (first-touch placement; computed only when a
    mode asks for it, and only available for keys routed by :func:`~numalab.futex.route`)."""

    def __init__(self, *, h_global, h_private, node, proc, private, memory_node=None):
        self.h_global = np.asarray(h_global, dtype=np.uint32).astype(np.int64)
        self.h_private = np.asarray(h_private, dtype=np.uint32).astype(np.int64)
        self.node = np.asarray(node, dtype=np.int64)
        self.proc = np.asarray(proc, dtype=np.int64)
        self.private = np.asarray(private, dtype=bool)
        self._memory_node = memory_node

    @property
    def memory_node(self) -> np.ndarray:
        if self._memory_node is None:
            raise NumalabValueError(
                "this hash mode reads KeyView.memory_node, which only keys routed by "
                "numalab.futex.route() carry; allowed: route a FutexWorkload"
            )
        if callable(self._memory_node):
            self._memory_node = np.asarray(self._memory_node(), dtype=np.int64)
        return self._memory_node


class HashMode:
    """A futex hash design: where ``__futex_hash`` puts a key and where that bucket lives.

    Subclass it and override what your design changes; everything else is the kernel's.

    Class attributes
    ----------------
    name : str
        The mode's name in sweeps, Dataset coordinates and the CLI (``--mode``).
    label : str
        One line for docs and legends.
    private_tables : bool
        Whether each process gets a private table for its PRIVATE keys that have no node
        (6.17, ``futex_private_hash()``). Then ``buckets`` (perf bench ``-b``, a sweep's
        ``buckets``) is that table's slots (``PR_FUTEX_HASH_SET_SLOTS``, 0 = the global hash)
        and every such op takes a private-hash reference (``refcount``); otherwise
        ``buckets`` is a what-if size of each global table (``hashsize``).
    pr_futex_hash : bool
        Whether the kernel has the ``PR_FUTEX_HASH`` prctl (6.16 on): perf bench then prints
        its ``Futex hashing: ...`` line.

    Methods (all vectorised over keys or buckets)
    ---------------------------------------------
    tables(nodes) : how many global tables (``futex_queues[]``).
    table_size(topology, base_small) : buckets of EACH global table (``futex_hashmask + 1``).
    table_of(layout, keys) : which global table every key goes to.
    index_of(layout, keys) : the bucket index in that table (``hash & futex_hashmask``).
    home_of(layout, bucket) : the node whose memory holds each flat global bucket id.
    private_slots(threads, topology, base_small) : a private table's size when the process
        did not set one (``futex_hash_allocate_default()``).
    """

    name = "custom"
    label = ""
    private_tables = False
    pr_futex_hash = True

    def __init__(self, name: str | None = None, label: str | None = None):
        if name is not None:
            self.name = check_str("name", name)
        if label is not None:
            self.label = label

    def tables(self, nodes: int) -> int:
        """Global tables: one per node (6.16's per-node ``futex_queues[node]``)."""
        return nodes

    def table_size(self, topology: Topology, base_small: bool = False) -> int:
        """Buckets of each global table: 6.16's per-node size (:func:`node_hashsize`)."""
        return node_hashsize(topology, base_small)

    def table_of(self, layout: "HashLayout", keys: KeyView) -> np.ndarray:
        """The key's node if it has one, else the hash bits above the index bits modulo the
        node count (``__futex_hash`` for a non-NUMA futex: interleaved over the nodes)."""
        hashed_node = (keys.h_global >> (int(layout.global_size).bit_length() - 1)) % layout.nodes
        return np.where(keys.node == FUTEX_NO_NODE, hashed_node, keys.node)

    def index_of(self, layout: "HashLayout", keys: KeyView) -> np.ndarray:
        """``hash & (size - 1)``."""
        return keys.h_global & (layout.global_size - 1)

    def home_of(self, layout: "HashLayout", bucket: np.ndarray) -> np.ndarray:
        """Table n lives on node n (``alloc_pages_exact_nid``)."""
        return np.minimum(bucket // layout.global_size, layout.nodes - 1)

    def private_slots(self, threads: int, topology: Topology, base_small: bool = False) -> int:
        """The 6.17 clone-time size rule (:func:`private_default_slots`)."""
        return private_default_slots(threads, topology, base_small)

    # ------------------------------------------------------------------ identity
    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((type(self), self.name))


class ClassicHash(HashMode):
    """v3.13 ... v6.15: one global table of ``roundup_pow_of_two(256 * num_possible_cpus())``
    buckets; its pages interleaved over the nodes or all on node 0 (``layout.classic_home``,
    both UNVERIFIED, spec §1.1)."""

    name = "classic"
    label = "classic <= 6.15"
    pr_futex_hash = False

    def tables(self, nodes: int) -> int:
        return 1

    def table_size(self, topology: Topology, base_small: bool = False) -> int:
        return classic_hashsize(topology, base_small)

    def table_of(self, layout: "HashLayout", keys: KeyView) -> np.ndarray:
        return np.zeros_like(keys.h_global)

    def home_of(self, layout: "HashLayout", bucket: np.ndarray) -> np.ndarray:
        if layout.classic_home == "interleave":
            return (bucket // BUCKETS_PER_PAGE) % layout.nodes
        return np.zeros_like(bucket)


class NodeHash(HashMode):
    """6.16 as shipped: per-node global tables, FUTEX2_NUMA / FUTEX2_MPOL (spec §2); the
    private hash is compiled out (``PR_FUTEX_HASH_SET_SLOTS`` fails)."""

    name = "numa"
    label = "numa 6.16"


class PrivateHash(NodeHash):
    """6.17+: the per-node global tables plus a private table per process (spec §4)."""

    name = "private"
    label = "private 6.17"
    private_tables = True


CLASSIC, NUMA, PRIVATE = ClassicHash(), NodeHash(), PrivateHash()
#: the kernel designs, by name
HASH_MODES: dict[str, HashMode] = {m.name: m for m in (CLASSIC, NUMA, PRIVATE)}
#: the kernel designs' names (what ``mode=`` took as a string before modes were objects)
MODES = tuple(HASH_MODES)
_REGISTERED: dict[str, HashMode] = dict(HASH_MODES)


def register_mode(mode: HashMode) -> HashMode:
    """Make ``mode`` known by its name (to :func:`hash_mode`, ``--mode``, sweep grids run in
    this process); a kernel mode's name cannot be taken. Returns ``mode``."""
    if not isinstance(mode, HashMode):
        raise NumalabValueError(f"register_mode({mode!r}): allowed: a HashMode instance")
    if mode.name in HASH_MODES and mode is not HASH_MODES[mode.name]:
        raise NumalabValueError(f"mode name {mode.name!r} is a kernel mode; allowed: another name")
    _REGISTERED[mode.name] = mode
    return mode


def mode_names() -> tuple:
    """Names :func:`hash_mode` knows: the kernel modes, then the registered ones."""
    return tuple(_REGISTERED)


def _import_mode(name: str, spec: str) -> HashMode:
    module, _, attr = spec.partition(":")
    try:
        obj = importlib.import_module(module)
    except ImportError as exc:
        raise NumalabValueError(f"{name}={spec!r}: cannot import module {module!r} ({exc}); "
                                f"allowed: 'package.module:NAME' of an importable module") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise NumalabValueError(f"{name}={spec!r}: module {module!r} has no {attr!r}; "
                                    f"allowed: 'package.module:NAME' naming a HashMode")
        obj = getattr(obj, part)
    if isinstance(obj, type) and issubclass(obj, HashMode):
        obj = obj()
    if not isinstance(obj, HashMode):
        raise NumalabValueError(f"{name}={spec!r} is a {type(obj).__name__}; allowed: a HashMode "
                                f"instance or subclass")
    return obj


def hash_mode(value, name: str = "mode") -> HashMode:
    """A :class:`HashMode` from a mode object, a known name (:func:`mode_names`) or
    ``"package.module:NAME"`` (a HashMode instance or subclass in an importable module)."""
    if isinstance(value, HashMode):
        return value
    if isinstance(value, str):
        if value in _REGISTERED:
            return _REGISTERED[value]
        if ":" in value and value.partition(":")[0] and value.partition(":")[2]:
            return _import_mode(name, value)
    known = mode_names()
    close = difflib.get_close_matches(value, known, n=1) if isinstance(value, str) else []
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise NumalabValueError(
        f"{name}={value!r} is not known{hint}; allowed: {', '.join(known)}, a HashMode object, "
        f"or 'package.module:NAME'"
    )


@dataclass(frozen=True)
class HashLayout:
    """Which tables exist and how big they are, for one simulated system.

    Parameters
    ----------
    mode : HashMode, or a name / spec :func:`hash_mode` accepts ("classic", "numa", "private")
    nodes : int
        ``nr_node_ids`` (all nodes possible).
    global_size : int
        Buckets of EACH global table (the classic design has one).
    private_slots : tuple of int
        Private-table buckets per process (0 = that process uses the global hash).
        Only meaningful for a mode with ``private_tables``.
    squash : bool
        FUTEX_SQUASH (the 2023 debug patch): every futex maps to index 0 of its table.
    classic_home : "interleave" | "node0"
        Where the classic table's memory lives: pages interleaved over the nodes (64 buckets a
        page) or all on node 0; the spec (§1.1) marks both UNVERIFIED.
    private_home : tuple of int
        Node holding each process's private table (the allocating thread's node; UNVERIFIED).
    """

    mode: HashMode
    nodes: int
    global_size: int
    private_slots: tuple = ()
    squash: bool = False
    classic_home: str = "interleave"
    private_home: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "mode", hash_mode(self.mode))
        check_table_size("global_size", self.global_size)
        check_choice("classic_home", self.classic_home, ("interleave", "node0"))
        for s in self.private_slots:
            if s != 0:
                check_table_size("private_slots", s, lo=2)

    @property
    def n_global(self) -> int:
        """Buckets in the global table(s)."""
        return self.mode.tables(self.nodes) * self.global_size

    @property
    def private_offsets(self) -> np.ndarray:
        """Flat id of bucket 0 of every process's private table."""
        slots = np.asarray(self.private_slots if self.mode.private_tables else (), dtype=np.int64)
        return self.n_global + np.concatenate([[0], np.cumsum(slots)[:-1]]).astype(np.int64) if slots.size else slots

    @property
    def n_buckets(self) -> int:
        """All buckets (global + private)."""
        extra = sum(self.private_slots) if self.mode.private_tables else 0
        return int(self.n_global + extra)

    def bucket_home(self, bucket) -> np.ndarray:
        """Node whose memory holds each flat bucket id."""
        b = np.asarray(bucket, dtype=np.int64)
        home = self.mode.home_of(self, b)
        if self.mode.private_tables and self.private_slots:
            offs = self.private_offsets
            in_priv = b >= self.n_global
            proc = np.searchsorted(offs, b, side="right") - 1
            home = np.where(in_priv, np.asarray(self.private_home, dtype=np.int64)[np.maximum(proc, 0)], home)
        return home


def resolve_node(*, numa, node_word, mpol, mpol_node, cpu_node) -> np.ndarray:
    """The key's node as ``get_futex_key()`` resolves it (6.16, cec199c5 + c042c505).

    All arguments broadcast. ``numa``: FUTEX2_NUMA set; ``node_word``: the value in the
    futex's node word (-1 = FUTEX_NO_NODE); ``mpol``: FUTEX2_MPOL set; ``mpol_node``: the node
    the VMA's memory policy yields (-1 = none); ``cpu_node``: node of the CPU doing the first
    operation (first touch). Returns -1 for a futex with no node (hashed over the nodes).
    """
    numa = np.asarray(numa, dtype=bool)
    mpol = np.asarray(mpol, dtype=bool)
    if not numa.any() and not mpol.any():   # plain futexes (perf bench): no node at all
        return np.full(np.broadcast(numa, mpol, node_word, mpol_node, cpu_node).shape, FUTEX_NO_NODE,
                       dtype=np.int64)
    node = np.where(numa, np.asarray(node_word, dtype=np.int64), FUTEX_NO_NODE)
    node = np.where((node == FUTEX_NO_NODE) & np.asarray(mpol, dtype=bool),
                    np.asarray(mpol_node, dtype=np.int64), node)
    # FUTEX2_NUMA with still no node: the local node, written back to the node word
    return np.where(numa & (node == FUTEX_NO_NODE), np.asarray(cpu_node, dtype=np.int64), node)


def _split64(x) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.uint64)
    return (x & np.uint64(0xFFFFFFFF)).astype(np.uint32), (x >> np.uint64(32)).astype(np.uint32)


def global_key_words(ptr, word):
    """``union futex_key`` as the 4 u32 words ``__futex_hash`` feeds to jhash2 (64-bit LE):
    ``[lo32(ptr), hi32(ptr), lo32(word), hi32(word)]``; shape ``(n, 4)`` uint32."""
    p_lo, p_hi = _split64(ptr)
    w_lo, w_hi = _split64(word)
    return np.stack([p_lo, p_hi, w_lo, w_hi], axis=-1)


def private_key_words(word):
    """The private hash drops the mm (constant per process): ``[lo32(word), hi32(word)]``."""
    w_lo, w_hi = _split64(word)
    return np.stack([w_lo, w_hi], axis=-1)


def key_hashes(n: int, rng: np.random.Generator, *, hash: str = "uniform", ptr=None, word=None,
               offset=None) -> tuple[np.ndarray, np.ndarray]:
    """Global and private 32-bit hashes of ``n`` distinct futex keys.

    ``hash="uniform"``: independent uniform u32 draws (the spec's §1.3 modelling note: the mm
    pointer and ASLR change the collisions on every run). ``hash="jhash2"``: the kernel's
    ``jhash2`` of the key words, ``initval = key.offset`` (offset within the page | FUT_OFF
    bits), by :func:`numalab.hashing.jhash2` (the vectorised lookup3); ``ptr``, ``word``
    (page-aligned address or pgoff) and ``offset`` are then required.
    """
    check_choice("hash", hash, HASHES)
    if hash == "uniform":
        h = rng.integers(0, 2**32, size=(2, n), dtype=np.uint32)
        return h[0], h[1]
    off = np.asarray(offset, dtype=np.uint32)
    return jhash2(global_key_words(ptr, word), off), jhash2(private_key_words(word), off)


def futex_bucket(layout: HashLayout, *, h_global, h_private, node, proc, private,
                 memory_node=None) -> np.ndarray:
    """Flat bucket id of every futex key (``__futex_hash``, 6.16/6.17; §2.4 and §7.2).

    Parameters
    ----------
    h_global, h_private : uint32 arrays
        jhash2 of the full key / of the address words only.
    node : int array
        From :func:`resolve_node`; -1 = no node.
    proc : int array
        Process index of the key's mm (selects the private table).
    private : bool array
        PRIVATE key (no FUT_OFF bits); only those may use a private table.
    memory_node : int array or callable returning one, optional
        :attr:`KeyView.memory_node`, for modes that read it.

    A key with a private table (a mode with ``private_tables``, a PRIVATE key, no node, the
    process's slots > 0) goes to ``private_offset + (h_private & (slots - 1))``; every other
    key to ``table_of * size + index_of`` of the layout's mode (index 0 under FUTEX_SQUASH).
    """
    mode = layout.mode
    node = np.asarray(node, dtype=np.int64)
    if mode.private_tables and layout.private_slots and len(set(layout.private_slots)) == 1:
        # one private table size for all: if every key goes to a private table (perf bench
        # without -S), the global tables need not be consulted
        slots = int(layout.private_slots[0])
        use = np.asarray(private, dtype=bool) & (node == FUTEX_NO_NODE)
        if slots > 0 and use.all():
            pidx = np.zeros(use.shape, dtype=np.int64) if layout.squash else (
                np.asarray(h_private, dtype=np.uint32).astype(np.int64) & (slots - 1))
            if len(layout.private_slots) == 1:
                return pidx + int(layout.private_offsets[0])
            return pidx + layout.private_offsets[np.asarray(proc, dtype=np.int64)]
    keys = KeyView(h_global=h_global, h_private=h_private, node=node, proc=proc, private=private,
                   memory_node=memory_node)
    idx = np.zeros_like(keys.h_global) if layout.squash else mode.index_of(layout, keys)
    bucket = mode.table_of(layout, keys) * layout.global_size + idx
    if mode.private_tables and layout.private_slots:
        proc = keys.proc
        slots = np.asarray(layout.private_slots, dtype=np.int64)[proc]
        use = keys.private & (node == FUTEX_NO_NODE) & (slots > 0)
        pidx = keys.h_private & np.maximum(slots - 1, 0)
        if layout.squash:
            pidx = np.zeros_like(pidx)
        bucket = np.where(use, layout.private_offsets[proc] + pidx, bucket)
    return bucket

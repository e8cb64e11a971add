"""What ``task_numa_work()`` knows about the VMAs it visits: :class:`ScanView`, the one input of
every scan-filter rule (:mod:`numalab.rules`) and of :func:`numalab.policy.decide`.

A view holds, as numpy arrays over a batch, the state ``vma_is_accessed()`` and the checks
around it read in the kernel (spec ``kernel-numa-balancing.md`` §2.3, §3.2, §3.3): the VMA's
``vma_numab_state`` (``pids_active[]`` windows, ``start_scan_seq``, ``prev_scan_seq``,
``next_scan``), its bounds, the mm's ``numa_scan_seq`` / ``numa_scan_offset`` and thread count,
the scanning thread, the clock. Shapes, with ``B`` the batch axes (e.g. replica), ``V`` VMAs,
``W`` windows and ``words = width // 64``:

* ``pids_active`` (*B, V, W, words) uint64, in storage order (:mod:`numalab.history`);
* per VMA (*B, V): ``idx``, ``start_scan_seq``, ``prev_scan_seq``, ``vm_start``, ``vm_end``,
  ``next_scan``, ``vma_scan_select``, ``unsuitable`` / ``shared_ro`` / ``inaccessible``,
  ``windows_active``;
* per mm (*B, 1): ``scanner_tid``, ``numa_scan_seq``, ``scan_offset``, ``now``, ``nr_threads``,
  ``forced``.

A rule gets every field at those shapes (per-mm ones broadcast over the VMAs), so
``view.numa_scan_seq - view.start_scan_seq < 2`` is a (*B, V) answer; :attr:`ScanView.shape`
is (*B, V). The helpers name the kernel's own operations on the windows: :meth:`window`
(``pids_active[current]`` and older), :meth:`union` (the OR the PID test reads),
:meth:`popcount` (``bitmap_weight``), :meth:`has_scanner` (``test_bit(hash_32(current->pid))``),
:attr:`own_pid`, :attr:`window_pids`. The kernel keeps no per-window fault counts, only which
hashed PIDs faulted: :attr:`window_pids` (distinct PIDs per window) is what a rule can count.
The scanner enters through its tid only, as ``current->pid`` enters ``vma_is_accessed()``.

Units: ``scan_offset``, ``vm_start``, ``vm_end`` in pages of ``page_bytes``; ``now`` and
``next_scan`` in ms. The view is read-only by convention: a rule must not write to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .hashing import pid_bit
from .history import newest_mask

__all__ = ["ScanView", "PER_VMA", "PER_MM", "FLAGS", "synthetic_view"]

#: the per-VMA fields ((*B, V)) and the per-mm fields ((*B, 1)) of a view
PER_VMA = ("idx", "start_scan_seq", "prev_scan_seq", "vm_start", "vm_end", "next_scan", "vma_scan_select",
           "windows_active")
PER_MM = ("scanner_tid", "numa_scan_seq", "scan_offset", "now", "nr_threads", "forced")
#: the VMA flag tests every kernel runs first (vma_migratable / vma_policy_mof, the shared
#: read-only file check, PROT_NONE VMAs), in that order
FLAGS = ("unsuitable", "shared_ro", "inaccessible")


@dataclass(eq=False)
class ScanView:
    """The state ``task_numa_work()`` reads to decide a batch of VMA visits (module docstring).

    Fields (arrays; per VMA (*B, V), per mm (*B, 1); :func:`numalab.policy.decide` also takes
    anything broadcastable, per-mm values as (*B,), and fills ``rotation`` / ``width`` from the
    policy):

    pids_active : uint64 (*B, V, W, words) -- ``vma_numab_state.pids_active[]``
    idx : the ring's newest window (rotation "ring"; ignored for "shift")
    scanner_tid : uint32 -- ``current->pid`` of the thread running ``task_numa_work``
    numa_scan_seq, scan_offset : ``mm->numa_scan_seq``, ``mm->numa_scan_offset`` (pages)
    start_scan_seq, prev_scan_seq, next_scan : ``vma_numab_state`` fields (next_scan in ms)
    vm_start, vm_end : the VMA's bounds (pages; vm_end None = not given)
    now : ms; nr_threads : the mm's threads; forced : the v6.7 retry pass (``vma_pids_forced``)
    vma_scan_select : the RFC 2023 p2 counter (None = 0)
    windows_active : the newest windows the PID test ORs (adaptive history; None = all W)
    unsuitable, shared_ro, inaccessible : the VMA flag tests (None = never)
    rotation, width, page_bytes : the history's rotation ("shift"/"ring"), map bits, page size
    """

    pids_active: np.ndarray
    idx: object
    scanner_tid: object
    numa_scan_seq: object
    start_scan_seq: object
    prev_scan_seq: object
    scan_offset: object
    vm_start: object
    next_scan: object
    now: object
    nr_threads: object
    vm_end: object = None
    forced: object = False
    vma_scan_select: object = None
    windows_active: object = None
    unsuitable: object = None
    shared_ro: object = None
    inaccessible: object = None
    rotation: str = "shift"
    width: int = 64
    page_bytes: int = 4096
    _memo: dict = field(default_factory=dict, init=False, repr=False)

    # ---------------------------------------------------------------- geometry
    @property
    def shape(self) -> tuple:
        """(*B, V): the shape of a rule's answer."""
        return self.pids_active.shape[:-2]

    @property
    def windows(self) -> int:
        """W, the allocated windows (``NR_ACCESS_PID_HIST``, or ``n_max`` of an adaptive history)."""
        return self.pids_active.shape[-2]

    @property
    def size_pages(self):
        """``vm_end - vm_start`` (pages)."""
        return np.asarray(self.vm_end) - np.asarray(self.vm_start)

    # ---------------------------------------------------------------- the windows
    @property
    def scanner_bit(self) -> np.ndarray:
        """``hash_32(current->pid, ilog2(width))``: the scanner's bit in a window, (*B, 1) int64."""
        bit = self._memo.get("bit")
        if bit is None:
            tid = np.asarray(self.scanner_tid)
            bit = self._memo["bit"] = pid_bit(tid, width=self.width)
        return bit

    def window(self, age: int = 0) -> np.ndarray:
        """The window ``age`` rotations old, (*B, V, words): 0 is the current one, which
        hinting faults write to (``pids_active[1]`` in mainline, ``pids_active[idx]`` in the
        ring)."""
        windows = self.windows
        if not 0 <= age < windows:
            from .errors import NumalabValueError

            raise NumalabValueError(f"window age={age!r}; allowed: 0 (current) to {windows - 1}")
        if self.rotation == "ring":
            idx = np.asarray(self.idx)
            pos = idx % windows if age == 0 else (idx - age) % windows
            return np.take_along_axis(self.pids_active, pos[..., None, None].astype(np.int64), axis=-2)[..., 0, :]
        return self.pids_active[..., windows - 1 - age, :]

    def union(self, n=None) -> np.ndarray:
        """OR of the newest ``n`` windows, (*B, V, words): ``pids_active[0] | pids_active[1]``
        in mainline. ``n=None``: the windows the PID test ORs (``windows_active``, else all)."""
        key = ("union", n if n is None or np.ndim(n) == 0 else id(n))
        out = self._memo.get(key)
        if out is not None:
            return out
        pa = self.pids_active
        if n is None and self.windows_active is not None:
            n = self.windows_active
        if n is None or (np.ndim(n) == 0 and int(n) == self.windows):
            out = np.bitwise_or.reduce(pa, axis=-2)
        else:
            ring = self.idx if self.rotation == "ring" else None
            include = newest_mask(self.shape, self.windows, n, ring, rotation=self.rotation)
            out = np.bitwise_or.reduce(np.where(include[..., None], pa, np.uint64(0)), axis=-2)
        self._memo[key] = out
        return out

    @staticmethod
    def popcount(bitmap) -> np.ndarray:
        """``bitmap_weight``: set bits of a (..., words) bitmap, int64 (...)."""
        return np.bitwise_count(bitmap).sum(axis=-1, dtype=np.int64)

    def has_scanner(self, bitmap) -> np.ndarray:
        """Is the scanner's bit set in ``bitmap`` (*B, V, words)? bool (*B, V)."""
        bit = self.scanner_bit
        sel = bitmap[..., 0]
        if bitmap.shape[-1] > 1:
            sel = np.where((bit >> 6) == 0, sel, bitmap[..., 1])
        return ((sel >> (bit & 63).astype(np.uint64)) & np.uint64(1)).astype(bool)

    @property
    def own_pid(self) -> np.ndarray:
        """The v6.4 PID test: the scanner's bit in :meth:`union`, bool (*B, V)."""
        return self.has_scanner(self.union())

    @property
    def window_pids(self) -> np.ndarray:
        """Distinct hashed PIDs recorded in each window, newest first: int64 (*B, V, W)."""
        return np.stack([self.popcount(self.window(a)) for a in range(self.windows)], axis=-1)


def synthetic_view(batch=(2,), nvma: int = 3, *, windows: int = 4, width: int = 64, rotation: str = "ring",
                   windows_active=None, seed: int = 0) -> ScanView:
    """A small random but plausible view (every field at its full shape): what a rule is
    probed on before it runs anywhere (:class:`numalab.rules.Rule`), and a fixture for tests."""
    rng = np.random.default_rng(seed)
    batch = tuple(batch)
    vshape = (*batch, nvma)
    words = width // 64
    pids = rng.integers(0, 2**63, size=(*vshape, windows, words), dtype=np.uint64)
    pids &= rng.integers(0, 2**63, size=pids.shape, dtype=np.uint64)  # sparse-ish maps
    pids &= rng.integers(0, 2**63, size=pids.shape, dtype=np.uint64)
    seq = rng.integers(0, 8, size=(*batch, 1))
    vm_start = rng.integers(0, 64, size=vshape) * 512
    if windows_active is not None:
        windows_active = np.broadcast_to(np.asarray(windows_active, dtype=np.int64), vshape)
    return ScanView(
        pids_active=pids, idx=rng.integers(0, windows, size=vshape),
        scanner_tid=rng.integers(1000, 5000, size=(*batch, 1)).astype(np.uint32),
        numa_scan_seq=seq, start_scan_seq=np.minimum(rng.integers(0, 8, size=vshape), seq),
        prev_scan_seq=seq - rng.integers(0, 9, size=vshape), scan_offset=rng.integers(0, 64, size=(*batch, 1)) * 512,
        vm_start=vm_start, vm_end=vm_start + rng.choice([1, 512, 2048], size=vshape),
        next_scan=rng.integers(0, 3000, size=vshape), now=rng.integers(0, 3000, size=(*batch, 1)),
        nr_threads=rng.integers(1, 64, size=(*batch, 1)), forced=rng.random((*batch, 1)) < 0.2,
        vma_scan_select=rng.integers(0, 3, size=vshape), windows_active=windows_active,
        unsuitable=np.zeros(vshape, bool), shared_ro=np.zeros(vshape, bool), inaccessible=np.zeros(vshape, bool),
        rotation=rotation, width=width,
    )

"""Scalar reference of the scan filter: one scanning thread, one VMA at a time.

Test oracle for :func:`numalab.policy.decide`; imports nothing vectorised. It reads the
policy's switches (any object with the :class:`numalab.policy.Policy` attributes) and follows
``spec/kernel-numa-balancing.md`` §3.2 (``task_numa_work``) and §3.3 (``vma_is_accessed``)
line by line. Returns reason *names*; the caller maps them to codes.
"""

from __future__ import annotations

from . import history as H
from .hashing import pid_bit

VMA_4M = 1 << 22
VMA_RATELIMIT_SCALEDOWN_F = 7


def hot_vma(policy, hist, idx) -> bool:
    """RFC: ``bitmap_weight(pids_active[current]) >= threshold`` (anyone faulted lately)."""
    current = H.union(hist, idx, 1, policy.rotation)
    return H.popcount(current) >= policy.hot


def shared_vma(policy, hist, idx, windows_active=None) -> bool:
    """RFC: ``bitmap_weight(OR of all windows) >= threshold`` (SHARED_VMA_THRESH); an adaptive
    history ORs only its newest ``windows_active`` windows."""
    return H.popcount(H.union(hist, idx, windows_active, policy.rotation)) >= policy.shared


def vma_is_accessed(policy, hist, idx, tid, *, numa_scan_seq, start_scan_seq, prev_scan_seq,
                    scan_offset, vm_start, nr_threads, windows_active=None):
    """The reason a VMA passes the PID filter, or None if it does not.

    ``windows_active``: how many of the newest windows the own-PID and shared tests OR (None =
    all of them, a fixed N)."""
    if policy.hot and policy.hot_first and hot_vma(policy, hist, idx):
        return "hot"  # RFC 2023 p5: checked first
    if policy.early_passes == "mm" and numa_scan_seq < 2:
        return "early_passes"  # v6.4-v6.7
    if policy.early_passes == "vma" and numa_scan_seq - start_scan_seq < 2:
        return "early_passes"  # v6.8+
    if policy.own_pid:
        bit = pid_bit(tid, policy.width)
        if H.test_bit(H.union(hist, idx, windows_active, policy.rotation), bit):
            return "own_pid"
    if policy.hot and not policy.hot_first and hot_vma(policy, hist, idx):
        return "hot"  # RFC 2024 PATCH 1 order
    if policy.shared and shared_vma(policy, hist, idx, windows_active):
        return "shared"
    if policy.ignore_pid_partial and scan_offset > vm_start:
        return "ignore_pid_inactive"  # v6.7: finish a partly scanned VMA
    if policy.starvation and numa_scan_seq > prev_scan_seq + nr_threads:
        return "starvation"  # v6.12
    return None


def task_disjoint_vma_select(select: int, vma_bytes: int) -> tuple[bool, int]:
    """RFC 2023 p2: refuse while the counter is > 0 (decrementing it); at 0 allow once and refill."""
    if select > 0:
        return False, select - 1
    return True, 1 + ((VMA_4M // vma_bytes) >> VMA_RATELIMIT_SCALEDOWN_F)


def visit(policy, hist, idx, tid, *, numa_scan_seq, start_scan_seq, prev_scan_seq, scan_offset, vm_start,
          next_scan, now, nr_threads, forced=False, vma_scan_select=0, vm_end=None, page_bytes=4096,
          unsuitable=False, shared_ro=False, inaccessible=False, windows_active=None):
    """One VMA visited by ``task_numa_work`` run by thread ``tid``: ``(reason, vma_scan_select)``.

    The numab state is assumed to exist already (the engine creates it on the first visit)."""
    if unsuitable:
        return "unsuitable", vma_scan_select
    if shared_ro:
        return "shared_ro", vma_scan_select
    if inaccessible:
        return "inaccessible", vma_scan_select
    if not policy.numab_state:
        return "unfiltered", vma_scan_select  # <= v6.3
    if numa_scan_seq != 0 and now < next_scan:
        return "scan_delay", vma_scan_select
    # (the window rotation would happen here from v6.7 on; decide() leaves it to the engine)
    if not any(getattr(policy, r) for r in ("early_passes", "own_pid", "hot", "shared", "ignore_pid_partial",
                                            "seq_completed", "forced_one", "starvation", "disjoint_select")):
        return "unfiltered", vma_scan_select  # ef6a22b70f: scan delay, no vma_is_accessed()
    if policy.seq_completed and prev_scan_seq == numa_scan_seq:
        return "seq_completed", vma_scan_select
    if policy.forced_one and forced:
        return "forced", vma_scan_select
    why = vma_is_accessed(policy, hist, idx, tid, numa_scan_seq=numa_scan_seq, start_scan_seq=start_scan_seq,
                          prev_scan_seq=prev_scan_seq, scan_offset=scan_offset, vm_start=vm_start,
                          nr_threads=nr_threads, windows_active=windows_active)
    if why is not None:
        return why, vma_scan_select
    if policy.disjoint_select:
        ok, new = task_disjoint_vma_select(vma_scan_select, (vm_end - vm_start) * page_bytes)
        return ("disjoint_select" if ok else "disjoint_wait"), new
    return "pid_inactive", vma_scan_select

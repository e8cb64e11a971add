"""What the access-PID history records, and what the PID test makes of it: the mechanism through
which the history length (``NR_ACCESS_PID_HIST``) acts on a workload.

A longer history helps exactly when a window records too few distinct PIDs for a scanner to
find its own bit: the own-PID test of ``vma_is_accessed`` (spec §3.3 (2)) ORs the windows, so
with ``N`` windows a scanner passes if it faulted in the VMA in any of the last ``N`` rotation
periods. These counters, kept on the workload's buffer VMAs (``vma_kind == "buffer"``: the
large anonymous mapping its threads share or slice; a thread's own stack passes trivially),
measure each link of that chain:

* ``pid_windows`` / ``pid_window_bits`` -- at every window rotation in ``task_numa_work``
  (spec §2.3: the current window stops taking bits, ring or shift), the window that stops being
  the current one and its ``bitmap_weight``: the distinct hashed PIDs it recorded. Bits are set
  by ``vma_set_access_pid_bit`` on hinting faults only (spec §2.2), so a window records the
  writers that took faults -- on a shared buffer the first writer to reach each PROT_NONE
  huge page (:mod:`.faults`), not every writer.
* ``pid_tests`` / ``pid_test_passes`` -- every visit that reaches the access test (the VMA has
  its state, is suitable and past its scan delay), and whether the scanning thread's bit is in
  the union of the windows the own-PID test ORs: what that test answers, whichever rule of the
  profile decides first. Counted for policies with the own-PID rule.
* ``buffer_protections`` -- buffer regions ``change_prot_numa`` made PROT_NONE; over the
  completed passes (``numa_scan_seq``) and the buffer's regions this is the scan coverage per
  pass.

:func:`summary` turns them into the per-run Dataset variables ``pids_per_window``,
``pid_pass_rate`` and ``scan_coverage`` (:mod:`.results`; ``convergence_time`` is the fourth
link, computed there from the samples). Counting only reads the visit's state: the model's
numbers do not depend on it.
"""

from __future__ import annotations

import numpy as np

from .. import history as hist
from ..reasons import CODE

__all__ = ["record_visits", "record_protections", "summary"]

#: decisions taken before the access test is reached (the VMA is unsuitable or in its delay)
_BEFORE_TEST = np.array([CODE[k] for k in ("unsuitable", "shared_ro", "inaccessible", "scan_delay")])
#: the same as a table by reason code (np.isin costs ~10x more per visit); one False entry
#: past the largest, where a rule's own reason codes land (mode="clip")
_BEFORE_TEST_MASK = np.zeros(int(_BEFORE_TEST.max()) + 2, dtype=bool)
_BEFORE_TEST_MASK[_BEFORE_TEST] = True


def record_visits(b, ev, i, r, scanner, k0, k_end):
    """Row ``i`` of evaluation ``ev`` (replica ``r``, thread ``scanner``) reached the mm's VMAs
    at positions ``[k0, k_end)``: count the buffer windows its rotations retired and the
    own-PID tests of its buffer visits. Called before the tentative state is committed (the
    committed state is still the one before the visit)."""
    m, lo = ev.m, ev.lo
    vm = b.lay.mm_vmas[m][k0:k_end]
    buf = b.lay.vma_buffer[vm]
    if not buf.any() or not b.pol.numab_state:
        return
    cols = np.flatnonzero(buf) + (k0 - lo)
    v = vm[buf]
    st, pol, ev_c = ev.st, b.pol, b.counters.events
    old_has = b.vmas.has_state[r, v]
    rotated = old_has & (st["reset"][i, cols] > b.vmas.pids_active_reset[r, v])
    if rotated.any():
        old = b.vmas.pids_active[r, v[rotated]]
        cur = hist.current_window(old, b.vmas.pids_idx[r, v[rotated]], rotation=pol.rotation)
        ev_c["pid_windows"][r] += int(rotated.sum())
        ev_c["pid_window_bits"][r] += int(hist.popcount(cur).sum())
    if not pol.own_pid:
        return
    tested = st["has"][i, cols] & ~_BEFORE_TEST_MASK.take(ev.reason[i, cols], mode="clip")
    if not tested.any():
        return
    tc = cols[tested]
    pids = st["pids"][i, tc]
    # the windows the own-PID test ORs: all of them, or an adaptive history's active count
    # (per mm: one per row; per VMA: one per row and VMA)
    wa = st.get("windows_active")
    n = None if wa is None else (np.asarray(wa)[i] if np.ndim(wa) == 1 else np.asarray(wa)[i, tc])
    union = hist.union(pids, st["pidx"][i, tc], n, rotation=pol.rotation)
    word, mask = int(b.tasks.tid_word[r, scanner]), b.tasks.tid_mask[r, scanner]
    passed = (union[:, word] & mask) != 0
    ev_c["pid_tests"][r] += int(tested.sum())
    ev_c["pid_test_passes"][r] += int(np.count_nonzero(passed))


def record_protections(b, r, idx):
    """Regions ``idx`` of replica ``r`` were made PROT_NONE: count those of buffer VMAs."""
    n = int(np.count_nonzero(b.lay.region_buffer[idx]))
    if n:
        b.counters.events["buffer_protections"][r] += n


def summary(b) -> dict:
    """Per-run ratios of one finished batch, (R,) float each (NaN where the denominator is 0):
    ``pids_per_window`` (distinct PIDs per retired buffer window), ``pid_pass_rate`` (own-PID
    test passes per test on the buffer), ``scan_coverage`` (buffer regions protected per
    completed pass per buffer region)."""
    ev = b.counters.events

    def ratio(num, den):
        num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)

    # completed passes x buffer regions, summed over the mms
    passes = b.mm.numa_scan_seq.astype(float) @ b.lay.mm_buffer_regions.astype(float)
    return dict(pids_per_window=ratio(ev["pid_window_bits"], ev["pid_windows"]),
                pid_pass_rate=ratio(ev["pid_test_passes"], ev["pid_tests"]),
                scan_coverage=ratio(ev["buffer_protections"], passes))

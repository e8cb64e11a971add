"""Adaptive access-PID history: how many ``pids_active[]`` windows the PID test ORs.

The open question of the kernel review (spec ``kernel-numa-balancing.md`` §4.1, Mel Gorman on
``NR_ACCESS_PID_HIST == 4``; Chen Yu suggesting "adaptive (rather than a fixed 4)"; the author
answering "making adaptive may be little difficult"). Each rule here keeps ``n_max`` windows
allocated (the ring/shift history of :mod:`numalab.history` is unchanged: rotation, the fault
path and the hot rule work as for a fixed ``N = n_max``) and chooses a *window count*
``nr_hist`` in ``[n_min, n_max]``: the own-PID test and the shared rule OR only the newest
``nr_hist`` windows (``history.union(pids_active, idx, nr_hist)``, vectorised per element).
Every rule needs O(1) state per VMA or per mm -- a few bytes added to ``struct vma_numab_state``
or ``struct mm_struct`` -- and O(1) work at the events it consumes.

Rules (``Policy(history="adaptive", adapt=<rule>)``):

``"grow-shrink"`` (per VMA; :func:`grow_shrink_visit`, :func:`grow_shrink_fault`)
    Double the window count (up to ``n_max``) when a visit finds the scanner's bit absent
    from the newest ``nr_hist`` windows while other threads faulted in the VMA lately (the
    filter is about to refuse a VMA that is in use); shrink by one after ``shrink_after``
    consecutive idle scans (the VMA was scanned and took no hinting fault before its next
    scan: the filter lets through a VMA nobody uses). Multiplicative grow, additive shrink:
    a refusal costs a pass, an idle scan only its PTE updates.
``"popcount"`` (per mm; :func:`popcount_begin`, :func:`popcount_visit`)
    At each pass boundary pick the length from how many distinct hashed PIDs the scanner saw
    in the last pass (popcount of the OR of the visited VMAs' histories) and the thread count:
    the profile's own N while the map is sparse (its bits still name threads), the longest
    history once the threads saturate it (the map no longer tells threads apart, so the filter
    stops relying on it to refuse VMAs that many threads use).
``"span"`` (per VMA; :func:`span_rotate`)
    Our own: keep as many windows as cover a fixed wall-clock span, measured from how long
    the VMA's windows really last (an EWMA of the time between rotations) -- but never fewer
    than the profile's N: the rule only lengthens the history of VMAs whose windows are short.

State is a ``dict`` of numpy arrays with the caller's leading batch axes (e.g. ``(replica,
vma)`` or ``(replica, mm)``), created by :func:`init_state`; every update function is pure
(returns a new dict, the input is not modified), takes a bool ``mask`` (None = all) of the
entries that take the event, and keeps every field bounded: ``nr_hist`` in ``[n_min, n_max]``,
counters saturating. :func:`effective_windows` gives the ``windows_active=`` argument of
:func:`numalab.policy.decide`. With ``enabled=False`` every update is the identity and
``nr_hist == n_init`` forever: the policy decides exactly as ``Policy(history=n_init)``.

The engine calls a rule through one hook object per rule (:class:`GrowShrinkHooks`,
:class:`PopcountHooks`, :class:`SpanHooks`; :class:`FixedHistory` for a fixed N), chosen once
per batch by :func:`hooks_for`: ``begin_pass`` / ``on_rotate`` / ``windows_active`` /
``after_decide`` / ``commit`` in ``task_numa_work``, ``on_fault`` in the fault path.

The scalar oracle is :mod:`numalab.reference.adaptive`; the engine wiring recipe (which event,
at which line of ``task_numa_work`` / the fault path) is in ``docs/adaptive.md`` ("Engine
wiring") and in each function's docstring.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np

from .errors import NumalabValueError, check_bool, check_choice, check_int, check_uint32_array
from .history import MAX_WINDOWS, ROTATIONS, _check_history, bit_masks, newest_mask
from .reasons import CODE, DECISIONS

__all__ = [
    "ADAPT_RULES",
    "SCOPE",
    "PARAMS",
    "ADAPT_KEYWORDS",
    "PID_TEST_REASONS",
    "Adaptive",
    "init_state",
    "reset_state",
    "effective_windows",
    "grow_shrink_visit",
    "grow_shrink_fault",
    "popcount_choose",
    "popcount_begin",
    "popcount_visit",
    "span_rotate",
    "visit_events",
    "reached_pid_test",
    "visited_union",
    "FixedHistory",
    "GrowShrinkHooks",
    "PopcountHooks",
    "SpanHooks",
    "hooks_for",
]

#: the adaptive rules, and whether each keeps its window count per VMA or per mm.
ADAPT_RULES = ("grow-shrink", "popcount", "span")
SCOPE = {"grow-shrink": "vma", "popcount": "mm", "span": "vma"}

#: rule -> its own parameters and their defaults (None = derived from the map width).
PARAMS = {
    "grow-shrink": {"shrink_after": 2, "grow_others": 1},
    "popcount": {"bits_lo": None, "bits_hi": None, "threads_max": None},
    "span": {"span_ms": 16000, "ewma_shift": 2},
}
_ALL_PARAMS = tuple(k for rule in ADAPT_RULES for k in PARAMS[rule])
#: keywords ``Policy(...)`` forwards to :class:`Adaptive`.
ADAPT_KEYWORDS = ("n_min", "n_max", "n_init", "adapt_enabled", *_ALL_PARAMS)

N_MIN_DEFAULT = 1
N_MAX_DEFAULT = 8
#: span rule: window lengths are clamped to [1 ms, LEN_MAX_MS] (a u32 of ms in a kernel).
LEN_MAX_MS = 2**31 - 1

#: reasons (names of numalab.reasons.REASONS) produced by vma_is_accessed() or the checks after
#: it: a visit with one of these reached the PID test (the grow-shrink "visit" event). The
#: decision table's ``pid_test`` column; a policy's user rules add theirs (``policy.decisions``).
PID_TEST_REASONS = tuple(n for n, t in zip(DECISIONS.names, DECISIONS.pid_test) if t)


@dataclass(frozen=True)
class Adaptive:
    """The adaptive-history rule of a :class:`numalab.policy.Policy` (its ``adapt`` field).

    Parameters
    ----------
    rule : "grow-shrink" | "popcount" | "span"
    n_min, n_max : int, 1 <= n_min <= n_max <= 64
        Bounds of the window count; ``n_max`` windows are allocated (``policy.windows``).
    n_init : int in [n_min, n_max], optional
        The window count of fresh state (a new VMA, or an mm before its first pass boundary);
        default mainline's 2 clamped to the bounds (``Policy`` passes the profile's N).
    enabled : bool
        False: no update changes anything; ``nr_hist == n_init`` for ever (exactly fixed N).
    width : 64 | 128, the PID map width (sets the popcount defaults).
    shrink_after : int >= 1 (grow-shrink)
        Consecutive idle scans that shrink the history by one window.
    grow_others : int >= 1 (grow-shrink)
        Bits of *other* threads in the two newest windows needed to call the VMA in use.
    bits_lo, bits_hi : int, 0 <= bits_lo < bits_hi <= width (popcount; default width/8, width/2)
        Distinct hashed PIDs per pass at or below which ``n_init`` (the profile's N) is used,
        at or above which ``n_max``; linear (rounded up) in between. ``n_min`` is only a bound.
    threads_max : int >= 1 (popcount; default width)
        With this many threads or more the map cannot tell threads apart: ``n_max``.
    span_ms : int >= 1 (span)
        The wall-clock span the windows should cover (default 16 s = 4 windows of the
        4 x scan_delay reset period, the RFC's NR_ACCESS_PID_HIST=4 for small processes).
        The count never drops below ``n_init`` (the profile's N); ``n_min`` is only a bound.
    ewma_shift : int in [0, 8] (span)
        Weight 2**-ewma_shift of the newest window length in the running average (0 = last only).

    Parameters of another rule are refused.
    """

    rule: str
    n_min: int = N_MIN_DEFAULT
    n_max: int = N_MAX_DEFAULT
    n_init: int | None = None
    enabled: bool = True
    width: int = 64
    shrink_after: int | None = None
    grow_others: int | None = None
    bits_lo: int | None = None
    bits_hi: int | None = None
    threads_max: int | None = None
    span_ms: int | None = None
    ewma_shift: int | None = None

    def __post_init__(self):
        rule = check_choice("adapt", self.rule, ADAPT_RULES)
        width = self.width
        if isinstance(width, bool) or width not in (64, 128):
            raise NumalabValueError(f"width={width!r} is not supported; allowed: 64, 128")
        n_min = check_int("n_min", self.n_min, lo=1, hi=MAX_WINDOWS)
        n_max = check_int("n_max", self.n_max, lo=n_min, hi=MAX_WINDOWS)
        n_init = min(max(2, n_min), n_max) if self.n_init is None else self.n_init
        n_init = check_int("n_init", n_init, lo=n_min, hi=n_max)
        check_bool("adapt_enabled", self.enabled)
        values = {}
        for key in _ALL_PARAMS:
            given = getattr(self, key)
            if key not in PARAMS[rule]:
                if given is not None:
                    raise NumalabValueError(
                        f"{key}={given!r} is a parameter of adapt={_rule_of(key)!r}, not of adapt={rule!r}; "
                        f"allowed for {rule!r}: {', '.join(PARAMS[rule])}"
                    )
                values[key] = None
                continue
            values[key] = _default(key, width) if given is None else given
        values["shrink_after"] = _opt_int("shrink_after", values["shrink_after"], 1, 255)
        values["grow_others"] = _opt_int("grow_others", values["grow_others"], 1, width)
        values["bits_lo"] = _opt_int("bits_lo", values["bits_lo"], 0, width - 1)
        values["bits_hi"] = _opt_int("bits_hi", values["bits_hi"],
                                     1 if values["bits_lo"] is None else values["bits_lo"] + 1, width)
        values["threads_max"] = _opt_int("threads_max", values["threads_max"], 1, None)
        values["span_ms"] = _opt_int("span_ms", values["span_ms"], 1, LEN_MAX_MS)
        values["ewma_shift"] = _opt_int("ewma_shift", values["ewma_shift"], 0, 8)
        for key, value in dict(rule=rule, width=int(width), n_min=n_min, n_max=n_max, n_init=n_init,
                               enabled=bool(self.enabled), **values).items():
            object.__setattr__(self, key, value)

    @property
    def scope(self) -> str:
        """"vma" (state per VMA) or "mm" (state per mm)."""
        return SCOPE[self.rule]

    @property
    def params(self) -> dict:
        """The rule's own parameters, resolved."""
        return {k: getattr(self, k) for k in PARAMS[self.rule]}

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def labels(self, n_init_default: int) -> list[str]:
        """Name parts for the non-default settings (``Policy.name`` appends them)."""
        out = [f"adaptive={self.rule}"]
        if self.n_min != N_MIN_DEFAULT:
            out.append(f"n_min={self.n_min}")
        if self.n_max != N_MAX_DEFAULT:
            out.append(f"n_max={self.n_max}")
        if self.n_init != n_init_default:
            out.append(f"n_init={self.n_init}")
        for key, value in self.params.items():
            if value != _default(key, self.width):
                out.append(f"{key}={value}")
        if not self.enabled:
            out.append("adapt_off")
        return out


def _rule_of(key: str) -> str:
    return next(rule for rule in ADAPT_RULES if key in PARAMS[rule])


def _default(key: str, width: int):
    if key == "bits_lo":
        return width // 8
    if key == "bits_hi":
        return width // 2
    if key == "threads_max":
        return width
    return PARAMS[_rule_of(key)][key]


def _opt_int(name, value, lo, hi):
    return None if value is None else check_int(name, value, lo=lo, hi=hi)


def _check_adapt(adapt) -> Adaptive:
    adapt = getattr(adapt, "adapt", adapt)  # a Policy or its Adaptive
    if not isinstance(adapt, Adaptive):
        raise NumalabValueError(f"adapt must be an adaptive Policy or numalab.adaptive.Adaptive; got {adapt!r}")
    return adapt


# ------------------------------------------------------------------------------ state

_KEYS = {
    "grow-shrink": ("nr_hist", "idle_scans", "scanned", "faulted"),
    "popcount": ("nr_hist", "pids_seen", "pass_seq"),
    "span": ("nr_hist", "last_rotate_ms", "win_avg_ms"),
}


def init_state(adapt, batch_shape, *, numa_scan_seq=0) -> dict:
    """Fresh state for ``batch_shape`` entries (VMAs for "grow-shrink"/"span", mms for
    "popcount"): the ``kzalloc`` of the new fields when ``vma_numab_state`` is created on the
    first visit (per VMA) or at ``init_numa_balancing`` (per mm).

    Keys: ``nr_hist`` (int64, = n_init) and, per rule, grow-shrink ``idle_scans`` (int64),
    ``scanned``/``faulted`` (bool: the VMA was scanned / took a hinting fault since that scan);
    popcount ``pids_seen`` (uint64 ``(*batch, width // 64)``: hashed PIDs seen in this pass) and
    ``pass_seq`` (int64: the ``numa_scan_seq`` being collected, = ``numa_scan_seq``); span
    ``last_rotate_ms`` (int64, -1 = not rotated yet) and ``win_avg_ms`` (int64, 0 = unknown)."""
    adapt = _check_adapt(adapt)
    if isinstance(batch_shape, (int, np.integer)):
        batch_shape = (int(batch_shape),)
    batch_shape = tuple(check_int("batch_shape", n, lo=0) for n in batch_shape)
    state = {"nr_hist": np.full(batch_shape, adapt.n_init, dtype=np.int64)}
    if adapt.rule == "grow-shrink":
        state["idle_scans"] = np.zeros(batch_shape, dtype=np.int64)
        state["scanned"] = np.zeros(batch_shape, dtype=bool)
        state["faulted"] = np.zeros(batch_shape, dtype=bool)
    elif adapt.rule == "popcount":
        state["pids_seen"] = np.zeros((*batch_shape, adapt.width // 64), dtype=np.uint64)
        seq = np.asarray(numa_scan_seq)
        if seq.dtype.kind not in "iu":
            raise NumalabValueError(f"numa_scan_seq must be integers; got dtype {seq.dtype}")
        state["pass_seq"] = _broadcast("numa_scan_seq", seq, batch_shape).astype(np.int64)
    else:
        state["last_rotate_ms"] = np.full(batch_shape, -1, dtype=np.int64)
        state["win_avg_ms"] = np.zeros(batch_shape, dtype=np.int64)
    return state


def reset_state(adapt, state, mask=None, *, numa_scan_seq=0) -> dict:
    """``state`` with the masked entries fresh (as :func:`init_state`), the others unchanged.

    For the engine's lazy ``vma_numab_state`` creation: a VMA that gets its state on this
    visit (first visit, or after a split/fork reset it, spec §1.1) starts at ``n_init``."""
    adapt = _check_adapt(adapt)
    shape = _check_state(adapt, state)
    m = _mask(mask, shape)
    fresh = init_state(adapt, shape, numa_scan_seq=numa_scan_seq)
    out = {}
    for key, value in state.items():
        mk = m if np.ndim(value) == len(shape) else m[..., None]
        out[key] = np.where(mk, fresh[key], value)
    return out


def _check_state(adapt: Adaptive, state) -> tuple:
    if not isinstance(state, dict) or set(state) != set(_KEYS[adapt.rule]):
        got = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise NumalabValueError(
            f"state for adapt={adapt.rule!r} must be a dict with keys {list(_KEYS[adapt.rule])} "
            f"(from numalab.adaptive.init_state); got {got}"
        )
    return np.shape(state["nr_hist"])


def _broadcast(name, value, shape):
    try:
        return np.broadcast_to(np.asarray(value), shape)
    except ValueError:
        raise NumalabValueError(
            f"{name} has shape {np.shape(value)}; allowed: the state's batch shape {shape} (or broadcastable)"
        ) from None


def _mask(mask, shape):
    if mask is None:
        return np.ones(shape, dtype=bool)
    arr = np.asarray(mask)
    if arr.dtype != bool:
        raise NumalabValueError(f"mask must be a bool array; got dtype {arr.dtype}")
    return _broadcast("mask", arr, shape)


def _bools(name, value, shape):
    arr = np.asarray(value)
    if arr.dtype != bool:
        raise NumalabValueError(f"{name} must be a bool array; got dtype {arr.dtype}")
    return _broadcast(name, arr, shape)


def _copy(state: dict) -> dict:
    return {k: np.array(v, copy=True) for k, v in state.items()}


def _update_start(adapt, state, rule: str, fn: str) -> tuple:
    """Common preamble of the rule-specific updates: validate ``adapt`` and ``state``, refuse
    another rule's state, and return ``(adapt, batch shape, a copy of state to update)``."""
    adapt = _check_adapt(adapt)
    shape = _check_state(adapt, state)
    if adapt.rule != rule:
        raise NumalabValueError(f"{fn}() needs adapt={rule!r}; got {adapt.rule!r}")
    return adapt, shape, _copy(state)


def effective_windows(adapt, state) -> np.ndarray:
    """The window count each entry's PID test ORs now: ``decide(..., windows_active=...)``.

    ``nr_hist`` (int64, batch shape); ``n_init`` everywhere when adaptation is off."""
    adapt = _check_adapt(adapt)
    shape = _check_state(adapt, state)
    if not adapt.enabled:
        return np.full(shape, adapt.n_init, dtype=np.int64)
    return np.clip(np.asarray(state["nr_hist"], dtype=np.int64), adapt.n_min, adapt.n_max)


# ------------------------------------------------------------------------------ grow-shrink


def grow_shrink_visit(adapt, state, mask=None, *, own_bit, others_recent, tested, scanned) -> dict:
    """Rule "grow-shrink" at one ``task_numa_work`` visit of each masked VMA.

    Kernel sketch (new ``vma_numab_state`` fields ``u8 nr_hist, idle_scans; u8 scanned:1,
    faulted:1``; O(1) state and work)::

        /* task_numa_work(), after the rotation and the vma_is_accessed() decision */
        if (tested && !own_bit && others_recent)          /* in use, but not by the scanner */
                st->nr_hist = min(st->nr_hist << 1, n_max);  /* double */
        if (scanned) {                                     /* the scanner changes protections */
                if (st->scanned && !st->faulted)           /* previous scan went unanswered */
                        st->idle_scans = min(st->idle_scans + 1, shrink_after);
                else
                        st->idle_scans = 0;
                if (st->idle_scans >= shrink_after) {
                        st->nr_hist = max(st->nr_hist - 1, n_min);
                        st->idle_scans = 0;
                }
                st->scanned = 1; st->faulted = 0;          /* arm the idle detector */
        }
        /* vma_set_access_pid_bit(), fault path: if (!st->faulted) st->faulted = 1; */

    Why the grow doubles (the first version added one window): a VMA is visited about once
    per scanner pass, so a +1 grow needed one refused pass per missing window, and in a
    large process (numa01, 2 x 64 threads on 2s-128) the VMAs rarely got there -- its false
    skips stayed at N = 2's. Doubling reaches ``n_max`` after log2(n_max / n_init) refusals
    and tracks the best fixed N; the one-window shrink on idle scans undoes an overshoot, and
    an overshoot is cheap (in the evaluation the idle scans do not rise with N).

    Events (all bool, broadcastable to the state's batch shape):

    * ``tested``: the visit reached ``vma_is_accessed()`` (the decision's reason is one of
      :data:`PID_TEST_REASONS`; see :func:`reached_pid_test`);
    * ``own_bit``: the scanner's hashed PID is in the newest ``nr_hist`` windows;
    * ``others_recent``: at least ``grow_others`` bits *other than the scanner's* in the two
      newest windows (the current one and the one before it: with the v6.7+ rotation before
      the test, the current window may have been cleared an instant ago);
    * ``scanned``: the decision allowed the scan (``ALLOWED[reason]``).

    :func:`visit_events` computes ``own_bit`` and ``others_recent`` from the history.
    """
    adapt, shape, out = _update_start(adapt, state, "grow-shrink", "grow_shrink_visit")
    if not adapt.enabled:
        return out
    m = _mask(mask, shape)
    own, others = _bools("own_bit", own_bit, shape), _bools("others_recent", others_recent, shape)
    tested, scanned = _bools("tested", tested, shape), _bools("scanned", scanned, shape)
    nr, idle = out["nr_hist"], out["idle_scans"]
    grow = m & tested & ~own & others
    # double, not +1: a VMA is visited about once per pass, so +1 per refusal needed as many
    # refused passes as windows were missing (numa01: grow-shrink stayed at N=2's false skips)
    nr[...] = np.where(grow, np.minimum(nr * 2, adapt.n_max), nr)
    scan = m & scanned
    was_idle = out["scanned"] & ~out["faulted"]
    idle[...] = np.where(scan, np.where(was_idle, np.minimum(idle + 1, adapt.shrink_after), 0), idle)
    shrink = scan & (idle >= adapt.shrink_after)
    nr[...] = np.where(shrink, np.maximum(nr - 1, adapt.n_min), nr)
    idle[...] = np.where(shrink, 0, idle)
    out["scanned"][...] = out["scanned"] | scan
    out["faulted"][...] = out["faulted"] & ~scan
    return out


def grow_shrink_fault(adapt, state, where) -> dict:
    """Rule "grow-shrink" on hinting faults: mark the faulting VMAs ``faulted``.

    Called where ``vma_set_access_pid_bit()`` is (``numa_migrate_check()``, every hinting fault
    on a normal folio of a VMA with state); ``where`` is a tuple of index arrays into the
    batch shape, one entry per fault, duplicates allowed -- the same ``where`` the engine
    gives :func:`numalab.history.set_pid_bits`. Kernel: ``if (!st->faulted) st->faulted = 1``."""
    adapt, shape, out = _update_start(adapt, state, "grow-shrink", "grow_shrink_fault")
    if not adapt.enabled:
        return out
    if not isinstance(where, tuple) or len(where) != len(shape):
        raise NumalabValueError(f"where must be a tuple of {len(shape)} index arrays (one per batch axis)")
    where = tuple(np.asarray(w, dtype=np.int64).ravel() for w in where)
    for axis, w in enumerate(where):
        if w.size and (w.min() < -shape[axis] or w.max() >= shape[axis]):
            raise NumalabValueError(f"where[{axis}] indexes outside a batch axis of length {shape[axis]}")
    out["faulted"][where] = True
    return out


# ------------------------------------------------------------------------------ popcount


def popcount_choose(adapt, distinct_pids, nr_threads) -> np.ndarray:
    """The window count for ``k = distinct_pids`` hashed PIDs seen and ``T = nr_threads``::

        if (T >= threads_max || k >= bits_hi)  return n_max;    /* saturated: stop relying on the map */
        if (k <= bits_lo)                      return n_init;   /* sparse: the profile's own N */
        return n_init + DIV_ROUND_UP((n_max - n_init) * (k - bits_lo), bits_hi - bits_lo);

    Why: the own-PID test refuses a VMA only when the scanner's hashed bit is absent. While
    the mm's threads hash to few bits (k small) the bits name threads, and the profile's N is
    kept: a small process behaves exactly as under the profile. Once the threads fill the map
    -- 64 consecutive TIDs already give only 54-55 distinct bits of 64, 128 give all 64 (spec
    §2.1) -- a thread passes a VMA it never touched with probability ~ k_vma/width, so a
    refusal says less about who used the VMA than about which bits the last rotation happened
    to clear; the v6.12 starvation horizon (``nr_threads`` passes) is out of reach as well
    (spec §3.3, derived caveat). There the rule stops relying on the map: it keeps the
    longest history, so a VMA that many threads use stays "accessed" for all of them, and
    the filter only refuses VMAs that no thread of a matching hash faulted in for ``n_max``
    windows. ``n_min`` only bounds the result."""
    adapt = _check_adapt(adapt)
    k = np.asarray(distinct_pids, dtype=np.int64)
    t = np.asarray(nr_threads, dtype=np.int64)
    lo, hi = adapt.bits_lo, adapt.bits_hi
    span = adapt.n_max - adapt.n_init
    mid = adapt.n_init + (-(-(span * (k - lo)) // (hi - lo)))
    n = np.where(k <= lo, adapt.n_init, mid)
    n = np.where((t >= adapt.threads_max) | (k >= hi), adapt.n_max, n)
    return np.clip(n, adapt.n_min, adapt.n_max).astype(np.int64)


def popcount_begin(adapt, state, mask=None, *, numa_scan_seq, nr_threads) -> dict:
    """Rule "popcount" at the start of ``task_numa_work`` (per mm, batch shape = mms).

    Kernel sketch (new ``mm_struct`` fields ``unsigned long numab_pids_seen[W/64]; int
    numab_pass_seq; u8 numab_nr_hist``)::

        /* task_numa_work(), after the retry: label's reset_ptenuma_scan() check, before the
           VMA loop -- i.e. once the pass this run belongs to is known */
        if (mm->numab_pass_seq != mm->numa_scan_seq) {      /* a pass has ended */
                k = bitmap_weight(mm->numab_pids_seen, BITS);
                mm->numab_nr_hist = popcount_choose(k, get_nr_threads(p));
                bitmap_zero(mm->numab_pids_seen, BITS);
                mm->numab_pass_seq = mm->numa_scan_seq;
        }

    Lazy like the window rotation (no hook in ``reset_ptenuma_scan``): the choice made from
    pass ``s`` is used from the first run of a later pass on. Events: ``numa_scan_seq`` and
    ``nr_threads`` (per mm, ints broadcastable to the batch shape)."""
    adapt, shape, out = _update_start(adapt, state, "popcount", "popcount_begin")
    if not adapt.enabled:
        return out
    m = _mask(mask, shape)
    seq = _broadcast("numa_scan_seq", numa_scan_seq, shape).astype(np.int64)
    nthreads = _broadcast("nr_threads", nr_threads, shape).astype(np.int64)
    ended = m & (seq != out["pass_seq"])
    k = np.bitwise_count(out["pids_seen"]).sum(axis=-1, dtype=np.int64)
    out["nr_hist"][...] = np.where(ended, popcount_choose(adapt, k, nthreads), out["nr_hist"])
    out["pids_seen"][...] = np.where(ended[..., None], np.uint64(0), out["pids_seen"])
    out["pass_seq"][...] = np.where(ended, seq, out["pass_seq"])
    return out


def popcount_visit(adapt, state, mask=None, *, pids_union) -> dict:
    """Rule "popcount" at visits: OR the visited VMAs' histories into the mm's ``pids_seen``.

    Kernel sketch, in the VMA loop right after the rotation (so for every VMA with state that
    passed the suitability and scan-delay checks)::

        bitmap_or(mm->numab_pids_seen, mm->numab_pids_seen, OR of st->pids_active[0..W-1], BITS);

    Every allocated window is ORed (not only the newest ``nr_hist``), so what is observed does
    not depend on the choice it feeds. ``pids_union``: uint64 ``(*batch, words)`` -- per mm,
    the OR over this run's visited VMAs (:func:`visited_union` builds it from per-VMA arrays)."""
    adapt, shape, out = _update_start(adapt, state, "popcount", "popcount_visit")
    if not adapt.enabled:
        return out
    m = _mask(mask, shape)
    words = out["pids_seen"].shape[-1]
    u = np.asarray(pids_union)
    if u.dtype != np.uint64:
        raise NumalabValueError(f"pids_union must be uint64 (*batch, {words}); got dtype {u.dtype}")
    u = _broadcast("pids_union", u, (*shape, words))
    out["pids_seen"][...] = np.where(m[..., None], out["pids_seen"] | u, out["pids_seen"])
    return out


def visited_union(pids_active, visited) -> np.ndarray:
    """OR over the VMA axis (the last batch axis) of every visited VMA's whole history.

    ``pids_active`` (*B, V, W, words), ``visited`` bool (*B, V) -> uint64 (*B, words): the
    per-mm ``pids_union`` of :func:`popcount_visit`."""
    _check_history(pids_active)
    if pids_active.ndim < 3:
        raise NumalabValueError(f"pids_active has shape {pids_active.shape}; allowed: (*batch, vmas, windows, words)")
    visited = _bools("visited", visited, pids_active.shape[:-2])
    per_vma = np.bitwise_or.reduce(pids_active, axis=-2)
    return np.bitwise_or.reduce(np.where(visited[..., None], per_vma, np.uint64(0)), axis=-2)


# ------------------------------------------------------------------------------ span


def span_rotate(adapt, state, mask=None, *, now_ms, reset_period_ms) -> dict:
    """Rule "span" at each window rotation of the masked VMAs (our design).

    Kernel sketch (new ``vma_numab_state`` fields ``unsigned long last_rotate; u32 win_avg;
    u8 nr_hist``), inside the rotation block of ``task_numa_work`` (spec §2.3, the
    ``now > pids_active_reset`` branch, wherever the profile has it)::

        len = st->last_rotate ? now - st->last_rotate : VMA_PID_RESET_PERIOD;
        len = clamp(len, 1, LEN_MAX);
        st->win_avg = st->win_avg ? st->win_avg + ((len - st->win_avg) >> ewma_shift) : len;
        st->last_rotate = now;
        st->nr_hist = clamp(DIV_ROUND_CLOSEST(span, st->win_avg), n_init, n_max);

    Argument. The question the PID test should answer is "did this thread fault here in the
    last S seconds?", not "in the last N windows". A window lasts max(4 x scan_delay, time
    between visits) (spec §2.3, derived consequence (c)): 4 s in a small process, one whole
    scanner pass -- tens of seconds -- in a large one. A fixed N therefore remembers 8-16 s in
    a small process but minutes in a large one, where bits of threads that have moved on keep
    the VMA "accessed" (false passes, wasted scans), while small processes may forget a thread
    between its faults. Holding the span constant equalises that trade-off across process
    sizes: with the default 16 s a small process keeps 4 windows (the RFC's
    NR_ACCESS_PID_HIST), one whose windows last 8 s keeps 2 (mainline). The first version
    let a huge process drop to 1 window; the evaluation (``docs/adaptive.md``) refuted that
    half of the argument: on numa01 (2 x 64 threads on 2s-128, windows of a whole pass) the
    shortened histories had *more* false skips (+38 %) and more idle scans than N = 2, and on
    every autonuma-benchmark workload the false skips fall with N while the idle scans do not
    rise. Stale bits of long windows cost little; forgetting a thread costs a refused VMA. So
    the count is floored at ``n_init`` (the profile's N, a constant of the policy -- still
    O(1)): the span only *adds* windows where they are short. The
    averaged window length needs only the rotation time stamps the kernel already has. The
    count is rounded to the nearest (``DIV_ROUND_CLOSEST``), not up: the integer EWMA settles
    up to ``2**ewma_shift - 1`` ms below a steady window length, and rounding up would flip a
    span that is an exact multiple (16 s of 8 s windows) to one window more.

    Events: the rotation (``mask``) and its time ``now_ms`` (ms, ints or floats, floored);
    ``reset_period_ms`` = 4 x scan_delay (the length assumed for the first window)."""
    adapt, shape, out = _update_start(adapt, state, "span", "span_rotate")
    if not adapt.enabled:
        return out
    m = _mask(mask, shape)
    now = _broadcast("now_ms", np.floor(np.asarray(now_ms, dtype=np.float64)), shape).astype(np.int64)
    period = check_int("reset_period_ms", reset_period_ms, lo=1, hi=LEN_MAX_MS)
    last, avg = out["last_rotate_ms"], out["win_avg_ms"]
    length = np.clip(np.where(last >= 0, now - last, period), 1, LEN_MAX_MS)
    new_avg = np.where(avg > 0, avg + ((length - avg) >> adapt.ewma_shift), length)
    new_avg = np.clip(new_avg, 1, LEN_MAX_MS)
    # nearest, not ceil: the shift-EWMA settles up to 2**ewma_shift - 1 ms below a steady length
    # floored at n_init, not n_min: shortening below the profile's N only added false skips
    n = np.clip((adapt.span_ms + new_avg // 2) // new_avg, adapt.n_init, adapt.n_max)
    out["win_avg_ms"][...] = np.where(m, new_avg, avg)
    out["last_rotate_ms"][...] = np.where(m, now, last)
    out["nr_hist"][...] = np.where(m, n, out["nr_hist"])
    return out


# ------------------------------------------------------------------------------ event helpers


def visit_events(pids_active, idx, scanner_tid, windows_active, *, rotation="shift", width=64,
                 grow_others=1) -> tuple[np.ndarray, np.ndarray]:
    """``(own_bit, others_recent)`` of :func:`grow_shrink_visit` from the history.

    ``pids_active`` (*B, V, W, words), ``idx`` (*B, V), ``scanner_tid`` (*B,) (one scanner per
    mm, broadcast over VMAs), ``windows_active`` (*B, V) or (*B,). ``own_bit``: the scanner's
    bit in the newest ``windows_active`` windows. ``others_recent``: popcount of the two newest
    windows without the scanner's bit >= ``grow_others``."""
    _check_history(pids_active)
    if pids_active.ndim < 3:
        raise NumalabValueError(f"pids_active has shape {pids_active.shape}; allowed: (*batch, vmas, windows, words)")
    batch = pids_active.shape[:-3]
    vshape = pids_active.shape[:-2]
    windows, words = pids_active.shape[-2:]
    if words != width // 64:
        raise NumalabValueError(f"width={width} needs {width // 64} words per window; pids_active has {words}")
    rotation = check_choice("rotation", rotation, ROTATIONS)
    tid = check_uint32_array("scanner_tid", scanner_tid)
    if tid.shape != batch:
        raise NumalabValueError(f"scanner_tid has shape {tid.shape}; allowed: the per-mm shape {batch}")
    n = np.asarray(windows_active)
    if n.shape == batch and batch != vshape:
        n = n[..., None]
    ring_idx = None if rotation == "shift" else _broadcast("idx", idx, vshape)
    own_union = np.bitwise_or.reduce(
        np.where(newest_mask(vshape, windows, n, ring_idx, rotation=rotation)[..., None], pids_active, np.uint64(0)),
        axis=-2)
    recent = np.bitwise_or.reduce(
        np.where(newest_mask(vshape, windows, min(2, windows), ring_idx, rotation=rotation)[..., None],
                 pids_active, np.uint64(0)), axis=-2)
    word, bitmask = bit_masks(tid, width)  # (*B,)
    word, bitmask = word[..., None], bitmask[..., None]
    sel = np.zeros(vshape, dtype=np.uint64)
    for w in range(words):
        sel = np.where(word == w, own_union[..., w], sel)
    own = (sel & bitmask) != 0
    clear = np.stack([np.where(word == w, ~bitmask, ~np.uint64(0)) for w in range(words)], axis=-1)
    others = np.bitwise_count(recent & clear).sum(axis=-1, dtype=np.int64) >= grow_others
    return own, others


def reached_pid_test(reason, decisions=None) -> np.ndarray:
    """Bool: the decision (int8 codes of :data:`numalab.policy.REASONS`, or of ``decisions``,
    a policy's :class:`numalab.reasons.Decisions`) came from ``vma_is_accessed()`` or the
    checks after it -- the ``tested`` event of grow-shrink."""
    if decisions is not None:
        return decisions.pid_test[np.asarray(reason)]
    codes = np.array([CODE[r] for r in PID_TEST_REASONS], dtype=np.int8)
    return np.isin(np.asarray(reason), codes)


# ------------------------------------------------------------------------------ engine hooks
#
# One hook object per rule, chosen once when a batch is built (:func:`hooks_for`), so the
# engine's scan and fault paths call the same methods whatever the rule and never compare
# rule names. Each method says where in ``task_numa_work`` / the fault path it runs; the
# rule's state lives in the engine (``VmaNumab.adapt``) and is passed in and returned.
# ``visit`` is the rule's view for one task_numa_work evaluation: the per-VMA state gathered
# for the scanned VMAs (VMA rules), or which VMAs the run sees (popcount).


class FixedHistory:
    """No adaptive rule (a fixed N): every hook changes nothing and the PID test ORs all
    ``policy.windows`` windows."""

    adapt = None

    def init_state(self, R, M, V):
        """The rule's state for R replicas of M mms and V VMAs (None: no state)."""
        return None

    def begin_pass(self, state, *, gather, new, seen, rows, m, numa_scan_seq, nr_threads):
        """Start of a task_numa_work evaluation for mm ``m`` of replicas ``rows``, after the
        lazy ``vma_numab_state`` creation of the VMAs in ``new``: returns (state, visit).
        ``gather(arr)`` takes the evaluated VMAs' columns of a per-VMA array; ``seen`` the
        VMAs past the suitability and scan-delay checks."""
        return state, None

    def on_rotate(self, visit, due, *, now_ms, reset_period_ms):
        """The ``pids_active`` windows of the VMAs in ``due`` rotated (at ``now_ms``)."""
        return visit

    def windows_active(self, state, visit, rows, m):
        """``windows_active=`` of :func:`numalab.policy.decide` (None: all windows)."""
        return None

    def after_decide(self, visit, *, pids_active, idx, scanner_tid, windows_active, reason, allowed, rotation,
                     width):
        """The decisions of the evaluated VMAs are known (before any rotation after the test)."""
        return visit

    def commit(self, state, visit, *, r, m, v, vmas, i, cols, pids_active):
        """The walk of replica ``r`` (row ``i`` of the evaluation) visited the VMAs ``v`` (a
        slice or indices into the VMA axis; ``vmas`` their indices, ``cols`` their columns in
        the evaluation): make the rule's tentative updates real."""

    def on_fault(self, state, where):
        """Hinting faults in VMAs with numab state; ``where`` = (replica, vma) index arrays."""
        return state


class _VmaRule(FixedHistory):
    """A rule with per-VMA state: gathered for the evaluated VMAs, fresh for new VMA state,
    written back for the visited ones."""

    def __init__(self, adapt, decisions=None):
        self.adapt = adapt
        self.decisions = DECISIONS if decisions is None else decisions

    def init_state(self, R, M, V):
        return init_state(self.adapt, (R, V))

    def begin_pass(self, state, *, gather, new, seen, rows, m, numa_scan_seq, nr_threads):
        return state, reset_state(self.adapt, {k: gather(v) for k, v in state.items()}, new)

    def windows_active(self, state, visit, rows, m):
        return effective_windows(self.adapt, visit)

    def commit(self, state, visit, *, r, m, v, vmas, i, cols, pids_active):
        for key, val in visit.items():
            state[key][r, v] = val[i, cols]


class GrowShrinkHooks(_VmaRule):
    """Rule "grow-shrink": :func:`grow_shrink_visit` after each decision,
    :func:`grow_shrink_fault` on faults."""

    def after_decide(self, visit, *, pids_active, idx, scanner_tid, windows_active, reason, allowed, rotation,
                     width):
        own, others = visit_events(pids_active, idx, scanner_tid, windows_active, rotation=rotation, width=width,
                                   grow_others=self.adapt.grow_others)
        return grow_shrink_visit(self.adapt, visit, own_bit=own, others_recent=others,
                                 tested=reached_pid_test(reason, self.decisions), scanned=allowed)

    def on_fault(self, state, where):
        return grow_shrink_fault(self.adapt, state, where)


class SpanHooks(_VmaRule):
    """Rule "span": :func:`span_rotate` at every window rotation."""

    def on_rotate(self, visit, due, *, now_ms, reset_period_ms):
        return span_rotate(self.adapt, visit, due, now_ms=now_ms, reset_period_ms=reset_period_ms)


class PopcountHooks(FixedHistory):
    """Rule "popcount" (per-mm state): :func:`popcount_begin` at the start of each run, and the
    visited VMAs' windows ORed into the mm's ``pids_seen`` (:func:`popcount_visit`)."""

    def __init__(self, adapt, decisions=None):
        self.adapt = adapt

    def init_state(self, R, M, V):
        return init_state(self.adapt, (R, M))

    def begin_pass(self, state, *, gather, new, seen, rows, m, numa_scan_seq, nr_threads):
        mask = np.zeros(numa_scan_seq.shape, dtype=bool)
        mask[rows, m] = True
        state = popcount_begin(self.adapt, state, mask, numa_scan_seq=numa_scan_seq,
                               nr_threads=np.broadcast_to(nr_threads, numa_scan_seq.shape))
        return state, seen

    def windows_active(self, state, visit, rows, m):
        return effective_windows(self.adapt, state)[rows, m]

    def commit(self, state, visit, *, r, m, v, vmas, i, cols, pids_active):
        seen = vmas[visit[i, cols]]
        if seen.size:
            state["pids_seen"][r, m] |= np.bitwise_or.reduce(pids_active[r, seen].reshape(-1, pids_active.shape[-1]),
                                                             axis=0)


_HOOKS = {"grow-shrink": GrowShrinkHooks, "popcount": PopcountHooks, "span": SpanHooks}


def hooks_for(adapt, decisions=None) -> FixedHistory:
    """The hook object of a policy's adaptive rule (``policy.adapt``; None: :class:`FixedHistory`);
    ``decisions``: the policy's decision table (``policy.decisions``; default the built-in one)."""
    return FixedHistory() if adapt is None else _HOOKS[_check_adapt(adapt).rule](adapt, decisions)

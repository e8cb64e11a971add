"""Scan-filter policies of ``task_numa_work()`` / ``vma_is_accessed()`` and the kernel profiles.

A :class:`Policy` is a kernel profile or a composition of the rules of ONE table
(:data:`numalab.rules.BUILTIN_RULES`, plus a researcher's own :class:`numalab.rules.Rule`);
:func:`decide` applies them, vectorised, to a :class:`numalab.scanview.ScanView` of every
(replica, scanning task, VMA) and returns allowed-or-not with the reason, in exactly the order
of ``spec/kernel-numa-balancing.md`` §3.2/§3.3 for the profile:

1. per-VMA skips: ``unsuitable``, ``shared_ro``, ``inaccessible`` (all versions), then with
   per-VMA state (v6.4+) ``scan_delay`` (``seq != 0 and now < next_scan``);
2. the table's ``pre`` rules in order: ``seq_completed`` (v6.7+, ``prev_scan_seq == seq``), the
   forced retry pass (v6.7+: the PID test is skipped -> ``forced``);
3. ``vma_is_accessed()``: the table's ``access`` rules in order -- [``hot`` when checked first
   (RFC 2023 p5)], ``early_passes``, ``own_pid``, ``hot``, ``shared``, ``ignore_pid_inactive``
   (v6.7+), ``starvation`` (v6.12+) -- with user rules at their place;
4. the ``fallback``: RFC 2023 p2's ``disjoint_select`` counter (else ``disjoint_wait``);
   otherwise ``pid_inactive``.

:func:`decide` does not rotate the windows: the engine calls :func:`numalab.history.rotate`
before it when ``policy.rotate_before_access`` (v6.7+, RFC 2023 p1) and the rotation is due,
after it otherwise (v6.4-v6.6, where a PID-inactive VMA is never rotated).

Adaptive histories (``Policy(history="adaptive", adapt=...)``, :mod:`numalab.adaptive`) keep
``n_max`` windows allocated (``policy.windows``) and OR only the newest ``nr_hist`` of them in
the own-PID and shared tests: :func:`decide` takes those counts as the view's
``windows_active`` (per VMA or per mm) and does not update them either -- the engine calls the
rule's hooks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace

import numpy as np

from .errors import NumalabValueError, check_bool, check_choice, check_int, check_uint32_array
from .history import MAX_WINDOWS, ROTATIONS, _check_history
from .hashing import pid_bit
from .adaptive import ADAPT_KEYWORDS, ADAPT_RULES, Adaptive
from .reasons import ALLOW_REASONS, ALLOWED, CODE, REASONS, SKIP_REASONS, Decisions, decisions_for
from .rule_transport import version
from .rules import BUILTIN_RULES, BY_NAME, SWITCHES, Rule, registered
from .scanview import FLAGS, PER_MM, PER_VMA, ScanView

__all__ = [
    "REASONS",
    "SKIP_REASONS",
    "ALLOW_REASONS",
    "ALLOWED",
    "CODE",
    "RULES",
    "Policy",
    "ScanView",
    "Rule",
    "decide",
    "decide_unchecked",
    "decision_matrix",
]

#: rule switches that ``Policy(rules=...)`` can name (the table's rules, in table order).
RULES = tuple(r.name for r in BUILTIN_RULES)

# ------------------------------------------------------------------------------ profiles

#: what a profile says besides its rules: the history and the per-VMA state
_STATE = dict(windows=2, rotation="shift", width=64, numab_state=True, rotate_before_access=False)
#: every field of a policy: the state, then the table's switches; _OFF has every rule off
_FIELD_ORDER = (*_STATE, *SWITCHES)
_OFF = {**_STATE, **{r.name: r.off for r in BUILTIN_RULES},
        **{k: p.default for r in BUILTIN_RULES for k, p in r.switch_params}}


def _derive(parent: dict, **changes) -> dict:
    out = dict(parent)
    out.update(changes)
    return out


_P = {}
_P["pre-6.4"] = _derive(_OFF, numab_state=False)
# ef6a22b70f, the parent of fc137c0ddab2: vma_numab_state with the scan delay, no vma_is_accessed()
_P["6.4-rc-scan-delay"] = _derive(_OFF)
_P["6.4"] = _derive(_OFF, own_pid=True, early_passes="mm")
_P["6.7"] = _derive(_P["6.4"], rotate_before_access=True, ignore_pid_partial=True, seq_completed=True, forced_one=True)
_P["6.8"] = _derive(_P["6.7"], early_passes="vma")
_P["6.12"] = _derive(_P["6.8"], starvation=True)
# RFC 2023 "Enhance disjoint VMA scanning": base 6.5-rc6, i.e. the v6.4 rule set; cumulative
_P["rfc2023-p1"] = _derive(_P["6.4"], rotate_before_access=True)
_P["rfc2023-p2"] = _derive(_P["rfc2023-p1"], disjoint_select=True)
_P["rfc2023-p3"] = _derive(_P["rfc2023-p2"], early_passes=None)
_P["rfc2023-p4"] = _derive(_P["rfc2023-p3"], windows=4, rotation="ring")
_P["rfc2023-p5"] = _derive(_P["rfc2023-p4"], hot=1, hot_first=True)
_P["rfc2023-p6"] = _derive(_P["rfc2023-p5"], shared=3)
# RFC 2024 "A Summary of VMA scanning improvements explored": alternatives on top of ~v6.8
_P["rfc2024-hot-shared"] = _derive(_P["6.8"], windows=4, rotation="ring", hot=1, shared=3)
_P["rfc2024-pid-bits"] = _derive(_P["6.8"], width=128)

_DESCRIPTIONS = {
    "pre-6.4": "<= v6.3: no vma_numab_state; every suitable VMA is scanned in address order "
    "(no scan delay, no PID filter).",
    "6.4-rc-scan-delay": "ef6a22b70f6d 'sched/numa: apply the scan delay to every new vma' (Mel Gorman; "
    "mm tree 2023-03, parent of fc137c0ddab2): per-VMA vma_numab_state with next_scan = first visit + "
    "scan_delay (not applied in pass 0), no access-PID filter -- every suitable VMA past its delay is scanned.",
    "6.4": "v6.4: ef6a22b70f6d (per-VMA scan delay), fc137c0ddab2 (vma_is_accessed), 20f586486b87 "
    "(2 windows, reset every 4*scan_delay, rotated after the access test), d46031f40e0f "
    "(hash_32 PID bits); unconditional while mm->numa_scan_seq < 2.",
    "6.7": "v6.7 (Mel Gorman's series): 2e2675db1906 rotation moved before the access test, "
    "b7a5b537c55c finish partly scanned VMAs (IGNORE_PID), f169c62ff7cd prev_scan_seq / "
    "SEQ_COMPLETED, forced scan of one PID-inactive VMA (vma_pids_forced); also 9ae5c00ea2e6, "
    "f3a6c97940fb, ed2da8b725b9.",
    "6.8": "v6.8: 84db47ca7146 early passes relative to start_scan_seq (per VMA), on top of 6.7.",
    "6.12": "v6.12: f22cde4371f3 starvation horizon (seq > prev_scan_seq + nr_threads), on top of 6.8.",
    "rfc2023-p1": "RFC 2023-08-29 'Enhance disjoint VMA scanning' (Raghavendra K T) on 6.5-rc6 (the "
    "6.4 rules): patch 1 'Move up the access pid reset logic'.",
    "rfc2023-p2": "RFC 2023 patches 1-2: + 'Add disjoint vma unconditional scan logic' "
    "(vma_scan_select counter, refill 1 + ((4MiB / size) >> 7)).",
    "rfc2023-p3": "RFC 2023 patches 1-3: + 'Remove unconditional scan logic using mm numa_scan_seq'.",
    "rfc2023-p4": "RFC 2023 patches 1-4: + 'Increase tasks' access history' (Peter Zijlstra; "
    "NR_ACCESS_PID_HIST 4, ring buffer).",
    "rfc2023-p5": "RFC 2023 patches 1-5: + 'Allow recently accessed VMAs to be scanned' (hot: any bit "
    "in the current window, checked first).",
    "rfc2023-p6": "RFC 2023 patches 1-6: + 'Allow scanning of shared VMAs' (SHARED_VMA_THRESH 3 bits "
    "in the union of 4 windows).",
    "rfc2024-hot-shared": "RFC 2024-03-22 'A Summary of VMA scanning improvements explored', PATCH 1 "
    "'Hot VMA and shared VMA optimization' on ~v6.8 (b0546776ad3f): 4-window ring, own PID in the "
    "union, hot (current window non-empty), shared (>= 3 bits), then IGNORE_PID.",
    "rfc2024-pid-bits": "RFC 2024-03-22, PATCH 2 'Increase the VMA accessing PID bits' on ~v6.8: "
    "128-bit map (NR_PID_ARRAY 2), hash_32(tid, 7), 2 windows.",
}

#: policy-text words a user rule may not be named (its label would read as one of them)
_WORDS = frozenset({"N", "adaptive", "adapt", "adapt_off", "rules", "none", "history", "base", "name", "description",
                    "adapt_enabled", *ADAPT_KEYWORDS, *_FIELD_ORDER})


@dataclass(frozen=True)
class _Chain:
    """A policy's decision chain, built once: ``pre`` and ``access`` rules as (rule, test
    keywords, code, allow) in test order, the ``fallback`` as (rule, code, refuse code) or None,
    ``scanner`` the indices of access rules whose answer depends on the scanner, ``users``
    whether any access rule is a user rule, ``any`` whether any rule is on."""

    pre: tuple
    access: tuple
    fallback: tuple | None
    scanner: tuple
    users: bool
    any: bool


def _on(value) -> bool:
    return value is not None and value is not False


def _chain(values: dict, user_rules: tuple, dec: Decisions) -> _Chain:
    pre, access, fallback = [], [], None
    for r in BUILTIN_RULES:
        if not _on(values[r.name]):
            continue
        entry = (r, r.test_kwargs(values[r.name]), dec.code[r.reason], r.kind == "allow")
        if r.stage == "pre":
            pre.append((r.order_of(values), entry))
        elif r.stage == "access":
            access.append((r.order_of(values), len(access), entry))
        else:
            fallback = (r, dec.code[r.reason], dec.code[r.refuse])
    for u in user_rules:
        access.append((u.order, len(access), (u, u.bound, dec.code[u.reason], u.kind == "allow")))
    pre = tuple(e for _, e in sorted(pre, key=lambda x: x[0]))
    access = tuple(e for *_, e in sorted(access, key=lambda x: x[:2]))
    scanner = tuple(i for i, e in enumerate(access) if e[0].builtin and e[0].scanner)
    return _Chain(pre, access, fallback, scanner, bool(user_rules), bool(pre or access or fallback))


@dataclass(frozen=True, init=False)
class Policy:
    """A scan-filter policy: a kernel profile or a composition of rules.

    Construct with ``Policy.profile("6.12")`` or ``Policy(history=N, rules=..., base=...)``.

    Parameters
    ----------
    history : int in [1, 64] or "adaptive", optional
        Number of PID windows ``N`` (``NR_ACCESS_PID_HIST``); default: the base profile's.
        ``"adaptive"``: the window count is chosen while running by the rule ``adapt``
        (:mod:`numalab.adaptive`); ``windows`` is then the allocated ``n_max`` and
        :func:`decide` needs ``windows_active=``.
    adapt : "grow-shrink" | "popcount" | "span" or a :class:`numalab.adaptive.Adaptive`, optional
        The adaptive rule (implies ``history="adaptive"``; default "grow-shrink" when only
        ``history="adaptive"`` is given). Its knobs are keywords too: ``n_min`` (1), ``n_max``
        (8), ``n_init`` (the base profile's window count), ``adapt_enabled`` (True; False
        makes the policy decide exactly as ``history=n_init``) and the rule's own parameters
        (``shrink_after``, ``grow_others``; ``bits_lo``, ``bits_hi``, ``threads_max``;
        ``span_ms``, ``ewma_shift``). Named e.g. ``"6.12+adaptive=grow-shrink"``.
    rules : str, iterable or mapping, optional
        The rules to switch on (all others off): names of the table
        (:data:`numalab.rules.BUILTIN_RULES`) and user rules (:class:`numalab.rules.Rule`
        objects or their names), e.g. ``("early_passes", "own_pid", "hot", "shared=3",
        my_rule)`` or ``{"own_pid": True, "shared": 2}``. Valued rules: ``early_passes``
        ("mm" or "vma"), ``hot`` and ``shared`` (popcount thresholds, >= 1; defaults 1 and 3).
        Default: the base profile's rules.
    add_rules : iterable, optional
        Rules to switch on in addition to the base's (or ``rules``'), e.g. ``[my_rule]``:
        what policy text writes as ``"6.12+my_rule"``.
    base : str, optional
        Profile supplying everything not given (rotation placement, state, ...); default "6.12".
    width, rotation : optional overrides (64/128, "shift"/"ring").
    name : str, optional
        Defaults to the base name, plus ``+N=6`` etc. for every override.
    **switches : any other field by name (``hot_first=True``, ``forced_one=False``, ...).

    Attributes
    ----------
    name, windows, rotation, width, numab_state, rotate_before_access, base, description,
    adapt (:class:`numalab.adaptive.Adaptive` or None for a fixed N); every switch of the rule
    table (``forced_one``, ``seq_completed``, ``early_passes`` (None | "mm" | "vma"),
    ``own_pid``, ``hot`` (int | None), ``hot_first``, ``shared`` (int | None),
    ``ignore_pid_partial``, ``starvation``, ``disjoint_select``); ``user_rules`` (the user
    rules, in test order); ``decisions`` (its :class:`numalab.reasons.Decisions`).
    """

    name: str
    windows: int
    rotation: str
    width: int
    numab_state: bool
    rotate_before_access: bool
    switches: tuple
    user_rules: tuple
    base: str
    description: str = field(compare=False)
    adapt: Adaptive | None = None
    chain: _Chain = field(default=None, compare=False, repr=False)

    def __init__(self, history=None, rules=None, *, base=None, width=None, rotation=None, name=None,
                 adapt=None, description=None, add_rules=None, **switches):
        adapt_kw = {k: switches.pop(k) for k in list(switches) if k in ADAPT_KEYWORDS}
        adaptive = _check_adaptive_args(history, adapt, adapt_kw, switches)
        base = "6.12" if base is None else check_choice("base", base, _P)
        values = dict(_P[base])
        users: list = []
        for spec, add in ((rules, False), (add_rules, True)):
            if spec is not None:
                built, more = _parse_rules(spec, values, add=add)
                values.update(built)
                users += more
        unknown = sorted(set(switches) - set(_FIELD_ORDER))
        if unknown:
            raise NumalabValueError(
                f"unknown Policy switch {unknown[0]!r}; allowed: history, rules, add_rules, base, width, rotation, "
                f"name, {', '.join(_FIELD_ORDER)}"
            )
        if "windows" in switches and history is not None:
            raise NumalabValueError("give history= or windows=, not both")
        values.update(switches)
        if history is not None and not adaptive:
            values["windows"] = history
        if width is not None:
            values["width"] = width
        if rotation is not None:
            values["rotation"] = rotation
        adapt_obj = None
        if adaptive:
            adapt_obj = _make_adaptive(adapt, adapt_kw, values)
            values["windows"] = adapt_obj.n_max
        values = _validate(values)
        if adapt_obj is not None and adapt_obj.width != values["width"]:
            raise NumalabValueError(
                f"adapt has width={adapt_obj.width} but the policy's map is {values['width']} bits; allowed: equal"
            )
        user_rules = _check_user_rules(users, values, adapt_obj)
        changed = [k for k in _FIELD_ORDER if values[k] != _P[base][k] and not (adapt_obj and k == "windows")]
        if name is None:
            name = _name(base, values, changed, adapt_obj, user_rules)
        elif not isinstance(name, str) or not name:
            raise NumalabValueError(f"name={name!r}; allowed: a non-empty string")
        if description is None:
            description = _describe(base, values, changed, adapt_obj, user_rules)
        set_ = object.__setattr__
        for key in _STATE:
            set_(self, key, values[key])
        set_(self, "switches", tuple((k, values[k]) for k in SWITCHES))
        set_(self, "user_rules", user_rules)
        set_(self, "name", name)
        set_(self, "base", base)
        set_(self, "description", str(description))
        set_(self, "adapt", adapt_obj)
        set_(self, "_decisions", decisions_for(user_rules))  # read per engine walk: looked up once
        set_(self, "chain", _chain(values, user_rules, self._decisions))

    # -------------------------------------------------------------- constructors / introspection
    @classmethod
    def profile(cls, name: str, **overrides) -> "Policy":
        """A named kernel profile (see :meth:`profiles`); ``overrides`` as in the constructor."""
        name = check_choice("profile", name, _P)
        return cls(base=name, **overrides)

    @classmethod
    def parse(cls, text, history=None) -> "Policy":
        """The policy a text names: the one parser of every text form numalab reads.

        ``text`` is what :attr:`name` writes -- a profile, then ``+``-joined overrides:
        ``"6.12"``, ``"6.12+N=4"``, ``"6.12+adaptive=span+n_max=16"``,
        ``"6.4+N=8+rules=own_pid,hot>=1,shared>=3"``, ``"6.12+no_forced_one"``,
        ``"6.12+my_rule"`` (a user rule made in this process; ``my_rule(k=3)`` with
        parameters, ``my_rule@<digest>`` pinned to one version) -- so ``Policy.parse(p.name)
        == p``; ``"adaptive:span"`` is accepted for ``adaptive=span`` and a text starting with
        an override (``"N=4"``, ``"adaptive:span"``) takes the ``"6.12"`` profile. ``history``
        (the CLI's ``--history`` and the sweeps' ``history`` axis): None or ``"profile"`` keeps
        the text's window count, an int (or its digits) sets ``NR_ACCESS_PID_HIST``,
        ``"adaptive"`` / ``"adaptive:<rule>"`` picks an adaptive rule. A :class:`Policy` is
        returned unchanged when ``history`` is None.
        """
        if isinstance(text, Policy) and history is None:
            return text
        if isinstance(text, Policy):
            return text.replace(**_history_kw(history))
        if not isinstance(text, str) or not text.strip():
            raise NumalabValueError(f"policy={text!r}; allowed: a profile name such as '6.12' or "
                                    f"'<profile>+N=<windows>', e.g. '6.12+N=4' (profiles: {', '.join(_P)})")
        tokens = [t.strip() for t in text.strip().split("+")]
        base = "6.12" if tokens[0] not in _P and ("=" in tokens[0] or tokens[0].startswith("adaptive")) \
            else check_choice("policy", tokens[0], _P)
        kw: dict = {}
        for tok in tokens[1:] if tokens[0] == base else tokens:
            _parse_token(text, tok, kw)
        _parse_history(history, kw)
        for key, value in kw.pop("_placed", {}).items():
            kw.setdefault(key, value)
        return cls(base=base, **kw)

    @staticmethod
    def profiles() -> list[str]:
        """Names of the built-in kernel profiles, oldest first."""
        return list(_P)

    @staticmethod
    def adaptive_rules() -> list[str]:
        """Names accepted by ``adapt=`` (see :mod:`numalab.adaptive`)."""
        return list(ADAPT_RULES)

    @staticmethod
    def rule_table() -> dict[str, dict]:
        """Rule name -> its row of :data:`numalab.rules.BUILTIN_RULES` (what it tests, its
        stage and order, its parameters with default, bounds and doc, its label and decision)."""
        return {r.name: r.describe() for r in BUILTIN_RULES}

    @property
    def adaptive(self) -> bool:
        """True when the window count is chosen while running (``history="adaptive"``)."""
        return self.adapt is not None

    @property
    def decisions(self) -> Decisions:
        """The decisions this policy can produce (:class:`numalab.reasons.Decisions`): the
        built-in ones, then one per user rule."""
        return self._decisions

    @property
    def reasons(self) -> tuple[str, ...]:
        """Decision names by code (``REASONS`` plus the user rules')."""
        return self.decisions.names

    @staticmethod
    def describe_profiles() -> dict[str, str]:
        """Profile name -> the commits or RFC it mirrors."""
        return dict(_DESCRIPTIONS)

    def values(self) -> dict:
        """Every field (state and table switches) by name, in field order."""
        return {"windows": self.windows, "rotation": self.rotation, "width": self.width,
                "numab_state": self.numab_state, "rotate_before_access": self.rotate_before_access,
                **dict(self.switches)}

    def replace(self, **changes) -> "Policy":
        """A copy with some fields changed (``dataclasses.replace`` does not fit this constructor)."""
        values = self.values()
        history = changes.pop("history", changes.pop("windows", None))
        values.pop("windows")
        adapt_kw = {k: changes.pop(k) for k in list(changes) if k in ADAPT_KEYWORDS}
        adapt = changes.pop("adapt", None)
        if "rules" not in changes:
            changes["add_rules"] = tuple(changes.pop("add_rules", ())) + self.user_rules
        values.update(changes)
        base = values.pop("base", self.base)
        if history is not None and history != "adaptive":
            return Policy(history=history, base=base, **values)
        if history is None and adapt is None and not adapt_kw and self.adapt is None:
            return Policy(history=self.windows, base=base, **values)
        if adapt is None and self.adapt is not None:  # keep the rule, change some of its knobs
            keep = {("adapt_enabled" if k == "enabled" else k): v for k, v in self.adapt.to_dict().items()
                    if k not in ("rule", "width")}
            keep.update(adapt_kw)
            return Policy(history="adaptive", adapt=self.adapt.rule, base=base, **keep, **values)
        return Policy(history="adaptive", adapt=adapt, base=base, **adapt_kw, **values)

    @property
    def rules(self) -> tuple[str, ...]:
        """The rules switched on: ``vma_is_accessed()``'s in the order it tests them (user rules
        at their place), then the fallback, then the checks before the PID test."""
        return _rule_labels(self.values(), self.user_rules)

    @property
    def pinned(self) -> str:
        """The policy's text (as :attr:`name` writes it by default) with each user rule pinned
        to its version (``my_rule@<digest>``): what a sweep stores, so an edited rule is a new
        point."""
        values = self.values()
        changed = [k for k in _FIELD_ORDER if values[k] != _P[self.base][k] and not (self.adapt and k == "windows")]
        return _name(self.base, values, changed, self.adapt, self.user_rules, pinned=True)

    def to_dict(self) -> dict:
        """All fields as a JSON-able dict (None kept; ``adapt`` as a dict or None; the user
        rules, when there are any, as their name, version, kind, place and values)."""
        out = {"name": self.name, "base": self.base, **self.values(), "description": self.description,
               "adapt": None if self.adapt is None else self.adapt.to_dict()}
        if self.user_rules:
            out["user_rules"] = [{"name": r.name, "digest": r.digest, "kind": r.kind, "order": r.order,
                                  "values": r.bound, "doc": r.doc} for r in self.user_rules]
        return out

    def to_attrs(self, prefix: str = "policy_") -> dict:
        """netCDF-safe attrs (str/int only: bools as 0/1, None as "none", dicts as JSON)."""
        out = {}
        for key, value in self.to_dict().items():
            if isinstance(value, bool):
                value = int(value)
            elif value is None:
                value = "none"
            elif isinstance(value, (dict, list)):
                value = json.dumps(value, sort_keys=True)
            out[prefix + key] = value
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def __repr__(self) -> str:
        if self.adapt is not None:
            a = self.adapt
            hist = f"adaptive {a.rule} {a.n_min}..{a.n_max} windows" + ("" if a.enabled else " (off)")
        else:
            hist = f"windows={self.windows}"
        return f"Policy({self.name!r}: {hist}, {self.rotation}, {self.width} bits, rules={list(self.rules)})"


def _switch(index: int, doc: str):
    return property(lambda self: self.switches[index][1], doc=doc)


for _i, _key in enumerate(SWITCHES):  # the table's switches read as attributes: policy.hot, policy.own_pid
    setattr(Policy, _key, _switch(_i, f"The {_key!r} switch of the rule table (numalab.rules)."))
del _i, _key


def _check_adaptive_args(history, adapt, adapt_kw: dict, switches: dict) -> bool:
    """Whether the constructor's arguments ask for an adaptive history (refusing mixtures)."""
    adaptive = history == "adaptive" if isinstance(history, str) else False
    if isinstance(history, str) and not adaptive:
        raise NumalabValueError(
            f"history={history!r} is not known; allowed: an integer number of windows in "
            f"[1, {MAX_WINDOWS}] or 'adaptive'"
        )
    if (adapt is not None or adapt_kw) and not adaptive:
        if history is not None:
            raise NumalabValueError(
                f"history={history!r} with adapt/{sorted(adapt_kw) or 'adapt'}: an adaptive history "
                f"has no fixed N; allowed: history='adaptive' (n_max= sets the allocated windows)"
            )
        adaptive = True
    if adaptive and "windows" in switches:
        raise NumalabValueError("windows= does not apply to an adaptive history; allowed: n_max=")
    return adaptive


def _history_kw(history) -> dict:
    kw: dict = {}
    _parse_history(history, kw)
    return kw


def _n_init_default(base_windows: int, adapt_kw: dict | Adaptive) -> int:
    """Adaptive histories start at the base profile's window count, clamped to [n_min, n_max]."""
    get = (lambda k, d: getattr(adapt_kw, k)) if isinstance(adapt_kw, Adaptive) else adapt_kw.get
    n_min = get("n_min", 1)
    n_max = get("n_max", 8)
    if not isinstance(n_min, int) or not isinstance(n_max, int):
        return base_windows  # Adaptive() reports the bad value
    return min(max(base_windows, n_min), n_max)


def _make_adaptive(adapt, adapt_kw: dict, values: dict) -> Adaptive:
    """The :class:`Adaptive` of ``Policy(history="adaptive", adapt=..., **adapt_kw)``."""
    kw = {("enabled" if k == "adapt_enabled" else k): v for k, v in adapt_kw.items()}
    width = values["width"]
    if isinstance(adapt, Adaptive):
        if kw:
            raise NumalabValueError(
                f"give the adaptive knobs {sorted(adapt_kw)} inside the Adaptive object or with adapt=<name>, not both"
            )
        return adapt
    if not values["numab_state"]:
        raise NumalabValueError("an adaptive history needs per-VMA state; allowed: any profile but pre-6.4")
    rule = "grow-shrink" if adapt is None else check_choice("adapt", adapt, ADAPT_RULES)
    kw.setdefault("n_init", _n_init_default(values["windows"], kw))
    return Adaptive(rule, width=width if isinstance(width, int) else 64, **kw)


def _check_user_rules(users: list, values: dict, adapt_obj) -> tuple:
    """The user rules of a policy: distinct names, none named like a policy-text word, each
    probed on a view of the policy's own history shape."""
    out: dict = {}
    for r in users:
        if r.name in _WORDS:
            raise NumalabValueError(f"rule name={r.name!r} reads as a policy override in policy text; "
                                    f"allowed: any other name")
        if r.name in out and out[r.name] != r:
            raise NumalabValueError(f"two different rules are named {r.name!r}; allowed: each rule once")
        out[r.name] = r
    if out and not values["numab_state"]:
        raise NumalabValueError(f"rules {sorted(out)} need per-VMA state; allowed with numab_state=False "
                                f"(pre-6.4): no rules")
    from .rules import probe

    wa = None if adapt_obj is None else adapt_obj.n_init
    for r in out.values():
        probe(r, windows=values["windows"], width=values["width"], rotation=values["rotation"], windows_active=wa)
    return tuple(sorted(out.values(), key=lambda r: r.order))  # stable: equal places keep the given order


# ------------------------------------------------------------------------------ policy text

#: a user rule's label: ``name``, ``name(k=3;j=2)``, pinned ``name@<12 hex>``
_USER_LABEL = re.compile(r"([a-z][a-z0-9_]*)(?:\(([^()]*)\))?(?:@([0-9a-f]{12}))?")


def _value(text: str):
    """An override's value as :func:`_label` wrote it: int, float, bool or the text."""
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if text in ("True", "False"):
        return text == "True"
    try:
        return float(text)
    except ValueError:
        return text


def _user_rule(label: str, *, where: str):
    """The user rule a label names (``name``, ``name(k=3)``, ``name@digest``), or None when
    the label is no user-rule label; a name no rule of this process has is refused."""
    m = _USER_LABEL.fullmatch(label)
    if m is None or m.group(1) in _WORDS or m.group(1) in BY_NAME:
        return None
    name, params, pin = m.groups()
    rule = registered(name)
    if rule is None:
        if params is None and pin is None:
            return None  # an unknown word: the caller says what is allowed
        raise NumalabValueError(f"{where}: rule {name!r} is not defined in this process; allowed: a rule made "
                                f"with numalab.Rule / @numalab.rule or loaded with --rule package.module:function")
    if pin is not None and pin != rule.digest:
        rule = version(name, pin)
        if rule is None:
            raise NumalabValueError(f"{where} names version {pin} of rule {name!r}, but the rule defined here is "
                                    f"version {registered(name).digest} (edited since?); allowed: "
                                    f"{name}@{registered(name).digest} or {name}")
    values = {}
    for item in (params or "").split(";"):
        if item.strip():
            key, eq, val = item.partition("=")
            if not eq:
                raise NumalabValueError(f"{where}: {item!r} in {label!r}; allowed: {name}(<param>=<value>;...)")
            values[key.strip()] = _value(val.strip())
    return rule(**values)


def _parse_token(text: str, tok: str, kw: dict) -> None:
    """One ``+``-separated override of :meth:`Policy.parse` into constructor keywords."""
    user = _user_rule(tok, where=f"policy={text!r}") if tok else None
    if user is not None:
        kw.setdefault("add_rules", []).append(user)
        return
    key, eq, value = tok.partition("=")
    if tok.startswith("adaptive") and not eq:
        key, _, value = tok.partition(":")
        eq = "=" if value else ""
    if not tok or key != key.strip() or (eq and not value):
        raise NumalabValueError(f"policy={text!r}: the part {tok!r} is empty or incomplete; allowed: "
                                f"'+'-joined overrides such as N=4, adaptive=span, rules=own_pid,hot>=1")
    if key in kw or (key == "N" and "history" in kw):
        raise NumalabValueError(f"policy={text!r} sets {key} twice; allowed: each override once")
    if key == "N":
        kw["history"] = check_int("policy N", _value(value), lo=1, hi=MAX_WINDOWS)
    elif key == "adaptive":
        kw["history"] = "adaptive"
        if value:
            kw["adapt"] = value
    elif key == "adapt_off" and not eq:
        kw["adapt_enabled"] = False
    elif key == "rules":
        items = _rule_items(value)
        kw["rules"] = items
        kw["_placed"] = _placed_first(items)  # applied unless the text sets the switch itself
    elif eq:
        kw[key] = _value(value)
    elif key.startswith("no_") and key[3:] in _FIELD_ORDER:
        kw[key[3:]] = False
    elif key in _FIELD_ORDER:
        kw[key] = True
    else:
        raise NumalabValueError(f"policy={text!r}: {tok!r} is not an override; allowed: N=<windows>, "
                                f"adaptive[=<rule>], rules=<list>, <switch>, no_<switch>, <field>=<value>, "
                                f"or a rule made in this process")


def _rule_items(value: str) -> list:
    """A ``rules=`` list as the labels wrote it (``hot>=1``, ``early_passes(vma)``, user rules)
    -> constructor items; ``none`` is the empty list."""
    if value.strip() == "none":
        return []
    out = []
    for item in (v.strip() for v in value.split(",")):
        user = _user_rule(item, where=f"rules={value!r}") if item else None
        if user is not None:
            out.append(user)
        else:  # the labels' spelling (hot>=1, early_passes(vma)) back to the constructor's (hot=1, ...)
            out.append(re.sub(r"(\w+)\((\w+)\)", r"\1=\2", item.replace(">=", "=")))
    return out


def _placed_first(items: list) -> dict:
    """The ``first`` switches a ``rules=`` list states by its order: a rule listed before the
    other vma_is_accessed() tests is tested first (``hot>=1,own_pid`` -> ``hot_first``)."""
    names = [(i.name if isinstance(i, Rule) else str(i).split("=", 1)[0].strip()) for i in items]
    access = [n for n in names if n in BY_NAME and BY_NAME[n].stage == "access"]
    out = {}
    for r in BUILTIN_RULES:
        if r.first is not None and r.name in access and len(access) > 1:
            out[r.first] = access[0] == r.name
    return out


def _parse_history(history, kw: dict) -> None:
    """``Policy.parse``'s ``history=``: None / "profile" / int / "adaptive[:rule]"."""
    if history is None or history == "profile":
        return
    if isinstance(history, str) and history.startswith("adaptive"):
        rule = history.partition(":")[2]
        kw.pop("adapt", None)
        kw.update(history="adaptive", **({"adapt": rule} if rule else {}))
        return
    if isinstance(history, str) and history.isdigit():
        history = int(history)
    if isinstance(history, bool) or not isinstance(history, (int, np.integer)):
        raise NumalabValueError(f"history={history!r}; allowed: 'profile', an integer number of windows in "
                                f"[1, {MAX_WINDOWS}], 'adaptive' or 'adaptive:<rule>' ({', '.join(ADAPT_RULES)})")
    kw["history"] = int(history)


_RULE_FIELDS = frozenset(SWITCHES)
#: where each stage's rules come in a rules= list: the vma_is_accessed() tests, the fallback, the
#: checks before the PID test
_LABEL_RANK = {"access": 0, "fallback": 1, "pre": 2}


def _rule_labels(v: dict, user_rules=()) -> tuple[str, ...]:
    placed = [(_LABEL_RANK[r.stage], r.order_of(v), i, r.label(v[r.name]))
              for i, r in enumerate(BUILTIN_RULES) if _on(v[r.name])]
    placed += [(0, u.order, len(placed) + i, u.label()) for i, u in enumerate(user_rules)]
    return tuple(label for *_, label in sorted(placed))


def _label(key, value) -> str:
    if key == "windows":
        return f"N={value}"
    if isinstance(value, bool):
        return key if value else f"no_{key}"
    return f"{key}={value}"


def _user_label(r: Rule, pinned: bool) -> str:
    return r.label() + (f"@{r.digest}" if pinned else "")


def _name(base, values, changed, adapt_obj, user_rules, pinned=False) -> str:
    """The text of a policy: the base, its overrides, ``rules=`` when a rule of the table
    differs from the base's, then each user rule."""
    labels = list(adapt_obj.labels(_n_init_default(_P[base]["windows"], adapt_obj))) if adapt_obj else []
    labels += [_label(k, values[k]) for k in changed if k not in _RULE_FIELDS]
    if any(k in _RULE_FIELDS for k in changed):
        labels.append("rules=" + (",".join(_rule_labels(values)) or "none"))
    labels += [_user_label(r, pinned) for r in user_rules]
    return base if not labels else base + "+" + "+".join(labels)


def _describe(base, values, changed, adapt_obj, user_rules) -> str:
    description = _DESCRIPTIONS[base]
    if changed:
        description += " Modified: " + ", ".join(_label(k, values[k]) for k in changed) + "."
    if adapt_obj is not None:
        description += (f" Adaptive history ({adapt_obj.rule}, per {adapt_obj.scope}): "
                        f"{adapt_obj.n_min}..{adapt_obj.n_max} windows, starting at {adapt_obj.n_init}"
                        + ("" if adapt_obj.enabled else ", adaptation off") + ".")
    for r in user_rules:
        description += f" Own rule {r.label()} ({r.kind}, version {r.digest}): {r.doc or 'no description'}."
    return description


def _rule_item(item):
    """One item of a rules spec -> (name, value) or a user Rule."""
    if isinstance(item, Rule):
        return (item.name, True) if item.builtin else item
    if isinstance(item, tuple) and len(item) == 2:
        return item
    if isinstance(item, str):
        user = _user_rule(item.strip(), where=f"rules item {item!r}")
        if user is not None:
            return user
        if "=" in item:
            key, value = item.split("=", 1)
            key, value = key.strip(), value.strip()
            return key, int(value) if value.lstrip("-").isdigit() else value
    return item, True


def _parse_rules(rules, base_values: dict, *, add: bool = False) -> tuple[dict, list]:
    """Rules spec -> (the table's fields, user rules). Every rule of the table not named is
    switched off, unless ``add`` (then only the named ones change)."""
    if isinstance(rules, str):
        items = [r.strip() for r in rules.replace("+", ",").split(",") if r.strip()]
    elif isinstance(rules, Mapping):
        items = list(rules.items())
    elif isinstance(rules, (Iterable, Rule)):
        items = [rules] if isinstance(rules, Rule) else list(rules)
    else:
        raise NumalabValueError(f"rules={rules!r}; allowed: a string, a list of rule names or a mapping")
    out = {} if add else {r.name: r.off for r in BUILTIN_RULES}
    users = []
    for item in items:
        item = _rule_item(item)
        if isinstance(item, Rule):
            users.append(item)
            continue
        key, value = item
        if isinstance(value, Rule) and not value.builtin:  # a mapping name -> user rule
            users.append(value)
            continue
        key = check_choice("rules", key, RULES)
        if value is False or value is None:
            out[key] = BY_NAME[key].off
            continue
        vp = BY_NAME[key].value_param
        if vp is None or value is not True:
            out[key] = value
        else:  # switched on with no value: the base's value if it has the rule on, else the default
            out[key] = base_values.get(key) if _on(base_values.get(key)) else vp.default
    return out, users


def _validate(v: dict) -> dict:
    v = dict(v)
    v["windows"] = check_int("history", v["windows"], lo=1, hi=MAX_WINDOWS)
    if isinstance(v["width"], bool) or v["width"] not in (64, 128):
        raise NumalabValueError(f"width={v['width']!r} is not supported; allowed: 64 (mainline), 128 (RFC 2024)")
    v["rotation"] = check_choice("rotation", v["rotation"], ROTATIONS)
    for key in ("numab_state", "rotate_before_access"):
        v[key] = check_bool(key, v[key])
    for r in BUILTIN_RULES:
        vp = r.value_param
        if vp is None:
            v[r.name] = check_bool(r.name, v[r.name])
        elif v[r.name] is not None:
            label = f"{r.name} threshold" if vp.kind == "int" else r.name
            v[r.name] = vp.check(label, v[r.name], width=v["width"])
        for key, p in r.switch_params:
            v[key] = p.check(key, v[key], width=v["width"])
    if not v["numab_state"]:
        on = [k for k in RULES if _on(v[k])]
        if on:
            raise NumalabValueError(
                f"rules {on} need per-VMA state; allowed with numab_state=False (pre-6.4): no rules"
            )
    return v


# ------------------------------------------------------------------------------ decide


def _broadcast(name: str, arr: np.ndarray, shape: tuple, what: str) -> np.ndarray:
    try:
        return np.broadcast_to(arr, shape)
    except ValueError:
        raise NumalabValueError(
            f"{name} has shape {arr.shape}; allowed: {what} shape {shape} (or broadcastable to it)"
        ) from None


def _as_num(name: str, value, shape: tuple, what: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf" or arr.dtype.kind == "b":
        raise NumalabValueError(f"{name} must be numeric; got dtype {arr.dtype}")
    return _broadcast(name, arr, shape, what)


def _as_bool(name: str, value, shape: tuple, what: str) -> np.ndarray:
    if value is None:
        return np.zeros(shape, dtype=bool)
    arr = np.asarray(value)
    if arr.dtype != bool:
        raise NumalabValueError(f"{name} must be a bool array; got dtype {arr.dtype}")
    return _broadcast(name, arr, shape, what)


def _first_true(conditions: list, codes: list, default, shape: tuple) -> np.ndarray:
    """``np.select`` over per-VMA conditions (each broadcastable to ``shape``): the int8 code
    of the first True condition, else ``default`` (a code or an array of codes). Written as
    copies in reverse order -- the same answer as ``np.select`` at a fraction of its overhead
    on the engine's small arrays."""
    out = np.empty(shape, dtype=np.int8)
    np.copyto(out, default, casting="unsafe")
    for cond, code in zip(conditions[::-1], codes[::-1]):
        np.copyto(out, np.int8(code), where=cond)
    return out


def _flag_tests(unsuitable, shared_ro, inaccessible):
    """The VMA flag tests every kernel version runs first (vma_migratable / vma_policy_mof,
    the shared read-only file check, PROT_NONE VMAs), as (conditions, codes) in kernel order;
    a flag given as None is never set and is left out."""
    conds, codes = [], []
    for flag, code in ((unsuitable, "unsuitable"), (shared_ro, "shared_ro"), (inaccessible, "inaccessible")):
        if flag is not None:
            conds.append(flag)
            codes.append(CODE[code])
    return conds, codes


def unfiltered_reasons(shape, *, unsuitable=None, shared_ro=None, inaccessible=None) -> np.ndarray:
    """The <= v6.3 decision (no ``vma_numab_state``, so no per-VMA filter): int8 codes of
    ``shape``, the first failed flag test (``unsuitable``, ``shared_ro``, ``inaccessible``;
    bool arrays broadcastable to ``shape``, None = never) or ``unfiltered``. Unchecked: for the
    engine's scan of a pre-6.4 profile, which has no PID history to pass to :func:`decide`."""
    conds, codes = _flag_tests(unsuitable, shared_ro, inaccessible)
    return _first_true(conds, codes, CODE["unfiltered"], shape)


_VIEW_FIELDS = tuple(f.name for f in fields(ScanView) if f.init)
_REQUIRED = tuple(f.name for f in fields(ScanView) if f.init and f.default is not None and f.name not in (
    "forced", "rotation", "width", "page_bytes"))


def _fields(view, given: dict) -> tuple[dict, bool]:
    """The view's fields from a :class:`ScanView` or keywords (``from_view``: a view was given)."""
    if view is not None:
        if given:
            raise NumalabValueError(f"give a ScanView or its fields as keywords, not both (got {sorted(given)})")
        if not isinstance(view, ScanView):
            raise NumalabValueError(f"view must be a numalab ScanView; got {type(view).__name__}")
        return {k: getattr(view, k) for k in _VIEW_FIELDS}, True
    unknown = sorted(set(given) - set(_VIEW_FIELDS))
    if unknown:
        raise NumalabValueError(f"unknown decide() argument {unknown[0]!r}; allowed: the ScanView fields "
                                f"{', '.join(_VIEW_FIELDS)}")
    missing = [k for k in _REQUIRED if k not in given]
    if missing:
        raise NumalabValueError(f"decide() needs {', '.join(missing)} (ScanView fields)")
    return {**{f.name: f.default for f in fields(ScanView) if f.init and f.name not in _REQUIRED}, **given}, False


def _checked_view(policy, f: dict, from_view: bool):
    """Every field of ``f`` checked against the policy: (view, matrix, tids)."""
    pa = f["pids_active"]
    _check_history(pa, name="pids_active")
    if pa.ndim < 3:
        raise NumalabValueError(f"pids_active has shape {pa.shape}; allowed: (*batch, vmas, windows, words)")
    batch = pa.shape[:-3]
    nvma, windows, words = pa.shape[-3:]
    if windows != policy.windows or words != policy.width // 64:
        raise NumalabValueError(
            f"pids_active has {windows} windows of {words} word(s); policy {policy.name!r} needs "
            f"{policy.windows} windows of {policy.width // 64} word(s)"
        )
    vshape = (*batch, nvma)
    tid = check_uint32_array("scanner_tid", f["scanner_tid"])
    matrix, tids = False, None
    if tid.shape == batch:
        tid = tid[..., None]
    elif not (from_view and tid.shape == (*batch, 1)):
        if tid.ndim != len(batch) + 1 or tid.shape[:-1] != batch:
            raise NumalabValueError(f"scanner_tid has shape {tid.shape}; allowed: {batch} (one scanner per mm) or "
                                    f"{(*batch, 'T')} (a task x VMA matrix)")
        matrix, tids, tid = True, tid, None

    def mm(name, check=_as_num):  # per-mm -> (*B, 1) so it broadcasts over VMAs
        arr = np.asarray(f[name])
        if arr.ndim == len(batch) + 1 and arr.shape[-1:] == (1,):
            return check(name, arr, (*batch, 1), "per-mm")
        return check(name, arr, batch, "per-mm")[..., None]

    def vma(name):
        return None if f[name] is None else _as_num(name, f[name], vshape, "per-VMA")

    idx = vma("idx") if policy.rotation == "ring" else np.broadcast_to(np.int64(0), vshape)
    flags = {k: None if f[k] is None else _as_bool(k, f[k], vshape, "per-VMA") for k in FLAGS}
    if f["vma_scan_select"] is not None:
        vma("vma_scan_select")  # checked; passed on as given (decide returns it unchanged)
    wa = None if f["windows_active"] is None else _windows_active(f["windows_active"], batch, vshape, windows)
    view = ScanView(pids_active=pa, idx=idx, scanner_tid=tid, numa_scan_seq=mm("numa_scan_seq"),
                    start_scan_seq=vma("start_scan_seq"), prev_scan_seq=vma("prev_scan_seq"),
                    scan_offset=mm("scan_offset"), vm_start=vma("vm_start"), next_scan=vma("next_scan"),
                    now=mm("now"), nr_threads=mm("nr_threads"), vm_end=vma("vm_end"),
                    forced=mm("forced", _as_bool), vma_scan_select=f["vma_scan_select"], windows_active=wa,
                    rotation=policy.rotation, width=policy.width, page_bytes=f["page_bytes"], **flags)
    return view, matrix, tids


def decide(policy: Policy, view: ScanView | None = None, /, **fields_):
    """Decide, for each scanning task and VMA, whether ``task_numa_work()`` scans the VMA.

    Takes a :class:`numalab.scanview.ScanView` or its fields as keywords (the one list of what
    a decision reads; shapes there). ``scanner_tid`` (*B,) -- one scanning thread per mm, the
    engine's form -> outputs (*B, V); or (*B, T) -- the task x VMA matrix -> outputs
    (*B, T, V) (a view's (*B, 1) is one scanner per mm). Per-mm fields may be (*B,) or (*B, 1),
    scalars broadcast; ``rotation`` and ``width`` come from the policy. ``windows_active`` is
    required for an adaptive policy (:func:`numalab.adaptive.effective_windows` of its state);
    optional otherwise (None = all ``W`` windows). The hot rule always reads the current window.

    Returns
    -------
    allowed : bool array
    reason : int8 array of codes into ``policy.reasons`` (:data:`REASONS` for a policy without
        user rules)
    vma_scan_select_new : the RFC 2023 p2 counters after this visit (same shape as ``reason``)
        when ``policy.disjoint_select``; otherwise ``vma_scan_select`` unchanged.

    Does not rotate the PID windows (see the module docstring).
    """
    if not isinstance(policy, Policy):
        raise NumalabValueError(f"policy must be a numalab Policy; got {type(policy).__name__}")
    f, from_view = _fields(view, fields_)
    view, matrix, tids = _checked_view(policy, f, from_view)
    return _decide(policy, view, matrix, tids)


def decide_unchecked(policy: Policy, view: ScanView | None = None, /, **fields_):
    """:func:`decide` without its argument checks, for the engine's per-scan call.

    Given a :class:`ScanView`, the caller guarantees what :func:`decide` would check: one
    scanner per mm, per-mm fields of shape (*B, 1) or scalars, per-VMA fields broadcastable to
    (*B, V), bool flags, ``pids_active`` of the policy's windows and width, ``rotation`` and
    ``width`` the policy's. Keywords are the engine's older form (per-mm (*B,)). The decision
    is computed by the same code as :func:`decide`; only the validation is skipped (it costs
    more than the decision for the engine's small batches)."""
    if view is None:
        f = fields_

        def mm(value):
            return np.asarray(value)[..., None]

        view = ScanView(pids_active=f["pids_active"], idx=f["idx"], scanner_tid=mm(f["scanner_tid"]),
                        numa_scan_seq=mm(f["numa_scan_seq"]), start_scan_seq=f["start_scan_seq"],
                        prev_scan_seq=f["prev_scan_seq"], scan_offset=mm(f["scan_offset"]), vm_start=f["vm_start"],
                        next_scan=f["next_scan"], now=mm(f["now"]), nr_threads=mm(f["nr_threads"]),
                        vm_end=f.get("vm_end"), forced=mm(f.get("forced", False)),
                        vma_scan_select=f.get("vma_scan_select"), windows_active=f.get("windows_active"),
                        unsuitable=f.get("unsuitable"), shared_ro=f.get("shared_ro"),
                        inaccessible=f.get("inaccessible"), rotation=policy.rotation, width=policy.width,
                        page_bytes=f.get("page_bytes", 4096))
    return _decide(policy, view)


_SCAN_DELAY, _PID_INACTIVE, _UNFILTERED = CODE["scan_delay"], CODE["pid_inactive"], CODE["unfiltered"]


def _decide(policy, view: ScanView, matrix: bool = False, tids=None):
    """The decision of checked (or trusted) state: the policy's chain over the view."""
    ch, dec = policy.chain, policy.decisions
    vshape = view.shape
    conds, codes = _flag_tests(view.unsuitable, view.shared_ro, view.inaccessible)
    if not policy.numab_state:  # <= v6.3: no filter, nothing else to decide
        code = _first_true(conds, codes, _UNFILTERED, vshape)
        reason = np.broadcast_to(code[..., None, :], (*tids.shape, vshape[-1])) if matrix else code
        reason = np.ascontiguousarray(reason, dtype=np.int8)
        return dec.allowed[reason], reason, view.vma_scan_select

    # ---- per-VMA tests that come before the PID test (§3.2), in kernel order
    conds.append((view.numa_scan_seq != 0) & (view.now < view.next_scan))
    codes.append(_SCAN_DELAY)
    for r, kw, code, allow in ch.pre:
        cond = r.test(view, **kw)
        if allow and not matrix and cond.all():  # the v6.7 retry pass: no later test can change the answer
            out = _first_true(conds, codes, code, vshape)
            return dec.allowed[out], out, (view.vma_scan_select if ch.fallback is None else _counters(view))
        conds.append(cond)
        codes.append(code)
    if view.windows_active is None:
        if policy.adapt is not None:
            raise NumalabValueError(
                f"policy {policy.name!r} has an adaptive history: pass windows_active= (the per-VMA or per-mm "
                f"window counts, numalab.adaptive.effective_windows(policy.adapt, state))"
            )
    else:
        view.windows_active = _windows_active(view.windows_active, vshape[:-1], vshape, view.windows)
    if matrix and (ch.users or len(ch.scanner) > 1):
        return _per_task(policy, view, tids)
    skip = ch.scanner[0] if matrix and ch.scanner else None
    uview = _users_view(view) if ch.users else view
    access = [(None if i == skip else (r.test(view, **kw) if r.builtin else r.evaluate(uview)), code)
              for i, (r, kw, code, _) in enumerate(ch.access)]
    fallback, select, refill = _fallback(ch, view)
    if matrix:
        return _matrix(policy, view, tids, conds, codes, access, skip, fallback, select, refill)
    reason = _first_true(conds + [c for c, _ in access], codes + [k for _, k in access], fallback, vshape)
    if select is None:
        return dec.allowed[reason], reason, view.vma_scan_select
    return dec.allowed[reason], reason, _select_after(select, reason, refill)


def _counters(view) -> np.ndarray:
    from .rules import _select_counters

    return _select_counters(view)


def _fallback(ch, view):
    """The decision of a VMA every access rule passed over: ``pid_inactive`` (``unfiltered``
    when the policy has no rule at all), or the table's fallback (RFC 2023 p2's counter:
    ``disjoint_select`` / ``disjoint_wait``). Returns (code(s), counters or None, refill or None)."""
    if ch.fallback is None:
        return (_PID_INACTIVE if ch.any else _UNFILTERED), None, None
    r, code, refuse = ch.fallback
    select = _counters(view)
    fallback = np.where(r.test(view), code, refuse).astype(np.int8)
    return fallback, select, r.refill(view)


def _matrix(policy, view, tids, conds, codes, access, skip, fallback, select, refill):
    """The task x VMA matrix. A task enters the decision only through pid_bit(tid), so every
    task sharing a bit decides alike: build the (bit, VMA) table once -- 64 or 128 rows,
    whatever T is -- then copy one row per task. The only (T, V) work is that row gather."""
    vshape = view.shape
    dec = policy.decisions
    nbits = policy.width
    if skip is None:  # no test reads the scanner: one answer per VMA
        code = _first_true(conds + [c for c, _ in access], codes + [k for _, k in access], fallback, vshape)
        reason_tab = np.ascontiguousarray(np.broadcast_to(code[..., None, :], (*vshape[:-1], nbits, vshape[-1])))
    else:
        NONE = -1
        pre, post = access[:skip], access[skip + 1:]
        code_pre = _first_true(conds + [c for c, _ in pre], codes + [k for _, k in pre], NONE, vshape)
        decided = code_pre != NONE
        code_not = _first_true([c for c, _ in post], [k for _, k in post], fallback, vshape)
        np.copyto(code_not, code_pre, where=decided)
        rule, _, code_rule, _ = policy.chain.access[skip]
        code_own = np.where(decided, code_pre, np.int8(code_rule))
        has_bit = rule.bits(view)  # (*B, V, nbits)
        reason_tab = np.where(has_bit, code_own[..., None], code_not[..., None])
        reason_tab = np.ascontiguousarray(np.swapaxes(reason_tab, -1, -2))  # (*B, nbits, V)
    bit = pid_bit(tids, width=policy.width)  # (*B, T)
    reason = _gather_rows(reason_tab, bit)
    allowed = _gather_rows(dec.allowed[reason_tab], bit)
    if select is None:
        return allowed, reason, view.vma_scan_select
    select_tab = _select_after(select[..., None, :], reason_tab, refill[..., None, :])
    return allowed, reason, _gather_rows(np.ascontiguousarray(select_tab), bit)


def _per_task(policy, view, tids):
    """The task x VMA matrix one task at a time (a policy whose tests may read the scanner in
    any way: user rules see each scanner as the engine shows it)."""
    *batch, ntask = tids.shape
    rows = [_decide(policy, replace(view, scanner_tid=tids[..., t:t + 1])) for t in range(ntask)]
    if not rows:
        empty = (*batch, 0, view.shape[-1])
        return np.zeros(empty, bool), np.zeros(empty, np.int8), view.vma_scan_select
    allowed = np.stack([r[0] for r in rows], axis=-2)
    reason = np.stack([r[1] for r in rows], axis=-2)
    if policy.chain.fallback is None:
        return allowed, reason, view.vma_scan_select
    return allowed, reason, np.stack([np.broadcast_to(r[2], view.shape) for r in rows], axis=-2)


def _users_view(view: ScanView) -> ScanView:
    """The view a user rule sees: every per-VMA field at (*B, V), every per-mm one at (*B, 1)."""
    vshape = view.shape
    mshape = (*vshape[:-1], 1)
    kw = {}
    for name in (*PER_VMA, *FLAGS):
        value = getattr(view, name)
        if value is not None:
            kw[name] = np.broadcast_to(np.asarray(value), vshape)
    for name in PER_MM:
        kw[name] = np.broadcast_to(np.asarray(getattr(view, name)), mshape)
    out = replace(view, **kw)
    out._memo.update(view._memo)  # the same windows and scanner: what was derived still holds
    return out


def _windows_active(value, batch: tuple, vshape: tuple, windows: int) -> np.ndarray:
    """``windows_active`` as int64 of the per-VMA shape (per-mm values broadcast over VMAs)."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        raise NumalabValueError(f"windows_active must hold integers in [1, {windows}]; got dtype {arr.dtype}")
    if arr.size and (arr.min() < 1 or arr.max() > windows):
        bad = int(arr.min()) if arr.min() < 1 else int(arr.max())
        raise NumalabValueError(f"windows_active holds {bad}; allowed: integers in [1, {windows}] (the allocated windows)")
    if arr.shape == batch and batch != vshape:
        arr = arr[..., None]  # per mm
    try:
        return np.broadcast_to(arr, vshape).astype(np.int64)
    except ValueError:
        raise NumalabValueError(
            f"windows_active has shape {np.shape(value)}; allowed: per-VMA {vshape} or per-mm {batch}"
        ) from None


def _gather_rows(table: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``out[b, t, :] = table[b, rows[b, t], :]`` for tables (*B, R, V) and rows (*B, T), as
    one contiguous row copy per (b, t)."""
    *batch, nrows, nvma = table.shape
    nb = int(np.prod(batch, dtype=np.int64))
    ntask = rows.shape[-1]
    flat_rows = (np.arange(nb, dtype=np.int64)[:, None] * nrows + rows.reshape(nb, ntask)).ravel()
    return np.take(table.reshape(nb * nrows, nvma), flat_rows, axis=0).reshape(*batch, ntask, nvma)


def _select_after(select, reason, refill):
    """RFC 2023 p2 counters after the visit: refill where selected, minus one where waiting."""
    return np.where(reason == CODE["disjoint_select"], refill,
                    np.where(reason == CODE["disjoint_wait"], select - 1, select))


def decision_matrix(policy: Policy, view: ScanView | None = None, /, *, tids, vma_names=None, **fields_):
    """The task x VMA matrix of :func:`decide` as an ``xarray.DataArray`` for heatmaps.

    ``tids`` is (T,) (broadcast to every replica) or (*B, T); the state is a :class:`ScanView`
    or its fields as in :func:`decide` (its scanner is replaced by ``tids``), with at most one
    batch axis (called ``replica``). Values are int8 reason codes; attrs ``reasons`` (code ->
    name, also as CF ``flag_values``/``flag_meanings``; a policy's user rules included) and
    ``allowed_codes`` let a plot colour by reason; coord ``allowed`` (bool) says which cells
    are scanned, ``tid`` labels the tasks.
    """
    import xarray as xr

    f, _ = _fields(view, dict(fields_, scanner_tid=np.zeros((), np.uint32)) if view is None else {})
    pids_active = f["pids_active"]
    if not isinstance(pids_active, np.ndarray) or pids_active.ndim not in (3, 4):
        raise NumalabValueError(
            f"pids_active has shape {getattr(pids_active, 'shape', '?')}; allowed: (vmas, windows, words) "
            f"or (replica, vmas, windows, words)"
        )
    batch = pids_active.shape[:-3]
    tids = check_uint32_array("tids", tids)
    if tids.ndim == 1:
        tids = np.broadcast_to(tids, (*batch, tids.shape[0]))
    allowed, reason, _ = decide(policy, **{**f, "scanner_tid": tids})
    dims = ("replica", "task", "vma") if batch else ("task", "vma")
    nvma = pids_active.shape[-3]
    coords = {"task": np.arange(tids.shape[-1]), "vma": np.arange(nvma) if vma_names is None else list(vma_names)}
    if batch:
        coords["replica"] = np.arange(batch[0])
    coords["tid"] = (dims[:-1], np.asarray(tids, dtype=np.int64))
    coords["allowed"] = (dims, allowed)
    dec = policy.decisions
    return xr.DataArray(
        reason, dims=dims, coords=coords, name="decision",
        attrs={
            "long_name": "scan decision of task_numa_work for (scanning task, VMA)",
            "units": "1",
            "kernel_name": "sched_skip_vma_numa.reason",
            "reasons": list(dec.names),
            "flag_values": list(range(len(dec.names))),
            "flag_meanings": " ".join(dec.names),
            "allowed_codes": [i for i, ok in enumerate(dec.allowed) if ok],
            "policy": policy.name,
            "policy_json": policy.to_json(),
        },
    )

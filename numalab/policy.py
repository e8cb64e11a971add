"""Scan-filter rules of ``task_numa_work()`` / ``vma_is_accessed()`` and the kernel profiles.

A :class:`Policy` is a frozen set of switches (the rules of DESIGN.md); :func:`decide` applies
them, vectorised, to every (replica, scanning task, VMA) and returns allowed-or-not with the
reason, in exactly the order of ``spec/kernel-numa-balancing.md`` §3.2/§3.3 for the profile:

1. per-VMA skips: ``unsuitable``, ``shared_ro``, ``inaccessible`` (all versions), then with
   per-VMA state (v6.4+) ``scan_delay`` (``seq != 0 and now < next_scan``), then
   ``seq_completed`` (v6.7+, ``prev_scan_seq == seq``);
2. the forced retry pass (v6.7+): the PID test is skipped -> ``forced``;
3. ``vma_is_accessed()``: [``hot`` when checked first (RFC 2023 p5)], ``early_passes``,
   ``own_pid``, ``hot``, ``shared``, ``ignore_pid_inactive`` (v6.7+), ``starvation`` (v6.12+);
4. RFC 2023 p2: a failing VMA may still pass the ``disjoint_select`` counter (else
   ``disjoint_wait``); otherwise ``pid_inactive``.

:func:`decide` does not rotate the windows: the engine calls :func:`numalab.history.rotate`
before it when ``policy.rotate_before_access`` (v6.7+, RFC 2023 p1) and the rotation is due,
after it otherwise (v6.4-v6.6, where a PID-inactive VMA is never rotated).

Adaptive histories (``Policy(history="adaptive", adapt=...)``, :mod:`numalab.adaptive`) keep
``n_max`` windows allocated (``policy.windows``) and OR only the newest ``nr_hist`` of them in
the own-PID and shared tests: :func:`decide` takes those counts as ``windows_active=`` (per
VMA or per mm) and does not update them either -- the engine calls the rule's hooks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from .errors import NumalabValueError, check_choice, check_int, check_uint32_array
from .history import MAX_WINDOWS, ROTATIONS, _check_history, newest_mask
from .hashing import pid_bit
from .adaptive import ADAPT_KEYWORDS, ADAPT_RULES, Adaptive
from .reasons import ALLOW_REASONS, ALLOWED, CODE, REASONS, SKIP_REASONS

__all__ = [
    "REASONS",
    "SKIP_REASONS",
    "ALLOW_REASONS",
    "ALLOWED",
    "CODE",
    "RULES",
    "Policy",
    "decide",
    "decision_matrix",
]

#: rule switches that ``Policy(rules=...)`` can name.
RULES = (
    "early_passes",
    "own_pid",
    "hot",
    "shared",
    "ignore_pid_partial",
    "seq_completed",
    "forced_one",
    "starvation",
    "disjoint_select",
)

# RFC 2023 p2 (task_disjoint_vma_select): VMA_4M = 1 << 22, VMA_RATELIMIT_SCALEDOWN_F = 7
_VMA_4M = 1 << 22
_VMA_RATELIMIT_SCALEDOWN_F = 7

# ------------------------------------------------------------------------------ profiles

_OFF = dict(
    windows=2, rotation="shift", width=64, numab_state=True, rotate_before_access=False,
    forced_one=False, seq_completed=False, early_passes=None, own_pid=True, hot=None,
    hot_first=False, shared=None, ignore_pid_partial=False, starvation=False, disjoint_select=False,
)


def _derive(parent: dict, **changes) -> dict:
    out = dict(parent)
    out.update(changes)
    return out


_P = {}
_P["pre-6.4"] = _derive(_OFF, numab_state=False, own_pid=False)
# ef6a22b70f, the parent of fc137c0ddab2: vma_numab_state with the scan delay, no vma_is_accessed()
_P["6.4-rc-scan-delay"] = _derive(_OFF, own_pid=False)
_P["6.4"] = _derive(_OFF, early_passes="mm")
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

_FIELD_ORDER = tuple(_OFF)


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
        The rules of ``vma_is_accessed()`` to switch on (all others off), e.g.
        ``("early_passes", "own_pid", "hot", "shared=3")`` or ``{"own_pid": True, "shared": 2}``.
        Valued rules: ``early_passes`` ("mm" or "vma"), ``hot`` and ``shared`` (popcount
        thresholds, >= 1; defaults 1 and 3). Default: the base profile's rules.
    base : str, optional
        Profile supplying everything not given (rotation placement, state, ...); default "6.12".
    width, rotation : optional overrides (64/128, "shift"/"ring").
    name : str, optional
        Defaults to the base name, plus ``+N=6`` etc. for every override.
    **switches : any other field by name (``hot_first=True``, ``forced_one=False``, ...).

    Attributes
    ----------
    name, windows, rotation, width, numab_state, rotate_before_access, forced_one,
    seq_completed, early_passes (None | "mm" | "vma"), own_pid, hot (int | None), hot_first,
    shared (int | None), ignore_pid_partial, starvation, disjoint_select, base, description,
    adapt (:class:`numalab.adaptive.Adaptive` or None for a fixed N).
    """

    name: str
    windows: int
    rotation: str
    width: int
    numab_state: bool
    rotate_before_access: bool
    forced_one: bool
    seq_completed: bool
    early_passes: str | None
    own_pid: bool
    hot: int | None
    hot_first: bool
    shared: int | None
    ignore_pid_partial: bool
    starvation: bool
    disjoint_select: bool
    base: str
    description: str = field(compare=False)
    adapt: Adaptive | None = None

    def __init__(self, history=None, rules=None, *, base=None, width=None, rotation=None, name=None,
                 adapt=None, description=None, **switches):
        adapt_kw = {k: switches.pop(k) for k in list(switches) if k in ADAPT_KEYWORDS}
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
        base = "6.12" if base is None else check_choice("base", base, _P)
        values = dict(_P[base])
        if rules is not None:
            values.update(_parse_rules(rules, values))
        unknown = sorted(set(switches) - set(_FIELD_ORDER))
        if unknown:
            raise NumalabValueError(
                f"unknown Policy switch {unknown[0]!r}; allowed: history, rules, base, width, rotation, "
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
        changed = [k for k in _FIELD_ORDER if values[k] != _P[base][k] and not (adapt_obj and k == "windows")]
        if name is None:
            labels = list(adapt_obj.labels(_n_init_default(_P[base]["windows"], adapt_obj))) if adapt_obj else []
            labels += [_label(k, values[k]) for k in changed if k not in _RULE_FIELDS]
            if any(k in _RULE_FIELDS for k in changed):
                labels.append("rules=" + ",".join(_rule_labels(values)))
            name = base if not labels else base + "+" + "+".join(labels)
        elif not isinstance(name, str) or not name:
            raise NumalabValueError(f"name={name!r}; allowed: a non-empty string")
        if description is None:
            description = _DESCRIPTIONS[base]
            if changed:
                description += " Modified: " + ", ".join(_label(k, values[k]) for k in changed) + "."
            if adapt_obj is not None:
                description += (f" Adaptive history ({adapt_obj.rule}, per {adapt_obj.scope}): "
                                f"{adapt_obj.n_min}..{adapt_obj.n_max} windows, starting at {adapt_obj.n_init}"
                                + ("" if adapt_obj.enabled else ", adaptation off") + ".")
        for key in _FIELD_ORDER:
            object.__setattr__(self, key, values[key])
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "description", str(description))
        object.__setattr__(self, "adapt", adapt_obj)

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
        ``"6.4+N=8+rules=own_pid,hot>=1,shared>=3"``, ``"6.12+no_forced_one"`` -- so
        ``Policy.parse(p.name) == p``; ``"adaptive:span"`` is accepted for ``adaptive=span``
        and a text starting with an override (``"N=4"``, ``"adaptive:span"``) takes the
        ``"6.12"`` profile. ``history`` (the CLI's ``--history`` and the sweeps' ``history``
        axis): None or ``"profile"`` keeps the text's window count, an int (or its digits) sets
        ``NR_ACCESS_PID_HIST``, ``"adaptive"`` / ``"adaptive:<rule>"`` picks an adaptive rule.
        A :class:`Policy` is returned unchanged when ``history`` is None.
        """
        if isinstance(text, Policy) and history is None:
            return text
        if isinstance(text, Policy):
            text = text.name
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
        return cls(base=base, **kw)

    @staticmethod
    def profiles() -> list[str]:
        """Names of the built-in kernel profiles, oldest first."""
        return list(_P)

    @staticmethod
    def adaptive_rules() -> list[str]:
        """Names accepted by ``adapt=`` (see :mod:`numalab.adaptive`)."""
        return list(ADAPT_RULES)

    @property
    def adaptive(self) -> bool:
        """True when the window count is chosen while running (``history="adaptive"``)."""
        return self.adapt is not None

    @staticmethod
    def describe_profiles() -> dict[str, str]:
        """Profile name -> the commits or RFC it mirrors."""
        return dict(_DESCRIPTIONS)

    def replace(self, **changes) -> "Policy":
        """A copy with some fields changed (``dataclasses.replace`` does not fit this constructor)."""
        values = {k: getattr(self, k) for k in _FIELD_ORDER}
        history = changes.pop("history", changes.pop("windows", None))
        values.pop("windows")
        adapt_kw = {k: changes.pop(k) for k in list(changes) if k in ADAPT_KEYWORDS}
        adapt = changes.pop("adapt", None)
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
        """The rules switched on, in the order ``vma_is_accessed()`` checks them."""
        return _rule_labels({k: getattr(self, k) for k in _FIELD_ORDER})

    def to_dict(self) -> dict:
        """All fields as a JSON-able dict (None kept; ``adapt`` as a dict or None)."""
        return {"name": self.name, "base": self.base, **{k: getattr(self, k) for k in _FIELD_ORDER},
                "description": self.description, "adapt": None if self.adapt is None else self.adapt.to_dict()}

    def to_attrs(self, prefix: str = "policy_") -> dict:
        """netCDF-safe attrs (str/int only: bools as 0/1, None as "none", dicts as JSON)."""
        out = {}
        for key, value in self.to_dict().items():
            if isinstance(value, bool):
                value = int(value)
            elif value is None:
                value = "none"
            elif isinstance(value, dict):
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


def _parse_token(text: str, tok: str, kw: dict) -> None:
    """One ``+``-separated override of :meth:`Policy.parse` into constructor keywords."""
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
        # the labels' spelling (hot>=1, early_passes(vma)) back to the constructor's (hot=1, ...)
        kw["rules"] = re.sub(r"(\w+)\((\w+)\)", r"\1=\2", value.replace(">=", "="))
    elif eq:
        kw[key] = _value(value)
    elif key.startswith("no_") and key[3:] in _FIELD_ORDER:
        kw[key[3:]] = False
    elif key in _FIELD_ORDER:
        kw[key] = True
    else:
        raise NumalabValueError(f"policy={text!r}: {tok!r} is not an override; allowed: N=<windows>, "
                                f"adaptive[=<rule>], rules=<list>, <switch>, no_<switch>, <field>=<value>")


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


_RULE_FIELDS = frozenset(RULES) | {"hot_first"}


def _rule_labels(v: dict) -> tuple[str, ...]:
    order = []
    if v["hot"] and v["hot_first"]:
        order.append(f"hot>={v['hot']}")
    if v["early_passes"]:
        order.append(f"early_passes({v['early_passes']})")
    if v["own_pid"]:
        order.append("own_pid")
    if v["hot"] and not v["hot_first"]:
        order.append(f"hot>={v['hot']}")
    if v["shared"]:
        order.append(f"shared>={v['shared']}")
    for key in ("ignore_pid_partial", "starvation", "disjoint_select", "seq_completed", "forced_one"):
        if v[key]:
            order.append(key)
    return tuple(order)


def _label(key, value) -> str:
    if key == "windows":
        return f"N={value}"
    if isinstance(value, bool):
        return key if value else f"no_{key}"
    return f"{key}={value}"


def _parse_rules(rules, base_values: dict) -> dict:
    """Rules spec -> the rule fields (every rule not named is switched off)."""
    if isinstance(rules, str):
        items = [r.strip() for r in rules.replace("+", ",").split(",") if r.strip()]
    elif isinstance(rules, Mapping):
        items = list(rules.items())
    elif isinstance(rules, Iterable):
        items = list(rules)
    else:
        raise NumalabValueError(f"rules={rules!r}; allowed: a string, a list of rule names or a mapping")
    out = dict(early_passes=None, own_pid=False, hot=None, shared=None, ignore_pid_partial=False,
               seq_completed=False, forced_one=False, starvation=False, disjoint_select=False,
               hot_first=base_values.get("hot_first", False))
    for item in items:
        if isinstance(item, tuple) and len(item) == 2:
            key, value = item
        elif isinstance(item, str) and "=" in item:
            key, value = item.split("=", 1)
            key, value = key.strip(), value.strip()
            value = int(value) if value.lstrip("-").isdigit() else value
        else:
            key, value = item, True
        key = check_choice("rules", key, RULES)
        if value is False or value is None:
            continue
        if key == "early_passes":
            out[key] = (base_values.get("early_passes") or "vma") if value is True else value
        elif key in ("hot", "shared"):
            out[key] = ({"hot": 1, "shared": 3}[key]) if value is True else value
        else:
            out[key] = value
    return out


def _validate(v: dict) -> dict:
    v = dict(v)
    v["windows"] = check_int("history", v["windows"], lo=1, hi=MAX_WINDOWS)
    if isinstance(v["width"], bool) or v["width"] not in (64, 128):
        raise NumalabValueError(f"width={v['width']!r} is not supported; allowed: 64 (mainline), 128 (RFC 2024)")
    v["rotation"] = check_choice("rotation", v["rotation"], ROTATIONS)
    if v["early_passes"] is not None:
        v["early_passes"] = check_choice("early_passes", v["early_passes"], ["mm", "vma"])
    for key in ("hot", "shared"):
        if v[key] is not None:
            v[key] = check_int(f"{key} threshold", v[key], lo=1, hi=v["width"])
    for key in ("numab_state", "rotate_before_access", "forced_one", "seq_completed", "own_pid",
                "hot_first", "ignore_pid_partial", "starvation", "disjoint_select"):
        if not isinstance(v[key], (bool, np.bool_)):
            raise NumalabValueError(f"{key}={v[key]!r}; allowed: True or False")
        v[key] = bool(v[key])
    if not v["numab_state"]:
        on = [k for k in RULES if v[k] not in (None, False)]
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


def _unfiltered(conds, codes, shape):
    return _first_true(conds, codes, CODE["unfiltered"], shape)


def unfiltered_reasons(shape, *, unsuitable=None, shared_ro=None, inaccessible=None) -> np.ndarray:
    """The <= v6.3 decision (no ``vma_numab_state``, so no per-VMA filter): int8 codes of
    ``shape``, the first failed flag test (``unsuitable``, ``shared_ro``, ``inaccessible``;
    bool arrays broadcastable to ``shape``, None = never) or ``unfiltered``. Unchecked: for the
    engine's scan of a pre-6.4 profile, which has no PID history to pass to :func:`decide`."""
    conds, codes = _flag_tests(unsuitable, shared_ro, inaccessible)
    return _unfiltered(conds, codes, shape)

def decide(policy: Policy, *, pids_active, idx, scanner_tid, numa_scan_seq, start_scan_seq, prev_scan_seq,
           scan_offset, vm_start, next_scan, now, nr_threads, forced=False, vma_scan_select=None,
           vm_end=None, page_bytes: int = 4096, unsuitable=None, shared_ro=None, inaccessible=None,
           windows_active=None):
    """Decide, for each scanning task and VMA, whether ``task_numa_work()`` scans the VMA.

    Shapes (``B`` = batch axes, e.g. replica; ``V`` VMAs; ``T`` tasks):

    * ``pids_active`` (*B, V, W, words) uint64 and ``idx`` (*B, V) int (ring index);
    * per VMA (*B, V): ``start_scan_seq``, ``prev_scan_seq``, ``vm_start``, ``next_scan``,
      ``vma_scan_select`` (RFC 2023 p2 counter, None = 0), ``vm_end`` (needed only for
      ``disjoint_select``), ``unsuitable``/``shared_ro``/``inaccessible`` (bool, None = False);
    * per mm (*B,): ``numa_scan_seq``, ``scan_offset``, ``now``, ``nr_threads``, ``forced`` (the
      v6.7 retry pass, ``vma_pids_forced``); scalars broadcast;
    * ``scanner_tid``: (*B,) -- one scanning thread per mm (the engine) -> outputs (*B, V); or
      (*B, T) -- the task x VMA matrix -> outputs (*B, T, V).

    * ``windows_active``: how many of the newest windows the own-PID test and the shared rule
      OR, per VMA (*B, V) or per mm (*B,), ints in ``[1, W]``. Required for an adaptive policy
      (:func:`numalab.adaptive.effective_windows` of its state); optional otherwise (None = all
      ``W`` windows, the fixed-N behaviour). The hot rule always reads the current window.

    Units: ``scan_offset``, ``vm_start``, ``vm_end`` in one address unit (pages by default,
    ``page_bytes`` bytes each; only the disjoint-select refill needs bytes); ``now`` and
    ``next_scan`` in one time unit (ms).

    Returns
    -------
    allowed : bool array
    reason : int8 array of codes into :data:`REASONS`
    vma_scan_select_new : the RFC 2023 p2 counters after this visit (same shape as ``reason``)
        when ``policy.disjoint_select``; otherwise ``vma_scan_select`` unchanged.

    Does not rotate the PID windows (see the module docstring).
    """
    if not isinstance(policy, Policy):
        raise NumalabValueError(f"policy must be a numalab Policy; got {type(policy).__name__}")
    _check_history(pids_active, name="pids_active")
    if pids_active.ndim < 3:
        raise NumalabValueError(
            f"pids_active has shape {pids_active.shape}; allowed: (*batch, vmas, windows, words)"
        )
    batch = pids_active.shape[:-3]
    nvma, windows, words = pids_active.shape[-3:]
    if windows != policy.windows or words != policy.width // 64:
        raise NumalabValueError(
            f"pids_active has {windows} windows of {words} word(s); policy {policy.name!r} needs "
            f"{policy.windows} windows of {policy.width // 64} word(s)"
        )
    vshape = (*batch, nvma)
    tid = check_uint32_array("scanner_tid", scanner_tid)
    if tid.shape == batch:
        matrix = False
    elif tid.ndim == len(batch) + 1 and tid.shape[:-1] == batch:
        matrix = True
    else:
        raise NumalabValueError(
            f"scanner_tid has shape {tid.shape}; allowed: {batch} (one scanner per mm) or "
            f"{(*batch, 'T')} (a task x VMA matrix)"
        )

    def mm(name, value):  # per-mm -> (*B, 1) so it broadcasts over VMAs
        return _as_num(name, value, batch, "per-mm")[..., None]

    seq = mm("numa_scan_seq", numa_scan_seq)
    offset = mm("scan_offset", scan_offset)
    now_ = mm("now", now)
    nthreads = mm("nr_threads", nr_threads)
    forced_ = _as_bool("forced", forced, batch, "per-mm")[..., None]
    start_seq = _as_num("start_scan_seq", start_scan_seq, vshape, "per-VMA")
    prev_seq = _as_num("prev_scan_seq", prev_scan_seq, vshape, "per-VMA")
    start = _as_num("vm_start", vm_start, vshape, "per-VMA")
    nscan = _as_num("next_scan", next_scan, vshape, "per-VMA")
    ring = _as_num("idx", idx, vshape, "per-VMA") if policy.rotation == "ring" else None
    conds, codes = [], []
    for name, flag, code in (("unsuitable", unsuitable, "unsuitable"), ("shared_ro", shared_ro, "shared_ro"),
                             ("inaccessible", inaccessible, "inaccessible")):
        if flag is not None:
            conds.append(_as_bool(name, flag, vshape, "per-VMA"))
            codes.append(CODE[code])

    return _decide_core(policy, pids_active, tid, matrix, batch, vshape, seq, offset, now_, nthreads, forced_,
                        start_seq, prev_seq, start, nscan, ring, conds, codes, vma_scan_select, vm_end, page_bytes,
                        windows_active)


def decide_unchecked(policy: Policy, *, pids_active, idx, scanner_tid, numa_scan_seq, start_scan_seq,
                     prev_scan_seq, scan_offset, vm_start, next_scan, now, nr_threads, forced=False,
                     vma_scan_select=None, vm_end=None, page_bytes: int = 4096, unsuitable=None, shared_ro=None,
                     inaccessible=None, windows_active=None):
    """:func:`decide` without its argument checks, for the engine's per-scan call.

    The caller guarantees what :func:`decide` would check: one scanner per mm (``scanner_tid``
    uint32 of the batch shape), numeric arrays broadcastable to the per-mm (*B,) and per-VMA
    (*B, V) shapes, bool flags, ``pids_active`` of the policy's windows and width. The decision
    is computed by the same code as :func:`decide`; only the validation is skipped (it costs
    more than the decision for the engine's small batches).
    """
    batch = pids_active.shape[:-3]
    vshape = (*batch, pids_active.shape[-3])

    def mm(value):
        return np.asarray(value)[..., None]

    conds, codes = _flag_tests(unsuitable, shared_ro, inaccessible)
    return _decide_core(policy, pids_active, scanner_tid, False, batch, vshape, mm(numa_scan_seq), mm(scan_offset),
                        mm(now), mm(nr_threads), mm(forced), start_scan_seq, prev_scan_seq, vm_start, next_scan,
                        idx if policy.rotation == "ring" else None, conds, codes, vma_scan_select, vm_end,
                        page_bytes, windows_active)


def _decide_core(policy, pids_active, tid, matrix, batch, vshape, seq, offset, now_, nthreads, forced_, start_seq,
                 prev_seq, start, nscan, ring, conds, codes, vma_scan_select, vm_end, page_bytes, windows_active):
    """The decision of :func:`decide` from checked arrays: per-mm values (*B, 1), per-VMA
    (*B, V) or broadcastable, ``conds``/``codes`` the VMA flag tests in kernel order."""
    nvma, windows, words = pids_active.shape[-3:]
    if not policy.numab_state:  # <= v6.3: no filter, nothing else to decide
        code = _unfiltered(conds, codes, vshape)
        reason = np.broadcast_to(code[..., None, :], (*tid.shape, nvma)) if matrix else code
        reason = np.ascontiguousarray(reason, dtype=np.int8)
        return ALLOWED[reason], reason, vma_scan_select

    # ---- per-VMA tests that come before the PID test (§3.2), in kernel order
    conds.append((seq != 0) & (now_ < nscan))
    codes.append(CODE["scan_delay"])
    if policy.seq_completed:
        conds.append(prev_seq == seq)
        codes.append(CODE["seq_completed"])
    if policy.forced_one:
        if not matrix and forced_.all():  # the v6.7 retry pass: no later test can change the answer
            code = _first_true(conds, codes, CODE["forced"], vshape)
            if policy.disjoint_select:  # a forced visit neither waits nor selects: counters unchanged
                vma_scan_select = _select_counters(vma_scan_select, vshape)
            return ALLOWED[code], code, vma_scan_select
        conds.append(forced_)
        codes.append(CODE["forced"])

    if windows_active is None:
        if policy.adapt is not None:
            raise NumalabValueError(
                f"policy {policy.name!r} has an adaptive history: pass windows_active= (the per-VMA or per-mm "
                f"window counts, numalab.adaptive.effective_windows(policy.adapt, state))"
            )
        union_all = np.bitwise_or.reduce(pids_active, axis=-2)  # (*B, V, words)
    else:  # the newest n windows of each VMA (adaptive history)
        n_act = _windows_active(windows_active, batch, vshape, windows)
        include = newest_mask(vshape, windows, n_act, ring, rotation=policy.rotation)
        union_all = np.bitwise_or.reduce(np.where(include[..., None], pids_active, np.uint64(0)), axis=-2)
    pre_own, post_own = _access_rules(policy, pids_active, union_all, ring, seq, start_seq, prev_seq, offset, start,
                                      nthreads)
    select, fallback, refill = _disjoint_fallback(policy, vma_scan_select, vshape, vm_end, start, page_bytes)
    if not any(getattr(policy, r) for r in RULES):  # ef6a22b70f: state and delay, no vma_is_accessed()
        fallback = CODE["unfiltered"]
    pre = conds + [c for c, _ in pre_own]
    pre_codes = codes + [k for _, k in pre_own]
    # the tests before the PID test decide alike for own and foreign scanners: evaluate once
    NONE = -1
    code_pre = _first_true(pre, pre_codes, NONE, vshape)
    decided = code_pre != NONE
    code_not_own = _first_true([c for c, _ in post_own], [k for _, k in post_own], fallback, vshape)
    np.copyto(code_not_own, code_pre, where=decided)
    if policy.own_pid:
        code_own = np.where(decided, code_pre, np.int8(CODE["own_pid"]))
    else:
        code_own = code_not_own

    # ---- the PID test: scanner's bit in the OR of all windows
    if not matrix:
        bit = pid_bit(tid, width=policy.width)[..., None]  # (*B, 1)
        word = bit >> 6
        sel = union_all[..., 0] if words == 1 else np.where(word == 0, union_all[..., 0], union_all[..., 1])
        own = ((sel >> (bit & 63).astype(np.uint64)) & np.uint64(1)).astype(bool)
        reason = np.where(own, code_own, code_not_own)
        allowed = ALLOWED[reason]
        if select is None:
            return allowed, reason, vma_scan_select
        return allowed, reason, _select_after(select, reason, refill)

    # Task x VMA matrix. A task enters the decision only through pid_bit(tid), so every task
    # sharing a bit decides alike: build the (bit, VMA) table once -- 64 or 128 rows, whatever
    # T is -- then copy one row per task. The only (T, V) work is that row gather.
    le = np.ascontiguousarray(union_all, dtype="<u8")  # little-endian bytes: bit i at index i
    has_bit = np.unpackbits(le.view(np.uint8), axis=-1, bitorder="little").view(bool)  # (*B, V, nbits)
    reason_tab = np.where(has_bit, code_own[..., None], code_not_own[..., None])
    reason_tab = np.ascontiguousarray(np.swapaxes(reason_tab, -1, -2))  # (*B, nbits, V)
    bit = pid_bit(tid, width=policy.width)  # (*B, T)
    reason = _gather_rows(reason_tab, bit)
    allowed = _gather_rows(ALLOWED[reason_tab], bit)
    if select is None:
        return allowed, reason, vma_scan_select
    select_tab = _select_after(select[..., None, :], reason_tab, refill[..., None, :])
    return allowed, reason, _gather_rows(np.ascontiguousarray(select_tab), bit)


def _access_rules(policy, pids_active, union_all, ring, seq, start_seq, prev_seq, offset, start, nthreads):
    """The ``vma_is_accessed()`` rules that need no scanner tid, as (condition, code) lists:
    those tested before the own-PID test and those after it, each in kernel order."""
    windows = pids_active.shape[-2]
    pre_own, post_own = [], []
    if policy.hot:
        if policy.rotation == "ring":
            cur = np.take_along_axis(pids_active, (ring % windows)[..., None, None].astype(np.int64), axis=-2)[..., 0, :]
        else:
            cur = pids_active[..., windows - 1, :]
        hot = np.bitwise_count(cur).sum(axis=-1, dtype=np.int64) >= policy.hot
        # RFC 2023 p5 checks hot first in vma_is_accessed(); RFC 2024 after the own-PID test
        (pre_own if policy.hot_first else post_own).append((hot, CODE["hot"]))
    if policy.early_passes == "mm":
        pre_own.append((seq < 2, CODE["early_passes"]))
    elif policy.early_passes == "vma":
        pre_own.append((seq - start_seq < 2, CODE["early_passes"]))
    if policy.shared:
        shared = np.bitwise_count(union_all).sum(axis=-1, dtype=np.int64) >= policy.shared
        post_own.append((shared, CODE["shared"]))
    if policy.ignore_pid_partial:
        post_own.append((offset > start, CODE["ignore_pid_inactive"]))
    if policy.starvation:
        post_own.append((seq > prev_seq + nthreads, CODE["starvation"]))
    return pre_own, post_own


def _disjoint_fallback(policy, vma_scan_select, vshape, vm_end, start, page_bytes):
    """The decision of a VMA that fails every access rule: ``pid_inactive``, or with the RFC 2023
    p2 counter ``disjoint_wait``/``disjoint_select``. Returns (counters or None, fallback code(s),
    refill or None)."""
    refill = None
    select = None
    if policy.disjoint_select:
        select = _select_counters(vma_scan_select, vshape)
        fallback = np.where(select > 0, CODE["disjoint_wait"], CODE["disjoint_select"]).astype(np.int8)
        if vm_end is None:
            raise NumalabValueError(f"vm_end is required: policy {policy.name!r} uses the disjoint_select counter")
        end = _as_num("vm_end", vm_end, vshape, "per-VMA")
        size_bytes = (end.astype(np.int64) - start.astype(np.int64)) * int(page_bytes)
        if size_bytes.size and size_bytes.min() <= 0:
            raise NumalabValueError("vm_end must be greater than vm_start for every VMA")
        # task_disjoint_vma_select(): refill = 1 + ((VMA_4M / size) >> VMA_RATELIMIT_SCALEDOWN_F)
        refill = 1 + ((_VMA_4M // size_bytes) >> _VMA_RATELIMIT_SCALEDOWN_F)
    else:
        fallback = CODE["pid_inactive"]
    return select, fallback, refill


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


def _select_counters(vma_scan_select, vshape: tuple) -> np.ndarray:
    """The RFC 2023 p2 counters as int64 of the per-VMA shape (None = all 0)."""
    if vma_scan_select is None:
        return np.zeros(vshape, np.int64)
    return _as_num("vma_scan_select", vma_scan_select, vshape, "per-VMA").astype(np.int64)


def _select_after(select, reason, refill):
    """RFC 2023 p2 counters after the visit: refill where selected, minus one where waiting."""
    return np.where(reason == CODE["disjoint_select"], refill,
                    np.where(reason == CODE["disjoint_wait"], select - 1, select))


def decision_matrix(policy: Policy, *, tids, pids_active, idx, numa_scan_seq, start_scan_seq, prev_scan_seq,
                    scan_offset, vm_start, next_scan, now, nr_threads, forced=False, vma_scan_select=None,
                    vm_end=None, page_bytes: int = 4096, unsuitable=None, shared_ro=None, inaccessible=None,
                    vma_names=None, windows_active=None):
    """The task x VMA matrix of :func:`decide` as an ``xarray.DataArray`` for heatmaps.

    ``tids`` is (T,) (broadcast to every replica) or (*B, T); the state arguments are as in
    :func:`decide`, with at most one batch axis (called ``replica``). Values are int8 reason
    codes; attrs ``reasons`` (code -> name, also as CF ``flag_values``/``flag_meanings``) and
    ``allowed_codes`` let a plot colour by reason; coord ``allowed`` (bool) says which cells
    are scanned, ``tid`` labels the tasks. ``windows_active`` as in :func:`decide` (required
    for an adaptive policy).
    """
    import xarray as xr

    if not isinstance(pids_active, np.ndarray) or pids_active.ndim not in (3, 4):
        raise NumalabValueError(
            f"pids_active has shape {getattr(pids_active, 'shape', '?')}; allowed: (vmas, windows, words) "
            f"or (replica, vmas, windows, words)"
        )
    batch = pids_active.shape[:-3]
    tids = check_uint32_array("tids", tids)
    if tids.ndim == 1:
        tids = np.broadcast_to(tids, (*batch, tids.shape[0]))
    allowed, reason, _ = decide(
        policy, pids_active=pids_active, idx=idx, scanner_tid=tids, numa_scan_seq=numa_scan_seq,
        start_scan_seq=start_scan_seq, prev_scan_seq=prev_scan_seq, scan_offset=scan_offset, vm_start=vm_start,
        next_scan=next_scan, now=now, nr_threads=nr_threads, forced=forced, vma_scan_select=vma_scan_select,
        vm_end=vm_end, page_bytes=page_bytes, unsuitable=unsuitable, shared_ro=shared_ro, inaccessible=inaccessible,
        windows_active=windows_active,
    )
    dims = ("replica", "task", "vma") if batch else ("task", "vma")
    nvma = pids_active.shape[-3]
    coords = {"task": np.arange(tids.shape[-1]), "vma": np.arange(nvma) if vma_names is None else list(vma_names)}
    if batch:
        coords["replica"] = np.arange(batch[0])
    coords["tid"] = (dims[:-1], np.asarray(tids, dtype=np.int64))
    coords["allowed"] = (dims, allowed)
    return xr.DataArray(
        reason, dims=dims, coords=coords, name="decision",
        attrs={
            "long_name": "scan decision of task_numa_work for (scanning task, VMA)",
            "units": "1",
            "kernel_name": "sched_skip_vma_numa.reason",
            "reasons": list(REASONS),
            "flag_values": list(range(len(REASONS))),
            "flag_meanings": " ".join(REASONS),
            "allowed_codes": [i for i, ok in enumerate(ALLOWED) if ok],
            "policy": policy.name,
            "policy_json": policy.to_json(),
        },
    )

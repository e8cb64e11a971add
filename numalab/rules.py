"""Scan-filter rules as data: ONE table (:data:`BUILTIN_RULES`) of the tests of
``task_numa_work()`` / ``vma_is_accessed()``, and :class:`Rule` for a researcher's own test.

Every row says what the rule tests (its function, vectorised over a :class:`ScanView`), its
parameters (:class:`Param`: default, bounds, doc), its label in policy text, the
``sched_skip_vma_numa`` decision it produces (``reason``; ``refuse`` for the fallback), where it
is tested (``stage`` and ``order``) and where it comes from (``kernel``). Parsing and printing
policy text, validation, the decision codes (:mod:`numalab.reasons`), :func:`numalab.policy.decide`
and its task x VMA matrix, the scalar reference and the widgets all read this table; adding a
built-in rule is one row, one function and its tests (``docs/architecture.md``).

Stages, in the order ``task_numa_work()`` applies them (spec ``kernel-numa-balancing.md`` §3.2):

``pre``
    checks after the scan delay and before the PID test (``seq_completed``; the v6.7 retry
    pass ``forced_one``, which skips the PID test);
``access``
    ``vma_is_accessed()``: the first test that answers True decides the visit (an ``allow``
    rule lets the scanner scan, a ``skip`` rule refuses the VMA); the own-PID test is one of them;
``fallback``
    at most one rule deciding a VMA every access test passed over (RFC 2023 p2's
    ``disjoint_select`` counter); without one the VMA is skipped as ``pid_inactive``.

A rule written in a notebook is a :class:`Rule` too (``nl.Rule("my_rule", fn)`` or the
:func:`rule` decorator): ``fn(view, **params) -> bool array`` of ``view.shape``, an ``access``
rule placed ``after=`` / ``before=`` a built-in one (default: the end of ``vma_is_accessed()``).
It is checked on synthetic views when it is made, so a rule that raises or answers with the
wrong shape or dtype is refused at once, naming it; it is registered by name, so policy text
can name it (``"6.12+my_rule"``); and it travels to sweep workers (:mod:`numalab.rule_transport`:
by reference when its module is importable there, else by value as its source).
"""

from __future__ import annotations

import inspect
import numbers
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from . import rule_transport as _transport
from .errors import NumalabValueError, check_choice
from .scanview import ScanView, synthetic_view

__all__ = ["Param", "Rule", "rule", "BUILTIN_RULES", "BY_NAME", "FIXED_DECISIONS", "RESERVED", "STAGES", "KINDS",
           "SWITCHES", "ScanView", "registered", "user_rules", "resolve", "builtin_rule"]

STAGES = ("pre", "access", "fallback")
KINDS = ("allow", "skip")
#: where a user rule goes without after=/before=: after every built-in vma_is_accessed() test
END_ORDER = 1000.0
_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


@dataclass(frozen=True)
class Param:
    """One parameter of a rule: its ``default`` (an int, a float, a bool or a str), ``doc``,
    bounds ``lo``/``hi`` (``hi="width"``: the policy's map width), ``choices`` for a str, and
    ``label``: how policy text writes a rule's *value* parameter (``"{name}>={value}"``)."""

    default: object
    doc: str = ""
    lo: float | None = None
    hi: float | str | None = None
    choices: tuple = ()
    label: str = ""

    @property
    def kind(self) -> str:
        d = self.default
        if isinstance(d, (bool, np.bool_)):
            return "bool"
        if isinstance(d, numbers.Integral):
            return "int"
        if isinstance(d, numbers.Real):
            return "number"
        return "choice"

    def check(self, name: str, value, width: int = 64):
        """``value`` if it is of this parameter's kind and within its bounds, else a
        :class:`NumalabValueError` naming ``name``."""
        from .errors import check_bool, check_int, check_number

        kind = self.kind
        if kind == "bool":
            return check_bool(name, value)
        hi = width if self.hi == "width" else self.hi
        if kind == "int":
            return check_int(name, value, lo=self.lo, hi=hi)
        if kind == "number":
            return float(check_number(name, value, lo=self.lo, hi=hi))
        return check_choice(name, value, self.choices)


def _params(spec, fn, name: str) -> tuple[tuple[str, Param], ...]:
    """A user rule's parameters: ``spec`` (name -> Param or a default) over the keyword
    parameters (with defaults) of ``fn(view, ...)``, which must accept every one of them."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    out = {}
    if sig is not None:
        kw = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        if not kw and not any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
            raise NumalabValueError(f"rule {name!r}: its function takes no view; allowed: fn(view, **params)")
        for p in kw[1:]:
            if p.default is not p.empty:
                out[p.name] = Param(p.default)
    for key, value in dict(spec or {}).items():
        out[key] = value if isinstance(value, Param) else Param(value)
    if sig is not None and not any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
        missing = [k for k in out if k not in sig.parameters]
        if missing:
            raise NumalabValueError(f"rule {name!r}: parameter {missing[0]!r} is not a keyword of its function; "
                                    f"allowed: fn(view, {', '.join(f'{k}=...' for k in out)})")
    for key, p in out.items():
        if p.kind == "choice" and not p.choices:
            out[key] = replace(p, choices=(p.default,))
        if not _NAME.fullmatch(key):
            raise NumalabValueError(f"rule {name!r}: parameter name {key!r}; allowed: lower-case identifiers")
        p.check(f"{name}.{key}", p.default)
    return tuple(out.items())


@dataclass(frozen=True, eq=False)
class Rule:
    """One scan-filter rule: a row of :data:`BUILTIN_RULES`, or a researcher's own test.

    Parameters
    ----------
    name : str
        Its name in ``Policy(rules=[...])`` and policy text, and of its counter
        (``allow_<name>`` / ``skip_<name>``): lower case, not a built-in rule or decision name.
    test : callable ``test(view, **params) -> bool array``
        Vectorised over the batch: ``view`` is a :class:`ScanView`; the answer has
        ``view.shape`` (or (*B, 1) for a per-mm answer) and dtype bool.
    kind : "allow" (True lets the scanner scan the VMA) or "skip" (True refuses it)
    doc : what it tests (default: the function's docstring)
    params : mapping name -> :class:`Param` or a default; the function's keyword defaults are
        parameters too. Calling the rule binds values: ``my_rule(k=3)``.
    after, before : a built-in ``vma_is_accessed()`` rule to test it after / before (default:
        after all of them).

    The other fields are the table's columns for built-in rules (``stage``, ``order``,
    ``reason``, ``refuse``, ``first``, ``scanner``, ``bits``, ``refill``, ``traced``,
    ``kernel``); a user rule is always an ``access`` rule whose decision is its name.
    """

    name: str
    test: Callable
    kind: str = "allow"
    doc: str = ""
    params: object = ()
    after: str | None = None
    before: str | None = None
    values: object = None
    stage: str = "access"
    order: float | None = None
    reason: str | None = None
    refuse: str | None = None
    first: str | None = None
    scanner: bool = False
    bits: Callable | None = None
    refill: Callable | None = None
    traced: bool | None = None
    kernel: str = ""
    builtin: bool = False
    _digest: list = field(default_factory=list, repr=False)

    def __post_init__(self):
        set_ = object.__setattr__
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise NumalabValueError(f"rule name={self.name!r}; allowed: a lower-case identifier of at most 40 "
                                    f"characters (it names the rule's counter, allow_<name> / skip_<name>)")
        if not callable(self.test):
            raise NumalabValueError(f"rule {self.name!r}: test={self.test!r} is not callable; allowed: "
                                    f"a function fn(view, **params) -> bool array")
        check_choice(f"rule {self.name!r} kind", self.kind, KINDS)
        check_choice(f"rule {self.name!r} stage", self.stage, STAGES)
        if not self.doc:
            set_(self, "doc", inspect.cleandoc(getattr(self.test, "__doc__", None) or "").split("\n\n")[0])
        if self.builtin:
            set_(self, "params", tuple(self.params))
            set_(self, "reason", self.reason or self.name)
            set_(self, "values", ())
        else:
            _check_user(self)
            params = _params(self.params, self.test, self.name)
            set_(self, "params", params)
            set_(self, "order", _user_order(self))
            set_(self, "reason", self.name)
            set_(self, "values", _bind(self, dict(params), self.values or {}))
        if self.traced is None:
            set_(self, "traced", self.kind == "skip")
        if not self.builtin:
            probe(self)
            _transport.register(self)

    # ---------------------------------------------------------------- identity
    @property
    def digest(self) -> str:
        """12 hex digits identifying the rule's code and declaration (its source, the constants
        it reads, its parameters' declaration; :func:`numalab.rule_transport.digest`); a built-in
        rule's is its name."""
        if self.builtin:
            return self.name
        if not self._digest:
            self._digest.append(_transport.digest(self))
        return self._digest[0]

    def _key(self):
        return (self.name, self.digest, tuple(self.bound.items()))

    def __eq__(self, other):
        return isinstance(other, Rule) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __reduce__(self):
        if self.builtin:
            return (builtin_rule, (self.name,))
        return (_transport.restore, (Rule, _transport.transport(self), self.bound))

    # ---------------------------------------------------------------- parameters and label
    @property
    def bound(self) -> dict:
        """A user rule's parameter values (``{}`` for a built-in rule: its values live in the policy)."""
        return dict(self.values or ())

    def __call__(self, **values) -> "Rule":
        """The rule with these parameter values, the others at their defaults: ``my_rule(k=3)``."""
        if self.builtin:
            raise NumalabValueError(f"rule {self.name!r} is built in: set its value in the policy "
                                    f"(Policy(rules={{{self.name!r}: ...}}))")
        bound = _bind(self, dict(self.params), values)
        out = object.__new__(Rule)
        out.__dict__.update(self.__dict__, values=bound)  # the same declaration and version, new values
        probe(out)
        return out

    def label(self, value=True) -> str:
        """The rule in policy text: ``own_pid``, ``hot>=1``, ``early_passes(vma)``, a user rule's
        ``name`` or ``name(k=3)`` (parameters that differ from their defaults)."""
        if not self.builtin:
            params = dict(self.params)
            changed = [f"{k}={v}" for k, v in self.bound.items() if v != params[k].default]
            return self.name + (f"({';'.join(changed)})" if changed else "")
        value_param = self.value_param
        if value_param is None:
            return self.name
        fmt = value_param.label or ("{name}({value})" if value_param.kind == "choice" else "{name}>={value}")
        return fmt.format(name=self.name, value=value)

    @property
    def value_param(self) -> Param | None:
        """A built-in rule's value (``hot``'s threshold, ``early_passes``' "mm"/"vma"), or None
        for an on/off rule."""
        for key, p in self.params:
            if key == self.name:
                return p
        return None

    @property
    def switch_params(self) -> tuple[tuple[str, Param], ...]:
        """A built-in rule's parameters other than its value (``hot_first``): policy fields."""
        return tuple((k, p) for k, p in self.params if k != self.name)

    @property
    def off(self):
        """A built-in rule's policy value when it is off: None for a valued rule, else False."""
        return None if self.value_param is not None else False

    def order_of(self, values: Mapping) -> float:
        """Where the rule is tested within its stage, given the policy's values (``first``)."""
        if self.first is not None and values.get(self.first):
            return 0.0
        return float(self.order)

    def test_kwargs(self, value) -> dict:
        """The keywords ``test`` is called with: a built-in rule's value, a user rule's bound values."""
        if not self.builtin:
            return self.bound
        return {} if self.value_param is None else {self.name: value}

    def evaluate(self, view: ScanView, value=True) -> np.ndarray:
        """``test(view, ...)`` checked: a user rule that raises or answers with a wrong shape or
        dtype raises one :class:`NumalabValueError` naming it."""
        kwargs = self.test_kwargs(value)
        if self.builtin:
            return self.test(view, **kwargs)
        try:
            out = self.test(view, **kwargs)
        except Exception as exc:
            raise NumalabValueError(f"rule {self.name!r} raised {type(exc).__name__}: {exc}") from exc
        return _check_answer(self, out, view.shape)

    def describe(self) -> dict:
        """The rule's row: name, doc, kind, stage, order, reason (and refuse), its label's
        form, parameters with default, bounds and doc, where it comes from."""
        return {"name": self.name, "doc": self.doc, "kind": self.kind, "stage": self.stage, "order": self.order,
                "first": self.first, "reason": self.reason, "refuse": self.refuse, "label": self.label(
                    self.value_param.default if self.value_param is not None else True),
                "params": {k: dict(default=p.default, lo=p.lo, hi=p.hi, choices=list(p.choices), doc=p.doc)
                           for k, p in self.params},
                "kernel": self.kernel, "builtin": self.builtin}

    def __repr__(self) -> str:
        where = self.kernel or (f"user rule {self.digest}")
        vp = self.value_param if self.builtin else None
        label = self.label(vp.default if vp is not None else True)
        return f"Rule({label!r}, {self.kind}, {self.stage} #{self.order:g}: {where})"


def rule(fn=None, /, **options):
    """Decorator form of :class:`Rule`: ``@nl.rule`` or ``@nl.rule(kind="skip", after="own_pid")``
    over ``def my_rule(view, k=2): ...`` makes ``my_rule`` a Rule named after the function."""
    if fn is None:
        return lambda f: Rule(options.pop("name", f.__name__), f, **options)
    return Rule(options.pop("name", fn.__name__), fn, **options)


# ------------------------------------------------------------------------------ user rules


def _check_user(r: Rule) -> None:
    for col in ("refuse", "first", "bits", "refill", "reason", "order"):
        if getattr(r, col) not in (None, False):
            raise NumalabValueError(f"rule {r.name!r}: {col}= is a column of the built-in table; "
                                    f"allowed for a user rule: kind, doc, params, after, before")
    if r.stage != "access" or r.scanner or r.kernel or r.traced is not None:
        raise NumalabValueError(f"rule {r.name!r}: a user rule is a vma_is_accessed() test (stage 'access'); "
                                f"allowed: kind, doc, params, after, before")
    if r.name in RESERVED:
        raise NumalabValueError(f"rule name={r.name!r} is taken (a built-in rule, decision or policy field); "
                                f"allowed: any other lower-case identifier")


def _user_order(r: Rule) -> float:
    if r.after is not None and r.before is not None:
        raise NumalabValueError(f"rule {r.name!r}: give after= or before=, not both")
    place = r.after if r.after is not None else r.before
    if place is None:
        return END_ORDER
    access = [b.name for b in BUILTIN_RULES if b.stage == "access"]
    check_choice(f"rule {r.name!r} {'after' if r.after is not None else 'before'}", place, access)
    return BY_NAME[place].order + (0.5 if r.after is not None else -0.5)


def _bind(r: Rule, params: dict, values: Mapping) -> tuple:
    if not isinstance(values, Mapping):
        raise NumalabValueError(f"rule {r.name!r}: values={values!r}; allowed: a mapping of parameter values")
    unknown = sorted(set(values) - set(params))
    if unknown:
        raise NumalabValueError(f"rule {r.name!r} has no parameter {unknown[0]!r}; allowed: "
                                f"{', '.join(params) or 'none'}")
    return tuple((k, p.check(f"{r.name}.{k}", values.get(k, p.default))) for k, p in params.items())


def _check_answer(r: Rule, out, shape: tuple) -> np.ndarray:
    arr = np.asarray(out)
    if arr.dtype != np.bool_:
        raise NumalabValueError(f"rule {r.name!r} answered with dtype {arr.dtype}; allowed: a bool array "
                                f"(e.g. view.popcount(view.union()) >= k)")
    mm = (*shape[:-1], 1)
    if arr.shape not in (shape, mm):
        raise NumalabValueError(f"rule {r.name!r} answered with shape {arr.shape}; allowed: the view's shape "
                                f"{shape} (one answer per VMA) or {mm} (one per mm)")
    return arr


def probe(r: Rule, *, windows: int = 4, width: int = 64, rotation: str = "ring", windows_active=None) -> None:
    """Run a user rule on two synthetic views (a batch of 2 x 3 VMAs and the scalar
    reference's one VMA): one clear error naming it if it raises or answers badly."""
    for batch, nvma, seed in (((2,), 3, 0), ((), 1, 1)):
        r.evaluate(synthetic_view(batch, nvma, windows=windows, width=width, rotation=rotation,
                                  windows_active=windows_active, seed=seed))


def registered(name: str):
    """The user rule registered under ``name`` (the latest made), or None."""
    return _transport.REGISTRY.get(name)


def user_rules() -> list[str]:
    """Names of the user rules made in this process."""
    return list(_transport.REGISTRY)


def builtin_rule(name: str) -> Rule:
    """The built-in rule ``name`` (how a pickled built-in rule is found again)."""
    return BY_NAME[check_choice("rule", name, BY_NAME)]


def resolve(spec) -> Rule:
    """A Rule from a Rule, a registered name, or ``"package.module:function"`` (the CLI's
    ``--rule``: the attribute is a Rule or a function ``fn(view, **params)``, named after it)."""
    if isinstance(spec, Rule):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise NumalabValueError(f"rule={spec!r}; allowed: a numalab Rule, a rule name or 'package.module:function'")
    spec = spec.strip()
    if ":" not in spec:
        got = registered(spec)
        if got is None:
            raise NumalabValueError(f"rule {spec!r} is not known; allowed: a built-in rule "
                                    f"({', '.join(BY_NAME)}), a rule made in this process "
                                    f"({', '.join(user_rules()) or 'none'}) or 'package.module:function'")
        return got
    return _transport.load(Rule, spec)


# ------------------------------------------------------------------------------ the table
# Each test reads the view only; the kernel's own words are in the docs.


def _seq_completed(view):
    """``prev_scan_seq == numa_scan_seq``: the VMA was scanned completely in this pass."""
    return view.prev_scan_seq == view.numa_scan_seq


def _forced(view):
    """The retry pass of ``vma_pids_forced``: one VMA scanned without the PID test."""
    return np.asarray(view.forced)


def _early_passes(view, early_passes):
    """The first two passes scan unconditionally: of the mm (``numa_scan_seq < 2``, v6.4) or
    since the VMA got its state (``numa_scan_seq - start_scan_seq < 2``, v6.8)."""
    if early_passes == "mm":
        return view.numa_scan_seq < 2
    return view.numa_scan_seq - view.start_scan_seq < 2


def _own_pid(view):
    """The scanner's hashed PID is in the OR of the windows (``test_bit(pid_bit, pids)``)."""
    return view.own_pid


def _own_pid_bits(view):
    """(*B, V, nbits): the own-PID answer for every bit a scanner may hash to (the task x
    VMA matrix decides each task by its bit)."""
    le = np.ascontiguousarray(view.union(), dtype="<u8")  # little-endian bytes: bit i at index i
    return np.unpackbits(le.view(np.uint8), axis=-1, bitorder="little").view(bool)


def _hot(view, hot):
    """Someone faulted lately: ``bitmap_weight(pids_active[current]) >= hot``."""
    return view.popcount(view.window(0)) >= hot


def _shared(view, shared):
    """Many threads use the VMA: ``bitmap_weight(OR of the windows) >= shared`` (SHARED_VMA_THRESH)."""
    return view.popcount(view.union()) >= shared


def _ignore_pid_partial(view):
    """Finish a partly scanned VMA: ``numa_scan_offset > vm_start`` (NUMAB_SKIP_IGNORE_PID)."""
    return view.scan_offset > view.vm_start


def _starvation(view):
    """A VMA refused for longer than the mm has threads: ``numa_scan_seq > prev_scan_seq + nr_threads``."""
    return view.numa_scan_seq > view.prev_scan_seq + view.nr_threads


#: RFC 2023 p2 (task_disjoint_vma_select): VMA_4M = 1 << 22, VMA_RATELIMIT_SCALEDOWN_F = 7
_VMA_4M = 1 << 22
_VMA_RATELIMIT_SCALEDOWN_F = 7


def _select_counters(view) -> np.ndarray:
    """The RFC 2023 p2 counters as int64 of the view's shape (None = all 0)."""
    if view.vma_scan_select is None:
        return np.zeros(view.shape, np.int64)
    return np.broadcast_to(np.asarray(view.vma_scan_select), view.shape).astype(np.int64)


def _disjoint_select(view):
    """A VMA every access test refused is scanned once its select counter is down to 0."""
    return _select_counters(view) == 0


def _disjoint_refill(view):
    """The counter after a select: ``1 + ((VMA_4M / size) >> VMA_RATELIMIT_SCALEDOWN_F)``."""
    if view.vm_end is None:
        raise NumalabValueError("vm_end is required: the policy uses the disjoint_select counter")
    size_bytes = (np.asarray(view.vm_end).astype(np.int64) - np.asarray(view.vm_start).astype(np.int64)) \
        * int(view.page_bytes)
    if size_bytes.size and size_bytes.min() <= 0:
        raise NumalabValueError("vm_end must be greater than vm_start for every VMA")
    return 1 + ((_VMA_4M // size_bytes) >> _VMA_RATELIMIT_SCALEDOWN_F)


_B = dict(builtin=True)

#: THE table of built-in rules, in policy-field order. ``order`` places a rule within its stage
#: (``hot`` moves to 0 when ``hot_first``); labels list the access rules in order, then the
#: fallback, then the pre-PID-test checks.
BUILTIN_RULES = (
    Rule("forced_one", _forced, stage="pre", order=20, reason="forced",
         kernel="v6.7 (Mel Gorman): vma_pids_forced, one PID-inactive VMA scanned when a pass skipped some", **_B),
    Rule("seq_completed", _seq_completed, kind="skip", stage="pre", order=10,
         kernel="v6.7 f169c62ff7cd: prev_scan_seq, NUMAB_SKIP_SEQ_COMPLETED", **_B),
    Rule("early_passes", _early_passes, order=20,
         params=(("early_passes", Param("vma", "passes counted from the mm's start (mm, v6.4) or the VMA's "
                                        "(vma, v6.8 84db47ca7146)", choices=("mm", "vma"))),),
         kernel="v6.4 fc137c0ddab2 (mm), v6.8 84db47ca7146 (vma): scan unconditionally while seq < 2", **_B),
    Rule("own_pid", _own_pid, order=30, scanner=True, bits=_own_pid_bits,
         kernel="v6.4 fc137c0ddab2 vma_is_accessed(): the scanner's PID bit in pids_active[0] | [1]", **_B),
    Rule("hot", _hot, order=40, first="hot_first",
         params=(("hot", Param(1, "bits in the current window that make a VMA hot", lo=1, hi="width")),
                 ("hot_first", Param(False, "test hot before every other vma_is_accessed() test (RFC 2023 p5)"))),
         kernel="RFC 2023 p5 'Allow recently accessed VMAs to be scanned'; RFC 2024 PATCH 1", **_B),
    Rule("shared", _shared, order=50,
         params=(("shared", Param(3, "bits in the OR of the windows that make a VMA shared (SHARED_VMA_THRESH)",
                                  lo=1, hi="width")),),
         kernel="RFC 2023 p6 'Allow scanning of shared VMAs'; RFC 2024 PATCH 1", **_B),
    Rule("ignore_pid_partial", _ignore_pid_partial, order=60, reason="ignore_pid_inactive", traced=True,
         kernel="v6.7 b7a5b537c55c: finish a partly scanned VMA (NUMAB_SKIP_IGNORE_PID)", **_B),
    Rule("starvation", _starvation, order=70,
         kernel="v6.12 f22cde4371f3: starvation horizon seq > prev_scan_seq + nr_threads", **_B),
    Rule("disjoint_select", _disjoint_select, stage="fallback", order=0, refuse="disjoint_wait", traced=False,
         refill=_disjoint_refill,
         kernel="RFC 2023 p2 'Add disjoint vma unconditional scan logic' (vma_scan_select counter)", **_B),
)
BY_NAME = {r.name: r for r in BUILTIN_RULES}
#: every policy field the table defines: each rule's switch, then its other parameters
SWITCHES = tuple(n for r in BUILTIN_RULES for n in (r.name, *(k for k, _ in r.switch_params)))

#: the decisions of task_numa_work's checks that are no rule: (name, kind, pid_test). The VMA
#: flag tests and the scan delay come before every rule, ``pid_inactive`` is the refusal of a
#: VMA every vma_is_accessed() test passed over, ``unfiltered`` the scan of a kernel (or
#: policy) without the filter.
FIXED_DECISIONS = (
    ("unsuitable", "skip", False),
    ("shared_ro", "skip", False),
    ("inaccessible", "skip", False),
    ("scan_delay", "skip", False),
    ("pid_inactive", "skip", True),
    ("unfiltered", "allow", False),
)
#: names a user rule may not take: the table's rules, their parameters and decisions, and the
#: fixed decisions (policy text's own words are refused by numalab.policy)
RESERVED = frozenset({*SWITCHES, *(r.reason for r in BUILTIN_RULES), *(r.refuse for r in BUILTIN_RULES if r.refuse),
                      *(name for name, _, _ in FIXED_DECISIONS)})

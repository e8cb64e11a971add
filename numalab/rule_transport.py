"""How a user rule (:class:`numalab.rules.Rule`) is named, identified and sent to another process.

* **Registry.** Every user rule made in a process is registered by name (the latest made wins,
  so re-running a notebook cell replaces the rule), so policy text can name it:
  ``Policy.parse("6.12+my_rule")``.
* **Identity.** :func:`digest` is 12 hex digits over the rule's source (decorator lines left
  out), the constants and module names it reads as globals or closure variables, and its
  declaration (name, kind, place, parameters). An edited rule is a new digest, so a sweep's
  cache never reuses points an older version computed (the sweep writes the digest into the
  point's policy text: ``"6.12+my_rule@<digest>"``).
* **Transport.** A pickled rule carries both ways to rebuild it: by reference
  (``module:qualname``, when the function's module is importable) and by value (its source
  text, plus the constants and module names it reads). The receiving process uses the first
  that rebuilds the same digest: the module when it has the same code, else the source (so a
  worker without the module, or with another version of it, still runs the rule that was
  sent). A rule defined in a notebook travels by value. No third-party pickler is involved:
  the source is executed in a fresh namespace holding only those modules and constants, with
  the same trust as the pickle that carried it. A rule that can travel neither way (its
  function reads a global that is neither a module nor a constant, and its module is not
  importable) is refused when it is pickled -- and by the sweep before any work -- with one
  error naming the rule and the global.

Imports nothing from numalab but its errors: the :class:`~numalab.rules.Rule` class is passed
in by the caller (and travels in the pickle by reference).
"""

from __future__ import annotations

import ast
import builtins
import dis
import hashlib
import importlib
import inspect
import json
import linecache
import marshal
import numbers
import textwrap
import types

from .errors import NumalabValueError

__all__ = ["REGISTRY", "VERSIONS", "register", "version", "digest", "source_of", "reads", "transport", "restore",
           "load", "check_travels", "transports"]

#: name -> the latest user rule made under that name in this process
REGISTRY: dict = {}
#: (name, digest) -> that version of the rule (every version made or received here)
VERSIONS: dict = {}


def register(rule):
    """Make ``rule`` the one ``name`` refers to (kept when the same version is registered)."""
    cur = REGISTRY.get(rule.name)
    if cur is None or cur.digest != rule.digest:
        REGISTRY[rule.name] = rule
    VERSIONS.setdefault((rule.name, rule.digest), rule)
    return REGISTRY[rule.name]


def version(name: str, pin: str):
    """The version ``pin`` (a digest) of rule ``name`` made or received in this process, or None."""
    return VERSIONS.get((name, pin))


def transports() -> tuple:
    """``(transport, values)`` of every rule version this process knows that can travel (what a
    sweep task carries to its worker)."""
    out = []
    for rule in list(VERSIONS.values()):
        try:
            out.append((transport(rule), rule.bound))
        except NumalabValueError:  # a sweep that names it was refused before any work
            continue
    return tuple(out)


# ------------------------------------------------------------------------------ identity


def source_of(fn) -> str | None:
    """The ``def`` of ``fn`` as text (dedented, decorator lines left out), or None when it has
    none (a lambda, a builtin, a function typed where no source is kept)."""
    src = getattr(fn, "__numalab_source__", None)
    if src is not None:
        return src
    try:
        text = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:  # a lambda inside a longer expression
        return None
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.FunctionDef) or node.name != getattr(fn, "__name__", None):
        return None
    return "".join(text.splitlines(True)[node.lineno - 1:node.end_lineno])


def _global_names(code) -> set:
    names = set()
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            names.add(ins.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _constant(value) -> bool:
    if value is None or isinstance(value, (bool, numbers.Number, str, bytes)):
        return True
    if isinstance(value, (tuple, frozenset)):
        return all(_constant(v) for v in value)
    return False


def reads(fn) -> tuple[dict, dict, dict]:
    """What ``fn`` reads from outside its body: ``(modules, constants, other)``, each name ->
    the module's name / the value / the value's type name. Globals and closure variables
    count; builtins do not."""
    modules, constants, other = {}, {}, {}
    code = getattr(fn, "__code__", None)
    if code is None:
        return modules, constants, other
    glob = getattr(fn, "__globals__", {})
    found = {n: glob[n] for n in sorted(_global_names(code)) if n in glob}
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            found[name] = cell.cell_contents
        except ValueError:  # an empty cell
            other[name] = "unbound"
    for name, value in found.items():
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
        elif _constant(value):
            constants[name] = value
        elif not (name in vars(builtins) and value is vars(builtins)[name]):
            other[name] = type(value).__name__
    return modules, constants, other


def _declaration(rule) -> dict:
    return {"name": rule.name, "kind": rule.kind, "after": rule.after, "before": rule.before,
            "params": [[k, repr(p)] for k, p in rule.params]}


def digest(rule) -> str:
    """12 hex digits of sha256 over the rule's source, what it reads and its declaration."""
    fn = rule.test
    src = source_of(fn)
    modules, constants, other = reads(fn)
    if src is None:  # no source: the compiled code (or the callable's name) stands for it
        code = getattr(fn, "__code__", None)
        src = marshal.dumps(code).hex() if code is not None else \
            f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"
    record = {**_declaration(rule), "source": src, "modules": modules,
              "constants": {k: repr(v) for k, v in constants.items()}, "other": sorted(other)}
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:12]


# ------------------------------------------------------------------------------ transport


def _reference(fn) -> tuple[str, str] | None:
    """``(module, qualname)`` when importing the module gives back ``fn`` (or a rule of it)."""
    mod, qual = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not mod or mod == "__main__" or "<locals>" in qual or mod.startswith("numalab_rule_"):
        return None
    try:
        obj = _resolve(mod, qual)
    except Exception:
        return None
    return (mod, qual) if obj is fn or getattr(obj, "test", None) is fn else None


def _resolve(module: str, qualname: str):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _why_not_by_value(rule) -> str | None:
    fn = rule.test
    if getattr(fn, "__code__", None) is None:
        return "it is not a Python function"
    if source_of(fn) is None:
        return "its source is not available (define it with def, in a notebook cell or a file)"
    other = reads(fn)[2]
    if other:
        name, kind = next(iter(other.items()))
        return (f"it reads the global {name!r} (a {kind}), which is neither a module nor a constant; make it a "
                f"parameter of the rule")
    return None


def check_travels(rule) -> None:
    """Refuse, naming the rule, one that could not be rebuilt in another process."""
    transport(rule)


def transport(rule) -> dict:
    """Everything another process needs to rebuild ``rule`` (module-level data only)."""
    ref = _reference(rule.test)
    why = _why_not_by_value(rule)
    if ref is None and why is not None:
        raise NumalabValueError(
            f"rule {rule.name!r} cannot travel to another process (a sweep worker or a dask cluster): its "
            f"function is not importable there (defined in {getattr(rule.test, '__module__', '?')}) and it "
            f"cannot be sent as its source: {why}; or define the rule in an importable module")
    modules, constants, _ = reads(rule.test)
    return {"name": rule.name, "kind": rule.kind, "doc": rule.doc, "after": rule.after, "before": rule.before,
            "params": [(k, p) for k, p in rule.params], "digest": rule.digest, "ref": ref,
            "source": None if why is not None else source_of(rule.test),
            "fn_name": getattr(rule.test, "__name__", None), "modules": modules, "constants": constants}


def _from_source(t: dict):
    name, src = t["name"], t["source"]
    filename = f"<numalab rule {name} {t['digest']}>"
    ns = {"__name__": f"numalab_rule_{name}", "__builtins__": builtins}
    for key, module in t["modules"].items():
        ns[key] = importlib.import_module(module)
    ns.update(t["constants"])
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), ns)  # noqa: S102 -- the sender's own rule, as trusted as its pickle
    fn = ns[t["fn_name"]]
    fn.__numalab_source__ = src
    return fn


def restore(rule_cls, t: dict, values: dict):
    """The rule a :func:`transport` describes, with parameter ``values`` (unpickling calls this)."""
    cur = VERSIONS.get((t["name"], t["digest"]))
    if cur is not None:
        return cur(**values)
    tried = []
    for how in ("ref", "source"):
        if t[how] is None:
            continue
        try:
            fn = _resolve(*t["ref"]) if how == "ref" else _from_source(t)
            fn = getattr(fn, "test", fn)
            rule = rule_cls(t["name"], fn, kind=t["kind"], doc=t["doc"], params=dict(t["params"]), after=t["after"],
                            before=t["before"], values=values)
        except Exception as exc:
            tried.append(f"{how}: {type(exc).__name__}: {exc}")
            continue
        if rule.digest == t["digest"]:
            return rule
        tried.append(f"{how}: version {rule.digest}, not {t['digest']}")
    raise NumalabValueError(f"rule {t['name']!r} (version {t['digest']}) cannot be rebuilt here: {'; '.join(tried)}")


def load(rule_cls, spec: str):
    """The rule ``"package.module:function"`` names (the CLI's ``--rule``)."""
    module, _, qual = spec.partition(":")
    if not module or not qual:
        raise NumalabValueError(f"rule={spec!r}; allowed: 'package.module:function'")
    try:
        mod = importlib.import_module(module)
    except Exception as exc:  # ImportError, or the module's own error (a SyntaxError, ...)
        raise NumalabValueError(f"rule={spec!r}: module {module!r} cannot be imported "
                                f"({type(exc).__name__}: {exc})") from None
    try:
        obj = _resolve(mod.__name__, qual)
    except AttributeError:
        raise NumalabValueError(f"rule={spec!r}: {module!r} has no attribute {qual!r}") from None
    if isinstance(obj, rule_cls):
        return obj
    if callable(obj):
        return rule_cls(getattr(obj, "__name__", qual.rsplit(".", 1)[-1]), obj)
    raise NumalabValueError(f"rule={spec!r} is a {type(obj).__name__}; allowed: a numalab Rule or a function "
                            f"fn(view, **params) -> bool array")

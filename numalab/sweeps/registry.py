"""The runner registry: how a model plugs into the sweep machinery.

A model describes itself with a :class:`Runner` (its parameters as :class:`Param`, a module-level
run function) and registers it with :func:`register_runner` when its runner module is imported.
The machinery knows no model: it finds a runner by kind through :func:`get_runner`, which imports
the runner module of a built-in kind (listed in :data:`BUILTIN_RUNNERS`) the first time it is
asked for.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from numalab.errors import NumalabValueError, check_choice, check_str

__all__ = ["Param", "Runner", "register_runner", "runners", "get_runner", "names_or_str", "BUILTIN_RUNNERS"]

#: Where the built-in runners live: kind -> the module that registers it when imported. This
#: lists modules only; how a model is run is that module's business, not the machinery's.
BUILTIN_RUNNERS = {
    "numa": "numalab.engine.runner",
    "futex": "numalab.futex.runner",
}

_REQUIRED = object()


@dataclass(frozen=True)
class Param:
    """One parameter a runner accepts in a grid.

    Parameters
    ----------
    name : str
        Grid key and coordinate name.
    default : str | int | float
        Value used when the grid does not mention the parameter (part of every point's hash,
        so a changed default never reuses old results). Omit for a required parameter.
    check : callable(name, value) -> value
        Validates one value and returns it normalised to ``str``, ``int`` or ``float``; raises
        :class:`~numalab.errors.NumalabValueError` naming the parameter otherwise.
    units, long_name, kernel_name : str
        Coordinate attrs.
    """

    name: str
    check: Callable[[str, object], object]
    default: object = _REQUIRED
    units: str = "1"
    long_name: str = ""
    kernel_name: str = ""

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    def coord_attrs(self) -> dict:
        attrs = {"units": self.units, "long_name": self.long_name or self.name}
        if self.kernel_name:
            attrs["kernel_name"] = self.kernel_name
        return attrs


@dataclass(frozen=True)
class Runner:
    """How the sweep machinery drives one model (the "point runner" interface).

    Parameters
    ----------
    kind : str
        Name used by ``sweep(kind=...)`` and ``numalab sweep --kind``.
    parameters : sequence of Param, or a callable returning one
        Every parameter a grid may name (a callable is resolved lazily, so a runner can read
        the option list from a model module that is imported only when used).
    run : callable(points) -> xarray.Dataset | list of xarray.Dataset
        A **module-level** function (it is pickled by reference to worker processes). ``points``
        is a list of dicts, each holding every parameter plus ``"seed"``; all points of one call
        differ only in ``batch_vary`` and ``seed``. Returns either one Dataset with a leading ``point``
        dim in the order of ``points``, or a list with one Dataset per point. A point's
        result must not depend on the other points of the call.
    batch_vary : sequence of str
        Parameters that may differ between the points of one ``run`` call (for the engine: the
        policy knobs). Points are grouped by every *other* parameter, so all points of a call
        share the array shapes.
    description : str
        One line for ``numalab sweep --help``.
    requires : sequence of str
        Modules the run function imports; checked before any work is sent out.
    prepare : callable(values), optional
        Called once in the calling process with ``{name: [normalised values]}`` before any
        work is sent out, to refuse combinations the per-value checks cannot see (an unknown
        profile, a workload that does not fit the topology) with a clear error.
    """

    kind: str
    parameters: Sequence[Param] | Callable[[], Sequence[Param]]
    run: Callable[[list[dict]], object]
    batch_vary: Sequence[str] = ()
    description: str = ""
    requires: Sequence[str] = ()
    prepare: Callable[[dict], None] | None = None

    def missing(self) -> str | None:
        """Why this runner cannot run here (a model module that does not import), or None."""
        for mod in self.requires:
            try:
                importlib.import_module(mod)
            except ImportError as exc:
                return f"{mod} cannot be imported ({exc})"
        return None

    def params(self) -> dict[str, Param]:
        params = self.parameters() if callable(self.parameters) else self.parameters
        return {p.name: p for p in params}


_RUNNERS: dict[str, Runner] = {}


def register_runner(runner: Runner, *, replace: bool = False) -> Runner:
    """Make ``runner`` available as ``sweep(kind=runner.kind)``.

    This is the hook for new models (and for test runners): define the run function at module
    level in an importable module, build a :class:`Runner` and register it when that module
    is imported. Registering an existing kind needs ``replace=True``.
    """
    if not isinstance(runner, Runner):
        raise NumalabValueError(f"runner={runner!r} must be a numalab.sweeps.Runner")
    check_str("kind", runner.kind)
    builtin = BUILTIN_RUNNERS.get(runner.kind)
    if builtin is not None and runner.kind not in _RUNNERS and builtin not in sys.modules:
        _load(runner.kind)  # the built-in registers first, so a clash is refused as for any kind
    if runner.kind in _RUNNERS and not replace and _RUNNERS[runner.kind] is not runner:
        raise NumalabValueError(f"kind={runner.kind!r} is already registered; pass replace=True")
    _RUNNERS[runner.kind] = runner
    return runner


def _load(kind: str) -> None:
    """Import the module of a built-in kind (it registers its runner)."""
    module = BUILTIN_RUNNERS[kind]
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise NumalabValueError(f"kind={kind!r} cannot be loaded: {module} does not import ({exc})") from None
    if kind not in _RUNNERS:
        raise NumalabValueError(f"kind={kind!r}: importing {module} registered no runner of that kind")


def runners() -> list[str]:
    """Names of the runner kinds: the built-in ones, then those registered by other modules."""
    return list(dict.fromkeys([*BUILTIN_RUNNERS, *_RUNNERS]))


def get_runner(kind: str) -> Runner:
    """The registered :class:`Runner` for ``kind`` (a built-in kind is imported on first use)."""
    check_choice("kind", kind, runners())
    if kind not in _RUNNERS:
        _load(kind)
    return _RUNNERS[kind]


def names_or_str(label: str, lister: Callable[[], Iterable[str]] | None):
    """A parameter check that accepts known names when the model module can list them, else any
    non-empty string (validated when run)."""

    def check(name, value):
        check_str(name, value)
        if lister is not None:
            try:
                known = list(lister())
            except Exception:  # model module not importable yet: validated when run
                return value
            check_choice(name, value, known)
        return value

    check.__doc__ = f"one of the known {label}"
    return check

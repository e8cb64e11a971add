"""An explorer's view as files, to publish and to regenerate: :func:`export_view` writes the
figure (:func:`numalab.plots.save`: PDF, SVG and PNG, fonts embedded), the view's parameters
(``view.json``: the explorer, its controls, its constructor options, the numbers shown) and the
Dataset the figure was drawn from (``data.nc``, NetCDF-4). :func:`regenerate` draws the same
figure again from those two files without running the model; :func:`reopen` builds the explorer
again at that view (it recomputes, so the numbers come from the numalab installed now).

Every explorer's "export" button calls :func:`export_view` with the defaults: a folder
``numalab-exports/<explorer>-<view>/`` under the current directory."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import numpy as np
import xarray as xr

from ..errors import NumalabValueError

__all__ = ["export_view", "regenerate", "reopen", "load_view", "EXPORT_FORMATS", "VIEW_FILE", "DATA_FILE"]

VIEW_FILE = "view.json"
DATA_FILE = "data.nc"
#: the figure formats the export button writes (vector for papers, PNG for slides and mail)
EXPORT_FORMATS = ("pdf", "svg", "png")
#: constructor arguments that say how to compute, not what: never part of a view
_NOT_VIEW = ("self", "live", "workers")


def view_options(explorer) -> dict:
    """The explorer's constructor options that are not controls (e.g. HistoryExplorer's
    ``workload_options`` and engine options, FutexExplorer's ``topology``), read back from the
    attributes of the same name."""
    out = {}
    for name, p in inspect.signature(type(explorer).__init__).parameters.items():
        if name in _NOT_VIEW or name in explorer.controls:
            continue
        if p.kind is p.VAR_KEYWORD:
            out.update(getattr(explorer, name, None) or {})
        elif hasattr(explorer, name):
            out[name] = getattr(explorer, name)
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", text).strip("-")[:120] or "view"


def default_dir(explorer) -> Path:
    """``numalab-exports/<explorer>-<control values>`` under the current directory."""
    values = "-".join(str(v) for v in explorer.params.values())
    return Path.cwd() / "numalab-exports" / _slug(f"{type(explorer).__name__.lower()}-{values}")


def _jsonable(v):
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return v.item()
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def export_view(explorer, directory=None, *, formats=EXPORT_FORMATS, dpi: int = 300) -> Path:
    """Write the explorer's current view to ``directory`` (default :func:`default_dir`):
    ``figure.<fmt>`` for each of ``formats`` (via :func:`numalab.plots.save` at ``dpi``),
    ``view.json`` and ``data.nc``. Returns the directory. A view the model refused (no figure)
    cannot be exported."""
    from .. import __version__, plots
    from ..storage import write_netcdf, write_text

    if explorer.error is not None or explorer.result is None or getattr(explorer, "_fig", None) is None:
        raise NumalabValueError(f"{type(explorer).__name__} has no view to export"
                                + (f" ({explorer.error})" if explorer.error else "")
                                + "; allowed: export after an answer is shown")
    out = Path(directory) if directory is not None else default_dir(explorer)
    files = [plots.save(explorer._fig, out / f"figure.{fmt}", dpi=dpi).name for fmt in formats]
    write_netcdf(explorer.to_dataset(explorer.result), out / DATA_FILE)
    view = {
        "explorer": type(explorer).__name__,
        "params": _jsonable(explorer.params),
        "options": _jsonable(view_options(explorer)),
        "title": explorer.summary_title(explorer.params),
        "shown": _jsonable(explorer.shown_values()),
        "figure": files,
        "data": DATA_FILE,
        "numalab_version": __version__,
        "regenerate": f"numalab.widgets.regenerate({str(out)!r})",
    }
    write_text(out / VIEW_FILE, json.dumps(view, indent=1) + "\n")
    return out


def load_view(path) -> tuple[dict, xr.Dataset | None]:
    """``(view, ds)`` of an exported view: ``path`` is its folder or its ``view.json``."""
    from ..errors import check_in_file
    from ..storage import read_netcdf

    path = Path(path)
    folder = path.parent if path.suffix == ".json" else path
    view_path = check_in_file("view", folder / VIEW_FILE)
    try:
        view = json.loads(Path(view_path).read_text())
        missing = [k for k in ("explorer", "params", "options") if k not in view]
    except (json.JSONDecodeError, TypeError, UnicodeDecodeError) as exc:
        missing = [f"valid JSON ({exc})"]
    if missing:
        raise NumalabValueError(f"{str(view_path)!r} is not an exported explorer view (no {', '.join(missing)}); "
                                f"allowed: a view.json written by numalab.widgets.export_view")
    data = folder / view.get("data", DATA_FILE)
    return view, (read_netcdf(data, "data") if data.exists() else None)


#: explorer class name -> class; every Explorer subclass registers itself (``__init_subclass__``)
_CLASSES: dict[str, type] = {}


def register(cls) -> type:
    """Make ``cls`` known to :func:`reopen` and :func:`regenerate` by its name."""
    _CLASSES[cls.__name__] = cls
    return cls


def _explorer_class(name: str):
    try:
        return _CLASSES[str(name)]
    except KeyError:
        raise NumalabValueError(f"explorer={name!r} is not known; allowed: {', '.join(sorted(_CLASSES))}") from None


def reopen(path, **overrides):
    """The explorer of an exported view, built again at that view (its controls and options;
    ``overrides`` replace constructor arguments, e.g. ``live=False``). It recomputes with the
    numalab installed now; :func:`regenerate` redraws the stored numbers instead."""
    view, _ = load_view(path)
    cls = _explorer_class(view["explorer"])
    sig = inspect.signature(cls.__init__).parameters
    params = dict(view["params"])
    args = {k: params.pop(k) for k in list(params) if k in sig}
    args.update(view["options"] if any(p.kind is p.VAR_KEYWORD for p in sig.values())
                else {k: v for k, v in view["options"].items() if k in sig})
    args.update(overrides)
    ex = cls(**args)
    if params:  # controls that are not constructor arguments (e.g. the decision explorer's pass)
        ex.set(**params)
    return ex


def regenerate(path):
    """The exported view's figure drawn again from its ``data.nc`` and ``view.json`` alone (no
    model run): the explorer's own ``render`` applied to the stored Dataset."""
    view, ds = load_view(path)
    if ds is None:
        raise NumalabValueError(f"{str(path)!r} has no {DATA_FILE}; allowed: a folder written by export_view")
    cls = _explorer_class(view["explorer"])
    drawer = object.__new__(cls)  # render() reads only its arguments and class attributes
    _rows, fig, *_ = drawer.render(cls.from_dataset(ds), dict(view["params"]))
    return fig

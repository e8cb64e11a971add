"""What the report formats share: test names, the handling of run and summary Datasets, and
the text helpers of the readers."""

from __future__ import annotations

import json
import re

import numpy as np

from ..errors import NumalabValueError, check_choice, check_distinct
from ..limits import check_report_text
from .lines import _bad_char, _check_line, _err  # noqa: F401  (the formats import them from here)
from .vmstat_format import _VMSTAT_SOURCE


# --------------------------------------------------------------------------------------------
# names

_VAR_ATTRS = {
    "elsp": dict(units="s", long_name="elapsed wall-clock time"),
    "syst": dict(units="s", long_name="system CPU time"),
    "user": dict(units="s", long_name="user CPU time"),
}


def mmtests_test_name(workload: str) -> str:
    """mmtests' TEST name of a workload: ``numa01_THREAD_ALLOC`` -> ``NUMA01_THREADLOCAL``.

    Names that are not autonuma-benchmark binaries are returned unchanged."""
    w = str(workload)
    if w.lower().startswith("numa0"):
        return w.upper().replace("THREAD_ALLOC", "THREADLOCAL")
    return w


def lkp_test_name(test: str) -> str:
    """The benchmark binary name (numalab's workload name, LKP's ``<test>``) of an mmtests TEST
    or workload alias: ``NUMA01_THREADLOCAL`` -> ``numa01_THREAD_ALLOC``."""
    t = str(test)
    if t.lower().startswith("numa0"):
        # older mmtests spelled the test NUMA01_THEADLOCAL (sic)
        return t[:6].lower() + t[6:].upper().replace("THREADLOCAL", "THREAD_ALLOC").replace("THEADLOCAL", "THREAD_ALLOC")
    return t


def _test_sort_key(test: str) -> str:
    # mmtests orders TESTs by the file names autonumabench-<TEST>-1.time: '-' sorts before '_'
    return test + "-"


# --------------------------------------------------------------------------------------------
# shared Dataset handling


def _swept(ds) -> list[str]:
    """The dims a sweep's Dataset was swept over (``attrs["swept"]``, see numalab.sweeps)."""
    sw = ds.attrs.get("swept")
    if sw is None:
        return []
    names = [sw] if isinstance(sw, str) else [str(x) for x in sw]
    return [d for d in names if d in ds.dims]


def _along(ds, along):
    """The dim the compared kernels lie along: ``along``, else ``policy`` or ``kernel``, else
    (a sweep's Dataset) the first swept dim that is not the workload."""
    if along is None:
        for cand in ("policy", "kernel", *(d for d in _swept(ds) if d != "workload")):
            if cand in ds.dims:
                return cand
        raise NumalabValueError(
            f"along=None: the Dataset has neither a 'policy' nor a 'kernel' dim; dims are {list(ds.dims)} "
            "(pass along=<dim>: numalab report --along DIM)"
        )
    if not isinstance(along, str) or along not in ds.dims:
        raise NumalabValueError(f"along={along!r} is not a dimension; dims are {list(ds.dims)}")
    if along == "workload":
        raise NumalabValueError(
            "along='workload': the workloads are the table's ops (a row per workload), not its columns; compare "
            f"along another dim ({', '.join(d for d in ds.dims if d not in ('workload', 'seed')) or 'none'}), or "
            "select one workload first (ds.sel(workload=...); numalab report --sel workload=NAME)"
        )
    return along


def _columns(ds, along, baseline):
    """(``ds`` with the ``along`` coordinate as text, ``along``, the column names in print
    order, baseline first). A sweep over ``history`` has integer coordinates: the columns are
    named ``"2"``, ``"4"``... and ``baseline`` is matched as text."""
    along = _along(ds, along)
    values = ds[along].values
    if values.dtype.kind != "U" or along not in ds.coords:
        ds = ds.assign_coords({along: np.array([str(v) for v in values])})
    return ds, along, _order_kernels(ds, along, baseline)


def _order_kernels(ds, along, baseline):
    names = [str(v) for v in ds[along].values]
    if len(set(names)) != len(names):
        raise NumalabValueError(f"{along} names must be unique to head columns; got {names}")
    for name in names:
        if not name or any(c.isspace() or not c.isprintable() for c in name):
            raise NumalabValueError(f"{along} name {name!r} cannot head a report column (it must be non-empty "
                                    "and hold no spaces or control characters); rename it")
    if baseline is None:
        return names
    base = check_choice("baseline", str(baseline), names)
    return [base] + [n for n in names if n != base]


def _metrics(metric):
    """``metric=`` of the writers as a list of distinct variable names (None: the default)."""
    if metric is None:
        return None
    if isinstance(metric, str):
        return [metric]
    try:
        names = list(metric)
    except TypeError:
        names = None
    if not names or not all(isinstance(m, str) for m in names):
        raise NumalabValueError(f"metric={metric!r} must be a variable name or a non-empty list of names")
    return check_distinct("metric", names)


def _workloads(ds, workload):
    if "workload" in ds.dims:
        return [str(w) for w in ds["workload"].values]
    w = workload if workload is not None else ds.attrs.get("workload")
    if workload is None and "workload" in ds.coords and ds["workload"].ndim == 0:
        w = str(ds["workload"].values)  # a sweep of one workload, or one selected (--sel workload=...)
    if w is None:
        raise NumalabValueError(
            "the Dataset has no 'workload' dim or attr; pass workload='numa01' (or another name)"
        )
    if isinstance(w, str) and w.startswith("{"):  # a JSON-encoded workload description
        try:
            w = json.loads(w).get("name", w)
        except (ValueError, AttributeError):
            pass
    return [str(w)]


def _check_dims(da, allowed):
    extra = [d for d in da.dims if d not in allowed]
    if extra:
        raise NumalabValueError(
            f"variable {da.name!r} has dims {extra} that a report cannot show; select one point "
            f"first, e.g. ds.sel({extra[0]}=...) (numalab report: --sel {extra[0]}=VALUE), or compare "
            f"along it (along={extra[0]!r}; numalab report --along {extra[0]})"
        )


def _by_kernel(da, along, kernels):
    return da.sel({along: kernels}) if along in da.dims else da


def _summary_kind(ds):
    return ds.attrs.get("numalab_summary")


def _refuse_other_summary(ds, fmt):
    kind = _summary_kind(ds)
    if kind is not None and kind != fmt:
        # mmtests rows carry a sample stddev without n; LKP lines a truncated population stddev%
        raise NumalabValueError(
            f"this Dataset is an ingested {kind} summary; it holds no runs, so it cannot be printed as {fmt} "
            f"(print it with report.{kind}() instead)"
        )


# --------------------------------------------------------------------------------------------
# ingest


_QUOTE = re.compile(r"^(?:> ?)+")


def _unquote(text: str, name: str = "text") -> list[str]:
    """Lines of ``text`` with e-mail quoting (``> ``, nested) and CRs removed, after the size of
    the text is checked (:func:`numalab.limits.check_report_text`). A no-break space (what some
    mail clients put for a space) is a space."""
    check_report_text(name, text)
    if "\u00a0" in text:
        text = text.replace("\u00a0", " ")
    return [_QUOTE.sub("", line.rstrip("\r")) if line.startswith(">") else line.rstrip("\r")
            for line in text.split("\n")]


def _summary_dataset(kernels, variables, attrs, coords=None):
    """The Dataset of a report as read: ``variables`` {name: (dims, numpy array, attrs)} over
    ``kernel`` (and ``coords``), built as Variables directly (a report may hold thousands)."""
    import numpy as np
    import xarray as xr

    variables = {k: xr.Variable(d, np.asarray(v), a, fastpath=True) for k, (d, v, a) in variables.items()}
    ds = xr.Dataset(variables, coords=coords if coords is not None else {"kernel": kernels})
    ds.attrs.update(attrs)
    return ds


def _attrs_for(var: str):
    if var in _VAR_ATTRS:
        return dict(_VAR_ATTRS[var])
    if var in _VMSTAT_SOURCE:
        return dict(units="1", long_name=_VMSTAT_SOURCE[var], kernel_name=var)
    return dict(units="1", long_name=var)


_NUMBER = re.compile(r"^-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$|^-?(?:nan|inf)$", re.I)

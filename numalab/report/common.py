"""What the report formats share: test names, the handling of run and summary Datasets, and
the text helpers of the readers."""

from __future__ import annotations

import json
import re

from ..errors import NumalabValueError, check_choice
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


def _along(ds, along):
    if along is None:
        for cand in ("policy", "kernel"):
            if cand in ds.dims:
                return cand
        raise NumalabValueError(
            f"along=None: the Dataset has neither a 'policy' nor a 'kernel' dim; dims are {list(ds.dims)}"
        )
    if along not in ds.dims:
        raise NumalabValueError(f"along={along!r} is not a dimension; dims are {list(ds.dims)}")
    return along


def _order_kernels(ds, along, baseline):
    names = [str(v) for v in ds[along].values]
    if len(set(names)) != len(names):
        raise NumalabValueError(f"{along} names must be unique to head columns; got {names}")
    if baseline is None:
        return names
    base = check_choice("baseline", str(baseline), names)
    return [base] + [n for n in names if n != base]


def _workloads(ds, workload):
    if "workload" in ds.dims:
        return [str(w) for w in ds["workload"].values]
    w = workload if workload is not None else ds.attrs.get("workload")
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
            f"first, e.g. ds.sel({extra[0]}=...)"
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


def _unquote(text: str) -> list[str]:
    """Lines of ``text`` with e-mail quoting (``> ``, nested) and CRs removed."""
    if not isinstance(text, str):
        raise NumalabValueError(f"text must be a str holding the report; got {type(text).__name__}")
    return [_QUOTE.sub("", line.rstrip("\r")) if line.startswith(">") else line.rstrip("\r")
            for line in text.split("\n")]


def _err(lineno: int, msg: str) -> NumalabValueError:
    return NumalabValueError(f"line {lineno}: {msg}")


def _summary_dataset(kernels, variables, attrs):
    import xarray as xr

    ds = xr.Dataset(variables, coords={"kernel": kernels})
    ds.attrs.update(attrs)
    return ds


def _attrs_for(var: str):
    if var in _VAR_ATTRS:
        return dict(_VAR_ATTRS[var])
    if var in _VMSTAT_SOURCE:
        return dict(units="1", long_name=_VMSTAT_SOURCE[var], kernel_name=var)
    return dict(units="1", long_name=var)


_NUMBER = re.compile(r"^-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$|^-?(?:nan|inf)$", re.I)

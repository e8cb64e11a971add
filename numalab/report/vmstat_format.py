"""/proc/vmstat counters: the rows of mmtests' vmstat ``Ops`` table (§4.1, derived rows
included) and :func:`read_vmstat`, the counter deltas of two snapshots."""

from __future__ import annotations

import re

import numpy as np

from ..counters import COUNTERS
from ..errors import NumalabValueError

#: vmstat counters: variable (= kernel name) -> mmtests "Ops" label (§4.1 print order): the
#: allocation counters, which the engine does not simulate (read from real reports only), then
#: the NUMA-balancing counters of the one counter table (numalab.counters)
_VMSTAT_SOURCE = {
    "numa_hit": "NUMA alloc hit",
    "numa_miss": "NUMA alloc miss",
    "numa_interleave": "NUMA interleave hit",
    "numa_local": "NUMA alloc local",
    **{c.name: c.mmtests_label for c in COUNTERS if c.vmstat},
}
#: every Ops row we know, print order, with the variable an ingested row is stored under
_OPS_ROWS = [
    ("NUMA alloc hit", "numa_hit"),
    ("NUMA alloc miss", "numa_miss"),
    ("NUMA interleave hit", "numa_interleave"),
    ("NUMA alloc local", "numa_local"),
    ("NUMA base-page range updates", "numa_pte_updates"),
    ("NUMA PTE updates", "numa_pte_updates_base"),
    ("NUMA PMD updates", "numa_huge_pte_updates"),
    ("NUMA hint faults", "numa_hint_faults"),
    ("NUMA hint local faults %", "numa_hint_faults_local"),
    ("NUMA hint local percent", "numa_hint_local_pct"),
    ("NUMA pages migrated", "numa_pages_migrated"),
    ("AutoNUMA cost", "autonuma_cost"),
]
_OPS_VAR = dict(_OPS_ROWS)


def _vmstat_ops_rows(have):
    """The ``Ops`` rows (§4.1) of counter totals ``have`` (variable -> array over kernels):
    [(label, values)] in print order, the derived rows computed from the counters."""
    pte, huge = have.get("numa_pte_updates"), have.get("numa_huge_pte_updates")
    hint, local = have.get("numa_hint_faults"), have.get("numa_hint_faults_local")
    migrated = have.get("numa_pages_migrated")
    derived = {}
    if pte is not None:
        derived["numa_pte_updates_base"] = pte - 512 * huge if huge is not None else pte
    if hint is not None and local is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            derived["numa_hint_local_pct"] = np.where(hint > 0, 100.0 * local / np.where(hint > 0, hint, 1), 100.0)
    if pte is not None and hint is not None and migrated is not None:
        # the source means a page-copy term too, but a stray statement drops it (§4.1)
        derived["autonuma_cost"] = (7 * pte + 5000 * hint + 19 * migrated) / 1e6
    rows = []
    for label, var in _OPS_ROWS:
        v = have.get(var, derived.get(var))
        if v is not None:
            rows.append((label, [float(x) for x in v]))
    return rows


# --------------------------------------------------------------------------------------------
# /proc/vmstat snapshots


def _parse_vmstat(text, which):
    from ..limits import check_report_stats, check_report_text
    from .lines import _check_line

    check_report_text(which, text)
    out = {}
    for i, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            _check_line(i, line, "vmstat line")
        except NumalabValueError as exc:
            raise NumalabValueError(f"{which} {exc}") from None
        parts = line.split()
        # LKP's stats name a counter ``proc-vmstat.<counter>`` (``proc-vmstat.numa_hint_faults: 12``)
        if parts and parts[0].startswith("proc-vmstat."):
            parts[0] = parts[0][len("proc-vmstat."):]
        if parts and parts[0].endswith(":") and len(parts) == 2:
            parts[0] = parts[0][:-1]
        if len(parts) != 2 or not re.fullmatch(r"-?\d{1,20}", parts[1]) or not parts[0]:
            raise NumalabValueError(f"{which} line {i}: expected '<counter> <integer>', got {line[:80]!r}")
        value = int(parts[1])
        if not -(1 << 63) <= value < (1 << 64):
            raise NumalabValueError(f"{which} line {i}: {parts[0]} = {parts[1]} is outside a 64-bit counter")
        if parts[0] in out:
            raise NumalabValueError(f"{which} line {i}: counter {parts[0]!r} appears twice")
        out[parts[0]] = value
        if len(out) > 256 and len(out) % 1024 == 0:
            check_report_stats("counters", len(out), f"{which} line {i}: ")
    if not out:
        raise NumalabValueError(f"{which} is empty: expected /proc/vmstat lines '<counter> <integer>'")
    check_report_stats("counters", len(out), f"{which}: ")
    return out


def read_vmstat(before: str, after: str, kernel: str | None = None):
    """Counter deltas ``after - before`` of two /proc/vmstat snapshots (mmtests' test-begin /
    test-end delta, §4.1) -- the text of /proc/vmstat, or LKP's ``proc-vmstat.<counter>: N``
    lines -- as a Dataset of int64 scalars named by the kernel counters
    (``numa_hint_faults``, ...). With ``kernel`` the variables get a length-1 ``"kernel"`` dim,
    ready to ``xr.concat`` with other kernels. A counter missing from one snapshot, or a NUMA
    event counter that went backwards, raises ``ValueError``."""
    import xarray as xr

    b = _parse_vmstat(before, "before")
    a = _parse_vmstat(after, "after")
    missing = sorted(set(a) ^ set(b))
    if missing:
        raise NumalabValueError(f"counter {missing[0]!r} is in only one snapshot; both must come from the same kernel")
    variables = {}
    for name, v in a.items():
        d = v - b[name]
        if d < 0 and name.startswith(("numa_", "pg", "thp_")):
            raise NumalabValueError(f"counter {name!r} went backwards ({b[name]} -> {v}); are before/after swapped?")
        if not -(1 << 63) <= d < (1 << 63):
            raise NumalabValueError(f"counter {name!r} changed by {d}, more than an int64 holds")
        attrs = {"units": "1", "kernel_name": name,
                 "long_name": _VMSTAT_SOURCE.get(name, name) + " (after - before)"}
        variables[name] = (("kernel",), [d], attrs) if kernel is not None else ((), d, attrs)
    ds = xr.Dataset(variables, coords={"kernel": [str(kernel)]} if kernel is not None else None)
    ds.attrs["source"] = "read_vmstat"
    return ds

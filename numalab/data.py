"""The published measurements in ``data/`` as labelled Datasets.

``load(name)`` returns the comparison table as a Dataset shaped like a simulation summary:
dims ``("workload", "policy")``, the policies being the numalab profiles the commits
correspond to (``commit`` is a coordinate along ``policy``), ``elsp`` the published mean
seconds of the benchmark binary, ``elsp_stddev_pct`` the printed relative stddev (NaN where the
robot hid it as <= 2 %), ``change_pct`` the published %change of the new commit against the
base, and job-level metrics (``time.elapsed_time``) as ``job_<name>`` variables along
``policy`` (with ``job_<name>_stddev_pct`` and ``job_<name>_change_pct``).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import xarray as xr

from .errors import check_choice
from .resources import shipped_dir

__all__ = ["names", "load", "load_futex", "futex_topology", "data_dir", "WORKLOAD_OF_METRIC", "job_variable"]

_PREFIX = "autonuma-benchmark."
_VMSTAT = "proc-vmstat."


def data_dir() -> Path:
    """The folder holding the CSV files: ``data/`` of a source checkout, or the copy installed
    inside the package."""
    return shipped_dir("data", "published", "*.csv")


def names() -> list[str]:
    """Names of the published tables (file names without ``.csv``)."""
    return sorted(p.stem for p in data_dir().glob("*.csv"))


def _rows(name: str) -> list[dict]:
    check_choice("name", name, names())
    with open(data_dir() / f"{name}.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def _num(text: str) -> float:
    return float(text) if text.strip() else np.nan


WORKLOAD_OF_METRIC = {
    f"{_PREFIX}numa01.seconds": "numa01",
    f"{_PREFIX}numa01_THREAD_ALLOC.seconds": "numa01_THREAD_ALLOC",
    f"{_PREFIX}numa02.seconds": "numa02",
    f"{_PREFIX}numa02_SMT.seconds": "numa02_SMT",
}


def job_variable(metric: str) -> str:
    """The Dataset variable of a job-level metric: ``autonuma-benchmark.time.elapsed_time`` ->
    ``job_time_elapsed_time``, ``proc-vmstat.numa_pages_migrated`` -> ``job_vmstat_numa_pages_migrated``."""
    if metric.startswith(_VMSTAT):
        return "job_vmstat_" + metric.removeprefix(_VMSTAT)
    return "job_" + metric.removeprefix(_PREFIX).replace(".", "_")


def load(name: str) -> xr.Dataset:
    """Load one published table (see ``data/README.md`` for provenance): an LKP comparison
    (``lkp-*``, dims ``("workload", "policy")``) or a perf bench futex hash curve set
    (``futex-*``, :func:`load_futex`)."""
    if name.startswith("futex-"):
        return load_futex(name)
    rows = _rows(name)
    base, new = rows[0]["base_profile"], rows[0]["new_profile"]
    policies = [base, new]
    commits = [rows[0]["base_commit"], rows[0]["new_commit"]]
    bench = [r for r in rows if r["metric"] in WORKLOAD_OF_METRIC]
    job = [r for r in rows if r["metric"] not in WORKLOAD_OF_METRIC]
    workloads = [WORKLOAD_OF_METRIC[r["metric"]] for r in bench]

    def table(key_base, key_new, rs):
        return np.array([[_num(r[key_base]), _num(r[key_new])] for r in rs], dtype=float)

    ds = xr.Dataset(
        {
            "elsp": (("workload", "policy"), table("base_value", "new_value", bench), {
                "units": "s", "long_name": "benchmark elapsed time (mean of the job's iterations)",
                "lkp_name": "autonuma-benchmark.<workload>.seconds"}),
            "elsp_stddev_pct": (("workload", "policy"), table("base_stddev_pct", "new_stddev_pct", bench), {
                "units": "%", "long_name": "relative standard deviation as printed (NaN: hidden, <= 2%)"}),
            "change_pct": (("workload",), np.array([_num(r["change_pct"]) for r in bench]), {
                "units": "%", "long_name": f"published %change of {new} against {base}"}),
        },
        coords={"workload": workloads, "policy": policies, "commit": ("policy", commits)},
    )
    for r in job:
        var = job_variable(r["metric"])
        ds[var] = ("policy", [_num(r["base_value"]), _num(r["new_value"])], {
            "units": "1" if r["metric"].startswith(_VMSTAT) else "s", "long_name": r["metric"]})
        ds[f"{var}_stddev_pct"] = ("policy", [_num(r["base_stddev_pct"]), _num(r["new_stddev_pct"])],
                                   ds["elsp_stddev_pct"].attrs)
        ds[f"{var}_change_pct"] = ((), _num(r["change_pct"]), {"units": "%"})
    first = rows[0]
    job_path = first["job"].replace(f"/{workloads[0]}/", "/<test>/") if workloads else first["job"]
    parts = job_path.split("/")
    ds.attrs.update(
        source=first["source"], machine=first["machine"], table=name, baseline=base, job=job_path,
        job_test=parts[-2] if len(parts) >= 2 and parts[-2] != "<test>" else "",
    )
    return ds


def load_futex(name: str = "futex-e5-2650") -> xr.Dataset:
    """A published ``perf bench futex hash`` table as a Dataset over ``row``: the
    ``ops_per_s_per_thread`` printed ("Averaged X operations/sec"), with coordinates
    ``threads``, ``buckets`` (0 = the global hash), ``mode``, ``nodes_used`` and ``refcount``
    -- the rows :func:`numalab.futex.calibrate` takes. attrs: machine, CPUs, nodes, source."""
    check_choice("name", name, [n for n in names() if n.startswith("futex-")])
    rows = _rows(name)
    ds = xr.Dataset(
        {"ops_per_s_per_thread": ("row", np.array([float(r["ops_per_s_per_thread"]) for r in rows]), {
            "units": "1/s", "long_name": "perf bench futex hash 'Averaged X operations/sec' (per thread)"})},
        coords={
            "row": np.arange(len(rows)),
            "threads": ("row", np.array([int(r["threads"]) for r in rows])),
            "buckets": ("row", np.array([int(r["buckets"]) for r in rows]), {
                "long_name": "perf bench -b: private-hash slots (0 = global hash)"}),
            "mode": ("row", np.array([r["mode"] for r in rows])),
            "nodes_used": ("row", np.array([int(r["nodes_used"]) for r in rows])),
            "refcount": ("row", np.array([r["refcount"] for r in rows])),
            "command": ("row", np.array([r["command"] for r in rows])),
        },
    )
    first = rows[0]
    ds.attrs.update(table=name, machine=first["machine"], cpus=int(first["cpus"]), nodes=int(first["nodes"]),
                    source=first["source"])
    return ds


#: how each futex table's machine numbers its CPUs (Topology.cpu_numbering), and why
_FUTEX_NUMBERING = {
    "futex-e5-2650": ("node", "its T=14 rows ran all on node 0 while perf bench pins thread i to CPU i, so node 0 "
                              "holds CPUs 0-15 (shared/reference/futex-calibration.md: 'T = 14, all on node 0')"),
}


def futex_topology(name: str = "futex-e5-2650", **fields):
    """The machine a published futex table was measured on, as the model describes it: its
    nodes and CPUs from the table, the CPU numbering its rows imply, every other field at the
    Topology's class default (nothing taken from the machine's measurements). ``fields`` add to
    it, e.g. the core clock (``all_core_ghz=2.4, turbo_ghz=2.8``)."""
    from .provenance import Provenance
    from .topology import Topology

    ds = load_futex(name)
    numbering, why = _FUTEX_NUMBERING[name]
    sources = {"cpu_numbering": Provenance("measurement", f"{ds.attrs['machine']}: {why}")}
    return Topology(nodes=ds.attrs["nodes"], cpus_per_node=ds.attrs["cpus"] // ds.attrs["nodes"],
                    cpu_numbering=numbering, name=name.removeprefix("futex-"),
                    source=f"{ds.attrs['machine']} ({ds.attrs['source']}); costs at the class defaults",
                    sources=sources, **fields)

"""Anyone's table beside the model's: :func:`compare` reads a posted or local mmtests
``compare-kernels`` or kernel-test-robot (LKP) table, maps its kernels to numalab profiles,
simulates the same kernels and workloads on the stated machine and judges every published
number with the rules and bands of ``numalab reproduce`` (:mod:`numalab.fidelity`).

Kernel names are mapped (:func:`profile_of`) by, in order: the ``kernels`` mapping the user
gives (kernel name or commit-id prefix -> profile or policy text, so a patched kernel can be
described by its own rules, ``"6.4+N=8+rules=own_pid,hot>=1"``); a name that is itself a
profile or policy text; a commit id of the published tables in ``data/`` (the robot prints
truncated ids, so a prefix of at least 7 hex digits either way matches); a kernel version in
the name (``v6.8``, ``6.8.0-rc1-vanilla`` -> the newest profile not after it: ``pre-6.4``,
``6.4``, ``6.7``, ``6.8``, ``6.12``). Anything else is refused, naming the kernel and how to
map it.

Each kernel after the table's baseline is one comparison against it (a two-kernel LKP block is
one table, a four-kernel mmtests table three). What is judged: every workload's elapsed
seconds (the baseline's seconds and each kernel's %change), and the whole-run vmstat counters'
%change. An LKP table's ``time.elapsed_time`` is the LKP job (numa01, numa02 and the table's
tests, four iterations: :func:`numalab.fidelity.job_tests`); an mmtests table has no job time
and its counters are summed over its own workloads.
"""

from __future__ import annotations

import html
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

from .errors import NumalabValueError

__all__ = ["compare", "Comparison", "profile_of", "published_tables", "read_table"]

_HEX = re.compile(r"^[0-9a-f]{7,40}$")
_VERSION = re.compile(r"(?:^|[^0-9.])v?(\d+)\.(\d+)(?![0-9])")
#: the profiles that are kernel releases, by version (the others are RFCs and pre-release commits)
_RELEASES = {(6, 4): "6.4", (6, 7): "6.7", (6, 8): "6.8", (6, 12): "6.12"}


def _known_commits() -> dict[str, str]:
    """commit id (as printed) -> profile, from the published tables in ``data/``."""
    import csv

    from . import data

    out = {}
    for name in data.names():
        if not name.startswith("lkp-"):
            continue
        with open(data.data_dir() / f"{name}.csv", newline="") as fh:
            for row in csv.DictReader(fh):
                out[row["base_commit"].lower()] = row["base_profile"]
                out[row["new_commit"].lower()] = row["new_profile"]
    return out


def _by_version(kernel: str):
    m = _VERSION.search(kernel)
    if not m:
        return None
    version = (int(m.group(1)), int(m.group(2)))
    if version < (6, 4):
        return "pre-6.4"
    return _RELEASES[max(v for v in _RELEASES if v <= version)]


def profile_of(kernel: str, kernels: dict | None = None) -> str:
    """The policy text (a profile name or ``Policy.parse`` text) a kernel name maps to (module
    docstring). ``kernels``: the user's mapping, tried first (exact name, then commit-id
    prefix)."""
    from .policy import Policy

    kernel = str(kernel)
    kernels = dict(kernels or {})
    if kernel in kernels:
        return str(kernels[kernel])
    low = kernel.lower()
    for key, value in kernels.items():
        k = str(key).lower()
        if _HEX.match(low) and _HEX.match(k) and (low.startswith(k) or k.startswith(low)):
            return str(value)
    if kernel in Policy.profiles():
        return kernel
    if _HEX.match(low):
        for commit, profile in _known_commits().items():
            if low.startswith(commit) or commit.startswith(low):
                return profile
    else:
        try:
            return Policy.parse(kernel).name
        except NumalabValueError:
            pass
        by_version = _by_version(kernel)
        if by_version is not None:
            return by_version
    raise NumalabValueError(
        f"kernel {kernel!r} maps to no profile; allowed: a profile name ({', '.join(Policy.profiles())}), a policy "
        f"text, a commit id of data/'s tables or a name with a kernel version (v6.8, 6.8.0-rc1) -- or map it "
        f"yourself: kernels={{{kernel!r}: '6.8'}} (numalab compare --kernel {kernel}=6.8)")


def read_table(text: str) -> tuple[str, list]:
    """``("lkp" | "mmtests", [Dataset, ...])``: the table(s) of ``text`` as
    :func:`numalab.report.read_lkp` (one per block) or :func:`numalab.report.read_mmtests`
    reads them. LKP when the text has the robot's ``%stddev``/``%change`` header."""
    from . import report

    if "%change" in text and "%stddev" in text:
        return "lkp", report.lkp_blocks(report.read_lkp(text))
    return "mmtests", [report.read_mmtests(text)]


def _baseline(ds, kind):
    kernels = [str(k) for k in ds.kernel.values]
    base = ds.attrs.get(f"{kind}_baseline", kernels[0])
    return base if base in kernels else kernels[0]


def _series(ds, kind, var):
    """(kernel,) or (kernel, workload) values of ``var`` (mmtests: its Amean row)."""
    da = ds[var]
    if kind == "mmtests" and "stat" in da.dims:
        da = da.sel(stat="Amean")
    return da


def _job_vars(ds, kind, base, new):
    from .fidelity.tables import VMSTAT_COUNTERS

    out = {}
    names = [("autonuma-benchmark.time.elapsed_time", "job_time_elapsed_time")] if kind == "lkp" else []
    names += [(c, f"job_vmstat_{c}") for c in VMSTAT_COUNTERS]
    for var, name in names:
        if var not in ds or "workload" in ds[var].dims:
            continue
        v = _series(ds, kind, var)
        b, n = float(v.sel(kernel=base)), float(v.sel(kernel=new))
        if not (np.isfinite(b) and np.isfinite(n)) or b == 0:
            continue
        printed = ds.get(f"{var}_change")
        change = float(printed.sel(kernel=new)) if printed is not None and np.isfinite(printed.sel(kernel=new)) \
            else 100.0 * (n / b - 1.0)
        out[name] = ("policy", [b, n])
        out[f"{name}_change_pct"] = ((), change)
        spread = ds.get(f"{var}_stddev_pct") if kind == "lkp" else None
        if spread is not None:   # LKP's printed ± r% (NaN: hidden, at most 2 %): the strict rule's published error
            out[f"{name}_stddev_pct"] = ("policy", [float(spread.sel(kernel=k)) for k in (base, new)])
    return out


def published_tables(text: str, *, kernels: dict | None = None, name: str = "posted", machine: str = "",
                     preset: str | None = None) -> tuple[dict, dict]:
    """The table(s) of ``text`` in the layout of :func:`numalab.data.load` (dims ``workload``,
    ``policy``; ``elsp``, ``change_pct``, ``job_*``), one per kernel after the baseline.
    Returns ``({table name: Dataset}, {kernel: profile})``. ``preset``: the topology preset the
    tables are simulated on (kept in ``attrs["preset"]``)."""
    kind, blocks = read_table(text)
    out, mapping = {}, {}
    for b, ds in enumerate(blocks):
        if "elsp" not in ds or "workload" not in ds["elsp"].dims:
            continue
        base = _baseline(ds, kind)
        for k in [str(k) for k in ds.kernel.values]:
            mapping.setdefault(k, profile_of(k, kernels))
        for new in [k for k in map(str, ds.kernel.values) if k != base]:
            table = name if ds.sizes["kernel"] == 2 else f"{name}: {new} vs {base}"
            table = table if len(blocks) == 1 else f"{table} (block {b + 1})"
            one = _one_table(ds, kind, base, new, mapping, table, machine, preset)
            if one.sizes["workload"]:
                out[table] = one
    if not out:
        raise NumalabValueError("the table has no per-workload elapsed-time rows (autonuma-benchmark.<test>.seconds "
                                "or elsp-NUMA01...); allowed: an LKP autonuma-benchmark block or an mmtests "
                                "autonumabench compare-kernels table")
    return out, mapping


def _one_table(ds, kind, base, new, mapping, table, machine, preset):
    elsp = _series(ds, kind, "elsp")
    wls = [str(w) for w in elsp.workload.values if np.isfinite(elsp.sel(kernel=[base, new], workload=w)).all()]
    b = elsp.sel(kernel=base, workload=wls).values.astype(float)
    n = elsp.sel(kernel=new, workload=wls).values.astype(float)
    printed = ds.get("elsp_change") if kind == "lkp" else None
    change = printed.sel(kernel=new, workload=wls).values.astype(float) if printed is not None else 100 * (n / b - 1)
    change = np.where(np.isfinite(change), change, 100 * (n / b - 1))
    pols = [mapping[base], mapping[new]]
    out = xr.Dataset(
        {"elsp": (("workload", "policy"), np.stack([b, n], axis=1), {"units": "s"}),
         "change_pct": (("workload",), change, {"units": "%"})},
        coords={"workload": wls, "policy": _distinct(pols), "commit": ("policy", [base, new])},
    )
    if kind == "lkp" and "elsp_stddev_pct" in ds:
        spread = ds["elsp_stddev_pct"].sel(workload=wls)
        out["elsp_stddev_pct"] = (("workload", "policy"), np.stack([spread.sel(kernel=k).values.astype(float)
                                                                     for k in (base, new)], axis=1), {"units": "%"})
    for var, value in _job_vars(ds, kind, base, new).items():
        out[var] = value
    out.attrs.update(table=table, machine=machine, source=ds.attrs.get("source", kind),
                     baseline=str(out.policy.values[0]), job="mmtests" if kind == "mmtests" else "", job_test="",
                     preset=preset or "")
    return out


#: marks a second kernel of a comparison that maps to the same profile as its baseline
_SAME = "@same"


def _distinct(pols):
    """Two kernels of one comparison that map to the same profile run the same simulation; the
    second gets the coordinate name ``<profile>@same``, simulated as ``<profile>``."""
    return pols if pols[0] != pols[1] else [pols[0], pols[1] + _SAME]


def _runnable(pub):
    """The table as the planner sees it: ``<profile>@same`` simulated as ``<profile>``."""
    pols = [str(p).removesuffix(_SAME) for p in pub.policy.values]
    if len(set(pols)) == len(pols):
        return pub
    return pub.isel(policy=[0])


def _with_same(sim, published):
    """``sim`` with a copy of ``<profile>`` named ``<profile>@same`` for every table that needs it."""
    extra = [str(p) for pub in published.values() for p in pub.policy.values if str(p).endswith(_SAME)]
    extra = [p for p in dict.fromkeys(extra) if p not in sim.policy.values]
    if not extra:
        return sim
    copies = [sim.sel(policy=[p.removesuffix(_SAME)]).assign_coords(policy=[p]) for p in extra]
    return xr.concat([sim, *copies], dim="policy")


def _same_profile(mapping):
    seen = {}
    for k, p in mapping.items():
        if p in seen:
            yield seen[p], k
        else:
            seen[p] = k


@dataclass
class Comparison:
    """What :func:`compare` found: ``published`` (``{table: Dataset}``), ``kernels`` (kernel ->
    profile), ``sims`` (``{preset: Dataset}``), ``rows`` (the judged rows, as in
    ``fidelity.csv``), ``topology`` (the preset name). ``str()`` is the printed report; a notebook
    shows it as a table; :meth:`plot` draws it."""

    published: dict
    kernels: dict
    sims: dict
    rows: list
    topology: str
    notes: list = field(default_factory=list)

    def counts(self) -> dict:
        from .fidelity import counts

        return counts(self.rows)

    def __str__(self) -> str:
        from .fidelity import counts_text
        from .outputs import verdict_table

        lines = [f"# published vs numalab on {self.topology}: kernels mapped to profiles"]
        lines += [f"  {k} -> {p}" for k, p in self.kernels.items()] + self.notes + [""]
        lines.append(verdict_table(self.rows))
        return "\n".join(lines + ["", counts_text(self.counts())])

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        from .outputs import VERDICT_COLUMNS, verdict_cells

        head = "".join(f"<th>{html.escape(c)}</th>" for c in VERDICT_COLUMNS)
        at = VERDICT_COLUMNS.index("verdict")

        def cells(r):
            ok = ' class="numalab-ok"' if r["verdict"] == "reproduced" else ""
            return "".join(f"<td{ok if i == at else ''}>{html.escape(str(v))}</td>"
                           for i, v in enumerate(verdict_cells(r)))

        body = "".join(f"<tr>{cells(r)}</tr>" for r in self.rows)
        mapped = ", ".join(f"{html.escape(k)} → {html.escape(p)}" for k, p in self.kernels.items())
        from .fidelity import counts_text

        foot = html.escape(counts_text(self.counts())).replace("\n", "<br>")
        return ('<div class="numalab-compare" style="overflow:auto;max-height:38em">'
                f"<p>published vs numalab on <b>{html.escape(self.topology)}</b>: {mapped}</p>"
                f'<table style="font-size:12px;font-variant-numeric:tabular-nums"><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table><p>{foot}</p></div>")

    def plot(self, ax=None, *, kind: str | None = None):
        """The published-vs-simulated figure: ``kind="bands"`` (:func:`numalab.plots.fidelity_bands`,
        the default when bands were simulated) or ``"scatter"``
        (:func:`numalab.plots.fidelity_machines`). Returns the Figure."""
        from . import plots
        from .errors import check_choice
        from .outputs import fidelity_rows_figure

        banded = any(r.get("band_points") for r in self.rows)
        kind = check_choice("kind", kind or ("bands" if banded else "scatter"), ["bands", "scatter"])
        if kind == "bands":
            return plots.fidelity_bands(self.rows, ax=ax)
        machines = {t: self.topology for t in self.published}
        return fidelity_rows_figure(self.rows, machines, ax=ax)


def _read_text(text_or_path) -> tuple[str, str]:
    """(text, name): a path (str or PathLike) to a file, or the table's text itself."""
    from .errors import check_in_file

    if isinstance(text_or_path, os.PathLike) or (isinstance(text_or_path, str) and "\n" not in text_or_path):
        path = check_in_file("text_or_path", text_or_path)
        return path.read_text(errors="replace"), Path(path).stem
    if not isinstance(text_or_path, str):
        raise NumalabValueError(f"text_or_path={text_or_path!r}; allowed: a table's text or the path of a file")
    return text_or_path, "posted"


def _machine_in(text: str):
    from .topology import PRESET_ALIASES

    for machine in PRESET_ALIASES:
        if machine in text:
            return machine
    return None


def _simulated(ds, published):
    """A user's simulated Dataset as ``{policy}`` runs: per-run dims (workload, policy, seed),
    from :func:`numalab.simulate` (one workload, its ``workload`` attr) or already per run."""
    from .engine.results import per_run

    if not isinstance(ds, xr.Dataset):
        raise NumalabValueError(f"ds={type(ds).__name__}; allowed: an xarray Dataset from numalab.simulate")
    if "time" in ds.dims:
        ds = per_run(ds)
    if "workload" not in ds.dims:
        wl = ds.attrs.get("workload")
        if not wl or "," in str(wl):
            raise NumalabValueError("ds has no workload dim and no single workload attr; allowed: a Dataset of "
                                    "numalab.simulate, or one with dims (workload, policy, seed)")
        ds = ds.expand_dims(workload=[str(wl)])
    return ds


def compare(text_or_path, ds=None, *, topology=None, kernels: dict | None = None, seeds: int = 8,
            band_points: int = 0, band_seeds: int | None = None, band_seed: int = 0, workers=None, progress=False,
            name: str | None = None, **engine_options) -> Comparison:
    """Published against simulated for anyone's mmtests or LKP table (module docstring).

    Parameters
    ----------
    text_or_path : the table's text (as posted; a whole mail is fine) or the path of a file.
    ds : an already simulated Dataset to judge instead of simulating (``numalab.simulate``'s, or
        per-run dims ``(workload, policy, seed)``), its policies named as the kernels map to.
    topology : the machine: a preset name, a robot machine name (``lkp-spr-r02``) or a
        :class:`numalab.Topology`; default: a robot machine named in the text.
    kernels : kernel name (or commit-id prefix) -> profile or policy text, tried before the
        built-in mapping (:func:`profile_of`).
    seeds, band_points, band_seeds, band_seed, workers, progress : as ``numalab reproduce``
        (``band_points=0``: no uncertainty bands; ``band_seeds=None``:
        :data:`numalab.fidelity.bands.DEFAULT_SEEDS`).
    name : the table's name in the rows (default: the file's stem, or ``"posted"``).
    **engine_options : engine options and ``costs=`` for every run.

    Returns a :class:`Comparison` (print it, show it in a notebook, ``.plot()``)."""
    from . import fidelity
    from .errors import check_int
    from .topology import PRESET_ALIASES, Topology

    text, stem = _read_text(text_or_path)
    name = name or stem
    if topology is None:
        topology = _machine_in(text)
        if topology is None:
            raise NumalabValueError("topology is not given and the table names no known machine; allowed: a preset "
                                    f"({', '.join(Topology.presets())}) or a robot machine "
                                    f"({', '.join(PRESET_ALIASES)}), e.g. topology='2s-128' (--topology 2s-128)")
    topo = Topology.coerce(topology)
    preset = topo.name if isinstance(topology, Topology) else PRESET_ALIASES.get(topology, topology)
    machine = next((m for m, p in PRESET_ALIASES.items() if p == preset), preset)
    published, mapping = published_tables(text, kernels=kernels, name=name, machine=machine, preset=preset)
    notes = [f"  note: {k} and {v} map to the same profile: the model cannot tell them apart"
             for k, v in _same_profile(mapping)]
    if ds is not None:
        sims = {preset: _with_same(_simulated(ds, published), published)}
        return Comparison(published, mapping, sims, fidelity.table_rows(published, sims), preset, notes)
    check_int("seeds", seeds, lo=2, hi=10000)
    check_int("band_points", band_points, lo=0, hi=1000)
    if band_seeds is not None:
        check_int("band_seeds", band_seeds, lo=1, hi=10000)
    check_int("band_seed", band_seed, lo=0)
    runs = {t: _runnable(pub) for t, pub in published.items()}
    key = topo if isinstance(topology, Topology) else preset
    calls = fidelity.plan(runs, seeds, topology=key, overrides=fidelity.runs._point(engine_options))
    if band_points:
        band_seeds = fidelity.bands.DEFAULT_SEEDS if band_seeds is None else band_seeds
        calls += fidelity.bands.band_calls(runs, band_points, band_seeds, band_seed, topology=key)
    out = {k: _with_same(sim, published) for k, sim in fidelity.execute(calls, workers=workers,
                                                                         progress=progress).items()}
    rows = fidelity.bands.judge_points(published, out, band_points)
    sims = {preset: sim for (k, _), sim in out.items() if k == 0}
    return Comparison(published, mapping, sims, rows, preset, notes)

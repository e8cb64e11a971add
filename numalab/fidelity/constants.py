"""Every default constant with its provenance, read from the code: the :class:`~numalab.costs.Costs`
and :class:`~numalab.engine.EngineOptions` field metadata (:func:`numalab.provenance.provenance_of`),
the LKP job constants of :mod:`.rules`, and each topology preset's figures
(:func:`topology_provenance`).

:func:`constants` lists them, :func:`provenance_markdown` prints the table of docs/fidelity.md
(``python benchmarks/provenance.py --write docs/fidelity.md`` regenerates it between its
markers), :func:`fitted_rows` names the published rows a fitted constant was set from, and
:func:`banded` the constants with a plausible range (the uncertainty box of :mod:`.bands`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..costs import Costs
from ..engine.options import EngineOptions
from ..errors import NumalabValueError
from ..provenance import Provenance, provenance_of
from ..topology import KERNEL_COSTS, PRESET_SOURCES, Topology

__all__ = ["Constant", "JOB_PROVENANCE", "TOPOLOGY_FIGURES", "topology_provenance", "constants", "fitted_rows",
           "banded", "provenance_markdown", "CALIBRATION_PRESETS"]

#: the module-level constants of the LKP job model (numalab.fidelity.rules)
JOB_PROVENANCE = {
    "JOB_ITERATIONS": Provenance("measurement", "the robot's job path says '4x' (calibration.md): every test "
                                                "runs four times per job"),
    "JOB_OVERHEAD_S": Provenance("derived", "the published job time less four times its tests' seconds, "
                                            "2200 - 4 x (341.49 + 186.67 + 21.17) = 2.7 s over four iterations "
                                            "(lkp-rfc2023-p5-vs-p4; start_bench.sh's make and awk), rounded to "
                                            "1 s each; no judged row is set from it"),
}

#: Topology fields that are hardware figures (the rest -- name, source -- are labels)
TOPOLOGY_FIGURES = ("nodes", "cpus_per_node", "distance", "smt", "local_latency_ns", "remote_latency_ns",
                    "node_bw_GBps", "write_efficiency", "link_bw_GBps", "mem_per_node_GiB", "thread_bw_GBps", "line_same_node_ns",
                    "line_remote_ns")
#: the presets of the robot's machines (the calibration set's topologies)
CALIBRATION_PRESETS = ("2s-128", "2s-88-csl", "2s-224-spr")

# Until the presets carry their own per-field provenance (Topology.provenance()), a preset's
# figures are read from its docstring's words: the machine's shape and vendor figures are
# "datasheet", figures copied or scaled from another preset "derived", figures with no vendor
# source "assumed". The ranges are generic (a sustained bandwidth is 60-85 % of the DRAM peak
# in public STREAM runs; published idle latencies of one part differ by about 10 %), not a
# measurement of these machines.
_SHAPE = ("nodes", "cpus_per_node", "distance", "smt", "mem_per_node_GiB")
_NO_VENDOR_FIGURE = ("thread_bw_GBps", "line_same_node_ns", "line_remote_ns")
_DERIVED = {
    "2s-88-csl": ("node_bw_GBps", "link_bw_GBps"),
    "2s-224-spr": ("local_latency_ns", "remote_latency_ns", "node_bw_GBps", "link_bw_GBps"),
}
_GENERIC_BAND = {"node_bw_GBps": 0.25, "link_bw_GBps": 0.25, "thread_bw_GBps": 0.25,
                 "local_latency_ns": 0.10, "remote_latency_ns": 0.10,
                 "line_same_node_ns": 0.20, "line_remote_ns": 0.20}
_GENERIC_BAND_SOURCE = "generic +-{:.0%} until the preset carries its own range (not a measurement of this machine)"


def topology_provenance(topology) -> dict[str, Provenance]:
    """Field -> :class:`~numalab.provenance.Provenance` of a topology's hardware figures.

    The topology's own ``provenance()`` when it has one (presets with per-field sources);
    otherwise read from the preset's source line (:data:`numalab.topology.PRESET_SOURCES`) and
    docstring: ``datasheet`` for the machine's shape and vendor figures, ``derived`` where the
    docstring says a figure is copied or scaled from another preset, ``assumed`` where it says
    there is no vendor figure, each with a generic band (module comment). A user-defined
    topology's figures are ``assumed`` ("given by the user")."""
    topo = Topology.coerce(topology)
    own = getattr(topo, "provenance", None)
    if callable(own):
        return {k: v for k, v in dict(own()).items() if isinstance(v, Provenance)}
    preset = topo.name.removesuffix("+custom")
    source = PRESET_SOURCES.get(preset)
    out = {}
    for name in TOPOLOGY_FIGURES:
        if source is None or (topo.name.endswith("+custom") and name not in _SHAPE):
            kind, text = "assumed", f"given by the user (topology {topo.name!r})"
        elif name in _SHAPE:
            kind, text = "datasheet", source
        elif name in _DERIVED.get(preset, ()):
            kind, text = "derived", f"{source} (Topology.preset docstring: derived from another preset's figure)"
        elif name in _NO_VENDOR_FIGURE:
            kind, text = "assumed", f"{source} (no vendor figure; as 2s-128)"
        else:
            kind, text = "datasheet", f"{source} (vendor peak or commonly published STREAM / MLC figure)"
        rel = _GENERIC_BAND.get(name)
        value = getattr(topo, name)
        band = (value * (1 - rel), value * (1 + rel)) if rel else None
        out[name] = Provenance(kind, text, band=band, band_source=_GENERIC_BAND_SOURCE.format(rel) if rel else "")
    return out


@dataclass(frozen=True)
class Constant:
    """One default constant: ``group`` (``"Costs"``, ``"EngineOptions"``, ``"job"`` or
    ``"Topology <preset>"``), ``name``, ``default`` and its :class:`Provenance`."""

    group: str
    name: str
    default: object
    provenance: Provenance


def _dataclass_constants(group, cls):
    prov = provenance_of(cls)
    missing = [f.name for f in fields(cls) if f.name not in prov]
    if missing:
        raise NumalabValueError(f"{group}: fields without provenance: {', '.join(missing)} "
                                f"(declare them with numalab.provenance.constant)")
    return [Constant(group, f.name, f.default, prov[f.name]) for f in fields(cls)]


def constants(presets=CALIBRATION_PRESETS) -> list[Constant]:
    """Every default constant (module docstring), the topology figures of ``presets``."""
    from . import rules

    out = _dataclass_constants("Costs", Costs) + _dataclass_constants("EngineOptions", EngineOptions)
    out += [Constant("job", name, getattr(rules, name), prov) for name, prov in JOB_PROVENANCE.items()]
    for preset in presets:
        topo = Topology.preset(preset)
        for name, prov in topology_provenance(topo).items():
            if name in KERNEL_COSTS and getattr(topo, name) is None:
                continue    # not measured: the futex model's FutexCosts as stated (docs/futex.md's table)
            out.append(Constant(f"Topology {preset}", name, getattr(topo, name), prov))
    return out


def fitted_rows() -> dict[str, list[str]]:
    """Published row id (``"<table>|<metric>|<quantity>"``) -> the fitted constants set from it
    (``"Topology 2s-128.write_efficiency"``, ``"EngineOptions.lb_migrate_hz"``, ...): the
    constants of the code and the figures of the calibration presets."""
    out: dict[str, list[str]] = {}
    for c in constants():
        for rid in c.provenance.fitted_to:
            out.setdefault(rid, []).append(f"{c.group}.{c.name}")
    return out


def banded(topology=None) -> dict[tuple[str, str], Provenance]:
    """The constants with a plausible range, ``(owner, name) -> Provenance``; owner ``"costs"``,
    ``"options"`` (numeric engine options) or ``"topology"`` (the figures of ``topology``, a
    preset or Topology; left out when None)."""
    out = {("costs", n): p for n, p in provenance_of(Costs).items() if p.band is not None}
    out.update({("options", n): p for n, p in provenance_of(EngineOptions).items() if p.band is not None})
    if topology is not None:
        out.update({("topology", n): p for n, p in topology_provenance(topology).items() if p.band is not None})
    return out


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, tuple):  # a SLIT matrix
        return "SLIT " + " / ".join(",".join(map(str, r)) for r in value)
    return str(value)


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def provenance_markdown(presets=CALIBRATION_PRESETS) -> str:
    """The provenance table of docs/fidelity.md: one line per constant (:func:`constants`)."""
    lines = ["| constant | default | kind | source | fitted to | plausible range: its source |",
             "|---|---|---|---|---|---|"]
    for c in constants(presets):
        p = c.provenance
        fitted = "<br>".join(f"`{_md(r)}`" for r in p.fitted_to)
        band = f"{_fmt(p.band[0])} – {_fmt(p.band[1])}: {_md(p.band_source)}" if p.band is not None else ""
        lines.append(f"| `{c.group}.{c.name}` | {_md(_fmt(c.default))} | {p.kind} | {_md(p.source)} | {fitted} | "
                     f"{band} |")
    kinds = {}
    for c in constants(presets):
        kinds[c.provenance.kind] = kinds.get(c.provenance.kind, 0) + 1
    lines.append("")
    lines.append(f"{sum(kinds.values())} constants: " + ", ".join(f"{n} {k}" for k, n in kinds.items()) + ".")
    return "\n".join(lines) + "\n"

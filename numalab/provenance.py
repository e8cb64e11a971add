"""Where every default constant comes from: one record per constant, read by the docs, the
fidelity verdicts and the uncertainty bands.

A constant is one of

* ``kernel`` -- a kernel default (a sysctl, a ``#define``), with the file or commit;
* ``datasheet`` -- a vendor figure (ark.intel.com, a product brief, JEDEC speed × channels);
* ``measurement`` -- a published measurement (a mail's Message-ID, a paper, a public benchmark
  repository), of this machine or its platform;
* ``derived`` -- arithmetic on the above (say which and how);
* ``assumed`` -- a modelling choice with no source (say why it is harmless, or what would
  measure it);
* ``fitted`` -- set from published rows of the calibration set. ``fitted_to`` names those
  rows; ``numalab reproduce`` marks them ``fitted`` and does not count them as reproduced.

``band`` is a plausible ``(lo, hi)`` range from the source, in the constant's own units, for
the constants whose value is uncertain (bandwidths, latencies, rates); ``band_source`` says
where the range comes from. The uncertainty bands of ``numalab reproduce`` are taken over these
ranges.

A row of the calibration set is named ``"<table>|<metric>|<quantity>"``, the first three
columns of ``fidelity.csv`` (``"lkp-rfc2023-p5-vs-p4|autonuma-benchmark.numa01_THREAD_ALLOC.seconds|rfc2023-p4 seconds"``).

Pure data: no numpy, no xarray.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass

__all__ = ["Provenance", "KINDS", "constant", "provenance_of", "row_id"]

#: the kinds of source a constant may have, most to least direct
KINDS = ("kernel", "datasheet", "measurement", "derived", "assumed", "fitted")


def row_id(table: str, metric: str, quantity: str) -> str:
    """The name of one published row: ``"<table>|<metric>|<quantity>"`` (``fidelity.csv``'s
    first three columns)."""
    return f"{table}|{metric}|{quantity}"


@dataclass(frozen=True)
class Provenance:
    """The source of one constant (module docstring): ``kind`` (one of :data:`KINDS`),
    ``source`` (the citation or derivation, one sentence), ``fitted_to`` (row ids, for
    ``kind == "fitted"``), ``band`` (plausible ``(lo, hi)`` in the constant's units, or None
    when the value is not uncertain) and ``band_source``."""

    kind: str
    source: str
    fitted_to: tuple = ()
    band: tuple | None = None
    band_source: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"provenance kind={self.kind!r}; allowed: {', '.join(KINDS)}")
        if not isinstance(self.source, str) or not self.source.strip():
            raise ValueError("provenance source must be a non-empty sentence")
        object.__setattr__(self, "fitted_to", tuple(self.fitted_to))
        if self.kind == "fitted" and not self.fitted_to:
            raise ValueError("a fitted constant must name the rows it was fitted to (fitted_to)")
        if self.kind != "fitted" and self.fitted_to:
            raise ValueError(f"fitted_to is only for kind='fitted' (kind={self.kind!r})")
        if self.band is not None:
            lo, hi = (float(v) for v in self.band)
            if not lo <= hi:
                raise ValueError(f"provenance band={self.band!r}: lo must be <= hi")
            object.__setattr__(self, "band", (lo, hi))
            if not self.band_source.strip():
                raise ValueError("a band needs its band_source")


def constant(default, *, kind: str, source: str, fitted_to=(), band=None, band_source: str = "", **metadata):
    """A dataclass field whose metadata carries its :class:`Provenance` (``metadata["provenance"]``)
    beside any other metadata (``doc``, bounds, ...)."""
    prov = Provenance(kind=kind, source=source, fitted_to=fitted_to, band=band, band_source=band_source)
    return field(default=default, metadata={**metadata, "provenance": prov})


def provenance_of(cls_or_obj) -> dict:
    """Field name -> :class:`Provenance` of a dataclass (class or instance) whose fields were
    declared with :func:`constant`; fields without one are left out."""
    if not is_dataclass(cls_or_obj):
        raise TypeError(f"provenance_of needs a dataclass, not {type(cls_or_obj).__name__}")
    return {f.name: f.metadata["provenance"] for f in fields(cls_or_obj) if "provenance" in f.metadata}

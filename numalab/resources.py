"""Folders numalab ships beside its code: found in a source checkout (``<repo>/<name>``) or,
when installed, inside the package (pyproject.toml maps ``data/`` to ``numalab/published`` and
``notebooks/`` to ``numalab/notebooks``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["shipped_dir"]

_HERE = Path(__file__).resolve().parent


def shipped_dir(checkout_name: str, package_name: str, pattern: str) -> Path:
    """The first of ``<repo>/<checkout_name>`` and ``numalab/<package_name>`` that holds a file
    matching ``pattern``."""
    for candidate in (_HERE.parent / checkout_name, _HERE / package_name):
        if candidate.is_dir() and any(candidate.glob(pattern)):
            return candidate
    raise FileNotFoundError(f"numalab's {checkout_name}/ folder is missing from this installation")

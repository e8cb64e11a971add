"""numalab's version (kept in one place; pyproject reads it)."""

__version__ = "0.1.0"

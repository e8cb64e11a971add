"""numalab's version (kept in one place; pyproject reads it).

Bump it whenever a model's numbers change: the sweep cache keys every point on it
(``numalab.sweeps.grid.code_version``), so a cache written by another model is never reused."""

__version__ = "0.3.0"

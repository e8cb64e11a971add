"""numalab's version (kept in one place; pyproject reads it).

Bump it whenever a model's numbers change. The sweep cache keys every point on it
(``numalab.sweeps.grid.code_version``), so a cache written by another release is never reused.
The key also holds a digest of the installed sources (``grid.model_digest``), so an edited,
unreleased model does not reuse points either."""

__version__ = "0.12.0"

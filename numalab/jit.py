"""Whether numba's compiled loops may run: the one switch of numalab's optional compiled code.

numalab's compiled loops (the futex discrete-event loop, :mod:`numalab.futex.events_compiled`,
and the NUMA-balancing engine's step, :mod:`numalab.engine.compiled`) are optional: without
numba (``pip install 'numalab[fast]'``), or with ``NUMALAB_JIT=0`` in the environment, the numpy
code runs instead, with bit-identical results. The numpy code is the oracle the compiled loops
are tested against.
"""

from __future__ import annotations

import os

__all__ = ["available", "ENV"]

#: the environment variable that turns the compiled loops off (``NUMALAB_JIT=0``)
ENV = "NUMALAB_JIT"


def available() -> bool:
    """True when numba imports and ``NUMALAB_JIT`` is not ``0``."""
    if os.environ.get(ENV, "1") == "0":
        return False
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True

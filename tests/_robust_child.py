"""Child process of tests/test_robust.py's signal tests: ``numalab sweep`` of the slow toy
runner on 2 local worker processes (the pool is used however quick the points are).

    python tests/_robust_child.py CACHE_DIR OUT.nc
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _sweep_helpers  # noqa: E402,F401  registers the "toy" kind

from numalab.cli import main  # noqa: E402
from numalab.sweeps import executors  # noqa: E402

executors.POOL_MIN_S = 0.0

ARGS = ["sweep", "--kind", "toy", "--set", "size=3,5", "--set", "rate=1.0,2.0,0.5", "--set", "label=a,b",
        "--seeds", "4", "--workers", "2", "--batch-size", "1", "--no-progress"]

if __name__ == "__main__":
    sys.exit(main([*ARGS, "--cache", sys.argv[1], "--out", sys.argv[2]]))

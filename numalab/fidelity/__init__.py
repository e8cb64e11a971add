"""Published against simulated: the kernel test robot's tables (``data/``), judged row by row.

* :mod:`.rules` -- the verdicts: the published rule of ``calibration.md`` (``verdict``), the
  strict rule researchers apply (``strict_verdict``) and robustness over the uncertainty box
  (``robust``), and the counts ``numalab reproduce`` prints;
* :mod:`.tables` -- :func:`compare` (one row per published number), the LKP job's tests, whole-job
  time and counters, the calibration tables and their machines;
* :mod:`.runs` -- :func:`simulate_fidelity`: the engine calls every table needs, on local
  processes, one progress tick per call;
* :mod:`.constants` -- every default constant with its provenance, the rows fitted constants were
  set from (``fitted``), the provenance table of docs/fidelity.md;
* :mod:`.bands` -- the uncertainty box over the constants' plausible ranges and each row's
  simulated range over it;
* :mod:`.crossval` -- cross-validation: fitted constants refitted and mechanism switches chosen on
  all machines (or tables) but one, scored on the one left out;
* :mod:`.published` -- a posted mmtests or LKP table as a published table (``numalab compare``).
"""

from .bands import apply_bands, box, box_points, simulate_bands
from .constants import banded, constants, fitted_rows, provenance_markdown, topology_provenance
from .rules import (INTERVAL_Z, JOB_ITERATIONS, JOB_OVERHEAD_S, NOT_JUDGED, REPRODUCED, ROBUST, STRICT_BASE_TOL, counts,
                    counts_text, judge, strict_verdict, verdict_base, verdict_change)
from .runs import Call, Point, execute, plan, simulate_calibration, simulate_fidelity
from .tables import (VMSTAT_COUNTERS, calibration_tables, compare, job_counter, job_elapsed,
                     job_tests, paired_changes, simulated_change, spread_rows, spread_total, table_preset,
                     table_rows, table_sim, unpaired_std)

__all__ = [
    "verdict_change", "verdict_base", "strict_verdict", "judge", "counts", "counts_text", "REPRODUCED",
    "NOT_JUDGED", "ROBUST", "INTERVAL_Z", "STRICT_BASE_TOL", "JOB_ITERATIONS", "JOB_OVERHEAD_S",
    "VMSTAT_COUNTERS", "simulated_change", "unpaired_std", "compare", "job_tests", "job_elapsed", "job_counter",
    "table_preset", "calibration_tables", "table_sim", "table_rows", "paired_changes", "spread_rows", "spread_total",
    "simulate_fidelity", "simulate_calibration",
    "plan", "execute", "Call", "Point", "constants", "fitted_rows", "banded", "provenance_markdown",
    "topology_provenance", "box", "box_points", "apply_bands", "simulate_bands",
]

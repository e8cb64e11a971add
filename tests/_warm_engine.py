"""Compile the NUMA-balancing engine into numba's cache, beside a test session that has started
(tests/conftest.py runs this in the background on a fresh install).

It takes the engine's compile lock (:func:`numalab.engine.compiled._nb.compile_lock`) first and
says so on stdout ("locked"), so that conftest can let the test workers start: a worker, a
notebook kernel or a sweep worker that reaches the engine while this compiles waits for the
lock and then loads the cache, and the tests that never run the engine go on meanwhile.

    python tests/_warm_engine.py
"""

import numalab as nl
from numalab.engine import make_batch
from numalab.engine.compiled._nb import compile_lock
from numalab.engine.compiled.decide import pack_policy
from numalab.engine.compiled.loop import COMPILING, advance, call_phase
from numalab.engine.compiled.state import make_scratch, pack_layout, pack_state


def main() -> None:
    wl = nl.workload("numa01", nl.Topology.preset("2s-128"), threads=2, size_bytes=4 << 20, loops=1)
    with compile_lock(advance, COMPILING):
        print("locked", flush=True)
        make_batch(wl, "6.12", [0], kernel="numba", max_time=0.2).run()          # loop.advance
    b = make_batch(wl, "6.12", [0], kernel="numba", max_time=0.2)
    with compile_lock(call_phase):                                                # the phase tests' entry
        call_phase(0, pack_layout(b), pack_policy(b), pack_state(b), make_scratch(b, [0.0, b.dt]), 0, 0)


if __name__ == "__main__":
    main()

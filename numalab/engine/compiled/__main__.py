"""``python -m numalab.engine.compiled > numalab/engine/compiled/structs.py``: print the structs
module for today's field lists (:func:`.state.structs_source`, on a tiny batch's packed types)."""

import numalab as nl
from numalab.engine import make_batch
from numalab.engine.compiled.decide import pack_policy
from numalab.engine.compiled.state import make_scratch, pack_layout, pack_state, structs_source

b = make_batch(nl.workload("numa01", nl.Topology.preset("2s-128"), threads=4, size_bytes=16 << 20, loops=1), "6.12", [0])
print(structs_source(pack_layout(b), pack_policy(b), pack_state(b), make_scratch(b, [0.0, b.dt])), end="")

"""numalab.counters: the one table of per-run counters drives the engine's allocation and the
Dataset's variables and attrs."""

import numalab as nl
from numalab.counters import COUNTER_NAMES, COUNTERS, VARIABLE_ATTRS, VMSTAT, counter, reason_variable
from numalab.engine import make_batch, simulate
from numalab.reasons import REASONS, SKIP_REASONS


def test_engine_allocates_exactly_the_table():
    wl = nl.workload("numa02", nl.Topology.preset("2s-ivb-40"), loops=10)
    b = make_batch(wl, nl.Policy.profile("6.12"), [0])
    assert tuple(b.counters.events) == COUNTER_NAMES


def test_dataset_variables_and_attrs_come_from_the_table():
    wl = nl.workload("numa02", nl.Topology.preset("2s-ivb-40"), loops=10)
    ds = simulate(wl, "6.12", seeds=1, max_time=1.0)
    for c in COUNTERS:
        assert ds[c.name].attrs == c.attrs
    for r in REASONS:
        v = reason_variable(r, r in SKIP_REASONS)
        assert ds[v.name].attrs == v.attrs
    assert ds.elsp.attrs == VARIABLE_ATTRS["elsp"]
    # vmstat counters carry their kernel name and their mmtests "Ops" label
    for name in VMSTAT:
        assert counter(name).kernel_name == name and counter(name).mmtests_label

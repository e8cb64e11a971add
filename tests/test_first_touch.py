"""Option first_touch_wait: the init's first touches zero each new folio in the faulting
writer's own time (docs/fidelity.md, "numa01's placement in a real kernel"). The three engines
agree on it exactly, and it moves the first scan of numa01's buffer past the bound init, as the
kernel's trace in a virtual machine showed. On by default since 0.12.0."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numalab as nl
from numalab.costs import Costs
from numalab.engine import EngineOptions, make_batch
from numalab.reference import engine as ref_engine
from numalab.topology import Topology
from numalab.workloads import PH_INIT, workload

TINY = Topology(nodes=2, cpus_per_node=4, smt=2, node_bw_GBps=20.0, link_bw_GBps=8.0, name="tiny")
MiB = 1 << 20


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16), profile=st.sampled_from(["6.12", "6.4", "rfc2023-p4"]),
       threads=st.integers(1, 4), name=st.sampled_from(["numa01", "numa01_THREAD_ALLOC", "numa02"]),
       zero=st.sampled_from([0.05, 0.5, 8.0]))
def test_engine_matches_reference_with_first_touch_wait(seed, profile, threads, name, zero):
    wl = workload(name, TINY, threads=threads, size_bytes=16 * MiB, loops=3)
    pol = nl.Policy.profile(profile)
    o = EngineOptions.coerce(dict(max_time=6.0, first_touch_wait=True))
    costs = Costs(zero_GBps=zero)
    batch = make_batch(wl, pol, [seed], costs=costs, **o.to_dict()).run()
    ref = ref_engine.Replica(wl, pol, seed, o.to_dict(), costs).run()
    for k, v in ref.cnt.items():
        assert int(batch.cnt[k][0]) == v, k
    assert batch.elsp[0] == ref.elsp
    assert batch.syst[0] == ref.syst
    assert batch.regions.node[0].tolist() == ref.r_node


def test_each_init_writer_owes_its_share_of_the_zeroing():
    wl = workload("numa01", TINY, threads=4, size_bytes=64 * MiB, loops=3)
    costs = Costs(zero_GBps=2.0)
    on = make_batch(wl, nl.Policy.profile("6.12"), [0, 1], costs=costs, first_touch_wait=True)
    off = make_batch(wl, nl.Policy.profile("6.12"), [0, 1], costs=costs, first_touch_wait=False)
    init = on.tasks.phase == PH_INIT
    assert init.sum() == 2 * 8                              # two replicas x 2 processes x 4 writers
    # 2 x 64 MiB zeroed at 2 GB/s, shared by the 8 writers
    np.testing.assert_allclose(on.tasks.kdebt[init], 2 * 64 * MiB / 8 / 2e9)
    assert (on.tasks.kdebt[~init] == 0).all() and (off.tasks.kdebt == 0).all()
    # the seconds system time counted before are the same seconds
    np.testing.assert_allclose(on.counters.syst, off.counters.syst)


def test_the_first_scan_finds_the_bound_init_as_the_kernel_did():
    """A slow first touch (the virtual machine's: about 0.07 GB/s a writer) keeps numa01's
    writers in their MPOL_BIND init past the first task_numa_work run at scan_delay (1 s): that
    run finds every VMA unsuitable, the next creates the VMAs' state and waits (scan_delay), the
    third protects the buffer -- the kernel's sequence (the default since 0.12.0). With the option
off (the 0.11.0 engine: the zeroing as system time only) the first run does."""
    topo = Topology(nodes=2, cpus_per_node=4, smt=1, distance=((10, 20), (20, 10)), local_latency_ns=90.0,
                    remote_latency_ns=90.0, node_bw_GBps=10.0, write_efficiency=1.0, link_bw_GBps=10.0,
                    thread_bw_GBps=1.25, mem_per_node_GiB=2, name="vm-like")
    wl = workload("numa01", topo, threads=4, size_bytes=256 * MiB, loops=20)
    kw = dict(seeds=[0], topology=topo, init_node=0, max_time=4.0, costs={"zero_GBps": 0.07})

    def first_buffer_scan(tr):
        vis = (tr.vma_kind.values == "buffer") & tr.scanned.values
        return float(tr.t.values[tr.visit_run.values[vis]].min())

    slow = nl.scan_trace(wl, "6.12", first_touch_wait=True, **kw)
    runs = np.flatnonzero(slow.mm.values == 0)                 # the first process's runs, in order
    first = slow.visit_run.values == runs[0]
    assert slow.t.values[runs[0]] == pytest.approx(1.0, abs=0.05)
    assert set(slow.reason.values[first]) == {"unsuitable"}
    second = slow.visit_run.values == runs[1]
    assert "scan_delay" in set(slow.reason.values[second])
    assert first_buffer_scan(slow) == pytest.approx(3.0, abs=0.05)
    assert first_buffer_scan(nl.scan_trace(wl, "6.12", **kw)) == first_buffer_scan(slow)   # the default
    fast = nl.scan_trace(wl, "6.12", first_touch_wait=False, **kw)
    assert first_buffer_scan(fast) == pytest.approx(1.0, abs=0.05)


def test_the_compiled_engine_gives_the_same_dataset():
    from golden import digest

    from numalab.engine.compiled import available

    if not available():
        pytest.skip("numba is not installed (pip install 'numalab[fast]')")
    wl = workload("numa01", TINY, threads=4, size_bytes=64 * MiB, loops=20)
    kw = dict(seeds=[0, 1], topology=TINY, max_time=20.0, first_touch_wait=True, costs={"zero_GBps": 0.2})
    a = nl.simulate(wl, "6.12", kernel="numpy", **kw)
    b = nl.simulate(wl, "6.12", kernel="numba", **kw)
    assert digest(a) == digest(b)
    assert float(a.numa_hint_faults.min()) > 0

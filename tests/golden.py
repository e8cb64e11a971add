"""Fingerprints of what numalab computes, for the bit-identity test of ``test_golden.py``.

A fingerprint is the sha256 of every data variable and coordinate of a result Dataset (its
dtype, shape and raw bytes), so any change of any number -- one ULP of one seed's ``elsp`` or
one count of one skip reason -- changes it. Attrs are left out on purpose: they record the
numalab version and option names, which a restructure may reword without changing a number.

The stored fingerprint (``tests/data/golden.json``) was taken from the engine *before* the
restructure of issue 10 (``python tests/golden.py --write``) and must never be regenerated to
make a test pass: a changed fingerprint means a changed result. Intentional model changes retake
only the keys they change, checked key by key: the futex keys (the hardware-derived futex costs;
retaken again for issue 24's kernel and hardware mechanisms: nanosleep slack, line ownership,
conflicts, node-sorted rounds, the refcount as an atomic line), the two numa01 keys (the shared
init as coherence traffic), whose earlier fingerprints stay stored under
``.../init_coherence=False`` and are still met with that switch (and ``first_arrival``) off, and
the three ``simulate/`` keys (first-arrival faults on swept regions, 0.4.0), whose earlier
fingerprints stay stored under ``.../first_arrival=False``. Those older fingerprints predate the
history-length counters, so only their own variables are compared. The ``local_fraction`` series
of the two ``simulate/numa01_THREAD_ALLOC/2s-128`` keys was retaken once more when
``costs.progress_rates`` stopped giving every replica of a refresh the coherent init rates as
soon as one replica needed them (a seed's numbers depended on its batch; every other variable,
per-run values included, unchanged). When the write capacity became a property of the machine
(``Topology.write_efficiency``: 0.21 fitted to Ice Lake for every machine before, now 0.5 from the
RFO bound on the Ivy Bridge preset, 2s-128 unchanged), the two keys on ``2s-ivb-40``
(``simulate/numa01/2s-ivb-40`` and ``sweep/numa02``) were retaken; the older fingerprints on that
preset are still met at the older capacity (:data:`OLD_CAPACITY`), which their cases use. When a
remote write came to load both directions of the link (0.6.0, engine option
``link_both_directions``: the RFO's data one way, the write-back the other;
``Costs.link_write_efficiency`` 0.5 -> 1.0), the keys with remote writes changed:
``simulate/numa01/2s-ivb-40``, ``simulate/numa01_THREAD_ALLOC/2s-128`` and ``sweep/numa02`` were
retaken. Their 0.5.0 fingerprints stay stored under ``.../link_both_directions=False``
(:data:`LINK_OFF`) and are met with that switch off, and every older case runs with it off too,
so its stored fingerprint is still met unchanged. When the engine took the kernel's tick clock
(0.8.0, engine option ``tick_clock``: task_tick_numa at every tick, so a thread behind its
threshold catches up and can win at any of those ticks, a first trigger advancing node_stamp by
the period it was compared with, VMA timestamps in jiffies), ``simulate/numa01/2s-ivb-40`` and
``simulate/numa01_THREAD_ALLOC/2s-128`` were retaken (the numa02 keys and the sweep did not
change). Their 0.7.0 fingerprints stay stored under ``.../tick_clock=False`` (:data:`TICK_OFF`)
and are met with that switch off; every older case runs with it off too. When perf bench's
threads came to be placed by the machine's CPU numbering (``Topology.cpu_numbering``, default
``cores-first``: Linux CPU i < ncpus/2 is one thread on every core of every node, not node 0's
cores and then its siblings), the two futex keys were retaken (their 8- and 16-thread points run
on both nodes of ``2s-ivb-40`` now). Their earlier fingerprints stay stored under
``.../cpu_numbering=node`` and are met bit for bit on ``2s-ivb-40`` numbered node by node.
When the threads on a core came to share its L1/L2 (0.9.1, ``FutexCosts.smt_shared_l1``: a line
a core-mate held last is an L1/L2 hit, and an RMW on the rcuref line rides a sibling's pending
one), the futex keys whose points run two threads on a core were retaken
(``futex.sweep/mva``, ``futex.sweep/mva/cpu_numbering=node`` and
``futex.sweep/simulation/cpu_numbering=node``; ``futex.sweep/simulation`` runs 16 threads on 20
cores and did not change). The earlier fingerprints of all four stay stored under
``.../smt_shared_l1=False`` and are met bit for bit with that switch off.
When a malloc'd buffer came to have base-page edges (0.10.0, engine option ``malloc_edges``:
glibc maps ``malloc(SIZE)`` at SIZE + 4 KiB on a page, not a 2 MiB, boundary, so one region's
worth of its pages cannot be a huge page; traced with real kernels in benchmarks/vm_trace.py),
every ``simulate/`` key and ``sweep/numa02`` were retaken. Their 0.9.1 fingerprints stay stored
under ``.../malloc_edges=False`` (:data:`MALLOC_OFF`) and are met with that switch off; every
older case runs with it off too. When the load balancer's pull back and task_numa_migrate came
to decide as the kernel does (0.11.0, engine options ``lb_refill_locality``: the pulled task goes
back when migrate_degrades_locality vetoes the resident, and ``stick_numa``: task_numa_compare's
SMALLIMP bar and adjustments, a grouped task's sched_setnuma on a stick; traced in QEMU),
``simulate/numa01/2s-ivb-40`` and ``simulate/numa02/2s-128`` were retaken. Their 0.10.0
fingerprints stay stored under ``.../stick_numa=False`` (:data:`STICK_OFF`) and are met with both
switches off; every older case runs with them off too. When a thread's first touches came to
cost it their zeroing before its init writes (0.12.0, engine option ``first_touch_wait``:
do_huge_pmd_anonymous_page zeroes each new folio in the faulting task; traced in QEMU), every
``simulate/`` key and ``sweep/numa02`` were retaken. Their 0.11.0 fingerprints stay stored under
``.../first_touch_wait=False`` (:data:`FTW_OFF`) and are met with that switch off; every older
case runs with it off too. The counter ``numa_sticks`` (the kernel's ``sched_stick_numa``, 0.12.0)
was added to every stored ``simulate/`` and ``sweep/`` case beside variables that did not change.
When a move into an idle CPU came to follow task_numa_find_cpu's ``maymove`` (0.12.0, engine option
``numa_maymove``: no move that unbalances the nodes beyond imb_numa_nr, no swap in a group into
spare capacity), ``simulate/numa01_THREAD_ALLOC/2s-128`` and ``simulate/numa02/2s-128`` were
retaken. Their earlier fingerprints stay stored under ``.../numa_maymove=False``
(:data:`MAYMOVE_OFF`) and are met with that switch off; every older case runs with it off too.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).parent / "data" / "golden.json"

#: three workloads x seven policies (the five profile families plus the three adaptive rules,
#: which the hook objects of the restructure touch) x three seeds
WORKLOADS = [("numa01_THREAD_ALLOC", "2s-128"), ("numa02", "2s-128"), ("numa01", "2s-ivb-40")]
POLICIES = ["pre-6.4", "6.4", "6.12", "rfc2023-p5", "rfc2024-hot-shared",
            "6.12+adaptive:grow-shrink", "6.12+adaptive:span", "6.12+adaptive:popcount"]
SEEDS = [0, 1, 7]
#: the workloads with a shared bound init, also run with ``init_coherence=False`` and
#: ``first_arrival=False``: their fingerprint is the one stored before the shared init became
#: coherence traffic (docs/fidelity.md), so the two switches restore that model bit for bit
COHERENCE_OFF = [("numa01_THREAD_ALLOC", "2s-128"), ("numa01", "2s-ivb-40")]
#: every workload also run with ``first_arrival=False``: the fingerprint stored before swept
#: regions took first-arrival faults (0.3.0), so the switch restores that model bit for bit
FIRST_ARRIVAL_OFF = WORKLOADS
#: case keys whose stored fingerprint predates the history-length counters
#: (numalab.engine.history_stats): only the variables it holds are compared
OLDER = ("init_coherence=False", "first_arrival=False")
#: the workloads whose numbers changed when a remote write came to load both link directions
#: (0.6.0): also run with ``link_both_directions=False``, the model before it, bit for bit
LINK_OFF = [("numa01_THREAD_ALLOC", "2s-128"), ("numa01", "2s-ivb-40")]
#: the workloads whose numbers changed with the kernel's tick clock (0.8.0, engine option
#: ``tick_clock``: task_tick_numa at every tick, VMA timestamps in jiffies): also run with
#: ``tick_clock=False``, the 0.7.0 engine, bit for bit
TICK_OFF = [("numa01_THREAD_ALLOC", "2s-128"), ("numa01", "2s-ivb-40")]
#: the cases whose numbers changed when a malloc'd buffer's edges became base pages (0.10.0,
#: engine option ``malloc_edges``): also run with ``malloc_edges=False``, the 0.9.1 engine, bit for bit
MALLOC_OFF = WORKLOADS
#: the workloads whose numbers changed when the load balancer's pull back and task_numa_migrate
#: came to decide as the kernel does (0.11.0, engine options ``lb_refill_locality`` and
#: ``stick_numa``): also run with both off, the 0.10.0 engine, bit for bit; every older case
#: runs with them off too
STICK_OFF = [("numa01", "2s-ivb-40"), ("numa02", "2s-128")]
#: the cases whose numbers changed when the first touches' zeroing came to be waited for by the
#: writer that takes them (0.12.0, engine option ``first_touch_wait``): also run with it off, the
#: 0.11.0 engine, bit for bit; every older case runs with it off too
FTW_OFF = WORKLOADS
#: the workloads whose numbers changed when a move into an idle CPU came to follow
#: task_numa_find_cpu's maymove (0.12.0, engine option ``numa_maymove``): also run with it off,
#: bit for bit; every older case runs with it off too
MAYMOVE_OFF = [("numa01_THREAD_ALLOC", "2s-128"), ("numa02", "2s-128")]
MAYMOVE_OFF_OPTS = dict(numa_maymove=False)
FTW_OFF_OPTS = dict(first_touch_wait=False, **MAYMOVE_OFF_OPTS)
STICK_OFF_OPTS = dict(lb_refill_locality=False, stick_numa=False, **FTW_OFF_OPTS)
MAX_TIME = 60.0   # s simulated: enough for every mechanism to act, short enough for CI
#: the write capacity every machine had before it became Topology.write_efficiency (the older
#: fingerprints' model): Costs.write_efficiency = 0.21, fitted to Ice Lake
OLD_CAPACITY = 0.21


def _older_topology(topo: str):
    import numalab as nl
    return nl.Topology.preset(topo, write_efficiency=OLD_CAPACITY)


def digest(ds) -> dict[str, str]:
    """variable or coordinate name -> sha256 of (dtype, shape, bytes)."""
    out = {}
    for name in sorted(list(ds.data_vars) + list(ds.coords)):
        a = np.ascontiguousarray(ds[name].values)
        if a.dtype.kind in "OUS":
            raw = json.dumps([str(x) for x in a.ravel()]).encode()
        else:
            raw = a.tobytes()
        h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
        h.update(raw)
        out[name] = h.hexdigest()
    return out


def _policy(name):
    import numalab as nl
    if "+adaptive:" in name:
        prof, rule = name.split("+adaptive:")
        return nl.Policy.profile(prof, history="adaptive", adapt=rule)
    return nl.Policy.profile(name)


def fingerprints() -> dict[str, dict[str, str]]:
    """Every case -> its digest: nl.simulate over the grid above, a futex sweep, a nl.sweep."""
    import numalab as nl
    out = {}
    for wname, topo in WORKLOADS:
        wl = nl.workload(wname, nl.Topology.preset(topo))
        ds = nl.simulate(wl, [_policy(p) for p in POLICIES], seeds=SEEDS, max_time=MAX_TIME)
        out[f"simulate/{wname}/{topo}"] = digest(ds)
    for wname, topo in COHERENCE_OFF:
        wl = nl.workload(wname, _older_topology(topo))
        ds = nl.simulate(wl, [_policy(p) for p in POLICIES], seeds=SEEDS, max_time=MAX_TIME,
                         init_coherence=False, first_arrival=False, link_both_directions=False, tick_clock=False,
                         malloc_edges=False, **STICK_OFF_OPTS)
        out[f"simulate/{wname}/{topo}/init_coherence=False"] = digest(ds)
    for wname, topo in FIRST_ARRIVAL_OFF:
        wl = nl.workload(wname, _older_topology(topo))
        ds = nl.simulate(wl, [_policy(p) for p in POLICIES], seeds=SEEDS, max_time=MAX_TIME,
                         first_arrival=False, link_both_directions=False, tick_clock=False, malloc_edges=False,
                         **STICK_OFF_OPTS)
        out[f"simulate/{wname}/{topo}/first_arrival=False"] = digest(ds)
    for wname, topo in LINK_OFF:
        wl = nl.workload(wname, nl.Topology.preset(topo))
        ds = nl.simulate(wl, [_policy(p) for p in POLICIES], seeds=SEEDS, max_time=MAX_TIME,
                         link_both_directions=False, tick_clock=False, malloc_edges=False, **STICK_OFF_OPTS)
        out[f"simulate/{wname}/{topo}/link_both_directions=False"] = digest(ds)
    for wname, topo in TICK_OFF:
        wl = nl.workload(wname, nl.Topology.preset(topo))
        ds = nl.simulate(wl, [_policy(p) for p in POLICIES], seeds=SEEDS, max_time=MAX_TIME, tick_clock=False,
                         malloc_edges=False, **STICK_OFF_OPTS)
        out[f"simulate/{wname}/{topo}/tick_clock=False"] = digest(ds)
    for wname, topo in MALLOC_OFF:
        wl = nl.workload(wname, nl.Topology.preset(topo))
        ds = nl.simulate(wl, [_policy(p) for p in POLICIES], seeds=SEEDS, max_time=MAX_TIME, malloc_edges=False,
                         **STICK_OFF_OPTS)
        out[f"simulate/{wname}/{topo}/malloc_edges=False"] = digest(ds)
    for wname, topo in STICK_OFF:
        wl = nl.workload(wname, nl.Topology.preset(topo))
        ds = nl.simulate(wl, [_policy(p) for p in POLICIES], seeds=SEEDS, max_time=MAX_TIME, **STICK_OFF_OPTS)
        out[f"simulate/{wname}/{topo}/stick_numa=False"] = digest(ds)
    for wname, topo in FTW_OFF:
        wl = nl.workload(wname, nl.Topology.preset(topo))
        ds = nl.simulate(wl, [_policy(p) for p in POLICIES], seeds=SEEDS, max_time=MAX_TIME, **FTW_OFF_OPTS)
        out[f"simulate/{wname}/{topo}/first_touch_wait=False"] = digest(ds)
    for wname, topo in MAYMOVE_OFF:
        wl = nl.workload(wname, nl.Topology.preset(topo))
        ds = nl.simulate(wl, [_policy(p) for p in POLICIES], seeds=SEEDS, max_time=MAX_TIME, **MAYMOVE_OFF_OPTS)
        out[f"simulate/{wname}/{topo}/numa_maymove=False"] = digest(ds)
    for suffix, topo in (("", "2s-ivb-40"), ("/cpu_numbering=node", nl.Topology.preset("2s-ivb-40",
                                                                                      cpu_numbering="node"))):
        for l1, older in ((1.0, ""), (0.0, "/smt_shared_l1=False")):
            fx = nl.futex.sweep(buckets=[2, 16, 256], mode=["classic", "numa", "private"], threads=[8, 32],
                                seeds=2, topology=topo, costs=dict(smt_shared_l1=l1))
            out["futex.sweep/mva" + suffix + older] = digest(fx)
            fs = nl.futex.sweep(buckets=[2, 64], mode="private", threads=16, seeds=[3], topology=topo,
                                method="simulation", ops=200, costs=dict(smt_shared_l1=l1))
            out["futex.sweep/simulation" + suffix + older] = digest(fs)
    sw = nl.sweep({"workload": ["numa02"], "topology": ["2s-ivb-40"], "profile": ["6.12"],
                   "history": [2, 8], "max_time": [20.0]}, seeds=2, cache=False, progress=False, workers=1)
    out["sweep/numa02"] = digest(sw)
    sw = nl.sweep({"workload": ["numa02"], "topology": ["2s-ivb-40"], "profile": ["6.12"],
                   "history": [2, 8], "max_time": [20.0], **{k: [v] for k, v in FTW_OFF_OPTS.items()}},
                  seeds=2, cache=False, progress=False, workers=1)
    out["sweep/numa02/first_touch_wait=False"] = digest(sw.drop_vars(list(FTW_OFF_OPTS)))
    older = {"malloc_edges": [False], **{k: [v] for k, v in STICK_OFF_OPTS.items()}}
    sw = nl.sweep({"workload": ["numa02"], "topology": ["2s-ivb-40"], "profile": ["6.12"],
                   "history": [2, 8], "max_time": [20.0], **older}, seeds=2, cache=False, progress=False, workers=1)
    out["sweep/numa02/malloc_edges=False"] = digest(sw.drop_vars(list(older)))
    return out


if __name__ == "__main__":
    fp = fingerprints()
    if "--write" in sys.argv:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(fp, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN} ({len(fp)} cases)")
    else:
        print(json.dumps(fp, indent=1, sort_keys=True))

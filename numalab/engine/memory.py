"""Where memory is: every folio's node, the counts per node and per access class that follow from
it, and each node's capacity. The one module that places and moves folios.

Kernel counterparts: ``folio_nid`` (the node a folio's pages are on), the first touch of the
page allocator (the default policy's local node, ``numa_mem_id``, or the node a binding names),
``migrate_misplaced_folio``'s move of a folio to another node, a node's resident pages
(``node_page_state``) and the room ``migrate_balanced_pgdat`` asks of a target node. The state is
three coupled arrays of :class:`.state.Regions` that change together, only here: ``node`` (R, NR)
the node of every region, ``cls_node`` (R, C, N) regions of each access class on each node (the
node split the progress model reads), ``node_pages`` (R, N) resident base pages per node; plus
``total_pages`` (R,), conserved.

* :func:`first_touch` -- the node each region's first touch lands on (node B, a binding, or the
  toucher's nearest node with memory);
* :func:`counts` -- the per-class and per-node counts of a placement (the start of a run);
* :func:`migrate` -- folios of any regions to any node, the counts kept in step;
* :func:`node_free` -- the base pages each node can still take (capacity minus resident);
* :func:`capacity_pages` -- each node's capacity.

A first touch does not look at capacity (a node can start over-full, as before per-node
capacity existed); migrations do (:func:`node_free`). Memory tiering (promotion from a slow node
on a hinting fault, demotion by reclaim when a fast node runs low) is meant as one mechanism
module on top of these calls: ``migrate(b, r, regions, dst)`` for either direction and
``node_free(b)`` against a watermark; it would add the allocator's fallback to the next node of
the zonelist to :func:`first_touch` and its own counters, not touch this module's arrays.
"""

from __future__ import annotations

import numpy as np

from ..workloads import INIT_B, INIT_MAIN, INIT_OWNER
from .state import flat

__all__ = ["first_touch", "counts", "migrate", "node_free", "capacity_pages"]

PAGE_BYTES = 4096


def capacity_pages(topo) -> np.ndarray:
    """Each node's memory in base pages, ``(N,)`` int64 (0 for a memoryless node)."""
    return (topo.per_node("mem_per_node_GiB") * (1 << 30) // PAGE_BYTES).astype(np.int64)


def first_touch(b, init_node) -> np.ndarray:
    """``(R, NR)`` int64: the node each region starts on. A region's init is node B
    (``init_node``, per replica), the main thread's or the owner's first touch (landing on the
    nearest node with memory to the toucher's node,
    :attr:`numalab.topology.Topology.local_memory_node`), or a node the workload binds it to."""
    wl, lay, R, NR = b.wl, b.lay, b.R, b.lay.NR
    node = b.tasks.node
    init = np.broadcast_to(wl.region_init, (R, NR)).copy()
    mem_of = b.topo.local_memory_node
    init = np.where(init == INIT_B, mem_of.take(init_node)[:, None], init)
    main_node = node[:, lay.mains[0]] if lay.mains.size else np.zeros(R, dtype=np.int64)
    init = np.where(init == INIT_MAIN, mem_of.take(main_node)[:, None], init)
    # owner: the first thread writing the region's class, else the mm's main thread
    init = np.where(init == INIT_OWNER, mem_of.take(node[:, lay.region_owner]), init)
    return init.astype(np.int64)


def counts(lay, node) -> dict:
    """The counts of a placement ``node`` (R, NR): ``cls_node`` (R, C, N) regions per class and
    node, ``node_pages`` (R, N) resident base pages per node, ``total_pages`` (R,)."""
    R, N, C = node.shape[0], lay.N, lay.C
    present = lay.region_present
    cls_node = np.zeros((R, C, N), dtype=np.int64)
    for n in range(N):
        cls_node[:, :, n] = np.stack([np.bincount(lay.region_class, weights=(node[i] == n), minlength=C)
                                      for i in range(R)]).astype(np.int64)
    node_pages = np.stack([((node == n) * present[None, :]).sum(axis=1) for n in range(N)], axis=1)
    total_pages = (present[None, :] * np.ones((R, 1), dtype=np.int64)).sum(axis=1)
    return dict(cls_node=cls_node, node_pages=node_pages, total_pages=total_pages)


def migrate(b, r, regions, dst) -> np.ndarray:
    """Move the folios of ``regions`` of replicas ``r`` (aligned 1-D arrays, each (replica,
    region) at most once) to nodes ``dst``: their node, the class and node counts, and the
    replicas' rates (marked for a refresh). Returns the nodes they came from. The caller checks
    room (:func:`node_free`) and counts the event (``numa_pages_migrated``, a tiering counter)."""
    rg = b.regions
    N, C = b.lay.N, b.lay.C
    rq = r * rg.node.shape[1] + regions                 # flat (replica, region): 1-D takes and puts
    node = flat(rg.node)
    src = node[rq]
    node[rq] = dst
    b.rates.dirty[r] = True
    rc = (r * C + b.lay.region_class[regions]) * N
    np.add.at(flat(rg.cls_node), rc + src, -1)
    np.add.at(flat(rg.cls_node), rc + dst, 1)
    pages = b.lay.region_present[regions]
    np.add.at(flat(rg.node_pages), r * N + src, -pages)
    np.add.at(flat(rg.node_pages), r * N + dst, pages)
    return src


def node_free(b) -> np.ndarray:
    """``(R, N)`` int64: base pages each node can still take (its capacity minus its resident
    pages; negative when a first touch over-filled it)."""
    return b.lay.node_cap[None, :] - b.regions.node_pages

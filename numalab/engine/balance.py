"""The scheduler's load balancer: its rare cross-node pulls of benchmark threads.

Kernel path modelled (spec §3.5): ``load_balance`` -> ``detach_task`` -> ``set_task_cpu`` ->
``migrate_task_rq_fair`` -> ``update_scan_period``; a pull onto a full node is refilled by a
pull the other way (a swap). Rate: option ``lb_migrate_hz`` (:data:`.options.LB_MIGRATE_HZ`,
0 = off).
"""

from __future__ import annotations

import numpy as np

from .placement import move_task
from .progress import running_mask

__all__ = ["lb_moves", "refill_task"]


def refill_task(pref, t, j, dst):
    """The task the refill pull takes back from ``dst`` (option ``lb_refill_locality``).

    The pull left task ``t`` on a CPU of ``dst`` beside that CPU's resident ``j``; an idle CPU of
    ``t``'s old node pulls one of the two back (load_balance -> detach_tasks -> can_migrate_task),
    and only the one waiting can be detached. The arrival preempts the resident (EEVDF's
    wakeup_preempt on attach), so the resident waits and goes back -- unless
    ``migrate_degrades_locality`` vetoes it: a move away from the task's preferred node is "hot"
    when the runqueue also holds a task that does not prefer that node, while the arrival's move
    back to its own preferred node never is. So ``t`` goes back when ``j`` prefers ``dst`` and
    ``t`` does not, else ``j``. ``pref``: the replica's ``numa_preferred_nid`` (T,)."""
    return t if pref[j] == dst and pref[t] != dst else j


def lb_moves(b, u_lb):
    """The load balancer's cross-node pulls (option ``lb_migrate_hz``): a running, not
    CPU-bound task ``t`` with ``u_lb[t] < p = lb_migrate_hz * dt`` is pulled to another
    node; ``v = u_lb[t] / p`` (uniform on [0, 1)) picks the node ``k = floor(v (N-1))``
    among the other ``N - 1`` nodes with CPUs (a memory-only node has no runqueue to pull to)
    and ``w = v (N-1) - k`` the task pulled back when that node has no free CPU (the
    ``floor(w * n)``-th running unbound task there, in index order; with option
    ``lb_refill_locality``, :func:`refill_task` chooses between it and the pulled task). Tasks
    in increasing index order, per replica. Each move runs ``update_scan_period``."""
    p = b.o.lb_migrate_hz * b.dt
    cpu_nodes = b.topo.cpu_nodes
    N = cpu_nodes.size
    if p <= 0 or N < 2:
        return
    pulled = u_lb < p  # rare (a few steps per run): test it before the masks
    if not np.count_nonzero(pulled):
        return
    running = running_mask(b) & ~b.outcome.done[:, None]
    free = b.wl.cpu_bind < 0
    ev = running & pulled & free[None, :]
    if not np.count_nonzero(ev):
        return
    cap = b.lay.node_cpus
    for r in np.flatnonzero(ev.any(axis=1)).tolist():
        load = np.bincount(b.tasks.node[r][running[r]], minlength=b.lay.N)
        for t in np.flatnonzero(ev[r]).tolist():
            v = float(u_lb[r, t]) / p
            a = int(b.tasks.node[r, t])
            x = v * (N - 1)
            k = min(int(x), N - 2)
            w = x - k
            dst = int(cpu_nodes[k if cpu_nodes[k] < a else k + 1])
            if load[dst] < cap[dst]:
                move_task(b, r, t, dst, lb=True)
                load[a] -= 1
                load[dst] += 1
                continue
            q = np.flatnonzero((b.tasks.node[r] == dst) & running[r] & free)
            if q.size == 0:
                continue
            j = int(q[min(int(w * q.size), q.size - 1)])
            if b.o.lb_refill_locality:
                j = refill_task(b.numa.numa_preferred_nid[r], t, j, dst)
            move_task(b, r, t, dst, lb=True)
            move_task(b, r, j, a, lb=True)

"""Tiny batches for the per-phase tests: one process, a few threads, 2 nodes, and a step
context with all-zero draws so that one phase can be called alone."""

import numpy as np

import numalab as nl
from numalab.engine import make_batch
from numalab.engine.state import StepContext
from numalab.topology import Topology

MiB = 1 << 20


def tiny_topology(cpus_per_node=4):
    return Topology(nodes=2, cpus_per_node=cpus_per_node, smt=2, name="tiny")


def tiny_batch(rates=((1.0, 0.0), (0.0, 1.0)), profile="6.12", seeds=(0,), cpus_per_node=4, loop=True,
               **options):
    """A batch of ``from_access_matrix(rates)`` (threads x 4 MiB chunks); ``loop``: every worker
    in its loop phase and the main thread done, as after the benchmark's init."""
    wl = nl.workloads.from_access_matrix(np.array(rates, dtype=float), topology=tiny_topology(cpus_per_node),
                                         chunk_bytes=4 * MiB, loops=1000)
    b = make_batch(wl, nl.Policy.parse(profile), list(seeds), **options)
    if loop:
        b.tasks.phase[:] = np.where(wl.thread_main, 3, 2)
    return b, wl


def quiet_step(b, u_task=None):
    """A step context with all-zero draws (or the given u_task) for calling one phase alone."""
    R, T = b.R, b.lay.T
    z = np.zeros((R, T))
    return StepContext(t0=b.now, t1=b.now + b.dt, live=np.ones(R, dtype=bool), running=np.ones((R, T), dtype=bool),
                       u_prot=np.zeros((R, b.lay.K, 2)), u_task=z if u_task is None else u_task, u_lb=z,
                       slot=np.zeros(R, dtype=np.int64))


def workers(wl):
    return np.flatnonzero(~wl.thread_main)

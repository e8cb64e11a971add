"""The engine's fast paths give what the general ones give (issue 26: each shortcut is exact).

* ``faults.sweep_faults`` picks a step's sweep pieces without the loop-start arrays when no
  thread's init ended in the step; the general selection must give the same pieces then.
* ``quiet.plan`` gives up before the trigger rounds (``quiet._trigger_ends``) only where the
  full plan finds no quiet step either.
"""

import numpy as np

import numalab as nl
from numalab.engine import faults, quiet, run_batch


def _wl():
    return nl.workload("numa01_THREAD_ALLOC", nl.Topology.preset("2s-128"))


def test_sweep_pieces_usual_step_equals_general_selection(monkeypatch):
    seen = {"usual": 0, "with_pieces": 0}
    inner = faults.sweep_faults

    def checked(b, ctx):
        if b.lay.S and ctx.phase0 is not None:
            pieces = faults.sweep_pieces(b, ctx)
            if not np.count_nonzero(pieces[5]):          # no init ended: both selections apply
                fast = faults._live_pieces(b, pieces, general=False)
                full = faults._live_pieces(b, pieces, general=True)
                for u, v in zip(fast, full):
                    assert u.dtype == v.dtype and np.array_equal(u, v)
                seen["usual"] += 1
                seen["with_pieces"] += fast[0].size > 0
        return inner(b, ctx)

    monkeypatch.setattr(faults, "sweep_faults", checked)
    run_batch(_wl(), nl.Policy.profile("6.12"), [0, 1], kernel="numpy", max_time=40.0)
    assert seen["usual"] > 50 and seen["with_pieces"] > 20


def test_trigger_ends_only_where_the_plan_finds_no_stretch(monkeypatch):
    counts = {"early": 0, "plans": 0}
    inner, ends = quiet.plan, quiet._trigger_ends

    def checked(b, next_sample):
        running = quiet.running_mask(b) & ~b.outcome.done[:, None]
        early = not np.count_nonzero(b.rates.dirty) and ends(b, running)
        monkeypatch.setattr(quiet, "_trigger_ends", lambda b, running: False)
        q = inner(b, next_sample)                        # the plan without the shortcut
        monkeypatch.setattr(quiet, "_trigger_ends", ends)
        assert not (early and q is not None)
        counts["early"] += early
        counts["plans"] += 1
        return q

    monkeypatch.setattr(quiet, "plan", checked)
    # the whole run: 6 early ends (~60 until 0.7.0, when a thread behind its threshold stayed
    # behind for many steps; since the tick clock it catches up within one)
    run_batch(_wl(), nl.Policy.profile("6.12"), [0], kernel="numpy")
    assert counts["early"] > 3 and counts["plans"] > counts["early"]

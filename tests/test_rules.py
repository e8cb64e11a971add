"""The rule table (numalab.rules) and a researcher's own rule: made, checked, named in policy
text, decided by the engine, traced, pickled to another process (issue 25 items 1-2)."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

import numalab as nl
from numalab import history as H
from numalab.errors import NumalabValueError
from numalab.policy import ALLOW_REASONS, REASONS, SKIP_REASONS, Policy, decide
from numalab.reasons import DECISIONS
from numalab.reference import hashing as RH
from numalab.rules import BUILTIN_RULES, END_ORDER, SWITCHES, Param, Rule, rule
from numalab.scanview import ScanView, synthetic_view

from _rule_helpers import ANY_OR_K, NO_HUGE_PARAMS, mine_own_pid, no_huge, notebook_rule

SMALL = dict(threads=4, size_bytes=64 << 20, loops=7500)   # long enough for the scanner to act


def small_numa02():
    return nl.workload("numa02", "2s-ivb-40", **SMALL)


# ------------------------------------------------------------------------------ the table


def test_codes_and_columns_are_those_numalab_always_had():
    # codes are stored in files: they never move (a later row appends)
    assert REASONS == ("unsuitable", "shared_ro", "inaccessible", "scan_delay", "pid_inactive", "seq_completed",
                       "disjoint_wait", "early_passes", "own_pid", "hot", "shared", "ignore_pid_inactive",
                       "starvation", "disjoint_select", "forced", "unfiltered")
    assert SKIP_REASONS == REASONS[:7] and ALLOW_REASONS == REASONS[7:]
    names = np.array(REASONS)
    assert list(names[DECISIONS.pid_skip]) == ["pid_inactive", "disjoint_wait"]
    assert list(names[DECISIONS.pid_test]) == ["pid_inactive", "disjoint_wait", "early_passes", "own_pid", "hot",
                                               "shared", "ignore_pid_inactive", "starvation", "disjoint_select"]
    assert list(names[DECISIONS.traced]) == ["unsuitable", "shared_ro", "inaccessible", "scan_delay",
                                             "pid_inactive", "seq_completed", "ignore_pid_inactive"]


def test_every_policy_field_and_label_comes_from_the_table():
    assert SWITCHES == ("forced_one", "seq_completed", "early_passes", "own_pid", "hot", "hot_first", "shared",
                        "ignore_pid_partial", "starvation", "disjoint_select")
    p = Policy.profile("rfc2024-hot-shared")
    assert [k for k, _ in p.switches] == list(SWITCHES)
    table = Policy.rule_table()
    assert list(table) == [r.name for r in BUILTIN_RULES]
    assert table["hot"]["params"]["hot"]["default"] == 1 and table["hot"]["params"]["hot"]["hi"] == "width"
    assert table["shared"]["label"] == "shared>=3" and table["early_passes"]["label"] == "early_passes(vma)"
    for r in BUILTIN_RULES:  # each rule alone round-trips through policy text
        q = Policy(rules=[r.name], base="6.12")
        assert Policy.parse(q.name) == q and r.reason in q.reasons
        assert r.doc and r.kernel


def test_a_rules_list_states_hot_first_by_its_order():
    for base in ("6.12", "rfc2023-p5"):
        for first in (True, False):
            p = Policy(rules="own_pid,hot,shared=2", base=base, hot_first=first)
            assert p.rules[0] == ("hot>=1" if first else "own_pid")
            assert Policy.parse(p.name) == p
    empty = Policy(rules=[], base="6.12")
    assert empty.name == "6.12+rules=none" and Policy.parse(empty.name) == empty


#: docs/architecture.md's worked example: a new built-in rule is this function and this row
TINY_FUNCTION = """
def _tiny(view, tiny):
    \"\"\"VMAs of at most ``tiny`` pages are scanned without the PID test.\"\"\"
    return view.size_pages <= tiny

"""
TINY_ROW = """    Rule("tiny", _tiny, order=25,
         params=(("tiny", Param(512, "largest VMA scanned unconditionally (pages)", lo=1)),),
         kernel="worked example (docs/architecture.md)", **_B),
"""

TINY_CHECKS = """
import numpy as np
from numalab import history as H
from numalab.errors import NumalabValueError
from numalab.policy import REASONS, Policy, decide
from numalab.reference import policy as RP
assert REASONS[:16] == OLD and REASONS[16] == "tiny"
p = Policy(rules="own_pid,tiny=256", base="6.12")
assert p.name == "6.12+rules=tiny>=256,own_pid" and Policy.parse(p.name) == p  # order 25: before own_pid
assert Policy.parse("6.12+rules=early_passes(vma),own_pid+tiny=100").tiny == 100
pa, idx = H.empty((2,), p.windows, p.width)
state = dict(pids_active=pa, idx=idx, numa_scan_seq=5, start_scan_seq=0, prev_scan_seq=4, scan_offset=0,
             vm_start=[0, 4096], vm_end=[100, 9000], next_scan=0, now=10, nr_threads=4)
allowed, reason, _ = decide(p, scanner_tid=np.uint32(7), **state)
assert [REASONS[c] for c in reason] == ["tiny", "pid_inactive"] and allowed.tolist() == [True, False]
got = RP.visit(p, [[0]] * p.windows, 0, 7, numa_scan_seq=5, start_scan_seq=0, prev_scan_seq=4, scan_offset=0,
               vm_start=0, vm_end=100, next_scan=0, now=10, nr_threads=4)
assert got[0] == "tiny"  # the reference calls the row's own function (it has no scalar oracle of it)
try:
    Policy(rules={"tiny": 0})
except NumalabValueError as exc:
    assert "tiny threshold" in str(exc)
else:
    raise AssertionError("tiny=0 accepted")
import numalab as nl
ds = nl.simulate(nl.workload("numa02", "2s-ivb-40", threads=2, size_bytes=64 << 20, loops=2000),
                 [Policy.profile("6.12", tiny=4096)], seeds=[0])
assert "allow_tiny" in ds and int(ds["allow_tiny"].sum()) > 0
print("ok")
"""


def test_adding_a_built_in_rule_is_one_row_and_one_function(tmp_path):
    """A copy of the package with one function and one row added to numalab/rules.py and no
    other edit: policy text, validation, decision codes, decide, the reference and the engine's
    counters all have the new rule."""
    import shutil
    from pathlib import Path

    src = Path(nl.__file__).parent
    dst = tmp_path / "numalab"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    if (src.parent / "data").is_dir():  # a source checkout keeps the shipped data (topologies) beside it
        shutil.copytree(src.parent / "data", tmp_path / "data")
    rules_py = dst / "rules.py"
    text = rules_py.read_text()
    assert text.count("_B = dict(builtin=True)") == 1 and text.count("\n)\nBY_NAME = ") == 1
    text = text.replace("_B = dict(builtin=True)", TINY_FUNCTION + "_B = dict(builtin=True)")
    text = text.replace("\n)\nBY_NAME = ", "\n" + TINY_ROW + ")\nBY_NAME = ")
    rules_py.write_text(text)
    code = f"OLD = {REASONS!r}\n" + TINY_CHECKS
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)}, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


# ------------------------------------------------------------------------------ ScanView


@pytest.mark.parametrize("rotation", ["shift", "ring"])
@pytest.mark.parametrize("width", [64, 128])
def test_view_helpers_are_the_history_operations(rotation, width):
    rng = np.random.default_rng(3)
    pa, idx = H.empty((2, 5), 4, width)
    tids = np.arange(1000, 1040, dtype=np.uint32)
    for _ in range(6):
        H.set_pid_bits(pa, idx, (rng.integers(0, 2, 30), rng.integers(0, 5, 30)), rng.choice(tids, 30), width=width,
                       rotation=rotation)
        H.rotate(pa, idx, rng.random((2, 5)) < 0.6, rotation=rotation)
    scanner = rng.choice(tids, (2, 1)).astype(np.uint32)
    view = ScanView(pids_active=pa, idx=idx, scanner_tid=scanner, numa_scan_seq=np.zeros((2, 1)),
                    start_scan_seq=0, prev_scan_seq=0, scan_offset=0, vm_start=0, next_scan=0, now=0, nr_threads=1,
                    rotation=rotation, width=width)
    for n in range(1, 5):
        assert np.array_equal(view.union(n), H.union(pa, idx, n, rotation=rotation))
    assert np.array_equal(view.window(0), H.current_window(pa, idx, rotation=rotation))
    for age in range(4):  # the window `age` rotations old is what union(age + 1) adds to union(age)
        newer = view.union(age) if age else np.zeros_like(view.window(0))
        assert np.array_equal(view.union(age + 1), newer | view.window(age))
    assert np.array_equal(view.window_pids[..., 0], H.popcount(view.window(0)))
    bits = RH.pid_bit(int(scanner[1, 0]), width)
    want = [H.test_bit(view.union()[1, v], bits) for v in range(5)]
    assert view.own_pid[1].tolist() == [bool(w) for w in want]
    with pytest.raises(NumalabValueError, match="window age"):
        view.window(4)


# ------------------------------------------------------------------------------ a user rule


def test_a_user_rule_is_checked_when_it_is_made():
    def boom(view):
        return 1 / 0

    with pytest.raises(NumalabValueError, match="rule 'boom' raised ZeroDivisionError"):
        Rule("boom", boom)
    with pytest.raises(NumalabValueError, match="rule 'ints'.*dtype int64"):
        Rule("ints", lambda view: view.numa_scan_seq - view.start_scan_seq)
    with pytest.raises(NumalabValueError, match=r"rule 'flat'.*shape \(3,\)"):
        Rule("flat", lambda view: view.popcount(view.union())[0] > 0)
    with pytest.raises(NumalabValueError, match="not callable"):
        Rule("nope", 3)
    with pytest.raises(NumalabValueError, match="lower-case identifier"):
        Rule("My-Rule", mine_own_pid)
    for taken in ("own_pid", "pid_inactive", "hot_first", "disjoint_wait"):
        with pytest.raises(NumalabValueError, match="is taken"):
            Rule(taken, mine_own_pid)
    with pytest.raises(NumalabValueError, match="'k' is not a keyword"):
        Rule("kless", mine_own_pid, params={"k": 2})
    with pytest.raises(NumalabValueError, match="after=.*not known|is not known"):
        Rule("lost", mine_own_pid, after="forced_one")
    with pytest.raises(NumalabValueError, match="column of the built-in table"):
        Rule("sneaky", mine_own_pid, reason="own_pid")
    r = Rule("big_skip", no_huge, kind="skip", params=NO_HUGE_PARAMS)
    assert r.bound == {"pages": 4096} and r(pages=8).bound == {"pages": 8}
    with pytest.raises(NumalabValueError, match="big_skip.pages=0 is out of range"):
        r(pages=0)
    with pytest.raises(NumalabValueError, match="has no parameter 'k'"):
        r(k=3)
    p = Policy.profile("6.12", add_rules=[r])
    with pytest.raises(NumalabValueError, match="reads as a policy override"):
        Policy.profile("6.12", add_rules=[Rule("n_max", mine_own_pid)])
    with pytest.raises(NumalabValueError, match="per-VMA state"):
        Policy.profile("pre-6.4", add_rules=[r])
    assert p.decisions.names[-1] == "big_skip" and not p.decisions.allowed[-1] and p.decisions.pid_skip[-1]


def test_the_decorator_makes_a_rule():
    @rule(kind="skip", after="own_pid")
    def refuse_young(view, age=1):
        """Refuse VMAs whose state is younger than ``age`` passes.

        (More words.)"""
        return view.numa_scan_seq - view.start_scan_seq < age

    assert isinstance(refuse_young, Rule) and refuse_young.kind == "skip" and refuse_young.name == "refuse_young"
    assert refuse_young.doc == "Refuse VMAs whose state is younger than ``age`` passes."
    assert refuse_young.bound == {"age": 1} and refuse_young.order == BUILTIN_RULES[3].order + 0.5

    @rule
    def plain(view):
        return view.own_pid

    assert plain.kind == "allow" and plain.order == END_ORDER and nl.rules.registered("plain") is plain


def test_a_rule_is_probed_on_the_policys_own_history():
    r = notebook_rule('''
def third_window(view):
    return view.popcount(view.pids_active[..., 2, :]) > 0
''')
    Policy(history=4, add_rules=[r])
    with pytest.raises(NumalabValueError, match="rule 'third_window' raised IndexError"):
        Policy(history=2, add_rules=[r])


def test_policy_text_names_a_user_rule():
    r = notebook_rule(ANY_OR_K, params={"k": Param(2, "distinct PIDs", lo=1, hi="width")})
    p = Policy(history=4, rules=["early_passes", r(k=3), "ignore_pid_partial", "starvation"])
    assert p.name == "6.12+N=4+rules=early_passes(vma),ignore_pid_partial,starvation+any_window_or_k(k=3)"
    assert Policy.parse(p.name) == p and Policy.parse(p.pinned) == p
    assert p.pinned.endswith(f"any_window_or_k(k=3)@{r.digest}")
    assert p.rules == ("early_passes(vma)", "ignore_pid_partial", "starvation", "any_window_or_k(k=3)")
    q = Policy.parse("6.12+any_window_or_k")
    assert q.user_rules == (r,) and q.own_pid and q.to_dict()["user_rules"][0]["digest"] == r.digest
    with pytest.raises(NumalabValueError, match="names version 000000000000 of rule 'any_window_or_k'"):
        Policy.parse("6.12+any_window_or_k@000000000000")
    with pytest.raises(NumalabValueError, match="rule 'never_made' is not defined in this process"):
        Policy.parse("6.12+never_made(k=1)")
    with pytest.raises(NumalabValueError, match="policy="):
        Policy.parse("6.12+never_made")
    assert "Own rule any_window_or_k" in p.description


def test_an_edited_rule_is_a_new_version():
    a = notebook_rule(ANY_OR_K)
    b = notebook_rule(ANY_OR_K.replace(">= k", "> k"))
    c = notebook_rule(ANY_OR_K)
    assert a.digest == c.digest != b.digest and a == c and a != b
    assert nl.rules.registered("any_window_or_k") is b or nl.rules.registered("any_window_or_k").digest == c.digest


# ------------------------------------------------------------------------------ everywhere a rule runs


def test_a_user_own_pid_test_decides_as_the_built_in_one():
    """6.12 with its own-PID test replaced by the same test written as a user rule, placed
    where it was: every number of nl.simulate is the same; only the counter's name changes."""
    mine = Rule("mine", mine_own_pid, after="early_passes")
    base = Policy.profile("6.12")
    ours = Policy.profile("6.12", own_pid=False, add_rules=[mine])
    assert ours.rules == ("early_passes(vma)", "mine", "ignore_pid_partial", "starvation", "seq_completed",
                          "forced_one")
    ds = nl.simulate(small_numa02(), [base, ours], seeds=[0, 3])
    assert int(ds["allow_own_pid"].sel(policy=base.name).sum()) > 0
    assert np.array_equal(ds["allow_own_pid"].sel(policy=base.name), ds["allow_mine"].sel(policy=ours.name))
    assert int(ds["allow_mine"].sel(policy=base.name).sum()) == 0  # another policy's rule: zero, not NaN
    for v in ("elsp", "syst", "numa_hint_faults", "numa_pages_migrated", "false_skips", "skip_pid_inactive"):
        assert np.array_equal(ds[v].sel(policy=base.name), ds[v].sel(policy=ours.name)), v


def test_a_skip_rule_is_counted_traced_and_a_false_skip():
    r = notebook_rule('''
def refuse_big(view, pages=4096):
    """Refuse VMAs of more than ``pages`` pages."""
    return view.size_pages > pages
''', kind="skip", before="own_pid")
    p = Policy.profile("6.12", add_rules=[r])
    ds = nl.simulate(small_numa02(), [p], seeds=[0])
    skips = int(ds["skip_refuse_big"].sum())
    assert skips > 0 and int(ds["false_skips"].sum()) >= 1  # the buffer every thread writes, refused
    assert ds["skip_refuse_big"].attrs["kernel_name"] == "sched_skip_vma_numa reason=refuse_big"
    tr = nl.scan_trace(small_numa02(), p, 0, topology="2s-ivb-40")
    assert int((tr["reason"] == "refuse_big").sum()) == skips
    assert not tr["scanned"].values[tr["reason"].values == "refuse_big"].any()
    from numalab.engine.tracing import format_perf

    assert "reason=refuse_big" in format_perf(tr)


def test_the_reference_engine_runs_a_user_rule():
    from numalab.costs import Costs
    from numalab.engine import EngineOptions, make_batch
    from numalab.reference import engine as ref_engine
    from numalab.topology import Topology
    from numalab.workloads import from_access_matrix

    topo = Topology(nodes=2, cpus_per_node=4, smt=2, name="tiny")
    wl = from_access_matrix(np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 2.0], [0.0, 1.0, 1.0]]), topology=topo,
                            chunk_bytes=4 << 20, loops=40000)
    r = notebook_rule(ANY_OR_K)
    skip = Rule("refuse_big2", no_huge, kind="skip", before="own_pid", params={"pages": Param(1024, lo=1)})
    for pol in (Policy(history=4, rules=["early_passes", r, "ignore_pid_partial"], base="6.12"),
                Policy.profile("rfc2024-hot-shared", add_rules=[skip])):
        o = EngineOptions.coerce(dict(max_time=8.0))
        batch = make_batch(wl, pol, [5], **o.to_dict()).run()
        ref = ref_engine.Replica(wl, pol, 5, o.to_dict(), Costs()).run()
        for k, v in ref.cnt.items():
            assert int(batch.cnt[k][0]) == v, k
        for i, name in enumerate(pol.reasons):
            assert int(batch.counters.reasons[0, i]) == ref.reasons[name], name
        assert ref.reasons[pol.user_rules[0].reason] > 0
        assert batch.elsp[0] == ref.elsp


def test_the_decision_explorer_takes_a_user_rule():
    from numalab.widgets import DecisionMatrixExplorer, decision_passes, decision_summary

    r = notebook_rule(ANY_OR_K)
    ds = decision_passes("6.12+any_window_or_k", threads=4, passes=8)
    names = np.array(ds["decision"].attrs["reasons"])[ds["decision"].values]
    assert "any_window_or_k" in set(names.ravel())
    assert decision_summary(ds, 7)["VMAs scanned"] >= 0
    pol = Policy(history=4, rules=["early_passes", r], base="6.12")
    ex = DecisionMatrixExplorer(profile=pol, threads=3, passes=6)
    assert ex.controls["profile"].options[0] == pol.name and ex.params["profile"] == pol.name
    out = ex.compute(ex.params)
    assert out["decision"].attrs["policy"] == pol.name
    assert "any_window_or_k" in set(np.array(out["decision"].attrs["reasons"])[out["decision"].values].ravel())
    table, fig = ex.render(out, ex.params)
    assert table["pass (numa_scan_seq)"] == 0 and fig is not None
    ex.controls["history"].value = 6  # the history knob keeps the rule
    assert ex.compute(ex.params)["decision"].attrs["policy"] == pol.replace(history=6).name


# ------------------------------------------------------------------------------ another process


def _in_fresh_interpreter(code: str, data: bytes) -> str:
    proc = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return proc.stdout.decode()


def test_a_notebook_rule_travels_by_value():
    r = notebook_rule(ANY_OR_K)
    p = Policy(history=4, add_rules=[r(k=3)])
    view = synthetic_view((3,), 6, windows=4)
    _, want, _ = decide(p, view)
    code = ("import pickle, sys; p, view = pickle.loads(sys.stdin.buffer.read()); "
            "from numalab.policy import decide; print(p.name, p.user_rules[0].digest, decide(p, view)[1].tolist())")
    out = _in_fresh_interpreter(code, pickle.dumps((p, view))).split(" ", 2)
    assert out[0] == p.name and out[1] == r.digest and out[2].strip() == str(want.tolist())


def test_an_importable_rule_travels_by_reference():
    from numalab.rule_transport import transport

    r = Rule("by_ref", mine_own_pid)
    t = transport(r)
    assert t["ref"] == ("_rule_helpers", "mine_own_pid") and t["source"] is not None
    assert pickle.loads(pickle.dumps(r)) == r


def test_a_rule_that_cannot_travel_is_refused_by_name():
    r = notebook_rule('''
def in_the_set(view):
    return np.isin(view.numa_scan_seq, list(CHOSEN))

CHOSEN = {1, 2}  # a set: neither a module nor a constant
''')
    with pytest.raises(NumalabValueError, match="rule 'in_the_set' cannot travel.*'CHOSEN' \\(a set\\)"):
        pickle.dumps(r)
    with pytest.raises(NumalabValueError, match="rule 'in_the_set' cannot travel"):
        nl.sweep({"policy": ["6.12+in_the_set"], "workload": "numa02", "topology": "2s-ivb-40",
                  "workload_threads": 2, "workload_size_bytes": 64 << 20, "workload_loops": 100},
                 seeds=1, cache=False, progress=False, workers=1)


# ------------------------------------------------------------------------------ sweeps


def _grid(*policies):
    return {"policy": list(policies), "workload": "numa02", "topology": "2s-ivb-40", "workload_threads": 4,
            "workload_size_bytes": 64 << 20, "workload_loops": SMALL["loops"]}


def test_a_sweep_pins_the_rules_version_and_never_reuses_an_edited_one(tmp_path):
    import numalab.sweeps as S

    first = notebook_rule(ANY_OR_K)
    res = S.run_sweep(_grid("6.12", "6.12+any_window_or_k"), seeds=2, cache=tmp_path, progress=False, workers=1)
    assert res.computed == 4
    assert list(res.dataset.policy.values) == ["6.12", f"6.12+any_window_or_k@{first.digest}"]
    direct = nl.simulate(small_numa02(), [Policy.parse("6.12+any_window_or_k")], seeds=[0, 1])
    assert np.array_equal(res.dataset["elsp"].isel(policy=1).values, direct["elsp"].isel(policy=0).values)
    assert np.array_equal(res.dataset["allow_any_window_or_k"].isel(policy=1).values,
                          direct["allow_any_window_or_k"].isel(policy=0).values)
    edited = notebook_rule(ANY_OR_K.replace(">= k", ">= k + 1"))  # the cell edited and run again
    again = S.run_sweep(_grid("6.12", "6.12+any_window_or_k"), seeds=2, cache=tmp_path, progress=False, workers=1)
    assert again.cached == 2 and again.computed == 2  # 6.12 from the cache, the edited rule computed
    assert again.dataset.policy.values[1] == f"6.12+any_window_or_k@{edited.digest}"
    notebook_rule(ANY_OR_K)  # back to the first version: its points are in the cache
    back = S.run_sweep(_grid("6.12", "6.12+any_window_or_k"), seeds=2, cache=tmp_path, progress=False, workers=1)
    assert back.computed == 0


def test_a_sweeps_worker_processes_rebuild_a_notebook_rule(monkeypatch):
    import numalab.sweeps as S

    notebook_rule(ANY_OR_K)
    grid = _grid("6.12", "6.12+rules=early_passes(vma),ignore_pid_partial,starvation+any_window_or_k(k=3)")
    here = S.sweep(grid, seeds=2, cache=False, progress=False, workers=1)
    monkeypatch.setattr(S.executors, "POOL_MIN_S", 0.0)  # small points: worth processes only when told so
    res = S.run_sweep(grid, seeds=2, cache=False, progress=False, workers=2)
    assert res.executor == "local" and res.tasks >= 3
    import xarray as xr

    xr.testing.assert_identical(res.dataset, here)
    assert int(here["allow_any_window_or_k"].sum()) > 0


def test_a_dask_cluster_runs_a_notebook_rule():
    import distributed
    import xarray as xr

    import numalab.sweeps as S

    r = notebook_rule(ANY_OR_K)
    grid = _grid("6.12+any_window_or_k", "rfc2024-hot-shared")
    here = S.sweep(grid, seeds=2, cache=False, progress=False, workers=1)
    # ":0": a free port for the dashboard (several test processes, or users, may run clusters)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=":0", worker_dashboard_address=":0") as lc, \
            distributed.Client(lc, set_as_default=False) as client:
        res = S.run_sweep(grid, seeds=2, cache=False, progress=False, client=client)
        assert res.executor == "dask"
        # the worker rebuilt the rule from its source: it was never importable there
        versions = client.run(lambda: sorted(f"{n}@{d}" for n, d in
                                             __import__("numalab.rule_transport").rule_transport.VERSIONS))
    xr.testing.assert_identical(res.dataset, here)
    assert all(f"any_window_or_k@{r.digest}" in v for v in versions.values())


def test_a_decision_matrix_plot_names_a_skip_rule_a_skip():
    from numalab import plots

    r = Rule("refuse_any", lambda view: view.numa_scan_seq >= 0, kind="skip", before="early_passes")
    p = Policy.profile("6.12", add_rules=[r])
    view = synthetic_view((), 4, windows=2, rotation="shift")
    da = nl.decision_matrix(p, view, tids=np.arange(100, 104, dtype=np.uint32))
    fig = plots.decision_matrix(da)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "skip: refuse_any" in labels

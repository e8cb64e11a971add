"""benchmarks/vm_trace.py's reading of a virtual machine's console (docs/fidelity.md, "A real
kernel's scanner in a virtual machine"): the figures it prints come from these lines, so a line
it fails to match is a skip silently uncounted."""

import numpy as np
import pytest

from _benchmark_scripts import load_script

MiB = 1 << 20


@pytest.fixture(scope="module")
def vm_trace():
    return load_script("vm_trace")


def _skip(tgid, t, offset, lo, hi, reason):
    # the tracepoint's own format: the three addresses as %lX (upper-case hex, no 0x)
    return (f"          numa01-{tgid + 5}     (  {tgid:5d}) [002] .....  {t:10.6f}: sched_skip_vma_numa: "
            f"numa_scan_offset={offset:X} vm_start={lo:X} vm_end={hi:X} reason={reason}")


BUF_LO = 0x7F3DDEEA4000
BUF_HI = BUF_LO + 256 * MiB + 4096          # malloc's mmap: the size plus the chunk header's page
STACK_LO = 0x7F3DDE6A4000
STACK_HI = STACK_LO + 8 * MiB


def _console(lines):
    return "\n".join(["=== uname 6.12.118-pidhist", "=== pid_hist 4", "=== start 4.00",
                      "thread 133 0 init_end_s 1.185 loop_end_s 33.374", "numa01_elapsed_s 36.233",
                      "=== vmstat numa_hint_faults 9665", "S 5.00 10 2 3 1 7", *lines, "=== end"])


def test_every_skip_is_counted_whatever_its_offset(vm_trace):
    text = _console([
        _skip(128, 6.47, 0, 0x400000, 0x401000, "unsuitable"),              # a pass starts
        _skip(128, 12.34, BUF_HI, BUF_LO, BUF_HI, "seq_completed"),         # offsets with letters
        _skip(133, 21.21, 0x38F40000, BUF_LO, BUF_HI, "pid_inactive"),
        _skip(133, 22.00, 0x4BE000, STACK_LO, STACK_HI, "pid_inactive"),
        _skip(133, 22.10, 0x7F3DEE800000, 0x7FFFC6900000, 0x7FFFC6921000, "pid_inactive"),
    ])
    r = vm_trace.parse(text, 256 * MiB)
    assert r["skips"] == {"unsuitable/other": 1, "seq_completed/buffer": 1, "pid_inactive/buffer": 1,
                          "pid_inactive/stack": 1, "pid_inactive/other": 1}
    assert r["buffer_skip_times"] == {"seq_completed": [8.34], "pid_inactive": [17.21]}
    assert r["passes"] == {"128": [2.47]}
    assert (r["kernel"], r["pid_hist"], r["elapsed_s"], r["numa_hint_faults"]) == \
        ("6.12.118-pidhist", 4, 36.233, 9665)
    assert r["samples"] == [[1.0, 10, 2, 3, 1, 7]]


def test_trace_times_count_from_the_start_mark_on_the_trace_clock(vm_trace):
    # the tracepoints' clock ran 1.45 s ahead of /proc/uptime in a 6.12 guest
    mark = "            init-1       (      1) [005] .....     5.450000: tracing_mark_write: numalab_start"
    skip = _skip(133, 21.21, 0x38F40000, BUF_LO, BUF_HI, "pid_inactive")
    r = vm_trace.parse(_console([mark, skip]), 256 * MiB)
    assert r["trace_clock_known"] and r["buffer_skip_times"] == {"pid_inactive": [15.76]}
    old = vm_trace.parse(_console([skip]), 256 * MiB)           # a console from before the mark
    assert not old["trace_clock_known"] and old["buffer_skip_times"] == {"pid_inactive": [17.21]}


def test_a_pass_starts_only_at_offset_zero_and_the_first_vma(vm_trace):
    text = _console([_skip(128, 6.0, 0x400000, 0x400000, 0x401000, "unsuitable"),
                     _skip(128, 7.0, 0, 0x401000, 0x48D000, "unsuitable")])
    assert vm_trace.parse(text, 256 * MiB)["passes"] == {}


def _task(t, pid, tid, node, gid, faults, period="-"):
    # init's "T" line: node, numa_scan_seq, numa_preferred_nid, numa_group_id, se.nr_migrations,
    # numa_scan_period, numa_faults_locality[0..2] ("-": a stock kernel prints neither), then per
    # node task_private task_shared group_private group_shared (here: private, shared = 0.5 x it)
    per_node = " ".join(f"{f} {f // 2} 0 0" for f in faults)
    return f"T {t + 4:.2f} {pid} {tid} {node} 3 {node} {gid} 7 {period} 5 6 0 {per_node}"


def test_the_placement_trace_is_read_per_process_and_summarised(vm_trace):
    lines = []
    for t in (5.0, 10.0, 15.0):
        grouped = t >= 15.0
        lines += [_task(t, 128, 128, 0, 0, (0, 0))]                      # the main thread: left out
        lines += [_task(t, 128, 130 + i, int(i == 3), 130 if grouped or i == 0 else 0, (100 * (i + 1), 0))
                  for i in range(4)]
    lines[-1] = _task(15.0, 128, 133, 0, 130, (400, 0), period=2500)     # moved to node 0; a scan period
    lines.append(_task(20.0, 128, 131, 0, 130, (1, 0)))                  # writers exiting: sample dropped
    r = vm_trace.parse(_console(lines), 256 * MiB)
    w = vm_trace.kernel_writers(r["tasks"])
    assert list(w) == [128] and w[128]["node"].shape == (3, 4)
    np.testing.assert_array_equal(w[128]["t"], [5.0, 10.0, 15.0])
    (p,) = vm_trace.placement_summary(w)
    assert p["split"] == 1                        # one writer of four on the other node
    assert p["grouped_s"] == 15.0                 # every writer in group 130 from then on
    assert p["groups_10s"] == 4                   # one group and three writers without one
    assert p["top_share"] == pytest.approx(0.4)   # 600 of the writers' 1500 faults
    assert p["private_10s"] == pytest.approx(2 / 3)
    assert p["period_ms"] == 2500                 # NaN ("-") where not printed, ignored
    assert p["node_changes"] == 1                 # writer 133: node 1, then 0 at 15 s
    assert p["pref_changes"] == 1                 # and its preferred node with it (the helper sets both)


def test_sweep_phases_measure_how_far_apart_the_writers_run(vm_trace):
    loops = np.arange(40) * 0.2 + 1.0
    together = [[128, i, (loops + 0.001 * i).tolist()] for i in range(4)]
    quarters = [[133, i, (loops + 0.05 * i).tolist()] for i in range(4)]   # a quarter sweep apart each
    phases = vm_trace.sweep_phases(together + quarters)
    assert phases[0] == pytest.approx([0.0075, 0.0075], abs=1e-6)
    # pairs 0.25, 0.5, 0.75 (= 0.25 round the buffer) sweeps apart: median 0.25
    assert phases[1] == pytest.approx([0.25, 0.25], abs=1e-6)
    r = vm_trace.parse(_console(["sweeps 133 0 1.5 1.7 1.9"]), 256 * MiB)
    assert r["sweeps"] == [[133, 0, [1.5, 1.7, 1.9]]]


@pytest.mark.parametrize("release, profile", [("6.1.0-57-amd64", "pre-6.4"), ("6.5.0", "6.4"),
                                              ("6.7.12", "6.7"), ("6.11.2", "6.8"),
                                              ("6.12.118-pidhist", "6.12"), ("6.17.1", "6.12")])
def test_a_kernel_release_takes_the_profile_of_its_version(vm_trace, release, profile):
    assert vm_trace.profile_for(release) == profile


@pytest.fixture(scope="module")
def vm_history():
    return load_script("vm_history")


def test_the_change_interval_is_students(vm_history):
    # tabulated: t(0.95, 10) = 1.8125, t(0.975, 4) = 2.7764; se = sqrt(sb^2/nb + sx^2/nx)
    se = np.sqrt(100 / 6 + 100 / 6)
    c, lo, hi = vm_history.change_interval(100.0, 10.0, 6, 130.0, 10.0, 6)
    assert c == pytest.approx(30.0)
    assert (lo, hi) == pytest.approx((30 - 1.8125 * se, 30 + 1.8125 * se), abs=1e-3)
    se = np.sqrt(100 / 3 + 100 / 3)
    _, lo, hi = vm_history.change_interval(100.0, 10.0, 3, 130.0, 10.0, 3, level=0.95)
    assert (lo, hi) == pytest.approx((30 - 2.7764 * se, 30 + 2.7764 * se), abs=1e-3)


def test_the_history_table_pools_runs_and_says_whether_the_model_is_inside(vm_history, tmp_path):
    import json

    def run(faults, buffer_refusals):
        return {"numa_hint_faults": faults, "skips": {"pid_inactive/buffer": buffer_refusals,
                                                      "pid_inactive/stack": 3, "pid_inactive/other": 4}}

    def res(h, faults, model_faults):
        return {"kernel": "6.12.118-pidhist", "history": h, "runs": [run(f, 6 if h == 2 else 0) for f in faults],
                "model": {"numa_hint_faults": model_faults, "skips": {"pid_inactive/buffer": 5.0 if h == 2 else 0.0}}}

    files = []
    for name, payload in (("a2", [res(2, [90, 110], 100)]), ("b2", [res(2, [100], 100)]),
                          ("a4", [res(4, [120, 140, 130], 200)])):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps(payload))
    by = vm_history.collect(files)
    assert list(by) == [2, 4] and len(by[2]["kernel"]) == 3 and len(by[2]["model"]) == 2
    out = vm_history.table(by)
    # the kernel: 100 -> 130 (+30 %); the model: 100 -> 200 (+100 %), outside the interval
    faults = next(line for line in out.splitlines() if line.startswith("| hint faults | N=2 -> 4"))
    assert "+30 %" in faults and "+100 % | no" in faults
    assert "| stacks and small VMAs skipped: pid_inactive | 7.0 ± 0.0 | 7.0 ± 0.0 |" in out


def test_a_file_without_history_is_refused(vm_history, tmp_path):
    import json

    p = tmp_path / "x.json"
    p.write_text(json.dumps([{"kernel": "6.12", "history": None, "runs": []}]))
    with pytest.raises(SystemExit, match="without --history"):
        vm_history.collect([p])


def test_the_history_figure_draws_each_row_against_n(vm_history, tmp_path):
    import json

    import matplotlib

    matplotlib.use("Agg")
    p = tmp_path / "h.json"
    p.write_text(json.dumps([
        {"kernel": "k", "history": h, "runs": [{"numa_pte_updates": 10 * h + i, "skips": {}} for i in range(2)],
         "model": {"numa_pte_updates": 10.0 * h, "skips": {}}} for h in (1, 2, 4)]))
    fig = vm_history.plot(vm_history.collect([p]))
    assert len(fig.axes) == len(vm_history.FIGURE_ROWS)
    pte = fig.axes[vm_history.FIGURE_ROWS.index("numa_pte_updates")]
    model_line = [ln for ln in pte.get_lines() if ln.get_label() == "model"][0]
    assert list(model_line.get_xdata()) == [1.0, 2.0, 4.0] and list(model_line.get_ydata()) == [10.0, 20.0, 40.0]
    with pytest.raises(ValueError, match="axes"):
        vm_history.plot(vm_history.collect([p]), axes=[fig.axes[0]])


def _event(ctx, flags, t, name, fields):
    # the trace's own line: the running task (comm-pid), its tgid, the CPU, the flags, the time
    return f"{ctx:>16s}     (    140) [003] {flags}  {t:10.6f}: {name}: {fields}"


def _migrate(ctx, flags, t, pid, src, dst):
    return _event(ctx, flags, t, "sched_migrate_task", f"comm=numa01 pid={pid} prio=120 orig_cpu={src} dest_cpu={dst}")


def test_each_writer_node_change_is_told_apart_by_what_moved_it(vm_trace):
    """sched_migrate_task across the nodes of the cpulist lines: a NUMA move or swap when its own
    event came just before for that task and CPU, else the stopper's active balance, the
    softirq's load balance, or another path; same-node CPU changes and other tasks not counted."""
    lines = ["=== cpulist 0 0-3", "=== cpulist 1 4-7",
             _task(0.5, 140, 140, 0, 0, (0, 0)),                  # the main thread: not a writer
             _task(0.5, 140, 141, 0, 0, (1, 0)), _task(0.5, 140, 142, 1, 0, (0, 1)),
             _task(0.5, 140, 143, 1, 0, (0, 1)),
             _task(5.0, 140, 141, 1, 0, (0, 5))]                  # 141 prefers node 1 from 5 s
    ev = [_event("numa01-141", ".....", 6.200000, "sched_move_numa",
                 "pid=141 tgid=140 ngid=0 src_cpu=1 src_nid=0 dst_cpu=5 dst_nid=1"),
          _migrate("migration/1-20", "d..3.", 6.200300, 141, 1, 5),
          _event("numa01-142", ".....", 7.100000, "sched_swap_numa",
                 "src_pid=142 src_tgid=140 src_ngid=0 src_cpu=4 src_nid=1 dst_pid=143 dst_tgid=140 dst_ngid=0 "
                 "dst_cpu=2 dst_nid=0"),
          _migrate("migration/2-25", "d..5.", 7.110000, 142, 4, 2),
          _migrate("migration/2-25", "d..5.", 7.110100, 143, 2, 4),
          _migrate("migration/5-35", "d..2.", 8.000000, 141, 5, 0),      # the stopper, no NUMA event
          _migrate("<idle>-0", "d.s2.", 9.000000, 142, 2, 6),            # periodic balance in a softirq
          _migrate("numa01-143", "d..3.", 9.500000, 143, 4, 1),          # a newly idle CPU's pull
          _migrate("<idle>-0", "d.s2.", 9.600000, 143, 1, 2),            # same node: counted apart
          _migrate("<idle>-0", "d.s2.", 9.700000, 140, 1, 5),            # the main thread: left out
          _migrate("<idle>-0", "d.s2.", 9.800000, 141, 0, 4)]            # 0.6 s after a move: no match
    r = vm_trace.parse(_console(lines + ev), 256 * MiB)
    assert r["cpulist"] == {c: c // 4 for c in range(8)}
    mv = r["moves"]
    assert mv["kinds"] == {"numa_move": 1, "numa_swap": 2, "active_balance": 1, "load_balance": 2, "other": 1}
    assert (mv["cross"], mv["same_node"], mv["swaps_within"]) == (7, 1, 1)
    # trace times count from "=== start 4.00" (no mark): the move at 2.2 s took 141 off node 0, its
    # preferred node as sampled at 0.5 s, the swap at 3.11 s took 142 off node 1 and the pull at 5.5 s
    # took 143 off it; 141's pull at 5.8 s left node 0 again, but by the 5 s sample it preferred node 1
    assert mv["left_preferred"] == {"numa_move": 1, "numa_swap": 1, "active_balance": 0, "load_balance": 0,
                                    "other": 1}
    assert [x[:3] for x in mv["log"][:2]] == [[2.2, "numa_move", 141], [3.11, "numa_swap", 142]]
    # the balancer's moves: 141 back to node 0 at 4.0 s, 142 to node 1 at 5.0 and 143 to node 0 at
    # 5.5 s (another writer, within 0.5 s: an exchange), 141 to node 1 at 5.8 s (unpaired)
    assert {k: v for k, v in mv["refills"].items() if not k.startswith("back_")} == {
        "returned": 0, "exchanged": 1, "unpaired": 2, "returned_off_preferred": 0, "exchanged_off_preferred": 0,
        "unpaired_off_preferred": 0}


def test_a_balancer_pull_is_paired_with_the_next_pull_back_within_the_window(vm_trace):
    """balancer_refills: a pull A -> B is refilled by the first later balancer move B -> A within
    0.5 s; NUMA moves are never refills; a move is paired at most once."""
    log = [[1.0, "load_balance", 141, True, 0, 1],
           [1.1, "numa_move", 142, False, 1, 0],         # placement's, not a refill
           [1.2, "load_balance", 141, False, 1, 0],      # 141 back: returned
           [2.0, "load_balance", 142, False, 1, 0],
           [2.3, "other", 143, True, 0, 1],              # another writer the other way: exchanged
           [3.0, "active_balance", 141, True, 0, 1],
           [3.6, "load_balance", 141, False, 1, 0]]      # 0.6 s later: unpaired, and so is this one
    got = vm_trace.balancer_refills(log)
    assert {k: v for k, v in got.items() if not k.startswith("back_")} == {
        "returned": 1, "exchanged": 1, "unpaired": 2, "returned_off_preferred": 1, "exchanged_off_preferred": 0,
        "unpaired_off_preferred": 1}
    # by any path and at any time: 141's pull at 1.0 s was first crossed back by 142's NUMA move at
    # 1.1 s (another writer); 141's move at 1.2 s and 142's at 2.0 s by 143's at 2.3 s; 143's by
    # 141's at 3.6 s; 141's at 3.0 s by its own return at 3.6 s; the last move by nothing
    assert [got[k] for k in ("back_same", "back_other", "back_never")] == [1, 4, 1]
    assert [got[k + "_off_preferred"] for k in ("back_same", "back_other", "back_never")] == [1, 2, 0]


def test_the_balancer_rate_comes_from_the_balancing_off_run(vm_trace):
    class Args:
        processes, threads = 2, 4
    base = {"elapsed_s": 25.0, "moves": {"cross": 30}}
    # 30 node changes are 15 pulls onto full nodes (each refilled the other way), by 8 writers in 25 s
    assert vm_trace.balancer_hz(base, Args) == pytest.approx(15 / (8 * 25.0))
    assert vm_trace.balancer_hz({"elapsed_s": 25.0, "moves": None}, Args) is None
    r = vm_trace.parse(_console([]), 256 * MiB)                  # a console without the event
    assert r["moves"] is None


def test_swap_gains_apply_task_numa_compares_formula_to_the_samples(vm_trace):
    """One process of four writers on 2 x 2 CPUs, all in group 7: writer 0 runs on node 1 but
    prefers node 0, where writers 2 and 3 run. Its own shares (0.6, 0.4) against writer 2's
    (0.5, 0.5) gain 0.2 - 0.2/16 = 0.1875, against writer 3's (0.9, 0.1) 0.2 - 0.8 = -0.6 (-0.5625
    after the 1/16, and -0.52734375 after writer 3's 1/16 for already preferring node 0); the best
    is writer 2. Before 10 s, with node 0 not full, or for an ungrouped writer: no request."""
    def sample(**over):
        w = {"node": [1, 1, 0, 0], "gid": [7, 7, 7, 7], "pref": [0, 1, -1, 0],
             "task_nodes": [[60, 40], [0, 10], [50, 50], [90, 10]]}
        w.update(over)
        return w

    def writers(samples, ts):
        out = {k: np.array([s[k] for s in samples], dtype=float) for k in samples[0]}
        out["group_nodes"] = np.repeat(out["task_nodes"].sum(axis=1, keepdims=True), 4, axis=1)
        out["t"] = np.array(ts)
        return {140: out}

    g = vm_trace.swap_gains(writers([sample(), sample()], [5.0, 12.0]))
    assert g.tolist() == pytest.approx([0.1875])
    assert vm_trace.swap_gains(writers([sample(node=[1, 1, 0, 1])], [12.0])).size == 0   # node 0 has a free CPU
    assert vm_trace.swap_gains(writers([sample(gid=[0, 7, 7, 7])], [12.0])).size == 0   # no group
    s = vm_trace.gains_summary([g, np.array([0.01, -0.2])])
    assert s == {"per_run": 1.5, "median": 0.01, "at_smallimp": pytest.approx(0.333, abs=1e-3)}


def _compare(t, p, cur, cpu, why, imp=0, mi=0):
    # the instrumented kernel's trace_printk line from task_numa_compare (one per candidate CPU)
    return (f"          numa01-{p}     (    140) [006] .....  {t:10.6f}: task_numa_find_cpu: tnc p={p} c={cur} "
            f"cpu={cpu} {why} imp={imp} mi={mi} best=0 bt=-1")


def test_each_stuck_call_is_classed_by_what_refused_its_candidates(vm_trace):
    """An instrumented kernel's candidate lines: a mover's lines less than 2 ms apart are one
    task_numa_migrate call, its outcome the mover's next NUMA event; a stuck call is classed by
    the branch that refused its candidates, a load check before a loss below SMALLIMP."""
    stick = "src_cpu=6 src_nid=1 dst_pid=0 dst_tgid=0 dst_ngid=0 dst_cpu=-1 dst_nid=-1"
    lines = [
        # 141: every candidate loses -> stick, all below SMALLIMP
        _compare(6.000, 141, 142, 0, "smallimp", -600), _compare(6.0005, 141, 143, 1, "smallimp", -700),
        _event("numa01-141", ".....", 6.001, "sched_stick_numa", f"src_pid=141 src_tgid=140 src_ngid=141 {stick}"),
        # 142: a viable partner refused by load_too_imbalanced -> stick, load imbalance
        _compare(7.000, 142, 182, 2, "loadimb", 275), _compare(7.0004, 142, 143, 3, "smallimp", -610),
        _event("numa01-142", ".....", 7.001, "sched_stick_numa", f"src_pid=142 src_tgid=140 src_ngid=141 {stick}"),
        # 143: an idle CPU, no move allowed, the group's own task no partner -> stick, spare
        _compare(8.000, 143, -1, 0, "idle_nomove", 275), _compare(8.0003, 143, 141, 1, "spare", 0),
        _event("numa01-143", ".....", 8.001, "sched_stick_numa", f"src_pid=143 src_tgid=140 src_ngid=141 {stick}"),
        # 141 again, 3 s later: a partner taken -> a swap
        _compare(9.000, 141, 144, 0, "A:noload", 516),
        _event("numa01-141", ".....", 9.002, "sched_swap_numa",
               "src_pid=141 src_tgid=140 src_ngid=141 src_cpu=6 src_nid=1 dst_pid=144 dst_tgid=140 dst_ngid=141 "
               "dst_cpu=0 dst_nid=0"),
        # 144: a call whose outcome never shows within 50 ms
        _compare(10.000, 144, -2, 5, "mig_on"),
    ]
    r = vm_trace.parse(_console(lines), 256 * MiB)
    assert [c[1:5] for c in r["compares"][:2]] == [[141, 142, 0, "smallimp"], [141, 143, 1, "smallimp"]]
    mo = r["migrate_outcomes"]
    assert mo["calls"] == {"stick": 3, "swap": 1, "unseen": 1}
    assert mo["stuck"] == {"all_below_smallimp": 1, "load_imbalance": 1, "spare_no_move": 1}
    assert mo["stuck_below_smallimp_imps"] == [-700, -610, -600]
    assert mo["after"] == {}                    # no CPU map: no writer's node changes to look back at
    # with the CPU map and the writers' samples: 141 was pulled across by the periodic balancer
    # before its first call; 142 and 143 never crossed; 144 is no writer sampled
    placed = ["=== cpulist 0 0-3", "=== cpulist 1 4-7"] + [_task(0.5, 140, tid, 0, 0, (1, 0)) for tid in (141, 142, 143)]
    pulled = _migrate("<idle>-0", "d.s2.", 5.5, 141, 1, 6)
    r = vm_trace.parse(_console(placed + [pulled] + lines), 256 * MiB)
    assert r["migrate_outcomes"]["after"] == {"load_balance": 2, "none": 3}
    # a console without the instrumented kernel's lines has no such figure
    assert vm_trace.parse(_console([]), 256 * MiB)["migrate_outcomes"] is None


def test_the_models_counters_requests_and_trace_come_from_one_run(vm_trace):
    """simulate_counting_calls runs the model once: its Dataset's per-run numbers are
    nl.simulate's for the same run, its trace nl.scan_trace's, and its request counts add up to
    what the engine's counters say of the same run."""
    import xarray as xr

    import numalab as nl

    topo = nl.Topology.preset("2s-ivb-40")
    wl = nl.workload("numa01", topology=topo, threads=4, size_bytes=512 * MiB, loops=200, nproc=2)
    opts = {"malloc_edges": True, "max_time": 30}
    ds, calls, tr = vm_trace.simulate_counting_calls(wl, "6.12", 2, topo, 1, opts)
    ref = nl.simulate(wl, "6.12", seeds=2, topology=topo, init_node=1, **opts)
    per_run = [v for v in ref.data_vars if ref[v].dims == ("policy", "seed") and v != "convergence_time"]
    assert len(per_run) > 20
    for v in per_run:   # convergence_time and the time series are read at the sampling interval
        np.testing.assert_array_equal(ds[v].values, ref[v].values, err_msg=v)
    xr.testing.assert_identical(tr, nl.scan_trace(wl, "6.12", seeds=[0, 1], topology=topo, init_node=1,
                                                  placement=True, time_resolution=0.5, **opts))
    # every stick the wrapper counted is one the engine's own counter has
    assert calls["stick_below_smallimp"] + calls["stick_spare"] == pytest.approx(float(ds.numa_sticks.mean()))
    assert sum(calls.values()) > 0

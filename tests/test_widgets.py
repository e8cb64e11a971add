"""The explorers' callbacks, driven from Python as the browser would (no browser needed).

Each explorer binds controls to pure functions of numalab.widgets; these tests move the
controls and check that (a) what the explorer shows is what the pure function computes for the
new values, (b) only what changed is recomputed (``explorer.runs`` counts cache misses), and
(c) the pure functions agree with the kernel mechanism they replay.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from numalab import widgets as W
from numalab.policy import ALLOWED, CODE, REASONS


def _shown(explorer, key, col=""):
    m = re.search(rf'data-key="{re.escape(key)}" data-col="{re.escape(col)}"[^>]*>([^<]*)<', explorer.summary.value)
    assert m, f"{key!r} not in the summary"
    return m.group(1)


# --- PID hash ----------------------------------------------------------------------------------

@settings(max_examples=300)
@given(threads=st.integers(1, 300), width=st.sampled_from([64, 128]), first=st.integers(1, 2**32 - 400))
def test_pid_hash_summary_matches_the_formula(threads, width, first):
    bits = {((t * 0x61C88647) & 0xFFFFFFFF) >> (32 - (6 if width == 64 else 7)) for t in range(first, first + threads)}
    got = W.pid_hash_summary(threads, width, first)
    assert got["distinct_bits"] == len(bits)
    assert got["collisions"] == threads - len(bits)
    assert got["p_outsider"] == round(len(bits) / width, 4)


def test_pid_hash_explorer_shows_the_pure_function_and_caches():
    ex = W.PidHashExplorer(threads=16)
    assert ex.runs == 1 and ex.result == W.pid_hash_summary(16, 64, 4100)
    png0 = ex.figure.value
    ex.controls["threads"].value = 64
    want = W.pid_hash_summary(64, 64, 4100)
    assert ex.result == want and ex.runs == 2
    assert _shown(ex, "distinct_bits") == str(want["distinct_bits"])
    assert ex.figure.value != png0
    ex.controls["threads"].value = 16  # back to a point already computed
    assert ex.runs == 2 and ex.result == W.pid_hash_summary(16, 64, 4100)
    ex.set(threads=100, width=128)  # two controls, one recomputation
    assert ex.runs == 3 and ex.result == W.pid_hash_summary(100, 128, 4100)


# --- decision matrix over passes ---------------------------------------------------------------

@pytest.fixture(scope="module")
def replay():
    return W.decision_passes("6.12", threads=4, passes=10, rotate_every=4, pattern="phase-change", seed=1)


def test_decision_passes_scanner_row_is_what_was_scanned(replay):
    for p in range(replay.sizes["pass"]):
        task = int(np.nonzero(replay["tid"].values == int(replay["scanner"][p]))[0][0])
        row = replay["decision"].values[p, task]
        assert np.array_equal(ALLOWED[row], replay["scanned"].values[p])


def test_decision_passes_early_passes_then_filter(replay):
    names = np.asarray(REASONS)[replay["decision"].values]
    assert (names[:2] == "early_passes").all()  # v6.8+: seq - start_scan_seq < 2
    assert (names[2:] != "early_passes").all()
    # a thread's own stack passes on its own bit once it has faulted there
    for t in range(4):
        assert names[2, t, 1 + t] == "own_pid"


def test_decision_passes_bits_come_only_from_faults_in_scanned_vmas():
    ds = W.decision_passes("6.12", threads=4, passes=8, rotate_every=64, seed=3)  # no rotation
    from numalab.hashing import pid_bit

    bits = ds["bits"].values.any(axis=2)  # (pass, vma, bit): union of windows
    tid_bit = pid_bit(ds["tid"].values.astype(np.uint32), width=64)
    for p in range(ds.sizes["pass"] - 1):
        faulted = ds["touched"].values[p] & ds["scanned"].values[p][None, :]  # (task, vma)
        expect = bits[p].copy()
        for t, v in zip(*np.nonzero(faulted)):
            expect[v, tid_bit[t]] = True
        assert np.array_equal(bits[p + 1], expect), p


def test_decision_passes_windows_rotate():
    ds = W.decision_passes("6.12", threads=2, passes=9, rotate_every=2, seed=0)
    b = ds["bits"].values  # (pass, vma, window, bit), window 0 newest
    # 6.12 rotates before the access test: at a rotation pass the newest window starts empty
    # and the previous newest becomes window 1
    for p in (2, 4, 6, 8):
        assert not b[p, :, 0].any()
        assert np.array_equal(b[p, :, 1], b[p - 1, :, 0] | _faults_newest(ds, p - 1))


def _faults_newest(ds, p):
    from numalab.hashing import pid_bit

    out = np.zeros((ds.sizes["vma"], ds.sizes["bit"]), bool)
    bit = pid_bit(ds["tid"].values.astype(np.uint32), width=ds.sizes["bit"])
    for t, v in zip(*np.nonzero(ds["touched"].values[p] & ds["scanned"].values[p][None, :])):
        out[v, bit[t]] = True
    return out


def test_pre_64_scans_everything():
    ds = W.decision_passes("pre-6.4", threads=3, passes=5)
    assert (ds["decision"].values == CODE["unfiltered"]).all()
    assert ds["scanned"].values.all()
    assert W.decision_summary(ds, 4)["false skips so far"] == 0


def test_decision_summary_counts_false_skips_by_hand(replay):
    p = replay.sizes["pass"] - 1
    n = 0
    for q in range(p + 1):
        task = int(np.nonzero(replay["tid"].values == int(replay["scanner"][q]))[0][0])
        for v in range(replay.sizes["vma"]):
            n += replay["decision"].values[q, task, v] == CODE["pid_inactive"] and replay["touched"].values[q, task, v]
    assert W.decision_summary(replay, p)["false skips so far"] == n


def test_decision_explorer_steps_passes_without_recomputing():
    ex = W.DecisionMatrixExplorer(threads=3, passes=6)
    assert ex.runs == 1
    png0 = ex.figure.value
    ex.controls["pass"].value = 4
    assert ex.runs == 1 and ex.figure.value != png0
    want = W.decision_summary(W.decision_passes("6.12", threads=3, passes=6), 4)
    assert _shown(ex, "scanner tid") == str(want["scanner tid"])
    assert _shown(ex, "VMAs scanned") == str(want["VMAs scanned"])
    ex.controls["profile"].value = "rfc2023-p6"
    assert ex.runs == 2
    ex.controls["profile"].value = "6.12"
    assert ex.runs == 2


# --- futex --------------------------------------------------------------------------------------

def test_futex_explorer_matches_pure_function_and_reruns_only_new_points():
    ex = W.FutexExplorer(mode="private", buckets=256, threads=8, nodes=2, seeds=1)
    n0 = ex.runs
    assert n0 == len(W.FUTEX_BUCKETS)
    curve = W.futex_run("private", list(W.FUTEX_BUCKETS), 8, 2, seeds=[0])
    want = W.futex_summary(curve, 256)
    assert _shown(ex, "ops/s per thread") == W._fmt(want["ops/s per thread"])
    ex.controls["buckets"].value = 4096  # same curve, another point: nothing to compute
    assert ex.runs == n0
    want = W.futex_summary(curve, 4096)
    assert _shown(ex, "ops/s per thread") == W._fmt(want["ops/s per thread"])
    ex.controls["seeds"].value = 2  # one more seed of every point
    assert ex.runs == 2 * n0
    # the explorer solved seed 0 and seed 1 in two calls over the whole bucket curve; the same
    # calls here give the same numbers (the MVA's fixed point differs in the 10th digit when
    # the batch differs, so compare like with like)
    per_seed = [W.futex_run("private", list(W.FUTEX_BUCKETS), 8, 2, seeds=[s]) for s in (0, 1)]
    want = np.mean([float(d["ops_per_s_per_thread"].sel(buckets=4096).item()) for d in per_seed])
    assert float(ex.result["ops_per_s_per_thread"].sel(buckets=4096).mean()) == want


def test_futex_explorer_reports_a_refused_combination():
    ex = W.FutexExplorer(mode="numa", buckets=256, threads=8, nodes=2, seeds=1)
    assert ex.figure.layout.display != "none"
    ex.set(nodes=1, threads=100)  # one node of 64 CPUs cannot run 100 threads
    assert ex.error and "threads" in ex.error
    # the message replaces the figure and the summary: no stale numbers stay on screen
    assert "100 threads need 100 CPUs" in ex.message.value and "allowed:" not in ex.message.value
    assert ex.figure.layout.display == "none" and ex.summary.value == ""
    assert "100 threads" in ex.snapshot_html()
    ex.set(nodes=2)  # a valid combination again: the figure comes back
    assert ex.error is None and ex.figure.layout.display != "none" and ex.message.layout.display == "none"


def test_futex_explorer_explains_a_what_if_node_count():
    ex = W.FutexExplorer(mode="numa", buckets=256, threads=8, nodes=2, seeds=1)
    assert ex.notes_shown == []
    ex.controls["nodes"].value = 8
    assert ex.notes_shown and "what-if" in ex.notes_shown[0] and "8 nodes x 64 CPUs" in ex.notes_shown[0]
    assert "what-if" in ex.summary.value


def test_every_knob_has_a_tooltip():
    for ex in (W.PidHashExplorer(), W.DecisionMatrixExplorer(threads=2, passes=3),
               W.FutexExplorer(threads=4, seeds=1),
               W.HistoryExplorer(workload="numa02", topology="2s-ivb-40", threads=2, seeds=1,
                                 workload_options=SMALL)):
        for name, c in ex.controls.items():
            assert c.tooltip and len(c.tooltip) > 20, (type(ex).__name__, name)


def test_live_explorer_answers_first_then_refines_and_newest_wins():
    ex = W.HistoryExplorer(workload="numa02", topology="2s-ivb-40", history=4, threads=2, seeds=1,
                           workload_options=SMALL, live=True)
    ex.timings.clear()
    ex.controls["seeds"].value = 4  # queued: first answer from seeds 0-1, then all 4
    ex.controls["history"].value = 8  # supersedes the run in flight
    assert ex.wait(120)
    assert ex.error is None and list(ex.result) == ["profile", 8]
    assert ex.result[8].sizes["seed"] == 4 and ex.timings[-1]["params"]["history"] == 8
    shown = [t for t in ex.timings if t["params"]["history"] == 8]
    assert [t["stage"] for t in shown] == [0, 1]  # a first answer, then the refined one
    assert shown[0]["seconds"] <= shown[1]["seconds"]
    want = W.history_summary(_concat_runs("numa02", "2s-ivb-40", "6.12", 8, 2, range(4)))
    assert _shown(ex, "elsp Amean [s]", "6.12+N=8") == W._fmt(want["elsp Amean [s]"])


def _concat_runs(wl, topo, prof, h, threads, seeds):
    from numalab.widgets.compute import _concat

    return _concat([W.history_run(wl, topo, prof, h, threads, s, workload_options=SMALL) for s in seeds], "seed")


def test_history_explorer_explains_v64_starvation():
    ex = W.HistoryExplorer(workload="numa02", topology="2s-ivb-40", profile="6.4", history=4, threads=2, seeds=1,
                           workload_options=SMALL)
    starved = [n for n in ex.notes_shown if "starved every VMA" in n]
    if any(float(d["numa_hint_faults"].mean()) == 0 for d in ex.result.values()):
        assert starved and "pid_inactive" in starved[0] and "vma_pids_forced" in starved[0]
    else:
        assert not starved


# --- history (numalab.simulate) -----------------------------------------------------------------

SMALL = {"size_bytes": 128 << 20, "loops": 100}


def test_history_explorer_runs_only_the_new_policy():
    ex = W.HistoryExplorer(workload="numa02", topology="2s-ivb-40", history=4, threads=2, seeds=2,
                           workload_options=SMALL)
    assert ex.runs == 4  # (profile, N=4) x 2 seeds
    assert list(ex.result) == ["profile", 4]
    ex.controls["history"].value = 8
    assert ex.runs == 6  # only N=8's two seeds
    ex.controls["seeds"].value = 3
    assert ex.runs == 8  # one more seed of each shown policy
    ex.controls["history"].value = 2  # 6.12's own N: shown once, nothing new to run
    assert list(ex.result) == ["profile"] and ex.runs == 8
    ex.controls["history"].value = 8
    want = [W.history_run("numa02", "2s-ivb-40", "6.12", 8, 2, s, workload_options=SMALL) for s in range(3)]
    elsp = np.array([float(d["elsp"].values.ravel()[0]) for d in want])
    assert W.history_summary(ex.result[8])["elsp Amean [s]"] == elsp.mean()
    assert _shown(ex, "elsp Amean [s]", "6.12+N=8") == W._fmt(elsp.mean())


def test_history_policy_names():
    assert W.history_policy("6.12", "profile").windows == 2
    assert W.history_policy("rfc2023-p6", 8).windows == 8


def test_summary_html_escapes_and_labels_cells():
    out = W.summary_html({"a<b": 1234567.0, "n": 3}, title="x&y")
    assert "a&lt;b" in out and "x&amp;y" in out and ">1,234,567<" in out
    assert 'data-key="n" data-col=""' in out


def test_history_explorer_shows_progress_while_it_runs():
    ex = W.HistoryExplorer(workload="numa02", topology="2s-ivb-40", history=4, threads=2, seeds=1,
                           workload_options=SMALL)
    seen = []
    ex.status.observe(lambda ch: seen.append(ch["new"]), names="value")
    bars = []
    ex.progress.observe(lambda ch: bars.append((ch["new"], ex.progress.max, ex.progress.layout.visibility)), names="value")
    ex.controls["seeds"].value = 3  # 2 policies x 2 new seeds
    running = [s for s in seen if s.startswith("running")]
    # synchronous (no kernel): one batched engine call per policy for the two new seeds
    assert running == ["running N=profile seeds 1-2: 1/4 ...", "running N=4 seeds 1-2: 3/4 ..."]
    assert (2, 4, "visible") in bars  # the bar moved while runs were pending
    assert ex.status.value == "" and ex.progress.layout.visibility == "hidden"  # and is gone after
    assert ex.runs == 6


def test_history_explorer_offers_and_runs_the_adaptive_rules():
    assert W.adaptive_available()
    ex = W.HistoryExplorer(workload="numa02", topology="2s-ivb-40", history=4, threads=2, seeds=1,
                           workload_options=SMALL)
    options = list(ex.controls["history"].options)
    assert [o for o in options if str(o).startswith("adaptive")] == [f"adaptive:{r}" for r in W.adaptive_rules()]
    ex.controls["history"].value = "adaptive:popcount"
    assert ex.error is None, ex.error
    assert list(ex.result) == ["profile", "adaptive:popcount"]
    assert str(ex.result["adaptive:popcount"]["policy"].values[0]) == W.history_policy("6.12", "adaptive:popcount").name


def test_live_explorer_computes_ahead_in_idle_time():
    import time

    ex = W.FutexExplorer(mode="private", buckets=256, threads=8, nodes=2, seeds=2, live=True)
    ex.controls["threads"].value = 12
    assert ex.wait(120)
    deadline = time.monotonic() + 120
    while getattr(ex, "prefetched", 0) < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert getattr(ex, "prefetched", 0) >= 1
    coarse = [k for k in ex.cache if len(k) > 4 and k[4] == "coarse" and k[0] == "numa" and k[1] == 12]
    assert coarse  # the other modes' first answers are ready before anyone asks
    runs = ex.runs
    ex.timings.clear()
    ex.controls["mode"].value = "numa"
    assert ex.wait(120) and ex.error is None
    assert [t["stage"] for t in ex.timings] == [0, 1] and ex.runs == runs + 2 * len(W.FUTEX_BUCKETS)
    want = W.futex_summary(xr_concat([W.futex_run("numa", list(W.FUTEX_BUCKETS), 12, 2, seeds=[s]) for s in (0, 1)]), 256)
    assert _shown(ex, "ops/s per thread") == W._fmt(want["ops/s per thread"])
    ex.prefetch_enabled = False


def xr_concat(parts):
    import xarray as xr

    return xr.concat(parts, dim="seed")


# --- what a researcher sees: constructor errors, number format, the snapshot rule, the export ----

@pytest.mark.parametrize("make, control, allowed", [
    (lambda: W.HistoryExplorer(history=5), "history", "profile, 1, 2, 3, 4, 6, 8"),
    (lambda: W.HistoryExplorer(topology="2s-999"), "topology", "2s-128"),
    (lambda: W.HistoryExplorer(seeds=20), "seeds", "[1, 8]"),
    (lambda: W.HistoryExplorer(threads=3), "threads", "default, 2, 4"),
    (lambda: W.FutexExplorer(buckets=100), "buckets", "2, 4, 8"),
    (lambda: W.FutexExplorer(mode="global"), "mode", "classic, numa, private"),
    (lambda: W.FutexExplorer(threads=999), "threads", "[1, 128]"),
    (lambda: W.PidHashExplorer(width=32), "width", "64, 128"),
])
def test_invalid_constructor_arguments_name_the_control_and_what_it_allows(make, control, allowed):
    from numalab.errors import NumalabValueError

    with pytest.raises(NumalabValueError) as err:  # never ipywidgets' bare TraitError
        make()
    text = str(err.value)
    assert f"{control}=" in text and "Explorer" in text and allowed in text, text


def test_a_string_spelling_an_option_is_accepted():
    ex = W.PidHashExplorer(threads=8, width="128")
    assert ex.controls["width"].value == 128


def test_summary_numbers_keep_two_decimals():
    # an Amean of 39.62 s next to a -0.37 % change: 3 significant figures (39.6) hid the move
    assert [W._fmt(x) for x in (39.6234, 209.1, 0.0287, 0.0, 1234.5, float("nan"), 3)] == \
        ["39.62", "209.10", "0.0287", "0.00", "1,234", "n/a", "3"]


def test_each_explorer_hides_only_its_own_snapshot():
    from numalab.widgets.snapshot import live_css

    a, b = W.PidHashExplorer(threads=8), W.PidHashExplorer(threads=9)
    assert a.uid != b.uid
    css = live_css(a.uid)
    # the rule: a live-<uid> output hides the snapshot-<uid> output after it and the PNG right after that
    assert f":has(.numalab-live-{a.uid})~.jp-OutputArea-child:has(.numalab-snapshot-{a.uid})" in css
    assert f"numalab-snapshot-{a.uid})+.jp-OutputArea-child" in css
    assert f"-{b.uid})" not in css and ":first-child" not in css  # nothing else (a print, another explorer)
    assert css in a.widget.children[0].value and f"numalab-live-{a.uid}" in a.widget.children[0]._dom_classes
    assert f'class="numalab-snapshot numalab-snapshot-{b.uid}"' in b._snapshot_bundle(b.snapshot_html())["text/html"]


def test_live_explorer_returns_at_once_and_display_waits_for_the_final_view(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append(obj) or _Handle())
    ex = W.HistoryExplorer(workload="numa02", topology="2s-ivb-40", history=4, threads=2, seeds=2,
                           workload_options=SMALL, live=True, workers=0)
    ex.prefetch_enabled = False
    assert ex.result is None or ex._busy  # building it started the work, did not do it
    ex._ipython_display_()
    assert not ex._busy and ex.error is None and ex.result[4].sizes["seed"] == 2  # the refined view
    assert [t["stage"] for t in ex.timings] == [0, 1]  # the first answer was drawn before the final one
    assert len(shown) == 3 and "numalab-snapshot" in shown[1]["text/html"]


def test_live_explorer_sends_its_final_view_again(monkeypatch):
    """A page that loads its widgets' states drops the updates reaching it meanwhile (the
    browser trace: test_browser.py's test_update_sent_while_the_page_loads_reaches_it). After
    a final answer a live explorer sends the view's widgets again, unchanged, RESEND_AFTER_S
    later, once per answer."""
    import time

    import ipywidgets

    from numalab.widgets import explorers

    monkeypatch.setattr(explorers, "RESEND_AFTER_S", (0.3,))
    sent = []
    send = ipywidgets.Widget._send

    def record(self, msg, buffers=None):
        sent.append((time.monotonic(), self, msg))
        return send(self, msg, buffers)

    monkeypatch.setattr(ipywidgets.Widget, "_send", record)
    ex = W.PidHashExplorer(threads=8, live=True)
    assert ex.wait(60)
    time.sleep(0.6)  # the first answer's re-send has left
    ex.controls["threads"].value = 9
    assert ex.wait(60)
    answered = time.monotonic()
    time.sleep(1.0)
    for wdg in (ex.summary, ex.figure, ex.figure.layout):
        mine = [(t, m) for t, w, m in sent if w is wdg and m.get("method") == "update"]
        final = [t for t, m in mine if t <= answered]
        again = [m["state"] for t, m in mine if t > answered]
        assert final and len(again) == 1, (type(wdg).__name__, len(mine))
        assert again[0]["_model_name"] == wdg._model_name  # the whole state, not a change
    resent = [m["state"]["value"] for t, w, m in sent if w is ex.summary and t > answered]
    assert resent == [ex.summary.value] and "threads=9" in resent[0]


def test_display_can_return_after_the_first_answer(monkeypatch):
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: _Handle())
    ex = W.HistoryExplorer(workload="numa02", topology="2s-ivb-40", history=4, threads=2, seeds=3,
                           workload_options=SMALL, live=True, workers=0)
    ex.prefetch_enabled = False
    ex.display_waits = "first"
    ex._ipython_display_()
    assert ex.timings and ex.timings[0]["stage"] == 0  # something is on screen
    assert ex.wait(120) and ex.timings[-1]["stage"] == 1


def test_live_progress_says_how_long_it_has_run():
    ex = W.HistoryExplorer(workload="numa02", topology="2s-ivb-40", history=4, threads=2, seeds=1,
                           workload_options=SMALL, live=True, workers=0)
    ex.prefetch_enabled = False
    seen = []
    ex.status.observe(lambda ch: seen.append(ch["new"]), names="value")
    ex.controls["seeds"].value = 3
    assert ex.wait(120)
    assert any(re.fullmatch(r"running N=\S+ seeds? [\d-]+: \d/\d, \d+ s \.\.\.", s) for s in seen), seen


class _Handle:
    def update(self, *a, **kw):
        pass


def test_export_writes_figure_parameters_and_dataset_and_reopens(tmp_path):
    import json

    ex = W.HistoryExplorer(workload="numa02", topology="2s-ivb-40", history=4, threads=2, seeds=2,
                           workload_options=SMALL)
    out = ex.export(tmp_path / "view")
    assert sorted(p.name for p in out.iterdir()) == ["data.nc", "figure.pdf", "figure.png", "figure.svg", "view.json"]
    view = json.loads((out / "view.json").read_text())
    assert view["explorer"] == "HistoryExplorer" and view["params"] == ex.params
    assert view["options"] == {"workload_options": SMALL} and view["shown"] == ex.shown_values()
    # the figure again from the files alone (no engine run): the same pixels
    from numalab.widgets.display import figure_png

    assert figure_png(W.regenerate(out)) == ex.figure.value
    again = W.reopen(out)
    assert again.params == ex.params and again.shown_values() == view["shown"]


def test_export_of_futex_and_pid_views_round_trips(tmp_path):
    from numalab.widgets.display import figure_png

    decision = W.DecisionMatrixExplorer(profile="rfc2023-p6", threads=4, passes=8).set(**{"pass": 5})
    for ex in (W.FutexExplorer(threads=4, seeds=1), W.PidHashExplorer(threads=20, width=128), decision):
        out = ex.export(tmp_path / type(ex).__name__, formats=("png",))
        assert figure_png(W.regenerate(out)) == ex.figure.value
        assert W.reopen(out).shown_values() == ex.shown_values()


def test_export_button_writes_under_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ex = W.PidHashExplorer(threads=8)
    ex.export_button.click()
    assert ex.exported.parent == tmp_path / "numalab-exports" and (ex.exported / "view.json").exists()
    assert "exported to" in ex.status.value


def test_a_refused_view_cannot_be_exported(tmp_path):
    from numalab.errors import NumalabValueError

    ex = W.FutexExplorer(threads=4, nodes=2, seeds=1)
    ex.set(threads=100, nodes=1)
    assert ex.error
    with pytest.raises(NumalabValueError, match="no view to export"):
        ex.export(tmp_path)
    ex.export_button.click()
    assert "export failed" in ex.status.value


def test_reopen_names_a_folder_that_is_not_an_export(tmp_path):
    from numalab.errors import NumalabValueError

    (tmp_path / "view.json").write_text("[1, 2]")
    with pytest.raises(NumalabValueError, match="not an exported explorer view"):
        W.reopen(tmp_path)
    with pytest.raises(NumalabValueError, match="does not exist"):
        W.reopen(tmp_path / "nowhere")

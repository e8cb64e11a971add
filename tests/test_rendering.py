"""numalab.report.rendering: the reports are the same text, and render as HTML tables."""

import re

import numpy as np
import xarray as xr

from numalab import report
from numalab.report import rendering


def runs(names=("N=2", "grow-shrink", "popcount"), nseed=6):
    rng = np.random.default_rng(3)
    base = 50 + rng.normal(0, 0.5, (1, 2, nseed))
    elsp = np.concatenate([base, base - 3.0, base + rng.normal(0, 0.01, (1, 2, nseed))])
    return xr.Dataset(
        {"elsp": (("policy", "workload", "seed"), elsp, {"units": "s"}),
         "syst": (("policy", "workload", "seed"), elsp / 100, {"units": "s"}),
         "numa_hint_faults": (("policy", "workload", "seed"), np.full(elsp.shape, 1000.0), {"units": "1"})},
        coords={"policy": list(names), "workload": ["numa02", "numa02_SMT"], "seed": np.arange(nseed)})


def _plain(fn, *args, **kwargs):
    return fn.__wrapped__(*args, **kwargs)


def test_reports_are_the_same_text():
    ds = runs()
    for fn, kwargs in ((report.mmtests, {}), (report.mmtests, {"era": "2026"}), (report.lkp, {}),
                       (report.mmtests, {"baseline": "popcount", "monitors": False})):
        got = fn(ds, **kwargs)
        assert isinstance(got, str) and isinstance(got, rendering.Report)
        assert str(got) == _plain(fn, ds, **kwargs)
        assert got == _plain(fn, ds, **kwargs) and got.splitlines() == _plain(fn, ds, **kwargs).splitlines()


def test_mmtests_html_has_one_full_named_column_per_policy_and_marks():
    ds = runs()
    rep = report.mmtests(ds, metric=["elsp"])
    out = rep._repr_html_()
    head = re.search(r"<thead>(.*?)</thead>", out).group(1)
    assert re.findall(r"<th>([^<]*)</th>", head) == ["N=2", "grow-shrink", "popcount"]  # not "popcoun"/"spa"
    assert "white-space:nowrap" in out and "position:sticky" in out
    sig = re.findall(r'<td class="numalab-sig"[^>]*data-col="([^"]+)"', out)
    assert "grow-shrink" in sig and "popcount" not in sig  # -3 s is significant, +0.01 s is not
    # every number of the text is in the table
    text_cells = re.findall(r"(-?\d+\.\d+) [(*]\s*(-?\d+\.\d+)%", str(rep))
    for value, pct in text_cells:
        assert f">{value} <" in out and f"{pct}%" in out
    assert "numalab-monitor" in out  # Duration / Ops tables follow
    assert "uuid" not in out and out == report.mmtests(ds, metric=["elsp"])._repr_html_()  # stable


def test_lkp_html_table():
    ds = runs()
    rep = report.lkp(ds)
    out = rep._repr_html_()
    assert "<table" in out and "autonuma-benchmark.numa02.seconds" in out
    assert out.count("%change</th>") == 2
    m = re.search(r"(-?\d+\.\d)%\s+\S+\s+autonuma-benchmark\.numa02\.seconds", str(rep))
    assert m is None or m.group(1) in out


def test_unreadable_text_falls_back_to_a_scrolling_pre():
    rep = rendering.Report("not a table\n", kind="mmtests", columns=["a", "b"])
    assert "<pre>not a table" in rep._repr_html_()


def test_trace_table_splits_columns_and_does_not_link():
    text = ("# numa02 on 2s-128, rfc2023-p4: task_numa_work runs\n"
            "   t (s) seed mm thread     tid    seq  offset (MiB)     ptes  VMAs reached (kind:decision)\n"
            "   1.102    0  0     83   26287  0->0       0->1362       140  text:shared_ro, data:disjoint_select\n")
    t = report.trace_table(text)
    assert str(t) == text
    out = t._repr_html_()
    assert "<caption>numa02 on 2s-128, rfc2023-p4: task_numa_work runs</caption>" in out
    # the VMAs reached wrap in their cell (no nowrap cut at the box's edge); the numbers stay on one line
    assert ('<td style="text-align:left;white-space:normal;min-width:32em">text:shared_ro, data:disjoint_select</td>'
            in out)
    assert '<td style="text-align:right">26287</td>' in out
    assert out.count("<th>") == len(rendering.TRACE_COLUMNS)

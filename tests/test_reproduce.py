"""The calibration check, reduced for CI: the same verdict rules as ``numalab reproduce`` on
fewer seeds, so a change that breaks a reproduced sign or size fails the suite.

Seeds: the two Ice Lake tables of calibration.md with 3 seeds (as before); the seven tables of
calibration-intel.md (lkp-csl-2sp9, lkp-spr-r02) with 2 seeds, each on its machine's preset.
Runs are deterministic per seed, so the verdicts below are exact for these seeds."""

import csv

import pytest

import numalab as nl
from numalab import fidelity
from numalab.cli import main
from numalab.outputs import FIDELITY_COLUMNS, SPREAD_COLUMNS, published_block


ICE_LAKE = ["lkp-rfc2023-p5-vs-p4", "lkp-rfc2023-p6-vs-p5"]
MACHINE_SEEDS = 2


@pytest.fixture(scope="module")
def calibration():
    return fidelity.simulate_calibration(seeds=3)


@pytest.fixture(scope="module")
def machines():
    """Every table of calibration-intel.md on its machine's preset, 2 seeds."""
    tables = [n for n in fidelity.calibration_tables() if n not in ICE_LAKE]
    return fidelity.simulate_fidelity(tables, seeds=MACHINE_SEEDS)


def test_published_blocks_reprint_byte_for_byte():
    from numalab import data

    with_mail = [n for n in fidelity.calibration_tables() if (data.data_dir() / f"{n}.lkp.txt").exists()]
    assert with_mail == ICE_LAKE  # the others are typeset from their CSV (tests/test_data.py)
    for name in with_mail:
        assert published_block(name) == (data.data_dir() / f"{name}.lkp.txt").read_text()


# Ice Lake rows the model does not reproduce at these 3 seeds, each explained in docs/fidelity.md,
# with their verdict. Strict, as MACHINE_MISSES below: every other row must be reproduced, a
# listed row that becomes reproduced or changes its verdict fails too. numa02's is the model's
# rare p4 failure mode. With the kernel's pull back and stick (0.11.0) numa01_THREAD_ALLOC's row
# falls short at these 3 seeds (-12.3 %, the bound is -13.55; -15.7 % at 16 seeds). With the first
# touch's wait (0.12.0: first_touch_wait) the elapsed time is reproduced here (it fell short in
# 0.11.0), and p6 vs p5's numa01 comes out too large at these 3 seeds (-10.2 %, published -1.1);
# at 64 seeds it is -4.4 %, reproduced, and p5 vs p4's numa01 is -4.6 % against the published
# -4.1 (docs/fidelity.md, "The first touch's wait as the default"). numa01_THREAD_ALLOC's row is
# -11.7 % here with numa_maymove (0.12.0), -18.2 % at 64 seeds.
KNOWN_MISSES = {
    ("lkp-rfc2023-p5-vs-p4", "autonuma-benchmark.numa01_THREAD_ALLOC.seconds"): "too small",     # -11.7 (-27.1)
    ("lkp-rfc2023-p5-vs-p4", "autonuma-benchmark.numa02.seconds"): "too small",                  # -6.9 (-33.6)
    ("lkp-rfc2023-p6-vs-p5", "autonuma-benchmark.numa01.seconds"): "too large",                  # -10.2 (-1.1)
}


@pytest.mark.slow
def test_every_published_number_is_reproduced_but_the_documented_misses(calibration):
    published, sim = calibration
    rows = [r for name, pub in published.items() for r in fidelity.compare(pub, sim)]
    assert len(rows) == 14
    missed = [f"{r['table']} {r['metric']} {r['quantity']}: published {r['published']:+.1f}, simulated "
              f"{r['simulated_mean']:+.1f} ({r['verdict']})" for r in rows
              if r["verdict"] != fidelity.REPRODUCED and (r["table"], r["metric"]) not in KNOWN_MISSES]
    assert not missed, "\n".join(missed)
    recorded = {(r["table"], r["metric"]): r["verdict"] for r in rows
                if (r["table"], r["metric"]) in KNOWN_MISSES and r["quantity"].startswith("%change")}
    assert recorded == KNOWN_MISSES, f"a known miss changed its verdict (now): {recorded}"
    by = {(r["table"], r["metric"], r["quantity"]): r for r in rows}
    assert by[("lkp-rfc2023-p5-vs-p4", "autonuma-benchmark.numa01_THREAD_ALLOC.seconds", "rfc2023-p4 seconds")][
        "fitted"] == "EngineOptions.lb_migrate_hz"


def test_known_misses_are_documented():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "fidelity.md").read_text()
    for _, metric in KNOWN_MISSES:
        assert metric.split(".")[1] in text
    across = text.split("## Across machines", 1)[1]
    for table, metric, _ in MACHINE_MISSES:
        assert table in across and metric.rsplit(".", 1)[0].split(".")[-1] in across, (table, metric)


# calibration-intel.md rows the model misses today (2 seeds; docs/fidelity.md "Across machines"),
# with their verdict at these seeds. Strict: a row listed here that becomes reproduced fails the
# test, so a fix moves it out of the list; every row not listed must be reproduced.
MACHINE_MISSES = {
    ("lkp-spr-6.4-vs-scan-delay", "autonuma-benchmark.numa02_SMT.seconds", "%change 6.4 vs 6.4-rc-scan-delay"):
        "wrong sign",
    ("lkp-spr-rfc2023-p2-vs-base", "autonuma-benchmark.numa01.seconds", "%change rfc2023-p2 vs 6.4"): "too large",
    ("lkp-spr-rfc2023-p2-vs-base", "autonuma-benchmark.time.elapsed_time", "%change rfc2023-p2 vs 6.4"): "too large",
    # seed noise at these 2 seeds (+-6 %), reproduced at 8; the 6.8 vmstat changes, seed noise at 2
    # seeds until 0.7.0, are reproduced at 2 seeds since the tick clock (0.8.0); the first touch's
    # wait alone put three of them short here (+29 to +44 %), and with numa_maymove (0.12.0 both)
    # they are reproduced again (+70 to +80 %): their model std is 100-146 points at 32 seeds
    ("lkp-spr-rfc2023-p2-vs-base", "autonuma-benchmark.numa01_THREAD_ALLOC.seconds", "%change rfc2023-p2 vs 6.4"):
        "too small",                                                                                    # -4.7 (-11.7)
}


def _machine_rows(machines):
    return fidelity.table_rows(*machines)   # a base column several tables share is judged once


@pytest.mark.slow
def test_every_machine_row_is_reproduced_but_the_recorded_misses(machines):
    rows = _machine_rows(machines)
    judged = [r for r in rows if r["verdict"] != fidelity.NOT_JUDGED]
    assert len(judged) == 43  # 18 (A) + 10 (B) + 15 (C, the base column once)
    by_key = {(r["table"], r["metric"], r["quantity"]): r for r in judged}
    assert set(MACHINE_MISSES) <= set(by_key)
    lost = [f"{k}: published {r['published']:+.4g}, simulated {r['simulated_mean']:+.4g} ({r['verdict']})"
            for k, r in by_key.items() if k not in MACHINE_MISSES and r["verdict"] != fidelity.REPRODUCED]
    assert not lost, "rows that were reproduced no longer are:\n" + "\n".join(lost)
    fixed = [f"{k}: now {by_key[k]['simulated_mean']:+.4g}, reproduced -- remove it from MACHINE_MISSES"
             for k in MACHINE_MISSES if by_key[k]["verdict"] == fidelity.REPRODUCED]
    assert not fixed, "\n".join(fixed)
    changed = {k: (v, by_key[k]["verdict"]) for k, v in MACHINE_MISSES.items() if by_key[k]["verdict"] != v}
    assert not changed, f"a known miss changed its verdict (recorded, now): {changed}"


def _replay(sims):
    """A stand-in for the engine calls (fidelity.runs.run_calls) that answers each call from the
    fixtures' simulations; a band point's write_efficiency (its machine's) scales its seconds (a band)."""
    def run_calls(points):
        out = []
        for c in points:
            ds = sims[c["preset"]].sel(workload=c["workload"], policy=[c["policy"]]).isel(
                seed=slice(0, len(c["seeds"]))).drop_vars("workload")
            if "write_efficiency" in c["topology"]:
                centre = nl.Topology.preset(c["preset"]).write_efficiency
                ds = ds.assign(elsp=ds.elsp * centre / c["topology"]["write_efficiency"])
            out.append(ds)
        return out
    return run_calls


@pytest.mark.slow
def test_reproduce_command_writes_every_output(tmp_path, capsys, monkeypatch, calibration, machines):
    from numalab.fidelity import runs

    # the command's own engine calls are answered from the runs the fixtures made
    sims = {"2s-128": calibration[1], **machines[1]}
    monkeypatch.setattr(runs, "run_calls", _replay(sims))
    # 2 seeds a band point: the fixtures' runs have 2 seeds
    assert main(["reproduce", "--out", str(tmp_path), "--seeds", "2", "--band-points", "2", "--band-seeds", "2",
                 "--workers", "1", "--no-progress", "--no-notebooks"]) == 0
    out = capsys.readouterr().out
    assert "published rule:" in out and "strict rule:" in out and "robust:" in out and "fitted:" in out
    assert f"{37 * 3} engine calls (37 at the centre, 2 seeds; 74 over 2 band points, 2 seeds)" in out
    names = fidelity.calibration_tables()
    for name in names:
        text = (tmp_path / f"{name}.txt").read_text()
        assert text.count("%stddev     %change         %stddev") == 2  # published above simulated
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "2s-224-spr" in (tmp_path / "lkp-spr-6.8-vs-6.7.txt").read_text()  # its machine's preset
    for png in ("fidelity.png", "fidelity-bands.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {p.name for p in tmp_path.glob("simulated-*.nc")} == {f"simulated-{k}.nc" for k in sims}
    assert "| `Topology 2s-128.write_efficiency` | 0.21 | fitted |" in (tmp_path / "provenance.md").read_text()
    # every (machine, test, kernel) of the tables once, its printed spread beside the model's
    with open(tmp_path / "spread.csv", newline="") as fh:
        spread = list(csv.DictReader(fh))
    assert list(spread[0]) == SPREAD_COLUMNS and len({(r["machine"], r["workload"], r["kernel"]) for r in spread}) \
        == len(spread) == 35
    loglik, n, impossible = fidelity.spread_total([{"log_p": float(r["log_p"])} for r in spread])
    printed = float(out.split("run-to-run spread: log-likelihood ")[1].split()[0])
    assert n + impossible == 35 and printed == pytest.approx(loglik, abs=0.06)   # the csv's 4 figures
    with open(tmp_path / "fidelity.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == FIDELITY_COLUMNS and len(rows) == 14 + 43 + 5  # + 5 vmstat base values, not judged
    assert {r["table"] for r in rows} == set(names)
    assert sum(r["verdict"] == "not judged" for r in rows) == 5
    fitted = [r for r in rows if r["fitted"]]
    assert {r["fitted"] for r in fitted} == {"Topology 2s-128.write_efficiency", "EngineOptions.lb_migrate_hz"}
    assert len(fitted) == 4 and all(r["quantity"].endswith(" seconds") for r in fitted)
    # the replayed band scales the seconds by the machine's write_efficiency: a band around each base row
    base = [r for r in rows if r["quantity"].endswith(" seconds")]
    assert all(r["band_points"] == "2" and float(r["band_lo"]) < float(r["band_hi"]) for r in base)
    assert {r["robust"] for r in rows} <= {"robust", "not robust", "not judged"}
    assert not list(tmp_path.glob(".*tmp*"))  # no temporary file left behind


def test_reproduce_option_reaches_every_run_and_is_checked_first(capsys, monkeypatch, tmp_path):
    """--option NAME=VALUE: every engine call, the centre's and each band point's, carries it (a
    band point's own value of that option is overridden); a bad name or value, or --option with
    --cross-validate, is a usage error before any run."""
    from numalab import data
    from numalab.fidelity import bands, plan, runs

    published = {"lkp-rfc2023-p5-vs-p4": data.load("lkp-rfc2023-p5-vs-p4")}
    centre = plan(published, 2, overrides=fidelity.Point(options={"first_touch_wait": True}))
    calls = bands.band_calls(published, points=2, seeds=2, options={"first_touch_wait": True, "lb_migrate_hz": 0.0})
    assert calls and all(c.overrides.options["first_touch_wait"] is True and c.overrides.options["lb_migrate_hz"] == 0
                         for c in calls)
    assert all(c.overrides.options == {"first_touch_wait": True} for c in centre)
    seen = []
    monkeypatch.setattr(runs, "run_calls", lambda *a, **k: seen.append(1))
    for argv, word in ((["--option", "no_such=1"], "no_such"),
                       (["--option", "first_touch_wait=maybe"], "first_touch_wait"),
                       (["--option", "first_touch_wait=True", "--cross-validate"], "--cross-validate")):
        assert main(["reproduce", "--out", str(tmp_path / "r"), "--no-progress", "--no-notebooks", *argv]) == 2
        assert word in capsys.readouterr().err
    assert not seen and not (tmp_path / "r").exists()


def test_reproduce_rejects_bad_seeds(capsys):
    assert main(["reproduce", "--seeds", "1", "--out", "/nonexistent/never"]) == 2
    assert "--seeds" in capsys.readouterr().err


def test_notebook_figures_are_exported_as_png(tmp_path):
    from numalab.notebook_figures import export_figures, notebooks

    names = [p.stem for p in notebooks()]
    assert names[:2] == ["01-quickstart", "02-pid-history-sweep"] and len(names) >= 6
    stored = export_figures(tmp_path / "stored", execute=False)
    assert stored and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in stored)
    assert {p.name.split("-fig")[0] for p in stored} >= {"01-quickstart", "04-futex-buckets"}


@pytest.mark.slow
def test_notebook_figures_come_from_a_fresh_execution(tmp_path, monkeypatch):
    # a notebook stored without outputs: a figure can only come from running it (one cell,
    # a few seconds; running a shipped notebook again is nbval's and the browser test's job)
    import nbformat

    from numalab import notebook_figures
    from numalab.notebook_figures import export_figures

    nbdir = tmp_path / "nb"
    nbdir.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n%matplotlib inline\n"
        "import numalab as nl\nplt.plot(nl.stats.amean([[1.0, 2.0, 3.0]]))")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, nbdir / "01-fresh.ipynb")
    nbformat.write(nbformat.v4.new_notebook(), nbdir / "02-other.ipynb")
    monkeypatch.setattr(notebook_figures, "notebook_dir", lambda: nbdir)
    out = tmp_path / "out"
    assert export_figures(out, only="01-", execute=False) == []        # nothing stored
    fresh = export_figures(out, only="01-")
    assert [p.name for p in fresh] == ["01-fresh-fig1.png"]
    assert fresh[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(out.glob(".*tmp*"))


def test_cross_validation_runs_reduced(tmp_path):
    """The cross-validation of numalab reproduce --cross-validate, reduced: two tables cut to
    numa02 (seconds a run), the default against init_coherence off, 2 seeds."""
    from numalab import data
    from numalab.fidelity import crossval

    published = {}
    for name in ICE_LAKE:
        pub = data.load(name)
        pub = pub.sel(workload=["numa02"]).drop_vars([v for v in pub.data_vars if v.startswith("job_")])
        published[name] = pub
    cv = crossval.cross_validate(published, seeds=2, grid=1, switches=["init_coherence"], workers=1)
    assert list(cv.rows) == ["default", "init_coherence=off"]
    assert all(len(rows) == 4 for rows in cv.rows.values())   # p4 and p5 seconds, p5 and p6 %change
    r = cv.results[("verdict", "table")]
    assert r["rows"] == 4 and [f["fold"] for f in r["folds"]] == ICE_LAKE
    assert r["default"] == sum(row["verdict"] == fidelity.REPRODUCED for row in cv.rows["default"])
    assert 0 <= r["cross_validated"] <= r["rows"] and r["in_sample"] >= r["default"]
    assert cv.results[("verdict", "machine")]["folds"][0]["fold"] == "lkp-icl-2sp6"
    paths = crossval.write(cv, tmp_path)
    assert "cross-validated" in paths[0].read_text() and paths[1].read_text().count("\n") == 1 + 8

"""The calibration check, reduced for CI: the same verdict rules as ``numalab reproduce`` on
fewer seeds, so a change that breaks a reproduced sign or size fails the suite.

Seeds: the two Ice Lake tables of calibration.md with 3 seeds (as before); the seven tables of
calibration-intel.md (lkp-csl-2sp9, lkp-spr-r02) with 2 seeds, each on its machine's preset.
Runs are deterministic per seed, so the verdicts below are exact for these seeds."""

import csv

import pytest

from numalab import fidelity
from numalab.cli import main
from numalab.outputs import FIDELITY_COLUMNS, published_block


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
# listed row that becomes reproduced or changes its verdict fails too. The numa01_THREAD_ALLOC
# and job rows are seed noise at 3 seeds (docs/fidelity.md "0.4.0": 16 seeds of the 0.3.0 model
# give -21.4 % or -12.8 % on two random streams, first arrival -10.7 %); numa02's is the
# model's rare p4 failure mode.
KNOWN_MISSES = {
    ("lkp-rfc2023-p5-vs-p4", "autonuma-benchmark.numa01_THREAD_ALLOC.seconds"): "wrong sign",   # +4.0 (-27.1)
    ("lkp-rfc2023-p5-vs-p4", "autonuma-benchmark.numa02.seconds"): "too small",                  # -1.6 (-33.6)
    ("lkp-rfc2023-p5-vs-p4", "autonuma-benchmark.time.elapsed_time"): "too small",               # -3.3 (-13.0)
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
    ("lkp-spr-6.4-vs-scan-delay", "autonuma-benchmark.numa01.seconds", "6.4-rc-scan-delay seconds"): "too slow",
    ("lkp-spr-6.4-vs-scan-delay", "autonuma-benchmark.numa01.seconds", "%change 6.4 vs 6.4-rc-scan-delay"): "too large",
    ("lkp-spr-6.4-vs-scan-delay", "autonuma-benchmark.numa02_SMT.seconds", "%change 6.4 vs 6.4-rc-scan-delay"):
        "wrong sign",
    # the 6.8 vmstat rows: +17 to +26 % at 2 seeds (published +86 to +148 %)
    ("lkp-spr-6.8-vs-6.7", "proc-vmstat.numa_hint_faults", "%change 6.8 vs 6.7"): "too small",
    ("lkp-spr-6.8-vs-6.7", "proc-vmstat.numa_hint_faults_local", "%change 6.8 vs 6.7"): "too small",
    ("lkp-spr-6.8-vs-6.7", "proc-vmstat.numa_huge_pte_updates", "%change 6.8 vs 6.7"): "too small",
    ("lkp-spr-6.8-vs-6.7", "proc-vmstat.numa_pte_updates", "%change 6.8 vs 6.7"): "too small",
    ("lkp-spr-6.8-vs-6.7", "proc-vmstat.numa_pages_migrated", "%change 6.8 vs 6.7"): "too small",
    ("lkp-spr-rfc2023-p1-vs-base", "autonuma-benchmark.numa01.seconds", "6.4 seconds"): "too slow",
    ("lkp-spr-rfc2023-p2-vs-base", "autonuma-benchmark.numa01.seconds", "%change rfc2023-p2 vs 6.4"): "too large",
    ("lkp-spr-rfc2023-p2-vs-base", "autonuma-benchmark.time.elapsed_time", "%change rfc2023-p2 vs 6.4"): "too large",
}


def _machine_rows(machines):
    published, sims = machines
    rows, seen = [], set()
    for pub in published.values():
        for r in fidelity.compare(pub, fidelity.table_sim(pub, sims)):
            key = (pub.attrs["machine"], pub.attrs["source"], r["metric"], r["quantity"], r["published"])
            if r["quantity"].startswith("%change") or key not in seen:  # a shared base column is judged once
                seen.add(key)
                rows.append(r)
    return rows


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


@pytest.mark.slow
def test_reproduce_command_writes_every_output(tmp_path, capsys, monkeypatch, calibration, machines):
    # the command's own simulation is the one the fixtures ran: reuse it
    published = {**calibration[0], **machines[0]}
    sims = {"2s-128": calibration[1], **machines[1]}
    monkeypatch.setattr(fidelity, "simulate_fidelity", lambda *a, **k: (published, sims))
    assert main(["reproduce", "--out", str(tmp_path), "--seeds", "3", "--no-progress", "--no-notebooks"]) == 0
    out = capsys.readouterr().out
    assert "published numbers reproduced" in out
    names = fidelity.calibration_tables()
    assert set(names) == set(published)
    for name in names:
        text = (tmp_path / f"{name}.txt").read_text()
        assert text.count("%stddev     %change         %stddev") == 2  # published above simulated
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "2s-224-spr" in (tmp_path / "lkp-spr-6.8-vs-6.7.txt").read_text()  # its machine's preset
    assert (tmp_path / "fidelity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {p.name for p in tmp_path.glob("simulated-*.nc")} == {f"simulated-{k}.nc" for k in sims}
    with open(tmp_path / "fidelity.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == FIDELITY_COLUMNS and len(rows) == 14 + 43 + 5  # + 5 vmstat base values, not judged
    assert {r["table"] for r in rows} == set(names)
    assert sum(r["verdict"] == "not judged" for r in rows) == 5
    assert not list(tmp_path.glob(".*tmp*"))  # no temporary file left behind


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
def test_notebook_figures_come_from_a_fresh_execution(tmp_path):
    from numalab.notebook_figures import export_figures

    fresh = export_figures(tmp_path, only="01-")
    assert fresh and all(p.name.startswith("01-quickstart-fig") for p in fresh)
    assert not list(tmp_path.glob(".*tmp*"))

"""The calibration check, reduced for CI: the same verdict rules as ``numalab reproduce`` on
fewer seeds, so a change that breaks a reproduced sign or size fails the suite."""

import csv

import pytest

from numalab import fidelity
from numalab.cli import main
from numalab.outputs import FIDELITY_COLUMNS, published_block


@pytest.fixture(scope="module")
def calibration():
    return fidelity.simulate_calibration(seeds=3)


def test_published_blocks_reprint_byte_for_byte():
    for name in fidelity.calibration_tables():
        from numalab import data

        assert published_block(name) == (data.data_dir() / f"{name}.lkp.txt").read_text()


# Rows the model does not yet reproduce, each explained in docs/fidelity.md ("What the model
# does not capture"). They must still have the published sign; every other row must be
# reproduced, so a change that breaks a reproduced sign or size fails here.
KNOWN_MISSES = {
    ("lkp-rfc2023-p5-vs-p4", "autonuma-benchmark.numa02.seconds"),
    ("lkp-rfc2023-p5-vs-p4", "autonuma-benchmark.time.elapsed_time"),
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
    for r in rows:
        if (r["table"], r["metric"]) in KNOWN_MISSES and r["quantity"].startswith("%change"):
            assert r["simulated_mean"] * r["published"] > 0, f"{r['metric']}: sign lost"


def test_known_misses_are_documented():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "fidelity.md").read_text()
    for _, metric in KNOWN_MISSES:
        assert metric.split(".")[1] in text


@pytest.mark.slow
def test_reproduce_command_writes_every_output(tmp_path, capsys, monkeypatch, calibration):
    # the command's own simulation is the one the fixture ran (same seeds): reuse it
    monkeypatch.setattr(fidelity, "simulate_calibration", lambda *a, **k: calibration)
    assert main(["reproduce", "--out", str(tmp_path), "--seeds", "3", "--no-progress", "--no-notebooks"]) == 0
    out = capsys.readouterr().out
    assert "published numbers reproduced" in out
    names = fidelity.calibration_tables()
    for name in names:
        text = (tmp_path / f"{name}.txt").read_text()
        assert text.count("%stddev     %change         %stddev") == 2  # published above simulated
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(tmp_path / "fidelity.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == FIDELITY_COLUMNS and len(rows) == 14
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

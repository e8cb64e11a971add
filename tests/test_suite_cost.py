"""benchmarks/suite_cost.py: a test's seconds go to its file, every file to one group."""

from _benchmark_scripts import load_script


def _load():
    return load_script("suite_cost")


def test_seconds_add_up_per_file_and_per_group():
    sc = _load()
    rows = [["tests/test_browser.py::test_a", 10.0, 8.0], ["tests/test_browser.py::test_b", 5.0, 4.0],
            ["notebooks/01-quickstart.ipynb::Cell 0", 2.0, 1.5],
            ["tests/test_compiled_scan.py::test_x[1]", 3.0, 3.0], ["tests/test_robust.py::test_y", 4.0, 2.5],
            ["tests/test_report.py::test_z", 1.0, 1.0]]
    files = sc.per_file(rows)
    assert files["tests/test_browser.py"] == [15.0, 12.0, 2]
    text = sc.report(files, 30.0)
    assert "6 tests: 25 s in tests, 20 CPU s" in text
    groups = text.split("by group:")[1]
    # each group's CPU seconds and share of 20, the rest being test_report only
    for cpu, share, name in ((12.0, 60.0, "browser"), (1.5, 7.5, "notebooks"), (3.0, 15.0, "compiled"),
                             (2.5, 12.5, "subprocess-heavy"), (1.0, 5.0, "the rest (1 files)")):
        assert f"{cpu:7.1f} {share:5.1f}%  {name}" in groups, (name, groups)
    # files sorted by CPU seconds, most first
    listed = [line.split()[-1] for line in text.split("by group:")[0].splitlines()
              if line.endswith((".py", ".ipynb"))]
    assert listed[0] == "tests/test_browser.py" and listed[-1] == "tests/test_report.py"

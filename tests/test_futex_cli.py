"""``numalab futex numa|hash|sweep``: the programs' output lines, the figure, bad input."""

import re

import numpy as np
import pytest

import numalab as nl
from numalab.cli import main

from _benchmark_scripts import load_script


def run(capsys, *argv):
    rc = main(["futex", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_futex_numa_prints_the_selftest_lines(capsys):
    rc, out, _ = run(capsys, "numa", "-c10", "-t2", "-n0", "-N1", "--topology", "2s-ivb-40", "--squash",
                     "--cpu-node", "1")
    assert rc == 0
    lines = out.strip().splitlines()
    assert lines[:2] == ["node: 1", "node: 1"]
    assert re.fullmatch(r"total: \d+", lines[2]) and re.fullmatch(r"contenders: \d+", lines[3])
    # the line is the model's 'contenders' count for this run (seed 0)
    wl = nl.futex.futex_numa("2s-ivb-40", contenders=10, threads=2, nanos=0, numa=True, node=1, cpu_node=1,
                             squash=True)
    ds = nl.futex.simulate(wl, seeds=[0])
    assert int(lines[3].split()[1]) == int(ds.contenders.values[0, 0])


def test_futex_numa_seed_pair_shared_vs_separated(capsys):
    def contenders(peer):
        rc, out, _ = run(capsys, "numa", "-c10", "-t2", "-n0", "-N0", "--topology", "2s-ivb-40", "--squash",
                         "--peer", peer)
        assert rc == 0
        assert out.count("# process") == 2
        return [int(x) for x in re.findall(r"^contenders: (\d+)$", out, re.M)]

    shared, separated = contenders("1:0"), contenders("1:1")
    assert len(shared) == len(separated) == 2
    assert min(separated) > 2 * max(shared)


def test_futex_hash_prints_perf_bench_lines(capsys):
    rc, out, _ = run(capsys, "hash", "-t", "4", "-f", "16", "-b", "32", "--topology", "2s-ivb-40")
    assert rc == 0
    assert "Run summary [PID " in out and "4 threads, each operating on 16 [private] futexes for 10 secs." in out
    assert len(re.findall(r"^\[thread  \d\] futexes: 0x[0-9a-f]+ \.\.\. 0x[0-9a-f]+ \[ \d+ ops/sec \]$", out, re.M)) == 4
    m = re.search(r"^Averaged (\d+) operations/sec \(\+- (\d+\.\d\d)%\), total secs = 10$", out, re.M)
    assert m
    assert out.strip().splitlines()[-1] == "Futex hashing: 32 hash buckets"
    rc, out, _ = run(capsys, "hash", "-t", "4", "-f", "16", "-s", "-S", "-b", "0", "--topology", "2s-ivb-40")
    assert "[thread" not in out and "[shared]" in out and out.strip().endswith("Futex hashing: global hash")
    rc, out, _ = run(capsys, "hash", "-t", "4", "-f", "16", "-s", "--mode", "numa", "--topology", "2s-ivb-40")
    assert out.strip().endswith("Futex hashing: global hash")  # 6.16 as shipped: no private hash
    rc, out, _ = run(capsys, "hash", "-t", "4", "-f", "16", "-s", "--topology", "2s-ivb-40")
    assert out.strip().endswith("Futex hashing: auto resized to 16 buckets")


@pytest.mark.parametrize("argv,match", [
    (["hash", "-t", "400"], "threads=400 exceeds"),
    (["hash", "-t", "4", "-b", "12"], "buckets=12 is not a power of two"),
    (["numa", "-c4", "-N3", "--topology", "2s-ivb-40"], "node=3"),
    (["numa", "-c4", "-n", "-5"], "nanos=-5"),
    (["numa", "-c40", "--topology", "2s-ivb-40"], "oversubscribe"),
    (["hash", "-t", "4", "--cost", "bogus=1"], "costs key 'bogus' is not known; allowed: atomic_forward"),
    (["hash", "-t", "4", "--cost", "smt_shared_l1"], "--cost 'smt_shared_l1'; allowed: NAME=VALUE"),
    (["hash", "-t", "4", "--cost", "smt_shared_l1=0.5"], "smt_shared_l1=0.5; allowed: 0 (off) or 1 (on)"),
    (["sweep", "--buckets", "2", "--cost", "syscall_ns=-3"], "syscall_ns=-3.0 is out of range"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, match):
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and err.startswith("numalab futex: error: ") and match in err and "Traceback" not in err


def test_oversubscribe_flag(capsys):
    rc, out, _ = run(capsys, "hash", "-t", "48", "-f", "4", "-s", "--topology", "2s-ivb-40", "--oversubscribe")
    assert rc == 0 and "48 threads" in out


def test_futex_sweep_writes_the_figure(capsys, tmp_path):
    png = tmp_path / "sweep.png"
    rc, out, _ = run(capsys, "sweep", "--buckets", "2,16,256,4096", "--mode", "classic,numa,private",
                     "--threads", "8", "--futexes", "64", "--seeds", "2", "--topology", "2s-ivb-40",
                     "--plot", str(png))
    assert rc == 0 and png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {png}" in out
    assert "2s-ivb-40, 8 threads" in out  # the table says how many threads it is for
    rows = [l.split() for l in out.splitlines() if re.match(r"^\s*\d+\s", l)]
    assert [r[0] for r in rows] == ["2", "16", "256", "4096"]
    ys = np.array([[float(v) for v in r[1:]] for r in rows])
    assert np.all(ys[-1] > ys[0])  # more buckets, more throughput, in every mode
    assert not list(tmp_path.glob(".*.tmp"))


def test_plot_function_is_pure_and_labels_modes():
    ds = nl.futex.sweep(buckets=[2, 64], mode=["numa", "private"], threads=[4, 8], seeds=2, topology="2s-ivb-40",
                        futexes=16)
    from numalab.plots import futex_buckets

    fig = futex_buckets(ds)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["numa, 4 threads", "numa, 8 threads", "private, 4 threads", "private, 8 threads"]
    assert ax.get_xscale() == "log"
    np.testing.assert_allclose(ax.containers[0].lines[0].get_ydata(),
                               ds.ops_per_s_per_thread.sel(mode="numa", threads=4).mean("seed").values)


def test_cost_sets_a_constant_for_every_program(capsys):
    """--cost NAME=VALUE reaches the model: the core's shared L1 switched off halves rcuref's
    rate with every CPU of 2s-ivb-40 busy (each line visit to a core serves one RMW, not two)."""
    def averaged(*extra):
        rc, out, _ = run(capsys, "hash", "-t", "40", "-f", "64", "-s", "--refcount", "rcuref", "--topology",
                         "2s-ivb-40", *extra)
        assert rc == 0
        return int(next(line for line in out.splitlines() if line.startswith("Averaged")).split()[1])

    on, off = averaged(), averaged("--cost", "smt_shared_l1=0")
    assert 1.5 < on / off <= 2.05
    assert averaged("--cost", "smt_shared_l1=1", "--cost", "syscall_ns=100") == on      # the defaults, spelled out
    rc, out, _ = run(capsys, "numa", "-c4", "--topology", "2s-ivb-40", "--cost", "timer_slack_ns=0")
    rc0, out0, _ = run(capsys, "numa", "-c4", "--topology", "2s-ivb-40")
    assert rc == rc0 == 0 and out != out0                  # no nanosleep slack: more lock cycles


def test_hash_notes_the_mvas_departure_on_stderr_only(capsys):
    rc, out, err = run(capsys, "hash", "-t", "16", "-f", "4", "-s", "--topology", "2s-ivb-40")
    assert rc == 0
    assert "note: 4 futexes a thread" in err and "--method simulation" in err
    assert out.startswith("# Running 'futex/hash' benchmark:") and "note" not in out
    rc, out, err = run(capsys, "hash", "-t", "16", "-f", "4", "-s", "--topology", "2s-ivb-40", "--method", "simulation")
    assert rc == 0 and "note" not in err
    rc, out, err = run(capsys, "hash", "-t", "16", "-s", "--topology", "2s-ivb-40")
    assert rc == 0 and "note" not in err


def test_futex_host_reads_perfs_average_and_refuses_without_perf(capsys):
    """benchmarks/futex_host.py: the per-thread average perf bench futex hash prints (the line our
    own `numalab futex hash` prints too), a clear error for output without it, and a usage error
    naming --perf when perf is not installed."""
    mod = load_script("futex_host")
    text = ("[thread  1] futexes: 0x5605 ... 0x5606 [ 2929664 ops/sec ]\n\n"
            "Averaged 2899865 operations/sec (+- 1.03%), total secs = 5\n")
    assert mod.parse_perf(text) == 2899865.0
    rc, out, _ = run(capsys, "hash", "-t", "2", "-f", "16", "--topology", "2s-ivb-40")
    assert rc == 0 and mod.parse_perf(out) > 0
    with pytest.raises(ValueError, match="no 'Averaged"):
        mod.parse_perf("perf: 'futex' is not a perf-command\n")
    with pytest.raises(SystemExit):
        mod.main(["--perf", "no-such-perf-binary"])
    assert "--perf='no-such-perf-binary' is not on PATH" in capsys.readouterr().err


def test_a_probed_topology_says_which_constants_it_sets_and_the_rates_follow(capsys, tmp_path):
    """A topology file with measured kernel costs (numalab probe) changes the futex model's
    constants; every numalab futex program says which on stderr (stdout keeps perf's format),
    and --cost takes one back."""
    path = nl.Topology(nodes=1, cpus_per_node=4, smt=1, syscall_ns=180.0, futex_private_ns=140.0,
                       futex_shared_ns=245.0, name="probed").save(tmp_path / "probed.json")
    rc, out, err = run(capsys, "hash", "-t", "2", "-f", "16", "--topology", str(path))
    assert rc == 0 and "Averaged" in out and "numalab futex: note" not in out
    assert ("from the kernel costs measured on topology 'probed': syscall_ns 180 ns (stated 100), futex_path_ns "
            "82 ns (stated 15), gup_ns 105 ns (stated 60)") in err
    measured = float(re.search(r"Averaged (\d+)", out).group(1))
    rc, out, err = run(capsys, "hash", "-t", "2", "-f", "16", "--topology", str(path), "--cost", "syscall_ns=100")
    assert "syscall_ns" not in err.split("measured on topology")[1].split(";")[0] and "futex_path_ns 82" in err
    assert float(re.search(r"Averaged (\d+)", out).group(1)) > measured        # a cheaper syscall, a faster loop
    for argv in (("sweep", "--buckets", "16", "--threads", "2"), ("numa", "-t", "2")):
        rc, _, err = run(capsys, *argv, "--topology", str(path))
        assert rc == 0 and "measured on topology 'probed'" in err, argv
    rc, _, err = run(capsys, "hash", "-t", "2", "-f", "16", "--topology", "2s-ivb-40")
    assert "measured on topology" not in err                                   # a preset measures nothing

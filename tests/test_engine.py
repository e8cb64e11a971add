"""The vectorised engine: Dataset contract, invariants, batch independence, bad input."""

import json

import numpy as np
import pytest

import numalab as nl
from numalab.engine import DEFAULTS, make_batch, run_batch, simulate
from numalab.engine import observe
from numalab.errors import EngineInvariantError, NumalabValueError
from numalab.policy import SKIP_REASONS, Policy
from numalab.topology import Topology

TOPO = Topology.preset("2s-ivb-40")
MiB = 1 << 20


@pytest.fixture(scope="module")
def small02():
    return nl.workload("numa02", TOPO, size_bytes=256 * MiB, loops=300)


@pytest.fixture(scope="module")
def small01():
    return nl.workload("numa01", TOPO, size_bytes=256 * MiB, loops=4)


@pytest.fixture(scope="module")
def ds01(small01):
    return simulate(small01, ["6.12", "rfc2023-p4", "pre-6.4"], seeds=3)


def test_dataset_contract(ds01):
    ds = ds01
    assert ds.elsp.dims == ("policy", "seed")
    assert ds.policy.values.tolist() == ["6.12", "rfc2023-p4", "pre-6.4"]
    assert ds.seed.values.tolist() == [0, 1, 2]
    for v in ("elsp", "syst", "numa_pte_updates", "numa_huge_pte_updates", "numa_hint_faults",
              "numa_hint_faults_local", "numa_pages_migrated", "false_skips", "idle_scans"):
        assert v in ds
    for r in SKIP_REASONS:
        assert f"skip_{r}" in ds
    for name, var in ds.data_vars.items():
        assert "units" in var.attrs and "long_name" in var.attrs, name
    for v in ("numa_pte_updates", "numa_hint_faults", "numa_pages_migrated"):
        assert ds[v].attrs["kernel_name"] == v
    assert {"pages_node", "local_fraction", "scan_period", "faults_per_s"} <= set(ds.data_vars)
    assert "time" in ds.pages_node.dims
    params = json.loads(ds.attrs["parameters"])
    assert params["dt"] == DEFAULTS["dt"] and "costs" in params and len(params["policies"]) == 3
    assert ds.attrs["workload"] == "numa01" and ds.attrs["numalab_version"] == nl.__version__


def test_counters_consistent(ds01):
    ds = ds01
    assert (ds.numa_hint_faults_local <= ds.numa_hint_faults).all()
    assert (ds.numa_huge_pte_updates * 512 <= ds.numa_pte_updates).all()
    assert (ds.elsp > 0).all() and (ds.syst > 0).all() and (ds.finished == 1).all()
    assert (ds.numa_hint_faults > 0).all() and (ds.numa_pages_migrated > 0).all()
    # pages are conserved in every sample of every run
    per_sample = ds.pages_node.sum(("process", "node"), min_count=1).values      # (P, S, time)
    first = per_sample[:, :, :1]
    ok = np.isnan(per_sample) | (per_sample == first)
    assert ok.all() and np.isfinite(first).all()
    # pre-6.4 has no per-VMA filter: nothing is skipped for PID reasons
    pre = ds.sel(policy="pre-6.4")
    assert int(pre.skip_pid_inactive.sum()) == 0 and int(pre.false_skips.sum()) == 0
    assert int(pre.allow_unfiltered.sum()) > 0
    # false skips are a subset of PID-filter skips
    assert (ds.false_skips <= ds.skip_pid_inactive + ds.skip_disjoint_wait).all()


def test_batch_independence(small02):
    pol = Policy.profile("6.12")
    alone = run_batch(small02, pol, [5])
    batch = run_batch(small02, pol, list(range(16)))
    assert alone.elsp[0] == batch.elsp[5]
    assert alone.syst[0] == batch.syst[5]
    for k, v in alone.cnt.items():
        assert v[0] == batch.cnt[k][5], k
    np.testing.assert_array_equal(alone.counters.reasons[0], batch.counters.reasons[5])
    np.testing.assert_array_equal(alone.regions.node[0], batch.regions.node[5])


def test_same_seed_same_result_and_seeds_differ(small02):
    a = simulate(small02, "6.12", seeds=[3, 4])
    b = simulate(small02, "6.12", seeds=[3])
    assert a.elsp.sel(seed=3).item() == b.elsp.sel(seed=3).item()
    assert a.elsp.sel(seed=3).item() != a.elsp.sel(seed=4).item()


def test_hard_bind_does_not_balance():
    wl = nl.workload("numa02_HARD_BIND", TOPO, size_bytes=128 * MiB, loops=800)
    ds = simulate(wl, "6.12", seeds=1)
    assert ds.numa_hint_faults.item() == 0 and ds.numa_pages_migrated.item() == 0
    assert ds.skip_unsuitable.item() > 0


def test_balancing_moves_memory_off_the_first_touch_node(small02):
    ds = simulate(small02, "6.12", seeds=1, init_node=0)
    pn = ds.pages_node.isel(policy=0, seed=0, process=0).dropna("time")
    assert pn.isel(time=0, node=1).item() < 0.01 * pn.isel(time=0).sum().item()
    assert pn.isel(time=-1, node=1).item() > 0.3 * pn.isel(time=-1).sum().item()


def test_class_sums_match_region_recount(small02):
    """The time series summed per access class equal the recount over regions (the path a
    workload with non-uniform classes takes), value for value."""
    import copy

    by_class = run_batch(small02, Policy.profile("6.12"), [0, 1])
    assert by_class.lay.cls_pages is not None
    by_region = make_batch(small02, Policy.profile("6.12"), [0, 1])
    by_region.lay = copy.copy(by_region.lay)
    by_region.lay.cls_pages = None
    by_region.run()
    for key in ("pages_node", "converged_fraction"):
        a, b = np.asarray(by_class.obs.series[key]), np.asarray(by_region.obs.series[key])
        assert np.isfinite(a).any()
        np.testing.assert_array_equal(a, b)


def test_invariant_violation_raises(small02):
    b = make_batch(small02, Policy.profile("6.12"), [0])
    for _ in range(3):
        b.step()
    b.regions.total_pages = b.regions.total_pages + 1          # a page went missing
    with pytest.raises(EngineInvariantError, match="pages not conserved"):
        observe.check_invariants(b)
    b2 = make_batch(small02, Policy.profile("6.12"), [0])
    b2.cnt["numa_hint_faults_local"][0] = 5
    with pytest.raises(EngineInvariantError, match="numa_hint_faults_local"):
        observe.check_invariants(b2)


@pytest.mark.parametrize("kwargs, needle", [
    (dict(workload="numa09"), "numa01"),
    (dict(policies=["6.99"]), "6.12"),
    (dict(policies=[]), "policies"),
    (dict(seeds=0), "seeds"),
    (dict(seeds=-3), "seeds"),
    (dict(seeds=[1, 1]), "seeds"),
    (dict(dt=0.0), "dt"),
    (dict(dt=-1.0), "dt"),
    (dict(dt=0.5), "dt"),
    (dict(time_resolution=0), "time_resolution"),
    (dict(max_time=-1), "max_time"),
    (dict(frobnicate=1), "frobnicate"),
    (dict(costs={"nope": 1}), "nope"),
    (dict(costs={"hint_fault_us": -1.0}), "hint_fault_us"),
    (dict(scan_size_mb=0), "scan_size_mb"),
    (dict(topology="3s-7"), "2s-128"),
])
def test_bad_input(kwargs, needle):
    args = dict(workload="numa02", policies=["6.12"], seeds=1, topology="2s-ivb-40")
    args.update(kwargs)
    wl = args.pop("workload")
    pols = args.pop("policies")
    seeds = args.pop("seeds")
    with pytest.raises(NumalabValueError, match=needle):
        simulate(wl, pols, seeds=seeds, max_time=0.2, **args) if "max_time" not in kwargs else \
            simulate(wl, pols, seeds=seeds, **args)


def test_workload_too_big_for_topology():
    with pytest.raises(NumalabValueError, match="CPUs"):
        nl.workload("numa02", TOPO, threads=64)


def test_cli_simulate(tmp_path, capsys):
    from numalab.cli import main

    out = tmp_path / "run.nc"
    rc = main(["simulate", "--workload", "numa02", "--topology", "2s-ivb-40", "--profile", "6.12",
               "--profile", "rfc2023-p4", "--history", "2", "--seeds", "2", "--max-time", "3", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "6.12+N=2" in text or "6.12" in text
    assert "elsp" in text and "numa_hint_faults" in text
    import xarray as xr

    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert ds.sizes["policy"] == 2 and ds.sizes["seed"] == 2
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    rc = main(["simulate", "--workload", "nosuch"])
    assert rc == 2
    assert "numa01" in capsys.readouterr().err


def test_adaptive_history_runs_in_the_engine_and_reduces_to_fixed_n_when_off():
    """Every adaptive rule is usable wherever a fixed N is; with adaptation pinned
    (n_min == n_max == N) the engine's results equal the fixed-N policy's, variable for variable."""
    import numalab as nl

    wl = nl.workload("numa01_THREAD_ALLOC", nl.Topology.preset("2s-ivb-40"), loops=40)
    fixed = nl.Policy.profile("rfc2024-hot-shared", history=4)
    rules = nl.Policy.adaptive_rules()
    assert len(rules) >= 3
    pinned = [nl.Policy.profile("rfc2024-hot-shared", history="adaptive", adapt=r, n_min=4, n_max=4, n_init=4)
              for r in rules]
    free = [nl.Policy.profile("rfc2024-hot-shared", history="adaptive", adapt=r) for r in rules]
    ds = nl.simulate(wl, [fixed, *pinned, *free], seeds=2)
    ref = ds.sel(policy=fixed.name)
    for p in pinned:
        got = ds.sel(policy=p.name)
        for var in ("elsp", "syst", "numa_hint_faults", "numa_pages_migrated", "false_skips", "idle_scans"):
            np.testing.assert_array_equal(got[var].values, ref[var].values, err_msg=f"{p.name} {var}")
    assert bool(ds.finished.all())


# ---- the scheduler's load balancer (engine option lb_migrate_hz, docs/engine.md step 5b)
def test_load_balancer_pulls_at_the_option_rate():
    """Every running, unbound task is pulled across nodes with probability lb_migrate_hz*dt per
    step, so the number of pulls is Poisson with mean lb_migrate_hz * (summed running time).
    Three threads on 8-CPU nodes: a free CPU always waits on the other node, so a pull is one move."""
    from numalab.workloads import from_access_matrix

    topo = Topology(nodes=2, cpus_per_node=8, smt=2, name="tiny")
    wl = from_access_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), topology=topo,
                            chunk_bytes=4 * MiB, loops=20000)
    hz = 1.0
    b = run_batch(wl, Policy.profile("6.12"), [0, 1, 2, 3], lb_migrate_hz=hz, max_time=40.0)
    pulls = int(b.cnt["lb_migrations"].sum())
    mu = hz * float(b.tasks.runtime.sum())
    assert mu > 100
    assert abs(pulls - mu) < 5 * np.sqrt(mu), (pulls, mu)
    off = run_batch(wl, Policy.profile("6.12"), [0, 1, 2, 3], lb_migrate_hz=0.0, max_time=40.0)
    assert int(off.cnt["lb_migrations"].sum()) == 0


def test_load_balancer_keeps_cpu_counts_and_is_recorded(small01):
    # high rate: many pulls and swaps; the invariant check (no node over its CPUs) runs every 20 steps
    ds = simulate(small01, "6.12", seeds=2, lb_migrate_hz=2.0)
    assert int(ds.lb_migrations.sum()) > 0
    assert json.loads(ds.attrs["parameters"])["lb_migrate_hz"] == 2.0
    with pytest.raises(NumalabValueError, match="lb_migrate_hz"):
        simulate(small01, "6.12", seeds=1, lb_migrate_hz=-1.0)


def test_refill_pull_takes_back_the_resident_unless_locality_vetoes_it():
    """Option lb_refill_locality: of the pulled task t and the resident j on node dst, the
    resident goes back (it waits: the arrival preempts it) unless it prefers dst while t does
    not (migrate_degrades_locality's veto), and then t goes back."""
    from numalab.engine.balance import refill_task
    from numalab.engine.state import NO_NODE

    dst, t, j = 1, 0, 1
    for pt, pj, want in ((0, 1, t), (NO_NODE, 1, t), (1, 1, j), (0, 0, j), (1, 0, j), (NO_NODE, NO_NODE, j),
                         (0, NO_NODE, j)):
        assert refill_task(np.array([pt, pj]), t, j, dst) == want, (pt, pj)


def test_refill_by_locality_sends_a_settled_pulled_task_home_instead_of_displacing_another():
    """Four tasks on a full 2 x 2 machine, each writing its own chunk: once placement has settled
    them, a pull displaces a task that prefers its node. The 0.10.0 refill sends the resident
    back in exchange, so both are off their preferred node and placement swaps them back (NUMA
    task moves); the locality-aware refill sends the pulled task home, so the balancer's moves
    stay (the same draws) and placement has about half the moves to make."""
    from numalab.workloads import from_access_matrix

    topo = Topology(nodes=2, cpus_per_node=2, smt=1, name="tiny")
    wl = from_access_matrix(np.eye(4), topology=topo, chunk_bytes=64 * MiB, loops=20000)
    kw = dict(lb_migrate_hz=0.5, max_time=40.0)
    off = run_batch(wl, Policy.profile("6.12"), [0, 1, 2, 3], lb_refill_locality=False, **kw)
    on = run_batch(wl, Policy.profile("6.12"), [0, 1, 2, 3], lb_refill_locality=True, **kw)
    assert int(on.cnt["lb_migrations"].sum()) == int(off.cnt["lb_migrations"].sum()) > 200
    assert int(on.cnt["task_migrations"].sum()) < 0.75 * int(off.cnt["task_migrations"].sum())
    assert int(on.cnt["numa_pages_migrated"].sum()) < int(off.cnt["numa_pages_migrated"].sum())


def test_convergence_time_picks_the_first_sample_after_the_last_miss():
    from numalab.engine.results import convergence_time

    nan = np.nan
    cf = np.array([
        [[1.0], [0.5], [0.95], [0.6], [0.92], [0.99], [nan]],   # converges at sample 4 for good
        [[1.0], [0.5], [0.95], [0.96], [0.5], [nan], [nan]],    # last running sample missed
        [[0.95], [0.91], [0.93], [nan], [nan], [nan], [nan]],   # converged from the start
    ])
    np.testing.assert_array_equal(convergence_time(cf, 2.0), [8.0, nan, 0.0])
    two = np.stack([cf[0], cf[2]], axis=-1)[..., 0, :]          # (time, process): both must hold
    assert convergence_time(two[None], 1.0)[0] == 4.0


def test_bound_memory_converges_at_once_and_inverse_bound_never():
    import numalab as nl

    topo = nl.Topology.preset("2s-ivb-40")
    good = nl.simulate(nl.workload("numa02_HARD_BIND", topo, loops=100), "6.12", seeds=2)
    bad = nl.simulate(nl.workload("numa02_INVERSE_BIND", topo, loops=100), "6.12", seeds=2)
    cf = good.converged_fraction.where(np.isfinite(good.converged_fraction))
    assert float(cf.min()) >= 0.9 and bool((good.convergence_time <= 2.0).all())
    assert bool(np.isnan(bad.convergence_time).all())
    # after the main thread's first touch (sample 0) every worker writes remote memory it may not move
    assert float(bad.converged_fraction.isel(time=slice(1, None)).max()) <= 0.5

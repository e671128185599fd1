import numpy as np
import pytest

from workloads.arrivals import build_schedule, schedule_of
from workloads.loader import ConfigError, load_suite, load_workload, scenario_names
from workloads.model import WorkloadConfig


def make(**kw) -> WorkloadConfig:
    base = {"name": "t", "phases": [{"kind": "constant", "duration_s": 100, "rate_rps": 200}]}
    base.update(kw)
    return WorkloadConfig.model_validate(base)


def test_poisson_count_and_gaps():
    s = build_schedule(make(), seed=3)
    n = len(s)
    assert abs(n - 20_000) < 4 * np.sqrt(20_000)
    gaps = np.diff(s.sched_s)
    assert abs(gaps.mean() - 1 / 200) < 0.03 / 200
    # exponential gaps: coefficient of variation 1
    assert abs(gaps.std() / gaps.mean() - 1.0) < 0.05
    assert np.all(gaps >= 0)


def test_uniform_and_gamma_burstiness():
    uni = np.diff(build_schedule(make(process="uniform"), 1).sched_s)
    assert uni.std() / uni.mean() < 0.01
    gam = np.diff(build_schedule(make(process="gamma", burstiness=4.0), 1).sched_s)
    assert abs((gam.std() / gam.mean()) ** 2 - 4.0) < 0.6


def test_phases_shape_the_rate():
    wl = make(phases=[
        {"kind": "constant", "duration_s": 10, "rate_rps": 100},
        {"kind": "spike", "duration_s": 10, "base_rps": 100, "spike_rps": 1000, "at_s": 5, "spike_s": 2},
        {"kind": "ramp", "duration_s": 10, "from_rps": 0, "to_rps": 200},
        {"kind": "sinusoid", "duration_s": 10, "mean_rps": 100, "amplitude_rps": 50, "period_s": 10},
    ])
    s = build_schedule(wl, 7).sched_s
    count = lambda a, b: int(((s >= a) & (s < b)).sum())
    assert abs(count(0, 10) - 1000) < 130
    assert abs(count(15, 17) - 2000) < 200   # the spike
    assert abs(count(20, 30) - 1000) < 130   # ramp 0 -> 200 averages 100
    assert count(20, 25) < count(25, 30)
    assert wl.duration_s == 40
    assert wl.peak_rps == 1000
    assert [k for k, _, _ in wl.phase_bounds()] == ["constant", "spike", "ramp", "sinusoid"]


def test_tenant_shares_and_bursts():
    wl = make(tenants=[
        {"name": "big", "share": 0.6, "connections": 2, "bursts": [{"start_s": 50, "end_s": 60, "factor": 3}]},
        {"name": "small", "share": 0.4},
    ])
    s = build_schedule(wl, 1)
    big = s.sched_s[s.tenant == 0]
    calm = ((big < 50) | (big >= 60)).sum() / 90
    burst = ((big >= 50) & (big < 60)).sum() / 10
    assert abs(calm - 120) < 10
    assert abs(burst / calm - 3.0) < 0.3
    assert s.connections == (2, 8)


def test_zipf_payloads_repeat_and_unique_do_not():
    uniq = build_schedule(make(), 1)
    assert len(np.unique(uniq.content)) == len(uniq)
    z = build_schedule(make(payloads={"kind": "zipf", "zipf_s": 1.1, "catalog_size": 1000, "variants": 4}), 1)
    counts = np.bincount(z.content)
    assert counts[0] > counts[10] > counts[500]
    assert set(np.unique(z.variant)) == {0, 1, 2, 3}


def test_sizes_are_clipped_and_heavy_tailed():
    s = build_schedule(make(sizes={"kind": "lognormal", "length": 64, "sigma": 1.0, "max_length": 500}), 1)
    assert s.size.min() >= 1 and s.size.max() <= 500
    assert abs(np.median(s.size) - 64) < 4
    assert (s.size > 256).mean() > 0.05


def test_same_seed_same_schedule_different_seed_different():
    a, b, c = (build_schedule(make(), seed) for seed in (5, 5, 6))
    assert np.array_equal(a.sched_s, b.sched_s)
    assert not np.array_equal(a.sched_s[:100], c.sched_s[:100])


def test_scaled_changes_rates_and_duration():
    wl = load_workload("spike")
    half = wl.scaled(0.5, 20)
    assert half.peak_rps == wl.peak_rps / 2
    assert half.duration_s == 20
    assert half.disturbance_end_s() == pytest.approx(wl.disturbance_end_s() * 20 / wl.duration_s)


@pytest.mark.parametrize("name", ["steady", "low-traffic"])
def test_required_scenarios(name):
    wl = load_workload(name)
    assert wl.process.value == "poisson"
    if name == "steady":
        assert (wl.peak_rps, wl.duration_s) == (10_000, 60)
    else:
        assert (wl.peak_rps, wl.duration_s) == (20, 600)


def test_every_builtin_scenario_loads_and_says_what_it_exposes():
    from targets.flaws import FLAW_IDS

    for name in scenario_names():
        wl = load_workload(name)
        assert wl.description
        assert all(f in FLAW_IDS for f in wl.exposes), name
    suite = load_suite("bad-day")
    assert {"steady", "low-traffic", "night", "diurnal", "spike", "slowdown", "dominant-tenant",
            "gpu-outage", "variable-sizes", "cacheable", "unique"} <= set(suite)


@pytest.mark.parametrize(
    "body, key, problem",
    [
        ('phases = [{kind = "constant", duration_s = 10, rate_rps = -5}]', "phases[0].rate_rps", "greater than or equal"),
        ('phases = [{kind = "burst", duration_s = 10}]', "phases[0]", "kind"),
        ('phases = []', "phases", "at least 1"),
        ('phases = [{kind = "constant", duration_s = 10, rate_rps = 5}]\nprocess = "weibull"', "process", "poisson"),
        ('phases = [{kind = "constant", duration_s = 10, rate_rps = 5}]\n[[tenants]]\nname = "a"\nshare = 0.5', "(top level)", "add up to 1"),
        ('phases = [{kind = "constant", duration_s = 10, rate_rps = 5}]\ncolour = "red"', "colour", "Extra inputs"),
    ],
)
def test_bad_file_names_file_key_and_problem(tmp_path, body, key, problem):
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(ConfigError) as exc:
        load_workload(str(path))
    msg = str(exc.value)
    assert str(path) in msg and f"key '{key}'" in msg and problem in msg, msg


def test_not_toml_and_missing_file(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("phases = [")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_workload(str(path))
    with pytest.raises(ConfigError, match="file not found"):
        load_workload(str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match="valid names are"):
        load_workload("no-such-workload")


def test_a_kept_schedule_is_the_built_one_and_cannot_be_changed():
    """`schedule_of` keeps a process's last schedules: the same (workload, seed) gets the one built
    before, anything else a schedule of its own, equal to `build_schedule`'s; no run can write it."""
    steady = load_workload("steady").scaled(1.0, 2.0)
    first = schedule_of(steady, 1)
    assert schedule_of(steady, 1) is first
    for other, seed in ((steady, 2), (steady.scaled(0.5, 2.0), 1), (load_workload("spike").scaled(1.0, 2.0), 1)):
        kept, built = schedule_of(other, seed), build_schedule(other, seed)
        assert kept is not first
        for name in ("sched_s", "tenant", "content", "variant", "size"):
            assert np.array_equal(getattr(kept, name), getattr(built, name))
    with pytest.raises(ValueError):
        first.sched_s[0] = 1.0  # read-only


def test_kept_schedules_are_bounded_in_requests_and_dropped_least_recently_used(monkeypatch):
    """A process keeps every schedule it used while they hold at most _KEPT_REQUESTS requests in
    all (a worker's runs of many scenarios, interleaved, each built once), then drops the least
    recently used first; the one just built is kept whatever its size."""
    import workloads.arrivals as arrivals
    monkeypatch.setattr(arrivals, "_kept", type(arrivals._kept)())
    steady = load_workload("steady").scaled(0.1, 1.0)  # ~1,000 requests a seed
    sizes = {seed: len(build_schedule(steady, seed)) for seed in range(1, 6)}
    monkeypatch.setattr(arrivals, "_KEPT_REQUESTS", sizes[1] + sizes[2] + sizes[3])
    first = {seed: schedule_of(steady, seed) for seed in (1, 2, 3)}
    for seed in (3, 1, 2, 3, 1):  # interleaved, as a worker's runs come: nothing built again
        assert schedule_of(steady, seed) is first[seed]
    schedule_of(steady, 4)  # over the bound: 2, the least recently used, goes (if 3 fits beside)
    held = [seed for (_, seed) in arrivals._kept]
    assert 4 in held and 2 not in held and held[-1] == 4
    assert sum(len(s) for s in arrivals._kept.values()) <= arrivals._KEPT_REQUESTS or len(held) == 1
    assert schedule_of(steady, 2) is not first[2]  # built again, equal
    assert np.array_equal(schedule_of(steady, 2).sched_s, first[2].sched_s)
    monkeypatch.setattr(arrivals, "_KEPT_REQUESTS", 1)
    alone = schedule_of(steady, 5)
    assert list(arrivals._kept.values()) == [alone] and schedule_of(steady, 5) is alone


def test_a_loaded_workload_is_kept_until_its_file_changes(tmp_path):
    """load_workload keeps a config by its file's path and bytes: the same file gives the same
    (immutable) config, an edit (even one of the same size, at once) a fresh one."""
    path = tmp_path / "w.toml"
    path.write_text('[[phases]]\nkind = "constant"\nduration_s = 10\nrate_rps = 200\n')
    first = load_workload(str(path))
    assert load_workload(str(path)) is first and first.peak_rps == 200
    path.write_text('[[phases]]\nkind = "constant"\nduration_s = 10\nrate_rps = 300\n')
    assert load_workload(str(path)).peak_rps == 300
    path.write_text("[[phases]\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_workload(str(path))

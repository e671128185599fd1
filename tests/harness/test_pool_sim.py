"""Tests of the pool simulation (gang-pool step machines on the virtual-time loop): exact
logs, capacity arithmetic, invariants, and the Part 3 verdicts (proportional starves the
large model; reservation does not)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.analysis.pool.experiment import run_pool_experiment
from harness.analysis.pool.gang import (
    BatchRecord, ModelSpec, PoolConfig, PoolScheduleError, capacity_check, generate_arrivals, run_pool,
)
from harness.results.io import dumps
from harness.results.pool import PolicyRun, PoolResult
from targets.gang_schedulers import Decision, ModelKind, PoolState, Start, policy_names

L, S = ModelKind.LARGE, ModelKind.SMALL
OVERLOAD = dict(large=ModelSpec(20.0, 8, 0.2), small=ModelSpec(4000.0, 32, 0.05))


def arrivals(large: list[float], small: list[float]) -> dict[ModelKind, np.ndarray]:
    return {L: np.array(large, dtype=float), S: np.array(small, dtype=float)}


# --- capacity condition, hand-computed ------------------------------------------------

def test_capacity_at_defaults() -> None:
    cap = capacity_check(PoolConfig())
    # 10 rps x 8 x 0.2 / 8 = 2.0; 2000 x 0.05 / 32 = 3.125; sum 5.125 <= 8 x 0.8 = 6.4
    assert cap.large_gpu_s_per_s == pytest.approx(2.0)
    assert cap.small_gpu_s_per_s == pytest.approx(3.125)
    assert cap.lhs_gpu_s_per_s == pytest.approx(5.125)
    assert cap.rhs_gpu_s_per_s == pytest.approx(6.4)
    assert cap.utilization_needed == pytest.approx(0.640625)
    assert cap.ok and cap.reason is None


def test_capacity_beyond_the_pool() -> None:
    cap = capacity_check(PoolConfig(**OVERLOAD))
    # 20 x 0.2 = 4.0; 4000 x 0.05 / 32 = 6.25; 10.25 > 8 GPUs: impossible
    assert cap.lhs_gpu_s_per_s == pytest.approx(10.25) and not cap.ok
    assert "exceeds the whole pool" in cap.reason and "every policy" in cap.reason


def test_capacity_beyond_the_target_only() -> None:
    cap = capacity_check(PoolConfig(large=ModelSpec(14.0, 8, 0.2), small=ModelSpec(2800.0, 32, 0.05)))
    # 14 x 0.2 = 2.8; 2800 x 0.05 / 32 = 4.375; 7.175 > 6.4 but <= 8: no headroom
    assert cap.lhs_gpu_s_per_s == pytest.approx(7.175) and not cap.ok
    assert "80% target" in cap.reason and "headroom" in cap.reason


@pytest.mark.parametrize("kwargs", [
    dict(duration_s=0.0), dict(target_utilization=1.5), dict(gpus=0), dict(slo_s=-1.0),
    dict(gantt_window_s=(3.0, 1.0)), dict(drain_s=-1.0),
])
def test_config_validates(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        PoolConfig(**kwargs)


# --- exact event logs on hand-made arrivals --------------------------------------------

def test_lone_large_request_waits_its_batching_timer() -> None:
    cfg = PoolConfig(duration_s=2.0)
    log: list[BatchRecord] = []
    r = run_pool(cfg, "gang-reserve", trace=log, arrivals=arrivals([0.0], []))
    # max_wait = 0.5 x (1.0 - 0.2) = 0.4 s, then 0.2 s on all 8 GPUs
    assert [(b.model, b.gpus, b.size, b.start_s, b.end_s) for b in log] == [
        (L, tuple(range(8)), 1, pytest.approx(0.4), pytest.approx(0.6))]
    # The recorder's histogram keeps 3 significant digits: 0.6 s within 1 ms.
    assert r.large.p50_s == pytest.approx(0.6, abs=1e-3) and r.large.p99_s == pytest.approx(0.6, abs=1e-3)
    assert r.large.gpu_s_per_request_measured == pytest.approx(1.6)  # 8 x 0.2 for 1 request
    assert r.utilization == pytest.approx(1.6 / (8 * 2.0))
    assert r.small.requests == 0 and r.meets_slo


def test_full_small_batch_starts_at_once_and_large_drains_behind_it() -> None:
    cfg = PoolConfig(duration_s=2.0)
    # 32 small at 0.1 (full, due); 8 large at 0.12 (full, due): the pool drains at 0.15.
    log: list[BatchRecord] = []
    r = run_pool(cfg, "gang-reserve", trace=log, arrivals=arrivals([0.12] * 8, [0.1] * 32))
    assert [(b.model, b.size, b.start_s, b.end_s) for b in log] == [
        (S, 32, 0.1, pytest.approx(0.15)), (L, 8, pytest.approx(0.15), pytest.approx(0.35))]
    # 7 GPUs idle for 0.03 s while the large batch waited for the eighth
    assert r.fragmentation_gpu_s == pytest.approx(7 * 0.03)


def test_unanswered_requests_make_p99_null() -> None:
    class Idle:
        name = "idle"

        def schedule(self, state: PoolState, now_s: float) -> Decision:
            return Decision()

    r = run_pool(PoolConfig(duration_s=1.0, drain_s=1.0), Idle(), arrivals=arrivals([0.5], [0.5]))
    assert r.large.p99_s is None and r.large.unanswered == 1 and r.large.served == 0
    assert r.large.longest_wait_s == pytest.approx(1.5)  # until the 2.0 s horizon
    assert not r.meets_slo
    json.loads(dumps(r.model_dump()))


class Rogue:
    """Breaks one invariant on purpose, to prove the driver enforces it."""

    def __init__(self, how: str) -> None:
        self.name, self.how = "rogue", how

    def schedule(self, state: PoolState, now_s: float) -> Decision:
        q = state.small if self.how != "gang" else state.large
        if q.length == 0:
            return Decision()
        if self.how == "gang":  # a large batch on the GPUs that happen to be free
            return Decision((Start(L, state.free_gpus(), 1, now_s, now_s + 0.2),))
        if self.how == "oversize":
            return Decision((Start(S, (0,), 33, now_s, now_s + 0.05),)) if q.length >= 33 else Decision()
        if self.how == "double":  # two batches on GPU 0
            return Decision((Start(S, (0,), 1, now_s, now_s + 0.05),) * 2)
        return Decision(wake_at_s=now_s + 1e-6)  # "livelock": wakes forever


@pytest.mark.parametrize("how", ["gang", "oversize", "double", "livelock"])
def test_driver_rejects_invariant_breaks(how: str) -> None:
    cfg = PoolConfig(duration_s=1.0, max_events=5_000)
    arr = arrivals([0.1, 0.2], [0.0] * 40)
    if how == "gang":  # GPU 0 busy with a small batch when the large one is forced in
        arr = arrivals([0.01], [0.0])

        class Mixed(Rogue):
            def schedule(self, state: PoolState, now_s: float) -> Decision:
                if state.small.length:
                    return Decision((Start(S, (0,), 1, now_s, now_s + 0.05),))
                return super().schedule(state, now_s)

        policy: Rogue = Mixed(how)
    else:
        policy = Rogue(how)
    with pytest.raises(PoolScheduleError):
        run_pool(cfg, policy, arrivals=arr)


# --- invariants over random configurations ----------------------------------------------

@st.composite
def configs(draw: st.DrawFn) -> PoolConfig:
    t_l = draw(st.floats(0.05, 0.3))
    t_s = draw(st.floats(0.005, 0.08))
    large = ModelSpec(draw(st.floats(0.0, 40.0)), draw(st.integers(1, 16)), t_l)
    small = ModelSpec(draw(st.floats(0.0, 600.0)), draw(st.integers(1, 64)), t_s)
    # time-slice needs (slo - t_L) / 2 >= t_L + t_S
    slo = 3 * t_l + 2 * t_s + draw(st.floats(0.0, 1.0))
    return PoolConfig(large=large, small=small, slo_s=slo, duration_s=draw(st.floats(0.5, 2.0)),
                      seed=draw(st.integers(0, 2**16)), drain_s=1.0,
                      gantt_window_s=(0.0, 10.0), max_gantt_bars=100_000)


def check_trace(cfg: PoolConfig, r: PolicyRun, trace: list[BatchRecord]) -> None:
    per_gpu: dict[int, list[tuple[float, float]]] = {g: [] for g in range(cfg.gpus)}
    served = {L: 0, S: 0}
    for b in trace:
        m = cfg.large if b.model is L else cfg.small
        assert 1 <= b.size <= m.batch_size, "batch larger than B"
        assert len(b.gpus) == (cfg.gpus if b.model is L else 1)
        for g in b.gpus:
            per_gpu[g].append((b.start_s, b.end_s))
        served[b.model] += b.size
    for spans in per_gpu.values():  # no GPU runs two batches at once
        spans.sort()
        assert all(a_end <= b_start + 1e-12 for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
    for kind, stats in ((L, r.large), (S, r.small)):  # nothing lost or duplicated
        assert served[kind] == stats.served
        assert stats.served + stats.unanswered == stats.requests
    # the Gantt record is the trace seen through the window
    assert len(r.gantt) == sum(len(b.gpus) for b in trace)


# derandomize: CI runs the same 20 examples every time; the random draw that found a
# reservation bug is kept below as its own test. A deep random search, e.g. before a change to
# the schedulers lands: POOL_EXAMPLES=2000 pytest tests/harness/test_pool_sim.py -k invariants
_DEEP = os.environ.get("POOL_EXAMPLES")


@settings(max_examples=int(_DEEP or 20), deadline=None, derandomize=_DEEP is None)
@given(configs())
def test_every_policy_keeps_the_pool_invariants(cfg: PoolConfig) -> None:
    arr = generate_arrivals(cfg)
    for name in policy_names():
        # run_pool also raises PoolScheduleError if a large batch started later than
        # the reservation announced for it (backfill delaying a reservation).
        log: list[BatchRecord] = []
        r = run_pool(cfg, name, trace=log, arrivals=arr)
        check_trace(cfg, r, log)
        assert r.small.requests == len(arr[S]) and r.large.requests == len(arr[L])
        json.loads(dumps(r.model_dump()))


def test_a_large_batch_starts_by_its_reservation_on_an_odd_slo() -> None:
    # Found by hypothesis: time-slice's cycle (0.3125000005 s) drifts 3e-9 s in six cycles, the
    # loop ran a small batch's end and the slot's wake-up together, 5e-10 s before the slot, and
    # a tolerance in cycles put that instant in the previous slot: the large batch waited a cycle.
    cfg = PoolConfig(large=ModelSpec(rate_rps=2.0, batch_size=1, batch_time_s=0.25),
                     small=ModelSpec(rate_rps=1.0, batch_size=1, batch_time_s=0.0625), slo_s=0.875000001, gpus=8,
                     duration_s=2.0, seed=3, target_utilization=0.8, wait_fraction=0.5, drain_s=1.0,
                     gantt_window_s=(0.0, 10.0), max_gantt_bars=100_000)
    test_every_policy_keeps_the_pool_invariants.hypothesis.inner_test(cfg)


# --- the Part 3 verdicts ------------------------------------------------------------------

@pytest.fixture(scope="module")
def at_defaults() -> PoolResult:
    return run_pool_experiment(PoolConfig(duration_s=10.0))


@pytest.mark.slow
def test_same_arrivals_and_deterministic(at_defaults: PoolResult) -> None:
    res = at_defaults.results
    assert len({(r.large.requests, r.small.requests) for r in res.values()}) == 1
    again = run_pool(PoolConfig(duration_s=10.0), "proportional")
    assert again == res["proportional"]


def test_arrivals_are_the_workload_schedules_poisson_draws() -> None:
    cfg = PoolConfig(duration_s=20.0)
    arr = generate_arrivals(cfg)
    # 10 and 2000 requests/s for 20 s: counts within 5 sigma of the Poisson means.
    assert abs(len(arr[L]) - 200) < 5 * 200 ** 0.5 and abs(len(arr[S]) - 40_000) < 5 * 40_000 ** 0.5
    assert all(np.all(np.diff(a) >= 0) and a.min() >= 0 and a.max() < 20.0 for a in arr.values())
    # each model has its own seed: changing the small model's rate leaves the large arrivals alone
    other = generate_arrivals(PoolConfig(duration_s=20.0, small=ModelSpec(100.0, 32, 0.05)))
    assert np.array_equal(other[L], arr[L]) and not np.array_equal(generate_arrivals(
        PoolConfig(duration_s=20.0, seed=1))[L], arr[L])


@pytest.mark.slow
def test_proportional_starves_the_large_model_that_reservation_serves(at_defaults: PoolResult) -> None:
    assert at_defaults.capacity.ok
    slo = at_defaults.config.slo_s
    prop = at_defaults.results["proportional"]
    assert prop.large.p99_s is None or prop.large.p99_s > 5 * slo
    assert prop.large.longest_wait_s > 5 * slo
    # ...though most of the pool sits idle while it waits: fragmentation, not capacity
    assert prop.fragmentation_frac > 0.3 and prop.utilization < 0.5
    for name in ("gang-reserve", "time-slice"):
        r = at_defaults.results[name]
        assert r.meets_slo, name
        assert r.large.p99_s <= slo and r.small.p99_s <= slo


@pytest.mark.slow
def test_gantt_is_bounded_and_inside_its_window(at_defaults: PoolResult) -> None:
    for r in at_defaults.results.values():
        lo, hi = r.gantt_window_s
        assert 0 < len(r.gantt) <= 4000
        assert all(b.end_s > lo and b.start_s < hi for b in r.gantt)
    small_cap = run_pool(PoolConfig(duration_s=4.0, max_gantt_bars=10), "gang-reserve")
    assert len(small_cap.gantt) <= 10 and small_cap.gantt_truncated


@pytest.mark.slow
def test_beyond_capacity_every_policy_fails() -> None:
    out = run_pool_experiment(PoolConfig(duration_s=10.0, **OVERLOAD))
    assert not out.capacity.ok
    assert out.meets_slo == [] and not any(r.meets_slo for r in out.results.values())
    json.loads(dumps(out.to_json()))

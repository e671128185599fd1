"""The sim evaluator of alert rules: Prometheus's `for:` and range semantics on
hand-made series, with closed forms for when each rule fires."""

from __future__ import annotations

import numpy as np
import pytest

from harness.analysis.alerts.days import onset_s
from harness.analysis.alerts.eval import Series, evaluate
from harness.ops.rules import AlertRule, Condition, FleetShape, Signal, build_rules, shape_of
from targets.spec import resolve_target
from workloads.loader import load_workload

SHAPE = FleetShape(slo_bucket_s=0.3, service_rps=320.0, gpus=10)


def _series(n: int = 40, answered: float = 100.0, good: list[float] | None = None, **gauges) -> Series:
    z = np.zeros(n)
    return Series(window_s=1.0, answered=np.full(n, answered), good=np.asarray(good if good is not None else
                                                                               np.full(n, answered), dtype=float),
                  shed=gauges.get("shed", z), retries=z, busy_gpu_s=z, queue_depth=gauges.get("queue", z),
                  gpus_alive=gauges.get("alive", np.full(n, 10.0)))


def _fired(rules, s):
    return {f.rule: f.first_s for f in evaluate(rules, s, SHAPE)}


def test_fast_burn_fires_when_both_windows_pass_14_4x() -> None:
    # 100 answers a second, half of them bad from t=10 s (window 10 on). At evaluation j (t = j + 1 s)
    # m = j - 9 bad windows: short (5 s) ratio 50 m / 500 > 0.144 from m = 2; long (60 s, young:
    # j + 1 windows) 50 m / (100 (j + 1)) > 0.144 from j = 14, so it fires at t = 15 s.
    good = [100.0] * 10 + [50.0] * 30
    rules = [r for r in build_rules(resolve_target("hardened")) if r.name == "GoodputBudgetFastBurn"]
    assert _fired(rules, _series(good=good)) == {"GoodputBudgetFastBurn": 15.0}
    assert _fired(rules, _series()) == {"GoodputBudgetFastBurn": None}


def test_for_holds_the_condition_that_long_and_a_gap_resets_it() -> None:
    rule = AlertRule("Q", "warning", "", (Condition(Signal.QUEUE_DELAY, 0.0, 0.15),), for_s=5.0)
    queue = np.zeros(40)
    queue[10:] = 1000.0  # 1000 / (10 GPUs x 320/s) = 0.31 s > 0.15: true from t = 11 s, fires at 16 s
    assert _fired([rule], _series(queue=queue)) == {"Q": 16.0}
    queue[13] = 0.0      # broken at t = 14 s: pending again from 15 s, fires at 20 s
    (f,) = evaluate([rule], _series(queue=queue), SHAPE)
    assert f.first_s == 20.0 and f.intervals == ((20.0, 40.0),)


def test_no_traffic_and_no_sample_hold_no_condition() -> None:
    rules = build_rules(resolve_target("hardened"))
    silent = _series(answered=0.0)
    assert all(f.first_s is None for f in evaluate(rules, silent, SHAPE))
    alive = np.full(40, 10.0)
    alive[-6:] = np.nan  # windows after the last sample
    lost = [r for r in rules if r.name == "GpuCapacityLost"]
    assert _fired(lost, _series(alive=alive)) == {"GpuCapacityLost": None}
    alive[20:30] = 7.0   # three of ten GPUs down from t = 21 s; for 5 s: fires at 26 s
    assert _fired(lost, _series(alive=alive)) == {"GpuCapacityLost": 26.0}


def test_a_window_without_a_gauge_sample_reads_the_last_one() -> None:
    # A live sampler lands two samples in one window now and then, none in the next: as
    # Prometheus reads a gauge's last scrape, the gap must not restart `for:`.
    n = 30
    alive: list[float | None] = [3.0] * n
    alive[10:21] = [2.0] * 11           # a GPU down from window 10 (t = 11 s) to window 20
    alive[13] = None                    # no sample in window 13
    alive[0] = None                     # none yet in the first window: no sample, no value
    ts = {"window_s": 1.0, "answered_rps": [100.0] * n, "answered_good_rps": [100.0] * n, "shed_rps": [0.0] * n,
          "attempts_rps": [100.0] * n, "offered_rps": [100.0] * n, "gpu_busy": [0.5] * n,
          "queue_depth": [4.0] * n, "gpus_alive": alive}
    s = Series.from_timeseries(ts)
    assert s.gpus_alive[13] == 2.0 and s.queue_depth[13] == 4.0 and np.isnan(s.gpus_alive[0])
    lost = [r for r in build_rules(resolve_target("hardened", {"gpus": 3})) if r.name == "GpuCapacityLost"]
    (f,) = evaluate(lost, s, FleetShape(0.3, 320.0, 3))
    assert f.first_s == 16.0 and f.intervals == ((16.0, 22.0),)  # pending from 11 s, for 5 s; up at 22 s


def test_series_from_an_older_run_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="answered_rps"):
        Series.from_timeseries({"window_s": 1.0, "gpu_busy": [], "queue_depth": []})


def test_shape_reads_the_targets_service_rate_and_fleet() -> None:
    c = resolve_target("hardened")
    assert shape_of(c) == FleetShape(0.3, c.batch_size / c.batch_time_s, c.fleet_gpus)


@pytest.mark.parametrize("name, onset", [("spike", 10.0), ("gpu-outage", 10.0), ("dominant-tenant", 10.0),
                                         ("steady", None), ("night", None), ("diurnal", None)])
def test_onset_is_the_first_disturbance(name: str, onset: float | None) -> None:
    assert onset_s(load_workload(name)) == onset

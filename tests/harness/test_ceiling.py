"""The ceiling: what the best possible design could answer within the SLO, by hand."""

from __future__ import annotations

import pytest

from harness.analysis.compare.ceiling import capacity_rps, ceiling_of_run, ceiling_requests, length_quantiles
from harness.results.run import RunResult
from targets.config import TargetConfig
from tests.harness.summaries import summary
from workloads.model import Sizes, WorkloadConfig

# 2 GPUs x full batches of 10 every 0.1 s = 200 requests/s.
FLEET = TargetConfig(gpus=2, batch_size=10, batch_time_s=0.1, slo_s=0.3)


def workload(faults=(), sizes=None) -> WorkloadConfig:
    doc = {"name": "hand", "phases": [{"kind": "constant", "duration_s": 4, "rate_rps": 150}],
           "faults": list(faults)}
    if sizes:
        doc["sizes"] = sizes
    return WorkloadConfig.model_validate(doc)


def test_capacity_is_gpus_times_full_batches():
    assert capacity_rps(FLEET, workload()) == pytest.approx(200)
    # The doc's fleet: 32 GPUs x 32 / 0.1 s; hardened's 41 GPUs.
    assert capacity_rps(TargetConfig(), workload()) == pytest.approx(10_240)
    assert capacity_rps(TargetConfig(gpus=41), workload()) == pytest.approx(13_120)


def test_per_window_min_of_offered_and_capacity():
    # A spike in window 2: 100 + 100 + min(500, 200) + 100 = 500 of 800 requests.
    assert ceiling_requests(workload(), FLEET, [100, 100, 500, 100], 1.0) == pytest.approx(500)


def test_spike_on_the_docs_fleet_hand_computed():
    # The bad-day spike: 8,000/s for 20 s and 20,000/s for 10 s on hardened's 41 GPUs:
    # (20 x 8,000 + 10 x 13,120) / 360,000 = 291,200 / 360,000 = 80.9%; 77.7% goodput is 96% of it.
    spike = WorkloadConfig.model_validate({"name": "spike", "phases": [
        {"kind": "spike", "duration_s": 30, "base_rps": 8000, "spike_rps": 20000, "at_s": 10, "spike_s": 10}]})
    offered = [8000] * 10 + [20000] * 10 + [8000] * 10
    got = ceiling_requests(spike, TargetConfig(gpus=41), offered, 1.0)
    assert got == pytest.approx(291_200)
    assert 0.777 / (got / 360_000) == pytest.approx(0.96, abs=0.001)


def test_a_gpu_outage_takes_its_share_of_capacity():
    # Half the fleet (1 of 2 GPUs) down in [1, 2): that window serves 100 of its 150.
    down = workload([{"kind": "gpu-down", "at_s": 1, "duration_s": 1, "fraction": 0.5}])
    assert ceiling_requests(down, FLEET, [150] * 4, 1.0) == pytest.approx(550)
    # Down from 1.5 s to 2.5 s: half of windows 1 and 2 at 100/s: 75 + 50 each.
    mid = workload([{"kind": "gpu-down", "at_s": 1.5, "duration_s": 1, "fraction": 0.5}])
    assert ceiling_requests(mid, FLEET, [150] * 4, 1.0) == pytest.approx(150 + 125 + 125 + 150)


def test_a_slowdown_divides_capacity_and_can_break_the_slo():
    slow2 = workload([{"kind": "slowdown", "at_s": 2, "duration_s": 1, "factor": 2}])
    assert ceiling_requests(slow2, FLEET, [150] * 4, 1.0) == pytest.approx(550)
    # Batches of 0.4 s cannot answer within a 0.3 s SLO, whatever the design.
    slow4 = workload([{"kind": "slowdown", "at_s": 2, "duration_s": 1, "factor": 4}])
    assert ceiling_requests(slow4, FLEET, [150] * 4, 1.0) == pytest.approx(450)


def test_long_inputs_cost_more_and_some_never_fit_the_slo():
    # Half the inputs at 64 tokens (0.1 s a batch), half at 256 (0.4 s: over the SLO).
    assert list(length_quantiles(Sizes(kind="fixed", length=64))) == [64]
    lengths = length_quantiles(Sizes(kind="lognormal", length=64, sigma=0.6, max_length=1024))
    assert lengths[len(lengths) // 2] == pytest.approx(64, abs=1) and lengths.max() <= 1024
    wl = workload(sizes={"kind": "lognormal", "length": 64, "sigma": 0.6, "max_length": 1024})
    share = (lengths * 0.1 / 64 <= 0.3 + 1e-12).mean()  # batch time max(1, L/64) x 0.1 s
    assert 0.95 < share < 0.98                          # P(L > 192) = P(Z > ln 3 / 0.6) = 3.4%
    assert ceiling_requests(wl, FLEET, [10] * 4, 1.0) == pytest.approx(40 * share)


def test_share_of_the_ceiling_from_a_runs_own_configs():
    run = RunResult(summary=summary(unique=600, within=450, late=0, shed=150, timed_out=0),
                    target_config=FLEET.model_dump(mode="json"), workload_config=workload().model_dump(mode="json"),
                    seed=1, mode="sim", timeseries={"window_s": 1.0, "offered_rps": [150, 150, 150, 150, 0]})
    c = ceiling_of_run(run)
    assert (c.capacity_rps, c.ceiling_ratio, c.share) == (pytest.approx(200), 1.0, pytest.approx(0.75))

"""Admission's predicted batch-forming wait (admission_fill): a slowdown on a small fleet.

At a 1/32 live scale (3 GPUs of B = 32, 250 req/s during the slowdown) the doubled 200 ms batch
plus a whole max_wait_s (100 ms) of filling is over 90% of the 300 ms SLO, so predicting the
whole max wait refused nearly every request that did not find 31 queued (measured live: 60%
goodput, 38% shed, in the sim too). The rate batcher would let a batch of 24 go, 92 ms at that
rate, and nearer the newcomer the more are queued: predicting that admits what the fleet,
at half speed still twice the load's size, can serve within the SLO.
"""

from __future__ import annotations

from harness.engine.sim import run_sim
from harness.live.plan import plan_live
from targets.config import TargetConfig
from workloads.model import WorkloadConfig


def _slowdown(fill: str):
    plan = plan_live("hardened", "slowdown", 1, {}, None, None, 1 / 32)
    cfg = TargetConfig.model_validate({**plan.config.model_dump(mode="json"), "admission_fill": fill})
    return run_sim(cfg, WorkloadConfig.model_validate(plan.workload.model_dump(mode="json")), seed=1).summary


def test_predicting_the_rate_batchers_fill_serves_a_small_fleets_slowdown():
    whole, rate = _slowdown("max-wait"), _slowdown("rate")
    assert TargetConfig().admission_fill == "rate"                 # the default
    assert whole.outcomes.shed.share > 0.2 and whole.goodput_ratio < 0.8
    assert rate.goodput_ratio > 0.95 and rate.outcomes.shed.share < 0.02
    assert rate.outcomes.late.share < 0.02                         # admitted, and in time
    assert rate.recovery.recovered_after_s is not None and rate.recovery.recovered_after_s <= 1.0

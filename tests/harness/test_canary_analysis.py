"""Canary analysis verdicts on drawn samples, plan files, and one small rollout end to end."""

from __future__ import annotations

import numpy as np
import pytest

from harness.analysis.canary.judge import Action, Sample, Thresholds, judge
from workloads.canary_plan import CanaryPlan, load_plan, plan_names
from workloads.config_files import ConfigError

TH = Thresholds()


def _sample(rng: np.random.Generator, n: int, scale_s: float = 0.1, error_rate: float = 0.0,
            shift: float = 0.0) -> Sample:
    errors = int(rng.binomial(n, error_rate))
    labels = np.minimum(9, (10 * rng.random(n - errors) ** 2).astype(int))
    moved = rng.random(len(labels)) < shift
    labels[moved] = (labels[moved] + 1) % 10
    return Sample(latencies_s=list(scale_s * (1 + rng.gamma(4, 0.1, n - errors))), errors=errors,
                  labels=np.bincount(labels, minlength=10))


@pytest.mark.parametrize("seed", range(5))
def test_same_version_promotes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    assert judge(_sample(rng, 500), _sample(rng, 10_000), TH).action is Action.PROMOTE


@pytest.mark.parametrize("kind, canary, check", [
    ("slow", {"scale_s": 0.15}, "latency"),
    ("erroring", {"error_rate": 0.03}, "errors"),
    ("wrong", {"shift": 0.3}, "outputs"),
])
def test_each_bad_canary_fails_its_own_check(kind: str, canary: dict, check: str) -> None:
    rng = np.random.default_rng(1)
    v = judge(_sample(rng, 2000, **canary), _sample(rng, 20_000), TH)
    assert v.action is Action.ROLLBACK and v.failed == (check,), kind


def test_too_few_canary_answers_hold_the_step() -> None:
    rng = np.random.default_rng(2)
    v = judge(_sample(rng, 20, scale_s=1.0), _sample(rng, 10_000), TH)
    assert v.action is Action.HOLD and v.p_latency is None


def test_plans_load_and_a_falling_weight_is_refused() -> None:
    assert {"careful", "fast"} <= set(plan_names())
    assert [s.weight for s in load_plan("careful").steps] == [0.01, 0.05, 0.25]
    with pytest.raises(ValueError, match="must not fall"):
        CanaryPlan(name="x", steps=[{"weight": 0.5, "duration_s": 1}, {"weight": 0.1, "duration_s": 1}])
    with pytest.raises(ConfigError, match="unknown canary plan"):
        load_plan("nope")


def _tiny_rollout(version, seed: int = 1):
    from harness.analysis.canary.run import Rollout
    from targets.spec import resolve_target
    from workloads.loader import load_workload

    plan = CanaryPlan(name="tiny", rate_rps=400, max_holds=0, analysis={"min_samples": 30},
                      steps=[{"weight": 0.2, "duration_s": 2}, {"weight": 0.5, "duration_s": 2}])
    config = resolve_target("hardened", {"peak_qps": 400})
    workload = load_workload("steady").scaled(400 / 10_000, duration_s=plan.duration_s)
    return Rollout(plan, version, workload, config, seed).run()


@pytest.mark.slow
def test_a_small_rollout_promotes_a_good_canary_and_rolls_back_an_erroring_one_at_its_first_step() -> None:
    from targets.versions import ModelVersion

    good = _tiny_rollout(ModelVersion(name="v2"))
    assert (good.decision, good.decided_at_s, good.step) == ("promote", 4.0, 1)
    assert 0.2 * 400 * 2 < good.canary_requests < 0.5 * 400 * 4 * 1.2
    bad = _tiny_rollout(ModelVersion(name="v2", error_rate=0.3))
    assert (bad.decision, bad.decided_at_s, bad.step, bad.failed) == ("rollback", 2.0, 0, ["errors"])

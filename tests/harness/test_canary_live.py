"""Live canaries: the step machine, the version on answers and /metrics, and short rollouts on torch models."""

from __future__ import annotations

import asyncio
import json
import random

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.analysis.canary.judge import Action
from harness.analysis.canary.run import StepMachine
from targets.config import TargetConfig
from targets.http.api_servers import ApiServers
from targets.http.server import ApiMetrics, FrontDoor
from targets.http.stack import numbers
from targets.target import ServingTarget
from targets.versions import CanaryRouting, ModelVersion
from workloads.canary_plan import CanaryPlan

PLAN = CanaryPlan(name="two-steps", max_holds=1, steps=[{"weight": 0.25, "duration_s": 3},
                                                        {"weight": 0.5, "duration_s": 3}])

P, H, R = Action.PROMOTE, Action.HOLD, Action.ROLLBACK


@pytest.mark.parametrize("verdicts, decision, step", [
    ([P, P], P, 1),        # both steps pass: promoted at the last one
    ([R], R, 0),           # the first step fails: rolled back there
    ([H, P, R], R, 1),     # held once for evidence, passed, then the 50% step fails
    ([P, H, H], H, 1),     # the 50% step's one hold spent and still no evidence: the plan stops
])
def test_step_machine_walks_the_plan(verdicts: list[Action], decision: Action, step: int) -> None:
    steps = StepMachine(PLAN)
    weights = [steps.weight]
    outcome = None
    for v in verdicts:
        outcome = steps.after(v)
        if outcome is None:
            weights.append(steps.weight)
    assert (outcome, steps.step) == (decision, step)
    assert weights == sorted(weights)  # a rollout only widens


async def _serve(cache: str, sends: int = 40) -> tuple[list[tuple[bool, str]], str]:
    """A served target with a modeled canary at 50%: `sends` requests of one body, one at a
    time; each answer's (routed to the canary, X-Model-Version), and a scrape of /metrics."""
    cfg = TargetConfig(name="canary-check", batching="dynamic", max_wait_s=0.001, batch_time_s=0.002, batch_size=8,
                       cache=cache, gpus=1, api_servers=1, peak_qps=1000)
    target = ServingTarget(cfg, random.Random(1))
    split = target.attach_canary(ModelVersion(name="v2"), CanaryRouting.HASH, gpus=1)
    split.weight = 0.5
    door = FrontDoor(target, 0, numbers(), lambda x: 64, ApiMetrics(target, None), None, 64 * 1024,
                     cache_keys="exact" if cache == "exact" else "normalized")
    servers = ApiServers([door])
    (port,) = await servers.start()
    body = json.dumps({"tenant": "t0", "input": [1, 2, 3]}).encode()
    answers = []
    try:
        async with aiohttp.ClientSession() as session:
            for uid in range(sends):
                headers = {"Content-Type": "application/json", "X-Harness-Uid": str(uid)}
                async with session.post(f"http://127.0.0.1:{port}/predict", data=body, headers=headers) as r:
                    doc = await r.json()
                    assert r.status == 200 and doc["version"] == r.headers["X-Model-Version"]
                    answers.append((split.to_canary(uid, "t0"), r.headers["X-Model-Version"]))
            async with session.get(f"http://127.0.0.1:{port}/metrics") as r:
                return answers, await r.text()
    finally:
        await servers.stop()


def _samples(text: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append(s)
    return out


def _wrong(answers: list[tuple[bool, str]]) -> int:
    return sum((version == "v2") != routed for routed, version in answers)


@pytest.mark.live
async def test_exact_cache_answers_with_the_wrong_version_and_metrics_count_it_per_version() -> None:
    answers, text = await _serve("exact")
    samples = _samples(text)
    events = {s.labels["kind"]: s.value for s in samples["harness_target_events_total"]}
    wrong = _wrong(answers)
    assert wrong > 0 and events["cache-wrong-version"] == wrong  # every wrong-version answer counted, no more
    served = {}
    for s in samples["harness_requests_total"]:
        served[s.labels["version"]] = served.get(s.labels["version"], 0) + s.value
    assert served == {v: sum(1 for _, x in answers if x == v) for v in {x for _, x in answers}}
    assert {s.labels["version"] for s in samples["harness_request_latency_seconds_count"]} == set(served)


@pytest.mark.live
async def test_a_versioned_cache_gives_every_request_its_own_versions_answer() -> None:
    answers, text = await _serve("normalized")
    assert _wrong(answers) == 0 and {v for _, v in answers} == {"v1", "v2"}
    events = {s.labels["kind"]: s.value for s in _samples(text)["harness_target_events_total"]}
    assert events["cache-wrong-version"] == 0


@pytest.mark.live
@pytest.mark.slow
def test_live_rollout_rolls_back_a_wrong_canary_and_promotes_a_good_one() -> None:
    from harness.analysis.canary.live import LIVE_DAYS, LiveRollout, live_config

    config = live_config("hardened", 200.0)
    wrong = LiveRollout(PLAN, LIVE_DAYS["wrong"], config, seed=1).run()
    assert wrong.decision == "rollback" and wrong.failed == ["outputs"] and wrong.step == 0
    assert 0 < wrong.canary_requests < 200  # only the first step's share saw the other weights
    good = LiveRollout(PLAN, LIVE_DAYS["good"], config, seed=1).run()
    assert good.decision == "promote" and good.step == 1, good.steps
    assert all(s.output_distance == 0.0 for s in good.steps)  # the same weights: the same answers


class _OneLabel:
    """A modeled GPU (2 ms batches) whose every answer is one label, as a torch model's answer dict."""

    def __init__(self, label: int) -> None:
        self.label = label

    def expected_s(self, batch: list) -> float:
        return 0.002

    async def run_batch(self, batch: list) -> list[dict]:
        await asyncio.sleep(0.002)
        return [{"label": self.label, "score": 1.0} for _ in batch]


@pytest.mark.live
async def test_canary_traffic_records_each_answer_under_the_version_that_computed_it() -> None:
    from harness.live.canary_drive import CanaryTraffic
    from harness.live.payloads import Payloads

    cfg = TargetConfig(name="canary-drive", batching="dynamic", max_wait_s=0.002, batch_time_s=0.002, batch_size=8,
                       cache="off", gpus=1, api_servers=1, peak_qps=1000, tenant_limits=False)
    baseline, canary = _OneLabel(3), _OneLabel(4)
    target = ServingTarget(cfg, random.Random(1), executor_for=lambda i: baseline)
    split = target.attach_canary(ModelVersion(name="v2"), CanaryRouting.HASH, gpus=1, executor_for=lambda i: canary)
    split.weight = 0.3
    servers = ApiServers([FrontDoor(target, 0, numbers(1024), lambda x: 64, ApiMetrics(target, None), None)])
    (port,) = await servers.start()
    traffic = CanaryTraffic(port, 400.0, seed=1, payloads=Payloads("mlp"), size=64)
    try:
        await traffic.start()
        await asyncio.sleep(0.75)
        step = traffic.take()
    finally:
        await traffic.stop()
        await servers.stop()
    v1, v2 = step.of("v1"), step.of("v2")
    assert len(v1.latencies_s) > 0 and len(v2.latencies_s) > 0
    assert v1.labels == [0, 0, 0, len(v1.latencies_s)] + [0] * 6  # the baseline's every answer, its label
    assert v2.labels == [0, 0, 0, 0, len(v2.latencies_s)] + [0] * 5
    share = len(v2.latencies_s) / (len(v1.latencies_s) + len(v2.latencies_s))
    assert 0.15 < share < 0.45 and not step.unversioned  # the split's 30%, every answer from a model
    assert traffic.served["v2"] >= len(v2.latencies_s)

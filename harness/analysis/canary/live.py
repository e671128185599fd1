"""One canary rollout on a live served target: two torch models, judged step by step.

The live counterpart of `harness.analysis.canary.run.Rollout`: a target host in
a child process (harness.live.host) serves the baseline model on its GPU
workers and the canary on workers of its own (harness.live.canary_host), split
by the same `CanarySplit`; open-loop traffic (harness.live.canary_drive)
records every answer under the version that computed it. The same
`StepMachine` walks the plan's steps, setting the canary's weight over the
host's control pipe, and at each step's end the same `judge` reads that step's
answers (latency from the scheduled start, 5xx, output label) per version.

The live canary days are real model versions, not modeled ones:

- good: the baseline's own weights (same answers) at the same speed;
- slow: the same weights, each batch held to 1.5x its time (+50% batch time);
- erroring: the same weights, 2% of its answers a 5xx;
- wrong: weights from another seed (other answers), the same speed;
- wrong-behind-exact-cache: the wrong canary behind the doc's exact-payload
  cache, on a small set of repeated inputs: canary-routed requests get the
  baseline's cached answers (counted by the target, `wrong_version`).
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np

from harness.analysis.canary.judge import Action, Sample, StepVerdict, Thresholds, judge
from harness.analysis.canary.run import StepMachine, canary_gpus
from harness.live.canary_drive import CanaryTraffic, StepRecords, VersionRecords
from harness.live.canary_host import LiveCanarySpec
from harness.live.driver_loop import new_loop
from harness.live.host import HostSpec
from harness.live.host_process import HostProcess
from harness.live.payloads import Payloads
from harness.live.scaling import scale_for_live
from harness.results.canary import CanaryCell, CanaryDayFigures, CanaryResult, CanaryRun, StepEvidence
from targets.config import TargetConfig
from targets.spec import resolve_target
from targets.versions import BASELINE, ModelVersion
from workloads.canary_plan import CanaryPlan, load_plan

__all__ = ["DEFAULT_LIVE_DAYS", "LIVE_DAYS", "LiveDay", "LiveRollout", "live_config", "run_canary_live"]

DEFAULT_RATE_RPS = 200.0   # a live rollout's traffic unless told: what a shared 2-core machine carries
SETTLE_S = 1.0             # traffic at weight 0 before the first step: connections open, first answers back
BASELINE_SEED = 0          # the baseline model's weight seed; a wrong canary's is the next one


@dataclass(frozen=True)
class LiveDay:
    version: ModelVersion
    bad: bool
    other_weights: bool = False     # the canary's weights from another seed: other answers
    overrides: dict[str, Any] = field(default_factory=dict)
    contents: int | None = None     # distinct inputs, repeated (a cacheable mix); None: every input its own


LIVE_DAYS: dict[str, LiveDay] = {
    "good": LiveDay(ModelVersion(name="v2"), bad=False),
    "slow": LiveDay(ModelVersion(name="v2", cost_factor=1.5), bad=True),
    "erroring": LiveDay(ModelVersion(name="v2", error_rate=0.02), bad=True),
    "wrong": LiveDay(ModelVersion(name="v2"), bad=True, other_weights=True),
    "wrong-behind-exact-cache": LiveDay(ModelVersion(name="v2"), bad=True, other_weights=True,
                                        overrides={"cache": "exact"}, contents=64),
}
DEFAULT_LIVE_DAYS = ("good", "slow", "wrong")


def _sample(r: VersionRecords) -> Sample:
    return Sample(latencies_s=r.latencies_s, errors=r.errors, labels=np.asarray(r.labels, dtype=np.int64))


def _evidence(weight: float, records: StepRecords, canary: VersionRecords, baseline: VersionRecords,
              v: StepVerdict) -> StepEvidence:
    def median(xs: list[float]) -> float | None:
        return statistics.median(xs) if xs else None

    return StepEvidence(
        weight=weight, action=v.action.value, failed=list(v.failed),
        canary_answers=len(canary.latencies_s) + canary.errors,
        baseline_answers=len(baseline.latencies_s) + baseline.errors,
        canary_median_s=median(canary.latencies_s), baseline_median_s=median(baseline.latencies_s),
        canary_errors=canary.errors, baseline_errors=baseline.errors, output_distance=v.output_distance,
        unversioned=dict(records.unversioned))


def live_config(target: str, rate_rps: float, overrides: dict[str, Any] | None = None) -> TargetConfig:
    """The target at its design, shrunk to `rate_rps` as live runs shrink it (fleet by its own rule)."""
    design = resolve_target(target, dict(overrides or {}))
    return scale_for_live(design, rate_rps / design.peak_qps)[0]


@dataclass(frozen=True)
class LiveRollout:
    """One plan, one live canary day, one served target, one seed (traffic and payloads)."""

    plan: CanaryPlan
    day: LiveDay
    config: TargetConfig
    seed: int
    rate_rps: float = DEFAULT_RATE_RPS
    model: str = "mlp"
    device: str = "auto"
    pad_to_s: float | None = None

    def run(self) -> CanaryRun:
        with asyncio.Runner(loop_factory=new_loop) as runner:
            return runner.run(self._main())

    def host_spec(self) -> HostSpec:
        canary = LiveCanarySpec(version=self.day.version.model_dump(), routing=self.plan.routing,
                                gpus=canary_gpus(self.plan, self.config),
                                weights_seed=BASELINE_SEED + 1 if self.day.other_weights else None)
        return HostSpec(config=self.config.model_dump(mode="json"), model=self.model, device=self.device,
                        pad_to_s=self.pad_to_s, seed=BASELINE_SEED, canary=asdict(canary))

    async def _main(self) -> CanaryRun:
        loop = asyncio.get_running_loop()
        host = HostProcess(self.host_spec())
        traffic: CanaryTraffic | None = None
        try:
            ready = await host.start()
            traffic = CanaryTraffic(ready["proxy_port"], self.rate_rps, self.seed, Payloads(self.model, seed=self.seed),
                                    self.config.reference_length, self.day.contents, self.config.client_timeout_s)
            await traffic.start()
            await asyncio.sleep(SETTLE_S)
            steps = StepMachine(self.plan)
            th = Thresholds(**self.plan.analysis.model_dump())
            evidence: list[StepEvidence] = []
            await host.request("canary", weight=steps.weight)
            traffic.take()
            began = loop.time()
            while True:
                weight = steps.weight
                await asyncio.sleep(steps.duration_s)
                records = traffic.take()
                canary, baseline = records.of(self.day.version.name), records.of(BASELINE.name)
                verdict = judge(_sample(canary), _sample(baseline), th)
                evidence.append(_evidence(weight, records, canary, baseline, verdict))
                decision = steps.after(verdict.action)
                if decision is not None:
                    break
                await host.request("canary", weight=steps.weight)
            decided_s = loop.time() - began
            if decision is not Action.PROMOTE:
                await host.request("canary", weight=0.0)
            counters = await host.request("canary")
            return CanaryRun(seed=self.seed, decision=decision.value, decided_at_s=decided_s, step=steps.step,
                             failed=list(verdict.failed), canary_requests=traffic.served[self.day.version.name],
                             wrong_version=int(counters["wrong_version"]), steps=evidence,
                             batch_s=counters["batch_s"])
        finally:
            if traffic is not None:
                await traffic.stop()
            await host.stop()
            host.kill()


def run_canary_live(plans: list[str], target: str, seeds: int, first_seed: int = 1, days: list[str] | None = None,
                    rate_rps: float = DEFAULT_RATE_RPS, model: str = "mlp", device: str = "auto",
                    pad_to_s: float | None = None,
                    on_done: Callable[[int, int], None] | None = None) -> CanaryResult:
    """Every plan on every live day, `seeds` rollouts each, one after another (one host at a time)."""
    names = list(days or DEFAULT_LIVE_DAYS)
    unknown = [d for d in names if d not in LIVE_DAYS]
    if unknown:
        raise ValueError(f"unknown live canary day(s) {', '.join(unknown)} (known: {', '.join(LIVE_DAYS)})")
    loaded = {p: load_plan(p) for p in plans}
    total, done, cells = len(plans) * len(names) * seeds, 0, []
    for p, plan in loaded.items():
        for d in names:
            day = LIVE_DAYS[d]
            config = live_config(target, rate_rps, day.overrides)
            runs = []
            for k in range(seeds):
                runs.append(LiveRollout(plan, day, config, first_seed + k, rate_rps, model, device, pad_to_s).run())
                done += 1
                if on_done is not None:
                    on_done(done, total)
            cells.append(CanaryCell.of(plan.name, d, day.bad, runs))
    return CanaryResult(mode="live", target=target, seeds=seeds,
                        plans={plan.name: plan.description for plan in loaded.values()}, cells=cells,
                        days={d: live_day_figures(LIVE_DAYS[d]) for d in names})


def live_day_figures(day: LiveDay) -> CanaryDayFigures:
    """A live day as it runs: the version's settings (another seed's weights for a wrong one), steady
    open-loop traffic (a small set of repeated inputs where it has `contents`), the target's change."""
    canary = day.version.describe()
    if day.other_weights:
        canary = "another seed's weights (other answers)" + ("" if canary == "same as the baseline" else f", {canary}")
    traffic = "steady" if day.contents is None else f"steady, {day.contents} distinct inputs repeated"
    return CanaryDayFigures(bad=day.bad, canary=canary, traffic=traffic,
                            target_change=", ".join(f"{k}={v}" for k, v in day.overrides.items()))

"""One canary rollout in sim: a plan's steps on a target serving two versions, judged step by step.

The driver sends the plan's traffic open-loop; a tap on the transport
(`harness.engine.canary_tap`) notes, for every answered attempt, which version
the split routed it to, its status, latency and answer label. At each step's
end the step's canary answers are judged against the baseline's
(`harness.analysis.canary.judge.judge`): roll back (weight to 0, the run ends), hold
(the step runs again, at most `max_holds` times) or go on; passing the last
step promotes. Seeded and deterministic.
"""

from __future__ import annotations

import asyncio
import math
import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.analysis.canary.judge import Action, Sample, Thresholds, judge
from harness.engine.canary_tap import NullSink, StepTap, TapTransport
from harness.engine.clock import run_virtual
from harness.engine.collector import fewer_collections
from harness.engine.driver import Driver
from harness.engine.transports import InProcessTransport
from harness.results.canary import CanaryRun
from targets.client import ClientPolicy
from targets.config import TargetConfig
from targets.target import ServingTarget
from targets.versions import CanaryRouting, ModelVersion
from workloads.arrivals import schedule_of
from workloads.canary_plan import CanaryPlan
from workloads.model import WorkloadConfig

__all__ = ["Rollout", "StepMachine", "canary_gpus"]


def _sample(tap: StepTap, version: int) -> Sample:
    """The step's answers of one version (0 baseline, 1 canary), as `judge` reads them."""
    latencies, errors, labels = tap.take(version)
    return Sample(latencies_s=latencies, errors=errors, labels=np.array(labels, dtype=np.int64))


def canary_gpus(plan: CanaryPlan, config: TargetConfig) -> int:
    """The canary's replicas: the plan's, or the fleet's share at the largest step, plus one."""
    if plan.canary_gpus is not None:
        return plan.canary_gpus
    return math.ceil(max(s.weight for s in plan.steps) * config.fleet_gpus) + 1


@dataclass
class StepMachine:
    """A plan's steps as a pure state machine, shared by the sim and live rollouts: after
    each step's verdict, `after` says whether the rollout runs a step (the same one,
    held, or the next; read `weight` and `duration_s`) or has decided."""

    plan: CanaryPlan
    step: int = 0
    holds: int = 0

    @property
    def weight(self) -> float:
        return self.plan.steps[self.step].weight

    @property
    def duration_s(self) -> float:
        return self.plan.steps[self.step].duration_s

    def after(self, action: Action) -> Action | None:
        """None: run the current step (held, or the next one); else the rollout's decision
        (PROMOTE past the last step; ROLLBACK; HOLD once the step's holds are spent)."""
        if action is Action.HOLD and self.holds < self.plan.max_holds:
            self.holds += 1
            return None
        if action is Action.PROMOTE and self.step < len(self.plan.steps) - 1:
            self.step += 1
            self.holds = 0
            return None
        return action


@dataclass(frozen=True)
class Rollout:
    """One plan, one canary version, one workload, one target, one seed."""

    plan: CanaryPlan
    version: ModelVersion
    workload: WorkloadConfig
    config: TargetConfig
    seed: int

    def run(self) -> CanaryRun:
        # As in SimRun: the collector stays held off until the target and the transport
        # have let go of what is left at the decision, which its first pass would walk.
        held: list[ServingTarget | TapTransport] = []
        with fewer_collections():
            try:
                return run_virtual(self._main(held))
            finally:
                for part in held:
                    part.clear()

    async def _main(self, held: list[ServingTarget | TapTransport]) -> CanaryRun:
        loop = asyncio.get_running_loop()
        rng = random.Random(self.seed)
        schedule = schedule_of(self.workload, self.seed)
        target = ServingTarget(self.config, random.Random(rng.randrange(2**31)))
        split = target.attach_canary(self.version, CanaryRouting(self.plan.routing), canary_gpus(self.plan, self.config),
                                     salt=self.seed)
        fleet = target.canary
        assert fleet is not None  # attach_canary set it
        tap = StepTap()
        transport = TapTransport(InProcessTransport(target), split, tap, loop)
        held += [target, transport]
        driver = Driver(schedule, ClientPolicy.from_target(self.config), transport, NullSink(),
                        random.Random(rng.randrange(2**31)))
        decided: asyncio.Future[CanaryRun] = loop.create_future()
        th = Thresholds(**self.plan.analysis.model_dump())
        steps = StepMachine(self.plan)

        def end_step() -> None:
            verdict = judge(_sample(tap, 1), _sample(tap, 0), th)
            decision = steps.after(verdict.action)
            if decision is None:
                split.weight = steps.weight
                loop.call_later(steps.duration_s, end_step)
                return
            if decision is not Action.PROMOTE:
                split.weight = 0.0
            decided.set_result(CanaryRun(
                seed=self.seed, decision=decision.value, decided_at_s=loop.time(), step=steps.step,
                failed=list(verdict.failed), canary_requests=tap.canary_requests,
                wrong_version=fleet.stats.wrong_version))

        split.weight = steps.weight
        loop.call_at(steps.duration_s, end_step)
        traffic = asyncio.ensure_future(driver.run(t0=0.0))
        either: list[asyncio.Future[Any]] = [traffic, decided]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        traffic.cancel()
        if not decided.done():  # the traffic ran out before the plan decided
            return CanaryRun(seed=self.seed, decision=Action.HOLD.value, decided_at_s=None, step=steps.step,
                             failed=[], canary_requests=tap.canary_requests,
                             wrong_version=fleet.stats.wrong_version)
        return decided.result()

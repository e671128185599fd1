"""One step of `harness sweep`: a target under a constant offered rate, stopped once it has certainly failed.

Both clocks run the same traffic (``harness.analysis.traffic``: the `steady`
scenario's ten tenants at one Poisson rate) and the same stopping rule
(``sweep.search.certain_failures`` over the recorder, checked every
``check_s``): sim stops by interrupting its virtual loop, live by cancelling
its drive, and both summarise the part that ran, as a Ctrl-C would.

A live step is judged valid under ``SWEEP_LIMITS`` (those of a run,
``harness.live.validity.LIMITS``: no more than 1% of the sends over 10 ms late,
send lag p99.9 within 50 ms): a rate the driver could not offer on time is not
one the target was shown to sustain, but a scheduler hiccup on a few sends of
thousands does not void a step whose figures are sound.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, Callable

from harness.analysis.sweep.search import allowed_failures, certain_failures
from harness.analysis.traffic import traffic
from harness.engine.recorder import Recorder
from harness.engine.sim import SimRun
from harness.live.validity import LIMITS, Limits, invalid_reasons
from harness.results.run import RunResult
from harness.results.sweep import SweepStep
from targets.config import TargetConfig

__all__ = ["SWEEP_LIMITS", "StepRunner", "sim_step", "live_step", "step_of"]

SWEEP_LIMITS = LIMITS
StepRunner = Callable[[float, float], SweepStep]  # (rate_rps, duration_s) -> the step


class _Saturated(KeyboardInterrupt):
    """Ends a sim step early: SimRun treats it as an interruption and summarises what ran."""


def _doomed(rec: Recorder, now_s: float, min_ratio: float) -> bool:
    bad = certain_failures(rec.outcome, rec.latency, rec.sched, now_s, rec.slo_s)
    return bad > allowed_failures(len(rec.sched), min_ratio)


class _StoppingSimRun(SimRun):
    """A SimRun that stops at the first check where the step has certainly failed."""

    def __init__(self, config: TargetConfig, workload: Any, seed: int, check_s: float, min_ratio: float) -> None:
        super().__init__(config, workload, seed)
        self.check_s, self.min_ratio, self.stopped = check_s, min_ratio, False

    def _sample(self, loop: asyncio.AbstractEventLoop, target: Any) -> None:
        super()._sample(loop, target)

        def check() -> None:
            if _doomed(self.recorder, loop.time(), self.min_ratio):
                self.stopped = True
                raise _Saturated
            if loop.time() < self.workload.duration_s:
                loop.call_later(self.check_s, check)

        loop.call_at(self.check_s, check)


def step_of(res: RunResult, rate_rps: float, duration_s: float, stopped: bool, min_ratio: float,
            wall_s: float, live: bool, limits: Limits = SWEEP_LIMITS) -> SweepStep:
    """The sweep's figures of one run, and its verdict."""
    s = res.summary
    lag = ((s.live or {}).get("send_lag_s") or {}).get("p99") if live else None
    reasons = list(s.invalid_reasons)
    if live and s.live is not None:
        r = s.requests
        reasons = sorted(set(reasons) | set(invalid_reasons(s.live, r.attempts, r.succeeded, r.unique,
                                                             limits)))
    within = s.requests.within_slo / s.requests.unique if s.requests.unique else 0.0
    if stopped:
        passed, why = False, "stopped early: too many requests already certain to miss the SLO"
    elif reasons:
        passed, why = False, "invalid: " + reasons[0]
    elif within < min_ratio:
        passed, why = False, f"{within:.1%} within the SLO < {min_ratio:.0%}"
    else:
        passed, why = True, f"{within:.1%} within the SLO"
    return SweepStep(rate_rps=rate_rps, duration_s=duration_s, ran_s=s.covered_s or s.duration_s,
                     stopped_early=stopped, unique=s.requests.unique, goodput_rps=s.goodput_rps,
                     goodput_ratio=s.goodput_ratio, p99_s=s.latency_s.p99, p99_ok_s=s.latency_ok_s.p99,
                     shed=s.requests.shed, timed_out=s.requests.timed_out, send_lag_p99_s=lag,
                     valid=not reasons, invalid_reasons=reasons, passed=passed, why=why, wall_s=wall_s)


def sim_step(config: TargetConfig, seed: int, min_ratio: float, check_s: float = 0.25) -> StepRunner:
    """Runs one sim step of ``config`` per call (virtual time; ``check_s`` virtual s between checks)."""
    def run(rate_rps: float, duration_s: float) -> SweepStep:
        sim = _StoppingSimRun(config, traffic(rate_rps, duration_s, name="sweep"), seed,
                              min(check_s, duration_s / 4), min_ratio)
        res = sim.run()
        return step_of(res, rate_rps, duration_s, sim.stopped, min_ratio, res.summary.wall_s, live=False)
    return run


def live_step(plan: Any, min_ratio: float, check_s: float = 0.25, limits: Limits = SWEEP_LIMITS) -> StepRunner:
    """Runs one live step per call from ``plan`` (a harness.live.plan.LivePlan; its fleet and
    host stay as planned, its workload is replaced by the step's constant rate)."""
    from harness.live.run import LiveRun

    def run(rate_rps: float, duration_s: float) -> SweepStep:
        wl = traffic(rate_rps, duration_s, name="sweep")
        p = replace(plan, workload=wl)
        runner = p.runner()
        stopped = False
        inner = runner._main

        async def main() -> None:  # the drive, with a watcher that cancels it once the step is lost
            nonlocal stopped
            me = asyncio.current_task()
            assert me is not None  # a coroutine run by the loop
            loop = asyncio.get_running_loop()

            async def watch() -> None:
                nonlocal stopped
                while True:
                    await asyncio.sleep(check_s)
                    t0 = runner.recorder.t0
                    if t0 and _doomed(runner.recorder, loop.time() - t0, min_ratio):
                        stopped = True
                        me.cancel()
                        return

            watcher = loop.create_task(watch())
            try:
                await inner()
            finally:
                watcher.cancel()

        runner._main = main
        res = runner.run()
        return step_of(res, rate_rps, duration_s, stopped, min_ratio, runner.wall_s, live=True, limits=limits)
    return run

"""LLM policies side by side: a rate sweep per length mix, throughput-vs-TPOT curves, capacity ratios.

Every policy runs on the same seeded arrivals at each rate (common random
numbers), so differences are the policies'. For each (policy, mix) the sweep
gives a curve of output tokens/s against TPOT with its knee; per mix, each
policy's capacity is its best output tokens/s over the rates where it meets
the SLO, in two senses (a "mix" may also be a trace file, replayed at each rate
by its speed-up; `--duration` does not apply to it):

- `slo`: at least `attainment` of the requests finish within TTFT <= slo_ttft_s
  and TPOT <= slo_tpot_s (the goodput sense; queueing counts);
- `tpot`: p90 TPOT <= slo_tpot_s among finished requests (the engine's ceiling at
  that TPOT, whatever the queue): the "throughput at equal TPOT" of Orca/vLLM.

The reasons are measured at the first policy's best point: idle slots and
padding (run-to-completion waste), queue wait (head-of-line), decode rows per
step (how full the batch really is), preemptions.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Callable

import numpy as np

from harness.engine.jobs import Jobs
from harness.engine.llm_metrics import run_figures
from harness.engine.llm_run import simulate
from harness.results.llm import (CapacityRatio, Curve, CurvePoint, EngineSettings, LlmResult, LlmRun, LlmSettings)
from targets.llm import LlmEngineSpec, LlmPolicy
from workloads.llm import LlmSchedule, build_llm_schedule, length_mix, mix_workload
from workloads.llm_trace import read_trace

__all__ = ["DEFAULT_RATES", "LlmPoint", "LlmSweep", "capacity", "curves_and_ratios", "engine_settings", "knee_index",
           "points_of", "result_of", "run_sweep", "schedule_of", "settings_of"]

DEFAULT_RATES = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0)


@dataclass(frozen=True)
class LlmSweep:
    policies: tuple[str, ...] = (LlmPolicy.STATIC.value, LlmPolicy.CONTINUOUS.value)
    mixes: tuple[str, ...] = ("lognormal", "sharegpt-like")
    rates_rps: tuple[float, ...] = DEFAULT_RATES
    duration_s: float = 120.0
    drain_s: float = 60.0
    seed: int = 1
    slo_ttft_s: float = 2.0
    slo_tpot_s: float = 0.1
    attainment: float = 0.9
    engine: LlmEngineSpec = field(default_factory=LlmEngineSpec)

    def __post_init__(self) -> None:
        for name in self.mixes:
            if not _is_trace(name):
                length_mix(name)  # ValueError naming the valid mixes
        if not self.rates_rps or any(not r > 0 for r in self.rates_rps):
            raise ValueError("rates must be > 0")
        if len(self.policies) < 1:
            raise ValueError("at least one policy")


def _is_trace(mix: str) -> bool:
    return mix.endswith((".csv", ".jsonl", ".ndjson"))


def schedule_of(mix: str, rate: float, sweep: LlmSweep) -> LlmSchedule:
    """A named mix drawn at `rate`, or a trace file replayed sped up (or slowed) to `rate` req/s on average."""
    if _is_trace(mix):
        trace = read_trace(mix)
        return read_trace(mix, speedup=rate / (len(trace) / trace.duration_s))
    return build_llm_schedule(mix_workload(mix, rate, sweep.duration_s), sweep.seed)


def knee_index(x: list[float], y: list[float | None]) -> int | None:
    """Kneedle's rule on an increasing-cost curve: normalise both axes to [0, 1] and take the point
    farthest above the chord in (x - y), i.e. the most throughput for the least TPOT."""
    pts = [(a, b) for a, b in zip(x, y) if b is not None]
    if len(pts) < 3:
        return None
    xs, ys = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
    span_x, span_y = np.ptp(xs), np.ptp(ys)
    if span_x == 0 or span_y == 0:
        return None
    score = (xs - xs.min()) / span_x - (ys - ys.min()) / span_y
    best = int(np.argmax(score))
    return [i for i, b in enumerate(y) if b is not None][best]


def _meets(run: LlmRun, sweep: LlmSweep) -> bool:
    return run.slo_attainment >= sweep.attainment


def _meets_tpot(run: LlmRun, sweep: LlmSweep) -> bool:
    return run.tpot_s.p90 is not None and run.tpot_s.p90 <= sweep.slo_tpot_s


def capacity(runs: list[LlmRun], ok: Callable[[LlmRun], bool]) -> LlmRun | None:
    """The run with the most output tokens/s among those `ok` accepts (None: none does)."""
    good = [r for r in runs if ok(r)]
    return max(good, key=lambda r: r.output_tok_s) if good else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return b / a if a and b is not None else None


def _capacity_ratio(mix: str, a_runs: list[LlmRun], b_runs: list[LlmRun], sweep: LlmSweep) -> CapacityRatio:
    a_slo, b_slo = capacity(a_runs, lambda r: _meets(r, sweep)), capacity(b_runs, lambda r: _meets(r, sweep))
    a_tp, b_tp = (capacity(a_runs, lambda r: _meets_tpot(r, sweep)),
                  capacity(b_runs, lambda r: _meets_tpot(r, sweep)))
    a_at = a_slo or a_tp or a_runs[0]
    b_at = b_slo or b_tp or b_runs[0]
    return CapacityRatio(
        mix=mix, a=a_runs[0].policy, b=b_runs[0].policy,
        a_tok_s=a_slo.output_tok_s if a_slo else None, b_tok_s=b_slo.output_tok_s if b_slo else None,
        ratio=_ratio(a_slo.output_tok_s if a_slo else None, b_slo.output_tok_s if b_slo else None),
        a_tpot_tok_s=a_tp.output_tok_s if a_tp else None, b_tpot_tok_s=b_tp.output_tok_s if b_tp else None,
        tpot_ratio=_ratio(a_tp.output_tok_s if a_tp else None, b_tp.output_tok_s if b_tp else None),
        at_rate_rps=a_at.rate_rps,
        a_idle_slot_share=a_at.idle_slot_share, a_padding_share=a_at.padding_share,
        a_queue_wait_p50_s=a_at.queue_wait_s.p50, b_queue_wait_p50_s=b_at.queue_wait_s.p50,
        a_mean_decode_rows=a_at.mean_decode_rows, b_mean_decode_rows=b_at.mean_decode_rows,
        a_useful_decode_rows=(a_at.mean_decode_rows * (1 - a_at.idle_slot_share)
                              if a_at.mean_decode_rows is not None and a_at.idle_slot_share is not None
                              else a_at.mean_decode_rows),
        b_preemptions=b_at.preemptions,
    )


def engine_settings(e: LlmEngineSpec) -> EngineSettings:
    """Every knob of the engine that ran, as the result records it."""
    return EngineSettings(batch_size=e.batch_size, max_wait_s=e.max_wait_s, kv_blocks=e.kv_blocks,
                          block_size=e.block_size, max_seqs=e.max_seqs, max_batched_tokens=e.max_batched_tokens,
                          chunked_prefill=e.chunked_prefill, chunk_tokens=e.chunk_tokens,
                          tenant_rps=e.tenant_rps, tenant_burst_requests=e.tenant_burst_requests,
                          tenant_tok_s=e.tenant_tok_s, tenant_burst_tokens=e.tenant_burst_tokens,
                          over_limit=e.limits().over_limit.value, max_delay_s=e.max_delay_s,
                          tenant_priority=dict(e.tenant_priority), prefix_caching=e.prefix_caching,
                          cost={k: float(v) for k, v in asdict(e.cost).items()})


def settings_of(sweep: LlmSweep, engine: LlmEngineSpec | None = None) -> LlmSettings:
    """What ran: the sweep's plan and `engine` (default: the sweep's)."""
    return LlmSettings(policies=list(sweep.policies), mixes=list(sweep.mixes), rates_rps=list(sweep.rates_rps),
                       duration_s=sweep.duration_s, seed=sweep.seed, slo_ttft_s=sweep.slo_ttft_s,
                       slo_tpot_s=sweep.slo_tpot_s, attainment=sweep.attainment,
                       engine=engine_settings(engine or sweep.engine))


@dataclass(frozen=True)
class LlmPoint:
    """One policy at one rate on one mix: a job (`harness.engine.jobs.Job`), picklable as plain data."""

    sweep: LlmSweep
    policy: str
    mix: str
    rate_rps: float

    def run(self) -> LlmRun:
        sweep = self.sweep
        schedule = schedule_of(self.mix, self.rate_rps, sweep)
        trace = simulate(replace(sweep.engine, policy=LlmPolicy(self.policy)), schedule, sweep.drain_s)
        return run_figures(trace, self.policy, self.mix, self.rate_rps, schedule.tenants, sweep.slo_ttft_s,
                           sweep.slo_tpot_s)


def point_label(p: LlmPoint) -> str:
    return f"{p.policy} {p.mix} {p.rate_rps:g} req/s"


def points_of(sweep: LlmSweep) -> list[LlmPoint]:
    """Every (mix, rate, policy) of the sweep, in that order."""
    return [LlmPoint(sweep, policy, mix, rate) for mix in sweep.mixes for rate in sweep.rates_rps
            for policy in sweep.policies]


def result_of(sweep: LlmSweep, runs: list[LlmRun]) -> LlmResult:
    curves, ratios = curves_and_ratios(runs, sweep)
    return LlmResult(settings=settings_of(sweep), runs=runs, curves=curves, ratios=ratios)


def run_sweep(sweep: LlmSweep, on_run: Callable[[str], None] | None = None, jobs: Jobs | None = None) -> LlmResult:
    """Every policy x mix x rate; the curves, knees and (first vs last policy) capacity ratios. `jobs`:
    where the points run (None: one after another in this process, `on_run` told before each)."""
    points = points_of(sweep)
    if jobs is not None:
        return result_of(sweep, jobs.run(points, None if on_run is None else
                                         lambda i, _p, _r: on_run(point_label(points[i]))))
    runs: list[LlmRun] = []
    for point in points:
        if on_run:
            on_run(f"{point.policy} {point.mix} {point.rate_rps:g} req/s")
        runs.append(point.run())
    return result_of(sweep, runs)


def curves_and_ratios(runs: list[LlmRun], sweep: LlmSweep, mixes: tuple[str, ...] | None = None
                      ) -> tuple[list[Curve], list[CapacityRatio]]:
    """Each (policy, mix)'s curve over the rates with its knee, and per mix the first policy's capacity
    against the last's (`sweep.policies` names the runs' policies, in order; `mixes`: the runs' mix
    names, when not `sweep.mixes`: a data set's)."""
    curves: list[Curve] = []
    ratios: list[CapacityRatio] = []
    for mix in mixes or sweep.mixes:
        by_policy = {p: sorted((r for r in runs if r.mix == mix and r.policy == p), key=lambda r: r.rate_rps)
                     for p in sweep.policies}
        for policy, rs in by_policy.items():
            points = [CurvePoint(rate_rps=r.rate_rps, output_tok_s=r.output_tok_s, tpot_p50_s=r.tpot_s.p50,
                                 tpot_p90_s=r.tpot_s.p90, ttft_p90_s=r.ttft_s.p90, meets_slo=_meets(r, sweep),
                                 small_tenants_ttft_p99_s=r.small_tenants_ttft_p99_s)
                      for r in rs]
            curves.append(Curve(policy=policy, mix=mix, points=points,
                                knee=knee_index([p.output_tok_s for p in points], [p.tpot_p50_s for p in points])))
        if len(sweep.policies) >= 2:
            ratios.append(_capacity_ratio(mix, by_policy[sweep.policies[0]], by_policy[sweep.policies[-1]], sweep))
    return curves, ratios

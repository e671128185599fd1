"""`harness compare llm-A llm-B --mode live`: each policy serving the real tiny decoder, beside its sim.

For each policy the tiny decoder is served on 127.0.0.1 by that policy's
scheduler (`harness.live.llm_drive.serve_and_drive`), driven open loop by the
calibration workload at one rate, and the same schedule is simulated with the
engine's cost (from `harness profile llm` via `--set cost=FILE` to be
meaningful). Both runs go into one `llm` result: mix "live" and mix "sim".
Each live request is abandoned at ten times its SLO budget (at most
`MAX_REQUEST_TIMEOUT_S` after its scheduled start: `harness.live.llm_drive.request_timeout_s`)
and counts as unfinished, so a policy that never finishes a request still ends
with a result.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from harness.engine.llm_metrics import run_figures
from harness.live.llm_drive import request_timeout_s, serve_and_drive
from harness.live.llm_profile import calibration_schedule
from harness.results.llm import EngineSettings, LlmResult, LlmRun, LlmSettings
from targets.llm import LlmEngineSpec, LlmPolicy

__all__ = ["live_compare"]


def live_compare(policies: tuple[str, ...], engine: LlmEngineSpec, rate_rps: float, duration_s: float, seed: int,
                 slo_ttft_s: float, slo_tpot_s: float) -> LlmResult:
    """ValueError when a live run had errors (the first one named)."""
    runs: list[LlmRun] = []
    schedule = calibration_schedule(rate_rps, duration_s, seed)
    timeout_s = request_timeout_s(slo_ttft_s, slo_tpot_s, int(schedule.output_tokens.max(initial=1)))
    for policy in policies:
        spec = replace(engine, policy=LlmPolicy(policy))
        served = asyncio.run(serve_and_drive(spec, schedule, timeout_s=timeout_s))
        if served.errors:
            raise ValueError(f"{policy} live: {served.errors[0]} ({len(served.errors)} errors)")
        for mix, trace in (("live", served.live), ("sim", served.sim)):
            runs.append(run_figures(trace, policy, mix, rate_rps, schedule.tenants, slo_ttft_s, slo_tpot_s))
    e = engine
    settings = LlmSettings(
        policies=list(policies), mixes=["live", "sim"], rates_rps=[rate_rps], duration_s=duration_s, seed=seed,
        slo_ttft_s=slo_ttft_s, slo_tpot_s=slo_tpot_s, attainment=0.9,
        engine=EngineSettings(batch_size=e.batch_size, max_wait_s=e.max_wait_s, kv_blocks=e.kv_blocks,
                              block_size=e.block_size, max_seqs=e.max_seqs, max_batched_tokens=e.max_batched_tokens,
                              chunked_prefill=e.chunked_prefill, chunk_tokens=e.chunk_tokens,
                              cost={k: float(v) for k, v in vars(e.cost).items()}))
    return LlmResult(settings=settings, runs=runs)

"""`harness compare llm-A llm-B --mode live`: each policy serving the real tiny decoder, beside its sim.

For each mix of the sweep (default `short`, which the tiny decoder's 512-token context
takes) and each policy, the tiny decoder is served on 127.0.0.1 by that policy's
scheduler (`harness.live.llm_drive.serve_and_drive`), driven open loop at the sweep's
one rate for its duration, and the same schedule is simulated with the engine's cost
(from `harness profile llm` via `--set cost=FILE` to be meaningful). Both runs go into
one `llm` result: mix "<mix> live" and "<mix> sim" (the mix alone, "live" and "sim",
when it is `short`), with the settings that ran (engine knobs, tenant limits, cost).

The bound: each request is abandoned at ten times its SLO budget (`request_timeout_s`:
TTFT + TPOT x its output tokens, within 5-120 s) and counts as unfinished, so a policy
that never finishes a request still ends, and each (policy, mix) takes at most the
duration + `MAX_REQUEST_TIMEOUT_S` + the server's start and stop (`LIVE_BOUND_TEXT`).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Callable

from harness.analysis.llm.compare import LlmSweep, schedule_of, settings_of
from harness.engine.llm_metrics import run_figures
from harness.live.llm_drive import MAX_REQUEST_TIMEOUT_S, request_timeout_s, serve_and_drive
from harness.results.llm import LlmResult, LlmRun
from targets.llm import LlmPolicy

__all__ = ["LIVE_BOUND_TEXT", "live_compare"]

LIVE_BOUND_TEXT = (f"each policy and mix ends within --duration + {MAX_REQUEST_TIMEOUT_S:g} s (a request unanswered "
                   "ten SLO budgets after its arrival counts as unfinished) plus the server's start")


def _labels(mix: str) -> tuple[str, str]:
    return ("live", "sim") if mix == "short" else (f"{mix} live", f"{mix} sim")


def live_compare(sweep: LlmSweep, on_run: Callable[[str], None] | None = None) -> LlmResult:
    """ValueError when a live run had errors (the first one named). `sweep.rates_rps[0]` is the rate."""
    runs: list[LlmRun] = []
    rate = sweep.rates_rps[0]
    for mix in sweep.mixes:
        schedule = schedule_of(mix, rate, sweep)
        timeout_s = request_timeout_s(sweep.slo_ttft_s, sweep.slo_tpot_s, int(schedule.output_tokens.max(initial=1)))
        for policy in sweep.policies:
            if on_run:
                on_run(f"{policy} on {mix}")
            spec = replace(sweep.engine, policy=LlmPolicy(policy))
            served = asyncio.run(serve_and_drive(spec, schedule, timeout_s=timeout_s))
            if served.errors:
                raise ValueError(f"{policy} live on {mix}: {served.errors[0]}"
                                 + (f" (and {len(served.errors) - 1} more)" if len(served.errors) > 1 else ""))
            for label, trace in zip(_labels(mix), (served.live, served.sim)):
                runs.append(run_figures(trace, policy, label, rate, schedule.tenants, sweep.slo_ttft_s,
                                        sweep.slo_tpot_s))
    settings = settings_of(replace(sweep, rates_rps=(rate,)))
    mixes = [m for mix in sweep.mixes for m in _labels(mix)]
    return LlmResult(settings=settings.model_copy(update={"mixes": mixes}), runs=runs)

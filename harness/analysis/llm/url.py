"""LLM URL targets: `harness run URL`, `compare URL_A URL_B` and `sweep URL` on any OpenAI-compatible server.

Each URL is probed once (`harness.live.openai.prepare`: its model, what it accepts,
its tokens per word), then driven open loop with the seeded token schedule of each
(mix, rate) in `LlmSweep` order (`harness.live.openai.drive_url`), one run at a
time (the servers share the machine with the driver). The figures are the sim's
(`run_figures`: TTFT, TPOT, ITL, E2E, goodput under the TTFT + TPOT SLO, per
tenant), each run's `url` block says how its answers were counted, and the
settings name each URL and how its prompts were sized, in place of an engine.

A compare runs A then B on the same arrivals at each rate and ranks them as the
policies' compare does (`curves_and_ratios`: B's output tokens/s at the SLO over
A's). A sweep gallops then bisects the offered rate (`search(start_rps, rel_tol)`,
given by the caller: the sweep feature's `RateSearch`) for the highest rate whose
run meets the SLO (at least `attainment` of requests within TTFT and TPOT).

Each request is abandoned at `request_timeout_s` with `URL_SLO_MULTIPLE` (twice its
SLO budget, TTFT + TPOT x tokens, at least 5 s; or the target's `timeout_s`) and counts
as unfinished: by then it has missed its SLO whatever comes, and a run ends at most that
long after its last arrival.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Callable, Protocol

import numpy as np

from harness.analysis.llm.compare import LlmSweep, curves_and_ratios, schedule_of
from harness.analysis.llm.server_view import server_figures
from harness.engine.llm_metrics import run_figures
from harness.live.llm_drive import request_timeout_s
from harness.live.openai import UrlTarget
from harness.live.openai.drive import Driven
from harness.live.openai.run import Prepared, prepare, prepare_and_drive
from harness.results.llm import LlmResult, LlmRun, LlmSearch, LlmSettings, UrlRunFigures, UrlTargetSettings

__all__ = ["MAX_SEARCH_STEPS", "OneRun", "RateSearchLike", "url_compare", "url_figures", "url_run", "url_sweep"]

MAX_SEARCH_STEPS = 10
URL_SLO_MULTIPLE = 2.0   # a URL's request is abandoned at twice its SLO budget: it has missed it by then
OnRun = Callable[[str], None]
# One step of a sweep: (target, label, prepared, mix, rate, sweep) -> its run.
OneRun = Callable[[UrlTarget, str, Prepared, str, float, LlmSweep], LlmRun]


class RateSearchLike(Protocol):
    def next_rate(self) -> float | None: ...

    def update(self, rate_rps: float, passed: bool) -> None: ...


def url_figures(driven: Driven) -> UrlRunFigures:
    """How a drive's answers were read (see `UrlRunFigures`)."""
    seqs = driven.trace.seqs
    done = [i for i, s in enumerate(seqs) if not np.isnan(s.finish_s)]
    tallies = [driven.tallies[i] for i in done]
    by_usage = sum(1 for t in tallies if t is not None and t.usage_tokens is not None)
    by_chunks = len(done) - by_usage
    counted = {(True, False): "usage", (False, True): "chunks", (True, True): "mixed"}.get((by_usage > 0,
                                                                                         by_chunks > 0))
    prompts = [(seqs[i].prompt_tokens, t.prompt_tokens) for i, t in enumerate(driven.tallies)
               if t is not None and t.prompt_tokens]
    lag = np.array([s - q.arrival_s for s, q in zip(driven.sent_s, seqs) if not np.isnan(s)], dtype=float)
    target = np.array([p[0] for p in prompts], dtype=float)
    got = np.array([p[1] for p in prompts], dtype=float)
    return UrlRunFigures(
        token_count=counted, counted_by_usage=by_usage, counted_by_chunks=by_chunks,
        chunks=sum(t.chunks for t in tallies if t is not None), tokens=sum(seqs[i].output_tokens for i in done),
        short_answers=sum(1 for i in done if seqs[i].output_tokens < driven.asked_tokens[i]),
        cut=driven.cut, timed_out=driven.timed_out, errors=driven.error_count, first_errors=list(driven.errors),
        http_status=dict(sorted(driven.http_status.items())),
        prompt_tokens_target_mean=float(target.mean()) if len(target) else None,
        prompt_tokens_mean=float(got.mean()) if len(got) else None,
        prompt_tokens_error=float(np.mean(np.abs(got - target) / target)) if len(target) else None,
        send_lag_p50_s=float(np.percentile(lag, 50)) if len(lag) else None,
        send_lag_p99_s=float(np.percentile(lag, 99)) if len(lag) else None)


def _timeout_s(target: UrlTarget, sweep: LlmSweep, output_tokens: int) -> float:
    return target.timeout_s or request_timeout_s(sweep.slo_ttft_s, sweep.slo_tpot_s, output_tokens,
                                                 URL_SLO_MULTIPLE)


def _target_settings(target: UrlTarget, label: str, prepared: Prepared, timeout_s: float) -> UrlTargetSettings:
    c = prepared.calibration
    return UrlTargetSettings(
        label=label, url=target.url, api=target.api.value, model=prepared.model, ignore_eos=prepared.ignore_eos,
        include_usage=prepared.include_usage, prompt_sizing=c.source, tokens_per_word=c.tokens_per_word,
        overhead_tokens=c.overhead_tokens, calibrated=c.measured,
        tokenizer=prepared.tokenizer.name if prepared.tokenizer is not None else None,
        api_key_env=target.api_key_env, api_key_sent=target.api_key_sent, extra_fields=sorted(target.extra),
        request_timeout_s=timeout_s, notes=list(prepared.notes))


def _one_run(target: UrlTarget, label: str, prepared: Prepared, mix: str, rate: float, sweep: LlmSweep,
             duration_s: float | None = None) -> LlmRun:
    plan = sweep if duration_s is None else replace(sweep, duration_s=duration_s)
    schedule = schedule_of(mix, rate, plan)
    timeout = _timeout_s(target, sweep, int(schedule.output_tokens.max(initial=1)))
    _, driven = prepare_and_drive(target, schedule, sweep.seed, timeout, prepared)
    run = run_figures(driven.trace, label, mix, rate, schedule.tenants, sweep.slo_ttft_s, sweep.slo_tpot_s)
    return run.model_copy(update={"url": url_figures(driven), "server_metrics": server_figures(driven)})


def _settings(sweep: LlmSweep, targets: list[UrlTargetSettings], rates: list[float] | None = None) -> LlmSettings:
    return LlmSettings(policies=list(sweep.policies), mixes=list(sweep.mixes),
                       rates_rps=rates if rates is not None else list(sweep.rates_rps), duration_s=sweep.duration_s,
                       seed=sweep.seed, slo_ttft_s=sweep.slo_ttft_s, slo_tpot_s=sweep.slo_tpot_s,
                       attainment=sweep.attainment, engine=None, targets=targets)


def _prepared(target: UrlTarget, sweep: LlmSweep) -> Prepared:
    return asyncio.run(prepare(target, sweep.seed))


def _max_output(sweep: LlmSweep) -> int:
    return max(int(schedule_of(m, sweep.rates_rps[0], sweep).output_tokens.max(initial=1)) for m in sweep.mixes)


def url_compare(targets: list[UrlTarget], sweep: LlmSweep, on_run: OnRun | None = None) -> LlmResult:
    """Every target (`sweep.policies` are their labels, in order) on every mix and rate, the same
    arrivals for each; with two or more, curves and the first against the last (`curves_and_ratios`).
    ProbeFailed when a server cannot be reached or refuses the probe."""
    if len(targets) != len(sweep.policies):
        raise ValueError("one label per target")
    prepared = [_prepared(t, sweep) for t in targets]
    runs: list[LlmRun] = []
    for mix in sweep.mixes:
        for rate in sweep.rates_rps:
            for target, label, ready in zip(targets, sweep.policies, prepared):
                if on_run:
                    on_run(f"{label} {mix} {rate:g} req/s")
                runs.append(_one_run(target, label, ready, mix, rate, sweep))
    timeout = _max_output(sweep)
    settings = _settings(sweep, [_target_settings(t, label, p, _timeout_s(t, sweep, timeout))
                                 for t, label, p in zip(targets, sweep.policies, prepared)])
    if len(targets) < 2:
        return LlmResult(settings=settings, runs=runs)
    curves, ratios = curves_and_ratios(runs, sweep)
    return LlmResult(settings=settings, runs=runs, curves=curves, ratios=ratios)


def url_run(target: UrlTarget, sweep: LlmSweep, on_run: OnRun | None = None) -> LlmResult:
    """One target at each of `sweep`'s mixes and rates (`harness run URL`: one of each)."""
    return url_compare([target], sweep, on_run)


def url_sweep(target: UrlTarget, sweep: LlmSweep, search: RateSearchLike, start_rps: float, rel_tol: float,
              on_run: Callable[[LlmRun], None] | None = None, one_run: OneRun | None = None) -> LlmResult:
    """The highest rate within the SLO on `sweep.mixes[0]`, `sweep.duration_s` of arrivals per step, at
    most MAX_SEARCH_STEPS steps; each step one run (`one_run`, default this module's drive of the
    mix's schedule), in the order run."""
    step = one_run or _one_run
    mix, label = sweep.mixes[0], sweep.policies[0]
    prepared = _prepared(target, sweep)
    runs: list[LlmRun] = []
    while (rate := search.next_rate()) is not None and len(runs) < MAX_SEARCH_STEPS:
        run = step(target, label, prepared, mix, rate, sweep)
        runs.append(run)
        search.update(rate, run.slo_attainment >= sweep.attainment)
        if on_run:
            on_run(run)
    ok = [r.rate_rps for r in runs if r.slo_attainment >= sweep.attainment]
    best = max(ok) if ok else None
    bad = [r.rate_rps for r in runs if r.slo_attainment < sweep.attainment and (best is None or r.rate_rps > best)]
    rates = sorted({r.rate_rps for r in runs})
    plan = replace(sweep, rates_rps=tuple(rates) if rates else sweep.rates_rps)
    curves, _ = curves_and_ratios(sorted(runs, key=lambda r: r.rate_rps), plan)
    timeout = _timeout_s(target, sweep, _max_output(sweep))
    return LlmResult(settings=_settings(plan, [_target_settings(target, label, prepared, timeout)]), runs=runs,
                     curves=curves, search=LlmSearch(target=label, mix=mix, start_rps=start_rps,
                                                     step_duration_s=sweep.duration_s, rel_tol=rel_tol,
                                                     max_rate_within_slo=best,
                                                     first_failing_rate=min(bad) if bad else None, steps=len(runs)))

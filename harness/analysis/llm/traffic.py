"""LLM URL runs with traffic: a data set or length mix under a load mode (`harness run URL --dataset F
--concurrency N`, `--rate R --max-concurrency N`), and a sweep over concurrency with its knee.

`traffic_figures(driven, traffic)` reads a drive's turns into the run's `traffic` block (per-turn
TTFT and context, slot waits); `traffic_run` is one run as `url.url_run` makes one (the same
`run_figures`, so TTFT, ITL, TPOT and goodput read as for any run); `concurrency_sweep` runs each
level in turn, closed loop, and finds the knee (`concurrency_knee`: the first level within 90%
of the best throughput); `traffic_url_rate_sweep` is `url.url_sweep`'s rate search with each step
sent as traffic (`--driver-procs N`: over N processes).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable

import numpy as np

from harness.analysis.llm.compare import LlmSweep
from harness.analysis.llm.url import RateSearchLike
from harness.engine.llm_metrics import run_figures, token_times
from harness.live.openai import UrlTarget
from harness.live.openai.load import Load, LoadMode, slots_bound
from harness.live.openai.run import Prepared
from harness.live.openai.sessions import SessionsDriven
from harness.live.openai.send_traffic import drive_traffic
from harness.live.openai.traffic import Traffic
from harness.results.llm import LlmResult, LlmRun
from harness.results.llm_traffic import ConcurrencyPoint, ConcurrencySweep, Pcts, TrafficFigures, TurnFigures

__all__ = ["KNEE_SHARE", "MAX_TURN_ROWS", "concurrency_knee", "concurrency_sweep", "traffic_figures", "traffic_run",
           "traffic_url_compare", "traffic_url_rate_sweep", "traffic_url_run", "traffic_url_sweep"]

MAX_TURN_ROWS = 8    # turns 1..7 one row each, then one row for every later turn
KNEE_SHARE = 0.9     # a concurrency sweep's knee: the first level within this share of the best throughput


def _pcts(values: list[float] | np.ndarray) -> Pcts:
    v = np.asarray(values, dtype=float)
    if not len(v):
        return Pcts()
    p50, p90, p99 = np.percentile(v, [50, 90, 99])
    return Pcts(mean=float(v.mean()), p50=float(p50), p90=float(p90), p99=float(p99), max=float(v.max()))


def traffic_figures(sd: SessionsDriven, traffic: Traffic) -> TrafficFigures:
    seqs, turns, load = sd.driven.trace.seqs, sd.turns, traffic.load
    context = [t.prompt_tokens if t is not None and t.prompt_tokens else r.context_tokens
               for t, r in zip(sd.driven.tallies, turns)]
    rows = []
    times = token_times(seqs)
    last = max((r.turn for r in turns), default=0)
    for k in range(1, min(last, MAX_TURN_ROWS) + 1):
        mine = [i for i, r in enumerate(turns) if (r.turn == k if k < MAX_TURN_ROWS else r.turn >= k)]
        done = [i for i in mine if not math.isnan(seqs[i].finish_s)]
        ctx = [context[i] for i in mine]
        gaps = [g for turn, gs in sd.itl_by_turn.items() if (turn == k if k < MAX_TURN_ROWS else turn >= k)
                for g in gs]
        tpot = [float(times.tpot[i]) for i in done if times.multi[i]]
        rows.append(TurnFigures(turn=k, requests=len(mine), finished=len(done),
                                ttft_s=_pcts([seqs[i].first_token_s - seqs[i].arrival_s for i in done]),
                                itl_s=_pcts(gaps), tpot_s=_pcts(tpot),
                                context_tokens_mean=float(np.mean(ctx)) if ctx else None,
                                context_tokens_max=max(ctx) if ctx else None))
    capped = load.mode is LoadMode.CAPPED
    waits = [r.slot_wait_s for r in turns]
    data = traffic.dataset
    return TrafficFigures(
        load=load.mode.value, load_label=load.label, requests_per_s=len(seqs) / sd.driven.trace.duration_s,
        finished_per_s=sum(1 for q in seqs if q.finish_s <= sd.driven.trace.duration_s) / sd.driven.trace.duration_s,
        conversations=sd.conversations, turns_sent=len(seqs), max_in_flight=sd.max_in_flight,
        context_tokens_max=max(context) if context else None, per_turn=rows,
        dataset=data.path if data is not None else None, dataset_format=data.format.value if data is not None else None,
        concurrency=load.concurrency, max_concurrency=load.max_concurrency,
        slot_wait_s=_pcts(waits) if capped else None, slots_bound=slots_bound(waits) if capped else None,
        slot_timeouts=sd.slot_timeouts, prefix_tokens=traffic.prefix_tokens, prefix_groups=traffic.prefix_groups,
        driver_procs=traffic.driver_procs, driver_executor=traffic.driver_executor)



def traffic_run(target: UrlTarget, label: str, prepared: Prepared, traffic: Traffic, sweep: LlmSweep,
                timeout_s: float) -> LlmRun:
    """One run of `traffic` on `sweep.mixes[0]` for `sweep.duration_s` s (see the module doc)."""
    from harness.analysis.llm.server_view import server_figures
    from harness.analysis.llm.url import url_figures

    mix = sweep.mixes[0]
    sd = drive_traffic(target, prepared, traffic, mix, sweep.duration_s, sweep.seed, timeout_s)
    rate = traffic.load.rate_rps or len(sd.driven.trace.seqs) / sweep.duration_s
    name = traffic.dataset.path if traffic.dataset is not None else mix
    run = run_figures(sd.driven.trace, label, name, rate, ("default",), sweep.slo_ttft_s, sweep.slo_tpot_s)
    return run.model_copy(update={"url": url_figures(sd.driven), "traffic": traffic_figures(sd, traffic),
                                  "server_metrics": server_figures(sd.driven)})


def concurrency_knee(levels: list[int], rps: list[float]) -> int | None:
    """The index of the first level whose throughput is within KNEE_SHARE of the best level's: past
    it, more users buy no more than that (N / T up to the server's C, then C / T: the knee at C).
    A flat curve: the first level (it was saturated from the start). None under 3 levels, with no
    answers, or when only the last level gets there (still rising)."""
    if len(levels) < 3 or len(rps) != len(levels):
        return None
    best = max(rps)
    if not best > 0:
        return None
    knee = next(k for k, r in enumerate(rps) if r >= KNEE_SHARE * best)
    return knee if knee < len(levels) - 1 else None


def concurrency_sweep(target: UrlTarget, label: str, prepared: Prepared, traffic: Traffic, sweep: LlmSweep,
                      levels: list[int], timeout_s: float,
                      on_run: Callable[[LlmRun], None] | None = None) -> tuple[list[LlmRun], ConcurrencySweep]:
    """Each level of `levels` a closed-loop run of `sweep.duration_s` s, in order, and the knee; over
    `traffic.driver_procs` processes, a level with fewer users over one process per user (a level of
    one user in this process: no Ray actor for it)."""
    runs, points = [], []
    for n in levels:
        procs = min(traffic.driver_procs, n)
        level = replace(traffic, load=Load(LoadMode.CONCURRENCY, concurrency=n), driver_procs=procs,
                        driver_executor=traffic.driver_executor if procs > 1 else "process")
        run = traffic_run(target, label, prepared, level, sweep, timeout_s)
        runs.append(run)
        t = run.traffic
        assert t is not None
        points.append(ConcurrencyPoint(concurrency=n, requests_per_s=t.finished_per_s, output_tok_s=run.output_tok_s,
                                       ttft_p50_s=run.ttft_s.p50, ttft_p90_s=run.ttft_s.p90, e2e_p50_s=run.e2e_s.p50,
                                       tpot_p50_s=run.tpot_s.p50, max_in_flight=t.max_in_flight))
        if on_run:
            on_run(run)
    knee = concurrency_knee(levels, [p.requests_per_s for p in points])
    block = ConcurrencySweep(target=label, mix=sweep.mixes[0], step_duration_s=sweep.duration_s, points=points,
                             knee=knee, knee_concurrency=levels[knee] if knee is not None else None)
    return runs, block


def _timeout(target: UrlTarget, sweep: LlmSweep) -> float:
    from harness.analysis.llm.url import _max_output, _timeout_s

    return _timeout_s(target, sweep, _max_output(sweep))


def traffic_url_run(target: UrlTarget, sweep: LlmSweep, traffic: Traffic) -> LlmResult:
    """`harness run URL` with a data set or a load mode: one probe, one run."""
    from harness.analysis.llm.url import _prepared, _settings, _target_settings

    prepared, label = _prepared(target, sweep), sweep.policies[0]
    timeout = _timeout(target, sweep)
    run = traffic_run(target, label, prepared, traffic, sweep, timeout)
    return LlmResult(settings=_settings(sweep, [_target_settings(target, label, prepared, timeout)], [run.rate_rps]),
                     runs=[run])


def traffic_url_sweep(target: UrlTarget, sweep: LlmSweep, traffic: Traffic, levels: list[int],
                      on_run: Callable[[LlmRun], None] | None = None) -> LlmResult:
    """`harness sweep URL --concurrency 1,2,4,...`: each level closed loop, and the knee."""
    from harness.analysis.llm.url import _prepared, _settings, _target_settings

    prepared, label = _prepared(target, sweep), sweep.policies[0]
    timeout = _timeout(target, sweep)
    runs, block = concurrency_sweep(target, label, prepared, traffic, sweep, levels, timeout, on_run)
    return LlmResult(settings=_settings(sweep, [_target_settings(target, label, prepared, timeout)],
                                        [r.rate_rps for r in runs]), runs=runs, concurrency=block)


def traffic_url_rate_sweep(target: UrlTarget, sweep: LlmSweep, traffic: Traffic, search: RateSearchLike,
                           start_rps: float, rel_tol: float, on_run: Callable[[LlmRun], None] | None = None
                           ) -> LlmResult:
    """`harness sweep URL --driver-procs N`: `url.url_sweep`'s rate search, each step `traffic` (the
    length mix, one prompt a conversation, over N processes) in an open loop at the step's rate."""
    from harness.analysis.llm.url import url_sweep

    timeout = _timeout(target, sweep)

    def step(t: UrlTarget, label: str, prepared: Prepared, mix: str, rate: float, plan: LlmSweep) -> LlmRun:
        return traffic_run(t, label, prepared, replace(traffic, load=Load(LoadMode.OPEN, rate_rps=rate)),
                           replace(plan, mixes=(mix,)), timeout)
    return url_sweep(target, sweep, search, start_rps, rel_tol, on_run, step)


def traffic_url_compare(targets: list[UrlTarget], sweep: LlmSweep, traffic: Traffic,
                        on_run: Callable[[str], None] | None = None) -> LlmResult:
    """`harness compare URL_A URL_B --dataset F`: each target on the same traffic (the same sampled
    conversations and starts for one seed) at each of `sweep.rates_rps` (open or capped; a closed
    loop or a replay of the file's times: one run each), curves and B's capacity against A's as `url.url_compare` gives."""
    from harness.analysis.llm.compare import curves_and_ratios
    from harness.analysis.llm.url import _prepared, _settings, _target_settings

    prepared = [_prepared(t, sweep) for t in targets]
    timeouts = [_timeout(t, sweep) for t in targets]
    once = traffic.load.rate_rps is None   # a closed loop or a replay of the file's times: one run each
    runs: list[LlmRun] = []
    for rate in sweep.rates_rps[:1] if once else sweep.rates_rps:
        load = traffic.load if once else replace(traffic.load, rate_rps=rate)
        for target, label, ready, timeout in zip(targets, sweep.policies, prepared, timeouts):
            if on_run:
                on_run(f"{label} {load.label}")
            runs.append(traffic_run(target, label, ready, replace(traffic, load=load), sweep, timeout))
    settings = _settings(sweep, [_target_settings(t, label, p, timeout)
                                 for t, label, p, timeout in zip(targets, sweep.policies, prepared, timeouts)],
                         [r.rate_rps for r in runs][::len(targets)])
    if len(targets) < 2:
        return LlmResult(settings=settings, runs=runs)
    curves, ratios = curves_and_ratios(runs, sweep, (runs[0].mix,))
    return LlmResult(settings=settings, runs=runs, curves=curves, ratios=ratios)

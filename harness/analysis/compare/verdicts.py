"""Each scenario's verdict: the figures its file declares, for A and B, and who did better.

A scenario file lists the figures that answer its question (`[[answers]]`, see
`workloads.answers`). For each one this module reads the value off both sides' run
summaries, and names the better side, or a tie when the two are within the figure's
noise threshold: |A - B| <= max(tie_abs, tie_rel x max(|A|, |B|)), or the file's own
`tie`. A missing value (None) is the worst possible where the figure says so (a p99 on
unanswered requests, no recovery: 'never'), or zero (no cache lookups: no hits).

Beside them, each side's share of the ceiling (`harness.analysis.compare.ceiling`). Decided
here, as data in `CompareResult.verdicts`; reports only say it.

Over several seeds (same seeds on both sides) each figure is judged by its paired
difference B - A (`harness.analysis.stats.difference`): a winner only where the
difference's 95% interval excludes 0 and its mean exceeds the noise threshold, else a
tie. A side with no value in some seed (never answered) gets no interval; the figure
is then judged as one seed's would be with that side's value None (the worst) when
it has any seed without one. The scenario's own winner is judged the same way on
goodput (`GOODPUT_TIE`), then on the p99 of all requests (`headline`).
"""

from __future__ import annotations

import math
from typing import Any

from harness.analysis.compare.ceiling import ceiling_of_run
from harness.analysis.stats import difference, interval
from harness.results.compare import GOODPUT_TIE, CompareResult, FigureVerdict, ScenarioVerdicts, Winner
from harness.results.run import RunResult, RunSummary
from harness.results.stats import Difference, Interval
from targets.config import TargetConfig
from targets.executors import cost_function
from workloads.answers import Answer, NoneMeans, select_tenants, split_tenant_key
from workloads.model import WorkloadConfig

__all__ = ["HEADLINE", "add_verdicts", "figure_value", "judge", "judge_seeds", "scenario_verdicts", "tie_threshold"]

# The figures every scenario is judged on over seeds, whatever its file declares; the
# winner reads goodput, then the p99 of all requests (as `harness.results.compare.winner`).
HEADLINE = (Answer(figure="goodput_ratio", tie=GOODPUT_TIE), Answer(figure="latency_ok_s.p99"),
            Answer(figure="latency_s.p99"))


def _tenant_value(summary: RunSummary, selector: str, leaf: str) -> float | None:
    names = select_tenants(selector, list(summary.tenants))
    members = [summary.tenants[n] for n in names]
    if not members:
        return None
    if leaf == "goodput_ratio":
        unique = sum(m.unique for m in members)
        return sum(m.within_slo for m in members) / unique if unique else None
    values = [getattr(m, leaf, None) for m in members if m.unique]
    answered = [v for v in values if v is not None]
    # A group's percentile is bounded by its worst member's; a member never answered is never.
    return None if not values or len(answered) < len(values) else max(answered)


def _gpu_s_saved(summary: RunSummary, cfg: TargetConfig | None) -> float:
    """Cache hits x one request's share of a full batch at the reference length."""
    if cfg is None or not summary.cache.hits:
        return 0.0
    per_request = cost_function(cfg)(cfg.batch_size, cfg.reference_length) / cfg.batch_size
    return summary.cache.hits * per_request


def figure_value(answer: Answer, summary: RunSummary, cfg: TargetConfig | None = None) -> float | None:
    """The answer's figure in one run's summary (`cfg`, the side's target, for derived figures)."""
    tenant = split_tenant_key(answer.figure)
    if tenant is not None:
        return _tenant_value(summary, *tenant)
    if answer.figure == "cache.gpu_s_saved":
        return _gpu_s_saved(summary, cfg)
    node: Any = summary  # a figure, after the walk
    for part in answer.figure.split("."):
        node = getattr(node, part, None)
        if node is None:
            break
    if node is None and answer.spec.none_means is NoneMeans.ZERO:
        return 0.0
    return None if node is None else float(node)


def tie_threshold(answer: Answer, a: float | None, b: float | None) -> float:
    """The noise threshold for this pair, in the figure's unit."""
    if answer.tie is not None:
        return answer.tie
    spec = answer.spec
    scale = max(abs(v) for v in (a, b, 0.0) if v is not None and math.isfinite(v))
    return max(spec.tie_abs, spec.tie_rel * scale)


def judge(answer: Answer, a: float | None, b: float | None) -> tuple[Winner, float]:
    """The better side on this figure and the threshold used (None is the worst value)."""
    tie = tie_threshold(answer, a, b)
    if a is None or b is None:
        if a is None and b is None:
            return Winner.TIE, tie
        return (Winner.B if a is None else Winner.A), tie
    if abs(a - b) <= tie + 1e-12:
        return Winner.TIE, tie
    a_better = a > b if answer.direction == "higher" else a < b
    return (Winner.A if a_better else Winner.B), tie


def judge_seeds(answer: Answer, a: list[float | None],
                b: list[float | None]) -> tuple[Winner, float, Interval, Interval, Difference]:
    """The better side over seeds (a[i], b[i] from seed i), the threshold, both sides'
    intervals and the paired difference B - A (see the module doc)."""
    a_ci, b_ci, diff = interval(a), interval(b), difference(a, b)
    if diff.mean is None or diff.n < 2:  # one seed, or a side with no value: judged as one seed's
        won, tie = judge(answer, a_ci.mean, b_ci.mean)
        return won, tie, a_ci, b_ci, diff
    tie = tie_threshold(answer, a_ci.mean, b_ci.mean)
    if not (diff.excludes(0.0) and abs(diff.mean) > tie + 1e-12):
        return Winner.TIE, tie, a_ci, b_ci, diff
    b_better = diff.mean > 0 if answer.direction == "higher" else diff.mean < 0
    return (Winner.B if b_better else Winner.A), tie, a_ci, b_ci, diff


def _config(run: RunResult | None) -> TargetConfig | None:
    return TargetConfig.model_validate(run.target_config) if run is not None else None


def _verdict(answer: Answer, **figures: object) -> FigureVerdict:
    return FigureVerdict(figure=answer.figure, label=answer.title, unit=answer.spec.unit.value,
                         better=answer.direction, none_means=answer.spec.none_means.value, **figures)


def _over_seeds(answer: Answer, seeds_a: list[RunSummary], seeds_b: list[RunSummary],
                cfg_a: TargetConfig | None, cfg_b: TargetConfig | None) -> FigureVerdict:
    won, tie, a_ci, b_ci, diff = judge_seeds(answer, [figure_value(answer, s, cfg_a) for s in seeds_a],
                                             [figure_value(answer, s, cfg_b) for s in seeds_b])
    return _verdict(answer, a=a_ci.mean, b=b_ci.mean, tie_within=tie, winner=won, a_ci=a_ci, b_ci=b_ci, diff=diff)


def _scenario_winner(headline: list[FigureVerdict]) -> Winner:
    """Goodput decides where its difference is sure and beyond GOODPUT_TIE, else the p99."""
    by_key = {v.figure: v for v in headline}
    goodput = by_key["goodput_ratio"].winner
    return goodput if goodput is not Winner.TIE else by_key["latency_s.p99"].winner


def scenario_verdicts(workload: WorkloadConfig, sa: RunSummary, sb: RunSummary,
                      ra: RunResult | None = None, rb: RunResult | None = None,
                      side_a: str = "A", side_b: str = "B", seeds_a: list[RunSummary] | None = None,
                      seeds_b: list[RunSummary] | None = None) -> ScenarioVerdicts:
    """Every figure the workload declares, judged; the ceiling of each side with a run.
    With `seeds_a`/`seeds_b` (each seed's summary, same seeds in the same order) every
    figure is judged over the seeds, and the scenario's headline and winner are added."""
    cfg_a, cfg_b = _config(ra), _config(rb)
    answers = []
    for answer in workload.answers:
        if seeds_a is not None and seeds_b is not None:
            answers.append(_over_seeds(answer, seeds_a, seeds_b, cfg_a, cfg_b))
            continue
        a, b = figure_value(answer, sa, cfg_a), figure_value(answer, sb, cfg_b)
        won, tie = judge(answer, a, b)
        answers.append(_verdict(answer, a=a, b=b, tie_within=tie, winner=won))
    ceiling = {side: ceiling_of_run(run) for side, run in ((side_a, ra), (side_b, rb))
               if run is not None and run.timeseries.get("offered_rps")}
    if seeds_a is None or seeds_b is None:
        return ScenarioVerdicts(answers=answers, ceiling=ceiling)
    headline = [_over_seeds(answer, seeds_a, seeds_b, cfg_a, cfg_b) for answer in HEADLINE]
    return ScenarioVerdicts(answers=answers, ceiling=ceiling, headline=headline, winner=_scenario_winner(headline))


def add_verdicts(result: CompareResult) -> CompareResult:
    """The compare result with `verdicts` filled in for every scenario that has runs
    (the workload as each run saved it, so rate and duration changes are judged as run)."""
    verdicts = {}
    for name in result.scenarios:
        if name not in result.runs:
            continue
        ra, rb = result.run_pair(name)
        workload = WorkloadConfig.model_validate(ra.workload_config)
        sa, sb = result.pair(name)
        seeded = result.seed_pair(name)
        seeds_a, seeds_b = (seeded[0].summaries, seeded[1].summaries) if seeded else (None, None)
        verdicts[name] = scenario_verdicts(workload, sa, sb, ra, rb, result.a, result.b, seeds_a, seeds_b)
    return result.model_copy(update={"verdicts": verdicts})

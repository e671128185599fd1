"""Each scenario's verdict: the figures its file declares, for A and B, and who did better.

A scenario file lists the figures that answer its question (`[[answers]]`, see
`workloads.answers`). For each one this module reads the value off both sides' run
summaries, and names the better side, or a tie when the two are within the figure's
noise threshold: |A - B| <= max(tie_abs, tie_rel x max(|A|, |B|)), or the file's own
`tie`. A missing value (None) is the worst possible where the figure says so (a p99 on
unanswered requests, no recovery: 'never'), or zero (no cache lookups: no hits).

Beside them, each side's share of the ceiling (`harness.analysis.ceiling`). Decided
here, as data in `CompareResult.verdicts`; reports only say it.
"""

from __future__ import annotations

import math

from harness.analysis.ceiling import ceiling_of_run
from harness.results.compare import CompareResult, FigureVerdict, ScenarioVerdicts, Winner
from harness.results.run import RunResult, RunSummary
from targets.config import TargetConfig
from targets.executors import cost_function
from workloads.answers import Answer, NoneMeans, select_tenants, split_tenant_key
from workloads.model import WorkloadConfig

__all__ = ["add_verdicts", "figure_value", "judge", "scenario_verdicts", "tie_threshold"]


def _tenant_value(summary: RunSummary, selector: str, leaf: str) -> float | None:
    names = select_tenants(selector, list(summary.tenants))
    members = [summary.tenants[n] for n in names]
    if not members:
        return None
    if leaf == "goodput_ratio":
        unique = sum(m.unique for m in members)
        return sum(m.within_slo for m in members) / unique if unique else None
    values = [getattr(m, leaf, None) for m in members if m.unique]
    # A group's percentile is bounded by its worst member's; a member never answered is never.
    return None if not values or any(v is None for v in values) else max(values)


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
    node: object = summary
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


def _config(run: RunResult | None) -> TargetConfig | None:
    return TargetConfig.model_validate(run.target_config) if run is not None else None


def scenario_verdicts(workload: WorkloadConfig, sa: RunSummary, sb: RunSummary,
                      ra: RunResult | None = None, rb: RunResult | None = None,
                      side_a: str = "A", side_b: str = "B") -> ScenarioVerdicts:
    """Every figure the workload declares, judged; the ceiling of each side with a run."""
    cfg_a, cfg_b = _config(ra), _config(rb)
    answers = []
    for answer in workload.answers:
        a, b = figure_value(answer, sa, cfg_a), figure_value(answer, sb, cfg_b)
        won, tie = judge(answer, a, b)
        answers.append(FigureVerdict(
            figure=answer.figure, label=answer.title, unit=answer.spec.unit.value,
            better=answer.direction, none_means=answer.spec.none_means.value,
            a=a, b=b, tie_within=tie, winner=won))
    ceiling = {side: ceiling_of_run(run) for side, run in ((side_a, ra), (side_b, rb))
               if run is not None and run.timeseries.get("offered_rps")}
    return ScenarioVerdicts(answers=answers, ceiling=ceiling)


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
        verdicts[name] = scenario_verdicts(workload, sa, sb, ra, rb, result.a, result.b)
    return result.model_copy(update={"verdicts": verdicts})

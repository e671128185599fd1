"""A gate's baselines: the saved results a relative check compares against, read as
{(scenario, target): summary} (or runs over seeds) from a gate, run, compare or rank result."""

from __future__ import annotations

from typing import Any, Mapping

from harness.results import CompareResult, RunResult, RunSummary
from harness.results.base import Result
from harness.results.gate import GateResult
from harness.results.rank import RankResult
from harness.results.run import SeedSet


__all__ = ["baseline_for", "baseline_seeds", "baseline_summaries"]


def baseline_summaries(result: Result) -> dict[tuple[str, str], RunSummary]:
    """{(scenario, target): summary} from a gate, run, compare or rank result."""
    out: dict[tuple[str, str], RunSummary] = {}
    if isinstance(result, RunResult):
        s = result.summary
        out[(s.workload, s.target)] = s
    elif isinstance(result, CompareResult):
        for w, sides in result.scenarios.items():
            for s in sides.values():
                out[(w, s.target)] = s
    elif isinstance(result, GateResult):
        for w, sides in result.summaries.items():
            for t, s in sides.items():
                out[(w, t)] = s
    elif isinstance(result, RankResult):
        for t, scen in result.baselines.items():
            for w, s in scen.items():
                out[(w, t)] = s
    else:
        raise ValueError(f"a baseline must be a gate, run, compare or rank result, not '{result.kind}'")
    return out


def baseline_seeds(result: Result) -> dict[tuple[str, str], SeedSet]:
    """{(scenario, target): runs over seeds} of a gate, run or compare result made with
    seeds (empty for one seed, or for a rank result)."""
    out: dict[tuple[str, str], SeedSet] = {}
    if isinstance(result, RunResult) and result.over_seeds is not None:
        out[(result.summary.workload, result.summary.target)] = result.over_seeds
    elif isinstance(result, (CompareResult, GateResult)) and result.over_seeds is not None:
        for w, sides in result.over_seeds.items():
            for label, ss in sides.items():
                out[(w, ss.summaries[0].target if isinstance(result, CompareResult) else label)] = ss
    return out


def baseline_for(baseline: Mapping[tuple[str, str], Any], scenario: str, target: str) -> Any:
    """The baseline summary (or runs over seeds) of (scenario, target), or the only one of
    that scenario."""
    if (scenario, target) in baseline:
        return baseline[(scenario, target)]
    same = [s for (w, _), s in baseline.items() if w == scenario]
    return same[0] if len(same) == 1 else None

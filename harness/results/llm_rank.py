"""The rank's LLM section: the LLM flaws (`targets.llm.flaws`), each present and fixed, ranked.

`harness.analysis.llm.rank` decides every figure: per flaw, its cost on each
mix that exposes it (`LlmFlawCost`: the symptom figure and goodput, present
and fixed, on the same arrivals), the worst of them (`mix`), how many times
worse the symptom is with the flaw present (`worse_x`: present / fixed for a
symptom the fix lowers, fixed / present for a share it raises; None where the
better side is 0 or missing), the goodput it loses as a share of the offered
rate, and whether that is beyond noise (`measurable`). `reports/rank.py` words it.
"""

from __future__ import annotations

from pydantic import Field

from harness.results.base import Figures
from harness.results.llm import LlmFlawCost

__all__ = ["LlmFlawRank", "LlmRank"]


class LlmFlawRank(Figures):
    rank: int
    id: str
    doc_item: str
    failure: str
    fix: str
    symptom: str
    mix: str                        # the exposing mix where it cost most
    worse_x: float | None
    goodput_loss: float             # (fixed - present goodput) / offered rate there, signed
    measurable: bool
    costs: list[LlmFlawCost] = Field(default_factory=list)   # one per exposing mix

    def worst(self) -> LlmFlawCost:
        """The cost on `mix`."""
        return next(c for c in self.costs if c.mix == self.mix)


class LlmRank(Figures):
    """Every LLM flaw in rank order; `duration_s` of arrivals per run, the SLO goodput counts under."""

    seed: int
    duration_s: float
    slo_ttft_s: float
    slo_tpot_s: float
    score: str
    flaws: list[LlmFlawRank]
    wall_s: float = 0.0

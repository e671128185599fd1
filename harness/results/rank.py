"""The `rank` result: the flaw ablation both ways over a suite of scenarios.

`harness.analysis.ablation` documents how each figure is measured and how the
flaws are scored; this module only says what a rank document holds. Goodput
figures are shares (0..1), latencies seconds; a None p99 is a tail never
answered, a None p99 *increase* a tail that became never answered.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from harness.results.base import Figures, Result
from harness.results.run import RunSummary

__all__ = ["NOISE_GOODPUT", "NOISE_P99_S", "FlawCost", "FlawGain", "FlawRank", "Probe", "ProbePlan", "RankResult", "RunPlan", "ScenarioCost", "measurable"]


NOISE_GOODPUT = 0.005   # goodput differences under half a point are noise (and ties in the score)
NOISE_P99_S = 0.0005     # p99 differences under half a millisecond are noise


def measurable(goodput: float, tail_s: float | None) -> bool:
    """A harm (or gain) beyond noise: half a point of goodput or 0.5 ms of p99, or a tail
    that became never answered (None)."""
    return not (goodput < NOISE_GOODPUT and tail_s is not None and tail_s < NOISE_P99_S)


class ScenarioCost(Figures):
    """One flaw on one scenario, both sides. The four tables are keyed by variant
    label: good, good+F, flawed and flawed-F (e.g. "hardened+blind-retries")."""

    goodput_loss: float                 # good's goodput minus good+F's (signed)
    p99_increase_s: float | None        # None: the flaw made the 1% tail never answered
    wasted_gpu_s: float                 # extra wasted GPU-seconds of good+F
    gain_goodput: float                 # flawed-F's goodput minus flawed's (signed)
    gain_p99_s: float | None            # None: the fix answered a tail flawed never did
    goodput: dict[str, float | None]
    p99_s: dict[str, float | None]
    amplification: dict[str, float | None]
    lost: dict[str, int]

    def cost_measurable(self) -> bool:
        return measurable(self.goodput_loss, self.p99_increase_s)

    def gain_measurable(self) -> bool:
        return measurable(self.gain_goodput, self.gain_p99_s)


class FlawCost(Figures):
    """The worst case of putting the flaw back, over the scenarios."""

    goodput_loss: float
    p99_increase_s: float | None
    wasted_gpu_s: float
    scenario: str                       # where it is most severe (goodput, then tail)
    p99_scenario: str                   # where its tail is worst

    def measurable(self) -> bool:
        return measurable(self.goodput_loss, self.p99_increase_s)


class FlawGain(Figures):
    """The best case of fixing the flaw alone in the flawed design."""

    OMIT_IF_NONE = frozenset({"note"})

    goodput_gain: float
    p99_decrease_s: float | None
    scenario: str
    note: str | None = None             # set when the flawed design does not have the flaw


class FlawRank(Figures):
    id: str
    doc_item: str
    failure: str
    fix: str
    exposed_by: list[str]
    cost: FlawCost
    gain: FlawGain
    per_scenario: dict[str, ScenarioCost]
    interaction: str | None = None      # what the interaction probes found, if any
    rank: int


class Probe(Figures):
    """One interaction probe: the flaw's marginal effect beside one partner."""

    partner: str
    goodput: float
    p99_s: float | None
    goodput_base: float | None
    goodput_with: float | None


class ProbePlan(Figures):
    flaw: str
    kind: Literal["compounding", "masked"]
    scenario: str
    partners: list[str]
    probes: list[Probe] = Field(default_factory=list)


class RunPlan(Figures):
    """How one scenario was shortened (harness.analysis.shorten.plan)."""

    full_s: float
    run_s: float
    expected_requests: float
    kept: str


class RankResult(Result):
    """Flaws in rank order; `top` the (up to) three the flawed design must fix first."""

    KIND = "rank"
    OMIT_IF_NONE = frozenset({"probe_runs", "interactions", "suite_name"})

    kind: Literal["rank"] = "rank"
    seed: int
    suite: list[str]
    slo_s: float
    good: str
    flawed: str
    good_spec: str
    flawed_spec: str
    flaws: list[FlawRank]
    top: list[str]
    baselines: dict[str, dict[str, RunSummary]]
    durations: dict[str, RunPlan]
    score: str
    runs: int
    ablation_runs: int
    flaws_in_flawed: list[str]
    probe_runs: int | None = None
    interactions: list[ProbePlan] | None = None
    wall_s: float
    suite_name: str | None = None

    def flaw(self, fid: str) -> FlawRank:
        """The entry of one flaw (KeyError when it was not measured)."""
        for f in self.flaws:
            if f.id == fid:
                return f
        raise KeyError(fid)

    def ranked(self) -> list[FlawRank]:
        return sorted(self.flaws, key=lambda f: f.rank)

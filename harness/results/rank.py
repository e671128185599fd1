"""The `rank` result: the flaw ablation both ways over a suite of scenarios.

`harness.analysis.rank.ablation` documents how each figure is measured and how the
flaws are scored; this module only says what a rank document holds. Goodput
figures are shares (0..1), latencies seconds; a None p99 is a tail never
answered, a None p99 *increase* a tail that became never answered, and
`TailChange` says which of the four ways the tail moved (so a tail that went
from never answered to a number is a change, never "unchanged").

A flaw can cost without moving goodput or p99: requests that end timed out,
failed or never resolved, requests lost in flight inside the target (then
retried), extra attempts (amplification). Those are measured too
(`unserved_increase`, `lost_increase`, `amplification_increase`) and count in
`measurable` and in the score.

`llm` is the rank's LLM section (`harness.results.llm_rank.LlmRank`): the LLM
flaws, each present and fixed on the mixes that expose it, ranked apart from
the request-level flaws (their knobs are an LLM engine's, their figures tokens'),
absent from rank documents written before it existed.
"""

from __future__ import annotations

import enum
from typing import Any, Literal

from pydantic import Field

from harness.results.base import Figures, Result
from harness.results.llm_rank import LlmRank
from harness.results.run import RunSummary
from harness.results.stats import Interval

__all__ = ["NOISE_AMPLIFICATION", "NOISE_GOODPUT", "NOISE_P99_S", "NOISE_SHARE", "FlawCost", "FlawGain",
           "FlawRank", "FlawSeeds", "KeptSpan", "Probe", "ProbePlan", "RankResult", "RunPlan", "ScenarioCost", "ShortRun",
           "TailChange", "measurable", "tail_change"]


NOISE_GOODPUT = 0.005   # goodput differences under half a point are noise (and ties in the score)
NOISE_P99_S = 0.0005     # p99 differences under half a millisecond are noise
# Requests timed out, failed or lost: a tenth of a point. Each is an error a user sees (a lost
# batch at the doc's sizes is 0.3% of an 8 s outage's requests), not a request merely late.
NOISE_SHARE = 0.001
NOISE_AMPLIFICATION = 0.005  # under half a percent more attempts per request is noise


class TailChange(str, enum.Enum):
    """How the 1% tail (p99) moved from one run to another."""

    SHIFTED = "shifted"                  # answered in both: the change is a number of seconds
    BECAME_NEVER = "became-never"        # answered before, never answered after
    BECAME_ANSWERED = "became-answered"  # never answered before, a number after: a change, not "unchanged"
    NEVER = "never"                      # never answered in either


def tail_change(before: float | None, after: float | None) -> TailChange:
    """Which way the p99 moved from `before` to `after` (None: never answered)."""
    if before is None:
        return TailChange.NEVER if after is None else TailChange.BECAME_ANSWERED
    return TailChange.BECAME_NEVER if after is None else TailChange.SHIFTED


def measurable(goodput: float, tail_s: float | None, harmed: float = 0.0, amplification: float = 0.0) -> bool:
    """A harm (or gain) beyond noise: half a point of goodput or 0.5 ms of p99, a tail that
    became never answered (None), a tenth of a point more of requests timed out, failed or
    lost (`harmed`, a share of unique requests), or half a percent more attempts per request."""
    return not (goodput < NOISE_GOODPUT and tail_s is not None and tail_s < NOISE_P99_S
                and harmed < NOISE_SHARE and amplification < NOISE_AMPLIFICATION)


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
    # Where a p99 of None lands ("shed", "timed_out", "lost", ...: harness.results.run.Outcome),
    # per variant whose p99 is not a latency: a shed request was answered, just not served.
    p99_outcome: dict[str, str] = Field(default_factory=dict)
    amplification: dict[str, float | None]
    lost: dict[str, int]                # requests lost in flight inside the target
    # Shares of unique requests, good+F minus good (signed): ended timed out, failed or never
    # resolved; lost in flight (even when a retry then answered them). Attempts per request.
    unserved: dict[str, float] = Field(default_factory=dict)  # the first share, per variant
    unserved_increase: float = 0.0
    lost_increase: float = 0.0
    amplification_increase: float = 0.0
    p99_change: TailChange = TailChange.SHIFTED       # good -> good+F
    # The gain side, flawed minus flawed-F (positive: the fix spared them).
    gain_unserved: float = 0.0
    gain_lost: float = 0.0
    gain_p99_change: TailChange = TailChange.SHIFTED  # flawed -> flawed-F

    def harm(self) -> float:
        """Requests harmed beyond goodput: the larger of the two shares (a lost request that
        then times out is counted once)."""
        return max(self.unserved_increase, self.lost_increase)

    def gain_harm(self) -> float:
        return max(self.gain_unserved, self.gain_lost)

    def cost_measurable(self) -> bool:
        return measurable(self.goodput_loss, self.p99_increase_s, self.harm(), self.amplification_increase)

    def gain_measurable(self) -> bool:
        return measurable(self.gain_goodput, self.gain_p99_s, self.gain_harm())


class FlawCost(Figures):
    """The worst case of putting the flaw back, over the scenarios."""

    goodput_loss: float
    p99_increase_s: float | None
    wasted_gpu_s: float
    scenario: str                       # where it is most severe (goodput, tail, harm, amplification)
    p99_scenario: str                   # where its tail is worst
    # How the tail moved on p99_scenario, and from what to what (None: never answered).
    p99_change: TailChange = TailChange.SHIFTED
    p99_from_s: float | None = None
    p99_to_s: float | None = None
    p99_from_outcome: str | None = None  # where a None p99 lands (ScenarioCost.p99_outcome)
    p99_to_outcome: str | None = None
    harmed: float = 0.0                 # worst ScenarioCost.harm(): requests timed out, failed or lost
    amplification_increase: float = 0.0  # worst extra attempts per request

    def measurable(self) -> bool:
        return measurable(self.goodput_loss, self.p99_increase_s, self.harmed, self.amplification_increase)


class FlawGain(Figures):
    """The best case of fixing the flaw alone in the flawed design."""

    OMIT_IF_NONE = frozenset({"note"})

    goodput_gain: float
    p99_decrease_s: float | None
    scenario: str
    note: str | None = None             # set when the flawed design does not have the flaw
    p99_change: TailChange = TailChange.SHIFTED   # flawed -> flawed-F where the tail gained most
    harm_avoided: float = 0.0           # best ScenarioCost.gain_harm()


class KeptSpan(Figures):
    """What a shortened run kept of its scenario's disturbance, seconds."""

    disturbance_s: float | None          # None: the script has none (0.0: the cut lost it)
    after_s: float | None


class ShortRun(Figures):
    """A warning, not a measurement: the runs that should expose the flaw were too short
    (or none ran) for its mechanism to show, so a small cost may be the run's, not the flaw's."""

    mechanism: str                       # what has to happen for the flaw to show, in words
    needed_disturbance_s: float | None = None
    needed_after_s: float | None = None
    runs: dict[str, KeptSpan] = Field(default_factory=dict)  # the exposing runs too short
    missing: list[str] = Field(default_factory=list)         # exposing scenarios not run at all


class FlawSeeds(Figures):
    """One flaw over seeds (`rank --seeds N`): its worst-case cost under each seed, as
    95% intervals (a p99 increase that was never answered under some seed has none), and
    how stable its place is: `places[i]` its place in the ranking of seed i alone
    (RankResult.seeds order), `held` the share of seeds whose own ranking put it at
    its final `rank`."""

    goodput_loss: Interval
    p99_increase_s: Interval
    harmed: Interval
    amplification_increase: Interval
    places: list[int]
    held: float

    @property
    def place_range(self) -> tuple[int, int]:
        return min(self.places), max(self.places)


class FlawRank(Figures):
    """One flaw, measured; `cost`, `gain` and `per_scenario` are the first seed's. With
    seeds, `over_seeds` says how its cost and place vary (absent with one seed)."""

    OMIT_IF_NONE = frozenset({"too_short", "over_seeds"})

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
    too_short: ShortRun | None = None   # the runs could not show this flaw (harness.analysis.exposure)
    over_seeds: FlawSeeds | None = None


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

    OMIT_IF_NONE = frozenset({"disturbance_s", "after_s"})

    full_s: float
    run_s: float
    expected_requests: float
    kept: str
    disturbance_s: float | None = None   # disturbance kept (None: the script has none; 0: cut off)
    after_s: float | None = None         # recovery kept after it


class RankResult(Result):
    """Flaws in rank order; `top` the (up to) three the flawed design must fix first.

    With --seeds N, `seeds` lists them (`seed` is the first, whose figures fill the
    tables), each flaw carries `over_seeds`, and the ranking orders flaws by their
    median place over the seeds' own rankings (harness.analysis.rank.ablation).
    """

    OMIT_IF_NONE = frozenset({"probe_runs", "interactions", "suite_name", "seeds", "llm"})

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
    seeds: list[int] | None = None
    llm: LlmRank | None = None

    def flaw(self, fid: str) -> FlawRank:
        """The entry of one flaw (KeyError when it was not measured)."""
        for f in self.flaws:
            if f.id == fid:
                return f
        raise KeyError(fid)

    def ranked(self) -> list[FlawRank]:
        return sorted(self.flaws, key=lambda f: f.rank)

    def summary_json(self) -> dict[str, Any]:
        """What `rank --json` prints: the whole document (the ranking is its summary)."""
        return self.to_json()

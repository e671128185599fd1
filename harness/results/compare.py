"""The `compare` result: two targets over the same workloads, same seeds, same arrivals."""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Literal

from pydantic import Field, field_serializer, field_validator

from harness.results.base import Figures, Result
from harness.results.run import RunResult, RunSummary, SeedSet
from harness.results.stats import Difference, Interval

__all__ = ["Ceiling", "CompareResult", "FigureVerdict", "PartialCompare", "ScenarioVerdicts", "Winner", "winner"]

GOODPUT_TIE = 0.005   # goodput ratios this close are a tie; p99 decides


class Winner(IntEnum):
    """Which side of a compare did better in one scenario."""

    A = -1
    TIE = 0
    B = 1


def _lower(a: float | None, b: float | None) -> Winner:
    """The side with the lower value; None means 'never' (the worst)."""
    if a is None and b is None:
        return Winner.TIE
    if a is None:
        return Winner.B
    if b is None:
        return Winner.A
    if abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b)):
        return Winner.TIE
    return Winner.A if a < b else Winner.B


def winner(sa: RunSummary, sb: RunSummary) -> Winner:
    """Goodput first (within GOODPUT_TIE is a tie), then p99 over all requests."""
    ga, gb = sa.goodput_ratio or 0.0, sb.goodput_ratio or 0.0
    if abs(ga - gb) > GOODPUT_TIE:
        return Winner.A if ga > gb else Winner.B
    return _lower(sa.latency_s.p99, sb.latency_s.p99)


_WINNER_NAMES = {Winner.A: "A", Winner.B: "B", Winner.TIE: "tie"}


class FigureVerdict(Figures):
    """One figure a scenario declares (`[[answers]]`), for A and B, and who did better.

    `a`, `b`: the values in `unit` (None: no finite value, as `none_means` says: 'worst' is
    never, e.g. a percentile on unanswered requests or no recovery; 'zero' is nothing).
    `winner` is a tie when |a - b| <= `tie_within` (the noise threshold, in `unit`).

    Over several seeds (`compare --seeds N`), `a` and `b` are the means over the seeds,
    `a_ci`/`b_ci` their 95% intervals and `diff` B - A over the same seeds (a paired
    test); `winner` is then A or B only where `diff`'s interval excludes 0 and its mean
    exceeds `tie_within`, else a tie. One seed: the three are absent.
    """

    OMIT_IF_NONE = frozenset({"a_ci", "b_ci", "diff"})

    figure: str
    label: str
    unit: str
    better: Literal["higher", "lower"]
    none_means: Literal["worst", "zero"] = "worst"
    a: float | None = None
    b: float | None = None
    tie_within: float = 0.0
    winner: Winner = Winner.TIE
    a_ci: Interval | None = None
    b_ci: Interval | None = None
    diff: Difference | None = None

    @field_serializer("winner")
    def _winner_name(self, w: Winner) -> str:
        return _WINNER_NAMES[w]

    @field_validator("winner", mode="before")
    @classmethod
    def _winner_from_name(cls, v: Any) -> Any:
        return _winner_from_name(v)


def _winner_from_name(v: Any) -> Any:
    names = {name: w for w, name in _WINNER_NAMES.items()}
    return names.get(v, v) if isinstance(v, str) else v


class Ceiling(Figures):
    """What the best possible design could do on one side's fleet (harness.analysis.compare.ceiling).

    `capacity_rps`: requests/s the fleet serves at full batches with every GPU up;
    `ceiling_ratio`: the share of unique requests any design could answer within the SLO;
    `share`: this side's goodput as a share of that ceiling (None when the ceiling is 0).
    """

    capacity_rps: float
    ceiling_ratio: float
    share: float | None = None


class ScenarioVerdicts(Figures):
    """Per scenario: each declared figure judged, and each side's share of the ceiling
    (`ceiling` keyed by side label, like `CompareResult.scenarios`).

    Over several seeds, `headline` judges goodput and the p99s with intervals, and
    `winner` is the scenario's winner from them (goodput first, then p99 over all
    requests, each only where its interval of B - A excludes 0); absent with one seed.
    """

    OMIT_IF_NONE = frozenset({"headline", "winner"})

    answers: list[FigureVerdict] = Field(default_factory=list)
    ceiling: dict[str, Ceiling] = Field(default_factory=dict)
    headline: list[FigureVerdict] | None = None
    winner: Winner | None = None

    @field_serializer("winner")
    def _winner_name(self, w: Winner | None) -> str | None:
        return None if w is None else _WINNER_NAMES[w]

    @field_validator("winner", mode="before")
    @classmethod
    def _winner_from_name(cls, v: Any) -> Any:
        return _winner_from_name(v)

    def figure(self, key: str) -> FigureVerdict | None:
        """The headline verdict of one summary key (None with one seed)."""
        return next((v for v in self.headline or [] if v.figure == key), None)


class PartialCompare(Figures):
    """What an interrupted compare (Ctrl-C, SIGTERM) covers.

    `finished`: the scenarios both sides ran to the end (every seed), in the order they
    were planned: the result's `scenarios`, `runs` and `verdicts` hold these and no other.
    `unfinished`: the planned scenarios that did not, begun or not. A scenario with only
    one side run, or a side cut short, is unfinished: it is not judged. `runs[workload][side]`
    keeps what did run of an unfinished scenario (a whole side, or the part of one that ran:
    its `summary.partial`), first seed only, for reading, never for a verdict.
    """

    finished: list[str]
    unfinished: list[str]
    runs: dict[str, dict[str, RunResult]] = Field(default_factory=dict)


class CompareResult(Result):
    """`scenarios[workload][side]` is that side's summary; `runs` the same as whole run results.

    `a` and `b` are the side labels (B's label gets " (B)" when both name one target).
    With --seeds N, `seeds` lists the seeds (`seed` is the first), `scenarios` and
    `runs` are the first seed's, and `over_seeds[workload][side]` holds every seed's
    summary and the headline intervals; both absent with one seed.

    `partial` (absent when every planned scenario finished): the compare was interrupted,
    and every other key covers only the scenarios it lists as finished.
    """

    OMIT_IF_NONE = frozenset({"live", "seeds", "over_seeds", "partial"})

    kind: Literal["compare"] = "compare"
    a: str
    b: str
    seed: int
    mode: Literal["sim", "live"] = "sim"
    scenarios: dict[str, dict[str, RunSummary]]
    runs: dict[str, dict[str, RunResult]] = Field(default_factory=dict)
    # Per scenario, what its file asks and the ceiling (harness.analysis.compare.verdicts); older
    # files have none.
    verdicts: dict[str, ScenarioVerdicts] = Field(default_factory=dict)
    live: dict[str, Any] | None = None
    seeds: list[int] | None = None
    over_seeds: dict[str, dict[str, SeedSet]] | None = None
    partial: PartialCompare | None = None

    def _sides(self, pair: dict[str, Any]) -> tuple[Any, Any]:
        # Older files keyed the sides "A" and "B".
        return (pair[self.a] if self.a in pair else pair["A"], pair[self.b] if self.b in pair else pair["B"])

    def pair(self, workload: str) -> tuple[RunSummary, RunSummary]:
        """A's and B's summaries in one scenario."""
        return self._sides(self.scenarios[workload])

    def run_pair(self, workload: str) -> tuple[RunResult, RunResult]:
        """A's and B's whole run results in one scenario (KeyError when the file has no runs)."""
        return self._sides(self.runs[workload])

    def ceiling_pair(self, workload: str) -> tuple[Ceiling | None, Ceiling | None]:
        """A's and B's share of the ceiling in one scenario (None where not computed)."""
        v = self.verdicts.get(workload)
        if v is None or not v.ceiling:
            return None, None
        return v.ceiling.get(self.a), v.ceiling.get(self.b)

    def seed_pair(self, workload: str) -> tuple[SeedSet, SeedSet] | None:
        """A's and B's runs over the seeds in one scenario (None with one seed)."""
        return None if self.over_seeds is None else self._sides(self.over_seeds[workload])

    def winners(self) -> dict[str, Winner]:
        """Per scenario, the side that did better: over seeds the verdicts' `winner`,
        with one seed `winner` of the two summaries."""
        out = {}
        for w in self.scenarios:
            v = self.verdicts.get(w)
            out[w] = v.winner if v is not None and v.winner is not None else winner(*self.pair(w))
        return out

    def summary_json(self) -> dict[str, Any]:
        """What `compare --json` prints: the summaries, no time series (with seeds: the first
        seed's summaries, the seeds, and the verdicts with their intervals; interrupted: which
        scenarios finished and which did not)."""
        doc = self.to_json()
        seeds = {"seeds": doc["seeds"]} if "seeds" in doc else {}
        partial = ({"partial": {k: doc["partial"][k] for k in ("finished", "unfinished")}}
                   if "partial" in doc else {})
        live = {"live": doc["live"]} if doc.get("live") else {}
        return {"a": doc["a"], "b": doc["b"], **seeds, **partial, "scenarios": doc["scenarios"],
                "verdicts": doc["verdicts"], **live}

"""The `review` result: the design doc's items one by one, each answered with measurements.

Every item carries the figures of its experiment, decided in the library
(`harness.analysis.review.run`): where the flaw cost most when put back into the good
design, where its fix gained most alone in the design under review, and whether
either is measurable at all. `reports/review.py` turns them into words. The
embedded `rank` is the ablation the items were read from; `capacity` and `pool`
are the Part 2 and Part 3 results, `llm` the LLM follow-up's (static against
continuous batching with the LLM flaws), each None when skipped or when it
failed: see `notes`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from harness.results.base import Figures, Result
from harness.results.capacity import CapacityResult
from harness.results.followups import AlertsAnswer, CanaryAnswer
from harness.results.llm import LlmResult
from harness.results.pool import PoolResult
from harness.results.rank import RankResult, ShortRun, TailChange

__all__ = ["Effect", "LostShift", "ReviewItem", "ReviewResult", "TailShift"]


class TailShift(Figures):
    """p99 before and after the change on one scenario (None: never answered)."""

    scenario: str
    p99_before_s: float | None
    p99_after_s: float | None
    change: TailChange = TailChange.SHIFTED
    p99_before_outcome: str | None = None   # where a None p99 lands (an Outcome value)
    p99_after_outcome: str | None = None


class LostShift(Figures):
    """Requests lost in flight before and after the change, where it changed most."""

    scenario: str
    before: int
    after: int


class Effect(Figures):
    """One change measured: `before` and `after` are variant labels ("hardened",
    "hardened+blind-retries"); figures are from `scenario`, the one where the change
    mattered most. `change` is goodput lost (cost) or gained (gain), signed, 0..1."""

    OMIT_IF_NONE = frozenset({"tail", "lost", "note", "unserved_before", "unserved_after", "p99_before_outcome",
                              "p99_after_outcome"})

    before: str
    after: str
    scenario: str
    measurable: bool                     # False: noise on every scenario measured
    change: float
    goodput_before: float | None
    goodput_after: float | None
    p99_before_s: float | None
    p99_after_s: float | None
    p99_change: TailChange = TailChange.SHIFTED  # how the tail moved on `scenario`
    p99_before_outcome: str | None = None  # where a None p99 lands: "shed", "timed_out", ... (Outcome)
    p99_after_outcome: str | None = None
    # Share of requests that ended timed out, failed or never resolved, before and after.
    unserved_before: float | None = None
    unserved_after: float | None = None
    amplification_before: float | None = None
    amplification_after: float | None = None
    wasted_gpu_s: float = 0.0            # extra wasted GPU-seconds (cost side)
    tail: TailShift | None = None        # the worst tail, when it is on another scenario
    lost: LostShift | None = None        # when the change loses (or saves) requests in flight
    note: str | None = None              # why there is nothing to measure (flaw already fixed)


class ReviewItem(Figures):
    """One item of the design doc: its flaw, the experiment, the cost and the fix's gain."""

    OMIT_IF_NONE = frozenset({"too_short"})

    item: str                            # the doc's item number(s), or "implicit"
    flaw: str                            # flaw id
    failure: str
    fix: str
    rank: int
    runs_s: dict[str, float]             # the experiment: scenario -> run length (s)
    cost: Effect                         # the flaw put back alone into the good design
    gain: Effect                         # the flaw fixed alone in the design under review
    interaction: str | None = None
    too_short: ShortRun | None = None    # the runs could not show this flaw: a warning, per flaw


class ReviewResult(Result):
    kind: Literal["review"] = "review"
    design: str
    seed: int
    quick: bool
    rank: RankResult
    capacity: CapacityResult | None = None
    pool: PoolResult | None = None
    llm: LlmResult | None = None
    alerts: AlertsAnswer | None = None   # the dashboards-and-alerts follow-up
    canary: CanaryAnswer | None = None   # the canary follow-up
    # "items" in the file; `doc_items` in Python, where `items` would shadow Figures.items.
    doc_items: list[ReviewItem] = Field(alias="items")
    notes: list[str]
    wall_s: float

    def summary_json(self) -> dict[str, Any]:
        """What `review --json` prints: the whole document (every answer of the review)."""
        return self.to_json()


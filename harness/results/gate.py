"""The `gate` result: a CI performance gate's checks, their verdicts and the runs behind them.

`harness.gate.file` documents the gate file, `harness.gate.check` how each check is
decided. `measured` and `threshold` are numbers; in the file null stands for an
infinite latency (never answered) or no value; in memory they may be inf.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from harness.results.base import Figures, Result
from harness.results.canary import CanaryResult
from harness.results.llm import LlmResult
from harness.results.run import RunSummary, SeedSet
from harness.results.stats import Difference, Interval

__all__ = ["CheckOutcome", "GateResult"]


class CheckOutcome(Figures):
    """One check of one gate, decided. `target` is "A/B" for a paired (ratio) check.

    Over seeds: `interval` is the figure's mean and 95% interval (the worst entry's, under
    a wildcard), `bound` the figure of it the check read ("mean", "lower", "upper"), and
    for a baseline check `change` the test of new against the baseline moved by the
    tolerance (one-sided, toward worse); all absent with one seed.
    """

    OMIT_IF_NONE = frozenset({"bound", "interval", "change"})

    scenario: str
    target: str
    key: str
    op: str
    check: str                      # the check as the file wrote it
    threshold: float | None
    measured: float | None          # the worst value when a wildcard matched several
    passed: bool
    note: str
    skipped: bool                   # a baseline check without --baseline (counts as passed)
    bound: str | None = None
    interval: Interval | None = None
    change: Difference | None = None

    @property
    def paired(self) -> bool:
        return "/" in self.target and "://" not in self.target   # an LLM gate's target is its URL

    @property
    def status(self) -> Literal["pass", "FAIL", "skip"]:
        return "skip" if self.skipped else ("pass" if self.passed else "FAIL")


class GateResult(Result):
    """`summaries[scenario][target]` are the runs the checks read; `durations` their lengths (s).

    `cannot_judge` lists why the verdict cannot be trusted (a run the checks or the baseline
    read is invalid: a live driver that fell behind, a target it could not reach); when it is
    not empty `passed` is False and the gate exits 2, neither pass nor fail. `results` names
    the saved run files judged instead of sim runs (`--results`), if any.
    """

    OMIT_IF_NONE = frozenset({"seeds", "over_seeds", "canary", "llm"})

    kind: Literal["gate"] = "gate"
    gate_file: str
    seed: int
    target: str | None = None       # the --target that replaced the file's target under test
    checks: list[CheckOutcome]
    passed: bool
    summaries: dict[str, dict[str, RunSummary]]
    durations: dict[str, dict[str, float]]
    wall_s: float
    cannot_judge: list[str] = Field(default_factory=list)
    results: list[str] = Field(default_factory=list)
    # With seeds: the seeds (`seed` is the first, whose runs fill `summaries`) and every
    # seed's summary per scenario and target.
    seeds: list[int] | None = None
    over_seeds: dict[str, dict[str, SeedSet]] | None = None
    # The canary rollouts the [[canary]] checks read (one result per target and seed count).
    canary: list[CanaryResult] | None = None
    # The live runs the [[llm]] checks read (harness.gate.llm): one llm result per endpoint run (or
    # the results given); a list, empty when no run was made, for an LLM gate, None for any other.
    llm: list[LlmResult] | None = None

    @property
    def verdict(self) -> Literal["pass", "fail", "cannot judge"]:
        return "cannot judge" if self.cannot_judge else ("pass" if self.passed else "fail")

    @property
    def exit_code(self) -> int:
        """0 pass, 1 a check failed, 2 cannot judge (a bad gate file also exits 2)."""
        return {"pass": 0, "fail": 1, "cannot judge": 2}[self.verdict]

    @property
    def failed(self) -> list[CheckOutcome]:
        return [c for c in self.checks if not c.passed]

    @property
    def skipped(self) -> list[CheckOutcome]:
        return [c for c in self.checks if c.skipped]

    def summary_json(self) -> dict[str, Any]:
        """What `gate --json` prints: the document without the run summaries."""
        return {k: v for k, v in self.to_json().items() if k not in ("summaries", "over_seeds", "canary", "llm")}

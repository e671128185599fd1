"""The `sweep` result: the highest offered rate a target serves within its SLO, and the curve.

Field names are the JSON keys `harness sweep --json` prints and gates read
(`max_rate_within_slo >= 800`); `harness.analysis.sweep.run` says how each is measured.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from harness.results.base import Figures, Result

__all__ = ["CapacityAgreement", "KneeSpread", "SweepRepeat", "SweepResult", "SweepStep"]


class SweepStep(Figures):
    """One offered rate, run until its end or until it had certainly failed.

    `p99_s` counts requests not answered OK as infinitely slow (None: over 1% were);
    `p99_ok_s` ranks the OK answers only. `passed`: at least `min_goodput_ratio` of
    the unique requests answered within the SLO, the step ran to its end, and (live)
    the run was valid. `ran_s` < `duration_s` when it stopped early. `try_no`: 1 for
    a rate's first try; an invalid live step is run again at the same rate (2, 3), and
    the search goes on from the first valid try.
    """

    OMIT_IF_NONE = frozenset({"send_lag_p99_s"})

    rate_rps: float
    duration_s: float
    ran_s: float
    stopped_early: bool
    unique: int
    goodput_rps: float
    goodput_ratio: float | None
    p99_s: float | None
    p99_ok_s: float | None
    shed: int
    timed_out: int
    send_lag_p99_s: float | None = None
    valid: bool = True
    invalid_reasons: list[str] = Field(default_factory=list)
    passed: bool
    why: str
    wall_s: float
    try_no: int = 1


class SweepRepeat(Figures):
    """One search of a `--repeats N` sweep: its knee and every step it ran.
    `inconclusive`: why it found no valid knee (None: it found one, or validly none)."""

    OMIT_IF_NONE = frozenset({"inconclusive"})

    repeat: int
    max_rate_within_slo: float | None
    first_failing_rate: float | None
    inconclusive: str | None = None
    steps: list[SweepStep]
    wall_s: float


class KneeSpread(Figures):
    """The knees of a `--repeats N` sweep (req/s). `median_rps` is the middle repeat's knee (the
    lower middle for an even count: a rate that was run and passed); `spread_pct` is
    (max - min) / median x 100. Over the repeats that found a knee (`found` of `repeats`)."""

    repeats: int
    found: int
    knees_rps: list[float | None]
    median_rps: float | None
    min_rps: float | None
    max_rps: float | None
    spread_pct: float | None


class CapacityAgreement(Figures):
    """Sim targets: `harness capacity`'s verdict at the swept rate on the same fleet.

    `capacity_gpus` is the smallest fleet capacity's search finds for `qps`
    (= max_rate_within_slo) with the target's knobs; agreement means it is the
    target's own fleet, i.e. the two searches put the knee at the same place.
    """

    qps: float
    target_gpus: int
    capacity_gpus: int | None
    agrees: bool


class SweepResult(Result):
    """Offered rate against goodput and p99, searched for the highest rate within the SLO."""

    OMIT_IF_NONE = frozenset({"capacity_check", "inconclusive", "knee_spread"})

    kind: Literal["sweep"] = "sweep"
    target: str
    mode: Literal["sim", "live", "url"]
    seed: int
    slo_s: float
    min_goodput_ratio: float
    rel_tol: float
    step_duration_s: float
    send_lag_limit_s: float = 0.050  # live: a step whose send lag p99.9 exceeds this is invalid
    late_share_limit: float = 0.01  # live: as is one with more than this share of its sends over 10 ms late
    max_rate_within_slo: float | None  # the knee: the highest offered rate that met the SLO (None: none did)
    first_failing_rate: float | None  # the lowest validly failing rate above the knee (None: none failed)
    steps: list[SweepStep]
    inconclusive: str | None = None  # why no valid knee was found (the search stopped on invalid steps)
    repeats: list[SweepRepeat] = Field(default_factory=list)  # --repeats N: every search (steps: the median's)
    knee_spread: KneeSpread | None = None  # --repeats N: the knees' median, min, max and spread
    capacity_check: CapacityAgreement | None = None
    notes: list[str] = Field(default_factory=list)
    wall_s: float

    @property
    def knee(self) -> SweepStep | None:
        """The passing step at the highest rate (None: no rate passed)."""
        ok = [s for s in self.steps if s.passed]
        return max(ok, key=lambda s: s.rate_rps) if ok else None

    def summary_json(self) -> dict[str, Any]:
        """What `sweep --json` prints: the whole document (a step is a handful of figures)."""
        return self.to_json()

"""The `run` result: one target under one workload, sim or live.

`RunSummary` is the contract scripts and CI gates rely on (README, "Summary
keys"); `RunResult` adds what reports need to draw the run again: the full
configs, phases, faults, events, time series and the latency CDF.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any, Literal, Mapping

from pydantic import Field, model_validator

from harness.results.base import Figures, Result
from harness.results.stats import Interval

__all__ = ["ANSWERED", "Latency", "Outcome", "OutcomeFigures", "Outcomes", "RequestCounts", "RunResult",
           "RunSummary", "SeedSet", "TenantFigures", "TAIL_ORDER", "outcome_at"]


class Outcome(StrEnum):
    """How one unique request ended: exactly one of these (docs/design.md, "Metrics")."""

    WITHIN_SLO = "within_slo"   # answered OK within the SLO
    LATE = "late"               # answered OK after the SLO
    SHED = "shed"               # refused by the target on purpose (429/503): a fast answer, not a latency
    TIMED_OUT = "timed_out"     # the client gave up (its last attempt timed out)
    FAILED = "failed"           # answered with an error
    LOST = "lost"               # never resolved by the end of the run (in flight when it ended)

    @property
    def label(self) -> str:
        return {"within_slo": "within SLO", "timed_out": "timed out"}.get(self.value, self.value)


# Answered: a response came back (OK, a refusal or an error). The rest never got one.
ANSWERED = frozenset({Outcome.WITHIN_SLO, Outcome.LATE, Outcome.SHED, Outcome.FAILED})
# Where an all-requests percentile lands: OK answers by latency, then answers that were not OK,
# then requests never answered (only those are "never").
TAIL_ORDER = (Outcome.WITHIN_SLO, Outcome.LATE, Outcome.SHED, Outcome.FAILED, Outcome.TIMED_OUT, Outcome.LOST)


def outcome_at(counts: Mapping[Outcome, int] | Mapping[str, int], q: float) -> Outcome | None:
    """The outcome of the request at quantile `q` (0 < q <= 1) when requests are ranked
    in TAIL_ORDER, with the same rank rule as the summary's percentiles (ceil(q n));
    None when there are no requests."""
    n = sum(counts.get(o, 0) for o in TAIL_ORDER)
    if n == 0:
        return None
    rank, seen = max(1, math.ceil(q * n - 1e-9)), 0
    for o in TAIL_ORDER:
        seen += counts.get(o, 0)
        if rank <= seen:
            return o
    return TAIL_ORDER[-1]


class OutcomeFigures(Figures):
    count: int
    share: float  # of the unique requests (0.0 when there were none)


class Outcomes(Figures):
    """The partition of the unique requests by how each ended: counts sum to the
    unique requests and shares to 1 (or 0 with no requests)."""

    within_slo: OutcomeFigures
    late: OutcomeFigures
    shed: OutcomeFigures
    timed_out: OutcomeFigures
    failed: OutcomeFigures
    lost: OutcomeFigures

    @classmethod
    def from_counts(cls, counts: Mapping[Outcome, int] | Mapping[str, int]) -> "Outcomes":
        """From {outcome: count} (Outcome members or their names; absent = 0)."""
        got = {o: int(counts.get(o, 0)) for o in Outcome}
        n = sum(got.values())
        return cls(**{o.value: OutcomeFigures(count=c, share=c / n if n else 0.0) for o, c in got.items()})

    def of(self, o: Outcome) -> OutcomeFigures:
        return getattr(self, o.value)

    @property
    def unique(self) -> int:
        return sum(self.of(o).count for o in Outcome)

    def counts(self) -> dict[Outcome, int]:
        return {o: self.of(o).count for o in Outcome}

    def at(self, q: float) -> Outcome | None:
        """Which outcome the all-requests quantile `q` lands on (TAIL_ORDER)."""
        return outcome_at(self.counts(), q)

    def not_ok(self) -> dict[Outcome, OutcomeFigures]:
        """The outcomes that are not an OK answer and hold any request, in display order."""
        return {o: self.of(o) for o in Outcome if o not in (Outcome.WITHIN_SLO, Outcome.LATE) and self.of(o).count}


class RequestCounts(Figures):
    """Counts of unique requests (`attempts`: every try; `lost`: attempts the target lost
    in flight on a dead GPU, whose clients then timed out: not a share of `unique`;
    `throttled`: the part of `shed` the clients refused themselves, with no attempt sent)."""

    unique: int
    attempts: int
    succeeded: int
    within_slo: int
    late: int = 0
    failed: int
    shed: int
    timed_out: int
    unfinished: int = 0
    lost: int = 0
    throttled: int = 0  # of `shed`: refused by the client's own adaptive throttle, never sent

    @model_validator(mode="before")
    @classmethod
    def _late_in_old_files(cls, data: Any) -> Any:
        if isinstance(data, dict) and "late" not in data and {"succeeded", "within_slo"} <= set(data):
            data = {**data, "late": data["succeeded"] - data["within_slo"]}
        return data

    def outcomes(self) -> Outcomes:
        """The partition these counts imply (for result files written before `outcomes`)."""
        return Outcomes.from_counts({Outcome.WITHIN_SLO: self.within_slo, Outcome.LATE: self.late,
                                     Outcome.SHED: self.shed, Outcome.TIMED_OUT: self.timed_out,
                                     Outcome.FAILED: self.failed, Outcome.LOST: self.unfinished})


class Latency(Figures):
    """Seconds. In `latency_s` (every unique request, those not answered OK counted as
    infinitely slow) None where the percentile lands on a request not answered OK
    (`Outcomes.at` says on which outcome); `latency_ok_s` ranks OK answers only."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    p999: float | None = None
    max: float | None = None


class TenantFigures(Figures):
    """One tenant's requests: `p50_s`/`p99_s` over all of them (not answered OK = infinite,
    as `latency_s`), `p50_ok_s`/`p99_ok_s` over those answered OK (as `latency_ok_s`)."""

    OMIT_IF_NONE = frozenset({"outcomes"})

    unique: int
    within_slo: int
    goodput_ratio: float
    p50_s: float | None = None
    p99_s: float | None = None
    p50_ok_s: float | None = None
    p99_ok_s: float | None = None
    outcomes: Outcomes | None = None


class WastedBreakdown(Figures):
    duplicate: float = 0.0
    abandoned: float = 0.0
    padding: float = 0.0


class GpuFigures(Figures):
    count: int
    utilization: float
    batch_fill: float
    batches: int
    wasted_gpu_s: float
    wasted_breakdown_s: WastedBreakdown
    redispatched: int = 0


class CacheFigures(Figures):
    mode: str
    lookups: int = 0
    hits: int = 0
    hit_rate: float | None = None
    bypassed: int = 0


class ServerFigures(Figures):
    shed_tenant: int = 0
    shed_overload: int = 0
    expired_dropped: int = 0
    dedupe_coalesced: int = 0
    dedupe_replayed: int = 0


class Recovery(Figures):
    disturbance_end_s: float | None = None
    recovered_after_s: float | None = None
    threshold: float | None = None


class RunSummary(Figures):
    """The figures of one run; `live` holds the driver's and host's figures in live mode."""

    OMIT_IF_NONE = frozenset({"live"})

    target: str
    workload: str
    mode: Literal["sim", "live"]
    seed: int
    slo_s: float
    duration_s: float
    offered_rps: float
    goodput_rps: float
    throughput_rps: float
    goodput_ratio: float | None = None
    amplification: float | None = None
    requests: RequestCounts
    outcomes: Outcomes
    attempt_status: dict[str, int] = Field(default_factory=dict)
    latency_s: Latency
    latency_ok_s: Latency
    attempt_latency_ok_s: Latency
    tenants: dict[str, TenantFigures] = Field(default_factory=dict)
    fairness_jain: float | None = None
    gpu: GpuFigures
    cache: CacheFigures
    server: ServerFigures = Field(default_factory=ServerFigures)
    recovery: Recovery = Field(default_factory=Recovery)
    flaws: list[str] = Field(default_factory=list)
    end_s: float
    wall_s: float
    partial: bool = False
    # Seconds of the schedule the figures cover: duration_s, or less when interrupted
    # (then only the requests scheduled before the interruption are counted).
    covered_s: float | None = None
    # False when the figures cannot be trusted as the target's (a live driver that fell
    # behind, a target it could not reach); `invalid_reasons` says why, one line each.
    valid: bool = True
    invalid_reasons: list[str] = Field(default_factory=list)
    live: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _outcomes_in_old_files(cls, data: Any) -> Any:
        if isinstance(data, dict) and "outcomes" not in data and isinstance(data.get("requests"), dict):
            data = {**data, "outcomes": RequestCounts.model_validate(data["requests"]).outcomes()}
        return data


class SeedSet(Figures):
    """One target under one workload over several seeds (`harness.analysis.seeds`): the seeds,
    each seed's summary in that order, and the headline figures' means and 95% intervals
    (`figures`, keyed by summary key: "goodput_ratio", "latency_s.p99", ...)."""

    seeds: list[int]
    summaries: list[RunSummary]
    figures: dict[str, Interval] = Field(default_factory=dict)

    def values(self, key: str) -> list[float | None]:
        """The figure `key` (a dotted summary key) of every seed, None where it has no value."""
        out: list[float | None] = []
        for s in self.summaries:
            node: Any = s
            for part in key.split("."):
                node = node.get(part) if isinstance(node, dict) else getattr(node, part, None)
                if node is None:
                    break
            out.append(None if node is None or isinstance(node, (dict, Figures)) else float(node))
        return out


class RunResult(Result):
    """One run; `summary` and the rest are the first seed's. With --seeds N, `over_seeds`
    holds every seed's summary and each headline figure's interval (absent with one seed,
    so a one-seed run file is what it always was)."""

    OMIT_IF_NONE = frozenset({"over_seeds"})

    kind: Literal["run"] = "run"
    summary: RunSummary
    target_config: dict[str, Any]
    workload_config: dict[str, Any]
    seed: int
    mode: Literal["sim", "live"]
    phases: list[dict[str, Any]] = Field(default_factory=list)
    faults: list[dict[str, Any]] = Field(default_factory=list)
    events: list[dict[str, Any]] = Field(default_factory=list)
    timeseries: dict[str, Any] = Field(default_factory=dict)
    latency_cdf: dict[str, Any] = Field(default_factory=dict)
    over_seeds: SeedSet | None = None

    def summary_json(self) -> dict[str, Any]:
        """What `run --json` prints: the summary's keys at the top level, and with seeds
        `over_seeds` (each figure's interval, without every seed's summary)."""
        doc = self.to_json()
        seeded = ({"over_seeds": {k: v for k, v in doc["over_seeds"].items() if k != "summaries"}}
                  if "over_seeds" in doc else {})
        return {**doc["summary"], **seeded}

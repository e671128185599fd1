"""The `fleet` result: fleets of LLM replicas behind routers, on the same days of conversations.

Each `FleetRun` is one fleet (router and replicas) on one day (`workloads.llm_days`)
at one offered rate: the client's TTFT, TPOT and E2E over finished requests, TTFT by
turn (a conversation's later turns are where a prefix cache pays), goodput under the
TTFT + TPOT SLO, the prefix cache's figures (hit rate by prompt tokens, tokens saved,
evictions), and the load per replica (requests, busy share, TTFT p99, hit rate).
`lost` are requests a lost replica held. A live compare (`settings.mode` "live") holds each
fleet's live run and the sim of the same schedule, with the front end and the router's
own cost each carried. `FleetResult` holds every run; for two
fleets, per day, the verdicts on the headline figures (`FigureVerdict`, as the
request-level compare judges them); for any number, `ranking`: the fleets by
goodput over the days, with how much each trails the first. Decided here; the
view (`reports/fleet.py`) only words it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from harness.results.base import Figures, Result
from harness.results.compare import FigureVerdict
from harness.results.llm import EngineSettings, Pcts

__all__ = ["FleetRanked", "FleetResult", "FleetRun", "FleetSettings", "ReplicaFigures"]


class ReplicaFigures(Figures):
    """One replica over the run: requests routed to it, busy share of the run, its requests' TTFT p99."""

    requests: int
    busy_share: float
    ttft_p99_s: float | None = None
    prefix_hit_rate: float | None = None
    evictions: int = 0
    preemptions: int = 0
    alive: bool = True


class FleetRun(Figures):
    fleet: str
    router: str
    day: str
    rate_rps: float
    replicas: int
    duration_s: float
    requests: int
    finished: int
    rejected: int
    lost: int
    unfinished: int
    ttft_s: Pcts
    tpot_s: Pcts
    e2e_s: Pcts
    ttft_p50_by_turn_s: dict[str, float | None] = Field(default_factory=dict)
    ttft_p99_by_turn_s: dict[str, float | None] = Field(default_factory=dict)
    goodput_rps: float
    slo_attainment: float
    output_tok_s: float
    prefix_hit_rate: float | None = None   # prompt tokens found cached / prompt tokens, over every replica
    tokens_saved: int = 0                  # prompt tokens not prefilled thanks to the cache
    prompt_tokens: int = 0
    evictions: int = 0
    preemptions: int = 0
    spills: int = 0                        # requests a load bound sent off their preferred replica
    max_replica_ttft_p99_s: float | None = None
    load_imbalance: float | None = None    # most requests on one alive replica / mean over alive replicas
    front_in_s: float | None = None        # scheduled start to the replica's engine (median live; sim: applied)
    front_out_s: float | None = None       # a first token from the engine to the client (likewise)
    router_in_s: float | None = None       # of which the router's own cost, measured live by probes
    router_out_s: float | None = None      # and its relay of the answer back (s)
    step_slowdown: float | None = None     # live: median of the replicas' step wall time / the sim cost's for it
    per_replica: list[ReplicaFigures] = Field(default_factory=list)


class FleetSettings(Figures):
    fleets: list[str]
    days: list[str]
    rate_rps: float | None        # None: each day's own rate
    duration_s: float
    seed: int
    slo_ttft_s: float
    slo_tpot_s: float
    engine: EngineSettings
    mode: Literal["sim", "live"] = "sim"   # live: days "<day> live" and "<day> sim" (the sim of the same schedule)


class FleetRanked(Figures):
    """One fleet's place: goodput summed over the days, its share of the best, TTFT p99's worst day."""

    fleet: str
    goodput_rps: float
    of_best: float | None
    prefix_hit_rate: float | None
    worst_ttft_p99_s: float | None


class FleetResult(Result):
    kind: Literal["fleet"] = "fleet"
    settings: FleetSettings
    runs: list[FleetRun] = Field(default_factory=list)
    verdicts: dict[str, list[FigureVerdict]] = Field(default_factory=dict)
    ranking: list[FleetRanked] = Field(default_factory=list)

    def summary_json(self) -> dict[str, Any]:
        """What `--json` prints: everything but the per-replica blocks and versions."""
        doc = self.to_json()
        doc.pop("versions", None)
        for run in doc["runs"]:
            run.pop("per_replica", None)
        return doc

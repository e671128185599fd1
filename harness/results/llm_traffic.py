"""The traffic parts of an `llm` run against a URL: its load mode, data set, turns and slots.

`TrafficFigures` (a run's `traffic` block): how the requests were let go (`load`: open,
replay, concurrency or capped; `load_label` in words), the data set sent (path and format;
None: a length mix), how many conversations started and turns were sent, the most requests the
client had in flight, per turn number the TTFT and the context reached (`TurnFigures`: turn 1
against later turns, which carry the earlier answers), and under a cap the wait for a slot
(`slot_wait_s`, the client's, apart from the server's latency) and whether the slots were the
bound (`slots_bound`: at least 10% of requests waited over 1 ms for one).

`ConcurrencySweep` (a result's `concurrency`): `harness sweep URL --concurrency 1,2,4,...`, each
level's achieved request and token rates and latencies, and the knee (`knee`: the index of the
first level whose answered requests/s is within 90% of the best level's: past it more users buy
little; None under 3 levels or while the curve still rises at the last level).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from harness.results.base import Figures

__all__ = ["ConcurrencyPoint", "ConcurrencySweep", "Pcts", "TrafficFigures", "TurnFigures"]


class Pcts(Figures):
    """Percentiles (s) over finished requests (ITL: over tokens); None where there are none. One
    class for the run's figures (`harness.results.llm`, which imports it from here) and a turn's."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None


class TurnFigures(Figures):
    turn: int                     # 1-based; the last row holds every turn from `turn` on when there are many
    requests: int
    finished: int
    ttft_s: Pcts
    itl_s: Pcts = Field(default_factory=Pcts)    # the gaps between this turn's tokens
    tpot_s: Pcts = Field(default_factory=Pcts)   # per request: (E2E - TTFT) / (output tokens - 1)
    context_tokens_mean: float | None = None   # prompt tokens sent (the server's usage where it sent one)
    context_tokens_max: int | None = None


class TrafficFigures(Figures):
    OMIT_IF_NONE = frozenset({"dataset", "dataset_format", "slot_wait_s", "slots_bound", "concurrency",
                              "max_concurrency"})

    load: Literal["open", "replay", "concurrency", "capped"]
    load_label: str
    requests_per_s: float                     # requests sent per second of the run's window
    finished_per_s: float = 0.0               # requests answered within the window, per second of it
    conversations: int
    turns_sent: int
    max_in_flight: int
    context_tokens_max: int | None = None
    per_turn: list[TurnFigures] = Field(default_factory=list)
    dataset: str | None = None
    dataset_format: str | None = None
    concurrency: int | None = None
    max_concurrency: int | None = None
    slot_wait_s: Pcts | None = None
    slots_bound: bool | None = None
    slot_timeouts: int = 0
    prefix_tokens: int = 0        # a shared system prompt this long opened each conversation (0: none)
    prefix_groups: int = 1        # ... one of this many
    driver_procs: int = 1         # driver processes the conversations were split over (max_in_flight: their sum)
    driver_executor: str = "process"   # ...spawned on this machine, or Ray actors ("ray")


class ConcurrencyPoint(Figures):
    concurrency: int
    requests_per_s: float         # answered within the level's window, per second of it
    output_tok_s: float
    ttft_p50_s: float | None
    ttft_p90_s: float | None
    e2e_p50_s: float | None
    tpot_p50_s: float | None
    max_in_flight: int


class ConcurrencySweep(Figures):
    target: str
    mix: str
    step_duration_s: float
    points: list[ConcurrencyPoint]
    knee: int | None = None
    knee_concurrency: int | None = None

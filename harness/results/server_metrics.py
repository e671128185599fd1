"""The serving engine's own view during one LLM URL run (`--server-metrics`): a block of `LlmRun`.

`ServerMetricsFigures` holds one entry per scrape of the target's Prometheus `/metrics`
(`harness.live.openai.server_metrics`), at `t_s` seconds since the run's origin (the
clock its requests' TTFTs are measured from): the engine's running and waiting
requests, KV-cache usage (0-1), prefix-cache hit rate over the interval, preemptions
since the first scrape, each None where the server exports no such series; and, at
the same instants, what the client had in flight and the TTFT p50 of the requests the
client started in the second before (`client_ttft_p50_s`). A scrape that failed is
counted (`failures`, the first one's text in `first_error`), never fatal to the run.
"""

from __future__ import annotations

from pydantic import Field

from harness.results.base import Figures

__all__ = ["ServerMetricsFigures"]


class ServerMetricsFigures(Figures):
    url: str
    interval_s: float
    flavor: str | None = None          # whose metric names matched: vllm, sglang, tgi
    scrapes: int
    failures: int = 0
    first_error: str | None = None
    t_s: list[float] = Field(default_factory=list)
    running: list[float | None] = Field(default_factory=list)
    waiting: list[float | None] = Field(default_factory=list)
    kv_cache_usage: list[float | None] = Field(default_factory=list)
    prefix_cache_hit_rate: list[float | None] = Field(default_factory=list)
    preemptions: list[float | None] = Field(default_factory=list)
    client_in_flight: list[int] = Field(default_factory=list)
    client_ttft_p50_s: list[float | None] = Field(default_factory=list)
    running_max: float | None = None
    waiting_max: float | None = None
    client_in_flight_max: int | None = None

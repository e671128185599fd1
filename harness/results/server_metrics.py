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
    url: str                           # the /metrics scraped
    interval_s: float                  # between scrapes
    flavor: str | None = None          # whose metric names matched: vllm, sglang, tgi
    scrapes: int                       # that answered; each one entry of the lists below
    failures: int = 0                  # scrapes that failed (no answer in time, not 200, not metrics)
    first_error: str | None = None     # the first failure's text
    t_s: list[float] = Field(default_factory=list)                     # each scrape, from the run's origin
    running: list[float | None] = Field(default_factory=list)          # requests the engine runs
    waiting: list[float | None] = Field(default_factory=list)          # requests it holds queued
    kv_cache_usage: list[float | None] = Field(default_factory=list)   # share of KV cache held, 0-1
    prefix_cache_hit_rate: list[float | None] = Field(default_factory=list)   # over the interval before
    preemptions: list[float | None] = Field(default_factory=list)      # since the first scrape
    client_in_flight: list[int] = Field(default_factory=list)          # the run's requests open during it
    client_ttft_p50_s: list[float | None] = Field(default_factory=list)   # of those sent in the interval before
    running_max: float | None = None
    waiting_max: float | None = None
    client_in_flight_max: int | None = None

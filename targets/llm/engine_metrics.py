"""The live LLM engine's state as Prometheus metrics under vLLM's names, read at scrape time.

`EngineCollector(engine)` yields, whenever `/metrics` is scraped, what vLLM's server
exports for the same things, so a client that reads vLLM reads this server unchanged:
`vllm:num_requests_running` and `vllm:num_requests_waiting` (gauges: the scheduler's
running sequences, and those queued or held by tenant limits), `vllm:kv_cache_usage_perc`
(the share of KV blocks held, 0-1), `vllm:prefix_cache_queries` and `vllm:prefix_cache_hits`
(counters of prompt tokens looked up in the prefix cache and found there; only with
prefix caching on, as vLLM exports them only then) and `vllm:num_preemptions` (a counter).
Each carries vLLM's `model_name` label. The engine needs no hook: everything is read from
its scheduler when scraped.
"""

from __future__ import annotations

from typing import Any, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["EngineCollector", "engine_state"]


def _innermost(scheduler: Any) -> Any:
    """The scheduler under any wrapper (tenant admission keeps it as `inner`)."""
    while hasattr(scheduler, "inner"):
        scheduler = scheduler.inner
    return scheduler


def engine_state(scheduler: Any) -> dict[str, float | None]:
    """running, waiting, kv_cache_usage (0-1, None without a paged cache), prefix_queries and prefix_hits
    (prompt tokens; None without a prefix cache), preemptions (None when the policy never preempts)."""
    inner = _innermost(scheduler)
    running = scheduler.running()
    kv = getattr(inner, "kv", None)
    prefix = getattr(inner, "prefix", None)
    preemptions = getattr(inner, "preemptions", None)
    return {"running": float(running), "waiting": float(max(0, scheduler.pending() - running)),
            "kv_cache_usage": kv.used / kv.total if kv is not None else None,
            "prefix_queries": float(prefix.stats.prompt_tokens) if prefix is not None else None,
            "prefix_hits": float(prefix.stats.hit_tokens) if prefix is not None else None,
            "preemptions": float(preemptions) if preemptions is not None else None}


class EngineCollector(Collector):
    def __init__(self, scheduler: Any, model: str) -> None:
        self.scheduler, self.model = scheduler, model

    def collect(self) -> Iterator[Metric]:
        state = engine_state(self.scheduler)
        labels = ["model_name"]

        def gauge(name: str, doc: str, value: float | None) -> Iterator[Metric]:
            if value is not None:
                g = GaugeMetricFamily(name, doc, labels=labels)
                g.add_metric([self.model], value)
                yield g

        def counter(name: str, doc: str, value: float | None) -> Iterator[Metric]:
            if value is not None:
                c = CounterMetricFamily(name, doc, labels=labels)
                c.add_metric([self.model], value)
                yield c

        yield from gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
                         state["running"])
        yield from gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", state["waiting"])
        yield from gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
                         state["kv_cache_usage"])
        yield from counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
                           state["prefix_queries"])
        yield from counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
                           state["prefix_hits"])
        yield from counter("vllm:num_preemptions", "Cumulative number of preemptions from the engine.",
                           state["preemptions"])

"""A serving engine's own view, read from its Prometheus `/metrics`: one vocabulary for vLLM, SGLang, TGI.

`read_scrape(text)` parses one text exposition with prometheus_client's parser
(`text_string_to_metric_families`) and returns a `Scrape`: the engine's running and
waiting requests, its KV-cache usage (0-1), its prefix cache's hits and queries (or a
hit rate it reports itself) and its preemptions so far, whichever names it uses
(`NAMES`: vLLM v0 and v1, SGLang, TGI; a name a server does not export stays None).
Samples of one name over several label sets (one per model or engine) are summed,
fractions averaged. `flavor` names the engine whose names matched.

`ScrapeSeries` keeps the scrapes of one run in order with their times (s since the
drive's origin) and the failures, and `figures(...)` turns them into the result's
`ServerMetricsFigures`: per scrape, the engine's series beside what the client had in
flight at that instant, so a TTFT spike can be set beside the queue that caused it.
The prefix-cache hit rate of a scrape is hits / queries over the interval since the
previous one (counters), else the rate the server reports. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["NAMES", "Scrape", "ScrapeSeries", "in_flight_at", "read_scrape"]

# vocabulary word -> (engine, exported sample name), first match per engine wins. Counters are named
# by their sample (`_total`), as the parser yields them.
NAMES: dict[str, tuple[tuple[str, str], ...]] = {
    "running": (("vllm", "vllm:num_requests_running"), ("sglang", "sglang:num_running_reqs"),
                ("tgi", "tgi_batch_current_size")),
    "waiting": (("vllm", "vllm:num_requests_waiting"), ("sglang", "sglang:num_queue_reqs"),
                ("tgi", "tgi_queue_size")),
    "kv_cache_usage": (("vllm", "vllm:kv_cache_usage_perc"), ("vllm", "vllm:gpu_cache_usage_perc"),
                       ("sglang", "sglang:token_usage")),
    "prefix_cache_hits": (("vllm", "vllm:prefix_cache_hits_total"), ("vllm", "vllm:gpu_prefix_cache_hits_total")),
    "prefix_cache_queries": (("vllm", "vllm:prefix_cache_queries_total"),
                             ("vllm", "vllm:gpu_prefix_cache_queries_total")),
    "prefix_cache_hit_rate": (("vllm", "vllm:gpu_prefix_cache_hit_rate"), ("sglang", "sglang:cache_hit_rate")),
    "preemptions": (("vllm", "vllm:num_preemptions_total"), ("sglang", "sglang:num_retracted_reqs_total")),
}
_FRACTIONS = {"kv_cache_usage", "prefix_cache_hit_rate"}


@dataclass(frozen=True)
class Scrape:
    """One reading of the engine. None: the server exports no such series."""

    running: float | None = None
    waiting: float | None = None
    kv_cache_usage: float | None = None
    prefix_cache_hits: float | None = None
    prefix_cache_queries: float | None = None
    prefix_cache_hit_rate: float | None = None
    preemptions: float | None = None
    flavor: str | None = None        # "vllm", "sglang", "tgi", or None: none of the names matched


def read_scrape(text: str) -> Scrape:
    """`text` (a Prometheus text exposition) in the common vocabulary; ValueError when it does not parse."""
    sums: dict[str, list[float]] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                sums.setdefault(sample.name, []).append(float(sample.value))
    except (ValueError, TypeError, IndexError) as exc:  # the parser's errors on text that is not an exposition
        raise ValueError(f"not a Prometheus text exposition: {exc}") from None
    found: dict[str, float] = {}
    flavors: list[str] = []
    for word, names in NAMES.items():
        for engine, name in names:
            values = sums.get(name)
            if values:
                found[word] = sum(values) / len(values) if word in _FRACTIONS else sum(values)
                flavors.append(engine)
                break
    flavor = max(set(flavors), key=flavors.count) if flavors else None
    return Scrape(**found, flavor=flavor)


@dataclass
class ScrapeSeries:
    """A run's scrapes in order: (s since the drive's origin when asked, the scrape), how long each
    took to answer (`took_s`: the server read its state somewhere in that span), and the failures."""

    url: str
    interval_s: float
    points: list[tuple[float, Scrape]] = field(default_factory=list)
    failures: int = 0
    first_error: str | None = None
    took_s: list[float] = field(default_factory=list)

    def add(self, t_s: float, scrape: Scrape, took_s: float = 0.0) -> None:
        self.points.append((t_s, scrape))
        self.took_s.append(took_s)

    def fail(self, error: str) -> None:
        self.failures += 1
        if self.first_error is None:
            self.first_error = error

    def shifted(self, origin_s: float) -> "ScrapeSeries":
        """The same with times taken from `origin_s` (the scrapes' clock read at the drive's origin)."""
        return ScrapeSeries(self.url, self.interval_s, [(t - origin_s, s) for t, s in self.points], self.failures,
                            self.first_error, list(self.took_s))

    def hit_rates(self) -> list[float | None]:
        """Each scrape's prefix-cache hit rate: hits / queries since the previous scrape when the server
        exports the counters (None on the first scrape, or when no query came), else its own rate."""
        rates: list[float | None] = []
        prev: Scrape | None = None
        for _, s in self.points:
            if s.prefix_cache_hits is not None and s.prefix_cache_queries is not None:
                if prev is None or prev.prefix_cache_hits is None or prev.prefix_cache_queries is None:
                    rates.append(None)
                else:
                    queries = s.prefix_cache_queries - prev.prefix_cache_queries
                    rates.append((s.prefix_cache_hits - prev.prefix_cache_hits) / queries if queries > 0 else None)
            else:
                rates.append(s.prefix_cache_hit_rate)
            prev = s
        return rates

    def preemptions(self) -> list[float | None]:
        """Preemptions since the first scrape (None where the server exports none)."""
        base = next((s.preemptions for _, s in self.points if s.preemptions is not None), None)
        return [None if s.preemptions is None or base is None else s.preemptions - base for _, s in self.points]


def in_flight_at(spans_s: Iterable[tuple[float, float]], starts_s: list[float], ends_s: list[float]) -> list[int]:
    """How many of the client's requests were in flight (started, not ended) at some instant of each
    span (a scrape from asked to answered): as many as the server can have seen of them while it
    read its state, whenever in the span that was."""
    return [sum(1 for a, b in zip(starts_s, ends_s) if a <= hi and b > lo) for lo, hi in spans_s]

"""The server's own series of one URL run set beside the client's (`--server-metrics`).

`server_figures(driven)` reads the scrapes a drive kept (`Driven.server`, times from the
drive's origin) into `ServerMetricsFigures`: per scrape, the engine's series in the common
vocabulary and, over the span the scrape took, the client's requests in flight (sent, answer
not ended, whatever the outcome: all the server can have counted) and the TTFT p50 of the requests sent in the scrape interval
before it (None where none of them got a first token).
"""

from __future__ import annotations

import math

import numpy as np

from harness.live.openai.drive import Driven
from harness.live.openai.server_metrics import in_flight_at
from harness.results.server_metrics import ServerMetricsFigures

__all__ = ["server_figures"]


def _max(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return max(got) if got else None


def server_figures(driven: Driven) -> ServerMetricsFigures | None:
    """None when the drive scraped nothing (no --server-metrics)."""
    series = driven.server
    if series is None:
        return None
    seqs = driven.trace.seqs
    times = [t for t, _ in series.points]
    starts = [s.arrival_s for s in seqs]
    end_s = driven.trace.end_s
    ends = [e if not math.isnan(e) else end_s for e in driven.ended_s]
    ttft_p50: list[float | None] = []
    for t in times:
        got = [s.first_token_s - s.arrival_s for s in seqs
               if t - series.interval_s < s.arrival_s <= t and not math.isnan(s.first_token_s)]
        ttft_p50.append(float(np.median(got)) if got else None)
    running = [s.running for _, s in series.points]
    waiting = [s.waiting for _, s in series.points]
    flight = in_flight_at([(t, t + took) for t, took in zip(times, series.took_s)], starts, ends)
    flavors = [s.flavor for _, s in series.points if s.flavor]
    return ServerMetricsFigures(
        url=series.url, interval_s=series.interval_s, flavor=flavors[0] if flavors else None,
        scrapes=len(series.points), failures=series.failures, first_error=series.first_error,
        t_s=[round(t, 4) for t in times], running=running, waiting=waiting,
        kv_cache_usage=[s.kv_cache_usage for _, s in series.points], prefix_cache_hit_rate=series.hit_rates(),
        preemptions=series.preemptions(), client_in_flight=flight, client_ttft_p50_s=ttft_p50,
        running_max=_max(running), waiting_max=_max(waiting), client_in_flight_max=max(flight) if flight else None)

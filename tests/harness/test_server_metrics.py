"""Reading an engine's Prometheus text into one vocabulary (vLLM, SGLang, TGI), and a run's series."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.live.openai.server_metrics import Scrape, ScrapeSeries, in_flight_at, read_scrape

VLLM = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 7.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.25
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{model_name="m"} 1000.0
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{model_name="m"} 250.0
# TYPE vllm:num_preemptions counter
vllm:num_preemptions_total{model_name="m"} 4.0
"""
VLLM_V0 = """\
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.9
# TYPE vllm:gpu_prefix_cache_hit_rate gauge
vllm:gpu_prefix_cache_hit_rate{model_name="m"} 0.3
"""
SGLANG = """\
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m"} 12.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m"} 1.0
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m"} 0.28
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="m"} 0.0075
"""
TGI = """\
# TYPE tgi_queue_size gauge
tgi_queue_size 5
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 8
"""


def test_vllm_sums_engines_averages_fractions_and_reads_counters_by_their_samples():
    s = read_scrape(VLLM)
    assert (s.running, s.waiting, s.kv_cache_usage) == (5.0, 7.0, 0.375)
    assert (s.prefix_cache_queries, s.prefix_cache_hits, s.preemptions, s.flavor) == (1000.0, 250.0, 4.0, "vllm")


@pytest.mark.parametrize("text, want", [
    (VLLM_V0, Scrape(kv_cache_usage=0.9, prefix_cache_hit_rate=0.3, flavor="vllm")),
    (SGLANG, Scrape(running=12.0, waiting=1.0, kv_cache_usage=0.28, prefix_cache_hit_rate=0.0075, flavor="sglang")),
    (TGI, Scrape(running=8.0, waiting=5.0, flavor="tgi")),
    ("# TYPE other gauge\nother 1\n", Scrape()),
])
def test_each_engine_maps_to_the_same_words(text, want):
    assert read_scrape(text) == want


def test_text_that_is_not_an_exposition_is_a_value_error():
    with pytest.raises(ValueError, match="not a Prometheus text exposition"):
        read_scrape("<html>this is { not metrics</html>\n")


def test_the_hit_rate_is_over_each_interval_and_preemptions_count_from_the_first_scrape():
    series = ScrapeSeries("u", 1.0)
    for t, (q, h, p) in enumerate([(100, 10, 2), (300, 110, 2), (300, 110, 5)]):
        series.add(float(t), Scrape(prefix_cache_queries=q, prefix_cache_hits=h, preemptions=p))
    assert series.hit_rates() == [None, 0.5, None]     # no query in the last interval: no rate
    assert series.preemptions() == [0, 0, 3]
    assert [t for t, _ in series.shifted(0.5).points] == [-0.5, 0.5, 1.5]


@given(st.lists(st.tuples(st.floats(0, 10), st.floats(0, 10)), max_size=30),
       st.lists(st.tuples(st.floats(0, 12), st.floats(0, 1)), max_size=10))
def test_in_flight_over_a_span_bounds_every_instant_in_it(spans, scrapes):
    starts = [min(a, b) for a, b in spans]
    ends = [max(a, b) for a, b in spans]
    windows = [(t, t + d) for t, d in scrapes]
    got = in_flight_at(windows, starts, ends)
    for (lo, hi), n in zip(windows, got):
        assert 0 <= n <= len(spans)
        for t in (lo, (lo + hi) / 2, hi):  # any instant the server may have read its state at
            assert n >= sum(1 for a, b in zip(starts, ends) if a <= t < b)

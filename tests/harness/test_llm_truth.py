"""The LLM driver against the truth: a raw-socket client (`harness.live.openai.truth`) reading the same
server, a fake one in a process of its own sending 8 tokens a chunk at a set TTFT and ITL."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.analysis.llm import LlmSweep
from harness.analysis.llm.traffic import traffic_url_run
from harness.analysis.llm.url import url_run
from harness.live.openai import UrlTarget
from harness.live.openai.traffic import Traffic
from harness.live.openai.truth import _Unframer, summary, truth_closed, truth_open
from tests.harness.fake_openai import FakeOpenAI, serve_process
from workloads.llm import build_llm_schedule, mix_workload

TTFT_S, ITL_S, PER_CHUNK = 0.05, 0.01, 8
# The 5% is benchmarks/llm_truth.py's to print on a quiet machine: in the suite the other
# xdist worker's load moves one 3 s reading by 5-15% (measured at load 5-11). 20% still fails the
# driver errors this catches: a server sharing the driver's GIL read TTFT 1.1-2.9x, a fresh
# connection per request +8-30%, one gap per 8-token chunk 8x the ITL.
WITHIN = 0.20


@given(st.lists(st.binary(min_size=1, max_size=40), min_size=1, max_size=12), st.integers(1, 9))
@settings(max_examples=60, deadline=None)
def test_chunked_bodies_unframe_to_what_was_sent_however_the_reads_split(pieces: list[bytes], cut: int) -> None:
    wire = b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces) + b"0\r\n\r\n"
    u = _Unframer(chunked=True)
    got = b"".join(u.feed(wire[k:k + cut]) for k in range(0, len(wire), cut))
    assert got == b"".join(pieces) and u.ended


def _bodies(url: str, n: int, tokens: list[int] | None = None) -> list[dict]:
    target = UrlTarget.parse(url)
    return [target.body("fake-model", f"prompt {k} about the sea", tokens[k] if tokens else 32, "default",
                        ignore_eos=False, include_usage=True) for k in range(n)]


def _within(ours: float | None, truth: float | None) -> bool:
    return ours is not None and truth is not None and abs(ours / truth - 1) <= WITHIN


@pytest.mark.live
def test_the_raw_client_reads_the_set_timing_of_8_tokens_a_chunk() -> None:
    cfg = FakeOpenAI(ttft_s=TTFT_S, itl_s=ITL_S, tokens_per_chunk=PER_CHUNK, continuous_usage=True)
    with serve_process(cfg) as url:
        readings, took = asyncio.run(truth_closed(url, _bodies(url, 40), 2, 1.5))
    t = summary(readings, took)
    assert t.finished == t.requests >= 4 and all(r.tokens == 32 for r in readings)
    assert t.ttft_p50_s is not None and TTFT_S <= t.ttft_p50_s < TTFT_S * 1.5
    assert t.itl_mean_s == pytest.approx(ITL_S, rel=0.2)   # a chunk of 8 tokens: its gap over 8


@pytest.mark.live
def test_ttft_and_itl_agree_with_the_raw_clients_open_loop_and_closed(tmp_path: Path) -> None:
    """The raw client reads the server alone first, then the driver the same load; both in this
    process, the server in its own (a server on a thread of the driver's process shares its GIL,
    which is what moved TTFT 1.1-2.9x before)."""
    cfg = FakeOpenAI(ttft_s=TTFT_S, itl_s=ITL_S, tokens_per_chunk=PER_CHUNK, continuous_usage=True)
    rate, duration_s, users = 8.0, 3.0, 4
    data = tmp_path / "prompts.jsonl"   # the closed loop's: 32 tokens each, as the raw client asks
    data.write_text("".join(f'{{"prompt": "prompt {k} about the sea", "output_tokens": 32}}\n' for k in range(50)))
    with serve_process(cfg) as url:
        target = UrlTarget.parse(url)
        # open loop: the raw client sends the driver's own schedule (seed 1), its lengths included
        schedule = build_llm_schedule(mix_workload("short", rate, duration_s), 1)
        starts = [float(a) for a in schedule.arrival_s]
        tokens = [int(n) for n in schedule.output_tokens]
        truth_open_ = summary(asyncio.run(truth_open(url, _bodies(url, len(starts), tokens), starts)))
        sweep = LlmSweep(policies=(target.label,), mixes=("short",), rates_rps=(rate,), duration_s=duration_s, seed=1)
        open_run = url_run(target, sweep).runs[0]
        readings, took = asyncio.run(truth_closed(url, _bodies(url, 500), users, duration_s))
        truth_closed_ = summary(readings, took)
        closed_run = traffic_url_run(target, sweep, Traffic.of(str(data), None, None, users, None)).runs[0]
    for name, run, t in (("open", open_run, truth_open_), ("closed", closed_run, truth_closed_)):
        assert run.finished > 0 and t.finished > 0
        msg = (f"{name}: TTFT p50 {run.ttft_s.p50} vs {t.ttft_p50_s}, mean {run.ttft_s.mean} vs {t.ttft_mean_s}; "
               f"ITL mean {run.itl_s.mean} vs {t.itl_mean_s}")
        assert _within(run.ttft_s.p50, t.ttft_p50_s) and _within(run.itl_s.mean, t.itl_mean_s), msg

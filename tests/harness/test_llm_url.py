"""LLM URL targets end to end: a server with known timing, driven by `run`, `compare` and `sweep`."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from typer.testing import CliRunner

from harness.analysis.llm import LlmSweep
from harness.analysis.llm.url import url_run
from harness.cli import app
from harness.live.openai import UrlTarget
from harness.live.openai.run import prepare
from harness.results import load_result
from harness.results.llm import LlmResult
from tests.harness.fake_openai import FakeOpenAI, serve

runner = CliRunner()
pytestmark = pytest.mark.live


def sweep(label: str, rate: float = 8.0, duration_s: float = 1.5, **kw) -> LlmSweep:
    return LlmSweep(policies=(label,), mixes=("short",), rates_rps=(rate,), duration_s=duration_s, **kw)


def test_the_probe_finds_the_model_what_it_takes_and_its_tokens_per_word():
    cfg = FakeOpenAI(refuse_ignore_eos=True, tokens_per_word=2, overhead=3)
    with serve(cfg, chat=True) as url:
        ready = asyncio.run(prepare(UrlTarget.parse(url)))
    assert ready.model == "fake-model" and not ready.ignore_eos and ready.include_usage
    assert ready.calibration.tokens_per_word == pytest.approx(2.0) and ready.calibration.overhead_tokens == \
        pytest.approx(3.0)
    assert "refused ignore_eos (HTTP 400)" in ready.notes[0]


@pytest.mark.parametrize("usage, per_chunk, source", [(True, 1, "usage"), (False, 1, "chunks"), (True, 3, "usage")])
def test_a_run_reads_the_set_timing_and_says_how_it_counted(usage, per_chunk, source):
    cfg = FakeOpenAI(ttft_s=0.05, itl_s=0.01, usage=usage, tokens_per_chunk=per_chunk)
    with serve(cfg) as url:
        target = UrlTarget.parse(url)
        result = url_run(target, sweep(target.label))
    run, t = result.runs[0], result.settings.targets[0]
    assert run.finished == run.requests > 0 and run.url is not None
    assert run.url.token_count == source and run.url.tokens == sum(b["max_tokens"] for b in cfg.seen[-run.requests:])
    assert run.ttft_s.p50 == pytest.approx(0.05, rel=0.3)
    assert run.tpot_s.p50 == pytest.approx(0.01, rel=0.3)             # per token, even when chunks hold three
    assert run.url.chunks == (run.url.tokens if per_chunk == 1 else pytest.approx(run.url.tokens / 3, abs=run.requests))
    if usage:
        assert t.calibrated and run.url.prompt_tokens_error < 0.1    # sized from the server's own counts
    else:
        assert not t.calibrated and "assumed 0.75 words per token" in t.prompt_sizing
    assert result.settings.engine is None and t.model == "fake-model" and t.ignore_eos


def test_a_server_that_never_answers_ends_at_the_bound_with_a_result():
    cfg = FakeOpenAI(hang_after=3)    # the three probes are answered, then nothing is
    with serve(cfg) as url:
        target = UrlTarget.parse(url, knobs={"timeout_s": "1"})
        started = time.monotonic()
        result = url_run(target, sweep(target.label, rate=4, duration_s=1))
        took = time.monotonic() - started
    run = result.runs[0]
    assert took < 1 + 1 + 2  # the last arrival, its bound, and slack
    assert run.finished == 0 and run.unfinished == run.requests and run.url.timed_out == run.requests


def test_run_url_prints_ttft_tpot_and_goodput_and_writes_an_llm_result(tmp_path):
    out = tmp_path / "run.json"
    with serve(FakeOpenAI(ttft_s=0.03)) as url:
        res = runner.invoke(app, ["run", url, "--mode", "live", "-w", "short", "--rate", "6", "--duration", "1.5",
                                  "--set", "slo_ttft_s=0.5", "--out", str(out)])
    assert res.exit_code == 0, res.output
    for text in ("TTFT", "TPOT", "ITL", "E2E", "goodput", "calibrated from the server's usage", "from the server's usage"):
        assert text in res.output
    result = load_result(out)
    assert isinstance(result, LlmResult) and result.settings.slo_ttft_s == 0.5 and result.runs[0].slo_attainment == 1


def test_compare_two_urls_ranks_the_one_within_the_slo_first(tmp_path):
    out = tmp_path / "cmp.json"
    with serve(FakeOpenAI(ttft_s=0.4)) as slow, serve(FakeOpenAI(ttft_s=0.02)) as fast:
        res = runner.invoke(app, ["compare", slow, fast, "--rate", "6", "--duration", "1.5",
                                  "--set", "slo_ttft_s=0.2", "--json", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    ratio = doc["ratios"][0]
    assert ratio["a_tok_s"] is None and ratio["b_tok_s"] > 0          # A never meets the SLO, B does
    assert [t["label"][0] for t in doc["settings"]["targets"]] == ["A", "B"]


def test_sweep_finds_the_highest_rate_within_the_slo(tmp_path):
    out = tmp_path / "sweep.json"
    # TTFT 20 ms + 60 ms per request in flight: about 5 in flight meets a 0.3 s TTFT SLO
    with serve(FakeOpenAI(ttft_s=0.02, queue_s=0.06, itl_s=0.002)) as url:
        res = runner.invoke(app, ["sweep", url, "--start-rate", "4", "--step-duration", "2", "--tolerance", "0.5",
                                  "--set", "slo_ttft_s=0.3", "--min-goodput", "0.9", "--json", "--out", str(out)])
    assert res.exit_code == 0, res.output
    search = json.loads(res.stdout)["search"]
    assert search["max_rate_within_slo"] is not None and search["first_failing_rate"] is not None
    assert search["max_rate_within_slo"] < search["first_failing_rate"]


@pytest.mark.parametrize("args, message", [
    (["run", "{url}", "--seeds", "2"], "--seeds: not used by an LLM URL"),
    (["run", "{url}", "--scale", "0.5", "--warmup", "1"], "--scale, --warmup: not used by an LLM URL"),
    (["compare", "{url}", "{url2}", "--seeds", "3", "--jobs", "2"], "--seeds, --jobs: not used by a compare of LLM URLs"),
    (["compare", "{url}", "{url2}", "--suite", "x"], "unknown LLM suite 'x': valid are llm-bad-day"),
    (["sweep", "{url}", "--check", "knee >= 1"], "a sweep has max_rate_within_slo, first_failing_rate, not 'knee'"),
    (["run", "{url}", "--set", "batch_size=3"], "not a knob of an LLM URL target"),
    (["run", "{url}", "--set", "attainment=2"], "attainment: expected a number > 0 and <= 1"),
    (["run", "http://10.0.0.1:80/v1/completions"], "outside loopback; pass --allow-remote"),
    (["run", "{url}", "-w", "nope"], "unknown length mix 'nope'"),
    (["compare", "naive", "hardened", "--model", "m"], "--model applies to a compare of two LLM URLs only"),
])
def test_options_an_llm_url_cannot_honour_end_with_exit_2_naming_them(args, message):
    url, url2 = "http://127.0.0.1:9/v1/completions", "http://127.0.0.1:10/v1/completions"
    res = runner.invoke(app, [a.format(url=url, url2=url2) for a in args])
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split())


def test_a_server_that_cannot_be_reached_is_exit_1_naming_it():
    res = runner.invoke(app, ["run", "http://127.0.0.1:9/v1/completions", "--duration", "1"])
    assert res.exit_code == 1 and "cannot reach http://127.0.0.1:9/v1/completions" in " ".join(res.output.split())


def _served(policy: str, *sets: str):  # type: ignore[no-untyped-def]
    """`harness serve POLICY --port 0` in a process of its own; (the process, its completions URL)."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    args = [str(Path(sys.executable).parent / "harness"), "serve", policy, "--port", "0"]
    for s in sets:
        args += ["--set", s]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        found = re.search(r"at (http://127\.0\.0\.1:\d+/v1/completions)", line)
        if found:
            return proc, found.group(1)
        if not line and proc.poll() is not None:
            break
    proc.kill()
    pytest.fail(f"harness serve {policy} did not start")


@pytest.mark.slow
def test_served_policies_as_urls_continuous_ranks_over_static(tmp_path):
    static, a = _served("llm-static", "batch_size=4")
    continuous, b = _served("llm-continuous")
    try:
        res = runner.invoke(app, ["compare", a, b, "--rate", "3", "--duration", "3", "--set", "slo_ttft_s=0.5",
                                  "--set", "timeout_s=6", "--out", str(tmp_path / "cmp.json")])
        assert res.exit_code == 0, res.output
        words = " ".join(res.output.split())
        assert "Ranking: on short B" in words and "ranks first" in words
        result = load_result(tmp_path / "cmp.json")
        tiny = result.settings.targets[1]
        assert tiny.model == "tiny-llm" and tiny.calibrated and tiny.tokens_per_word > 3   # bytes: ~5 per word
        assert result.ratios[0].b_tok_s and (result.ratios[0].a_tok_s or 0) < result.ratios[0].b_tok_s
    finally:
        for proc in (static, continuous):
            proc.terminate()
            proc.wait(20)


def test_url_views_fit_80_columns_and_render_again_as_html(tmp_path):
    from reports.page import write_html
    from reports.registry import view
    from tests.reports.fit import rendered

    # Two APIs, so the compare's labels are whole URLs (A .../v1/completions, B .../v1/chat/completions).
    with serve(FakeOpenAI(ttft_s=0.4)) as slow, serve(FakeOpenAI(ttft_s=0.02, queue_s=0.05), chat=True) as fast:
        for args in (["run", fast, "-w", "dominant-tenant", "--rate", "4", "--duration", "1"],
                     ["compare", slow, fast, "--rate", "4", "--duration", "1", "--set", "slo_ttft_s=0.2"],
                     ["sweep", fast, "--start-rate", "4", "--step-duration", "1", "--tolerance", "0.5",
                      "--set", "slo_ttft_s=0.2"]):
            out = tmp_path / f"{args[0]}.json"
            res = runner.invoke(app, [*args, "--out", str(out)])
            assert res.exit_code == 0, res.output
            result = load_result(out)
            text, cuts = rendered(view(result.kind).render, result, 80)
            assert cuts == [], "\n".join(cuts) + "\n" + text
            write_html([result], tmp_path / f"{args[0]}.html")

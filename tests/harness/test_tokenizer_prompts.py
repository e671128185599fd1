"""`--tokenizer PATH`: prompts cut to exact token counts, and the served engine's usage counted alike."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.live.openai.prompts import WORDS, Calibration, PromptBuilder, load_tokenizer

runner = CliRunner()


def _bpe(path: Path, vocab: int = 160) -> Path:
    """A small byte-level BPE trained on this test's own text (the prompt words), saved as tokenizer.json."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([" ".join(WORDS)] * 4, trainers.BpeTrainer(vocab_size=vocab, show_progress=False,
                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.save(str(path))
    return path


def test_prompts_are_cut_to_exactly_the_tokens_asked(tmp_path):
    tok = load_tokenizer(str(_bpe(tmp_path / "tokenizer.json")))
    cal = Calibration.fit([(n, tok.count(PromptBuilder(0).text(k, n, probe=True))) for k, n in
                           enumerate((4, 12, 24))])
    for i, n in enumerate((1, 7, 33, 120)):
        assert tok.count(PromptBuilder(0).exact(i, n, tok, cal)) == n
    assert load_tokenizer(str(tmp_path)).name == tok.name       # the folder holding it reads the same


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing.json", "does not exist"),
    (lambda p: (p / "t.json").write_text("{not json") and p / "t.json", "is not a tokenizer.json"),
    (lambda p: p, "has no tokenizer.json"),
])
def test_a_path_that_is_not_a_tokenizer_is_one_line_and_exit_2(tmp_path, make, message):
    path = make(tmp_path)
    res = runner.invoke(app, ["run", "http://127.0.0.1:9/v1/completions", "--tokenizer", str(path)])
    assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1, res.output


@contextmanager
def _tiny_server(count_tokens) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """`serve llm-continuous` in-process on a thread of its own (its completions URL)."""
    from harness.live.llm_profile import LIVE_ENGINE
    from harness.live.llm_serve import start_llm_server
    from targets.llm import LlmPolicy

    ready, state = threading.Event(), {}

    def run() -> None:
        loop = asyncio.new_event_loop()
        state["loop"] = loop
        server = loop.run_until_complete(start_llm_server(replace(LIVE_ENGINE, policy=LlmPolicy("llm-continuous")),
                                                          count_tokens=count_tokens))
        state["url"] = server.url
        ready.set()
        loop.run_forever()
        loop.run_until_complete(server.close())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(60)
    try:
        yield state["url"]
    finally:
        state["loop"].call_soon_threadsafe(state["loop"].stop)
        thread.join(20)


@pytest.mark.live
def test_prompt_tokens_as_sent_equal_the_servers_usage_exactly(tmp_path):
    from harness.analysis.llm import LlmSweep
    from harness.analysis.llm.url import url_run
    from harness.live.openai import UrlTarget

    path = _bpe(tmp_path / "tokenizer.json")
    with _tiny_server(load_tokenizer(str(path)).count) as url:
        target = replace(UrlTarget.parse(url), tokenizer=str(path))
        result = url_run(target, LlmSweep(policies=(target.label,), mixes=("short",), rates_rps=(3.0,),
                                          duration_s=1.5, slo_ttft_s=5.0))
    run, t = result.runs[0], result.settings.targets[0]
    assert run.finished == run.requests > 0 and t.tokenizer == f"file:{path}"
    assert run.url is not None and run.url.prompt_tokens_error == 0.0       # every prompt exact, as usage counted it
    assert run.url.prompt_tokens_mean == run.url.prompt_tokens_target_mean


def test_serve_takes_the_same_option_and_refuses_a_path_that_is_not_one(tmp_path):
    res = runner.invoke(app, ["serve", "llm-continuous", "--port", "0", "--tokenizer", str(tmp_path / "nope.json")])
    assert res.exit_code == 2 and "does not exist" in res.output and "Traceback" not in res.output

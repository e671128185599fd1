"""Prompts of a target token count without a tokenizer: calibration from usage, seeded words."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.live.openai import prompts
from harness.live.openai.prompts import ASSUMED_TOKENS_PER_WORD, Calibration, PromptBuilder, load_tokenizer


@pytest.mark.parametrize("points, per_word, overhead", [
    ([(4, 9), (12, 21), (24, 39)], 1.5, 3.0),     # tokens = 3 + 1.5 w: a chat template's 3 tokens
    ([(4, 19), (12, 59), (24, 119)], 5.0, 0.0),   # 5 w - 1: a negative overhead is fitted through the origin
    ([(10, 13), (10, 13)], 1.3, 0.0),             # one word count: the ratio
])
def test_calibration_fits_tokens_per_word_and_overhead(points, per_word, overhead):
    c = Calibration.fit(points)
    if overhead:
        assert c.tokens_per_word == pytest.approx(per_word) and c.overhead_tokens == pytest.approx(overhead)
    else:
        assert c.tokens_per_word == pytest.approx(sum(t for _, t in points) / sum(w for w, _ in points))
        assert c.overhead_tokens == 0.0
    assert c.measured and c.probes == len(points) and "calibrated from the server's usage" in c.source


def test_calibration_needs_a_count_and_says_when_it_assumed():
    with pytest.raises(ValueError, match="no probe gave a token count"):
        Calibration.fit([(4, 0), (0, 3)])
    c = Calibration.assumed()
    assert not c.measured and c.tokens_per_word == ASSUMED_TOKENS_PER_WORD
    assert c.source == "not calibrated (the server sent no usage): assumed 0.75 words per token"
    with pytest.raises(ValueError, match="tokens per word must be > 0"):
        Calibration(0.0)


@given(st.floats(0.2, 8.0), st.floats(0.0, 40.0), st.integers(1, 5000))
def test_words_for_inverts_tokens_of(per_word, overhead, words):
    c = Calibration(per_word, overhead, True)
    assert c.words_for(round(c.tokens_of(words))) == pytest.approx(words, abs=1 / per_word + 1)
    assert c.words_for(0) >= 1


def test_prompts_are_seeded_words_distinct_per_request_and_probe():
    b = PromptBuilder(seed=3)
    assert b.text(5, 40) == PromptBuilder(seed=3).text(5, 40)
    assert len(b.text(5, 40).split(" ")) == 40
    assert b.text(5, 40) != b.text(6, 40) != PromptBuilder(seed=4).text(6, 40)
    assert b.text(0, 12, probe=True) != b.text(0, 12)
    assert set(b.text(1, 200).split(" ")) <= set(prompts.WORDS)
    assert len(b.prompt(2, 150, Calibration(1.5, 3.0)).split(" ")) == 98   # (150 - 3) / 1.5


class Chars:
    """A tokenizer whose tokens are characters (as the tiny decoder's bytes)."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)


@pytest.mark.parametrize("tokens", [1, 7, 48, 200, 1000])
def test_exact_prompts_come_as_close_as_whole_words_allow(tokens):
    text = PromptBuilder(1).exact(9, tokens, Chars(), Calibration.assumed())
    longest = max(len(w) for w in prompts.WORDS) + 1
    assert len(text) <= tokens or " " not in text
    assert tokens - len(text) < longest


def test_tokenizers_are_optional_and_say_what_to_install(monkeypatch):
    with pytest.raises(ValueError, match="give tiktoken:ENCODING or hf:PATH"):
        load_tokenizer("sentencepiece")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tiktoken" else real(name, *a))
    with pytest.raises(ValueError, match=r"needs the tiktoken package \(pip install tiktoken\)"):
        load_tokenizer("tiktoken:cl100k_base")

"""Reading OpenAI-compatible SSE answers: which API a path speaks, each line, each answer's token count."""

from __future__ import annotations

import json

import pytest

from harness.live.openai.stream import DONE, Api, Chunk, CountSource, Tally, api_of, is_llm_url, parse_line


@pytest.mark.parametrize("path, api", [
    ("/v1/completions", Api.COMPLETIONS),
    ("/v1/chat/completions", Api.CHAT),
    ("/openai/deployments/x/chat/completions/?api-version=1", Api.CHAT),
    ("/v1/completions?x=1", Api.COMPLETIONS),
])
def test_the_path_says_which_api(path, api):
    assert api_of(path) is api


def test_other_paths_are_not_llm_urls():
    with pytest.raises(ValueError, match="not an OpenAI-compatible path"):
        api_of("/predict")
    assert is_llm_url("http://127.0.0.1:8000/v1/chat/completions")
    assert not is_llm_url("http://127.0.0.1:8000/predict")
    assert not is_llm_url("http://127.0.0.1:8000")
    assert not is_llm_url("llm-continuous")


def data(doc: object) -> str:
    return "data: " + json.dumps(doc) + "\n"


@pytest.mark.parametrize("line, api, parsed", [
    # a completions token
    (data({"choices": [{"text": "Hi", "finish_reason": None}]}), Api.COMPLETIONS, Chunk("Hi")),
    # a chat token; the role-only first delta carries no text
    (data({"choices": [{"delta": {"content": " there"}}]}), Api.CHAT, Chunk(" there")),
    (data({"choices": [{"delta": {"role": "assistant"}}]}), Api.CHAT, Chunk("")),
    # a reasoning model's thinking counts as output
    (data({"choices": [{"delta": {"reasoning_content": "hm"}}]}), Api.CHAT, Chunk("hm")),
    # the closing chunk, then OpenAI's usage chunk with no choices
    (data({"choices": [{"text": "", "finish_reason": "length"}]}), Api.COMPLETIONS, Chunk("", "length")),
    (data({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}), Api.CHAT, Chunk("", None, 4, 9)),
    # no space after the colon, CRLF endings
    ('data:{"choices":[{"text":"x"}]}\r\n', Api.COMPLETIONS, Chunk("x")),
    (b"data: [DONE]\n", Api.COMPLETIONS, DONE),
    # what carries nothing
    (b"\n", Api.COMPLETIONS, None),
    (": keep-alive\n", Api.COMPLETIONS, None),
    ("event: message\n", Api.CHAT, None),
    ("data: \n", Api.CHAT, None),
])
def test_each_line(line, api, parsed):
    assert parse_line(line, api) == parsed


def test_a_line_that_is_not_json_is_named():
    with pytest.raises(ValueError, match="not JSON: '<html>'"):
        parse_line("data: <html>", Api.COMPLETIONS)
    with pytest.raises(ValueError, match="not a JSON object"):
        parse_line("data: [1, 2]", Api.COMPLETIONS)


def tally_of(lines: list[str], api: Api = Api.COMPLETIONS) -> tuple[Tally, int]:
    tally, tokens = Tally(), 0
    for line in lines:
        chunk = parse_line(line, api)
        if chunk == DONE:
            tally.done = True
        elif isinstance(chunk, Chunk):
            tokens += tally.add(chunk)
    return tally, tokens


def test_usage_counts_when_sent_else_chunks_and_says_which():
    with_usage, arrivals = tally_of([data({"choices": [{"text": "ab"}]}), data({"choices": [{"text": "c"}]}),
                                     data({"choices": [{"text": "", "finish_reason": "stop"}]}),
                                     data({"choices": [], "usage": {"completion_tokens": 3, "prompt_tokens": 5}}),
                                     "data: [DONE]"])
    assert arrivals == 2 and with_usage.chunks == 2                       # two chunks, three tokens
    assert (with_usage.tokens, with_usage.source, with_usage.prompt_tokens) == (3, CountSource.USAGE, 5)
    assert with_usage.finished and with_usage.finish == "stop"
    bare, _ = tally_of([data({"choices": [{"text": "a"}]}), data({"choices": [{"text": "b"}]})])
    assert (bare.tokens, bare.source, bare.finished) == (2, CountSource.CHUNKS, False)  # cut: no finish, no DONE

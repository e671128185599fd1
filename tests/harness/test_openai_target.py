"""An OpenAI-compatible URL as a target: checks at the edge, what each request carries."""

from __future__ import annotations

import pytest

from harness.live.openai import Api, UrlTarget


def test_the_url_names_the_api_and_where_models_are_listed():
    chat = UrlTarget.parse("http://127.0.0.1:9000/v1/chat/completions")
    assert chat.api is Api.CHAT and chat.models_url == "http://127.0.0.1:9000/v1/models"
    comp = UrlTarget.parse("http://localhost:9000/x/v1/completions", model="m")
    assert comp.api is Api.COMPLETIONS and comp.models_url == "http://localhost:9000/x/v1/models"
    assert comp.model == "m" and comp.label == "localhost:9000/x/v1/completions"


@pytest.mark.parametrize("kwargs, message", [
    ({"url": "http://10.1.2.3:8000/v1/completions"}, "outside loopback; pass --allow-remote"),
    ({"url": "https://127.0.0.1/v1/completions"}, "only http://HOST:PORT/PATH"),
    ({"template": "[1]"}, "must be a JSON object of fields to add"),
    ({"template": "{nope"}, "the body template is not JSON"),
    ({"template": '{"max_tokens": 5, "model": "x"}'}, "sets max_tokens, model, which the harness sets itself"),
    ({"template": '{"ignore_eos": true}'}, "use --set ignore_eos"),
    ({"api_key_env": "A-B"}, "not an environment variable name"),
    ({"knobs": {"ignore_eos": "yes"}}, "expected true or false"),
    ({"knobs": {"timeout_s": "0"}}, "timeout_s: expected a number of seconds > 0"),
    ({"knobs": {"batch_size": "4"}}, "not a knob of an LLM URL target (valid: ignore_eos, include_usage"),
])
def test_bad_targets_are_refused_naming_why(kwargs, message):
    args = {"url": "http://127.0.0.1:9000/v1/completions", **kwargs}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        UrlTarget.parse(**args)


def test_a_remote_server_needs_allow_remote():
    assert UrlTarget.parse("http://10.1.2.3:8000/v1/completions", allow_remote=True).host == "10.1.2.3"


def test_each_request_streams_asks_usage_names_its_tenant_and_adds_the_template():
    t = UrlTarget.parse("http://127.0.0.1:9000/v1/chat/completions", template='{"temperature": 0, "top_k": 1}',
                        knobs={"ignore_eos": "true", "timeout_s": "7.5"})
    assert t.ignore_eos is True and t.timeout_s == 7.5 and t.extra == {"temperature": 0, "top_k": 1}
    assert t.body("m", "hello world", 9, "t1", ignore_eos=True, include_usage=True) == {
        "temperature": 0, "top_k": 1, "model": "m", "messages": [{"role": "user", "content": "hello world"}],
        "max_tokens": 9, "stream": True, "user": "t1", "stream_options": {"include_usage": True}, "ignore_eos": True}
    c = UrlTarget.parse("http://127.0.0.1:9000/v1/completions")
    assert c.body("m", "hi", 2, "t", ignore_eos=False, include_usage=False) == {
        "model": "m", "prompt": "hi", "max_tokens": 2, "stream": True, "user": "t"}


def test_the_api_key_comes_from_the_environment_when_a_request_is_made(monkeypatch):
    t = UrlTarget.parse("http://127.0.0.1:9000/v1/completions", api_key_env="MY_KEY")
    monkeypatch.delenv("MY_KEY", raising=False)
    assert t.headers() == {} and not t.api_key_sent
    monkeypatch.setenv("MY_KEY", "sk-123")
    assert t.headers() == {"Authorization": "Bearer sk-123"} and t.api_key_sent
    assert "sk-123" not in repr(t)

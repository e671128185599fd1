"""The body of an OpenAI-compatible `POST /v1/completions`, checked field by field.

`parse_completion(body, model, max_len)` returns a `Completion` or raises
`BadCompletion` with the HTTP status, an error code and the parameter at fault,
so every malformed request is a 4xx with a reason and never reaches the engine.
Accepted: `model` (must name this server's model), `prompt` (text, or a list of
token ids 0..255), `max_tokens` (>= 1, default 16), `stream`, and the sampling
fields common clients send (`temperature`, `top_p`, `seed`, `stream_options`,
`ignore_eos`, `n` = 1, `echo` = false, `logprobs` = null, penalties): decoding is
greedy and has no end-of-sequence token, so those are checked but change nothing.
The fields sglang-router adds to every request it forwards (`ROUTER_FIELDS`:
`no_stop_trim`, `skip_special_tokens`, `return_hidden_states`) are accepted as
booleans and change nothing either (bytes have no special tokens or stop trim).
`stop` is refused (400, `unsupported`) unless null or empty: an answer is always
`max_tokens` long, and a stop sequence that silently did nothing would lie. Usage
comes in a stream only when asked (`stream_options: {"include_usage": true}`), as
OpenAI sends it. Any other field is refused.

`user` is kept (`Completion.user`): it names the tenant whose limits and
priority class the request takes (`tenant_name` checks it, and the server's
`X-Tenant` header the same way): 1 to `MAX_TENANT_CHARS` printable characters,
not blank, so a name can go into logs, results and headers as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from targets.llm.decoder import VOCAB, encode

__all__ = ["MAX_TENANT_CHARS", "BadCompletion", "Completion", "parse_completion", "tenant_name"]

_ACCEPTED = {"model", "prompt", "max_tokens", "stream", "temperature", "top_p", "n", "echo", "logprobs", "seed",
             "user", "stop", "stream_options", "presence_penalty", "frequency_penalty", "ignore_eos"}
ROUTER_FIELDS = ("no_stop_trim", "skip_special_tokens", "return_hidden_states")
_ACCEPTED |= set(ROUTER_FIELDS)
MAX_TENANT_CHARS = 64


class BadCompletion(ValueError):
    def __init__(self, status: int, code: str, message: str, param: str | None = None,
                 kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.code, self.param, self.kind = status, code, param, kind

    def body(self) -> dict[str, Any]:
        """The OpenAI error shape."""
        return {"error": {"message": str(self), "type": self.kind, "param": self.param, "code": self.code}}


@dataclass(frozen=True)
class Completion:
    model: str
    prompt: list[int]
    max_tokens: int
    stream: bool
    include_usage: bool
    user: str | None = None    # the tenant it names; None: not named in the body
    prompt_text: str | None = None   # the prompt as sent, when it was text (not token ids)


def _bad(code: str, message: str, param: str | None = None, status: int = 400) -> BadCompletion:
    return BadCompletion(status, code, message, param)


def _number(body: dict[str, Any], key: str, lo: float, hi: float) -> None:
    if key in body and body[key] is not None:
        v = body[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
            raise _bad("invalid-value", f"'{key}' must be a number in [{lo:g}, {hi:g}]", key)


def _prompt(value: Any) -> list[int]:
    if isinstance(value, str):
        if not value:
            raise _bad("empty-prompt", "'prompt' is empty", "prompt")
        return encode(value)
    if isinstance(value, list):
        if not value:
            raise _bad("empty-prompt", "'prompt' is an empty list", "prompt")
        if all(isinstance(t, str) for t in value):
            raise _bad("batch-prompt", "one prompt per request: send a string or a list of token ids", "prompt")
        if any(isinstance(t, bool) or not isinstance(t, int) for t in value):
            raise _bad("invalid-token", "'prompt' as a list must hold integer token ids", "prompt")
        if any(not 0 <= t < VOCAB for t in value):
            raise _bad("invalid-token", f"token ids must be in 0..{VOCAB - 1}", "prompt")
        return list(value)
    raise _bad("invalid-type", "'prompt' must be a string or a list of token ids", "prompt")


def tenant_name(value: Any, source: str) -> str | None:
    """The tenant `value` names, as sent in `source` (the `user` field, or a header); None when absent.
    BadCompletion (400) unless it is 1 to MAX_TENANT_CHARS printable characters, not blank."""
    if value is None:
        return None
    param = "user" if source == "user" else None
    if not isinstance(value, str):
        raise _bad("invalid-type", f"'{source}' must be a string", param)
    if not (0 < len(value) <= MAX_TENANT_CHARS and value.isprintable() and value.strip()):
        raise _bad("invalid-tenant", f"'{source}' must be 1-{MAX_TENANT_CHARS} printable characters, not blank",
                   param)
    return value


def parse_completion(body: Any, model: str, max_len: int) -> Completion:
    if not isinstance(body, dict):
        raise _bad("not-an-object", "the body must be a JSON object")
    unknown = sorted(set(body) - _ACCEPTED)
    if unknown:
        raise _bad("unknown-field", f"unknown field(s): {', '.join(unknown)}", unknown[0])
    for key in ROUTER_FIELDS:
        if key in body and body[key] is not None and not isinstance(body[key], bool):
            raise _bad("invalid-type", f"{key} must be true or false", key)
    if "model" not in body:
        raise _bad("missing-field", "'model' is required", "model")
    if not isinstance(body["model"], str):
        raise _bad("invalid-type", "'model' must be a string", "model")
    if body["model"] != model:
        raise _bad("model-not-found", f"model '{body['model']}' does not exist; this server has '{model}'", "model",
                   status=404)
    if "prompt" not in body:
        raise _bad("missing-field", "'prompt' is required", "prompt")
    prompt = _prompt(body["prompt"])
    max_tokens = body.get("max_tokens", 16)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise _bad("invalid-type", "'max_tokens' must be an integer", "max_tokens")
    if max_tokens < 1:
        raise _bad("invalid-value", "'max_tokens' must be >= 1", "max_tokens")
    if len(prompt) + max_tokens > max_len:
        raise _bad("context-length-exceeded", f"{len(prompt)} prompt + {max_tokens} output tokens exceed the "
                   f"model's {max_len}-token context", "max_tokens")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _bad("invalid-type", "'stream' must be true or false", "stream")
    options = body.get("stream_options")
    if options is not None and (not isinstance(options, dict) or set(options) - {"include_usage"}):
        raise _bad("invalid-value", "'stream_options' may hold only include_usage", "stream_options")
    _number(body, "temperature", 0, 2)
    _number(body, "top_p", 0, 1)
    _number(body, "presence_penalty", -2, 2)
    _number(body, "frequency_penalty", -2, 2)
    if body.get("n", 1) != 1 or isinstance(body.get("n"), bool):
        raise _bad("unsupported", "only n = 1 is served", "n")
    if body.get("echo", False) is not False:
        raise _bad("unsupported", "echo is not served", "echo")
    if body.get("logprobs") is not None:
        raise _bad("unsupported", "logprobs are not served", "logprobs")
    if "seed" in body and (isinstance(body["seed"], bool) or not isinstance(body["seed"], (int, type(None)))):
        raise _bad("invalid-type", "'seed' must be an integer", "seed")
    user = tenant_name(body.get("user"), "user")
    stop = body.get("stop")
    if stop is not None and not (isinstance(stop, str) or (isinstance(stop, list) and all(isinstance(s, str)
                                                                                          for s in stop))):
        raise _bad("invalid-type", "'stop' must be a string or a list of strings", "stop")
    if stop:
        raise _bad("unsupported", "stop sequences are not served: every answer is max_tokens long", "stop")
    if not isinstance(body.get("ignore_eos", False), bool):
        raise _bad("invalid-type", "'ignore_eos' must be true or false", "ignore_eos")
    usage = (options or {}).get("include_usage", False)
    if not isinstance(usage, bool):
        raise _bad("invalid-type", "'stream_options.include_usage' must be true or false", "stream_options")
    text = body["prompt"] if isinstance(body["prompt"], str) else None
    return Completion(model, prompt, max_tokens, stream, usage, user, text)

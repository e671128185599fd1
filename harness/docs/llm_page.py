"""The LLM endpoint's part of docs/http-api.md, from the LLM server code itself.

Fields: `targets.llm.openai_request`'s accepted set, each given its meaning here (a new
field fails the docs until it has one); errors: every `_bad(...)` and `BadCompletion(...)`
the request parser and the server spell out, found in their source; the stream: chunks
made by the server's own `_chunk`.
"""

from __future__ import annotations

import ast
import inspect
import json
from types import ModuleType

from harness.docs.markdown import block, code, table
from targets.llm import openai_request, server

__all__ = ["FIELDS", "error_kinds", "fields", "section"]

# Each accepted field: (required, what it does here).
FIELDS: dict[str, tuple[bool, str]] = {
    "model": (True, "must be the served model's name (`tiny-llm`; `GET /v1/models` lists it); else 404"),
    "prompt": (True, "text (its UTF-8 bytes are the tokens) or a list of token ids 0..255; one prompt per request"),
    "max_tokens": (False, "output tokens, >= 1 (default 16); the answer is always exactly this long"),
    "stream": (False, "true: server-sent events, one chunk per token (below)"),
    "stream_options": (False, "`{\"include_usage\": true}`: a last chunk with `usage` (only then, as OpenAI)"),
    "user": (False, "the tenant whose limits and priority class the request takes (else `X-Tenant`, else default)"),
    "ignore_eos": (False, "true or false; accepted as vLLM's, changes nothing: there is no end-of-sequence token"),
    "stop": (False, "null or empty only: a stop sequence is refused (400 `unsupported`), since it would not stop"),
    "temperature": (False, "checked (0..2), changes nothing: decoding is greedy"),
    "top_p": (False, "checked (0..1), changes nothing"),
    "seed": (False, "checked (an integer), changes nothing"),
    "n": (False, "1 only"),
    "echo": (False, "false only"),
    "logprobs": (False, "null only"),
    "presence_penalty": (False, "checked (-2..2), changes nothing"),
    "frequency_penalty": (False, "checked (-2..2), changes nothing"),
    "no_stop_trim": (False, "true or false; sglang-router adds it, changes nothing (no stop sequence)"),
    "skip_special_tokens": (False, "true or false; sglang-router adds it, changes nothing (bytes: none special)"),
    "return_hidden_states": (False, "true or false; sglang-router adds it, changes nothing (none returned)"),
}


def fields() -> list[tuple[str, str, str]]:
    accepted = set(openai_request._ACCEPTED)
    if accepted != set(FIELDS):
        raise KeyError(f"LLM request fields without a meaning in harness/docs/llm_page.py: "
                       f"{sorted(accepted ^ set(FIELDS))}")
    return [(code(name), "yes" if FIELDS[name][0] else "no", FIELDS[name][1]) for name in FIELDS]


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(v) or "…" for v in node.values)
    return "…"


def _errors(module: ModuleType) -> list[tuple[int, str, str]]:
    out = []
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", None)
        args = node.args
        if name == "_bad" and len(args) >= 2:
            status = next((k.value.value for k in node.keywords if k.arg == "status"
                           and isinstance(k.value, ast.Constant)), 400)
            if len(args) >= 4 and isinstance(args[3], ast.Constant):
                status = args[3].value
            code_, reason = args[0], args[1]
        elif name == "BadCompletion" and len(args) >= 3 and isinstance(args[0], ast.Constant):
            status, code_, reason = args[0].value, args[1], args[2]
        else:
            continue
        if isinstance(code_, ast.Constant) and isinstance(status, int):
            out.append((status, str(code_.value), _text(reason) or "…"))
    return out


def error_kinds() -> list[tuple[int, str, str]]:
    """(status, code, message) of every error the LLM server answers, one row per (status, code)."""
    unique: dict[tuple[int, str], str] = {}
    for status, kind, reason in _errors(openai_request) + _errors(server):
        unique.setdefault((status, kind), reason)
    return [(s, k, r) for (s, k), r in sorted(unique.items())]


def _stream_example() -> str:
    rid, model = "cmpl-17", "tiny-llm"
    chunks = [server._chunk(rid, 0, model, "H", None), server._chunk(rid, 0, model, "i", None),
              server._chunk(rid, 0, model, "", "length"),
              server._chunk(rid, 0, model, None, None, {"prompt_tokens": 5, "completion_tokens": 2,
                                                        "total_tokens": 7}), b"data: [DONE]\n\n"]
    return b"".join(chunks).decode().rstrip("\n")


def section() -> str:
    request = json.dumps({"model": "tiny-llm", "prompt": "Once upon a time", "max_tokens": 2, "stream": True,
                          "stream_options": {"include_usage": True}, "user": "chat-a"})
    return "\n".join([
        "## The LLM endpoint: `harness serve llm-static|llm-dynamic|llm-continuous`\n",
        "The tiny decoder behind an OpenAI-compatible completions API, with the same binding, `--token` and "
        "`--set` flags as `serve`: `POST /v1/completions` and `GET /v1/models` (with a token, every `/v1/` "
        "path needs `Authorization: Bearer TOKEN`; without it, 401 `invalid_api_key`). A client may name a "
        "request with `X-Request-Id` (the answer's id is then `cmpl-<id>`) and its tenant with `X-Tenant`.\n",
        block(request, "json"),
        "### Request fields\n",
        table(("field", "required", "meaning"), fields()),
        "### Answers\n",
        "Without `stream`: one JSON `text_completion` with `choices[0].text`, `finish_reason: \"length\"` and "
        "`usage` (`prompt_tokens`, `completion_tokens`, `total_tokens`). With `stream: true`: server-sent "
        "events, `Content-Type: text/event-stream`: one `data:` chunk per token with its text, a chunk with "
        "empty text and `finish_reason: \"length\"`, then, only when asked with `stream_options.include_usage`, "
        "a chunk with no choices and `usage`; then `data: [DONE]`. For the request above:\n",
        block(_stream_example()),
        "### Errors\n",
        "Every error is a 4xx in OpenAI's shape, `{\"error\": {\"message\", \"type\", \"param\", \"code\"}}`, "
        "never a 500; a 429 (the tenant's limit shed it) carries `Retry-After` (whole seconds) and "
        "`retry-after-ms` when the bucket will refill for it. The codes (`…` marks a value filled in at run "
        "time):\n\n" + table(("status", "code", "message"), [(s, code(k), r) for s, k, r in error_kinds()]),
        "### Health and info (what a router probes)\n",
        table(("GET", "answer"), [(code(path), meaning) for path, meaning in server.PROBES.items()]),
        "### A fleet: `harness serve llm-fleet:router=R,replicas=N`\n",
        "N processes of `serve llm-continuous` (prefix caching on, at most 8, each on its own loopback port) "
        "behind a router on `--port`, all on 127.0.0.1: `R` any sim router (`round-robin`, `least-tokens`, "
        "`prefix`, `kv-aware`, `cache-aware`: the project's router, which parses the request, asks the same "
        "policy object the "
        "sim asks and streams the answer through; `GET /router_stats` is its own cost per request and "
        "`X-Replica` names the replica that answered) or `sglang:POLICY` (sglang-router, `pip install "
        "'inference-harness[sglang]'`, POLICY round_robin, cache_aware, power_of_two or random) or "
        "`vllm:POLICY` (vllm-router, `[vllm]`, the same four; its cache_aware keys on each replica's "
        "`POST /v1/completions/render`: the token ids of a completion's body, without generating). "
        "[guide/llm-fleet-live.md](guide/llm-fleet-live.md) drives one with the chat day.\n",
        "### Driving it, or any OpenAI-compatible server\n",
        "`harness run http://HOST:PORT/v1/completions --mode live -w short` (or `.../v1/chat/completions`) "
        "drives any server that streams this way: prompts are text built to each request's token count "
        "(words per token calibrated from the server's `usage`, or a tokenizer with `--set tokenizer=`), "
        "`max_tokens` holds the output length (with `ignore_eos` where the server accepts it), and tokens "
        "are counted from `usage` when sent, else from chunks; the result says which. `--model`, "
        "`--api-key-env`, `--template` (fields added to every body) and `--set` (slo_ttft_s, slo_tpot_s, "
        "attainment, ignore_eos, include_usage, tokenizer, timeout_s) shape it; `harness compare URL_A URL_B` "
        "and `harness sweep URL` take the same.\n",
    ])

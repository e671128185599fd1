"""An OpenAI-compatible URL as a target: where it is, what it is sent, and how.

`UrlTarget.parse(url, ...)` checks the URL (http, loopback unless `allow_remote`: as
every URL target, `harness.live.plan.parse_url`), reads the API from its path
(`stream.api_of`), the extra body fields from a template (a JSON object whose fields
are added to every request: `{"temperature": 0, "top_k": 1}`; a field the harness
sets itself is refused), and the URL knobs `--set` gives (`URL_KNOBS`).

`body(prompt, max_tokens, tenant)` is one streaming request: completions send
`prompt`, chat one user message; `max_tokens` holds the output length, `ignore_eos`
(where the server accepts it) keeps a model from stopping early, `stream_options:
{"include_usage": true}` asks for the token counts, and `user` names the tenant.
The API key is read from the environment variable `api_key_env` when a request is
made and sent as `Authorization: Bearer`; results name the variable, never the key.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from typing import Any

from harness.live.openai.stream import Api, api_of

__all__ = ["DEFAULT_API_KEY_ENV", "RESERVED_FIELDS", "URL_KNOBS", "UrlTarget", "parse_knob"]

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"   # what OpenAI's own clients read
# Fields the harness sets on every request; a template may not set them.
RESERVED_FIELDS = ("model", "prompt", "messages", "max_tokens", "max_completion_tokens", "stream", "stream_options",
                   "user")
# --set keys of an LLM URL target: what each means (the SLO keys are the LLM compare's).
URL_KNOBS = {
    "ignore_eos": "true: always send ignore_eos; false: never; unset: send it where the server accepts it",
    "include_usage": "false: do not ask for usage (tokens are then counted from chunks)",
    "tokenizer": "tiktoken:ENCODING or hf:PATH, to size prompts exactly (optional package)",
    "timeout_s": "each request's bound from its scheduled start (default: ten SLO budgets, 5-120 s)",
}


def parse_knob(key: str, raw: str) -> Any:
    """One URL knob's value from its `--set` text; ValueError naming the key."""
    if key in ("ignore_eos", "include_usage"):
        if raw.lower() not in ("true", "false"):
            raise ValueError(f"--set {key}: expected true or false, got {raw!r}")
        return raw.lower() == "true"
    if key == "timeout_s":
        try:
            value = float(raw)
        except ValueError:
            value = -1.0
        if not value > 0:
            raise ValueError(f"--set timeout_s: expected a number of seconds > 0, got {raw!r}")
        return value
    if key == "tokenizer":
        return raw
    raise ValueError(f"--set {key}: not a knob of an LLM URL target (valid: {', '.join(URL_KNOBS)}, "
                     "slo_ttft_s, slo_tpot_s, attainment)")


@dataclass(frozen=True)
class UrlTarget:
    """An OpenAI-compatible streaming endpoint. `model` None: the first the server lists at
    /v1/models. `ignore_eos` None: sent where the server accepts it. `extra`: the template's fields."""

    url: str
    api: Api
    host: str
    port: int
    path: str
    model: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    extra: dict[str, Any] = field(default_factory=dict)
    ignore_eos: bool | None = None
    include_usage: bool = True
    tokenizer: str | None = None
    timeout_s: float | None = None
    server_metrics_url: str | None = None   # --server-metrics: scrape this Prometheus /metrics during runs

    @classmethod
    def parse(cls, url: str, allow_remote: bool = False, model: str | None = None,
              api_key_env: str = DEFAULT_API_KEY_ENV, template: str | None = None,
              knobs: dict[str, str] | None = None) -> "UrlTarget":
        """ValueError naming what is wrong (the URL, the template, a knob)."""
        from harness.live.plan import parse_url

        host, port, path = parse_url(url, allow_remote)
        extra: dict[str, Any] = {}
        if template is not None:
            try:
                extra = json.loads(template)
            except ValueError as exc:
                raise ValueError(f"the body template is not JSON: {exc}") from None
            if not isinstance(extra, dict):
                raise ValueError("the body template of an LLM URL must be a JSON object of fields to add")
            taken = sorted(set(extra) & set(RESERVED_FIELDS))
            if taken:
                raise ValueError(f"the body template sets {', '.join(taken)}, which the harness sets itself "
                                 "(output length: the workload; model: --model; tenant: the workload's)")
            if "ignore_eos" in extra:
                raise ValueError("the body template sets ignore_eos: use --set ignore_eos=true|false")
        if not api_key_env or not api_key_env.replace("_", "").isalnum():
            raise ValueError(f"--api-key-env '{api_key_env}': not an environment variable name")
        values = {k: parse_knob(k, v) for k, v in (knobs or {}).items()}
        return replace(cls(url, api_of(path), host, port, path, model or None, api_key_env, extra), **values)

    @property
    def base(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def models_url(self) -> str:
        """Where the served models are listed: the API's root + /models."""
        bare = self.path.split("?", 1)[0].rstrip("/")
        root = bare.rsplit("/chat/completions", 1)[0] if self.api is Api.CHAT else bare.rsplit("/completions", 1)[0]
        return f"{self.base}{root}/models"

    @property
    def metrics_url(self) -> str:
        """The server's own Prometheus endpoint, as vLLM, SGLang and TGI serve it: /metrics at its root."""
        return f"{self.base}/metrics"

    @property
    def label(self) -> str:
        """host:port and the path, without the scheme."""
        return self.url.split("://", 1)[1]

    def headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}

    @property
    def api_key_sent(self) -> bool:
        return bool(os.environ.get(self.api_key_env))

    def body(self, model: str, prompt: str, max_tokens: int, tenant: str, *, ignore_eos: bool,
             include_usage: bool) -> dict[str, Any]:
        doc: dict[str, Any] = dict(self.extra)
        doc["model"] = model
        if self.api is Api.CHAT:
            doc["messages"] = [{"role": "user", "content": prompt}]
        else:
            doc["prompt"] = prompt
        doc.update(max_tokens=max_tokens, stream=True, user=tenant)
        if include_usage:
            doc["stream_options"] = {"include_usage": True}
        if ignore_eos:
            doc["ignore_eos"] = True
        return doc

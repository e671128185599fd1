"""Reading an OpenAI-compatible streaming answer: which API a URL speaks, one SSE line, one tally.

`api_of(path)`: a path ending in `/chat/completions` speaks the chat API (`messages` in,
`choices[0].delta.content` out), one ending in `/completions` the completions API
(`prompt` in, `choices[0].text` out); anything else is not an LLM URL.

`parse_line(line, api)` reads one line of a server-sent-events stream: `DONE` for
`data: [DONE]`, None for what carries nothing (blank lines, comments, `event:` and
`id:` lines), else a `Chunk`: the text it adds (chat: `content`, or a reasoning
model's `reasoning_content`), its `finish_reason`, and `usage` when the server sent
it (OpenAI sends usage in a last chunk with no choices when asked with
`stream_options.include_usage`; some servers send it on every chunk, the last count
standing). A line that is not JSON raises ValueError naming it.

`Tally` counts one answer: content chunks as they come, and the server's `usage`.
Its `tokens` are usage's `completion_tokens` when the server sent them, else the
chunks (one token each, as servers stream them one by one); `source` says which.
Nothing here does I/O or reads a clock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

__all__ = ["DONE", "Api", "Chunk", "CountSource", "Tally", "api_of", "is_llm_url", "parse_line"]


class Api(StrEnum):
    COMPLETIONS = "completions"
    CHAT = "chat"


class CountSource(StrEnum):
    """Where an answer's output tokens were counted from."""

    USAGE = "usage"      # the server's usage.completion_tokens
    CHUNKS = "chunks"    # one token per content chunk (the server sent no usage)
    MIXED = "mixed"      # over a run: some answers one way, some the other


DONE: Final = "[DONE]"


def api_of(path: str) -> Api:
    """The API a URL path speaks; ValueError when it is neither."""
    bare = path.split("?", 1)[0].rstrip("/")
    if bare.endswith("/chat/completions"):
        return Api.CHAT
    if bare.endswith("/completions"):
        return Api.COMPLETIONS
    raise ValueError(f"'{path}' is not an OpenAI-compatible path (…/v1/completions or …/v1/chat/completions)")


def is_llm_url(target: str) -> bool:
    """An http(s) URL whose path is an OpenAI-compatible completions endpoint."""
    if "://" not in target:
        return False
    rest = target.split("://", 1)[1]
    path = rest[rest.find("/"):] if "/" in rest else ""
    try:
        api_of(path)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Chunk:
    text: str
    finish: str | None = None
    completion_tokens: int | None = None
    prompt_tokens: int | None = None


def _usage(doc: dict[str, Any]) -> tuple[int | None, int | None]:
    usage = doc.get("usage")
    if not isinstance(usage, dict):
        return None, None
    out, inp = usage.get("completion_tokens"), usage.get("prompt_tokens")
    return (out if isinstance(out, int) and not isinstance(out, bool) else None,
            inp if isinstance(inp, int) and not isinstance(inp, bool) else None)


def parse_line(line: bytes | str, api: Api) -> Chunk | str | None:
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.strip()
    if not text.startswith("data:"):
        return None
    data = text[5:].strip()
    if data == DONE:
        return DONE
    if not data:
        return None
    try:
        doc = json.loads(data)
    except json.JSONDecodeError:
        raise ValueError(f"a stream line is not JSON: {data[:80]!r}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"a stream line is not a JSON object: {data[:80]!r}")
    out, inp = _usage(doc)
    choices = doc.get("choices") or []
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    if api is Api.CHAT:
        delta = choice.get("delta") or {}
        piece = (delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning") or ""
                 if isinstance(delta, dict) else "")
    else:
        piece = choice.get("text") or ""
    finish = choice.get("finish_reason")
    return Chunk(piece if isinstance(piece, str) else "", finish if isinstance(finish, str) else None, out, inp)


@dataclass(slots=True)
class Tally:
    """One answer as it streams: content chunks, the finish reason, the server's usage."""

    chunks: int = 0
    finish: str | None = None
    done: bool = False                 # `data: [DONE]` came
    usage_tokens: int | None = None
    prompt_tokens: int | None = None

    def add(self, chunk: Chunk) -> bool:
        """Count `chunk`; True when it carries output text (a token's arrival)."""
        if chunk.completion_tokens is not None:
            self.usage_tokens = chunk.completion_tokens
        if chunk.prompt_tokens is not None:
            self.prompt_tokens = chunk.prompt_tokens
        if chunk.finish is not None:
            self.finish = chunk.finish
        if chunk.text:
            self.chunks += 1
            return True
        return False

    @property
    def finished(self) -> bool:
        """The server said the answer is complete (a finish reason, or [DONE])."""
        return self.finish is not None or self.done

    @property
    def tokens(self) -> int:
        return self.usage_tokens if self.usage_tokens is not None else self.chunks

    @property
    def source(self) -> CountSource:
        return CountSource.USAGE if self.usage_tokens is not None else CountSource.CHUNKS

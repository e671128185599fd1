"""One conversation turn as a request: what is sent, how long it is, how long an answer to ask for.

`TurnBuilder.request(history, prompt, index)` gives the turn's `messages` (the earlier turns
and the server's actual answers, `history`, then this turn's user message), the request body
(chat: those `messages`; completions: their contents joined by blank lines, one prompt), the
prompt's length in the server's tokens (a tokenizer's count, else the calibration's estimate
from words) and `max_tokens`: the file's output length, else the recorded answer's length
(`Prompt.reference`, counted the same way), else `fallback_output(index)` (a length
distribution's draw); at most `max_output_tokens`.

A Mooncake prompt (`hash_ids`) is text built block by block: block id h is the seeded words of
h (`PromptBuilder.text`), `block_tokens` long (exact with a tokenizer), the last block cut to
what `input_tokens` leaves; so equal ids give equal blocks, and prompts sharing leading ids share
that prefix on the wire. A JSONL prompt given as `messages` is sent as given (one turn).
A shared system prompt (`system_prefix(group, tokens)`) is built the same way from a block id of
its own per prefix group, so the conversations of one group send the same first message.
Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from harness.live.openai.prompts import Calibration, PromptBuilder, Tokenizer
from harness.live.openai.stream import Api
from workloads.datasets import Message, Prompt

__all__ = ["DEFAULT_BLOCK_TOKENS", "PREFIX_BLOCK_BASE", "Turn", "TurnBuilder"]

DEFAULT_BLOCK_TOKENS = 512    # Mooncake's traces hash 512-token blocks
PREFIX_BLOCK_BASE = 1 << 40   # shared system prompts' block ids: past any trace's hash ids


@dataclass(frozen=True)
class Turn:
    messages: tuple[Message, ...]   # the whole context sent, this turn's user message last
    prompt_tokens: int              # the context's length in the server's tokens (estimated without a tokenizer)
    output_tokens: int              # max_tokens asked


class TurnBuilder:
    def __init__(self, api: Api, calibration: Calibration, tokenizer: Tokenizer | None = None, seed: int = 0,
                 block_tokens: int = DEFAULT_BLOCK_TOKENS, max_output_tokens: int = 4096,
                 fallback_output: Callable[[int], int] | None = None) -> None:
        if block_tokens < 1 or max_output_tokens < 1:
            raise ValueError("block_tokens and max_output_tokens must be >= 1")
        self.api, self.calibration, self.tokenizer = api, calibration, tokenizer
        self.builder, self.block_tokens, self.max_output_tokens = PromptBuilder(seed), block_tokens, max_output_tokens
        self.fallback_output = fallback_output or (lambda _index: 128)
        self._blocks: dict[tuple[int, int], str] = {}

    def count(self, text: str) -> int:
        """`text`'s tokens: the tokenizer's count, else the calibration's from its words."""
        if self.tokenizer is not None:
            return self.tokenizer.count(text)
        return max(1, round(self.calibration.tokens_per_word * len(text.split())))

    def block(self, hash_id: int, tokens: int) -> str:
        key = (hash_id, tokens)
        if key not in self._blocks:
            if self.tokenizer is not None:
                text = self.builder.exact(hash_id, tokens, self.tokenizer, self.calibration)
            else:
                text = self.builder.text(hash_id, max(1, round(tokens / self.calibration.tokens_per_word)))
            self._blocks[key] = text
        return self._blocks[key]

    def system_prefix(self, group: int, tokens: int) -> Message:
        """Prefix group `group`'s shared system prompt, `tokens` long: the same text for every
        conversation of the group (block ids from PREFIX_BLOCK_BASE up, apart from a trace's)."""
        return Message("system", self.block(PREFIX_BLOCK_BASE + group, tokens))

    def user_text(self, prompt: Prompt) -> str:
        if prompt.text is not None:
            return prompt.text
        if prompt.hash_ids:
            total = prompt.input_tokens or self.block_tokens * len(prompt.hash_ids)
            parts = []
            for k, h in enumerate(prompt.hash_ids):
                left = total - k * self.block_tokens
                if left <= 0:
                    break
                parts.append(self.block(h, min(self.block_tokens, left)))
            return " ".join(parts)
        return prompt.messages[-1].content

    def output_tokens(self, prompt: Prompt, index: int) -> int:
        if prompt.output_tokens is not None:
            n = prompt.output_tokens
        elif prompt.reference:
            n = self.count(prompt.reference)
        else:
            n = self.fallback_output(index)
        return max(1, min(self.max_output_tokens, int(n)))

    def turn(self, history: tuple[Message, ...], prompt: Prompt, index: int) -> Turn:
        """Request `index`'s turn after `history` (the earlier turns and the answers they got)."""
        messages = prompt.messages if prompt.messages else (*history, Message("user", self.user_text(prompt)))
        return Turn(messages, self.prompt_tokens(messages), self.output_tokens(prompt, index))

    def prompt_tokens(self, messages: tuple[Message, ...]) -> int:
        if self.tokenizer is not None:
            return self.tokenizer.count(self.completion_text(messages)) if self.api is Api.COMPLETIONS else sum(
                self.tokenizer.count(m.content) for m in messages)
        words = sum(len(m.content.split()) for m in messages)
        return max(1, round(self.calibration.tokens_of(words)))

    @staticmethod
    def completion_text(messages: tuple[Message, ...]) -> str:
        return "\n\n".join(m.content for m in messages)

    def payload(self, turn: Turn) -> dict[str, Any]:
        """The body's prompt part: chat `messages`, or completions' `prompt`."""
        if self.api is Api.CHAT:
            return {"messages": [{"role": m.role, "content": m.content} for m in turn.messages]}
        return {"prompt": self.completion_text(turn.messages)}

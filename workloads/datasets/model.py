"""The prompt data model shared by the live driver and the sim engines.

A `Prompt` is one user turn as a data set gives it: its text (or chat `messages` for a
single-turn chat prompt), or Mooncake-style `hash_ids` (a list of block ids: equal ids
are equal token blocks, so prefix sharing is data, not chance) with its `input_tokens`;
the output length when the file gives one, and the answer the data set recorded
(`reference`, ShareGPT's `gpt` turn), from which an output length can be measured.

A `Conversation` is an ordered list of turns on one user, `think_time_s` apart: turn k
is sent with turns 1..k-1 and the server's own answers to them before it. A single
prompt is a conversation of one turn. `offset_s` is when the file says it starts
(seconds from the first; None: the load mode decides).

`Dataset` is what a loader returns; `sample(n, seed)` draws n conversations, the same
for one seed, without replacement while the data set lasts (then again from the top,
in a fresh order). Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

__all__ = ["Conversation", "Dataset", "DatasetError", "DatasetFormat", "Message", "Prompt"]


class DatasetError(ValueError):
    """A data set file that cannot be read; the text names the file, the line and the problem."""


class DatasetFormat(StrEnum):
    SHAREGPT = "sharegpt"
    JSONL = "jsonl"
    CSV = "csv"
    MOONCAKE = "mooncake"


@dataclass(frozen=True, slots=True)
class Message:
    role: str       # system, user or assistant
    content: str


@dataclass(frozen=True, slots=True)
class Prompt:
    """One user turn. Exactly one of `text`, `messages`, `hash_ids` carries the prompt."""

    text: str | None = None
    messages: tuple[Message, ...] = ()
    hash_ids: tuple[int, ...] = ()
    input_tokens: int | None = None      # given by the file (Mooncake: the prompt's length)
    output_tokens: int | None = None     # given by the file
    reference: str | None = None         # the answer the data set recorded

    def __post_init__(self) -> None:
        forms = (self.text is not None) + bool(self.messages) + bool(self.hash_ids)
        if forms != 1:
            raise ValueError("a prompt is text, messages or hash_ids: exactly one")
        if self.hash_ids and not (self.input_tokens and self.input_tokens > 0):
            raise ValueError("a hash_ids prompt needs input_tokens > 0")
        if self.output_tokens is not None and self.output_tokens < 1:
            raise ValueError(f"output tokens must be >= 1, got {self.output_tokens}")


@dataclass(frozen=True, slots=True)
class Conversation:
    """Turns in order on one user; `think_time_s` between an answer and the next turn."""

    id: str
    turns: tuple[Prompt, ...]
    think_time_s: float = 0.0
    offset_s: float | None = None        # its start from the file's first (s); None: not timed

    def __post_init__(self) -> None:
        if not self.turns:
            raise ValueError(f"conversation {self.id!r} has no turns")
        if self.think_time_s < 0:
            raise ValueError(f"think time must be >= 0, got {self.think_time_s}")


@dataclass(frozen=True)
class Dataset:
    """A data set file read: where it came from, in which format, its conversations in file order."""

    path: str
    format: DatasetFormat
    conversations: tuple[Conversation, ...]

    def __post_init__(self) -> None:
        if not self.conversations:
            raise DatasetError(f"{self.path}: no prompts in the file")

    def __len__(self) -> int:
        return len(self.conversations)

    @property
    def turns(self) -> int:
        return sum(len(c.turns) for c in self.conversations)

    @property
    def timed(self) -> bool:
        """Every conversation has a start time from the file (a trace to replay)."""
        return all(c.offset_s is not None for c in self.conversations)

    def sample(self, n: int, seed: int) -> list[Conversation]:
        """`n` conversations drawn for `seed`: a permutation, repeated (freshly shuffled) past the end."""
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        rng = np.random.default_rng(seed)
        picks: list[int] = []
        while len(picks) < n:
            picks.extend(int(i) for i in rng.permutation(len(self.conversations)))
        return [self.conversations[i] for i in picks[:n]]

"""Days of traffic for a fleet of LLM replicas: conversations whose prompts repeat, as block ids.

A request's prompt is a sequence of blocks of `block_size` tokens, each given by an
id (Mooncake's `hash_ids`: equal id = equal tokens at that place), so a prefix cache
and a prefix-aware router can see what repeats. Each conversation is one stream of
tokens: its tenant's system prompt, a retrieved document (RAG days), then question,
answer, question, answer... Turn j's prompt is the stream up to its question; its
`block_ids` name every full block of the stream up to the end of its answer (the
next turn sends that answer back). A block wholly inside the shared head (system
prompt, document) has the head's id, the same for every conversation with that head;
any other block is the conversation's own.

Open loop, as a trace is: a conversation starts at a Poisson time (`rate_rps` is
requests/s, so conversations start at rate_rps / mean turns), and turn j+1 arrives a
think time (exponential, at least `min_think_s`) after turn j's arrival, whatever
became of turn j; an answer later than that is still being written when the next turn
comes (its blocks miss). A flash crowd multiplies the start rate of new conversations
(no prefix to reuse but the system prompt's) by `flash_factor` for `flash_s` from
`flash_at_s`. `lose_replica_at_s` is the day's other event: the fleet loses a replica
then (`harness.engine.llm_fleet`). Deterministic for (day, seed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from workloads.llm import LengthDist

__all__ = ["FLEET_DAYS", "FLEET_SUITES", "FleetDay", "FleetSchedule", "build_fleet_schedule", "fleet_day", "fleet_suite",
           "own_block_base"]

_SHARED_BASE = 1 << 40   # ids of shared-head blocks: _SHARED_BASE + head * 2**20 + block index
_OWN_BASE = 1 << 50      # ids of a conversation's own blocks: _OWN_BASE + conversation * 2**20 + block index


def own_block_base() -> int:
    """Block ids at or over this are a conversation's own; under it, a shared head's."""
    return _OWN_BASE


class FleetDay(BaseModel):
    """One day of conversations; lengths in tokens, times in seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    rate_rps: float = Field(48.0, gt=0)
    duration_s: float = Field(600.0, gt=0)
    tenants: int = Field(8, ge=1)
    system: LengthDist = LengthDist.of_lognormal(600, 0.3, 4000)   # one per tenant, drawn once
    question: LengthDist = LengthDist.of_lognormal(80, 0.8, 1000)
    answer: LengthDist = LengthDist.of_lognormal(250, 0.6, 1024)
    turns_mean: float = Field(4.0, ge=1)       # geometric, at least 1 ...
    max_turns: int = Field(12, ge=1)           # ... at most this
    think_s: float = Field(25.0, ge=0)         # mean think time between turns
    min_think_s: float = Field(2.0, ge=0)
    docs: int = Field(0, ge=0)                 # hot RAG documents (0: none); each request one, Zipf
    doc: LengthDist = LengthDist.of_lognormal(3000, 0.2, 8000)
    doc_zipf: float = Field(1.2, gt=0)
    flash_at_s: float | None = None
    flash_s: float = Field(60.0, gt=0)
    flash_factor: float = Field(4.0, ge=1)
    lose_replica_at_s: float | None = None

    def mean_turns(self) -> float:
        """E[turns] of the geometric with mean `turns_mean` truncated at `max_turns`."""
        p = 1.0 / self.turns_mean
        k = np.arange(1, self.max_turns + 1)
        pmf = p * (1 - p) ** (k - 1)
        pmf[-1] += (1 - p) ** self.max_turns
        return float((k * pmf).sum())


@dataclass(frozen=True)
class FleetSchedule:
    """Requests in arrival order; `block_ids[i]`: the ids of request i's full context blocks."""

    name: str
    duration_s: float
    block_size: int
    tenants: tuple[str, ...]
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    tenant: np.ndarray
    conversation: np.ndarray
    turn: np.ndarray                   # 1 for a conversation's first request
    block_ids: list[tuple[int, ...]]
    lose_replica_at_s: float | None = None

    def __len__(self) -> int:
        return len(self.arrival_s)


def _starts(rng: np.random.Generator, day: FleetDay, rate: float) -> np.ndarray:
    """Conversation starts: Poisson at `rate`, times `flash_factor` in the flash window (thinning)."""
    peak = rate * (day.flash_factor if day.flash_at_s is not None else 1.0)
    n = rng.poisson(peak * day.duration_s)
    t = np.sort(rng.uniform(0, day.duration_s, n))
    if day.flash_at_s is None:
        return t
    inside = (t >= day.flash_at_s) & (t < day.flash_at_s + day.flash_s)
    keep = inside | (rng.uniform(size=n) < 1.0 / day.flash_factor)
    return t[keep]


def build_fleet_schedule(day: FleetDay, seed: int, block_size: int = 16) -> FleetSchedule:
    """Every request of `day`, deterministic for (day, seed, block_size)."""
    rng = np.random.default_rng(seed)
    system = day.system.draw(rng, day.tenants)
    docs = day.doc.draw(rng, day.docs) if day.docs else np.zeros(0, dtype=np.int64)
    starts = _starts(rng, day, day.rate_rps / day.mean_turns())
    m = len(starts)
    tenant = rng.integers(0, day.tenants, m)
    turns = np.minimum(rng.geometric(1.0 / day.turns_mean, m), day.max_turns)
    doc_of = np.full(m, -1)
    if day.docs:
        w = 1.0 / np.arange(1, day.docs + 1) ** day.doc_zipf
        doc_of = rng.choice(day.docs, size=m, p=w / w.sum())
    total = int(turns.sum())
    questions, answers = day.question.draw(rng, total), day.answer.draw(rng, total)
    thinks = day.min_think_s + rng.exponential(day.think_s, total) if day.think_s else np.full(total, day.min_think_s)
    rows: list[tuple[float, int, int, int, int, int, tuple[int, ...]]] = []
    k = 0
    for c in range(m):
        head_id = int(tenant[c]) * (day.docs + 1) + int(doc_of[c]) + 1
        head = int(system[tenant[c]]) + (int(docs[doc_of[c]]) if doc_of[c] >= 0 else 0)
        shared_blocks = head // block_size
        # Block b of the stream is the head's (shared by every conversation with this head) below
        # shared_blocks, else the conversation's own.
        shared = tuple(range(_SHARED_BASE + (head_id << 20), _SHARED_BASE + (head_id << 20) + shared_blocks))
        own = _OWN_BASE + (c << 20)
        stream, t = head, float(starts[c])
        for j in range(int(turns[c])):
            prompt = stream + int(questions[k])
            out = int(answers[k])
            stream = prompt + out
            n_blocks = stream // block_size
            ids = shared[:n_blocks] + tuple(range(own + shared_blocks, own + n_blocks))
            if t < day.duration_s:
                rows.append((t, prompt, out, int(tenant[c]), c, j + 1, ids))
            t += float(thinks[k])
            k += 1
    rows.sort(key=lambda r: (r[0], r[4]))
    col = list(zip(*rows)) if rows else [(), (), (), (), (), (), ()]
    return FleetSchedule(
        name=day.name, duration_s=day.duration_s, block_size=block_size,
        tenants=tuple(f"tenant-{i}" for i in range(day.tenants)),
        arrival_s=np.array(col[0], dtype=float), prompt_tokens=np.array(col[1], dtype=np.int64),
        output_tokens=np.array(col[2], dtype=np.int64), tenant=np.array(col[3], dtype=np.int64),
        conversation=np.array(col[4], dtype=np.int64), turn=np.array(col[5], dtype=np.int64),
        block_ids=list(col[6]), lose_replica_at_s=day.lose_replica_at_s)


_CHAT = FleetDay(name="chat")
FLEET_DAYS: dict[str, FleetDay] = {
    # multi-turn chat: 8 tenants' system prompts (~600 tokens), ~4 turns 25 s apart
    "chat": _CHAT,
    # a few tenants with long system prompts (~2,000 tokens) in front of short, mostly single-turn chats
    "shared-system": FleetDay(name="shared-system", tenants=4, system=LengthDist.of_lognormal(2000, 0.2, 6000),
                              question=LengthDist.of_lognormal(100, 0.6, 1000),
                              answer=LengthDist.of_lognormal(150, 0.6, 1024), turns_mean=1.5),
    # RAG: 6 documents of ~3,000 tokens, Zipf-popular (the first in ~45% of requests), one question each
    "hot-docs": FleetDay(name="hot-docs", tenants=1, system=LengthDist.of_lognormal(200, 0.1, 1000), docs=6,
                         question=LengthDist.of_lognormal(60, 0.5, 500),
                         answer=LengthDist.of_lognormal(120, 0.5, 512), turns_mean=1.0, rate_rps=32.0),
    # chat with a flash crowd of new conversations: 4x the starts for 60 s from 40% of the day
    "flash-crowd": _CHAT.model_copy(update={"name": "flash-crowd", "flash_at_s": 240.0}),
    # chat, and one replica lost at mid-day: its cached conversations must move
    "replica-loss": _CHAT.model_copy(update={"name": "replica-loss", "lose_replica_at_s": 300.0}),
}

# `harness compare llm-fleet:... llm-fleet:... --suite NAME`
FLEET_SUITES: dict[str, tuple[str, ...]] = {
    "llm-bad-day": ("chat", "shared-system", "hot-docs", "flash-crowd", "replica-loss"),
}


def fleet_day(name: str) -> FleetDay:
    """A named day; ValueError listing the names."""
    try:
        return FLEET_DAYS[name]
    except KeyError:
        raise ValueError(f"unknown fleet day '{name}': valid are {', '.join(FLEET_DAYS)}") from None


def fleet_suite(name: str) -> tuple[str, ...]:
    try:
        return FLEET_SUITES[name]
    except KeyError:
        raise ValueError(f"unknown fleet suite '{name}': valid are {', '.join(FLEET_SUITES)}") from None

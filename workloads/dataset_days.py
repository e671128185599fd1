"""A data set as a day for the sim engines: its conversations as requests whose blocks share what the wire shares.

`dataset_schedule(data, duration_s, seed, rate_rps=...)` turns a `workloads.datasets.Dataset` into the
`FleetSchedule` the fleet sim runs (`harness.engine.llm_fleet`), as `llm_days.build_fleet_schedule`
turns a synthetic day: each conversation is one stream of tokens (a shared system prompt of
`prefix_tokens`, group k mod `prefix_groups`, as `--prefix-tokens` sends live; then prompt, answer,
prompt, answer...), turn j's prompt is the stream up to its question and its `block_ids` name every
full block of the stream up to the end of its answer, so turn j+1 finds turn j's blocks cached.

A block's id is the content under it: a block inside the shared head is the head's (ids under
`llm_days.own_block_base()`, the same for every conversation of that group); any other is a stable
hash of the pieces it covers: a data set turn's prompt (the same in every copy of that
conversation, as the same text is on the wire), a Mooncake `hash_ids` block (equal ids: equal blocks,
shared across conversations, at Mooncake's 512 tokens a block), or an answer (the copy's own: live,
the server's answers differ). Token counts of text are estimated at TOKENS_PER_WORD (the sim has
no tokenizer); output lengths come from the file, else the recorded answer, else `output` drawn.

Starts: the file's times when every conversation has one and no `rate_rps` is given (a replay),
else Poisson conversation starts at `rate_rps` requests/s over the data set's mean turns, the
conversations `Dataset.sample`d with `seed`; turn j+1 arrives the conversation's think time after
turn j (open loop, as a trace is). Deterministic for (data, duration_s, seed, rate_rps, block_size).
"""

from __future__ import annotations

import math

import numpy as np

from workloads.datasets import Conversation, Dataset, Prompt
from workloads.llm import LengthDist
from workloads.llm_days import _OWN_BASE, _SHARED_BASE, FleetSchedule

__all__ = ["MOONCAKE_BLOCK_TOKENS", "TOKENS_PER_WORD", "dataset_schedule"]

TOKENS_PER_WORD = 1.3          # English text in a BPE vocabulary, about (the live driver calibrates on `usage`)
MOONCAKE_BLOCK_TOKENS = 512    # Mooncake's traces hash 512-token blocks (as the live driver builds them)
_OUTPUT = LengthDist.of_lognormal(24, 0.5, 64)   # the `short` mix's outputs, the live default's
_OWN_SPAN = 1 << 49            # own ids lie in [_OWN_BASE, _OWN_BASE + _OWN_SPAN)

# A piece of a stream: (first token, last token + 1, key, key's own offset) -> what a block covers.
_Piece = tuple[int, int, int, int]


def _words(text: str) -> int:
    return max(1, math.ceil(len(text.split()) * TOKENS_PER_WORD))


def _prompt_tokens(p: Prompt) -> int:
    if p.hash_ids:
        return int(p.input_tokens or MOONCAKE_BLOCK_TOKENS * len(p.hash_ids))
    if p.messages:
        return sum(_words(m.content) for m in p.messages)
    return _words(p.text or "")


def _output_tokens(p: Prompt, drawn: int) -> int:
    if p.output_tokens is not None:
        return p.output_tokens
    return _words(p.reference) if p.reference else drawn


def _prompt_pieces(p: Prompt, at: int, n: int, conv: int, turn: int) -> list[_Piece]:
    if not p.hash_ids:
        return [(at, at + n, hash((1, conv, turn)), 0)]
    pieces = []
    for k, h in enumerate(p.hash_ids):
        lo = at + k * MOONCAKE_BLOCK_TOKENS
        if lo >= at + n:
            break
        pieces.append((lo, min(at + n, lo + MOONCAKE_BLOCK_TOKENS), hash((2, h)), 0))
    return pieces


def _block_id(b: int, size: int, pieces: list[_Piece], head: int, group: int) -> int:
    lo, hi = b * size, (b + 1) * size
    if hi <= head:
        return _SHARED_BASE + (group << 20) + b
    covered = tuple((key, max(lo, start) - start) for start, end, key, _ in pieces if start < hi and end > lo)
    return _OWN_BASE + hash((lo - head if head <= lo else -lo, covered)) % _OWN_SPAN


def _starts(data: Dataset, duration_s: float, seed: int, rate_rps: float | None
            ) -> tuple[list[Conversation], list[float]]:
    if rate_rps is None:
        if not data.timed:
            raise ValueError(f"{data.path}: has no start times to replay: give a rate")
        convs = sorted(data.conversations, key=lambda c: c.offset_s or 0.0)
        return convs, [c.offset_s or 0.0 for c in convs]
    if not rate_rps > 0:
        raise ValueError(f"rate must be > 0, got {rate_rps}")
    rng = np.random.default_rng((seed, 13))
    per_s = rate_rps / (data.turns / len(data))
    n = int(rng.poisson(per_s * duration_s))
    return data.sample(n, seed), sorted(rng.uniform(0, duration_s, n).tolist())


def dataset_schedule(data: Dataset, duration_s: float, seed: int, rate_rps: float | None = None,
                     block_size: int = 16, output: LengthDist = _OUTPUT, prefix_tokens: int = 0,
                     prefix_groups: int = 1) -> FleetSchedule:
    """Every request of `data`'s conversations that arrives within `duration_s` (see the module doc)."""
    if prefix_tokens < 0 or prefix_groups < 1 or block_size < 1:
        raise ValueError("prefix_tokens >= 0, prefix_groups >= 1 and block_size >= 1, got "
                         f"{prefix_tokens}, {prefix_groups} and {block_size}")
    convs, starts = _starts(data, duration_s, seed, rate_rps)
    index = {id(c): k for k, c in enumerate(data.conversations)}
    drawn = output.draw(np.random.default_rng((seed, 17)), max(1, sum(len(c.turns) for c in convs)))
    rows: list[tuple[float, int, int, int, int, tuple[int, ...]]] = []
    k = 0
    for c, (conv, t) in enumerate(zip(convs, starts)):
        group, stream, pieces = c % prefix_groups, prefix_tokens, []
        for j, p in enumerate(conv.turns):
            q, out = _prompt_tokens(p), _output_tokens(p, int(drawn[k % len(drawn)]))
            k += 1
            pieces += _prompt_pieces(p, stream, q, index[id(conv)], j)
            pieces.append((stream + q, stream + q + out, hash((3, c, j)), 0))
            prompt, stream = stream + q, stream + q + out
            ids = tuple(_block_id(b, block_size, pieces, prefix_tokens, group) for b in range(stream // block_size))
            if t < duration_s:
                rows.append((t, prompt, out, c, j + 1, ids))
            t += conv.think_time_s
    rows.sort(key=lambda r: (r[0], r[3]))
    col = list(zip(*rows)) if rows else [(), (), (), (), (), ()]
    n = len(rows)
    return FleetSchedule(
        name=data.path, duration_s=duration_s, block_size=block_size, tenants=("default",),
        arrival_s=np.array(col[0], dtype=float), prompt_tokens=np.array(col[1], dtype=np.int64),
        output_tokens=np.array(col[2], dtype=np.int64), tenant=np.zeros(n, dtype=np.int64),
        conversation=np.array(col[3], dtype=np.int64), turn=np.array(col[4], dtype=np.int64),
        block_ids=list(col[5]))

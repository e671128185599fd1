"""Closed forms for a fleet's prefix hit rate, from a day's schedule alone: what the sim must come near.

A request's cached prefix on a replica is the deepest earlier turn of its conversation
that went to the same replica (that turn's prompt and answer blocks, committed when it
ran), else its tenant's shared head (system prompt, document) once any request with that
head has run there. What the engine may take is at most (prompt - 1) // block_size blocks
(`targets.llm.prefix_cache.PrefixCache.match`: the last token is always prefilled).

- `round_robin_hit_rate(schedule, R)`: a layer-4 round robin places each turn on a replica
  independent of the conversation, uniform over R, so turn j's deepest match is turn k < j
  with probability (1/R)(1 - 1/R)^(j-1-k), and with the rest, (1 - 1/R)^(j-1), it finds only
  the shared head. Hit rate = sum of expected hit tokens / sum of prompt tokens. With T turns
  of similar length the conversation part is about 1/R of what affinity gets: round robin
  over 16 replicas keeps the heads and throws away the history.
- `affinity_hit_rate(schedule)`: the ceiling, every turn where the turn before it went.

Round robin's head is warm on a replica once any earlier request with that head landed there
(1 - (1 - 1/R)^n after n such requests), so a short day's cold starts are in the form; the
ceiling takes every head as warm. Both assume every answer finished before the next turn
arrives and nothing evicted: the sim's rate sits at or a little under them (late answers,
evictions, and a head whose first request is still prefilling), which is what the test checks.
"""

from __future__ import annotations

from workloads.llm_days import FleetSchedule, own_block_base

__all__ = ["affinity_hit_rate", "exact_repeat_share", "round_robin_hit_rate"]


def _turns(schedule: FleetSchedule) -> dict[int, list[int]]:
    """Request indices of each conversation, in turn order."""
    by_conv: dict[int, list[int]] = {}
    for i, c in enumerate(schedule.conversation.tolist()):
        by_conv.setdefault(c, []).append(i)
    turn = schedule.turn.tolist()
    for rows in by_conv.values():
        rows.sort(key=lambda i: turn[i])
    return by_conv


def _heads_before(schedule: FleetSchedule) -> list[int]:
    """For each request, how many earlier requests (arrival order) carried its shared head."""
    own = own_block_base()
    seen: dict[int | None, int] = {}
    out: list[int] = []
    for ids in schedule.block_ids:
        key = ids[0] if ids and ids[0] < own else None
        n = seen.get(key, 0)
        out.append(n)
        seen[key] = n + 1
    return out


def _expected_hits(schedule: FleetSchedule, p_same: float | None) -> float:
    """Expected hit tokens; `p_same` the chance a turn lands on a given earlier request's replica (None: always
    the last turn's replica, every head warm)."""
    bs = schedule.block_size
    prompts = schedule.prompt_tokens.tolist()
    own = own_block_base()
    before = _heads_before(schedule)
    hits = 0.0
    for rows in _turns(schedule).values():
        context: list[int] = []   # blocks each earlier turn left cached (prompt and answer)
        for i in rows:
            ids = schedule.block_ids[i]
            limit = (prompts[i] - 1) // bs
            head = min(sum(1 for b in ids if b < own), limit)
            if p_same is None:
                best = max(head, min(context[-1], limit)) if context else head
                hits += best * bs
            else:
                miss_all, expect = 1.0, 0.0
                for k in range(len(context) - 1, -1, -1):     # deepest first
                    expect += miss_all * p_same * max(head, min(context[k], limit))
                    miss_all *= 1.0 - p_same
                # no turn of its own there: the head is warm if another conversation's request with it went there
                warm = 1.0 - (1.0 - p_same) ** max(0, before[i] - len(context))
                hits += (expect + miss_all * warm * head) * bs
            context.append(len(ids))
    return hits


def round_robin_hit_rate(schedule: FleetSchedule, replicas: int) -> float:
    """Prompt tokens a layer-4 round robin over `replicas` finds cached / prompt tokens (expected)."""
    if replicas < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    total = int(schedule.prompt_tokens.sum())
    return _expected_hits(schedule, 1.0 / replicas) / total if total else 0.0


def affinity_hit_rate(schedule: FleetSchedule) -> float:
    """The ceiling: each turn on the replica its conversation's last turn went to."""
    total = int(schedule.prompt_tokens.sum())
    return _expected_hits(schedule, None) / total if total else 0.0


def exact_repeat_share(schedule: FleetSchedule) -> float:
    """Share of requests whose whole prompt an earlier request of the day sent, token for token: the most an
    exact-response cache of unbounded size could serve (and only where decoding is greedy: a sampled answer
    replayed is not the answer the user would have drawn). A prompt is its full blocks' ids, its length, and
    the conversation its tail belongs to when the tail is the conversation's own (a question)."""
    bs, own = schedule.block_size, own_block_base()
    prompts, convs = schedule.prompt_tokens.tolist(), schedule.conversation.tolist()
    seen: set[tuple[object, ...]] = set()
    repeats = 0
    for i, ids in enumerate(schedule.block_ids):
        full = prompts[i] // bs
        head = sum(1 for b in ids if b < own) * bs
        key = (ids[:full], prompts[i], convs[i] if prompts[i] > head else -1)
        repeats += key in seen
        seen.add(key)
    return repeats / len(prompts) if prompts else 0.0

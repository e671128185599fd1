"""What a router is given: the request it routes (`Routed`) and what it may read of the fleet (`FleetView`).

A router sees the prompt as its block names (`targets.llm.prefix_cache.chain_hashes`),
the lengths it asked for, and the conversation it belongs to (its client). The view
is the fleet as the router's own counters or the replicas' published state say it
is at the moment of routing: which replicas are alive, each one's outstanding
requests and tokens (prompt + output of what it was sent and has not finished),
and, for a KV-aware router, how many of a prompt's leading blocks a replica holds
in its prefix cache (llm-d and Dynamo learn this from the engines' KV events).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["FleetView", "Routed"]


@dataclass(frozen=True, slots=True)
class Routed:
    """One request as a router sees it."""

    id: int
    conversation: int                 # the client's conversation; each turn is a new connection
    block_hashes: tuple[int, ...]     # chained names of the prompt's full blocks
    prompt_tokens: int
    output_tokens: int


class FleetView(Protocol):
    """The fleet at the moment of routing. Lists are indexed by replica, every replica listed."""

    @property
    def alive(self) -> list[bool]: ...
    @property
    def outstanding_requests(self) -> list[int]: ...
    @property
    def outstanding_tokens(self) -> list[int]: ...
    def cached_blocks(self, replica: int, names: tuple[int, ...]) -> int: ...

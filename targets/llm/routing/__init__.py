"""Routers for a fleet of LLM replicas: clock-free policies behind one contract, chosen by name.

`create_router(name, replicas, block_size, ...)` builds one (`RouterPolicy`):

- `round-robin`: the layer-4 balancer, blind to the prompt (`RoundRobin`);
- `least-tokens`: least outstanding tokens (`LeastTokens`);
- `prefix`: prefix affinity by consistent hashing with bounded load (`PrefixAffinity`;
  `load_factor` 0 turns the bound off, `affinity_blocks` leading blocks are hashed);
- `kv-aware`: cached blocks against queue depth (`KvAware`, `overlap_weight`);
- `cache-aware`: sglang-router 0.3.2's `cache_aware` as it behaves (`CacheAware`:
  `cache_threshold`, `balance_abs`, `balance_rel`).

Contract: `route(req: Routed, view: FleetView) -> int`, an alive replica's index;
it never reads a clock (`targets.llm.routing.view` says what the view holds).
"""

from __future__ import annotations

from enum import Enum
from typing import Protocol

from targets.llm.routing.policies import CacheAware, KvAware, LeastTokens, PrefixAffinity, RoundRobin, bound_of, touch
from targets.llm.routing.view import FleetView, Routed

__all__ = ["CacheAware", "FleetView", "Router", "RouterPolicy", "Routed", "bound_of", "create_router", "router_names",
           "touch"]


class RouterPolicy(str, Enum):
    ROUND_ROBIN = "round-robin"
    LEAST_TOKENS = "least-tokens"
    PREFIX = "prefix"
    KV_AWARE = "kv-aware"
    CACHE_AWARE = "cache-aware"


class Router(Protocol):
    def route(self, req: Routed, view: FleetView) -> int: ...


def router_names() -> tuple[str, ...]:
    return tuple(p.value for p in RouterPolicy)


def create_router(name: str, replicas: int, block_size: int = 16, load_factor: float = 1.25,
                  affinity_blocks: int = 8, overlap_weight: float = 1.0, cache_threshold: float = 0.3,
                  balance_abs: int = 64, balance_rel: float = 1.5) -> Router:
    """The router `name` names over `replicas`; ValueError listing the valid names or naming a bad knob."""
    try:
        policy = RouterPolicy(name)
    except ValueError:
        raise ValueError(f"unknown router '{name}': valid are {', '.join(router_names())}") from None
    if replicas < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    if policy is RouterPolicy.ROUND_ROBIN:
        return RoundRobin(replicas)
    if policy is RouterPolicy.LEAST_TOKENS:
        return LeastTokens(replicas)
    if policy is RouterPolicy.PREFIX:
        return PrefixAffinity(replicas, load_factor, affinity_blocks)
    if policy is RouterPolicy.CACHE_AWARE:
        return CacheAware(replicas, block_size, cache_threshold, balance_abs, balance_rel)
    return KvAware(replicas, block_size, overlap_weight)

"""The fleet's routers: exact choices on small fleets, and bounded-load affinity's bound under any traffic."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from targets.llm.prefix_cache import chain_hashes
from targets.llm.routing import CacheAware, Routed, bound_of, create_router, router_names


@dataclass
class View:
    """A fleet as a test sets it: outstanding counts kept by `send`/`finish`, caches by hand."""

    n: int
    alive: list[bool] = field(default_factory=list)
    outstanding_requests: list[int] = field(default_factory=list)
    outstanding_tokens: list[int] = field(default_factory=list)
    cached: dict[int, set[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.alive = self.alive or [True] * self.n
        self.outstanding_requests = self.outstanding_requests or [0] * self.n
        self.outstanding_tokens = self.outstanding_tokens or [0] * self.n

    def cached_blocks(self, replica: int, names: tuple[int, ...]) -> int:
        have = self.cached.get(replica, set())
        k = 0
        while k < len(names) and names[k] in have:
            k += 1
        return k

    def send(self, r: int, req: Routed) -> None:
        self.outstanding_requests[r] += 1
        self.outstanding_tokens[r] += req.prompt_tokens + req.output_tokens

    def finish(self, r: int, req: Routed) -> None:
        self.outstanding_requests[r] -= 1
        self.outstanding_tokens[r] -= req.prompt_tokens + req.output_tokens


def req(i: int, ids: list[int], conversation: int = 0, out: int = 10) -> Routed:
    return Routed(i, conversation, chain_hashes(ids), len(ids) * 16, out)


def test_registry_lists_the_valid_names():
    assert router_names() == ("round-robin", "least-tokens", "prefix", "kv-aware", "cache-aware")
    with pytest.raises(ValueError, match="valid are round-robin, least-tokens, prefix, kv-aware, cache-aware"):
        create_router("random", 4)
    with pytest.raises(ValueError, match="load_factor"):
        create_router("prefix", 4, load_factor=0.5)


def test_round_robin_is_blind_to_the_conversation_and_skips_the_dead():
    view = View(3, alive=[True, False, True])
    rr = create_router("round-robin", 3)
    # one conversation's four turns: each a new connection, scattered
    assert [rr.route(req(i, [1, 2, 3 + i], conversation=7), view) for i in range(4)] == [0, 2, 0, 2]


def test_least_tokens_picks_the_least_loaded_and_spreads_ties():
    view = View(3, outstanding_tokens=[500, 100, 300])
    lt = create_router("least-tokens", 3)
    assert lt.route(req(0, [1]), view) == 1
    idle = View(3)
    assert [lt.route(req(i, [1]), idle) for i in range(3)] == [2, 0, 1]   # ties: after the last chosen


def test_prefix_affinity_keeps_a_conversation_and_a_shared_head_together():
    view = View(8)
    pa = create_router("prefix", 8, load_factor=0)
    first = pa.route(req(0, [1, 2, 3, 4]), view)
    # the next turn carries the first turn's blocks: it follows them
    assert pa.route(req(1, [1, 2, 3, 4, 5, 6]), view) == first
    # a new prompt under the same 8 leading blocks hashes to one replica whatever follows
    a = pa.route(req(2, list(range(100, 108)) + [900]), view)
    assert pa.route(req(3, list(range(100, 108)) + [901, 902]), view) == a


def test_without_a_bound_a_hot_prefix_melts_one_replica_and_with_one_it_spills():
    hot = list(range(50, 70))
    for factor, most in ((0, 40), (1.25, math.ceil(1.25 * 40 / 8))):
        view = View(8)
        pa = create_router("prefix", 8, load_factor=factor)
        for i in range(40):
            r = pa.route(req(i, hot + [1000 + i]), view)
            view.send(r, req(i, hot))
        assert max(view.outstanding_requests) == most if not factor else max(view.outstanding_requests) <= most
        assert sum(view.outstanding_requests) == 40


def test_kv_aware_weighs_the_cache_against_the_queue():
    names = chain_hashes(list(range(20)))
    view = View(3, outstanding_tokens=[0, 160, 0], cached={1: set(names)})
    kv = create_router("kv-aware", 3, block_size=16)
    # replica 1 holds all 20 blocks and has 10 blocks queued: 10 < 20 blocks to prefill elsewhere
    assert kv.route(Routed(0, 0, names, 320, 10), view) == 1
    view.outstanding_tokens[1] = 16 * 40   # now its queue outweighs the cache
    assert kv.route(Routed(1, 0, names, 320, 10), view) in (0, 2)


def test_cache_aware_sends_every_cold_prompt_on_an_idle_fleet_to_one_replica():
    """As sglang-router 0.3.2 was seen to (three recording workers, prompts one at a time): distinct
    prompts with nothing outstanding all reach one worker; sent at once, they spread by load."""
    ca = create_router("cache-aware", 3)
    idle = View(3)
    assert {ca.route(req(i, [1000 * i + k for k in range(4)]), idle) for i in range(6)} == {0}
    busy = View(3)
    chosen = []
    for i in range(6):
        rq = req(10 + i, [5000 + 100 * i + k for k in range(4)])
        chosen.append(ca.route(rq, busy))
        busy.send(chosen[-1], rq)
    assert chosen == [0, 1, 2, 0, 1, 2]


def test_cache_aware_follows_its_tree_past_the_threshold_and_balances_past_both_thresholds():
    ca = create_router("cache-aware", 3, cache_threshold=0.5, balance_abs=4, balance_rel=1.5)
    view = View(3, outstanding_requests=[0, 2, 0])
    head = [7, 8, 9]
    first = Routed(0, 0, chain_hashes(head), 3 * 16, 4)
    assert ca.route(first, view) == 0                           # cold: least loaded
    view.outstanding_requests[:] = [3, 0, 0]
    # 3 of 4 blocks known on replica 0: 0.75 > 0.5, so it goes there although it is the busiest
    assert ca.route(Routed(1, 0, chain_hashes(head + [1]), 4 * 16, 4), view) == 0
    # 3 of 8 blocks: 0.375 <= 0.5, least loaded
    assert ca.route(Routed(2, 0, chain_hashes(head + [1, 2, 3, 4, 5]), 8 * 16, 4), view) == 1
    view.outstanding_requests[:] = [9, 4, 2]                    # 9 - 2 > 4 and 9 > 1.5 x 2: imbalanced
    assert ca.route(Routed(3, 0, chain_hashes(head + [1]), 4 * 16, 4), view) == 2
    assert ca.balanced == 1 and ca.by_match == 1
    with pytest.raises(ValueError, match="cache_threshold"):
        create_router("cache-aware", 3, cache_threshold=1.5)


def test_no_replica_alive_is_an_error():
    with pytest.raises(ValueError, match="no replica is alive"):
        create_router("least-tokens", 2).route(req(0, [1]), View(2, alive=[False, False]))


events = st.lists(st.tuples(st.booleans(), st.integers(0, 5), st.integers(0, 30)), min_size=1, max_size=200)


@settings(max_examples=200, deadline=None)
@given(events, st.integers(1, 12), st.sampled_from([1.0, 1.1, 1.25, 2.0]), st.integers(0, 11))
def test_bounded_affinity_never_exceeds_its_bound_and_loses_nothing(evs, n, factor, dead):
    """Any interleaving of arrivals (from 6 prefix families, 3 of them hot) and finishes, one replica
    possibly dead: the chosen replica is alive and is never left over ceil(c x mean); every request is
    held by exactly one replica until it finishes."""
    alive = [r != dead for r in range(n)] if n > 1 else [True]
    view = View(n, alive=alive)
    pa = create_router("prefix", n, load_factor=factor)
    held: dict[int, int] = {}
    for i, (arrive, family, tail) in enumerate(evs):
        if arrive or not held:
            rq = req(i, [family * 100 + k for k in range(10)] + [tail])
            before = bound_of(factor, view.outstanding_requests, alive)
            r = pa.route(rq, view)
            assert alive[r]
            view.send(r, rq)
            held[i] = r
            assert view.outstanding_requests[r] <= before
            assert view.outstanding_requests[r] <= math.ceil(factor * sum(view.outstanding_requests) / sum(alive))
        else:
            k = min(held)
            view.finish(held.pop(k), req(k, []))
        counts = [0] * n
        for r in held.values():
            counts[r] += 1
        assert counts == view.outstanding_requests


@settings(max_examples=100, deadline=None)
@given(events, st.integers(1, 6), st.integers(0, 5), st.integers(1, 6))
def test_cache_aware_routes_to_the_alive_and_keeps_its_trees_bounded(evs, n, dead, tree_blocks):
    alive = [r != dead for r in range(n)] if n > 1 else [True]
    view = View(n, alive=alive)
    ca = CacheAware(n, 16, tree_blocks=tree_blocks)
    for i, (_, family, tail) in enumerate(evs):
        rq = req(i, [family * 100 + k for k in range(3)] + [tail])
        r = ca.route(rq, view)
        assert alive[r]
        view.send(r, rq)
        assert all(len(t) <= tree_blocks for t in ca.trees)

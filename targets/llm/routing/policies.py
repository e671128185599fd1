"""The router policies: `route(request, view) -> replica`, each a pure function of its own state and the view.

- `RoundRobin`: the design doc's layer-4 balancer. It sees connections, not prompts:
  each request is a new connection (a chat turn comes after tens of seconds of
  thinking, past any keep-alive timeout), so turns go round robin over the alive
  replicas and a conversation lands wherever the next connection does.
- `LeastTokens`: the alive replica with the fewest outstanding tokens (ties: the next
  one after the last chosen, so an idle fleet is still spread).
- `PrefixAffinity`: each request goes where its prompt's longest known prefix was sent
  (a table of block name -> replica, SGLang's cache-aware router's approximate tree in
  flat form), else where consistent hashing of its leading `affinity_blocks` blocks
  puts it; with `load_factor` c > 0 no replica takes a request that would leave it
  over ceil(c x mean outstanding requests) (Mirrokni, Thorup and Zadimoghaddam 2018,
  "Consistent Hashing with Bounded Loads"): it walks the ring from the key to the first
  replica under the bound, so a hot prefix spills to the same few next replicas.
- `KvAware`: the alive replica of least cost = overlap_weight x blocks it would
  prefill (prompt blocks not in its cache) + its outstanding blocks (queue depth in
  blocks), as Dynamo's KV router scores workers and llm-d's scorers weigh the prefix
  cache against the queue (ties as LeastTokens).
- `CacheAware`: sglang-router's `cache_aware` as release 0.3.2 behaves on the wire (probed
  here with three recording workers: docs/guide/llm-fleet-live.md): an approximate tree per
  replica of the prompts sent there; a prompt whose best match covers more than
  `cache_threshold` of it goes to the replica that matched most, any other to the replica with
  the fewest outstanding requests (ties: the lowest index, so an idle fleet sends every cold
  prompt to one replica, as sglang-router does); when loads are imbalanced past both
  thresholds (max - min > `balance_abs` and max > `balance_rel` x min) the least loaded
  replica, whatever the match.

None reads a clock; `route` always returns an alive replica (ValueError when none is).
"""

from __future__ import annotations

import bisect
import math
from typing import TypeVar

from targets.llm.routing.view import FleetView, Routed

V = TypeVar("V")

__all__ = ["CacheAware", "KvAware", "LeastTokens", "PrefixAffinity", "RoundRobin", "bound_of", "touch"]


def touch(table: dict[int, V], names: tuple[int, ...], value: V, entries: int) -> None:
    """Mark each block name in `table` as just used (with `value`), then drop the least recently used
    names past `entries`: the LRU table a router keeps of the blocks it sent."""
    for name in names:
        table.pop(name, None)
        table[name] = value
    while len(table) > entries:
        del table[next(iter(table))]


def _alive_or_fail(view: FleetView) -> list[bool]:
    alive = view.alive
    if not any(alive):
        raise ValueError("no replica is alive to route to")
    return alive


def _argmin_from(costs: list[float], alive: list[bool], start: int) -> int:
    """The alive index of least cost, ties broken by the first at or after `start` (cyclically)."""
    n = len(costs)
    best, best_cost = -1, math.inf
    for k in range(n):
        r = (start + k) % n
        if alive[r] and costs[r] < best_cost:
            best, best_cost = r, costs[r]
    return best


def bound_of(load_factor: float, outstanding: list[int], alive: list[bool]) -> int:
    """The most outstanding requests a replica may have after taking one more: ceil(c x mean after)."""
    n = sum(alive)
    total = sum(o for o, a in zip(outstanding, alive) if a) + 1
    return math.ceil(load_factor * total / n - 1e-9)


class RoundRobin:
    def __init__(self, replicas: int) -> None:
        self.replicas = replicas
        self._next = 0

    def route(self, req: Routed, view: FleetView) -> int:
        alive = _alive_or_fail(view)
        while not alive[self._next % self.replicas]:
            self._next += 1
        r = self._next % self.replicas
        self._next += 1
        return r


class LeastTokens:
    def __init__(self, replicas: int) -> None:
        self.replicas = replicas
        self._start = 0

    def route(self, req: Routed, view: FleetView) -> int:
        alive = _alive_or_fail(view)
        r = _argmin_from([float(t) for t in view.outstanding_tokens], alive, self._start)
        self._start = (r + 1) % self.replicas
        return r


class PrefixAffinity:
    def __init__(self, replicas: int, load_factor: float = 1.25, affinity_blocks: int = 8, vnodes: int = 64,
                 table_entries: int = 2_000_000) -> None:
        if not (load_factor == 0 or load_factor >= 1):
            raise ValueError(f"load_factor must be 0 (no bound) or >= 1, got {load_factor}")
        if affinity_blocks < 1 or vnodes < 1 or table_entries < 1:
            raise ValueError("affinity_blocks, vnodes and table_entries must be >= 1")
        self.replicas = replicas
        self.load_factor = load_factor
        self.affinity_blocks = affinity_blocks
        points = sorted((hash((0x5BD1E995, r, v)), r) for r in range(replicas) for v in range(vnodes))
        self._ring_keys = [p for p, _ in points]
        self._ring_owner = [r for _, r in points]
        self.table: dict[int, int] = {}    # block name -> replica it was last sent to (insertion order: LRU)
        self.table_entries = table_entries
        self.spills = 0                    # requests the bound sent away from their preferred replica

    def _ring_from(self, key: int) -> list[int]:
        """Every replica once, in ring order clockwise from `key`."""
        i = bisect.bisect_left(self._ring_keys, key)
        seen: list[int] = []
        owners, m = self._ring_owner, len(self._ring_owner)
        for k in range(m):
            r = owners[(i + k) % m]
            if r not in seen:
                seen.append(r)
                if len(seen) == self.replicas:
                    break
        return seen

    def preferred(self, req: Routed, alive: list[bool]) -> int | None:
        """The alive replica the deepest known block of the prompt was sent to (None: none known)."""
        table = self.table
        for name in reversed(req.block_hashes):
            r = table.get(name)
            if r is not None and alive[r]:
                return r
        return None

    def route(self, req: Routed, view: FleetView) -> int:
        alive = _alive_or_fail(view)
        names = req.block_hashes
        key = names[min(len(names), self.affinity_blocks) - 1] if names else hash((0x27D4EB2F, req.conversation))
        ring = [r for r in self._ring_from(key) if alive[r]]
        want = self.preferred(req, alive)
        order = ring if want is None else [want] + [r for r in ring if r != want]
        chosen = order[0]
        if self.load_factor:
            outstanding = view.outstanding_requests
            bound = bound_of(self.load_factor, outstanding, alive)
            chosen = next(r for r in order if outstanding[r] + 1 <= bound)
            self.spills += chosen != order[0]
        self._remember(names, chosen)
        return chosen

    def _remember(self, names: tuple[int, ...], replica: int) -> None:
        touch(self.table, names, replica, self.table_entries)

    def forget(self, replica: int) -> None:
        """A replica is gone: its table entries point nowhere (the next turns re-hash)."""
        self.table = {k: r for k, r in self.table.items() if r != replica}


class KvAware:
    def __init__(self, replicas: int, block_size: int, overlap_weight: float = 1.0) -> None:
        if block_size < 1 or not overlap_weight >= 0:
            raise ValueError("block_size must be >= 1 and overlap_weight >= 0")
        self.replicas = replicas
        self.block_size = block_size
        self.overlap_weight = overlap_weight
        self._start = 0

    def route(self, req: Routed, view: FleetView) -> int:
        alive = _alive_or_fail(view)
        names, w, bs = req.block_hashes, self.overlap_weight, self.block_size
        need = len(names)
        costs = [w * (need - view.cached_blocks(r, names)) + t / bs if alive[r] else math.inf
                 for r, t in enumerate(view.outstanding_tokens)]
        r = _argmin_from(costs, alive, self._start)
        self._start = (r + 1) % self.replicas
        return r


class CacheAware:
    def __init__(self, replicas: int, block_size: int, cache_threshold: float = 0.3, balance_abs: int = 64,
                 balance_rel: float = 1.5, tree_blocks: int = 1 << 20) -> None:
        """Defaults: sglang-router 0.3.2's (`--cache-threshold 0.3 --balance-abs-threshold 64
        --balance-rel-threshold 1.5`); `tree_blocks` bounds each replica's tree (LRU), as its
        `--max-tree-size` of 2^26 characters does (~2^20 blocks of 16 tokens at ~4 characters a token)."""
        if block_size < 1 or tree_blocks < 1:
            raise ValueError("block_size and tree_blocks must be >= 1")
        if not 0 <= cache_threshold <= 1:
            raise ValueError(f"cache_threshold must be within 0-1, got {cache_threshold}")
        if balance_abs < 0 or not balance_rel >= 1:
            raise ValueError(f"balance_abs must be >= 0 and balance_rel >= 1, got {balance_abs} and {balance_rel}")
        self.replicas = replicas
        self.block_size = block_size
        self.cache_threshold = cache_threshold
        self.balance_abs = balance_abs
        self.balance_rel = balance_rel
        self.tree_blocks = tree_blocks
        # Per replica: the block names of the prompts sent there (a chained name stands for its whole
        # prefix, so the deepest name found is the match), in insertion order for LRU.
        self.trees: list[dict[int, None]] = [{} for _ in range(replicas)]
        self.balanced = 0      # requests sent by load because the fleet was imbalanced
        self.by_match = 0      # requests sent to the replica that matched most

    def matched_blocks(self, replica: int, names: tuple[int, ...]) -> int:
        """How many leading blocks of `names` the replica's tree holds."""
        tree = self.trees[replica]
        for i in range(len(names) - 1, -1, -1):
            if names[i] in tree:
                return i + 1
        return 0

    def route(self, req: Routed, view: FleetView) -> int:
        alive = _alive_or_fail(view)
        loads = view.outstanding_requests
        up = [r for r in range(self.replicas) if alive[r]]
        least = min(up, key=lambda r: (loads[r], r))
        most = max(loads[r] for r in up)
        if most - loads[least] > self.balance_abs and most > self.balance_rel * loads[least]:
            chosen = least
            self.balanced += 1
        else:
            names = req.block_hashes
            # the deepest match, ties to the least loaded, then the lowest index
            matched, _, neg_index = max((self.matched_blocks(r, names), -loads[r], -r) for r in up)
            best = -neg_index
            if req.prompt_tokens and matched * self.block_size / req.prompt_tokens > self.cache_threshold:
                chosen = best
                self.by_match += 1
            else:
                chosen = least
        touch(self.trees[chosen], req.block_hashes, None, self.tree_blocks)
        return chosen

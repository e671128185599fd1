"""A KV block budget that is also a prefix cache, as vLLM's automatic prefix caching keeps one.

A prompt is a sequence of blocks of `block_size` tokens, each named by a chained
hash of its content: block k's name is hash(name of block k-1, content of block k)
(`chain_hashes`), so equal names mean an equal prefix up to and including that
block. Content is a block's token ids or, in sim, one id per block (Mooncake's
`hash_ids`: equal id = equal tokens). A `Sequence` carries the names of its
context's full blocks in `block_hashes` (prompt and, where known, its answer).

Blocks are shared: a block whose name is cached is held by reference count, so
N sequences with one 2,000-token prefix hold its blocks once. A sequence's
first `seq.shared` blocks are such shared blocks; the rest of its `seq.blocks`
are its own (the block being filled, or a block whose name it does not know).
A block becomes shared (`commit`) once it is full of computed tokens. When no
sequence holds a cached block any more it is kept, free, on an LRU list and
evicted only when an allocation needs its room; a sequence is released tail
block first, so its tail is evicted before its head, as vLLM does.

Budget: `used` counts the blocks sequences hold (a shared block once) and
`used + len(lru) <= total` always; `free` counts evictable blocks as free.
`match(seq)` at admission takes the longest cached prefix of `seq`'s blocks
(never its last token: the first output needs that token's logits), so only the
rest is prefilled: a hit skips that prefill compute; the cached tokens are still
attention context. Figures (`PrefixStats`), first admission only: prompt blocks
looked up (hits + misses), hit tokens and tokens saved, and evictions.
Clock-free; same `free`/`extra_for`/`grow`/`release` contract as `BlockBudget`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Iterable

from targets.llm.kv_cache import blocks_for
from targets.llm.sequence import Sequence

__all__ = ["PrefixCache", "PrefixStats", "chain_hashes", "token_block_names"]

_ROOT = 0x9E3779B97F4A7C15  # the parent name of a prompt's first block


def chain_hashes(contents: Iterable[object]) -> tuple[int, ...]:
    """Each block's name: hash(parent name, content), content a block id or a tuple of token ids.
    Python's hash of ints and tuples of ints does not depend on PYTHONHASHSEED: stable across runs."""
    names: list[int] = []
    parent = _ROOT
    for content in contents:
        parent = hash((parent, content))
        names.append(parent)
    return tuple(names)


def token_block_names(tokens: list[int], block_size: int) -> tuple[int, ...]:
    """The chained names of the full blocks of a token list (live: a replica and a router name alike)."""
    full = len(tokens) // block_size
    return chain_hashes(tuple(tokens[b * block_size:(b + 1) * block_size]) for b in range(full))


@dataclass
class PrefixStats:
    """Counters over first admissions: blocks looked up = hit_blocks + miss_blocks."""

    lookups: int = 0
    hit_blocks: int = 0
    miss_blocks: int = 0
    prompt_tokens: int = 0
    hit_tokens: int = 0
    evictions: int = 0

    @property
    def hit_rate(self) -> float | None:
        """Prompt tokens served from the cache / prompt tokens (None: no prompt yet)."""
        return self.hit_tokens / self.prompt_tokens if self.prompt_tokens else None


class PrefixCache:
    def __init__(self, total: int, block_size: int) -> None:
        if total < 1 or block_size < 1:
            raise ValueError(f"KV cache needs >= 1 block of >= 1 token, got {total} x {block_size}")
        self.total = total
        self.block_size = block_size
        self.used = 0
        self.refs: dict[int, int] = {}     # cached block name -> sequences holding it (0: free, on the LRU)
        # Cached blocks nobody holds, least recently used first: an OrderedDict, whose oldest entry
        # is found at once, where a dict's first key is found by stepping over every key deleted
        # from its front since it was last resized (an eviction per block allocated, on a full cache).
        self.lru: OrderedDict[int, None] = OrderedDict()
        self.stats = PrefixStats()

    @property
    def free(self) -> int:
        return self.total - self.used

    def extra_for(self, seq: Sequence, tokens: int) -> int:
        """Blocks `seq` must add to hold `tokens` more tokens."""
        return max(0, blocks_for(seq.computed + tokens, self.block_size) - seq.blocks)

    def grow(self, seq: Sequence, tokens: int) -> bool:
        """Blocks for `tokens` more tokens of `seq`, evicting free cached blocks LRU first as needed;
        False (and nothing held or evicted) if they are not free."""
        extra = self.extra_for(seq, tokens)
        if extra > self.total - self.used:
            return False
        lru = self.lru
        while self.total - self.used - len(lru) < extra:
            name = lru.popitem(last=False)[0]
            del self.refs[name]
            self.stats.evictions += 1
        seq.blocks += extra
        self.used += extra
        return True

    def cached_prefix(self, names: tuple[int, ...]) -> int:
        """How many leading blocks of `names` are cached (held or free): what a KV-aware router reads."""
        n, refs = 0, self.refs
        for name in names:
            if name not in refs:
                break
            n += 1
        return n

    def cached_depth(self, names: tuple[int, ...]) -> int:
        """`cached_prefix` by bisection, O(log n): the cached names are prefix-closed (a block is named
        only after its parent, a held block's parents are held, and a free parent is used no earlier
        than its children, so LRU eviction takes a child first)."""
        lo, hi, refs = 0, len(names), self.refs
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if names[mid - 1] in refs:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def match(self, seq: Sequence) -> int:
        """Take the longest cached prefix of a sequence that holds nothing yet (its `prefill_left` set):
        those blocks become its first `shared` blocks and its computed tokens. Returns the blocks taken."""
        if seq.blocks or not seq.block_hashes:
            return 0
        bs = self.block_size
        limit = min(len(seq.block_hashes), (seq.computed + seq.prefill_left - 1) // bs)
        names = seq.block_hashes[:limit]
        n = self.cached_prefix(names)
        refs, lru = self.refs, self.lru
        for name in names[:n]:
            r = refs[name]
            if r == 0:
                del lru[name]
                self.used += 1
            refs[name] = r + 1
        seq.blocks = seq.shared = n
        seq.computed = n * bs
        seq.prefill_left -= n * bs
        return n

    def record(self, seq: Sequence) -> None:
        """Count `seq`'s lookup in the figures, once, at its first admission (after `match`)."""
        if seq.looked_up:
            return
        seq.looked_up = True
        s = self.stats
        s.lookups += 1
        full = min(len(seq.block_hashes), seq.prompt_tokens // self.block_size)
        s.hit_blocks += seq.shared
        s.miss_blocks += max(0, full - seq.shared)
        s.prompt_tokens += seq.prompt_tokens
        s.hit_tokens += seq.shared * self.block_size
        seq.cached_tokens = seq.shared * self.block_size

    def commit(self, seq: Sequence) -> None:
        """Share `seq`'s blocks that are now full of computed tokens and named: a cached copy is taken
        in place of its own (which is freed), else its own becomes the cached copy."""
        full = min(seq.computed // self.block_size, len(seq.block_hashes))
        if full <= seq.shared:
            return
        refs, lru = self.refs, self.lru
        for name in seq.block_hashes[seq.shared:full]:
            r = refs.get(name)
            if r is None:
                refs[name] = 1
            else:
                if r == 0:
                    del lru[name]   # the free cached copy is held again ...
                else:
                    self.used -= 1  # ... or shared: either way this sequence's own copy is freed
                refs[name] = r + 1
        seq.shared = full

    def flush(self) -> int:
        """Drop every cached block nobody holds (SGLang's flush_cache, vLLM's reset_prefix_cache): the
        next request starts cold. Not counted as evictions. Returns the blocks dropped."""
        dropped = len(self.lru)
        for name in self.lru:
            del self.refs[name]
        self.lru.clear()
        return dropped

    def release(self, seq: Sequence) -> None:
        """Free every block `seq` holds: its own at once, shared ones when no other sequence holds them
        (then kept on the LRU, tail first so the tail is evicted first)."""
        refs, lru = self.refs, self.lru
        self.used -= seq.blocks - seq.shared
        for name in reversed(seq.block_hashes[:seq.shared]):
            r = refs[name] - 1
            refs[name] = r
            if r == 0:
                lru[name] = None
                self.used -= 1
        seq.blocks = seq.shared = 0

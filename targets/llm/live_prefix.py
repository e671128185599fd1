"""The tiny decoder's prefix cache: the real keys and values of every block the scheduler's cache names.

The continuous scheduler's `PrefixCache` decides which blocks are cached, shared,
kept free on its LRU or evicted; it never sees a tensor. `BlockStore` keeps, for
each block name the cache holds (`refs`), a copy of that block's keys and values
per layer (`decoder.cache_blocks`), so a sequence admitted with a hit starts from
the cached blocks' real tensors (`decoder.join_blocks`) and the decoder prefills
only the rest: the same computation a cold prefill does for those tokens, with
the same weights, so greedy decoding gives the same tokens.

The engine calls `sequence_cache(seq)` before a sequence's first prefill pass
(its `computed` tokens are the cached prefix `PrefixCache.match` gave it),
`keep(seq, cache)` after every step (it copies the blocks the step filled and the
cache committed), and `prune()` after every schedule (it drops the tensors of
blocks the cache evicted, so memory follows the KV budget). Block names come from
`names_of` (the chained hash of each full block's token ids, as vLLM names them);
the engine extends a sequence's names as its answer fills blocks, so a next turn
that sends the answer back finds it cached too.
"""

from __future__ import annotations

from targets.llm.decoder import BlockKV, Cache, cache_blocks, join_blocks
from targets.llm.prefix_cache import PrefixCache, token_block_names
from targets.llm.sequence import Sequence

__all__ = ["BlockStore", "names_of"]


names_of = token_block_names


class BlockStore:
    def __init__(self, cache: PrefixCache) -> None:
        self.cache = cache
        self.blocks: dict[int, BlockKV] = {}
        self._evictions = cache.stats.evictions

    def sequence_cache(self, seq: Sequence) -> Cache | None:
        """The cache a sequence starts its prefill from: its `computed` leading tokens, all cached blocks."""
        bs = self.cache.block_size
        if seq.computed % bs:
            raise AssertionError(f"sequence {seq.id} starts at {seq.computed} tokens, not a block boundary")
        return join_blocks([self.blocks[name] for name in seq.block_hashes[:seq.computed // bs]])

    def keep(self, seq: Sequence, cache: Cache | None, held_from: int) -> int:
        """Copy the blocks of `seq` from block `held_from` on that are full in `cache`, named and held by the
        prefix cache, and not yet kept; returns the new `held_from` (blocks checked so far)."""
        if cache is None:
            return held_from
        bs, refs, blocks = self.cache.block_size, self.cache.refs, self.blocks
        full = min(cache[0][0].shape[1] // bs, len(seq.block_hashes))
        b = held_from
        while b < full:
            name = seq.block_hashes[b]
            if name not in refs:
                break  # not committed yet (the scheduler commits in order)
            if name not in blocks:
                blocks[name] = cache_blocks(cache, b, b + 1, bs)[0]
            b += 1
        return b

    def prune(self) -> None:
        """Drop the tensors of blocks the cache no longer holds (run when it has evicted since last time)."""
        if self.cache.stats.evictions == self._evictions:
            return
        self._evictions = self.cache.stats.evictions
        refs = self.cache.refs
        for name in [n for n in self.blocks if n not in refs]:
            del self.blocks[name]

    def flush(self) -> int:
        """The cache's `flush`, and the tensors of the blocks it dropped."""
        dropped = self.cache.flush()
        refs = self.cache.refs
        for name in [n for n in self.blocks if n not in refs]:
            del self.blocks[name]
        return dropped

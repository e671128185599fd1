"""A paged KV cache's block budget: blocks of `block_size` tokens, never more than `total` held.

As in vLLM's PagedAttention, a sequence holds ceil(tokens / block_size) blocks,
allocated as its context grows and all freed when it finishes or is preempted;
the only waste is the unfilled tail of each sequence's last block.
"""

from __future__ import annotations

from dataclasses import dataclass

from targets.llm.sequence import Sequence

__all__ = ["BlockBudget", "blocks_for"]


def blocks_for(tokens: int, block_size: int) -> int:
    return -(-tokens // block_size)


@dataclass
class BlockBudget:
    total: int
    block_size: int
    used: int = 0

    def __post_init__(self) -> None:
        if self.total < 1 or self.block_size < 1:
            raise ValueError(f"KV cache needs >= 1 block of >= 1 token, got {self.total} x {self.block_size}")

    @property
    def free(self) -> int:
        return self.total - self.used

    def extra_for(self, seq: Sequence, tokens: int) -> int:
        """Blocks `seq` must add to hold `tokens` more tokens."""
        return max(0, blocks_for(seq.computed + tokens, self.block_size) - seq.blocks)

    def grow(self, seq: Sequence, tokens: int) -> bool:
        """Reserve blocks for `tokens` more tokens of `seq`; False (and nothing held) if they are not free."""
        extra = self.extra_for(seq, tokens)
        if extra > self.free:
            return False
        seq.blocks += extra
        self.used += extra
        return True

    def release(self, seq: Sequence) -> None:
        self.used -= seq.blocks
        seq.blocks = 0

"""A tiny decoder-only transformer in torch: seeded weights, a KV cache, greedy decoding.

Nothing is downloaded: weights come from `seed`. Tokens are bytes (vocabulary
256): a text prompt is its UTF-8 bytes, a token-id prompt is used as given.
Greedy decoding picks the most likely printable ASCII byte (32..126), so the
answer is always text and always exactly the number of tokens asked for: there
is no end-of-sequence token.

`forward(tokens, cache)` runs one chunk of a sequence (a whole prompt, a
prefill chunk, or one decode token) against that sequence's cache and returns
the logits of its last position and the grown cache; attention is causal within
the chunk and sees everything cached before it. The same call serves prefill,
chunked prefill and decode, so the live engine can run any `Step` a scheduler
plans.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["FIRST_PRINTABLE", "LAST_PRINTABLE", "VOCAB", "BlockKV", "Cache", "TinyDecoder", "cache_blocks", "cache_len",
           "encode", "join_blocks"]

VOCAB = 256
FIRST_PRINTABLE, LAST_PRINTABLE = 32, 126

Cache = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values of shape (heads, length, head_dim)
BlockKV = tuple[tuple[torch.Tensor, torch.Tensor], ...]  # one block's keys and values, per layer


def cache_len(cache: Cache | None) -> int:
    """Tokens a cache holds."""
    return cache[0][0].shape[1] if cache else 0


def cache_blocks(cache: Cache, first: int, last: int, block_size: int) -> list[BlockKV]:
    """Blocks `first` .. `last - 1` of a cache as copies (a prefix cache keeps them after the
    sequence's own cache is gone; a view would pin the whole sequence's tensors)."""
    return [tuple((k[:, b * block_size:(b + 1) * block_size].clone(), v[:, b * block_size:(b + 1) * block_size].clone())
                  for k, v in cache) for b in range(first, last)]


def join_blocks(blocks: list[BlockKV]) -> Cache | None:
    """A sequence's cache made of cached blocks, in order: the real keys and values a cold prefill of
    those tokens computed, so `forward` on the rest attends to them as it would have (None: no block)."""
    if not blocks:
        return None
    layers = len(blocks[0])
    return [(torch.cat([b[i][0] for b in blocks], dim=1), torch.cat([b[i][1] for b in blocks], dim=1))
            for i in range(layers)]


def encode(text: str) -> list[int]:
    return list(text.encode("utf-8"))


class _Block(nn.Module):
    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, d_model // heads
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv, self.proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None
                ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        n = x.shape[0]
        q, k, v = self.qkv(self.ln1(x)).view(n, 3, self.heads, self.head_dim).permute(1, 2, 0, 3)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=1), torch.cat([past[1], v], dim=1)
        total = k.shape[1]
        # Query i (absolute position total - n + i) sees keys 0..total - n + i.
        mask = torch.ones(n, total, dtype=torch.bool).tril(diagonal=total - n)
        att = (q @ k.transpose(1, 2)) / math.sqrt(self.head_dim)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        out = (att @ v).transpose(0, 1).reshape(n, -1)
        x = x + self.proj(out)
        return x + self.mlp(self.ln2(x)), (k, v)


class TinyDecoder(nn.Module):
    """GPT-style decoder: `layers` blocks of `d_model` with `heads` heads, positions up to `max_len`."""

    def __init__(self, seed: int = 0, d_model: int = 64, layers: int = 2, heads: int = 4, max_len: int = 1024) -> None:
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model ({d_model}) must be a multiple of heads ({heads})")
        self.max_len = max_len
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.embed, self.pos = nn.Embedding(VOCAB, d_model), nn.Embedding(max_len, d_model)
            self.blocks = nn.ModuleList(_Block(d_model, heads) for _ in range(layers))
            self.ln_f, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, VOCAB)
        self.eval()

    @torch.inference_mode()
    def forward(self, tokens: list[int], cache: Cache | None = None) -> tuple[torch.Tensor, Cache]:
        start = cache_len(cache)
        if start + len(tokens) > self.max_len:
            raise ValueError(f"sequence of {start + len(tokens)} tokens is longer than max_len {self.max_len}")
        ids = torch.tensor(tokens, dtype=torch.long)
        x = self.embed(ids) + self.pos(torch.arange(start, start + len(tokens)))
        grown: Cache = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, cache[i] if cache else None)
            grown.append(kv)
        return self.head(self.ln_f(x[-1])), grown

    @staticmethod
    def greedy(logits: torch.Tensor) -> int:
        """The most likely printable ASCII byte."""
        return FIRST_PRINTABLE + int(logits[FIRST_PRINTABLE:LAST_PRINTABLE + 1].argmax())

    def generate(self, prompt: list[int], max_tokens: int) -> list[int]:
        """Reference decoding, one sequence alone: exactly `max_tokens` tokens."""
        logits, cache = self(prompt)
        out = [self.greedy(logits)]
        while len(out) < max_tokens:
            logits, cache = self([out[-1]], cache)
            out.append(self.greedy(logits))
        return out

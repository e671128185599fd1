"""Request bodies for the live driver: POST /predict JSON built from byte pieces."""

from __future__ import annotations

import copy
import json
import random
import re

import numpy as np

__all__ = ["Payloads", "SALT_GROUPS", "SALT_STEP"]

SALT_STEP = 1_000_000   # a salted run's content ids move by a multiple of this
SALT_GROUPS = 499       # ... between 1 and this many times (the warm-up's contents start at 500 x 10^6)

_PLACEHOLDER = re.compile(r"\{\{(tenant|request_id|deadline_ms|input|content|size)\}\}")


class Payloads:
    """Request bodies for POST /predict, built from byte pieces: no JSON encoding per request.

    `model` (mlp, cnn, transformer) picks the input: a fixed random vector whose
    first number is the request's content id (so equal content, equal input),
    or `size` token ids that start with the content id's base-1000 digits.
    `variant` v puts v spaces into the body: the same input, other bytes, which
    an exact-payload cache cannot see through. `template` (JSON text with
    {{tenant}}, {{request_id}}, {{deadline_ms}}, {{input}}, {{content}},
    {{size}}) replaces the built-in body for servers that take another JSON.
    `content_offset` is added to every content id (`salted`: a run against a server that
    outlives it, whose cache must not answer this run with an earlier run's payloads).
    """

    def __init__(self, model: str = "mlp", template: str | None = None, seed: int = 0,
                 content_offset: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.model = model
        self.content_offset = content_offset
        if model in ("mlp", "cnn"):
            n = 512 if model == "mlp" else 3 * 32 * 32
            self._tail = ("," + ",".join(f"{v:.3f}" for v in rng.standard_normal(n - 1)) + "]").encode()
        elif model == "transformer":
            self._tokens = rng.integers(0, 1000, 128).tolist()
            self._token_tails: dict[int, bytes] = {}
        else:
            raise ValueError(f"unknown model '{model}' for payloads: valid are mlp, cnn, transformer")
        self._pieces: list[str | bytes] | None = None
        if template is not None:
            self._pieces = [p.encode() if i % 2 == 0 else p for i, p in enumerate(_PLACEHOLDER.split(template))]
            sample = self.body("t0", 1, 3, None, 1000)
            try:
                json.loads(sample)
            except ValueError as exc:
                raise ValueError(f"request template does not give valid JSON once filled in: {exc}") from None

    def input(self, content: int, size: int) -> bytes:
        if self.model != "transformer":
            return b"[%d" % content + self._tail
        size = max(1, min(128, size))
        digits = [content // 1_000_000 % 1000, content // 1000 % 1000, content % 1000][-size:]
        tail = self._token_tails.get(size)
        if tail is None:
            rest = self._tokens[: max(0, size - 3)]
            tail = self._token_tails[size] = "".join(f",{t}" for t in rest).encode() + b"]"
        return b"[" + ",".join(str(d) for d in digits).encode() + tail

    def salted(self, rng: random.Random) -> "Payloads":
        """A copy whose content ids are moved by a random SALT_STEP x k (k in 1..SALT_GROUPS):
        the same inputs' shapes and costs, other contents. A step of 10^6 moves the
        transformer's leading token group by k, which neither an unsalted run's (0) nor a
        warm-up's (500 + k: harness.live.warmup.WARMUP_CONTENT_BASE) contents share; two salted
        runs share theirs once in SALT_GROUPS."""
        twin = copy.copy(self)
        twin.content_offset = SALT_STEP * rng.randint(1, SALT_GROUPS)
        if self.model == "transformer":
            twin._token_tails = {}
        return twin

    def body(self, tenant: str, content: int, size: int, request_id: str | None, deadline_ms: int | None,
             variant: int = 0) -> bytes:
        content += self.content_offset
        if self._pieces is not None:
            values = {"tenant": tenant.encode(), "request_id": (request_id or "").encode(),
                      "deadline_ms": b"null" if deadline_ms is None else b"%d" % deadline_ms,
                      "input": self.input(content, size), "content": b"%d" % content, "size": b"%d" % size}
            return b"".join(p if isinstance(p, bytes) else values[p] for p in self._pieces)
        parts = [b"{", b" " * variant, b'"tenant":"', tenant.encode(), b'"']
        if request_id is not None:
            parts += [b',"request_id":"', request_id.encode(), b'"']
        if deadline_ms is not None:
            parts.append(b',"deadline_ms":%d' % deadline_ms)
        parts += [b',"input":', self.input(content, size), b"}"]
        return b"".join(parts)

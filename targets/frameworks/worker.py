"""The model a framework's worker serves: the project's torch model, held to the design's batch time.

A `ModelWorker` lives inside a framework's worker process (a LitServe inference
worker, a Ray Serve replica) and does what the harness's own GPU worker does
(targets.gpu.worker): it runs one real forward pass per batch and holds the batch
to the design's batch time (`pad_to_s`, the doc's 100 ms), so a framework and
`hardened` serve the same fleet arithmetic and differ only in how they queue,
batch and refuse. A slowdown (fault injection, targets.frameworks.books)
stretches each batch to `factor` times its padded (or, unpadded, measured) time,
as the harness's own worker does. Each batch goes into the process's books.

torch is reached through targets.gpu (with the LLM's decoder, the only room that
imports it: pyproject.toml's contract). The pad is a `time.sleep` in the worker
(LitServe) or an `asyncio.sleep` on the replica's loop (Ray Serve: `run_async`),
from the batch's start.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any, Sequence

from targets.frameworks.books import Books, Slowdown
from targets.gpu.executor import torch_threads
from targets.gpu.models import create_model
from targets.http.parse import BadRequest, PredictRequest, parse_predict

__all__ = ["ModelWorker", "answer_body"]


def answer_body(output: dict[str, Any], request_id: str | None, version: str) -> dict[str, Any]:
    """A 200 answer's body, as the harness's own API servers write it (docs/http-api.md)."""
    return {"output": output, "cached": False, "request_id": request_id, "version": version}


class ModelWorker:
    """One worker's model, its pad and its books. Not thread-safe: one per worker."""

    def __init__(self, model: str, seed: int, pad_to_s: float | None, version: str,
                 control_dir: str | None, threads: int = 1) -> None:
        torch_threads(threads)
        self.handle = create_model(model, seed=seed, device="cpu")
        self.pad_to_s = pad_to_s or None
        self.version = version
        self.slowdown = Slowdown(control_dir)
        self.books = Books(control_dir, "worker") if control_dir else None
        self._gpu = asyncio.Lock()
        self.run([self.handle.synthetic_input(random.Random(seed))])  # the first pass pays torch's one-off costs

    # -- requests ------------------------------------------------------------------------------
    def parse(self, body: bytes) -> PredictRequest:
        """One /predict body, validated as the harness's API servers do; BadRequest (400/422)."""
        return parse_predict(body, None, self.handle.validate)

    def check(self, item: Any) -> Any:
        """One input as the model takes it; BadRequest 422 when it cannot take it."""
        try:
            return self.handle.validate(item)
        except (ValueError, TypeError, OverflowError) as exc:
            raise BadRequest(422, "bad-input", f"'input': {exc}") from None

    # -- batches -------------------------------------------------------------------------------
    def run(self, items: Sequence[Any]) -> list[dict[str, Any]]:
        """Forward pass over validated inputs, held to the pad (times any slowdown)."""
        started = time.monotonic()
        outputs = self.handle.run(items)
        hold = self._hold_s(started)
        if hold > 0:
            time.sleep(hold)
        self._booked(len(items), started)
        return outputs

    async def run_async(self, items: Sequence[Any]) -> list[dict[str, Any]]:
        """As `run`, holding on the event loop rather than in the thread (a replica's batch).
        Batches run one at a time, as on the one GPU a worker stands for: a replica running
        several at once (`max_concurrent_batches`) queues them here."""
        async with self._gpu:
            started = time.monotonic()
            outputs = self.handle.run(items)
            hold = self._hold_s(started)
            if hold > 0:
                await asyncio.sleep(hold)
            self._booked(len(items), started)
            return outputs

    def _hold_s(self, started: float) -> float:
        elapsed = time.monotonic() - started
        target = self.pad_to_s if self.pad_to_s is not None else elapsed
        return target * self.slowdown.factor() - elapsed

    def _booked(self, size: int, started: float) -> None:
        if self.books is not None:
            done = time.monotonic()
            self.books.batch(size, done - started, done)


"""A canary rollout's tap in sim: which version each attempt went to, and what it answered.

`TapTransport` wraps the in-process transport: for every attempt it asks the
rollout's split which version serves it and, when the attempt is answered,
records its status, latency and answer label in `StepTap`, per version (0
baseline, 1 canary), until the step ends (`take`). Compiled with the core
(`targets.native`): it runs for every attempt of a rollout.
"""

from __future__ import annotations

from typing import Any, Callable

from harness.engine.transports import InProcessTransport
from targets.protocol import ERROR, OK, Attempt, Response, Status
from targets.versions import LABELS, CanarySplit, VersionedOutput

__all__ = ["NullSink", "StepTap", "TapTransport"]


class StepTap:
    """One step's answers per version: OK latencies (s), 5xx count, label counts; and
    the attempts routed to the canary so far (the exposure, never reset)."""

    def __init__(self) -> None:
        self.latencies_s: list[list[float]] = [[], []]
        self.errors: list[int] = [0, 0]
        self.labels: list[list[int]] = [[0] * LABELS, [0] * LABELS]
        self.canary_requests = 0

    def record(self, canary: int, response: Response, latency_s: float) -> None:
        status = response.status
        if status is OK:
            self.latencies_s[canary].append(latency_s)
            output = response.output
            if isinstance(output, VersionedOutput):
                self.labels[canary][output[0]] += 1
        elif status is ERROR:
            self.errors[canary] += 1

    def take(self, canary: int) -> tuple[list[float], int, list[int]]:
        """The step's (latencies, errors, label counts) of one version, which start afresh."""
        out = (self.latencies_s[canary], self.errors[canary], self.labels[canary])
        self.latencies_s[canary], self.errors[canary], self.labels[canary] = [], 0, [0] * LABELS
        return out


class TapTransport:
    """The in-process transport, with every attempt's version and answer recorded."""

    def __init__(self, inner: InProcessTransport, split: CanarySplit, tap: StepTap, loop: Any) -> None:
        self.inner = inner
        self.split = split
        self.tap = tap
        self._time: Callable[[], float] = loop.time

    def send(self, attempt: Attempt, timeout_s: float, on_done: Callable[[Response], None]) -> None:
        canary = 1 if self.split.to_canary(attempt.uid, attempt.tenant) else 0
        tap, time = self.tap, self._time
        tap.canary_requests += canary
        sent = time()

        def done(response: Response) -> None:
            tap.record(canary, response, time() - sent)
            on_done(response)

        self.inner.send(attempt, timeout_s, done)

    def clear(self) -> None:
        self.inner.clear()


class NullSink:
    """The driver's sink in a rollout: the rollout judges from its tap instead."""

    def attempt(self, status: Status, sent_s: float, latency_s: float) -> None:
        pass

    def finish(self, index: int, status: Status, done_s: float, attempts: int) -> None:
        pass

"""What watches a live run's host from beside it: a real Prometheus scraping its /metrics
(harness.ops.prometheus.PrometheusSidecar), started when the host is ready, told when the run's
clock starts, asked for its figures before the host stops (they go into the result's `live`
block under the sidecar's name), and closed however the run ends."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Sidecar"]


class Sidecar(Protocol):
    """Something that watches a live run's host from beside it (see the module doc)."""

    name: str

    def start(self, ready: dict[str, Any]) -> None:
        """The host is ready (`ready`: its ready message: ports, pid, balancer); may block briefly."""

    def clock(self, t0_wall_s: float) -> None:
        """The run's clock starts at this wall-clock time (time.time())."""

    def finish(self, end_s: float) -> dict[str, Any]:
        """The drive ended `end_s` after t0 and the host is still up: the figures for the `live` block."""

    def close(self) -> None:
        """Stop whatever it started (called however the run ends)."""

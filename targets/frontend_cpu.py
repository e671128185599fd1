"""The API servers' CPU in a modeled target: each server handles one request at a time.

Live API servers have finite CPU: past some rate their event loop falls behind
and requests queue before any policy sees them (admission control predicts GPU
queueing only). A sim target whose GPUs are modeled models that front end too:
each API server is one CPU that spends ``cost_s`` per request in arrival order
(FIFO, work-conserving), so a request reaches the target's policies when its
handler has run; real servers (live) pay their real CPU instead.

With ``lag_limit_s`` set (TargetConfig.frontend_lag_limit_s, as the live
server's targets.server_overload guard), a request that would wait more than
that for its server's CPU is refused with 503 at ``shed_cost_s``, the price of
answering without reading the body. ``FrontendCpu.admit`` is the pure rule.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Admitted", "FrontendCpu"]


@dataclass(frozen=True)
class Admitted:
    """When the handler is done (loop seconds), whether it shed, and the wait it saw (s)."""

    done_s: float
    shed: bool
    wait_s: float


class FrontendCpu:
    """``servers`` single-CPU API servers; ``cost_s`` CPU seconds a request, ``shed_cost_s`` a refusal."""

    def __init__(self, servers: int, cost_s: float, shed_cost_s: float = 0.0, lag_limit_s: float | None = None) -> None:
        if servers < 1 or cost_s < 0 or shed_cost_s < 0:
            raise ValueError("servers must be >= 1 and costs >= 0")
        self.cost_s, self.shed_cost_s, self.lag_limit_s = cost_s, shed_cost_s, lag_limit_s
        self.free_at = [0.0] * servers

    def admit(self, server: int, now_s: float) -> Admitted:
        """Queue one request on ``server``'s CPU at ``now_s``."""
        start = max(now_s, self.free_at[server])
        wait = start - now_s
        shed = self.lag_limit_s is not None and wait > self.lag_limit_s
        done = start + (self.shed_cost_s if shed else self.cost_s)
        self.free_at[server] = done
        return Admitted(done, shed, wait)

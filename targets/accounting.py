"""What a serving target counts: its request outcomes and wasted GPU time
(`TargetStats`), and the bound a long-running server puts on the uids it
remembers for that accounting (`live_computed_bound`)."""

from __future__ import annotations

from dataclasses import dataclass

from targets.bounded import Bound
from targets.config import ClientKnobs


@dataclass
class TargetStats:
    received: int = 0
    shed_tenant: int = 0        # 429: over the tenant's limit
    shed_overload: int = 0      # 503: predicted wait over budget
    expired: int = 0            # dropped before dispatch: deadline passed
    lost: int = 0               # in flight on a dead GPU, never answered
    wasted_duplicate_s: float = 0.0
    wasted_abandoned_s: float = 0.0
    wasted_padding_s: float = 0.0


def live_computed_bound(config: ClientKnobs) -> Bound:
    """The bound a long-running server puts on duplicate-work accounting: uids are
    kept twice as long as a retry may come. A duplicate computed later than that
    (an attempt queued for longer, e.g. full-batch-only at night) counts as
    abandoned work instead: the total wasted GPU time is unchanged."""
    retry_window_s = config.client_timeout_s * (config.client_retries + 1) + config.client_retries * config.backoff_cap_s
    return Bound(1_000_000, 2 * retry_window_s)

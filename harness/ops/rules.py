"""Alert rules as data: one definition that both Prometheus and the sim evaluator read.

A rule is a conjunction of conditions (a signal over a window, above a
threshold) held for `for_s`. `promql(condition)` writes a condition as the
PromQL that reads the live `/metrics` (targets/http/metrics.py); the sim
evaluator (harness.analysis.alerts.eval) computes the same signal, over the same
window, from a run's per-window series. Every signal is a ratio of two sums over
the same instances, so a fleet whose servers all export one shared registry
(duplicated series) gives the same value as one server.

The goodput SLI and the shed ratio are read at the front door, as a client
sees them: the front end's latency histogram (`harness_frontend_latency_seconds`;
targets.http.l4proxy times each request from its first byte at the proxy to
its answer, including the requests it refused and those whose client gave up),
the share answered `ok` within the SLO's bucket, and the share `shed`. The API
servers' own histogram starts at their handler and misses the queueing in front
of it and the client's timeouts (measured live: FastBurn fired 3.6 s after the
evaluator on the spike day; on a machine at load 8-11, 11-13 s after or not at
all); their answers miss the requests whose clients gave up. Where no front end
serves that histogram (HAProxy as the balancer), a rule falls back to the API
servers' answers (`or`: the first operand whenever its series exist at all).

The goodput SLO alerts are the SRE workbook's multi-window multi-burn-rate
alerts (page at 14.4x burn over 1 h and 5 min; at 6x over 6 h and 30 min),
with the workbook's hour played by `hour_s` seconds: the harness's bad days last
seconds to minutes, so by default an hour is a minute (scale 1/60) and every
window keeps the workbook's ratios. `hour_s=3600` writes the workbook's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from prometheus_client.utils import floatToGoString

from targets.config import TargetConfig

__all__ = ["AlertRule", "Condition", "FRONTEND_LATENCY", "FleetShape", "LATENCY_BUCKETS_S", "Signal", "build_rules",
           "duration", "promql", "rule_expr", "shape_of", "slo_bucket_s"]

FRONTEND_LATENCY = "harness_frontend_latency_seconds"  # the front door's histogram, label `outcome`

# The buckets of harness_frontend_latency_seconds and harness_request_latency_seconds
# (targets/http/metrics.py); the SLI needs one at the SLO.
LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0, 30.0)


class Signal(StrEnum):
    ERROR_RATIO = "error-ratio"    # requests not answered OK within the SLO / requests, at the front door
                                   # (the goodput SLI, inverted)
    SHED_RATIO = "shed-ratio"      # 429/503 sheds / requests, at the front door
    RETRY_RATIO = "retry-ratio"    # retries received / answers
    QUEUE_DELAY = "queue-delay-s"  # queued requests / the fleet's full-batch service rate (Little's law), now
    GPU_BUSY = "gpu-busy"          # busy GPU-seconds / alive GPUs
    GPUS_LOST = "gpus-lost"        # share of the fleet's GPUs not alive, now


@dataclass(frozen=True)
class Condition:
    """`signal` over the last `window_s` (gauges: now) is above `threshold`."""

    signal: Signal
    window_s: float
    threshold: float


@dataclass(frozen=True)
class AlertRule:
    """Fires once every condition has held at every evaluation for `for_s`."""

    name: str
    severity: str
    summary: str
    conditions: tuple[Condition, ...]
    for_s: float


@dataclass(frozen=True)
class FleetShape:
    """What the PromQL needs of the target: its SLO bucket, service rate and size."""

    slo_bucket_s: float
    service_rps: float
    gpus: int


def slo_bucket_s(slo_s: float) -> float:
    """The largest latency bucket at or under the SLO (the SLI counts answers there as good)."""
    fits = [b for b in LATENCY_BUCKETS_S if b <= slo_s + 1e-12]
    if not fits:
        raise ValueError(f"no latency bucket at or under the SLO {slo_s:g} s (smallest {LATENCY_BUCKETS_S[0]:g} s)")
    return fits[-1]


def shape_of(config: TargetConfig) -> FleetShape:
    return FleetShape(slo_bucket_s(config.slo_s), config.batch_size / config.batch_time_s, config.fleet_gpus)


def duration(seconds: float) -> str:
    """A PromQL duration: whole milliseconds, in the largest exact unit."""
    ms = round(seconds * 1000)
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _rate(metric: str, window_s: float, matcher: str = "") -> str:
    return f"sum(rate({metric}{matcher}[{duration(window_s)}]))"


def promql(c: Condition, shape: FleetShape) -> str:
    """The condition as a PromQL expression over the live /metrics names (no comparison)."""
    answers = _rate("harness_requests_total", c.window_s)
    if c.signal is Signal.ERROR_RATIO:
        le = floatToGoString(shape.slo_bucket_s)
        front_good = _rate(f"{FRONTEND_LATENCY}_bucket", c.window_s, f'{{outcome="ok",le="{le}"}}')
        front_all = _rate(f"{FRONTEND_LATENCY}_count", c.window_s)
        good = _rate("harness_request_latency_seconds_bucket", c.window_s, f'{{le="{le}"}}')
        return f"(1 - ({front_good} / {front_all} or {good} / {answers}))"
    if c.signal is Signal.SHED_RATIO:
        front_shed = _rate(f"{FRONTEND_LATENCY}_count", c.window_s, '{outcome="shed"}')
        front_all = _rate(f"{FRONTEND_LATENCY}_count", c.window_s)
        # Else the API servers' sheds and the balancer's own 503s (not in `answers`).
        proxy = f"({_rate('harness_proxy_shed_total', c.window_s)} or vector(0))"  # 0 where no proxy serves
        return (f"({front_shed} / {front_all} or "
                f"({_rate('harness_shed_total', c.window_s)} + {proxy}) / ({answers} + {proxy}))")
    if c.signal is Signal.RETRY_RATIO:
        return f"({_rate('harness_retries_total', c.window_s)} / {answers})"
    if c.signal is Signal.QUEUE_DELAY:
        return f"(sum(harness_queue_depth) / (sum(harness_gpus_alive) * {shape.service_rps:g}))"
    if c.signal is Signal.GPU_BUSY:
        return f"({_rate('harness_gpu_busy_seconds_total', c.window_s)} / sum(harness_gpus_alive))"
    return f"(1 - max(harness_gpus_alive) / {shape.gpus})"


def rule_expr(rule: AlertRule, shape: FleetShape) -> str:
    return " and ".join(f"{promql(c, shape)} > {c.threshold:g}" for c in rule.conditions)


def build_rules(config: TargetConfig, hour_s: float = 60.0, objective: float = 0.99) -> list[AlertRule]:
    """The alert rules for a target: two burn-rate pages on the goodput SLO
    (`objective` of answers OK within the SLO) and four leading signals.

    Thresholds on the leading signals are the target's own: queue delay past
    half the SLO (half the budget spent waiting), sheds or retries past 2% of
    answers, GPUs busy past 97% (no headroom left for variance), any GPU gone.
    """
    budget = 1.0 - objective
    h = hour_s
    return [
        AlertRule("GoodputBudgetFastBurn", "page", f"goodput SLO ({objective:.3g} within {config.slo_s:g} s) "
                  "burning 14.4x: 2% of a 30-day budget in an hour",
                  (Condition(Signal.ERROR_RATIO, h, 14.4 * budget),
                   Condition(Signal.ERROR_RATIO, h / 12, 14.4 * budget)), 0.0),
        AlertRule("GoodputBudgetSlowBurn", "page", "goodput SLO burning 6x: 5% of a 30-day budget in 6 hours",
                  (Condition(Signal.ERROR_RATIO, 6 * h, 6 * budget),
                   Condition(Signal.ERROR_RATIO, h / 2, 6 * budget)), 0.0),
        AlertRule("QueueDelayHigh", "warning", "estimated queue delay past half the SLO",
                  (Condition(Signal.QUEUE_DELAY, 0.0, config.slo_s / 2),), h / 12),
        AlertRule("SheddingLoad", "warning", "over 2% of answers are 429/503 sheds",
                  (Condition(Signal.SHED_RATIO, h / 12, 0.02),), h / 12),
        AlertRule("RetryRateHigh", "warning", "retries past 2% of answers: clients are timing out",
                  (Condition(Signal.RETRY_RATIO, h / 12, 0.02),), h / 12),
        AlertRule("GpuSaturated", "warning", "GPUs busy past 97%: no headroom for variance",
                  (Condition(Signal.GPU_BUSY, h / 2, 0.97),), h / 12),
        AlertRule("GpuCapacityLost", "warning", "GPU workers are down",
                  (Condition(Signal.GPUS_LOST, 0.0, 0.0),), h / 12),
    ]

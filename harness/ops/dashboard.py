"""The Grafana dashboard of a target, built with the Grafana foundation SDK.

Every panel reads only the metric names the live `/metrics` serves
(targets/http/metrics.py); the first row holds the three the review puts on
the dashboard first: the goodput SLI with its burn rate, the estimated queue
delay, and GPU busy beside batch fill.
"""

from __future__ import annotations

import json
from typing import Any

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.builders.timeseries import Panel
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from prometheus_client.utils import floatToGoString

from harness.ops.rules import shape_of
from targets.config import TargetConfig

__all__ = ["dashboard", "panel_queries"]


def _panel(title: str, unit: str, *queries: tuple[str, str]) -> Panel:
    p = Panel().title(title).unit(unit).height(8).span(12)
    for ref, (expr, legend) in zip("ABCDEFGH", queries):
        p = p.with_target(Dataquery().expr(expr).legend_format(legend).ref_id(ref))
    return p


def dashboard(config: TargetConfig, hour_s: float = 60.0, objective: float = 0.99) -> dict[str, Any]:
    """The dashboard as Grafana's JSON model (import it, or provision it from a file)."""
    shape = shape_of(config)
    le = floatToGoString(shape.slo_bucket_s)
    w = f"{round(hour_s / 12)}s"
    answers = f"sum(rate(harness_requests_total[{w}]))"
    good = f'sum(rate(harness_request_latency_seconds_bucket{{le="{le}"}}[{w}]))'
    board = (
        Dashboard(f"harness: {config.name}").uid(f"harness-{config.name}").tags(["harness", "inference"])
        .refresh("5s").time("now-30m", "now")
        .with_row(Row("The three first: goodput SLI, queue delay, GPU busy and batch fill"))
        .with_panel(_panel("Goodput SLI: answers OK within the SLO", "percentunit",
                           (f"{good} / {answers}", "good share")))
        .with_panel(_panel("Estimated queue delay (queued / full-batch service rate)", "s",
                           (f"sum(harness_queue_depth) / (sum(harness_gpus_alive) * {shape.service_rps:g})",
                            "queue delay")))
        .with_panel(_panel("GPU busy and batch fill", "percentunit",
                           (f"sum(rate(harness_gpu_busy_seconds_total[{w}])) / sum(harness_gpus_alive)", "GPU busy"),
                           (f"sum(rate(harness_batch_size_sum[{w}])) / sum(rate(harness_batch_size_count[{w}]))"
                            f" / {config.batch_size}", "batch fill")))
        .with_panel(_panel("Error-budget burn rate", "none",
                           (f"(1 - {good} / {answers}) / {1 - objective:g}", "burn")))
        .with_row(Row("Traffic and refusals"))
        .with_panel(_panel("Answers by code", "reqps",
                           (f"sum by (code) (rate(harness_requests_total[{w}]))", "{{code}}")))
        .with_panel(_panel("Server latency p99", "s",
                           (f"histogram_quantile(0.99, sum by (le) (rate(harness_request_latency_seconds_bucket[{w}])))",
                            "p99")))
        .with_panel(_panel("Sheds by reason, retries", "reqps",
                           (f"sum by (reason) (rate(harness_shed_total[{w}]))", "shed {{reason}}"),
                           (f"sum(rate(harness_proxy_shed_total[{w}]))", "shed by the proxy"),
                           (f"sum(rate(harness_retries_total[{w}]))", "retries")))
        .with_panel(_panel("GPUs alive", "none", ("sum(harness_gpus_alive)", "alive")))
    )
    return json.loads(JSONEncoder(sort_keys=True, indent=2).encode(board.build()))


def panel_queries(board: dict[str, Any]) -> list[str]:
    """Every PromQL expression the dashboard's panels query."""
    return [t["expr"] for p in board.get("panels", []) for t in p.get("targets", [])]

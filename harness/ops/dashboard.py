"""The Grafana dashboard of a target, built with the Grafana foundation SDK.

Every panel reads only the metric names the live `/metrics` serves
(targets/http/metrics.py). The first row holds the signals measurement chose
(`first_row`: the goodput SLI, then the leading signals that caught the bad
days first, harness.analysis.alerts.leading), each panel the very expression
its alert rule reads (harness.ops.rules.promql), then the error-budget burn
rate. Without a measurement (`harness alerts --no-eval`) the row is
`UNMEASURED_ROW`, and its title says so. The signals not on the first row
follow in a row of their own, then traffic and refusals.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from grafana_foundation_sdk.builders.dashboard import Dashboard, Row
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.builders.timeseries import Panel
from grafana_foundation_sdk.cog.encoder import JSONEncoder

from harness.ops.rules import FRONTEND_LATENCY, Condition, FleetShape, Signal, promql, shape_of
from targets.config import TargetConfig

__all__ = ["UNMEASURED_ROW", "dashboard", "first_row_signals", "first_row_titles", "panel_queries"]

# The row written when no measurement chose one: the SLI, the queue and the GPUs.
UNMEASURED_ROW = (Signal.ERROR_RATIO, Signal.QUEUE_DELAY, Signal.GPU_BUSY)

_TITLES = {Signal.ERROR_RATIO: ("Goodput SLI: requests answered OK within the SLO, at the front door", "percentunit"),
           Signal.QUEUE_DELAY: ("Estimated queue delay (queued / full-batch service rate)", "s"),
           Signal.GPU_BUSY: ("GPU busy and batch fill", "percentunit"),
           Signal.SHED_RATIO: ("Sheds: share of answers refused 429/503 (API servers and balancer)", "percentunit"),
           Signal.RETRY_RATIO: ("Retries per answer", "percentunit"),
           Signal.GPUS_LOST: ("GPUs down: share of the fleet", "percentunit")}


def _panel(title: str, unit: str, *queries: tuple[str, str]) -> Panel:
    p = Panel().title(title).unit(unit).height(8).span(12)
    for ref, (expr, legend) in zip("ABCDEFGH", queries):
        p = p.with_target(Dataquery().expr(expr).legend_format(legend).ref_id(ref))
    return p


def _signal_panel(sig: Signal, config: TargetConfig, shape: FleetShape, window_s: float) -> Panel:
    """One signal's panel: the expression its alert rule reads (the SLI shown as the good share)."""
    title, unit = _TITLES[sig]
    expr = promql(Condition(sig, window_s, 0.0), shape)
    if sig is Signal.ERROR_RATIO:
        return _panel(title, unit, (f"1 - {expr}", "good share"))
    if sig is Signal.GPU_BUSY:
        w = f"{round(window_s)}s"
        return _panel(title, unit, (expr, "GPU busy"),
                      (f"sum(rate(harness_batch_size_sum[{w}])) / sum(rate(harness_batch_size_count[{w}]))"
                       f" / {config.batch_size}", "batch fill"))
    return _panel(title, unit, (expr, sig.value))


def first_row_signals(row: Sequence[Signal] | None) -> list[Signal]:
    """The row to write: the one given, the SLI first (added when missing); else UNMEASURED_ROW."""
    if not row:
        return list(UNMEASURED_ROW)
    return [Signal.ERROR_RATIO, *(s for s in row if s is not Signal.ERROR_RATIO)]


def dashboard(config: TargetConfig, hour_s: float = 60.0, objective: float = 0.99,
              first_row: Sequence[Signal] | None = None, chosen_by: str | None = None) -> dict[str, Any]:
    """The dashboard as Grafana's JSON model (import it, or provision it from a file). `first_row`:
    the signals measurement chose, in order (None: UNMEASURED_ROW); `chosen_by` says by what."""
    shape = shape_of(config)
    window_s = round(hour_s / 12)
    w = f"{window_s}s"
    error_ratio = promql(Condition(Signal.ERROR_RATIO, window_s, 0.0), shape)
    row = first_row_signals(first_row)
    names = ", ".join(s.value for s in row)
    head = (f"The first row, chosen by {chosen_by}: {names}" if first_row
            else f"The first row (not measured: `harness alerts --no-eval`): {names}")
    board = (Dashboard(f"harness: {config.name}").uid(f"harness-{config.name}").tags(["harness", "inference"])
             .refresh("5s").time("now-30m", "now").with_row(Row(head)))
    for sig in row:
        board = board.with_panel(_signal_panel(sig, config, shape, window_s))
    board = board.with_panel(_panel("Error-budget burn rate", "none",
                                    (f"{error_ratio} / {1 - objective:g}", "burn")))
    rest = [s for s in Signal if s not in row]
    if rest:
        board = board.with_row(Row("The other signals the alert rules read"))
        for sig in rest:
            board = board.with_panel(_signal_panel(sig, config, shape, window_s))
    board = (
        board.with_row(Row("Traffic and refusals"))
        .with_panel(_panel("Answers by code", "reqps",
                           (f"sum by (code) (rate(harness_requests_total[{w}]))", "{{code}}")))
        .with_panel(_panel("Latency p99: at the front door, at the API servers", "s",
                           (f"histogram_quantile(0.99, sum by (le) (rate({FRONTEND_LATENCY}_bucket[{w}])))",
                            "front door"),
                           (f"histogram_quantile(0.99, sum by (le) (rate(harness_request_latency_seconds_bucket[{w}])))",
                            "API servers")))
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


def first_row_titles(board: dict[str, Any]) -> list[str]:
    """The titles of the panels between the first row and the next (the first row's panels)."""
    out: list[str] = []
    rows = 0
    for p in board.get("panels", []):
        if p.get("type") == "row":
            rows += 1
            if rows > 1:
                break
            continue
        out.append(p.get("title", ""))
    return out

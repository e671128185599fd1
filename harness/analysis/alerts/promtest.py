"""`promtool test rules` unit tests for the alert rules, built from the days they were proven on.

The project's evaluator (harness.analysis.alerts.eval) says when each rule fires on each
sim day; this writes the same days as Prometheus input series and asks Prometheus's own
rule engine (`promtool test rules FILE`) to agree:

- each rule the evaluator fires on a day fires at the evaluation where the evaluator says
  its first firing starts (the day's stated detection), and not one interval before;
- no rule fires anywhere before the day's first firing: on a day the evaluator fires nothing
  on (hardened's calm days: steady, diurnal, night) that is the whole day, so Prometheus
  firing anything there fails. (Where the evaluator fires on a calm day, naive's night say,
  the tests expect those alerts: they check Prometheus agrees, and the result says the day fired.)

The input series are what `/metrics` serves (targets/http/metrics.py): the front door's latency
histogram (every attempt, its `ok` answers within the SLO's bucket: the goodput SLI), the API
servers' answers, sheds and retries, the GPUs and the queue; one sample per
evaluation interval (the run's window, where the evaluator evaluates), written in promtool's
expanding notation: counters are the window counts summed from 0 at t=0, gauges the window's
last sample (the evaluator carries the last one over a window without, as Prometheus does;
`stale` only where the run had taken none yet).
At a sample every interval, `rate()` over a window of whole intervals is the evaluator's
window sum divided by the window, and a young series' rate its sum so far over the window,
so both read the same ratios.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import yaml
from prometheus_client.utils import floatToGoString

from harness.analysis.alerts.days import ProvenDay
from harness.ops.rules import FRONTEND_LATENCY, AlertRule, duration, shape_of
from targets.config import TargetConfig

__all__ = ["expand", "promtool_tests", "write_promtool_tests"]


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 2**53 else repr(float(v))


def expand(values: Sequence[float | None]) -> str:
    """Samples in promtool's expanding notation: `a+bxn` for a run of n >= 2 steps of b (whole
    numbers only, so the expansion is exact), `axn` for a constant run, `stale` for None."""
    out: list[str] = []
    i, n = 0, len(values)
    while i < n:
        v = values[i]
        if v is None:
            out.append("stale")
            i += 1
            continue
        j, step = i, None
        nxt = values[i + 1] if i + 1 < n else None
        if nxt is not None:
            step = float(nxt) - float(v)
            if step == 0 or (float(v).is_integer() and step.is_integer()):
                while j + 1 < n and (u := values[j + 1]) is not None and float(u) - float(values[j] or 0) == step:
                    j += 1
        if j - i < 2 or step is None:  # one or two values read more plainly than `a+bx1` (a lone one has no step)
            out.append(_num(v))
            i += 1
            continue
        if step == 0:
            out.append(f"{_num(v)}x{j - i}")
        else:
            out.append(f"{_num(v)}{'+' if step > 0 else '-'}{_num(abs(step or 0))}x{j - i}")
        i = j + 1
    return " ".join(out)


def _counter(per_window: np.ndarray) -> list[float | None]:
    """Cumulative counts at t = 0, w, 2w, ... (a window with no sample adds nothing)."""
    return [0.0, *np.cumsum(np.nan_to_num(per_window, nan=0.0)).tolist()]


def _rest(total: np.ndarray, part: np.ndarray) -> list[float | None]:
    """The counter of `total`'s events less `part`'s (a part of them), never decreasing: the sheds are
    counted by the window they were sent in, the answers by the one they came in, and a shed
    answered after its window's end (none is, unless the front end is that slow) is taken from
    the next window instead."""
    rest = np.cumsum(np.nan_to_num(total, nan=0.0)) - np.cumsum(np.nan_to_num(part, nan=0.0))
    return [0.0, *np.maximum.accumulate(np.maximum(rest, 0.0)).tolist()]


def _gauge(per_window: np.ndarray) -> list[float | None]:
    """No sample at t = 0 (the run's first is at the first window's end); stale where none was taken."""
    return [None, *[None if math.isnan(v) else float(v) for v in per_window.tolist()]]


def _input_series(day: ProvenDay, slo_bucket_s: float) -> list[dict[str, str]]:
    s = day.series
    le = floatToGoString(slo_bucket_s)
    series = {
        # Every attempt as the client (and the front door) saw it: the sheds, and the rest.
        f'{FRONTEND_LATENCY}_count{{outcome="shed"}}': _counter(s.shed),
        f'{FRONTEND_LATENCY}_count{{outcome="other"}}': _rest(s.answered, s.shed),
        f'{FRONTEND_LATENCY}_bucket{{outcome="ok",le="{le}"}}': _counter(s.good),
        "harness_requests_total": _counter(s.answered),
        "harness_shed_total": _counter(s.shed),
        "harness_retries_total": _counter(s.retries),
        "harness_gpu_busy_seconds_total": _counter(s.busy_gpu_s),
        "harness_queue_depth": _gauge(s.queue_depth),
        "harness_gpus_alive": _gauge(s.gpus_alive),
    }
    # promtool's `_` is "no sample" (the last one is still read for 5 min); `stale` ends the series
    # there, as the evaluator's missing sample. The first gauge sample is simply absent.
    return [{"series": name, "values": ("_ " + expand(v[1:])) if v[0] is None else expand(v)}
            for name, v in series.items()]


def _group(day: ProvenDay, rules: list[AlertRule], labels: dict[str, str], slo_bucket_s: float) -> dict[str, Any]:
    a, w = day.alerts, day.series.window_s
    end_s = len(day.series.answered) * w
    by_name = {r.name: r for r in rules}
    alert_tests: list[dict[str, Any]] = []
    starts = []
    for f in a.fired:
        rule = by_name[f.rule]
        start = f.intervals[0][0]
        starts.append(start)
        fires = {"exp_labels": {**labels, "severity": rule.severity}, "exp_annotations": {"summary": rule.summary}}
        if start - w >= 0:
            alert_tests.append({"eval_time": duration(start - w), "alertname": f.rule, "exp_alerts": []})
        alert_tests.append({"eval_time": duration(start), "alertname": f.rule, "exp_alerts": [fires]})
    quiet_s = (min(starts) - w) if starts else end_s
    group: dict[str, Any] = {"name": f"{a.scenario}{' (calm)' if a.calm else ''}", "interval": duration(w),
                             "input_series": _input_series(day, slo_bucket_s)}
    if alert_tests:
        group["alert_rule_test"] = alert_tests
    if quiet_s >= w:  # no alert firing at any evaluation in [0, quiet_s]
        group["promql_expr_test"] = [{"expr": f'count_over_time(ALERTS{{alertstate="firing"}}[{duration(quiet_s)}])',
                                      "eval_time": duration(quiet_s), "exp_samples": []}]
    return group


def promtool_tests(config: TargetConfig, rules: list[AlertRule], days: list[ProvenDay],
                   rules_file: str) -> dict[str, Any]:
    """The unit-test file's data: one test group per day, evaluated every sim window."""
    if not days:
        raise ValueError("no days to build promtool tests from")
    windows = {d.series.window_s for d in days}
    if len(windows) != 1:
        raise ValueError(f"the days' series have different windows: {sorted(windows)}")
    labels = {"target": config.name}
    bucket = shape_of(config).slo_bucket_s
    return {"rule_files": [rules_file], "evaluation_interval": duration(windows.pop()),
            "tests": [_group(d, rules, labels, bucket) for d in days]}


def write_promtool_tests(config: TargetConfig, rules: list[AlertRule], days: list[ProvenDay], rules_path: Path) -> Path:
    """`<target>-alerts.test.yaml` beside the rule file (which it names relative to itself)."""
    path = rules_path.with_name(rules_path.name.removesuffix(".yaml") + ".test.yaml")
    data = promtool_tests(config, rules, days, rules_path.name)
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=100_000))
    return path

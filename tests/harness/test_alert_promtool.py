"""Prometheus's own tools judge the alert rules `harness alerts` writes: `promtool check rules`
on the rule file, and `promtool test rules` on the unit tests built from the bad days' series
(each day's alerts fire when the sim evaluator says, the calm days fire none). The tests also
show the unit tests have teeth: an alert expected on a calm day, or a detection expected one
interval early, fails them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from harness.analysis.alerts.promtest import expand
from harness.cli import app
from tests.harness.alert_suite import QUICK_SUITE

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian's `prometheus` "
                                    "package; .ci/run installs it)")



def test_expand_writes_promtools_notation_exactly() -> None:
    assert expand([0, 1, 2, 3]) == "0+1x3"
    assert expand([10, 8, 6, 4, 4]) == "10-2x3 4"
    assert expand([0, 5]) == "0 5"
    assert expand([0.5, 0.5, 0.5, 0.7]) == "0.5x2 0.7"
    assert expand([0.1, 0.2, 0.3, 0.4]) == "0.1 0.2 0.3 0.4"  # float steps would not expand exactly
    assert expand([None, 41, 41, 41, None]) == "stale 41x2 stale"


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if PROMTOOL is None:
        pytest.skip("promtool is not installed (Debian's `prometheus` package; .ci/run installs it)")
    out = tmp_path_factory.mktemp("alerts")
    suite = out / "quick.toml"
    suite.write_text(QUICK_SUITE)
    res = CliRunner().invoke(app, ["alerts", "hardened", "--out", str(out), "--suite", str(suite), "-q"])
    assert res.exit_code == 0, res.output
    return out


@pytest.mark.slow
@needs_promtool
def test_promtool_checks_the_rules_and_passes_the_unit_tests_built_from_the_bad_days(written: Path) -> None:
    checked = promtool("check", "rules", "hardened-alerts.yaml", cwd=written)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 7 rules found" in checked.stdout
    tested = promtool("test", "rules", str(written / "hardened-alerts.test.yaml"), cwd=Path("/"))
    assert tested.returncode == 0, tested.stdout + tested.stderr

    doc = yaml.safe_load((written / "hardened-alerts.test.yaml").read_text())
    groups = {g["name"]: g for g in doc["tests"]}
    assert set(groups) == {"spike", "gpu-outage", "steady (calm)", "diurnal (calm)", "night (calm)"}
    fires = {name: {t["alertname"] for t in g.get("alert_rule_test", []) if t["exp_alerts"]}
             for name, g in groups.items()}
    assert {"GoodputBudgetFastBurn", "QueueDelayHigh", "SheddingLoad"} <= fires["spike"]
    assert fires["gpu-outage"] == {"GpuCapacityLost"}
    for calm in ("steady (calm)", "diurnal (calm)", "night (calm)"):
        assert not fires[calm]
        (quiet,) = groups[calm]["promql_expr_test"]
        assert quiet["exp_samples"] == [] and quiet["expr"].endswith(f"[{quiet['eval_time']}])")
        assert int(quiet["eval_time"].removesuffix("s")) >= 20  # the whole day


def corrupted(written: Path, name: str, change) -> subprocess.CompletedProcess[str]:
    doc = yaml.safe_load((written / "hardened-alerts.test.yaml").read_text())
    change(doc["tests"])
    path = written / f"{name}.test.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=100_000))
    return promtool("test", "rules", str(path), cwd=written)


@pytest.mark.slow
@needs_promtool
def test_the_unit_tests_fail_on_an_alert_expected_on_a_calm_day(written: Path) -> None:
    def expect_on_steady(tests: list[dict]) -> None:
        steady = next(g for g in tests if g["name"] == "steady (calm)")
        steady["alert_rule_test"] = [{"eval_time": "15s", "alertname": "GpuCapacityLost", "exp_alerts": [
            {"exp_labels": {"severity": "warning", "target": "hardened"},
             "exp_annotations": {"summary": "GPU workers are down"}}]}]

    res = corrupted(written, "calm-fires", expect_on_steady)
    assert res.returncode != 0 and "GpuCapacityLost" in res.stdout + res.stderr


@pytest.mark.slow
@needs_promtool
def test_the_unit_tests_fail_when_a_detection_comes_later_or_a_calm_day_fires(written: Path) -> None:
    def early(tests: list[dict]) -> None:  # the outage's alert expected one interval before the evaluator's time
        outage = next(g for g in tests if g["name"] == "gpu-outage")
        firing = next(t for t in outage["alert_rule_test"] if t["exp_alerts"])
        firing["eval_time"] = f"{int(firing['eval_time'].removesuffix('s')) - 1}s"

    res = corrupted(written, "early", early)
    assert res.returncode != 0 and "GpuCapacityLost" in res.stdout + res.stderr

    def quiet_spike(tests: list[dict]) -> None:  # "nothing fires" stretched over the spike's whole day
        spike = next(g for g in tests if g["name"] == "spike")
        (quiet,) = spike["promql_expr_test"]
        quiet["expr"] = 'count_over_time(ALERTS{alertstate="firing"}[20s])'
        quiet["eval_time"] = "20s"

    res = corrupted(written, "quiet-spike", quiet_spike)
    assert res.returncode != 0 and "ALERTS" in res.stdout + res.stderr


def _burn_day(front_bad: float | None, server_bad: float) -> dict:
    """30 s at 100 requests/s, from 10 s on a share of them bad at the front door (None: no front
    door serves its histogram, as behind HAProxy) and another share bad at the API servers."""
    def counter(name: str, bad: float) -> dict:
        good = round(100 * (1 - bad))
        return {"series": name, "values": f"0+100x10 {1000 + good}+{good}x19"}

    le = 'le="0.3"'
    series = [{"series": "harness_requests_total", "values": "0+100x29"},
              counter(f"harness_request_latency_seconds_bucket{{{le}}}", server_bad)]
    if front_bad is not None:
        series += [{"series": 'harness_frontend_latency_seconds_count{outcome="ok"}', "values": "0+100x29"},
                   counter(f'harness_frontend_latency_seconds_bucket{{outcome="ok",{le}}}', front_bad)]
    return {"interval": "1s", "input_series": series}


@needs_promtool
@pytest.mark.parametrize("front_bad, server_bad, fires", [
    (0.5, 0.0, True),    # requests queued or given up on before the API servers: the front door sees them
    (0.0, 0.5, False),   # the front door's view is the SLI wherever it is served
    (None, 0.5, True),   # no front door's histogram (HAProxy in front): the API servers' answers
])
def test_the_burn_rate_page_reads_the_front_doors_latency(tmp_path: Path, front_bad: float | None, server_bad: float,
                                                          fires: bool) -> None:
    from harness.ops.prom import rules_yaml
    from harness.ops.rules import build_rules
    from targets.spec import resolve_target

    config = resolve_target("hardened")  # SLO 0.3 s
    rules = build_rules(config, hour_s=12.0)  # burn windows 12 s and 1 s
    (tmp_path / "rules.yaml").write_text(rules_yaml(config, rules))
    page = {"exp_labels": {"severity": "page", "target": "hardened"},
            "exp_annotations": {"summary": next(r.summary for r in rules if r.name == "GoodputBudgetFastBurn")}}
    day = _burn_day(front_bad, server_bad)
    day["alert_rule_test"] = [{"eval_time": "20s", "alertname": "GoodputBudgetFastBurn",
                               "exp_alerts": [page] if fires else []}]
    test = {"rule_files": ["rules.yaml"], "evaluation_interval": "1s", "tests": [day]}
    (tmp_path / "burn.test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    res = promtool("test", "rules", "burn.test.yaml", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr

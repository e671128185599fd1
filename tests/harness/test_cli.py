import json
import re

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.results import CompareResult, RunResult, from_json
from reports.page import doc_sections

runner = CliRunner()


def test_run_json_prints_only_the_summary(tmp_path):
    out = tmp_path / "r.json"
    res = runner.invoke(app, ["run", "naive", "-w", "steady", "--duration", "2", "--rate", "1000",
                              "--json", "--out", str(out), "--seed", "3"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    assert s["target"] == "naive" and s["workload"] == "steady" and s["seed"] == 3
    assert abs(s["offered_rps"] - 1000) < 100
    doc = json.loads(out.read_text())
    assert doc["kind"] == "run" and doc["summary"]["requests"] == s["requests"]


def test_compare_two_differently_knobbed_targets(tmp_path):
    out = tmp_path / "c.json"
    res = runner.invoke(app, ["compare", "naive", "naive:gpus=40,batching=dynamic", "-w", "low-traffic",
                              "--duration", "30", "--json", "--jobs", "1", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert {"a", "b", "scenarios"} <= set(doc)
    pair = doc["scenarios"]["low-traffic"]
    assert pair[doc["b"]]["gpu"]["count"] == 40
    assert pair[doc["b"]]["goodput_ratio"] > pair[doc["a"]]["goodput_ratio"]
    rendered = runner.invoke(app, ["report", str(out)])
    assert rendered.exit_code == 0 and "low-traffic" in rendered.output


def test_set_overrides_and_toml_targets(tmp_path):
    t = tmp_path / "mine.toml"
    t.write_text('base = "hardened"\n[knobs]\ngpus = 7\n')
    res = runner.invoke(app, ["run", str(t), "-w", "night", "--duration", "10", "--json",
                              "--set", "slo_s=0.5", "--out", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    assert s["gpu"]["count"] == 7 and s["slo_s"] == 0.5 and s["target"] == "mine"


def test_bad_inputs_exit_2_with_a_clear_message(tmp_path):
    bad = tmp_path / "w.toml"
    bad.write_text('phases = [{kind = "constant", duration_s = 1, rate_rps = "lots"}]')
    res = runner.invoke(app, ["run", "naive", "-w", str(bad)])
    assert res.exit_code == 2
    assert "key 'phases[0].rate_rps'" in res.output and str(bad) in res.output
    res = runner.invoke(app, ["run", "naive", "--set", "nonsense=1"])
    assert res.exit_code == 2 and "not a target knob" in res.output
    res = runner.invoke(app, ["report", str(bad)])
    assert res.exit_code == 2


def test_listing_commands():
    res = runner.invoke(app, ["targets", "--knobs"])
    assert res.exit_code == 0 and "blind-retries" in res.output and "batch_time_s" in res.output
    assert "front end: read by" in res.output and "frontend_cost_s" in res.output and "│ sim " in res.output
    res = runner.invoke(app, ["workloads"])
    assert res.exit_code == 0 and "dominant-tenant" in res.output and "bad-day" in res.output


# Every result file the CLI writes loads with from_json, round-trips, and renders again.
KINDS = {
    "run": (["run", "hardened", "-w", "spike", "--duration", "3", "--rate", "1500"], RunResult, 3),
    "compare": (["compare", "naive", "hardened", "-w", "steady", "-w", "night", "--duration", "1",
                 "--rate", "800", "--jobs", "1"], CompareResult, 4),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_result_files_load_round_trip_and_render_again(tmp_path, kind):
    args, cls, charts = KINDS[kind]
    out = tmp_path / f"{kind}.json"
    res = runner.invoke(app, [*args, "--out", str(out), "--quiet", "--seed", "2"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    result = from_json(doc)
    assert type(result) is cls and result.kind == kind and result.seed == 2
    assert result.to_json() == doc
    page = tmp_path / "r.html"
    shown = runner.invoke(app, ["report", str(out), "--html", str(page)])
    assert shown.exit_code == 0, shown.output
    assert ("hardened on spike" if kind == "run" else "naive (A) vs hardened (B)") in shown.output
    html = page.read_text()
    expected = int(re.search(r'data-expected="(\d+)"', html).group(1))
    assert expected == sum(s.figure is not None for s in doc_sections(result)) >= charts  # over time, CDF, tenants
    assert html.count('class="plot"') == expected


def test_no_help_text_is_eaten_by_rich_markup():
    """`--help` renders option help and docstrings as Rich markup: a `[[canary]]` or `[bold]`-like
    bracket in them vanishes from the screen. Every help text must render as written."""
    import typer
    from rich.text import Text

    from harness.cli import app
    from harness.docs.cli_page import commands, params

    eaten = []
    for full, cmd in commands(typer.main.get_command(app)):
        texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in params(cmd)]
        for text in texts:
            if Text.from_markup(text).plain != text:
                eaten.append(f"{full}: {text[:80]}")
    assert not eaten, "help text Rich would swallow (escape its brackets):\n" + "\n".join(eaten)

"""The compare view: outcome columns, share of the ceiling and verdict lines, within 80 columns."""

from __future__ import annotations

from rich.console import Console

from harness.analysis.compare.verdicts import scenario_verdicts
from harness.results.compare import Ceiling, CompareResult, Winner
from reports.compare import ceiling_line, render, sections, value_text, verdict_lines
from tests.harness.summaries import summary, tenant
from workloads.model import WorkloadConfig

LONG = "dominant-tenant-calm-and-more"


def workload(name: str, answers: list[dict]) -> WorkloadConfig:
    return WorkloadConfig.model_validate({
        "name": name, "phases": [{"kind": "constant", "duration_s": 10, "rate_rps": 100}],
        "tenants": [{"name": "big", "share": 0.6}, {"name": "s0", "share": 0.4}], "answers": answers})


def compare_doc() -> CompareResult:
    """Spike-like and outage-like scenarios where every outcome column holds a request."""
    tenants_a = {"big": tenant(600, 500, 0.25), "s0": tenant(400, 140, 0.9)}
    tenants_b = {"big": tenant(600, 400, 0.25), "s0": tenant(400, 400, 0.11)}
    naive = summary(within=255, late=350, shed=0, timed_out=395, p99_ok=3.0, amplification=2.7,
                    recovery={"disturbance_end_s": 20.0}, tenants=tenants_a)
    hardened = summary(within=777, late=39, shed=170, timed_out=14, p99_ok=0.33, amplification=1.08,
                       recovery={"disturbance_end_s": 20.0, "recovered_after_s": 0.3}, tenants=tenants_b)
    outage = summary(within=900, late=40, shed=0, timed_out=20, failed=25, unfinished=15, p99_ok=0.2)
    spike_answers = [{"figure": "recovery.recovered_after_s", "label": "recovery after the spike"},
                     {"figure": "amplification"}]
    dom_answers = [{"figure": "tenants.!big.goodput_ratio", "label": "small tenants' goodput"},
                   {"figure": "tenants.!big.p99_ok_s", "label": "small tenants' answered p99"}]
    ceiling = {"naive": Ceiling(capacity_rps=10240, ceiling_ratio=0.74, share=0.255 / 0.74),
               "hardened": Ceiling(capacity_rps=13120, ceiling_ratio=0.809, share=0.777 / 0.809)}
    verdicts = {}
    for name, answers, (sa, sb) in (("spike", spike_answers, (naive, hardened)),
                                    (LONG, dom_answers, (naive, hardened)),
                                    ("gpu-outage", [{"figure": "requests.lost"}], (outage, outage))):
        v = scenario_verdicts(workload(name, answers), sa, sb)
        verdicts[name] = v.model_copy(update={"ceiling": ceiling})
    return CompareResult(a="naive", b="hardened", seed=1, verdicts=verdicts, scenarios={
        "spike": {"naive": naive, "hardened": hardened}, LONG: {"naive": naive, "hardened": hardened},
        "gpu-outage": {"naive": outage, "hardened": outage}})


def rendered(result: CompareResult) -> str:
    console = Console(width=80, record=True)
    render(result, console)
    return console.export_text()


def test_console_table_fits_80_columns_with_every_outcome_column():
    text = rendered(compare_doc())
    assert max(len(line) for line in text.splitlines()) <= 80, text
    header = next(line for line in text.splitlines() if line.startswith("scenario"))
    for col in ("goodput", "ceil", "p99 ok", "late", "shed", "t/o", "fail", "lost", "amp"):
        assert col in header, header
    assert "dominant-tenant…" in text and "✓" in text  # a long name is clipped, not wrapped


def test_outcomes_and_share_of_the_ceiling_replace_never():
    lines = rendered(compare_doc()).splitlines()
    spike_b = next(line for line in lines if line.lstrip().startswith("B") and "77.7%" in line)
    # hardened on spike: 77.7% goodput, 96% of the ceiling, answered p99, 17% shed, 1.4% timed out
    for cell in ("96%", "330 ms", "17%", "1.4%", "1.08"):
        assert cell in spike_b, spike_b
    assert "never" not in spike_b


def test_verdict_lines_name_the_winner_or_a_tie():
    result = compare_doc()
    assert verdict_lines(result, "spike") == [
        "recovery after the spike: never | 300 ms -> hardened (B)",
        "attempts per request: 2.70x | 1.08x -> hardened (B)"]
    assert verdict_lines(result, LONG)[0] == "small tenants' goodput: 35.0% | 100.0% -> hardened (B)"
    assert verdict_lines(result, "gpu-outage") == ["requests lost: 0 | 0 -> tie (within 0)"]
    text = rendered(result)
    assert "What each scenario asks" in text and "recovery after the spike" in text
    assert "ceiling (any design)" in text


def test_values_read_in_their_units():
    v = compare_doc().verdicts["spike"].answers[0]
    assert [value_text(v, x) for x in (None, 0.0, 0.3, 2.5)] == ["never", "0 s", "300 ms", "2.50 s"]


def test_html_sections_carry_the_verdicts():
    lead, secs = sections(compare_doc())[:2], sections(compare_doc())[2:]
    assert [s.lead for s in lead] == [True, True] and not any(s.lead for s in secs)
    titles = [s.title for s in secs]
    assert titles[:2] == ["A vs B in every scenario", "What each scenario asks"]
    assert "share of ceiling" in secs[0].html and "96%" in secs[0].html
    assert "small tenants&#x27; goodput" in secs[1].html and "hardened (B)" in secs[1].html
    assert ceiling_line(compare_doc(), "spike") == (
        "goodput as a share of the ceiling (what any design could answer): "
        "naive (A) 25.5% of 74.0% = 34%, hardened (B) 77.7% of 80.9% = 96%")


def test_a_result_without_verdicts_still_renders():
    result = compare_doc().model_copy(update={"verdicts": {}})
    text = rendered(result)
    assert "What each scenario asks" not in text and max(len(x) for x in text.splitlines()) <= 80


def test_the_overview_leads_with_the_verdict_the_goodput_chart_and_a_link_per_scenario():
    from reports.compare_overview import goodput_figure, scenario_anchor, verdict_line

    result = compare_doc()
    wins = result.winners()
    assert verdict_line(result) == (f"hardened (B) won {list(wins.values()).count(Winner.B)} of 3 scenarios "
                                    f"(naive (A) {list(wins.values()).count(Winner.A)}, tie "
                                    f"{list(wins.values()).count(Winner.TIE)}).")
    verdict, chart = sections(result)[:2]
    # No saved runs: every link goes to the table, which carries the anchor.
    assert verdict.html.count("href='#compare-table'") == 3 and scenario_anchor("a b") == "scenario-a-b"
    fig = chart.figure
    goodput = {tr.name: tr.y for tr in fig.data}
    assert goodput["A: naive goodput"][0] == 25.5 and goodput["B: hardened goodput"][0] == 77.7
    assert goodput["A: naive ceiling"] == (74.0, 74.0, 74.0)  # every scenario here has one
    assert fig is not None and goodput_figure(result).layout.barmode == "group"
    tie = result.model_copy(update={"verdicts": {}, "scenarios": {"gpu-outage": result.scenarios["gpu-outage"]}})
    assert verdict_line(tie).startswith("Neither side won more")

"""The canary result round-trips through JSON; its view shows rollback shares and the false-rollback rate."""

from __future__ import annotations

from rich.console import Console

from harness.results import from_json
from harness.results.canary import CanaryCell, CanaryResult, CanaryRun
from reports.registry import view


def _cell(day: str, bad: bool, decisions: list[str]) -> CanaryCell:
    runs = [CanaryRun(seed=i, decision=d, decided_at_s=5.0, step=0, failed=["latency"] if d == "rollback" else [],
                      canary_requests=100, wrong_version=0) for i, d in enumerate(decisions)]
    share = decisions.count("rollback") / len(decisions)
    return CanaryCell(plan="fast", day=day, bad=bad, runs=runs, rollback_share=share, promote_share=1 - share,
                      median_decision_s=5.0, median_blast_radius=100.0, wrong_version=0)


def test_round_trip_and_view() -> None:
    result = CanaryResult(target="hardened", seeds=4, plans={"fast": "5% -> 25%"},
                          cells=[_cell("good", False, ["promote"] * 3 + ["rollback"]),
                                 _cell("slow", True, ["rollback"] * 4)])
    back = from_json(result.to_json())
    assert back == result
    console = Console(record=True, width=160)
    view("canary").render(back, console)
    text = console.export_text()
    assert "fast: false-rollback rate 25.0%" in text and "latency x4" in text
    assert back.summary_json()["cells"][1]["rollback_share"] == 1.0

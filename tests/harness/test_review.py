"""The design-review demo on a reduced setup: its narrative quotes numbers
that are in its embedded documents, a user's design replaces naive, and a
missing Part 2/Part 3 module becomes a note instead of a crash."""

import re
import sys

import pytest
from rich.console import Console

from harness.analysis.review import pct, review
from reports.review_console import render_review

SMALL = {"full-batch-only": ["night"], "no-admission-control": ["night"], "blind-retries": ["night"]}


@pytest.fixture(scope="module")
def doc():
    return review(flaw_scenarios=SMALL, scale=0.2, parts=False, workers=1)


def test_narrative_quotes_measured_numbers(doc):
    text = "\n".join(doc["narrative"])
    fbo = next(f for f in doc["rank"]["flaws"] if f["id"] == "full-batch-only")
    row = fbo["per_scenario"]["night"]
    # The goodput figures of both sides, as measured, appear in the narrative.
    for value in (row["goodput"]["hardened"], row["goodput"]["hardened+full-batch-only"],
                  row["goodput"]["naive"], row["goodput"]["naive-full-batch-only"]):
        assert pct(value) in text
    assert f"{100 * fbo['cost']['goodput_loss']:.1f} points" in text
    # Every percentage in the narrative is one the embedded rank document holds.
    held = set()
    for f in doc["rank"]["flaws"]:
        for r in f["per_scenario"].values():
            held |= {pct(v) for v in r["goodput"].values()}
            held |= {f"{100 * v:.1f}%" for v in (r["goodput_loss"], r["gain_goodput"])}
    quoted = set(re.findall(r"\d+\.\d%", text))
    assert quoted and quoted <= held


def test_items_walk_the_doc_in_order(doc):
    assert [it["flaw"].split(":")[0] for it in doc["items"]] == ["full-batch-only", "blind-retries", "no-admission-control"]
    for it in doc["items"]:
        assert set(it) >= {"item", "flaw", "experiment", "measured", "fix", "gain"}
        assert "night" in it["experiment"] and "->" in it["measured"]
    assert doc["kind"] == "review" and doc["design"] == "naive" and doc["rank"]["kind"] == "rank"


def test_console_view_fits_80_columns(doc):
    console = Console(width=80, record=True, color_system=None)
    render_review(doc, console)
    out = console.export_text()
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "Item 2: full-batch-only" in out and "Insist on these before shipping" in out


def test_user_design_replaces_naive(tmp_path):
    design = tmp_path / "my-design.toml"
    design.write_text('name = "mine"\nbase = "naive"\nfix = ["full-batch-only"]\n')
    d = review(str(design), flaw_scenarios={"full-batch-only": ["night"], "blind-retries": ["night"]},
               scale=0.2, parts=False, workers=1)
    assert d["rank"]["flawed"] == "mine"
    fbo = next(it for it in d["items"] if it["flaw"].startswith("full-batch-only"))
    assert "already fixed in mine" in fbo["gain"]
    assert "full-batch-only" not in d["rank"]["top"]  # insist only on flaws the design still has
    br = next(f for f in d["rank"]["flaws"] if f["id"] == "blind-retries")
    assert "mine-blind-retries" in br["per_scenario"]["night"]["goodput"]


def test_missing_parts_become_notes(monkeypatch):
    monkeypatch.setitem(sys.modules, "harness.analysis.capacity", None)  # import raises ImportError
    monkeypatch.setitem(sys.modules, "harness.cli.pool", None)
    d = review(flaw_scenarios={"full-batch-only": ["night"]}, scale=0.2, parts=True, workers=1)
    assert d["capacity"] is None and d["pool"] is None
    notes = " ".join(d["notes"])
    assert "Part 2 (capacity) is not available" in notes and "Part 3 (pool) is not available" in notes
    assert any("Part 2 (capacity) is not available" in line for line in d["narrative"])

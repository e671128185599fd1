"""`compare llm-fleet:... llm-fleet:... --dataset FILE` in sim: the data set's conversations are the
day (workloads.dataset_days), so the fleets' prefix caches see the sharing a live run of the file
sends; what a data set's day cannot be is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app

runner = CliRunner()
_A, _B = "llm-fleet:router=prefix,replicas=2", "llm-fleet:router=round-robin,replicas=2"


def _chats(path: Path, n: int = 40) -> Path:
    path.write_text(json.dumps([{"id": f"c{k}", "conversations": [
        {"from": "human", "value": f"question {k} about the sea and the ships that sail on it"},
        {"from": "gpt", "value": "the sea is wide and the ships are many " * 4},
        {"from": "human", "value": "and the ports they sail to?"},
        {"from": "gpt", "value": "there are many ports along the coast " * 4}]} for k in range(n)]))
    return path


def test_a_sim_fleet_compare_takes_a_data_set_as_its_day(tmp_path: Path) -> None:
    chats, out = _chats(tmp_path / "chats.json"), tmp_path / "fleet.json"
    res = runner.invoke(app, ["compare", _A, _B, "--dataset", str(chats), "--think-time", "2", "--prefix-tokens",
                              "128", "--prefix-groups", "2", "--rate", "2", "--duration", "30", "--jobs", "1",
                              "--json", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["settings"]["days"] == [str(chats)] and doc["settings"]["duration_s"] == 30
    runs = {r["fleet"]: r for r in doc["runs"]}
    assert len(runs) == 2 and all(r["day"] == str(chats) and r["requests"] > 20 for r in runs.values())
    # every conversation's second turn re-sends its first, and 2 system prompts open them all: the prefix
    # router keeps a conversation on its replica, so its cache finds more than round robin's
    assert runs[_A]["prefix_hit_rate"] > runs[_B]["prefix_hit_rate"] > 0


@pytest.mark.parametrize("extra, message", [
    (["--mode", "live"], "--dataset: not used by an LLM compare in --mode live"),   # the applies table
    (["-w", "chat"], "--dataset is the day of this compare: give it without --workload or --suite"),
    (["--prefix-groups", "2"], "--prefix-groups counts shared system prompts: give --prefix-tokens N too"),
])
def test_what_a_data_sets_day_cannot_be_is_one_line_exit_2(tmp_path: Path, extra: list[str], message: str) -> None:
    res = runner.invoke(app, ["compare", _A, _B, "--dataset", str(_chats(tmp_path / "c.json", 2)), *extra])
    assert res.exit_code == 2 and message in " ".join(res.output.split()), res.output
    assert "Traceback" not in res.output


def test_a_bad_data_set_or_one_engine_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"conversations": [')
    res = runner.invoke(app, ["compare", _A, _B, "--dataset", str(bad)])
    assert res.exit_code == 2 and str(bad) in "".join(res.output.split()), res.output
    res = runner.invoke(app, ["compare", "llm-static", "llm-continuous", "--dataset", str(bad)])
    assert res.exit_code == 2 and "a sim day of a data set is a fleet's" in " ".join(res.output.split()), res.output
    assert "Traceback" not in res.output

"""`-w FILE.toml` of an LLM URL (workloads.llm_file): the file's data set and load drive `run URL`,
an option given replaces the file's, and a bad file or a key a command cannot take is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from tests.harness.fake_openai import FakeOpenAI, serve

runner = CliRunner()
_URL = "http://127.0.0.1:9/v1/completions"


def _day(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "chats.json").write_text(json.dumps([{"id": f"c{k}", "conversations": [
        {"from": "human", "value": f"question {k} about the sea"}, {"from": "gpt", "value": "the sea is wide"},
        {"from": "human", "value": "and the ships?"}]} for k in range(6)]))
    path = tmp_path / "day.toml"
    path.write_text(f'mix = "short"\ndataset = "chats.json"\nduration_s = 1.0\nprefix_tokens = 16\n{extra}')
    return path


@pytest.mark.live
def test_run_url_sends_the_files_data_set_under_its_load_and_an_option_given_replaces_it(tmp_path: Path) -> None:
    day = _day(tmp_path, "concurrency = 2\n")
    with serve(FakeOpenAI(ttft_s=0.01, itl_s=0.002)) as url:
        traffic = {}
        for name, more in (("file", []), ("given", ["--rate", "3"])):
            out = tmp_path / f"{name}.json"
            res = runner.invoke(app, ["run", url, "-w", str(day), *more, "--json", "--out", str(out)])
            assert res.exit_code == 0, res.output
            traffic[name] = json.loads(out.read_text())["runs"][0]["traffic"]
    assert traffic["file"]["dataset"] == str(tmp_path / "chats.json") and traffic["file"]["load"] == "concurrency"
    assert traffic["file"]["concurrency"] == 2 and traffic["file"]["prefix_tokens"] == 16
    assert traffic["given"]["load"] == "open" and traffic["given"].get("concurrency") is None   # --rate: the whole load
    assert traffic["given"]["dataset"] == str(tmp_path / "chats.json")


@pytest.mark.parametrize("line, message", [
    (["run", _URL, "-w", "{dir}/bad.toml"], "{dir}/bad.toml: key 'concurrency': Input should be greater than"),
    (["sweep", _URL, "-w", "{dir}/day.toml"], "{dir}/day.toml: key 'duration_s': a sweep sets its own load"),
    (["compare", _URL, "http://127.0.0.1:8/v1/completions", "-w", "{dir}/day.toml", "-w", "short"],
     "--workload FILE.toml names the whole traffic of a compare of LLM URLs: give it alone"),
])
def test_a_bad_workload_file_or_one_a_command_cannot_take_is_one_line_exit_2(tmp_path: Path, line: list[str],
                                                                             message: str) -> None:
    _day(tmp_path)
    (tmp_path / "bad.toml").write_text("concurrency = 0\n")
    res = runner.invoke(app, [part.format(dir=tmp_path) for part in line])
    assert res.exit_code == 2, res.output
    squeezed = "".join(res.output.split())   # a long path may wrap: compare without white space
    assert "".join(message.format(dir=tmp_path).split()) in squeezed, res.output
    assert "Traceback" not in res.output


@pytest.mark.live
def test_compare_urls_sends_the_files_traffic_to_both(tmp_path: Path) -> None:
    day, out = _day(tmp_path, "concurrency = 2\n"), tmp_path / "c.json"
    with serve(FakeOpenAI(ttft_s=0.01, itl_s=0.002)) as a, serve(FakeOpenAI(ttft_s=0.02, itl_s=0.002)) as b:
        res = runner.invoke(app, ["compare", a, b, "-w", str(day), "--json", "--out", str(out)])
    assert res.exit_code == 0, res.output
    runs = json.loads(out.read_text())["runs"]
    assert len(runs) == 2 and all(r["traffic"]["dataset"] == str(tmp_path / "chats.json") for r in runs)
    assert [r["traffic"]["concurrency"] for r in runs] == [2, 2]

"""LLM URL traffic without a server: load modes and their refusals, the knee, turns as requests
(Mooncake hash ids as shared blocks, shared system prompts), and bad inputs on every LLM URL command
(one line naming the file, line or option, exit 2, no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from harness.analysis.llm.traffic import concurrency_knee
from harness.cli import app
from harness.live.openai.load import Load, LoadError, LoadMode, slots_bound
from harness.live.openai.prompts import Calibration
from harness.live.openai.stream import Api
from harness.live.openai.traffic import Traffic
from harness.live.openai.turns import TurnBuilder
from workloads.datasets import Message, Prompt

runner = CliRunner()
URL = "http://127.0.0.1:9/v1/completions"   # nothing listens: every case must end before a request


@given(rate=st.none() | st.floats(0.01, 1e4), n=st.none() | st.integers(-2, 64), cap=st.none() | st.integers(-2, 64),
       timed=st.booleans())
@settings(max_examples=60, deadline=None)
def test_a_load_is_one_mode_or_a_refusal_naming_the_option(rate: float | None, n: int | None, cap: int | None,
                                                           timed: bool) -> None:
    try:
        load = Load.of(rate, n, cap, timed)
    except LoadError as exc:
        assert any(f in str(exc) for f in ("--concurrency", "--max-concurrency", "--rate"))
        assert n is not None and (n < 1 or rate is not None or cap is not None) or cap is not None and cap < 1
        return
    assert load.slots == (n if n is not None else cap)
    if n is not None:
        assert load.mode is LoadMode.CONCURRENCY and load.rate_rps is None
    elif cap is not None:
        assert load.mode is LoadMode.CAPPED and (load.rate_rps is not None or timed)
    else:
        assert load.mode is (LoadMode.REPLAY if rate is None and timed else LoadMode.OPEN)


@given(st.lists(st.floats(0, 1.0), max_size=50))
@settings(max_examples=40, deadline=None)
def test_slots_bound_only_when_a_tenth_waited(waits: list[float]) -> None:
    waited = sum(w > 0.001 for w in waits)
    assert slots_bound(waits) == (bool(waits) and waited / len(waits) >= 0.1)


def test_knee_of_a_curve_that_rises_then_flattens() -> None:
    assert concurrency_knee([1, 2, 4, 8, 16], [10, 20, 40, 40, 40]) == 2   # N / T up to C = 4, then C / T
    assert concurrency_knee([1, 2], [1, 2]) is None
    assert concurrency_knee([1, 2, 4, 8], [1, 2, 4, 8]) is None          # still rising at the last level
    assert concurrency_knee([1, 2, 4, 8, 16], [10, 20, 38, 41, 37]) == 2  # noise on the plateau
    assert concurrency_knee([1, 2, 4], [5, 5, 5]) == 0                    # flat: saturated from the first level
    assert concurrency_knee([1, 2, 4], [0, 0, 0]) is None                 # nothing answered


@given(cap=st.integers(1, 32), t=st.floats(0.01, 2.0))
@settings(max_examples=40, deadline=None)
def test_the_knee_of_the_closed_form_is_the_servers_cap(cap: int, t: float) -> None:
    levels = [1, 2, 4, 8, 16, 32, 64]
    rps = [min(n, cap) / t for n in levels]
    knee = concurrency_knee(levels, rps)
    assert knee is not None and levels[knee] >= cap * 0.9 and (knee == 0 or levels[knee - 1] < cap)


def _builder(api: Api = Api.CHAT, block_tokens: int = 8) -> TurnBuilder:
    return TurnBuilder(api, Calibration.assumed(), None, seed=3, block_tokens=block_tokens)


def test_equal_hash_ids_are_equal_blocks_so_shared_leading_ids_share_a_prefix_on_the_wire() -> None:
    b = _builder()
    one = b.user_text(Prompt(hash_ids=(1, 2, 3), input_tokens=24))
    two = b.user_text(Prompt(hash_ids=(1, 2, 9), input_tokens=24))
    other = b.user_text(Prompt(hash_ids=(5, 2, 3), input_tokens=24))
    shared = b.user_text(Prompt(hash_ids=(1, 2), input_tokens=16))
    assert one.startswith(shared + " ") and two.startswith(shared + " ") and one != two
    assert not other.startswith(b.block(1, 8))
    assert b.user_text(Prompt(hash_ids=(1, 2, 3), input_tokens=24)) == one   # the same ids: the same text


def test_a_shared_system_prompt_opens_each_turn_and_groups_differ() -> None:
    b = _builder(block_tokens=512)
    g0, g1 = b.system_prefix(0, 40), b.system_prefix(1, 40)
    assert g0.role == "system" and g0 == b.system_prefix(0, 40) and g0.content != g1.content
    turn = b.turn((g0,), Prompt(text="hello there"), 0)
    assert turn.messages[0] == g0 and turn.messages[-1] == Message("user", "hello there")
    assert b.payload(turn)["messages"][0] == {"role": "system", "content": g0.content}
    assert _builder(Api.COMPLETIONS).payload(turn)["prompt"].startswith(g0.content)


def test_prefix_options_are_checked() -> None:
    with pytest.raises(ValueError, match="--prefix-groups counts shared system prompts"):
        Traffic.of(None, None, None, 2, None, prefix_groups=3)
    with pytest.raises(ValueError, match="--prefix-tokens must be >= 0"):
        Traffic.of(None, None, None, 2, None, prefix_tokens=-1)
    t = Traffic.of(None, None, None, 2, None, prefix_tokens=64, prefix_groups=4)
    assert (t.prefix_tokens, t.prefix_groups, t.load.concurrency) == (64, 4, 2)


def _files(tmp_path: Path) -> Path:
    (tmp_path / "cut.json").write_text('[{"conversations": [{"from": "human", "value": "hi"}')
    (tmp_path / "noprompt.jsonl").write_text('{"prompt": "fine"}\n{"output_tokens": 3}\n')
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "ok.jsonl").write_text('{"prompt": "fine"}\n')
    return tmp_path


BAD = [
    (["--concurrency", "0"], "--concurrency must be >= 1, got 0"),
    (["--rate", "2", "--concurrency", "4"], "--rate with --concurrency is ambiguous"),
    (["--max-concurrency", "0"], "--max-concurrency must be >= 1"),
    (["--concurrency", "2", "--max-concurrency", "4"], "--max-concurrency with --concurrency"),
    (["--dataset", "{dir}/cut.json"], "cut.json:1: not JSON or cut short"),
    (["--dataset", "{dir}/noprompt.jsonl"], "noprompt.jsonl:2: no 'prompt' text or 'messages' list"),
    (["--dataset", "{dir}/empty.csv"], "empty.csv: empty file"),
    (["--dataset", "{dir}/missing.jsonl"], "missing.jsonl"),
    (["--dataset-format", "jsonl"], "--dataset-format names the format of --dataset FILE"),
    (["--dataset", "{dir}/ok.jsonl", "--dataset-format", "parquet"], "parquet"),
    (["--prefix-groups", "3"], "--prefix-groups counts shared system prompts"),
    (["--think-time", "-1"], "--think-time must be >= 0"),
]


def _one_line_exit_2(res, message: str) -> None:  # type: ignore[no-untyped-def]
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split()), res.output
    assert "Traceback" not in res.output and (res.exception is None or isinstance(res.exception, SystemExit))
    assert len(res.output.strip().splitlines()) <= 3   # one line (rich may wrap it at 80 columns)


@pytest.mark.parametrize("args, message", BAD)
def test_bad_traffic_inputs_to_run_are_one_line_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    d = _files(tmp_path)
    _one_line_exit_2(runner.invoke(app, ["run", URL, *[a.format(dir=d) for a in args]]), message)


@pytest.mark.parametrize("args, message", [b for b in BAD if "--concurrency" not in b[0][0] and "--rate" not in b[0]])
def test_bad_traffic_inputs_to_compare_are_one_line_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    d = _files(tmp_path)
    res = runner.invoke(app, ["compare", URL, URL.replace(":9/", ":10/"), *[a.format(dir=d) for a in args]])
    _one_line_exit_2(res, message)


@pytest.mark.parametrize("args, message", [
    (["--concurrency", "0,1"], "every level must be >= 1"),
    (["--concurrency", "4,2"], "give the levels increasing"),
    (["--concurrency", "a,b"], "expected whole numbers such as 1,2,4,8,16"),
    (["--dataset", "{dir}/ok.jsonl"], "need --concurrency LEVELS"),
    (["--concurrency", "1,2", "--start-rate", "3"], "--start-rate: not used by a concurrency sweep"),
    (["--concurrency", "1,2", "--dataset", "{dir}/cut.json"], "cut.json:1: not JSON or cut short"),
])
def test_bad_traffic_inputs_to_sweep_are_one_line_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    d = _files(tmp_path)
    _one_line_exit_2(runner.invoke(app, ["sweep", URL, *[a.format(dir=d) for a in args]]), message)


@pytest.mark.parametrize("command", [["run", "naive"], ["sweep", "naive"], ["compare", "naive", "hardened"]])
def test_traffic_options_on_a_target_that_is_not_an_llm_url_are_refused(command: list[str]) -> None:
    res = runner.invoke(app, [*command, "--dataset", "x.json"])
    assert res.exit_code == 2 and "--dataset applies to" in " ".join(res.output.split()), res.output
    assert "LLM URL" in " ".join(res.output.split())


def test_a_sharegpt_file_in_a_gate_is_checked_with_its_file_and_key(tmp_path: Path) -> None:
    d = _files(tmp_path)
    gate = tmp_path / "g.toml"
    gate.write_text(f'[[llm]]\nurl = "{URL}"\ndataset = "{d}/cut.json"\nconcurrency = 2\nchecks = ["ttft_s.p90 <= 1"]\n')
    res = runner.invoke(app, ["gate", str(gate)])
    _one_line_exit_2(res, "cut.json:1: not JSON or cut short")
    gate.write_text(f'[[llm]]\nurl = "{URL}"\nconcurrency = 0\nchecks = ["ttft_s.p90 <= 1"]\n')
    _one_line_exit_2(runner.invoke(app, ["gate", str(gate)]), "key 'llm[0].concurrency': must be a whole number >= 1")
    gate.write_text(f'[[llm]]\nurl = "{URL}"\nrate_rps = 2\nconcurrency = 2\nchecks = ["ttft_s.p90 <= 1"]\n')
    _one_line_exit_2(runner.invoke(app, ["gate", str(gate)]), "--rate with --concurrency is ambiguous")

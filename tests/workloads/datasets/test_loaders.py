"""Data set loaders: every turn of ShareGPT, JSONL/CSV prompts, Mooncake rows, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workloads.datasets import DatasetError, DatasetFormat, Message, load_dataset


def _sharegpt(path: Path, conversations: list[list[tuple[str, str]]]) -> Path:
    doc = [{"id": f"c{k}", "conversations": [{"from": who, "value": text} for who, text in turns]}
           for k, turns in enumerate(conversations)]
    path.write_text(json.dumps(doc, indent=1))
    return path


def test_sharegpt_keeps_every_turn_and_its_answer(tmp_path: Path) -> None:
    path = _sharegpt(tmp_path / "chats.json", [
        [("system", "be brief"), ("human", "hello"), ("gpt", "hi there"), ("human", "how are you"),
         ("gpt", "fine thanks"), ("human", "bye")],
        [("gpt", "an answer with no question")],          # no human turn: skipped
        [("human", "one question"), ("gpt", "one answer")]])
    data = load_dataset(path)
    assert data.format is DatasetFormat.SHAREGPT and len(data) == 2 and data.turns == 4
    first = data.conversations[0]
    assert [t.text for t in first.turns] == ["be brief\n\nhello", "how are you", "bye"]
    assert [t.reference for t in first.turns] == ["hi there", "fine thanks", None]


def test_jsonl_prompts_messages_lengths_and_times(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"prompt": "tell me a story", "output_tokens": 12, "timestamp": 10.0},
        {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "timestamp": 10.5}]) + "\n\n")
    data = load_dataset(path)
    assert data.format is DatasetFormat.JSONL and data.timed
    a, b = (c.turns[0] for c in data.conversations)
    assert (a.text, a.output_tokens) == ("tell me a story", 12)
    assert (b.messages, b.output_tokens) == ((Message("user", "hi"),), 3)
    assert [c.offset_s for c in data.conversations] == [0.0, 0.5]


def test_csv_prompts(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text('prompt,output_length\n"a, b and c",5\nsecond prompt,\n')
    data = load_dataset(path)
    assert [(c.turns[0].text, c.turns[0].output_tokens) for c in data.conversations] == [("a, b and c", 5),
                                                                                         ("second prompt", None)]
    assert not data.timed


def test_mooncake_rows(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"timestamp": 1000, "input_length": 40, "output_length": 4, "hash_ids": [0, 1, 2]},
        {"timestamp": 3500, "input_length": 30, "output_length": 2, "hash_ids": [0, 1]}]))
    data = load_dataset(path)
    assert data.format is DatasetFormat.MOONCAKE
    assert [c.offset_s for c in data.conversations] == [0.0, 2.5]         # ms in the file
    assert data.conversations[1].turns[0].hash_ids == (0, 1)


@pytest.mark.parametrize("name, text, fmt, expected", [
    ("cut.json", '[{"id": "a", "conversations": [{"from": "human", "value": "hi"', None,
     r"cut\.json:1: not JSON or cut short"),
    ("noturns.json", '[{"id": "a"}]', None, r"noturns\.json: entry 0: no 'conversations' list"),
    ("noprompt.jsonl", '{"prompt": "ok"}\n{"output_tokens": 4}\n', None,
     r"noprompt\.jsonl:2: no 'prompt' text or 'messages' list"),
    ("badline.jsonl", '{"prompt": "ok"}\n{"prompt": \n', None, r"badline\.jsonl:2: not JSON"),
    ("empty.jsonl", "", None, r"empty\.jsonl: empty file"),
    ("blank.csv", "\n", None, r"blank\.csv: empty file"),
    ("header.csv", "prompt,output_tokens\n", None, r"header\.csv: empty file"),
    ("badlen.csv", "prompt,output_tokens\nhi,0\n", None, r"badlen\.csv:2: 'output_tokens' must be"),
    ("moon.jsonl", '{"timestamp": 0, "input_length": 4, "hash_ids": [1]}\n', None,
     r"moon\.jsonl:1: missing field\(s\) output_length"),
    ("moon2.jsonl", '{"timestamp": 0, "input_length": 4, "output_length": 1, "hash_ids": []}\n', "mooncake",
     r"moon2\.jsonl:1: 'hash_ids' must be"),
    ("prompts.txt", "hi\n", None, r"prompts\.txt: cannot tell the format"),
    ("p.jsonl", '{"prompt": "x"}\n', "parquet", r"--dataset-format 'parquet': valid are"),
])
def test_bad_files_are_one_line_errors(tmp_path: Path, name: str, text: str, fmt: str | None, expected: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DatasetError, match=expected) as info:
        load_dataset(path, fmt)
    assert "\n" not in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file"):
        load_dataset(tmp_path / "nope.json")


@settings(max_examples=40, deadline=None)
@given(turns=st.lists(st.integers(1, 4), min_size=1, max_size=12), n=st.integers(0, 40), seed=st.integers(0, 99))
def test_every_human_turn_is_loaded_and_sampling_is_seeded(tmp_path_factory: pytest.TempPathFactory,
                                                            turns: list[int], n: int, seed: int) -> None:
    convs = [[("human", f"q{k}.{j}") if i % 2 == 0 else ("gpt", f"a{k}.{j}")
              for j in range(t) for i in range(2)] for k, t in enumerate(turns)]
    data = load_dataset(_sharegpt(tmp_path_factory.mktemp("d") / "s.json", convs))
    assert [len(c.turns) for c in data.conversations] == turns
    drawn = data.sample(n, seed)
    assert drawn == data.sample(n, seed) and len(drawn) == n
    # without replacement while the data set lasts
    first = drawn[:len(turns)]
    assert len({c.id for c in first}) == len(first)

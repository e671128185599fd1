"""An LLM workload file (workloads.llm_file): the options of an LLM URL command as TOML keys, paths
relative to the file, and one error naming the file, key and problem for each bad one."""

from __future__ import annotations

from pathlib import Path

import pytest

from workloads.config_files import ConfigError
from workloads.datasets.model import DatasetFormat
from workloads.llm_file import is_llm_workload_file, load_llm_workload


def _file(tmp_path: Path, text: str, name: str = "chat-day.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_file_gives_every_key_its_paths_relative_to_the_file(tmp_path: Path) -> None:
    w = load_llm_workload(_file(tmp_path, 'mix = "sharegpt-like"\ndataset = "chats.json"\ndataset_format = '
                                '"sharegpt"\nconcurrency = 4\nthink_time_s = 1.5\nprefix_tokens = 256\n'
                                'prefix_groups = 4\nduration_s = 30\n'))
    assert (w.name, w.mix, w.dataset, w.dataset_format) == ("chat-day", "sharegpt-like", str(tmp_path / "chats.json"),
                                                           DatasetFormat.SHAREGPT)
    assert (w.concurrency, w.max_concurrency, w.rate_rps, w.duration_s) == (4, None, None, 30.0)
    assert (w.think_time_s, w.prefix_tokens, w.prefix_groups) == (1.5, 256, 4)
    trace = load_llm_workload(_file(tmp_path, 'mix = "traces/azure.csv"\nrate_rps = 3\nmax_concurrency = 2\n'))
    assert trace.mix == str(tmp_path / "traces" / "azure.csv") and trace.dataset is None
    assert load_llm_workload(_file(tmp_path, "")).mix == "short"
    assert is_llm_workload_file("a.toml") and not is_llm_workload_file("short") and not is_llm_workload_file(None)


@pytest.mark.parametrize("text, message", [
    ("concurrency = 0\n", "key 'concurrency': Input should be greater than or equal to 1"),
    ("datset = 'x.json'\n", "key 'datset': Extra inputs are not permitted"),
    ("dataset = 'x.json'\ndataset_format = 'parquet'\n", "key 'dataset_format': Input should be 'sharegpt'"),
    ("concurrency = 4\nrate_rps = 2\n", "key 'concurrency': with rate_rps is ambiguous"),
    ("concurrency = 4\nmax_concurrency = 2\n", "key 'max_concurrency': with concurrency"),
    ("dataset_format = 'jsonl'\n", "key 'dataset_format': names the format of dataset: give dataset too"),
    ("prefix_groups = 3\n", "key 'prefix_groups': counts shared system prompts: give prefix_tokens too"),
    ("mix = 'shortish'\n", "key 'mix': unknown length mix 'shortish': valid are"),
    ("concurrency = [1, 2\n", "not valid TOML"),
])
def test_a_bad_file_is_one_error_naming_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        load_llm_workload(path)
    assert str(exc.value).startswith(f"{path}: ") and message in str(exc.value) and "\n" not in str(exc.value)


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_llm_workload(str(tmp_path / "none.toml"))

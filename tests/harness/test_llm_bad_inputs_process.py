"""Issue 37's bad inputs through the real `harness` process (not CliRunner): each a one-line error on
stderr naming the file, line or option, exit 2, no traceback, nothing sent (nothing listens at the URL)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
URL = "http://127.0.0.1:9/v1/completions"

CASES = [
    ("truncated JSON", ["--dataset", "{d}/cut.json"], "cut.json:3: not JSON or cut short"),
    ("JSONL line without a prompt", ["--dataset", "{d}/noprompt.jsonl"], "noprompt.jsonl:2: no 'prompt' text"),
    ("empty file", ["--dataset", "{d}/empty.jsonl"], "empty.jsonl: empty file"),
    ("a tokenizer path that is not one", ["--tokenizer", "{d}/notatok.json"], "notatok.json is not a tokenizer.json"),
    ("--concurrency 0", ["--concurrency", "0"], "--concurrency must be >= 1, got 0"),
    ("--rate with --concurrency", ["--rate", "2", "--concurrency", "4"], "--rate with --concurrency is ambiguous"),
    ("--driver-procs over the users", ["--concurrency", "2", "--driver-procs", "3"],
     "--driver-procs 3 is more than --concurrency 2"),
]


def _files(d: Path) -> Path:
    # cut short on its third line: the error names that line, not the first
    (d / "cut.json").write_text('[\n  {"conversations": [\n    {"from": "human", "value": "hi"')
    (d / "noprompt.jsonl").write_text('{"prompt": "fine"}\n{"output_tokens": 3}\n')
    (d / "empty.jsonl").write_text("")
    (d / "notatok.json").write_text("{not json")
    return d


@pytest.mark.slow
@pytest.mark.parametrize("what, args, message", CASES, ids=[c[0] for c in CASES])
def test_a_bad_input_is_one_line_on_stderr_and_exit_2(tmp_path: Path, what: str, args: list[str], message: str) -> None:
    d = _files(tmp_path)
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", "from harness.cli import app; app()", "run", URL, *[a.format(d=d) for a in args]],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 2, (what, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], (what, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout and not proc.stdout.strip()

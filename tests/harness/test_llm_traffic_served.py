"""`harness run URL --dataset F --concurrency N` against the tiny decoder (llm-continuous), the cap checked
from the server's side: every call into its engine counted in and out (benchmarks/llm_traffic_served.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.results import load_result

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from llm_traffic_served import Served, sharegpt  # noqa: E402

pytestmark = pytest.mark.slow


def test_the_tiny_decoder_never_has_more_than_n_of_a_closed_loops_requests(tmp_path: Path) -> None:
    data = sharegpt(tmp_path / "chats.json", 200)
    served = Served()
    try:
        res = CliRunner().invoke(app, ["run", served.url, "--dataset", str(data), "--concurrency", "3",
                                       "--duration", "3", "--out", str(tmp_path / "r.json")])
    finally:
        served.close()
    assert res.exit_code == 0, res.output
    run = load_result(tmp_path / "r.json").runs[0]
    t = run.traffic
    assert t is not None and t.turns_sent == served.calls and served.peak == 3   # the server's own count
    assert [r.turn for r in t.per_turn][:2] == [1, 2] and t.per_turn[1].context_tokens_mean > \
        t.per_turn[0].context_tokens_mean
    words = " ".join(res.output.split())
    assert "per turn (later turns carry the earlier turns and answers)" in words and "TPOT" in words and "ITL" in words

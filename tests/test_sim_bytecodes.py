"""The CI speed figure (benchmarks/sim_bytecodes.py): bytecodes per simulated request, gated
against the committed baseline; a 20% rise, planted in the client's per-request path, fails."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import sim_bytecodes as gate  # noqa: E402

BASE = json.loads(gate.BASELINE.read_text())
same_python = pytest.mark.skipif(BASE["python"] != gate.python_version(),
                                 reason=f"the baseline counts Python {BASE['python']}'s bytecodes")


def figures(naive: float, hardened: float) -> dict[str, dict[str, float]]:
    return {"naive": {"bytecodes_per_request": naive}, "hardened": {"bytecodes_per_request": hardened}}


@pytest.mark.parametrize("rise, fails", [(0.0, False), (0.05, False), (0.0999, False), (0.101, True), (0.20, True)])
def test_a_rise_past_the_tolerance_fails(rise: float, fails: bool) -> None:
    base = figures(1000.0, 3000.0)
    failures, _ = gate.judge(figures(1000.0, 3000.0 * (1 + rise)), base)
    assert bool(failures) is fails
    assert all(line.startswith("hardened:") for line in failures)


def test_a_fall_is_a_note_and_a_missing_baseline_fails() -> None:
    failures, notes = gate.judge(figures(800.0, 3000.0), figures(1000.0, 3000.0))
    assert failures == [] and notes and notes[0].startswith("naive: -20.0%")
    failures, _ = gate.judge({"other": {"bytecodes_per_request": 1.0}}, figures(1.0, 1.0))
    assert failures == ["other: no baseline (run with --record)"]


def test_the_baseline_holds_both_designs() -> None:
    assert set(BASE["targets"]) == set(gate.TARGETS)
    assert all(t["bytecodes_per_request"] > 100 and t["requests"] >= 500 for t in BASE["targets"].values())


@pytest.mark.slow
@same_python
def test_this_tree_is_within_its_baseline() -> None:
    measured = gate.measure()
    failures, _ = gate.judge(measured, BASE["targets"])
    assert failures == []


PLANT = """
import targets.client as client

_start = client.Client.start

def start(self, *args, **kwargs):
    for _ in range({n}):  # three bytecodes an iteration (FOR_ITER, STORE_FAST, JUMP_BACKWARD)
        pass
    return _start(self, *args, **kwargs)

client.Client.start = start
"""


@pytest.mark.slow
@same_python
def test_a_planted_twenty_percent_rise_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's `start` (once per request) made to run 20% of hardened's bytecodes more."""
    extra = 0.20 * BASE["targets"]["hardened"]["bytecodes_per_request"]
    (tmp_path / "plant_slowdown.py").write_text(PLANT.format(n=math.ceil(extra / 3)))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    measured = gate.measure(("hardened",), preload="plant_slowdown")
    rise = measured["hardened"]["bytecodes_per_request"] / BASE["targets"]["hardened"]["bytecodes_per_request"] - 1
    assert 0.19 < rise < 0.30  # the plant measured as what it is (plus the wrapper's own call)
    failures, _ = gate.judge(measured, BASE["targets"])
    assert failures and failures[0].startswith("hardened:")

"""harness.live.profile: tiny real profiles (torch, CPU) make valid cost tables.

The table itself (interpolation, validation, JSON format) is tested in
tests/targets/test_cost_table.py.
"""

from __future__ import annotations

import pytest
import torch

from harness.live.profile import profile, profile_model, settle, shape_warnings
from targets.cost_table import CostPoint, CostTable


def test_tiny_profile_runs_produce_valid_tables() -> None:
    mlp = profile_model("mlp", "cpu", batch_sizes=(1, 4), repeats=1, warmup=0, threads=1)
    assert (mlp.model, mlp.device, mlp.threads, mlp.torch) == ("mlp", "cpu", 1, torch.__version__)
    assert mlp.batch_sizes == (1, 4) and mlp.lengths is None
    assert all(p.seconds > 0 for p in mlp.points)
    assert CostTable.from_dict(mlp.to_dict()) == mlp  # the file format sim reads
    seen = []
    enc = profile_model("transformer", "cpu", batch_sizes=(1, 2), lengths=(8, 16), repeats=1,
                        warmup=1, threads=1, progress=seen.append)
    assert enc.lengths == (8, 16) and len(enc.points) == len(seen) == 4
    assert enc.seconds(3, 12) > 0


def test_profile_arguments_are_validated() -> None:
    with pytest.raises(ValueError, match="fixed-shape inputs; lengths must be None"):
        profile_model("mlp", "cpu", batch_sizes=(1,), lengths=(16,), repeats=1)
    with pytest.raises(ValueError, match="lengths must be non-empty, in 1..128"):
        profile_model("transformer", "cpu", batch_sizes=(1,), lengths=(256,), repeats=1)
    with pytest.raises(ValueError, match="valid names"):
        profile_model("nope", "cpu")


def _timings(*values: float):
    it = iter(values)
    return lambda: next(it)


# (timings as measured, repeats, max rounds) -> (median kept, rounds, stable)
SETTLE = [
    # two rounds of 3 agree (median 1.0 then 1.0): stable after round 2
    ((1.0, 1.0, 1.0, 1.0, 1.0, 1.0), 3, 5, (1.0, 2, True)),
    # a slow first round (2, 2, 2), then fast ones: the median moves 50%, then 0% => stable at round 4
    ((2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1), 3, 5, (1.0, 4, True)),
    # still moving after the last round allowed: kept, but not stable
    ((1, 2, 4, 8), 1, 4, (3.0, 4, False)),
    # one round asked for: nothing to compare with, taken as is
    ((5, 7, 6), 3, 1, (6, 1, True)),
]


@pytest.mark.parametrize("timings, repeats, rounds, expected", SETTLE)
def test_settle_repeats_until_the_median_stops_moving(timings, repeats, rounds, expected) -> None:
    got = settle(_timings(*timings), repeats, rounds, within=0.05)
    assert (got.seconds, got.rounds, got.stable) == expected


def test_shape_warnings_name_a_batch_faster_than_a_smaller_one() -> None:
    pts = [CostPoint(1, None, 0.010), CostPoint(2, None, 0.040), CostPoint(8, None, 0.020),
           CostPoint(32, None, 0.080), CostPoint(64, None, 0.078)]  # 64 within 5% of 32: noise
    lines = shape_warnings(pts)
    assert len(lines) == 1 and lines[0].startswith("batch 8 took 20 ms, less than batch 2 (40 ms)")
    seq = [CostPoint(1, 16, 0.01), CostPoint(2, 16, 0.02), CostPoint(1, 32, 0.03), CostPoint(2, 32, 0.01)]
    assert [w.split(" took")[0] for w in shape_warnings(seq)] == ["batch 2 x 32 tokens"]  # per length


def test_profile_reports_rounds_and_warnings() -> None:
    prof = profile("mlp", "cpu", batch_sizes=(1, 2), repeats=1, warmup=0, threads=1, max_rounds=2)
    assert set(prof.rounds) == {(1, None), (2, None)} and all(1 <= r <= 4 for r in prof.rounds.values())
    assert prof.warnings == tuple(shape_warnings(prof.table.points))  # every fall in the table, said once
    assert all(u.startswith(("batch 1:", "batch 2:")) for u in prof.unstable)

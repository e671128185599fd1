"""harness.live.profile: tiny real profiles (torch, CPU) make valid cost tables.

The table itself (interpolation, validation, JSON format) is tested in
tests/targets/test_cost_table.py.
"""

from __future__ import annotations

import pytest
import torch

from harness.live.profile import profile_model
from targets.cost_table import CostTable


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

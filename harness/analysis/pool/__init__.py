"""`harness pool` (Part 3): two models on one GPU pool, every policy on the same arrivals
(`experiment`), one policy's run (`gang`) in its virtual-time shell (`shell`)."""

from harness.analysis.pool.experiment import run_pool_experiment
from harness.analysis.pool.gang import ModelSpec, PoolConfig

__all__ = ["ModelSpec", "PoolConfig", "run_pool_experiment"]

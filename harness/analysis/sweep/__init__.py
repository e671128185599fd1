"""`harness sweep`: the highest offered rate a target serves within its SLO (`run`), the rate
search (`search`) and one step under sim or live (`steps`)."""

from harness.analysis.sweep.run import CapacityCheck, run_sweep, step_duration_s

__all__ = ["CapacityCheck", "run_sweep", "step_duration_s"]

"""`harness capacity` (Part 2): the doc's formula beside the fleet simulation finds (`plan`), the
probed sim points and the fleet search (`sim`), and the measured sources of lost throughput (`losses`)."""

from harness.analysis.capacity.plan import FULL, QUICK, Budget, CapacityInputs, capacity_agreement, plan_capacity

__all__ = ["FULL", "QUICK", "Budget", "CapacityInputs", "capacity_agreement", "plan_capacity"]

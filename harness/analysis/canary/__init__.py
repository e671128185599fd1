"""`harness canary`: rollout plans on bad days, in sim over seeds (`days`), one rollout as a step
machine (`run`) judged step by step (`judge`). The live rollouts, on a served target with two
torch models, are `harness.analysis.canary.live` (it imports the live host, so it is not
imported here)."""

from harness.analysis.canary.days import CANARY_DAYS, run_canary, run_rollouts, start_canary

__all__ = ["CANARY_DAYS", "run_canary", "run_rollouts", "start_canary"]

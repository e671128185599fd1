"""`harness review`: the design review, which composes the other features (`run`): the rank's
ablation, Part 2 and 3, the LLM follow-up, and the alerts (`alerts`) and canary (`canary`)
follow-ups. The one feature allowed to import the others (pyproject.toml's contract)."""

from harness.analysis.review.run import (QUICK_SCALE, Part, capacity_part, check_design, default_parts, llm_part,
                                         pool_part, review, review_scenarios)

__all__ = ["QUICK_SCALE", "Part", "capacity_part", "check_design", "default_parts", "llm_part", "pool_part", "review",
           "review_scenarios"]

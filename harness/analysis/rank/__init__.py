"""`harness rank`: the flaw ranking, the ablation both ways over a suite (`ablation`), the
interaction probes between flaws (`interactions`) and the measures both score by (`scoring`)."""

from harness.analysis.rank.ablation import REQUEST_BUDGET, ablate, ablation_job_count, exposing_plan, rank
from harness.analysis.rank.llm_section import LlmSection, llm_section

__all__ = ["REQUEST_BUDGET", "LlmSection", "ablate", "ablation_job_count", "exposing_plan", "llm_section", "rank"]

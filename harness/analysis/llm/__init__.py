"""LLM token generation: policies compared over a rate sweep (`compare`, `harness compare llm-a
llm-b`), the LLM flaws measured and the review's answer (`review`), and the flaws ranked (`rank`,
the rank result's `llm` section)."""

from harness.analysis.llm.compare import LlmSweep, run_sweep
from harness.analysis.llm.rank import llm_rank
from harness.analysis.llm.review import flaw_costs, llm_answer

__all__ = ["LlmSweep", "flaw_costs", "llm_answer", "llm_rank", "run_sweep"]

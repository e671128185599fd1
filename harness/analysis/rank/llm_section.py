"""The rank's LLM section: the LLM flaws ranked under a seed (`harness.analysis.llm.llm_rank`,
passed in by the caller: features do not import each other), kept in the run cache, and
started beside the ablation's runs rather than after them."""

from __future__ import annotations

from typing import Callable

from harness.engine.jobs import Jobs, Started
from harness.engine.run_cache import value_key
from harness.results.llm_rank import LlmRank

__all__ = ["LlmSection", "llm_section", "start_llm_section"]

LlmSection = Callable[[int], LlmRank]  # the LLM flaws ranked under a seed: harness.analysis.llm.llm_rank


def _name(llm: LlmSection) -> str:
    return f"{getattr(llm, '__module__', '')}.{getattr(llm, '__qualname__', '<?>')}"


def _label(seed: int) -> str:
    return f"LLM flaws ranked, seed {seed}"


def llm_section(llm: LlmSection, seed: int, jobs: Jobs = Jobs()) -> LlmRank:
    """`llm(seed)`, kept in `jobs`' run cache where it has one and `llm` is a module's function
    (its name and the seed are then all that decides it; a lambda or a closure always runs)."""
    name = _name(llm)
    if jobs.cache is None or "<" in name:
        return llm(seed)
    return jobs.cache.memo(name, {"seed": seed}, lambda: llm(seed), _label(seed))


def start_llm_section(llm: LlmSection, seed: int, jobs: Jobs = Jobs()) -> Started[LlmRank]:
    """`llm_section(llm, seed, jobs)` started now in a worker process of its own (`Jobs.start_call`),
    so that it runs while the ablation's runs do rather than after them; in this process, at
    `result()`, where the cache has it or `llm` cannot be sent to a worker (a lambda, a closure).
    The same result either way: `llm` is seeded."""
    name = _name(llm)
    cache = jobs.cache
    if "<" in name or (cache is not None and cache.get(value_key(name, {"seed": seed})) is not None):
        return Started(None, lambda: llm_section(llm, seed, jobs))
    running = jobs.start_call(llm, seed)
    if cache is None:
        return running
    return running.then(lambda wait: cache.memo(name, {"seed": seed}, wait, _label(seed)))

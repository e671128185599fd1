"""The `compare` result: two targets over the same workloads, same seeds, same arrivals."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from harness.results.base import Result
from harness.results.run import RunResult, RunSummary

__all__ = ["CompareResult"]


class CompareResult(Result):
    """`scenarios[workload][side]` is that side's summary; `runs` the same as whole run results.

    `a` and `b` are the side labels (B's label gets " (B)" when both name one target).
    """

    KIND = "compare"
    OMIT_IF_NONE = frozenset({"live"})

    kind: Literal["compare"] = "compare"
    a: str
    b: str
    seed: int
    mode: Literal["sim", "live"] = "sim"
    scenarios: dict[str, dict[str, RunSummary]]
    runs: dict[str, dict[str, RunResult]] = Field(default_factory=dict)
    live: dict[str, Any] | None = None

    def summary_json(self) -> dict[str, Any]:
        """What `compare --json` prints: the summaries, no time series."""
        doc = self.to_json()
        return {"a": doc["a"], "b": doc["b"], "scenarios": doc["scenarios"]}

"""`harness compare`: two targets side by side over a suite, same seeds (`run`), each scenario's
declared figures judged (`verdicts`) against the best any design could do (`ceiling`); live,
shortened to a bounded time with the sim beside it (`live`)."""

from harness.analysis.compare.run import compare, compare_live

__all__ = ["compare", "compare_live"]

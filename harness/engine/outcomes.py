"""How each request's final answer becomes one outcome of a run.

The recorder keeps, per request, the client outcome code of its final status
(`OUTCOME_CODES`; `PENDING` while it has none) and its latency; `classify` turns
the two into exactly one of `OUTCOMES` (within SLO, late, shed, timed out, failed,
lost), so that the counts partition the requests.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from harness.results.run import Outcome
from targets.protocol import Status

__all__ = ["LATE", "OUTCOME_CODES", "OUTCOME_INDEX", "OUTCOMES", "PENDING", "WITHIN", "classify"]

# Client outcome codes per request (what the recorder's `finish` saw); PENDING: no final answer yet.
OUTCOME_CODES: Final = {Status.OK: 0, Status.TIMEOUT: 1, Status.TOO_MANY: 2, Status.UNAVAILABLE: 2, Status.ERROR: 3, Status.BAD_REQUEST: 3}
PENDING: Final = -1
# The summary's outcome categories, in order; the OK ones first (index <= LATE).
OUTCOMES = tuple(Outcome)
OUTCOME_INDEX = {o: i for i, o in enumerate(OUTCOMES)}
WITHIN, LATE = OUTCOME_INDEX[Outcome.WITHIN_SLO], OUTCOME_INDEX[Outcome.LATE]


def classify(outcome: np.ndarray, latency_s: np.ndarray, slo_s: float) -> np.ndarray:
    """Each request's outcome as an index into `OUTCOMES`, from its client outcome code
    (OUTCOME_CODES, PENDING) and latency: exactly one per request, so the counts
    partition the requests."""
    out = np.full(len(outcome), OUTCOME_INDEX[Outcome.LOST], dtype=np.intp)  # PENDING: never resolved
    ok = outcome == 0
    out[ok] = np.where(latency_s[ok] <= slo_s, WITHIN, LATE)
    out[outcome == 1] = OUTCOME_INDEX[Outcome.TIMED_OUT]
    out[outcome == 2] = OUTCOME_INDEX[Outcome.SHED]
    out[outcome == 3] = OUTCOME_INDEX[Outcome.FAILED]
    return out

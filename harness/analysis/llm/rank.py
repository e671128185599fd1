"""The rank's LLM section: every LLM flaw put in and fixed on the mixes that expose it, ranked by cost.

The request-level ablation (`harness.analysis.rank.ablation`) puts a flaw back into
`hardened` and fixes it alone in `naive`; an LLM flaw's `present` and `fixed`
are whole engine settings (`targets.llm.flaws`), so one pair of runs on the
same seeded arrivals is both sides (`harness.analysis.llm.review.flaw_costs`,
at each flaw's own rate, `FLAW_DURATION_S` of arrivals: about a CPU-second for
the whole catalogue). Each flaw's cost is its symptom figure present against
fixed, and the goodput it loses; its worst mix is where it loses the most
goodput, then where its symptom is most times worse.

Score: goodput lost (share of the offered rate, in steps of `NOISE_GOODPUT`),
then how many times worse the symptom is (`worse_x`). Measurable: half a point
of goodput, or a symptom `NOISE_WORSE` times worse. Under several seeds the
section is the first seed's.
"""

from __future__ import annotations

import math
import time

from harness.analysis.llm.compare import LlmSweep
from harness.analysis.llm.review import FLAW_DURATION_S, flaw_costs
from harness.results.llm import LlmFlawCost
from harness.results.llm_rank import LlmFlawRank, LlmRank
from harness.results.rank import NOISE_GOODPUT
from targets.llm.flaws import LLM_FLAWS, LOWER_IS_BETTER

__all__ = ["NOISE_WORSE", "SCORE_TEXT", "llm_rank", "worse_x"]

NOISE_WORSE = 1.05   # a symptom under 5% worse is noise

SCORE_TEXT = ("goodput lost with the flaw present (share of the offered rate, in steps of 0.5 points), then how "
              "many times worse its symptom is")


def worse_x(c: LlmFlawCost) -> float | None:
    """How many times worse the symptom is with the flaw present (None: the better side is 0 or missing)."""
    bad, good = c.symptom_present, c.symptom_fixed
    if bad is None or good is None:
        return None
    if c.symptom not in LOWER_IS_BETTER:
        bad, good = good, bad   # a share the fix raises: fixed / present
    return bad / good if good > 0 else None


def _ratio(c: LlmFlawCost) -> float:
    """`worse_x` for sorting: inf where the fixed side is 0 and the present side is not, 0 where missing."""
    x = worse_x(c)
    if x is not None:
        return x
    bad, good = c.symptom_present, c.symptom_fixed
    if bad is None or good is None:
        return 0.0
    return math.inf if (bad if c.symptom in LOWER_IS_BETTER else good) > 0 else 1.0


def _loss(c: LlmFlawCost) -> float:
    return (c.goodput_fixed_rps - c.goodput_present_rps) / c.rate_rps


def _key(c: LlmFlawCost) -> tuple[float, float]:
    """Descending severity: goodput loss in noise steps, then the symptom ratio (None: unbounded)."""
    return (math.floor(_loss(c) / NOISE_GOODPUT), _ratio(c))


def llm_rank(seed: int = 1, duration_s: float = FLAW_DURATION_S) -> LlmRank:
    """Every LLM flaw measured on the default engine and SLO (`LlmSweep`'s), ranked."""
    started = time.perf_counter()
    sweep = LlmSweep(seed=seed)
    costs = flaw_costs(sweep, duration_s=duration_s)
    entries = []
    for flaw in LLM_FLAWS:
        mine = [c for c in costs if c.id == flaw.id]
        worst = max(mine, key=_key)
        loss = _loss(worst)
        entries.append(LlmFlawRank(
            rank=0, id=flaw.id, doc_item=flaw.doc_item, failure=flaw.failure, fix=flaw.fix, symptom=flaw.symptom,
            mix=worst.mix, worse_x=worse_x(worst), goodput_loss=loss,
            measurable=loss >= NOISE_GOODPUT or _ratio(worst) >= NOISE_WORSE, costs=mine))
    entries.sort(key=lambda e: _key(e.worst()), reverse=True)
    return LlmRank(seed=seed, duration_s=duration_s, slo_ttft_s=sweep.slo_ttft_s, slo_tpot_s=sweep.slo_tpot_s,
                   score=SCORE_TEXT, flaws=[e.model_copy(update={"rank": i}) for i, e in enumerate(entries, 1)],
                   wall_s=time.perf_counter() - started)

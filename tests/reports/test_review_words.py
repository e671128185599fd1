"""The review in a reviewer's words: a tail that lands on refused requests on both sides reads
as the share refused (never 'on shed requests -> on shed requests'), and a change that goes the
unexpected way (a flaw put back that gains, a fix alone that loses) carries its why on the
same line."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.results.rank import Probe, ProbePlan
from harness.results.review import Effect, ReviewItem, ReviewResult
from reports.rank_charts import p99_pair
from reports.review import gain, measured
from tests.reports.test_rank_review_gate import synthetic_rank


def effect(before: str, after: str, change: float, g0: float, g1: float, **kw: object) -> Effect:
    base: dict[str, object] = dict(before=before, after=after, scenario="dominant-tenant", measurable=True,
                                   change=change, goodput_before=g0, goodput_after=g1, p99_before_s=None,
                                   p99_after_s=None, p99_before_outcome="shed", p99_after_outcome="shed",
                                   unserved_before=0.01, unserved_after=0.01)
    return Effect.model_validate({**base, **kw})


def item(flaw: str, cost: Effect, gained: Effect) -> ReviewItem:
    return ReviewItem(item="4", flaw=flaw, failure="f", fix="x", rank=8, runs_s={"dominant-tenant": 3.0},
                      cost=cost, gain=gained)


def review(it: ReviewItem, interactions: list[ProbePlan] | None = None) -> ReviewResult:
    rank = synthetic_rank().model_copy(update={"interactions": interactions})
    return ReviewResult(design="naive", seed=1, quick=True, rank=rank, items=[it], notes=[], wall_s=0.0)


def test_a_tail_on_refused_requests_both_sides_reads_as_the_share_refused():
    e = effect("hardened", "hardened+per-server-queues", 0.331, 0.649, 0.318)
    text = measured(item("per-server-queues", e, e))
    assert "on shed requests -> on shed requests" not in text
    # 1 - goodput - (timed out, failed or lost): 1 - 0.649 - 0.01 and 1 - 0.318 - 0.01.
    assert "p99 lands on refused (shed) requests before and after: refused or late 34.1% -> 67.2%" in text
    # A tail that moves from refusals to a latency still says both ends.
    assert p99_pair(None, "shed", 0.4, None) == "p99 on shed requests -> 400 ms"
    assert p99_pair(None, "timed_out", None, "timed_out") == "p99 never answered (timed out) before and after"


@given(g0=st.floats(0, 1), g1=st.floats(0, 1), u0=st.floats(0, 1), u1=st.floats(0, 1))
def test_the_share_refused_or_late_is_a_share(g0, g1, u0, u1):
    text = p99_pair(None, "shed", None, "shed", (g0, u0), (g1, u1))
    shares = [float(x.rstrip("%")) for x in text.split(": refused or late ")[1].split(" -> ")]
    assert all(0 <= x <= 100 for x in shares) and "shed requests ->" not in text


def test_a_flaw_put_back_that_gains_carries_its_partner_on_the_same_line():
    cost = effect("hardened", "hardened+no-tenant-limits", -0.012, 0.649, 0.661)
    fix = effect("naive", "naive-no-tenant-limits", 0.454, 0.094, 0.548)
    it = item("no-tenant-limits", cost, fix)
    plan = ProbePlan(flaw="no-tenant-limits", kind="compounding", scenario="dominant-tenant",
                     partners=["no-admission-control"],
                     probes=[Probe(partner="no-admission-control", goodput=0.48, p99_s=None, goodput_base=0.649,
                                   goodput_with=0.169)])
    line = measured(it, review(it, [plan]))
    assert ("(1.2 points gained: alone it does no harm here; it hurts beside no-admission-control: added to "
            "hardened+no-admission-control on dominant-tenant it costs 48.0 points, 64.9% -> 16.9%)") in line
    # Without the result (or a probe) the why is still on the line, never left out.
    assert "1.2 points gained: nothing measured here explains it" in measured(it)


def test_a_gain_bought_with_retries_and_a_fix_that_loses_say_why():
    cost = effect("hardened", "hardened+blind-retries", -0.02, 0.649, 0.669, amplification_before=1.02,
                  amplification_after=2.06)
    fix = effect("naive", "naive-fixed-batch-time", -0.122, 0.122, 0.0, amplification_before=1.63,
                 amplification_after=2.90)
    it = item("blind-retries", cost, fix)
    assert "(2.0 points gained: bought with extra attempts (amplification 1.02x -> 2.06x)" in measured(it, review(it))
    assert ("(-12.2 points: with naive's other flaws still in, its clients make more attempts (amplification "
            "1.63x -> 2.90x))") in gain(it, review(it))
    # An ordinary cost and gain carry no why.
    plain = item("x", effect("hardened", "hardened+x", 0.3, 0.9, 0.6), effect("naive", "naive-x", 0.2, 0.1, 0.3))
    assert "(30.0 points lost)" in measured(plain) and "(+20.0 points)" in gain(plain)

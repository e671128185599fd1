"""Per-tenant limits and priority classes of the LLM engine: invariants (hypothesis) and exact cases."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from targets.llm import LlmEngineSpec, create_scheduler
from targets.llm.continuous import Continuous
from targets.llm.knobs import engine_with
from targets.llm.sequence import Sequence, Step, StepOutcome
from targets.llm.tenants import OverLimit, TenantAdmission, TenantLimits
from tests.targets.test_llm_schedulers import drive


class Recorder:
    """An inner scheduler that runs nothing and records what reached it, and when."""

    def __init__(self) -> None:
        self.got: list[tuple[float, Sequence]] = []

    def add(self, seq: Sequence, now: float) -> bool:
        self.got.append((now, seq))
        return True

    def schedule(self, now: float) -> Step | None:
        return None

    def complete(self, step: Step, now: float) -> StepOutcome:
        return StepOutcome()

    def wake_at(self) -> float | None:
        return None

    def pending(self) -> int:
        return 0

    def running(self) -> int:
        return 0


def offer_all(gate: TenantAdmission, seqs: list[Sequence]) -> None:
    """Offer each sequence at its arrival, releasing held ones whenever their time comes, then drain."""
    t = 0.0
    for s in sorted(seqs, key=lambda s: s.arrival_s):
        while (w := gate.wake_at()) is not None and w <= s.arrival_s:
            t = max(t, w)
            gate.schedule(t)
        t = s.arrival_s
        gate.schedule(t)
        gate.add(s, t)
    while (w := gate.wake_at()) is not None:
        assert w >= t and w < math.inf
        t = w
        gate.schedule(t)


# Arrivals on a coarse grid, so bursts land at one instant after idle spells (where an uncapped bucket
# would pass more than its burst).
offers = st.lists(st.tuples(st.integers(0, 40).map(lambda k: k / 2), st.integers(0, 2), st.integers(1, 3000),
                            st.integers(1, 2000)), min_size=1, max_size=60)


@settings(max_examples=80, deadline=None)
@given(offers, st.floats(0.2, 5), st.floats(1, 10), st.floats(100, 5000), st.floats(500, 20_000),
       st.sampled_from(list(OverLimit)), st.floats(0, 30), st.booleans(), st.booleans())
def test_a_tenant_never_passes_more_than_rate_times_t_plus_burst(reqs, rps, burst_r, tok_s, burst_t, over,
                                                                 max_delay, limit_requests, limit_tokens):
    limits = TenantLimits(rps if limit_requests else 0.0, burst_r, tok_s if limit_tokens else 0.0, burst_t, over,
                          max_delay)
    inner = Recorder()
    gate = TenantAdmission(inner, limits)
    seqs = [Sequence(i, t, p, o, tenant) for i, (t, tenant, p, o) in enumerate(reqs)]
    offer_all(gate, seqs)
    passed = {s.id for _, s in inner.got}
    # Every sequence is passed on exactly once or shed, never both, never lost; held ones wait at most max_delay_s.
    assert len(passed) == len(inner.got)
    assert passed | {s.id for s in seqs if s.shed} == {s.id for s in seqs}
    assert not passed & {s.id for s in seqs if s.shed}
    assert gate.pending() == 0
    for t, s in inner.got:
        assert t - s.arrival_s <= max_delay + 1e-6
        if over is OverLimit.SHED:
            assert t == s.arrival_s
    # Within any window [a, b] of admissions a tenant got at most rate x (b - a) + burst of each unit.
    for tenant in range(3):
        mine = [(t, s) for t, s in inner.got if s.tenant == tenant]
        assert [s.arrival_s for _, s in mine] == sorted(s.arrival_s for _, s in mine)  # FIFO per tenant
        for rate, burst, unit in ((limits.requests_per_s, burst_r, lambda s: 1),
                                  (limits.tokens_per_s, burst_t, lambda s: s.prompt_tokens + s.output_tokens)):
            if rate == 0:
                continue
            for i, (a, _) in enumerate(mine):
                total = 0.0
                for b, s in mine[i:]:
                    total += unit(s)
                    assert total <= rate * (b - a) + burst * (1 + 1e-6)


def test_shed_and_delay_on_a_hand_computed_case():
    # 1000 tokens/s, a bucket of 2000: two 1000-token requests at t=0 pass, the third waits 1 s (delay)
    # or is shed; a 3000-token request can never fit the bucket and is shed either way.
    def run(over: OverLimit) -> tuple[list[tuple[float, int]], list[int]]:
        inner = Recorder()
        gate = TenantAdmission(inner, TenantLimits(tokens_per_s=1000, burst_tokens=2000, over_limit=over))
        seqs = [Sequence(i, 0.0, 500, 500) for i in range(3)] + [Sequence(3, 0.0, 2000, 1000)]
        offer_all(gate, seqs)
        return [(round(t, 9), s.id) for t, s in inner.got], [s.id for s in seqs if s.shed]

    assert run(OverLimit.DELAY) == ([(0.0, 0), (0.0, 1), (1.0, 2)], [3])
    assert run(OverLimit.SHED) == ([(0.0, 0), (0.0, 1)], [2, 3])


def test_a_request_count_limit_lets_a_few_huge_requests_through_that_a_token_limit_stops():
    # 1 req/s of 4,500 tokens against 2 req/s, or 1,500 tokens/s with a bucket of 20,000: the bucket falls
    # 3,000 a second, 20,000 -> 15,500 -> ... -> 500 after the sixth, 2,000 when the seventh comes.
    huge = [Sequence(i, i * 1.0, 3000, 1500, tenant=1) for i in range(7)]
    by_count = create_scheduler(engine_with(LlmEngineSpec(), {"tenant_rps": 2.0}), ("chat", "bulk"))
    by_tokens = create_scheduler(engine_with(LlmEngineSpec(), {"tenant_tok_s": 1500.0}), ("chat", "bulk"))
    assert all(by_count.add(s, s.arrival_s) for s in huge)
    more = [Sequence(s.id, s.arrival_s, s.prompt_tokens, s.output_tokens, tenant=1) for s in huge]
    assert [by_tokens.add(s, s.arrival_s) for s in more] == [True] * 6 + [False]
    assert more[-1].shed and not any(s.shed for s in huge)


def test_knobs_parse_and_check_the_tenant_settings():
    spec = engine_with(LlmEngineSpec(), {"tenant_priority": "bulk:1, chat-a:-1", "over_limit": "delay",
                                         "tenant_tok_s": "1500"})
    assert spec.tenant_priority == (("bulk", 1), ("chat-a", -1)) and spec.limits().over_limit is OverLimit.DELAY
    with pytest.raises(ValueError, match="shed, delay"):
        engine_with(LlmEngineSpec(), {"over_limit": "drop"})
    with pytest.raises(ValueError, match="tenant_priority"):
        engine_with(LlmEngineSpec(), {"tenant_priority": "bulk:high"})
    with pytest.raises(ValueError, match=">= 0"):
        engine_with(LlmEngineSpec(), {"tenant_tok_s": -1})


# -- priority classes (continuous) ------------------------------------------------------------

def test_priority_tenants_are_admitted_first():
    # Room for one sequence at a time; tenant 0 (class 1) queued first, tenant 1 (class 0) after.
    sched = Continuous(kv_blocks=100, block_size=16, max_seqs=1, max_batched_tokens=64, priority_of={0: 1})
    low = [Sequence(i, 0.0, 8, 3, tenant=0) for i in range(3)]
    high = [Sequence(10 + i, 0.0, 8, 3, tenant=1) for i in range(3)]
    order: list[int] = []

    def check(s: Continuous) -> None:
        for q in s.run_list:
            if q.id not in order:
                order.append(q.id)

    drive(sched, low + high, check=check)
    assert order == [10, 11, 12, 0, 1, 2]
    plain = Continuous(kv_blocks=100, block_size=16, max_seqs=1, max_batched_tokens=64)
    order.clear()
    drive(plain, [Sequence(s.id, 0.0, 8, 3, s.tenant) for s in low + high], check=check)
    assert order == [0, 1, 2, 10, 11, 12]   # without classes: arrival order


def test_a_better_class_preempts_a_worse_one_and_is_preempted_last():
    # 4 blocks of 16 tokens: a class-1 sequence holds 3; a class-0 one (needing 2) arrives and takes its place.
    sched = Continuous(kv_blocks=4, block_size=16, max_seqs=4, max_batched_tokens=64, priority_of={1: 1})
    low = Sequence(0, 0.0, 40, 8, tenant=1)
    high = Sequence(1, 0.05, 20, 4, tenant=0)
    drive(sched, [low, high])
    assert low.preemptions >= 1 and high.preemptions == 0
    assert high.finish_s < low.finish_s and low.done and high.done


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 2), st.integers(1, 200), st.integers(1, 60), st.integers(0, 2)),
                min_size=1, max_size=25),
       st.integers(4, 60), st.sampled_from([1, 4, 16]), st.integers(1, 8), st.booleans(), st.integers(1, 300))
def test_priorities_keep_the_invariants_and_admit_in_class_order(reqs, blocks, block_size, max_seqs, chunked, chunk):
    classes = {0: 2, 1: 0, 2: 1}
    sched = Continuous(kv_blocks=blocks, block_size=block_size, max_seqs=max_seqs,
                       max_batched_tokens=max(max_seqs, 256), chunked_prefill=chunked, chunk_tokens=chunk,
                       priority_of=classes)
    seqs = [Sequence(i, t, p, o, tenant) for i, (t, p, o, tenant) in enumerate(reqs)]
    admitted: set[int] = set()

    def check(s: Continuous) -> None:
        assert 0 <= s.kv.used <= s.kv.total and len(s.run_list) <= max_seqs
        ids = [q.id for q in s.run_list] + [q.id for q in s.waiting]
        assert len(ids) == len(set(ids))
        assert s.kv.used == sum(q.blocks for q in s.run_list)
        assert [q.priority for q in s.run_list] == sorted(q.priority for q in s.run_list)
        new = [q for q in s.run_list if q.id not in admitted and q.preemptions == 0]
        best_waiting = min((q.priority for q in s.waiting), default=math.inf)
        assert all(q.priority <= best_waiting for q in new)   # none admitted past a better class still waiting
        admitted.update(q.id for q in s.run_list)

    drive(sched, seqs, check=check)
    for s in seqs:
        assert s.done or s.rejected
        assert s.rejected or s.priority == classes[s.tenant]

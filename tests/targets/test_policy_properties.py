"""Property tests of the policies' invariants (hypothesis)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from targets.admission import TokenBucket, admit, predicted_latency_s
from targets.batcher import BatchPolicy
from targets.bucketed_queue import BucketedQueue
from targets.config import Batching
from targets.dedupe import Deduper
from targets.dispatch_policy import per_gpu_rps
from targets.protocol import Attempt, Response, Status
from targets.queues import FairQueue, FifoQueue


def att(uid: int, tenant: str = "t", size: int = 64, t: float = 0.0, rid: str | None = None) -> Attempt:
    a = Attempt(uid=uid, tenant=tenant, conn=0, content=uid, variant=0, size=size, sent_s=t,
                attempt_no=0, on_answer=lambda r: None, request_id=rid)
    a.enqueued_s = t
    return a


ops = st.lists(st.tuples(st.sampled_from(["push", "pop"]), st.sampled_from("abc"),
                         st.integers(1, 300), st.integers(1, 40)), max_size=200)


def _exercise(q, script):
    pushed, popped, uid = [], [], 0
    for op, tenant, size, n in script:
        if op == "push":
            a = att(uid, tenant, size, t=uid)
            uid += 1
            q.push(a)
            pushed.append(a)
        else:
            popped.extend(q.pop(n))
        assert len(q) == len(pushed) - len(popped)
    while len(q):  # a bucketed queue pops one bucket per call
        got = q.pop(10**9)
        assert got, "a non-empty queue popped nothing"
        popped.extend(got)
    return pushed, popped


@given(ops)
def test_fifo_nothing_lost_nothing_duplicated_order_kept(script):
    pushed, popped = _exercise(FifoQueue(), script)
    assert [a.uid for a in popped] == [a.uid for a in pushed]


@given(ops)
def test_fair_queue_nothing_lost_and_fifo_within_tenant(script):
    pushed, popped = _exercise(FairQueue(quantum=64), script)
    assert sorted(a.uid for a in popped) == sorted(a.uid for a in pushed)
    assert not [u for u, c in Counter(a.uid for a in popped).items() if c > 1]
    for tenant in "abc":
        seq = [a.uid for a in popped if a.tenant == tenant]
        assert seq == sorted(seq)


@given(ops)
def test_bucketed_queue_nothing_lost_and_fifo_within_bucket(script):
    q = BucketedQueue(FifoQueue, reference_length=64)
    pushed, popped = _exercise(q, script)
    assert sorted(a.uid for a in popped) == sorted(a.uid for a in pushed)
    assert q.active_tenants() == 0


@given(st.lists(st.tuples(st.sampled_from("abcd"), st.integers(1, 128)), min_size=1, max_size=300),
       st.integers(1, 32))
def test_drr_bounds_the_service_gap(items, batch):
    """While two tenants are both backlogged, their served cost differs by at
    most quantum + max cost (the DRR fairness bound)."""
    q = FairQueue(quantum=64)
    for uid, (tenant, size) in enumerate(items):
        q.push(att(uid, tenant, size))
    served = Counter()
    backlog = Counter(t for t, _ in items)
    max_cost = max(s for _, s in items)
    while len(q):
        for a in q.pop(batch):
            served[a.tenant] += a.size
            backlog[a.tenant] -= 1
        active = [t for t in backlog if backlog[t] > 0]
        for x in active:
            for y in active:
                assert served[x] - served[y] <= 2 * (64 + max_cost) + batch * max_cost


@given(st.sampled_from(list(Batching)), st.integers(1, 64), st.integers(0, 500),
       st.floats(0, 1), st.booleans())
def test_batch_policy_never_takes_more_than_b_or_than_queued(kind, b, queued, waited, free):
    d = BatchPolicy(kind, b, 0.05, per_gpu_rps=per_gpu_rps(lambda q: 0.1, b)).decide(queued, waited, free)
    assert 0 <= d.take <= min(b, queued)
    if kind is Batching.FULL:
        assert d.take in (0, b)
    if d.take == 0 and d.recheck_after_s is not None:
        assert 0 < d.recheck_after_s <= 0.05 + 1e-9


@settings(max_examples=200)
@given(st.floats(1, 1000), st.floats(1, 50),
       st.lists(st.floats(0, 0.05), min_size=1, max_size=300))
def test_token_bucket_never_exceeds_its_rate_over_any_window(rate, burst_s, gaps):
    cap = max(1.0, rate * burst_s / 10)
    bucket = TokenBucket(rate, cap, 0.0)
    now, granted = 0.0, []
    for g in gaps:
        now += g
        if bucket.try_take(now):
            granted.append(now)
    for i in range(len(granted)):
        for j in range(i, len(granted)):
            window = granted[j] - granted[i]
            assert (j - i + 1) <= cap + rate * window + 1e-6


@given(st.integers(0, 5000), st.floats(1, 1e5), st.floats(0.001, 1), st.floats(0, 0.5), st.floats(0.01, 2))
def test_shedding_never_admits_a_request_predicted_past_its_deadline(ahead, cap, batch_s, fill, budget):
    p = predicted_latency_s(ahead, cap, batch_s, fill)
    v = admit(p, budget)
    assert v.admit == (p <= budget)
    if not v.admit:
        assert v.retry_after_s > 0


@given(st.lists(st.tuples(st.sampled_from(["offer", "finish"]), st.integers(0, 5)), max_size=120))
def test_dedupe_never_runs_one_id_twice_while_in_flight(script):
    d = Deduper(ttl_s=0.0)
    running: dict[str, Attempt] = {}
    answered = Counter()
    uid = 0
    for op, k in script:
        rid = f"r{k}"
        if op == "offer":
            a = att(uid, rid=rid)
            uid += 1
            a.on_answer = lambda r, u=a.uid: answered.update([u])
            if d.offer(a, now=float(uid)):
                assert rid not in running, "an ID was queued twice while in flight"
                running[rid] = a
        elif rid in running:
            a = running.pop(rid)
            for w in d.finish(a, Response(Status.OK), now=float(uid)):
                w.answer(Response(Status.OK))
    assert all(c == 1 for c in answered.values())


@given(st.floats(0, 1), st.integers(0, 20), st.lists(st.booleans(), max_size=400))
def test_retry_budget_never_exceeds_ratio_of_first_attempts_plus_floor(ratio, floor, script):
    from targets.client import RetryBudget

    b = RetryBudget(ratio, floor)
    for first in script:
        if first:
            b.record_first()
        else:
            b.try_spend()
        assert b.retries <= ratio * b.first + floor + 1e-9


def test_backoff_is_capped_full_jitter_and_honours_retry_after():
    import random

    from targets.client import ClientPolicy
    from targets.config import Backoff

    p = ClientPolicy(1.0, 5, Backoff.EXPONENTIAL, 0.05, 0.4, True, 0.1, True, True)
    rng = random.Random(1)
    plain = Response(Status.TIMEOUT)
    for n in range(1, 8):
        delays = [p.delay_s(n, plain, rng) for _ in range(300)]
        cap = min(0.4, 0.05 * 2 ** (n - 1))
        assert 0 <= min(delays) and max(delays) <= cap
        assert max(delays) > 0.8 * cap  # full jitter spans the whole range
    assert p.delay_s(1, Response(Status.UNAVAILABLE, retry_after_s=0.7), rng) >= 0.7


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([k for k in Batching if k is not Batching.FULL]), st.integers(0, 80),
       st.floats(0.0, 1.0), st.integers(1, 64), st.floats(0.0, 5_000.0), st.floats(0.0, 40.0))
def test_no_policy_but_full_dispatches_without_a_free_gpu(kind, queued, waited, b, rate, gpus):
    """Batcher.enqueue skips deciding in pull mode while no GPU is free: that is exact only
    because every policy but FULL then decides WAIT, with no timer to arm."""
    from targets.batcher import WAIT, BatchPolicy
    from targets.dispatch_policy import per_gpu_rps

    per_gpu = per_gpu_rps(lambda q: 0.05 + 0.002 * q, b) if kind is Batching.RATE else ()
    policy = BatchPolicy(kind, b, max_wait_s=0.05, reserve_gpus=2, per_gpu_rps=per_gpu)
    assert policy.decide(queued, waited, gpu_free=False, free_gpus=0, rate_rps=rate, gpus=gpus) == WAIT


@given(st.lists(st.integers(0, 3), min_size=1, max_size=12), st.integers(0, 50))
def test_least_loaded_picks_the_first_least_loaded_server_from_its_rotating_start(loads, turns):
    from targets.balancer import LeastLoaded

    n = len(loads)
    b = LeastLoaded(n)
    for turn in range(turns + 1):
        start = turn % n
        order = [(start + k) % n for k in range(n)]  # the scan the rotation promises
        expected = min(order, key=lambda i: loads[i])
        assert b.route("t", 0, loads) == expected


def test_recent_set_add_says_whether_the_key_was_new():
    from targets.bounded import Bound, RecentSet

    s: RecentSet[int] = RecentSet(Bound(10, 1.0))
    assert s.add(1, 0.0) and not s.add(1, 0.5) and s.add(2, 0.5)


def _drr_reference(queues: dict[str, list[int]], deficit: dict[str, int], quantum: int, n: int) -> list[tuple[str, int]]:
    """Deficit round robin one turn at a time, as written in the paper: the order FairQueue.pop must give."""
    out: list[tuple[str, int]] = []
    while len(out) < n and any(queues.values()):
        tenant = next(iter(queues))
        q = queues[tenant]
        if not q:  # emptied by a drop while in the order: leaves at its turn, unserved
            del queues[tenant], deficit[tenant]
            continue
        credit = deficit[tenant]
        if credit < max(1, q[0]):
            credit += quantum
        while q and len(out) < n and max(1, q[0]) <= credit:
            size = q.pop(0)
            credit -= max(1, size)
            out.append((tenant, size))
        if not q:
            del queues[tenant], deficit[tenant]
        elif len(out) >= n and max(1, q[0]) <= credit:
            deficit[tenant] = credit
        else:
            deficit[tenant] = credit
            queues[tenant] = queues.pop(tenant)  # to the back
    return out


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 150)), max_size=60),
       st.lists(st.integers(1, 40), min_size=1, max_size=6))
def test_fair_queue_pops_in_deficit_round_robin_order(items, pops):
    q = FairQueue(quantum=64)
    ref: dict[str, list[int]] = {}
    for i, (tenant, size) in enumerate(items):
        q.push(Attempt(i, tenant, 0, 0, 0, size, 0.0, 0))
        ref.setdefault(tenant, []).append(size)
    deficit = {t: 0 for t in ref}
    for n in pops:
        got = [(a.tenant, a.size) for a in q.pop(n)]
        assert got == _drr_reference(ref, deficit, 64, n)
        assert len(q) == sum(map(len, ref.values()))


@given(st.lists(st.one_of(st.tuples(st.just("push"), st.sampled_from("abcde"), st.integers(0, 200)),
                          st.tuples(st.just("pop"), st.just(""), st.integers(1, 40))), max_size=120),
       st.integers(1, 128))
def test_fair_queue_keeps_the_round_robin_order_across_pushes_between_pops(script, quantum):
    """Pops that end mid-round leave the order rotated; tenants that arrive later join at its back."""
    q = FairQueue(quantum=quantum)
    ref: dict[str, list[int]] = {}
    deficit: dict[str, int] = {}
    for i, (op, tenant, k) in enumerate(script):
        if op == "push":
            q.push(Attempt(i, tenant, 0, 0, 0, k, 0.0, 0))
            if tenant not in ref:
                ref[tenant], deficit[tenant] = [], 0
            ref[tenant].append(k)
        else:
            assert [(a.tenant, a.size) for a in q.pop(k)] == _drr_reference(ref, deficit, quantum, k)
        assert len(q) == sum(map(len, ref.values()))
        assert q.active_tenants() == sum(1 for v in ref.values() if v)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.just("push"), st.integers(0, 119), st.integers(0, 200)),
                          st.tuples(st.just("pop"), st.just(0), st.integers(1, 60)),
                          st.tuples(st.just("drop"), st.integers(0, 119), st.just(0))), max_size=400),
       st.integers(1, 128))
def test_many_tenants_coming_and_going_keep_the_order_the_counts_and_the_bound(script, quantum):
    """Hundreds of tenants joining, emptying and dropped from the queue (drop_if) in turn: a
    FairQueue pops in DRR order (the paper's, step by step), alone or inside a BucketedQueue;
    each tenant's count and the backlogged tenants are right after each step; and the state kept
    per tenant stays within twice the backlogged tenants (plus a constant)."""
    fair = FairQueue(quantum=quantum)
    bucketed = BucketedQueue(lambda: FairQueue(quantum=quantum), reference_length=512)
    ref: dict[str, list[int]] = {}
    deficit: dict[str, int] = {}
    for i, (op, t, k) in enumerate(script):
        tenant = f"t{t}"
        if op == "drop":  # one of the tenants in the order, when there are any
            tenant = sorted(ref)[t % len(ref)] if ref else tenant
        if op == "push":
            for q in (fair, bucketed):
                q.push(Attempt(i, tenant, 0, 0, 0, k, 0.0, 0))
            if tenant not in ref:
                ref[tenant], deficit[tenant] = [], 0
            ref[tenant].append(k)
        elif op == "pop":
            want = _drr_reference(ref, deficit, quantum, k)
            for q in (fair, bucketed):
                assert [(a.tenant, a.size) for a in q.pop(k)] == want
        else:  # a tenant's requests all dropped (its lane stays in the order, empty, until its turn)
            for q in (fair, bucketed):
                assert sorted(a.size for a in q.drop_if(lambda a: a.tenant == tenant)) == sorted(ref.get(tenant, []))
            if tenant in ref:
                ref[tenant].clear()
        for q in (fair, bucketed):
            assert len(q) == sum(map(len, ref.values()))
            assert q.active_tenants() == sum(1 for v in ref.values() if v)
            assert all(q.tenant_len(name) == len(v) for name, v in ref.items())
        assert len(fair._lanes) <= 2 * len(fair._order) + 65
        assert len(bucketed._tenants) <= 2 * bucketed.active_tenants() + 65


def test_a_stream_of_new_tenants_leaves_no_more_state_than_the_backlog_needs():
    """Every request from a tenant never seen before, each served before the next arrives (IDs a
    client makes up): per-tenant state stays bounded, and a tenant coming back starts afresh."""
    fair = FairQueue(quantum=64)
    bucketed = BucketedQueue(lambda: FairQueue(quantum=64), reference_length=512)
    for i in range(5000):
        for q in (fair, bucketed):
            q.push(Attempt(i, f"t{i}", 0, 0, 0, 10, 0.0, 0))
            assert [a.uid for a in q.pop(1)] == [i] and len(q) == 0
        assert len(fair._lanes) <= 65 and len(bucketed._tenants) <= 65
    for q in (fair, bucketed):
        q.push(Attempt(0, "t4999", 0, 0, 0, 10, 0.0, 0))
        assert q.tenant_len("t4999") == 1 and q.active_tenants() == 1

"""Every request is answered, once, and never held past its deadline for another's work.

Property tests over random interleavings of same-key arrivals (same and other inputs, with and
without deadlines), answers, sheds, expiries, GPU deaths and clients giving up: on the dedupe
policy alone (`Deduper`, clock-free), and on a whole `ServingTarget` on the virtual clock (what
sim mode runs, and the live API servers call).
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter

from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.engine.clock import run_virtual
from targets.config import TargetConfig
from targets.dedupe import ORPHANED, Deduper
from targets.protocol import OK_RESPONSE, Attempt, Response, Status
from targets.target import ServingTarget

GRACE_S = 0.005
SHED = Response(Status.UNAVAILABLE, reason="shed")


def att(uid: int, key: int, x: int, t: float, deadline_ms: int | None, log: list) -> Attempt:
    a = Attempt(uid=uid, tenant="t", conn=0, content=x, variant=0, size=1, sent_s=t, attempt_no=0,
                request_id=f"r{key}", deadline_s=None if deadline_ms is None else t + deadline_ms / 1000)
    a.on_answer = lambda r, a=a: log.append((a, r))
    return a


# -- the policy alone ------------------------------------------------------------------------------

policy_ops = st.lists(st.one_of(
    st.tuples(st.just("offer"), st.integers(0, 1), st.integers(0, 1), st.none() | st.integers(1, 400)),
    st.tuples(st.just("finish"), st.integers(0, 1), st.sampled_from(["ok", "shed"]), st.none()),
    st.tuples(st.just("lost"), st.integers(0, 1), st.none(), st.none()),
    st.tuples(st.just("give_up"), st.integers(0, 60), st.none(), st.none()),
    st.tuples(st.just("tick"), st.integers(1, 300), st.none(), st.none()),
), max_size=80)


@settings(max_examples=150, deadline=None)
@given(policy_ops, st.integers(1, 6))
@example([("offer", 0, 0, None), ("offer", 0, 0, 50), ("tick", 100, None, None)], 6)  # a follower past its deadline
@example([("offer", 0, 0, None), ("offer", 0, 0, None), ("lost", 0, None, None)], 6)  # a follower of a lost leader
@example([("offer", 0, 0, 50), ("offer", 0, 0, None), ("tick", 100, None, None)], 6)  # a leader kept alive for a twin
def test_dedupe_answers_every_attached_attempt_once_and_by_its_deadline(script, cap) -> None:
    d = Deduper(ttl_s=0.5, max_waiters=cap, grace_s=GRACE_S)
    log: list[tuple[Attempt, Response]] = []
    sent: list[Attempt] = []
    attached: set[int] = set()  # followers, and leaders once followed: the policy holds them for a twin
    lost: set[int] = set()
    leaders: dict[int, Attempt] = {}
    now = 0.0

    def deliver(ws: list[Attempt], r: Response) -> None:
        for w in ws:
            w.answer(r)

    for op, k, v, deadline_ms in script:
        if op == "offer":
            a = att(len(sent), k, v, now, deadline_ms, log)
            sent.append(a)
            if d.offer(a, now):
                assert k not in leaders, "one key ran twice at once"
                leaders[k] = a
            elif not a.done:
                attached.update((a.uid, leaders[k].uid))
        elif op == "finish" and k in leaders:
            a = leaders.pop(k)
            r = Response(Status.OK, output=a.content) if v == "ok" else SHED
            deliver(d.finish(a, r, now), r)
        elif op == "lost" and k in leaders:
            a = leaders.pop(k)
            if not a.done:  # the lost attempt itself is nobody's to answer (its client times out)
                lost.add(a.uid)
            deliver(d.orphan(a, now), ORPHANED)
        elif op == "give_up" and k < len(sent):
            sent[k].give_up()
        elif op == "tick":
            now += k / 1000
            deliver(d.expire(now), SHED)
            due = d.next_expiry()
            assert due is None or due > now
            # Nothing held for a twin is left waiting past its own deadline (and the grace).
            for a in sent:
                if a.uid in attached and a.uid not in lost and a.deadline_s is not None \
                        and a.deadline_s + GRACE_S <= now:
                    assert a.done, f"{a} still waits {now - a.deadline_s:.3f} s past its deadline"
    for k, a in list(leaders.items()):  # every key's work ends
        deliver(d.finish(a, Response(Status.OK, output=a.content), now), OK_RESPONSE)
    counts = Counter(a.uid for a, _ in log)
    assert all(c == 1 for c in counts.values()), "an attempt was answered twice"
    for a in sent:
        if a.uid in lost:
            assert a.uid not in counts
        elif not a.abandoned:
            assert counts[a.uid] == 1, f"{a} was never answered"
    for a, r in log:  # an OK is only ever the answer computed for the attempt's own input
        assert r.status is not Status.OK or r.output in (None, a.content)
    assert d.inflight_entries == 0 and d.most_waiters == 0


def test_an_attempt_is_due_at_the_very_instant_next_expiry_names() -> None:
    """A timer armed at `next_expiry()` finds the attempt due then, whatever the rounding of
    deadline + grace (6 ms + 5 ms - 5 ms < 6 ms): else it would re-arm at the same instant for
    ever, which on the virtual clock is a loop that never advances time."""
    for deadline_ms in (6, 9, 10, 13, 14, 996, 1000, 250):
        d = Deduper(grace_s=GRACE_S)
        log: list = []
        leader, twin = att(0, 0, 0, 0.0, None, log), att(1, 0, 0, 0.0, deadline_ms, log)
        assert d.offer(leader, 0.0) and not d.offer(twin, 0.0)
        when = d.next_expiry()
        assert when is not None and d.expire(when) == [twin]
        assert d.next_expiry() is None


# -- a whole target on the virtual clock -----------------------------------------------------------

CFG = TargetConfig(batching="dynamic", max_wait_s=0.002, batch_time_s=0.05, batch_size=4, cache="off", gpus=2,
                   api_servers=1, request_ids=True, dedupe=True, propagate_deadline=True, failure_handling=True,
                   admission=True, slo_s=0.3, tenant_limits=True, peak_qps=200)

target_ops = st.lists(st.one_of(
    # (at ms, "send", key, input, deadline_ms)
    st.tuples(st.integers(0, 600), st.just("send"), st.integers(0, 2), st.integers(0, 1),
              st.none() | st.integers(5, 600)),
    st.tuples(st.integers(0, 600), st.just("kill"), st.sampled_from([0.5, 1.0]), st.none(), st.none()),
    st.tuples(st.integers(0, 600), st.just("revive"), st.none(), st.none(), st.none()),
    st.tuples(st.integers(0, 600), st.just("give_up"), st.integers(0, 40), st.none(), st.none()),
), min_size=1, max_size=60)


def run_target(script: list[tuple], horizon_s: float = 30.0):
    """Play the script on a fresh target; all GPUs come back at 1 s (a lost request stays lost)."""
    log: list[tuple[float, Attempt, Response]] = []
    sent: list[Attempt] = []

    async def main() -> ServingTarget:
        loop = asyncio.get_running_loop()
        target = ServingTarget(CFG, random.Random(0))

        def send(key: int, x: int, deadline_ms: int | None) -> None:
            now = loop.time()
            a = Attempt(uid=len(sent), tenant="t", conn=0, content=x, variant=0, size=64, sent_s=now,
                        attempt_no=0, request_id=f"r{key}",
                        deadline_s=None if deadline_ms is None else now + deadline_ms / 1000)
            a.on_answer = lambda r, a=a: log.append((loop.time(), a, r))
            sent.append(a)
            target.submit(a)

        def give_up(i: int) -> None:
            if i < len(sent):
                sent[i].give_up()

        for at_ms, op, p, x, deadline_ms in script:
            when = at_ms / 1000
            if op == "send":
                loop.call_at(when, send, p, x, deadline_ms)
            elif op == "kill":
                loop.call_at(when, target.kill_gpus, p)
            elif op == "revive":
                loop.call_at(when, target.revive_gpus)
            else:
                loop.call_at(when, give_up, p)
        loop.call_at(1.0, target.revive_gpus)
        await asyncio.sleep(horizon_s)
        return target

    target = run_virtual(main())
    return target, sent, log


@settings(max_examples=150, deadline=None)
@given(target_ops)
@example([(0, "send", 0, 0, None), (1, "send", 0, 0, None), (10, "kill", 1.0, None, None),
          (50, "revive", None, None, None), (120, "kill", 1.0, None, None)])  # lost twice, a twin waiting
def test_target_answers_every_request_once_unless_its_own_gpu_lost_it(script) -> None:
    target, sent, log = run_target(script)
    counts = Counter(a.uid for _, a, _ in log)
    assert all(c == 1 for c in counts.values()), "an attempt was answered twice"
    unanswered = [a for a in sent if a.uid not in counts and not a.abandoned]
    # Only an attempt that ran on a GPU that died twice is left unanswered (its client times out:
    # the target never learns its fate); nothing that waited on it is.
    assert all(a.redispatched for a in unanswered), unanswered
    assert len(unanswered) <= target.stats.lost


single_key_ops = st.lists(st.tuples(st.integers(0, 400), st.none() | st.integers(5, 400), st.booleans()),
                          min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(single_key_ops, st.sampled_from([0.05, 0.3]))
@example([(0, None, False), (1, 20, False)], 0.3)  # a follower due long before its leader's batch ends
def test_nothing_waits_past_its_deadline_on_a_twin(sends, batch_s) -> None:
    """One key, one input: each request is the one that runs, or waits on it, or gets its answer
    replayed; whichever, it is answered by its own deadline (and the grace)."""
    cfg = CFG.model_copy(update={"batch_time_s": batch_s, "slo_s": 2.0, "tenant_limits": False})
    log: list[tuple[float, Attempt, Response]] = []
    sent: list[Attempt] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        target = ServingTarget(cfg, random.Random(0))

        def send(deadline_ms: int | None, gives_up: bool) -> None:
            now = loop.time()
            a = Attempt(uid=len(sent), tenant="t", conn=0, content=7, variant=0, size=64, sent_s=now,
                        attempt_no=0, request_id="one",
                        deadline_s=None if deadline_ms is None else now + deadline_ms / 1000)
            a.on_answer = lambda r, a=a: log.append((loop.time(), a, r))
            sent.append(a)
            target.submit(a)
            if gives_up:
                loop.call_later(0.003, a.give_up)

        for at_ms, deadline_ms, gives_up in sends:
            loop.call_at(at_ms / 1000, send, deadline_ms, gives_up)
        await asyncio.sleep(10.0)

    run_virtual(main())
    answered = {a.uid: (t, r) for t, a, r in log}
    for a in sent:
        if a.abandoned:
            continue
        assert a.uid in answered, f"{a} never answered"
        t, r = answered[a.uid]
        if a.deadline_s is not None:
            assert t <= a.deadline_s + GRACE_S + 1e-9, (f"{a} answered {r} {t - a.deadline_s:.3f} s "
                                                        "past its deadline")

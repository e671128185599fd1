"""The LLM schedulers as step machines: exact step logs, closed forms, and invariants (hypothesis)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from targets.llm import LlmEngineSpec, LlmPolicy, create_scheduler, policy_names
from targets.llm.continuous import Continuous
from targets.llm.cost import StepCost
from targets.llm.run_to_completion import RunToCompletion
from targets.llm.sequence import Sequence

FLAT = StepCost(base_s=0.01, per_prefill_token_s=0.001, per_decode_seq_s=0.0, per_context_token_s=0.0)


def drive(sched, seqs: list[Sequence], cost: StepCost = FLAT, check=None) -> list[tuple[float, int, int]]:
    """Run on a virtual clock until nothing more can happen (no step, arrival or timer left);
    the log is (step end, prefill tokens, decode rows)."""
    pending = sorted(seqs, key=lambda s: s.arrival_s)
    t, log = 0.0, []
    while pending or sched.pending():
        while pending and pending[0].arrival_s <= t:
            sched.add(pending.pop(0), t)
        step = sched.schedule(t)
        if step is None:
            wake = sched.wake_at()
            nxt = min(pending[0].arrival_s if pending else math.inf, wake if wake is not None else math.inf)
            if nxt == math.inf:
                break  # a static partial batch waits forever; the tests check who finished
            t = max(t, nxt)
            continue
        t += cost.time_s(step.prefill_tokens, step.decode_seqs, step.context_tokens)
        sched.complete(step, t)
        log.append((round(t, 9), step.prefill_tokens, step.decode_seqs))
        if check:
            check(sched)
        assert len(log) < 100_000
    return log


def seq(i: int, prompt: int, out: int, t: float = 0.0) -> Sequence:
    return Sequence(i, t, prompt, out)


def test_registry_names_the_valid_policies():
    assert policy_names() == ("llm-static", "llm-dynamic", "llm-continuous")
    with pytest.raises(ValueError, match="valid are llm-static, llm-dynamic, llm-continuous"):
        create_scheduler(LlmEngineSpec(policy="nope"))  # type: ignore[arg-type]


# -- closed forms: one request alone -----------------------------------------------------------

@pytest.mark.parametrize("policy", policy_names())
def test_single_request_ttft_is_prefill_and_e2e_adds_a_decode_step_per_later_token(policy):
    cost = StepCost(base_s=0.02, per_prefill_token_s=1e-4, per_decode_seq_s=1e-3, per_context_token_s=0.0)
    s = seq(0, prompt=300, out=7)
    sched = create_scheduler(LlmEngineSpec(policy=LlmPolicy(policy), batch_size=1, max_wait_s=0.0, cost=cost))
    drive(sched, [s], cost)
    prefill, decode = cost.prefill_s(300), cost.decode_s(1, 0)
    assert s.first_token_s == pytest.approx(prefill)            # 0.02 + 0.03 = 50 ms
    assert s.finish_s == pytest.approx(prefill + 6 * decode)    # + 6 x 21 ms
    assert s.generated == 7


def test_single_request_decode_steps_grow_with_context():
    # Attention reads the whole context: decode k (k = 1..n-1) sees prompt + k tokens.
    cost = StepCost(base_s=0.01, per_prefill_token_s=0.0, per_decode_seq_s=0.0, per_context_token_s=1e-5)
    s = seq(0, prompt=400, out=5)  # under chunk_tokens: one prefill pass
    drive(Continuous(kv_blocks=100, block_size=16), [s], cost)
    expected = 0.01 + sum(0.01 + 1e-5 * (400 + k) for k in range(1, 5))
    assert s.finish_s == pytest.approx(expected)


# -- run to completion ----------------------------------------------------------------------

def test_static_slot_waste_on_a_known_mix():
    # Outputs 1, 2, 3, 10 in one batch of 4: the batch holds 4 x 10 slot-tokens, 16 are used.
    sched = RunToCompletion(batch_size=4)
    seqs = [seq(i, p, o) for i, (p, o) in enumerate([(2, 1), (4, 2), (6, 3), (8, 10)])]
    log = drive(sched, seqs)
    assert sched.slot_tokens_total == 40 and sched.slot_tokens_used == 16   # idle share 0.6
    assert 1 - sched.slot_tokens_used / sched.slot_tokens_total == pytest.approx(1 - (16 / 4) / 10)
    assert sched.padding_tokens == 4 * 8 - 20                                # prompts padded to 8
    assert log[0] == (round(0.01 + 0.032, 9), 32, 0)
    assert [rows for _, _, rows in log[1:]] == [4] * 9                       # idle slots still decode
    assert [s.finish_s for s in seqs][:3] == pytest.approx([log[0][0], log[1][0], log[2][0]])


def test_static_waits_for_a_full_batch_and_dynamic_flushes_after_max_wait():
    static, dynamic = RunToCompletion(4), RunToCompletion(4, max_wait_s=0.5)
    for sched in (static, dynamic):
        for i in range(3):
            sched.add(seq(i, 10, 2, t=0.1 * i), 0.1 * i)
    assert static.schedule(10.0) is None and static.wake_at() is None     # forever, short of B
    assert dynamic.schedule(0.4) is None and dynamic.wake_at() == 0.5
    step = dynamic.schedule(0.5)
    assert [s.id for s, _ in step.prefills] == [0, 1, 2]


def test_new_requests_wait_for_the_whole_batch():
    sched = RunToCompletion(batch_size=2)
    first = [seq(0, 10, 1), seq(1, 10, 5)]
    late = [seq(2, 10, 1, t=0.001), seq(3, 10, 1, t=0.001)]
    drive(sched, first + late)
    assert late[0].scheduled_s == pytest.approx(first[1].finish_s)  # not when seq 0 freed its slot


# -- continuous --------------------------------------------------------------------------------

def test_chunked_prefill_shares_steps_with_decodes():
    sched = Continuous(kv_blocks=1000, block_size=16, max_seqs=8, max_batched_tokens=600, chunk_tokens=512)
    a = seq(0, 100, 4)
    log = drive(sched, [a, seq(1, 1000, 2, t=0.105)])
    # a prefills 100 tokens; b arrives mid-step and joins at the step boundary (0.11): its
    # 1000-token prompt goes in chunks of <= 512 (chunk_tokens) beside a's decodes.
    assert log[0] == (0.11, 100, 0)
    assert log[1] == (round(0.11 + 0.01 + 0.512, 9), 512, 1)
    assert log[2][1:] == (488, 1)
    assert a.generated == 4


def test_unchunked_prefill_pauses_every_decode():
    sched = Continuous(kv_blocks=1000, block_size=16, max_seqs=8, max_batched_tokens=2048, chunked_prefill=False)
    a, b = seq(0, 100, 4), seq(1, 1000, 2, t=0.105)
    log = drive(sched, [a, b])
    assert log[1] == (round(0.11 + 0.01 + 1.0, 9), 1000, 0)   # prefill-only step: a's decode waits 1 s
    assert log[2] == (round(1.12 + 0.01, 9), 0, 2)
    assert a.last_token_s - a.first_token_s == pytest.approx(1.02 + 2 * 0.01)  # gaps 1.02, 0.01, 0.01


def test_preemption_by_recompute_when_decodes_outgrow_the_cache():
    # 4 blocks of 4 tokens = 16 tokens: two sequences of prompt 4 that each grow to 11 cannot both stay.
    sched = Continuous(kv_blocks=4, block_size=4, max_seqs=4, max_batched_tokens=64)
    a, b = seq(0, 4, 8), seq(1, 4, 8)
    drive(sched, [a, b], check=lambda s: s.kv.used <= s.kv.total)
    assert sched.preemptions >= 1 and b.preemptions >= 1 and a.preemptions == 0  # the newest goes
    assert a.generated == b.generated == 8 and sched.kv.used == 0


def test_a_request_that_can_never_fit_is_rejected():
    sched = Continuous(kv_blocks=2, block_size=4)
    s = seq(0, 6, 3)
    assert sched.add(s, 0.0) is False and s.rejected and sched.pending() == 0
    unchunked = Continuous(kv_blocks=100, block_size=4, max_seqs=4, max_batched_tokens=8, chunked_prefill=False)
    assert unchunked.add(seq(1, 6, 3), 0.0) is False


def test_max_seqs_bounds_the_running_batch():
    sched = Continuous(kv_blocks=1000, block_size=16, max_seqs=3, max_batched_tokens=64)
    seen = []
    drive(sched, [seq(i, 8, 5) for i in range(10)], check=lambda s: seen.append(s.running()))
    assert max(seen) == 3


# -- invariants ------------------------------------------------------------------------------

requests = st.lists(st.tuples(st.floats(0, 2), st.integers(1, 200), st.integers(1, 60)), min_size=1, max_size=25)


@settings(max_examples=60, deadline=None)
@given(requests, st.integers(4, 60), st.sampled_from([1, 4, 16]), st.integers(1, 8), st.booleans(),
       st.integers(1, 300))
def test_continuous_loses_nothing_duplicates_nothing_and_never_overfills_the_cache(
        reqs, blocks, block_size, max_seqs, chunked, chunk):
    sched = Continuous(kv_blocks=blocks, block_size=block_size, max_seqs=max_seqs,
                       max_batched_tokens=max(max_seqs, 256), chunked_prefill=chunked, chunk_tokens=chunk)
    seqs = [seq(i, p, o, t) for i, (t, p, o) in enumerate(reqs)]

    def check(s: Continuous) -> None:
        assert 0 <= s.kv.used <= s.kv.total
        ids = [q.id for q in s.run_list] + [q.id for q in s.waiting]
        assert len(ids) == len(set(ids))                       # nothing in two places
        assert s.kv.used == sum(q.blocks for q in s.run_list)  # no block leaked
        assert len(s.run_list) <= max_seqs

    drive(sched, seqs, check=check)
    for s in seqs:
        assert s.rejected or (s.generated == s.output_tokens and s.finish_s >= s.first_token_s >= s.arrival_s)
    assert sched.kv.used == 0


@settings(max_examples=40, deadline=None)
@given(requests, st.integers(1, 6), st.sampled_from([None, 0.0, 0.3]))
def test_run_to_completion_loses_nothing_and_accounts_every_slot(reqs, batch, wait):
    sched = RunToCompletion(batch, wait)
    seqs = [seq(i, p, o, t) for i, (t, p, o) in enumerate(reqs)]
    drive(sched, seqs)
    full = len(seqs) - len(seqs) % batch if wait is None else len(seqs)
    served = [s for s in seqs if s.generated]
    assert len(served) == full                                      # static leaves a partial batch waiting
    assert all(s.generated == s.output_tokens for s in served)
    assert sched.slot_tokens_used == sum(s.output_tokens for s in served)
    assert sched.slot_tokens_total >= sched.slot_tokens_used

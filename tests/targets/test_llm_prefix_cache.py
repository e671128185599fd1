"""The prefix cache beside the KV budget: exact hits and savings, and its invariants under any traffic
(hypothesis): a block is never freed or evicted while a sequence holds it, the cache never exceeds the
KV budget, and hits + misses = prompt blocks looked up."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from targets.llm import LlmEngineSpec, create_scheduler
from targets.llm.continuous import Continuous
from targets.llm.prefix_cache import PrefixCache, chain_hashes
from targets.llm.sequence import Sequence
from tests.targets.test_llm_schedulers import FLAT, drive

BS = 4


def named(i: int, ids: list[int], out: int, t: float = 0.0, extra_tokens: int = 0) -> Sequence:
    """A prompt of len(ids) blocks of BS tokens (+ `extra_tokens` unnamed), ids its blocks' contents."""
    return Sequence(i, t, len(ids) * BS + extra_tokens, out, block_hashes=chain_hashes(ids))


def test_chained_names_depend_on_the_whole_prefix():
    a, b = chain_hashes([1, 2, 3]), chain_hashes([9, 2, 3])
    assert a[0] != b[0] and a[1] != b[1] and a[2] != b[2]   # same block content, other parent
    assert chain_hashes([1, 2]) == a[:2]
    assert chain_hashes([(5, 6, 7)]) == chain_hashes([(5, 6, 7)])   # token tuples name blocks too


def test_second_request_with_the_same_prefix_prefills_only_its_tail():
    sched = Continuous(kv_blocks=100, block_size=BS, prefix_caching=True)
    first = named(0, [1, 2, 3, 4, 5], out=2)
    second = named(1, [1, 2, 3, 4, 5], out=2, t=1.0, extra_tokens=3)
    log = drive(sched, [first, second])
    prefills = [p for _, p, _ in log if p]
    # the first computes all 20; the second finds 5 blocks cached and prefills its 3 new tokens only
    assert prefills == [20, 3]
    s = sched.prefix.stats
    assert (s.lookups, s.hit_blocks, s.miss_blocks, s.hit_tokens, s.prompt_tokens) == (2, 5, 5, 20, 43)
    assert second.cached_tokens == 20 and first.cached_tokens == 0
    # and it costs less: TTFT of the second is base + 3 tokens, not base + 23
    assert abs((second.first_token_s - 1.0) - FLAT.time_s(3, 0, 0)) < 1e-9


def test_a_fully_cached_prompt_still_prefills_its_last_token():
    sched = Continuous(kv_blocks=100, block_size=BS, prefix_caching=True)
    log = drive(sched, [named(0, [1, 2], out=1), named(1, [1, 2], out=1, t=1.0)])
    assert [p for _, p, _ in log if p] == [8, 4]   # block 2 recomputed: its last token's logits are needed


def test_without_prefix_caching_nothing_is_shared():
    sched = Continuous(kv_blocks=100, block_size=BS)
    log = drive(sched, [named(0, [1, 2, 3], out=1), named(1, [1, 2, 3], out=1, t=1.0)])
    assert [p for _, p, _ in log if p] == [12, 12]


def test_answer_blocks_are_cached_for_the_next_turn():
    sched = Continuous(kv_blocks=100, block_size=BS, prefix_caching=True)
    # turn 1: 2 prompt blocks, answer of 8 tokens = 2 more named blocks; turn 2 sends all 4 + a question
    turn1 = Sequence(0, 0.0, 2 * BS, 2 * BS, block_hashes=chain_hashes([1, 2, 3, 4]))
    turn2 = Sequence(1, 10.0, 5 * BS, 1, block_hashes=chain_hashes([1, 2, 3, 4, 5]))
    drive(sched, [turn1, turn2])
    # the answer's last token is sampled, never fed back: block 4 is 1 token short, so 3 blocks hit
    assert turn2.cached_tokens == 3 * BS


def test_freed_blocks_are_kept_then_evicted_lru_only_when_needed():
    sched = Continuous(kv_blocks=6, block_size=BS, prefix_caching=True)
    drive(sched, [named(0, [1, 2, 3], out=1), named(1, [7, 8, 9], out=1, t=1.0)])
    assert sched.prefix.stats.evictions == 0 and len(sched.prefix.lru) == 6   # both kept, budget full
    drive(sched, [named(2, [4, 5], out=1, t=2.0)])   # 2 blocks (its one output token needs none): evict 2
    assert sched.prefix.stats.evictions == 2
    cache = sched.prefix
    # the oldest free blocks went first, each sequence's tail before its head
    assert cache.cached_prefix(chain_hashes([1, 2, 3])) == 1
    assert cache.cached_prefix(chain_hashes([7, 8, 9])) == 3


def test_spec_turns_it_on():
    sched = create_scheduler(LlmEngineSpec(prefix_caching=True))
    assert isinstance(sched.kv, PrefixCache)
    assert not isinstance(create_scheduler(LlmEngineSpec()).kv, PrefixCache)


def _check(sched: Continuous) -> None:
    cache = sched.prefix
    assert cache.used + len(cache.lru) <= cache.total                      # never over the KV budget
    held: dict[int, int] = {}
    for s in sched.run_list:
        assert s.shared <= s.blocks
        for name in s.block_hashes[:s.shared]:
            held[name] = held.get(name, 0) + 1
    for name, n in held.items():                                           # held: never free, never evicted
        assert cache.refs.get(name) == n and name not in cache.lru
    assert all(r == 0 for name, r in cache.refs.items() if name not in held)
    assert all(cache.refs[name] == 0 for name in cache.lru)
    for s in [*sched.run_list, *sched.waiting]:                             # prefix-closed: bisection is exact
        assert cache.cached_depth(s.block_hashes) == cache.cached_prefix(s.block_hashes)
    private = sum(s.blocks - s.shared for s in sched.run_list)
    assert cache.used == private + len(held)                               # the count is the truth


requests = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 12), st.integers(0, 7), st.integers(1, 20),
                              st.floats(0, 5)), min_size=1, max_size=25)


@settings(max_examples=150, deadline=None)
@given(requests, st.integers(8, 40), st.booleans())
def test_invariants_hold_under_any_traffic(reqs, kv_blocks, chunked):
    """Requests from 4 prefix families (a shared head of up to 12 blocks, then their own blocks), any
    lengths and arrivals, on a cache small enough to preempt and evict."""
    sched = Continuous(kv_blocks=kv_blocks, block_size=BS, max_seqs=8, max_batched_tokens=64,
                       chunked_prefill=chunked, chunk_tokens=8, prefix_caching=True)
    seqs = []
    for i, (family, shared, own, out, t) in enumerate(reqs):
        ids = [family * 100 + k for k in range(shared)] + [10_000 + i * 100 + k for k in range(own)]
        seqs.append(named(i, ids, out, t, extra_tokens=i % 3))
    drive(sched, seqs, check=_check)
    admitted = [s for s in seqs if not s.rejected]
    assert all(s.done for s in admitted)
    stats = sched.prefix.stats
    assert stats.lookups == len(admitted)
    assert stats.hit_blocks + stats.miss_blocks == sum(min(len(s.block_hashes), s.prompt_tokens // BS)
                                                      for s in admitted)
    assert stats.hit_tokens == sum(s.cached_tokens for s in admitted)
    assert sched.prefix.used == 0                                          # all released at the end


@settings(max_examples=60, deadline=None)
@given(requests)
def test_caching_never_prefills_more(reqs):
    """With room for everything, prefix caching prefills at most what the plain budget does."""
    def total_prefill(prefix: bool) -> int:
        sched = Continuous(kv_blocks=10_000, block_size=BS, prefix_caching=prefix)
        seqs = [named(i, [f * 100 + k for k in range(sh)] + [10_000 + i * 100 + k for k in range(own)], out, t)
                for i, (f, sh, own, out, t) in enumerate(reqs)]
        return sum(p for _, p, _ in drive(sched, seqs))
    assert total_prefill(True) <= total_prefill(False)

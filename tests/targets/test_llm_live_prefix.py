"""The tiny decoder's live prefix cache: a hit reuses the cached blocks' real keys and values and gives
exactly the tokens a cold prefill gives (greedy, same seed); its figures and its memory follow the cache."""

from __future__ import annotations

import random

import pytest

from targets.llm.continuous import Continuous
from targets.llm.decoder import TinyDecoder
from targets.llm.live_engine import LiveEngine

pytestmark = pytest.mark.live   # torch on a worker thread


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def model() -> TinyDecoder:
    return TinyDecoder(seed=3, max_len=256)


def text(seed: int, n: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(32, 127) for _ in range(n)]


def engine(model: TinyDecoder, kv_blocks: int = 64, prefix: bool = True) -> LiveEngine:
    return LiveEngine(model, Continuous(kv_blocks=kv_blocks, block_size=16, max_seqs=4, max_batched_tokens=256,
                                        chunk_tokens=32, prefix_caching=prefix))


async def run(eng: LiveEngine, prompt: list[int], n: int) -> list[int]:
    return [t async for t in eng.generate(prompt, n)]


async def test_a_cached_prefill_returns_the_tokens_a_cold_prefill_returns(model):
    system = text(1, 100)                       # 6 full blocks shared, 4 tokens into the 7th
    eng = engine(model)
    eng.start()
    try:
        first = await run(eng, system + text(2, 20), 12)
        cold_figures = eng.prefix_figures()
        assert cold_figures is not None and cold_figures["hit_tokens"] == 0
        for q in (3, 4, 5):
            prompt = system + text(q, 25)
            warm = await run(eng, prompt, 12)
            assert warm == model.generate(prompt, 12), f"question {q}: a cached prefill changed the answer"
        assert first == model.generate(system + text(2, 20), 12)
        figures = eng.prefix_figures()
        assert figures is not None
        assert figures["hit_tokens"] == 3 * 6 * 16  # each later prompt found the 6 full system blocks
        assert figures["tokens_saved"] == figures["hit_tokens"]
        assert figures["hit_rate"] == pytest.approx(3 * 96 / (120 + 3 * 125))
    finally:
        await eng.stop()


async def test_a_next_turn_finds_the_answer_it_sends_back_cached(model):
    eng = engine(model)
    eng.start()
    try:
        turn1 = text(7, 40)
        # 40 + 40 tokens, of which 79 computed (the last token is sampled, never fed back): 4 full blocks,
        # 2 of them the prompt's and 2 the answer's
        answer = await run(eng, turn1, 40)
        turn2 = turn1 + answer + text(8, 10)
        again = await run(eng, turn2, 8)
        assert again == model.generate(turn2, 8)
        figures = eng.prefix_figures()
        assert figures is not None and figures["hit_tokens"] == 4 * 16
    finally:
        await eng.stop()


async def test_evicted_blocks_free_their_tensors_and_a_miss_is_still_exact(model):
    eng = engine(model, kv_blocks=12)            # room for one 10-block sequence and a little more
    eng.start()
    try:
        prompts = [text(20 + i, 150) for i in range(4)]
        for p in prompts:
            assert await run(eng, p, 4) == model.generate(p, 4)
        figures = eng.prefix_figures()
        assert figures is not None and figures["evictions"] > 0
        assert eng.store is not None
        assert set(eng.store.blocks) <= set(eng.store.cache.refs)     # no tensor for an evicted block
        assert len(eng.store.blocks) <= eng.store.cache.total
        assert await run(eng, prompts[0], 4) == model.generate(prompts[0], 4)
    finally:
        await eng.stop()


async def test_without_prefix_caching_there_are_no_figures(model):
    eng = engine(model, prefix=False)
    assert eng.prefix_figures() is None and eng.store is None

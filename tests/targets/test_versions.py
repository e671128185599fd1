"""Two model versions: the canary split, answers and failures, and the cache key carrying the version."""

from __future__ import annotations

import asyncio
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.engine.clock import run_virtual
from targets.cache import ResponseCache
from targets.config import CacheMode, TargetConfig
from targets.protocol import Attempt, Status
from targets.target import ServingTarget
from targets.versions import (BASELINE, CanaryRouting, CanarySplit, ModelVersion, VersionedOutput, answer_label, fails,
                             tagged, version_of)


def _attempt(uid: int, content: int = 7, tenant: str = "t0") -> Attempt:
    return Attempt(uid=uid, tenant=tenant, conn=0, content=content, variant=0, size=64, sent_s=0.0, attempt_no=0)


def test_hash_split_takes_its_weight_and_widening_keeps_the_canarys_requests() -> None:
    split = CanarySplit(ModelVersion(name="v2"), CanaryRouting.HASH, 0.05)
    at5 = {k for k in range(20_000) if split.to_canary(k, "t")}
    assert abs(len(at5) / 20_000 - 0.05) < 0.006
    split.weight = 0.25
    at25 = {k for k in range(20_000) if split.to_canary(k, "t")}
    assert at5 <= at25 and abs(len(at25) / 20_000 - 0.25) < 0.012
    split.weight = 0.0
    assert not any(split.to_canary(k, "t") for k in range(1000))


def test_sticky_split_sends_all_of_a_tenant_one_way() -> None:
    split = CanarySplit(ModelVersion(name="v2"), CanaryRouting.STICKY_TENANT, 0.5)
    for tenant in ("a", "b", "c", "d"):
        assert len({split.to_canary(k, tenant) for k in range(200)}) == 1


def test_answers_shift_and_fail_at_the_versions_rates() -> None:
    wrong = ModelVersion(name="v2", output_shift=0.3)
    moved = np.mean([answer_label(c, wrong) != answer_label(c, BASELINE) for c in range(20_000)])
    assert abs(moved - 0.3) < 0.015
    erring = ModelVersion(name="v2", error_rate=0.02)
    assert abs(np.mean([fails(k, 0, erring) for k in range(50_000)]) - 0.02) < 0.003
    assert not any(fails(k, 0, BASELINE) for k in range(1000))


def test_cache_key_carries_the_version_unless_exact() -> None:
    a = _attempt(1)
    normalized = ResponseCache(CacheMode.NORMALIZED, 10, "v1", 0.0)
    normalized.put(a, "old", "v1")
    assert normalized.get(a, "v2") == (False, None) and normalized.get(a, "v1") == (True, "old")
    exact = ResponseCache(CacheMode.EXACT, 10, "v1", 0.0)
    exact.put(a, "old", "v1")
    assert exact.get(a, "v2") == (True, "old")


def _wrong_version_hits(cache: str) -> tuple[int, list[tuple]]:
    """Send one payload twice from uids the split puts on different versions; count wrong-version hits."""
    async def main():
        cfg = TargetConfig(batching="dynamic", max_wait_s=0.001, cache=cache, gpus=2, api_servers=1)
        target = ServingTarget(cfg, random.Random(1))
        split = target.attach_canary(ModelVersion(name="v2", output_shift=1.0), CanaryRouting.HASH, gpus=1)
        split.weight = 0.5
        base = next(k for k in range(100) if not split.to_canary(k, "t0"))
        canary = next(k for k in range(100) if split.to_canary(k, "t0"))
        answers: list[tuple] = []
        for uid in (base, canary):
            a = _attempt(uid)
            a.on_answer = lambda r, uid=uid: answers.append((uid, r.status, r.output))
            target.submit(a)
            await asyncio.sleep(1.0)
        return target.canary.stats.wrong_version, answers
    return run_virtual(main())


def test_exact_payload_cache_answers_a_canary_request_with_the_baselines_output_and_it_is_counted() -> None:
    wrong, answers = _wrong_version_hits("exact")
    assert wrong == 1
    assert [out.version for _, status, out in answers] == ["v1", "v1"]  # the canary request got v1's answer
    fixed, answers = _wrong_version_hits("normalized")
    assert fixed == 0 and [out.version for _, _, out in answers] == ["v1", "v2"]
    assert all(status is Status.OK for _, status, _ in answers)


def test_a_real_models_answer_is_tagged_with_its_version_and_a_modeled_one_is_modeled() -> None:
    torch_answer = {"label": 3, "score": 0.9, "logits": [0.0] * 10}
    live = tagged(torch_answer, ModelVersion(name="v2"), content=7)
    assert live == {**torch_answer, "version": "v2"} and "version" not in torch_answer
    assert version_of(live) == "v2"
    modeled = tagged(None, BASELINE, content=7)
    assert modeled == VersionedOutput(answer_label(7, BASELINE), "v1") and version_of(modeled) == "v1"
    assert version_of({"label": 3}) is None and version_of(None) is None


def test_a_cached_live_answer_of_the_other_version_is_counted() -> None:
    async def main() -> int:
        cfg = TargetConfig(batching="dynamic", max_wait_s=0.001, cache="exact", gpus=1, api_servers=1)
        target = ServingTarget(cfg, random.Random(1))
        split = target.attach_canary(ModelVersion(name="v2"), CanaryRouting.HASH, gpus=1)
        split.weight = 0.5
        canary = next(k for k in range(100) if split.to_canary(k, "t0"))
        target.canary.check_cached(_attempt(canary), {"label": 1, "version": "v1"})
        target.canary.check_cached(_attempt(canary), {"label": 1, "version": "v2"})
        return target.canary.stats.wrong_version
    assert run_virtual(main()) == 1


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from([0.0, 0.05, 0.5, 1.0]),
                          st.sampled_from(["a", "b", "c"])), max_size=60),
       st.sampled_from(list(CanaryRouting)), st.integers(0, 3))
def test_a_split_answers_each_call_as_a_fresh_split_would(calls, routing, salt):
    """The split keeps the last request's and every tenant's hash point: asked again (the
    transport, the cache and the target ask in a row), at any weight, it answers alike."""
    split = CanarySplit(ModelVersion(name="v2"), routing, salt=salt)
    for key, weight, tenant in calls:
        split.weight = weight
        fresh = CanarySplit(ModelVersion(name="v2"), routing, weight, salt)
        assert split.to_canary(key, tenant) == fresh.to_canary(key, tenant)


def _unit_reference(x: int, salt: int) -> float:
    """splitmix64's finaliser in Python integers, as versions._unit was first written."""
    mask = (1 << 64) - 1
    v = ((x * 0x100000001B3 + salt) + 0x9E3779B97F4A7C15) & mask
    v = ((v ^ (v >> 30)) * 0xBF58476D1CE4E5B9) & mask
    v = ((v ^ (v >> 27)) * 0x94D049BB133111EB) & mask
    return (v ^ (v >> 31)) / 2.0 ** 64


@settings(max_examples=2000)
@given(st.one_of(st.integers(0, 2**21), st.integers(0, 2**70), st.integers(-2**40, 0)), st.integers(0, 64))
def test_the_split_hash_on_32_bit_halves_is_the_64_bit_formula(x, salt):
    """The canary split's and the answers' hash is computed on 32-bit halves (native when
    compiled): bit for bit the 64-bit formula's float, for any key and salt."""
    from targets.versions import _unit

    assert _unit(x, salt) == _unit_reference(x, salt)
    assert 0.0 <= _unit(x, salt) < 1.0

"""Which tenant a live LLM request is: OpenAI's `user` field and the X-Tenant header checked, names mapped
to the scheduler's tenant indices, and a shed request's retry time. No server: pure functions and objects."""

from __future__ import annotations

import math

import pytest

from targets.llm import LlmEngineSpec
from targets.llm.continuous import Continuous
from targets.llm.decoder import TinyDecoder
from targets.llm.live_engine import DEFAULT_TENANT, MAX_TENANTS, LiveEngine
from targets.llm.openai_request import MAX_TENANT_CHARS, BadCompletion, parse_completion, tenant_name
from targets.llm.sequence import Sequence
from targets.llm.tenants import TenantAdmission, TenantLimits

OK = {"model": "tiny-llm", "prompt": "hi", "max_tokens": 2}


@pytest.mark.parametrize("user", ["acme", "chat-a", "Ünïcode ok", "a" * MAX_TENANT_CHARS, "with space"])
def test_a_good_user_is_the_tenant(user):
    assert parse_completion({**OK, "user": user}, "tiny-llm", 64).user == user


@pytest.mark.parametrize("body", [OK, {**OK, "user": None}])
def test_no_user_names_no_tenant(body):
    assert parse_completion(body, "tiny-llm", 64).user is None


@pytest.mark.parametrize("user, code", [
    ("", "invalid-tenant"),                               # empty
    ("   ", "invalid-tenant"),                            # blank
    ("a" * (MAX_TENANT_CHARS + 1), "invalid-tenant"),     # too long
    ("line\nbreak", "invalid-tenant"),                    # control character
    ("tab\there", "invalid-tenant"),
    ("nul\x00", "invalid-tenant"),
    (7, "invalid-type"),
    (["a"], "invalid-type"),
])
def test_a_bad_user_is_a_400_naming_the_field(user, code):
    with pytest.raises(BadCompletion) as err:
        parse_completion({**OK, "user": user}, "tiny-llm", 64)
    assert err.value.status == 400 and err.value.code == code and err.value.param == "user"


def test_a_bad_header_is_a_400_naming_the_header():
    assert tenant_name(None, "X-Tenant") is None and tenant_name("acme", "X-Tenant") == "acme"
    with pytest.raises(BadCompletion) as err:
        tenant_name("\udcff", "X-Tenant")  # a non-UTF-8 byte, as aiohttp decodes it
    assert err.value.code == "invalid-tenant" and "X-Tenant" in str(err.value) and err.value.param is None


@pytest.fixture(scope="module")
def model() -> TinyDecoder:
    return TinyDecoder(seed=0, max_len=64)


def test_names_get_indices_in_the_order_the_scheduler_knows_them(model):
    spec = LlmEngineSpec(kv_blocks=16, max_seqs=4, max_batched_tokens=64, tenant_priority=(("bulk", 1),))
    engine = LiveEngine.for_spec(model, spec, ("chat-a", "bulk"))
    assert engine.tenants == {"chat-a": 0, "bulk": 1}
    assert engine.scheduler.priority_of == {1: 1}                       # type: ignore[attr-defined]
    assert [engine.tenant_index(n) for n in ("bulk", DEFAULT_TENANT, "new", DEFAULT_TENANT)] == [1, 2, 3, 2]
    # A priority class for a tenant the workload does not have still reaches the scheduler.
    alone = LiveEngine.for_spec(model, spec)
    assert alone.tenants == {"bulk": 0} and alone.scheduler.priority_of == {0: 1}  # type: ignore[attr-defined]


def test_past_the_cap_new_names_share_one_index(model):
    engine = LiveEngine(model, Continuous(kv_blocks=16, max_seqs=4, max_batched_tokens=64))
    got = {engine.tenant_index(f"t{i}") for i in range(MAX_TENANTS + 5)}
    assert len(got) == MAX_TENANTS + 1 and engine.tenant_index("t-late") == MAX_TENANTS
    assert engine.tenant_index("t0") == 0 and len(engine.tenants) == MAX_TENANTS


class _Inner:
    """Accepts everything, runs nothing."""

    def add(self, seq, now):  # type: ignore[no-untyped-def]
        return True

    def schedule(self, now):  # type: ignore[no-untyped-def]
        return None

    def complete(self, step, now):  # type: ignore[no-untyped-def]
        raise AssertionError

    def wake_at(self):  # type: ignore[no-untyped-def]
        return None

    def pending(self):  # type: ignore[no-untyped-def]
        return 0

    def running(self):  # type: ignore[no-untyped-def]
        return 0


def test_retry_at_is_when_the_bucket_has_refilled_for_the_request():
    # 100 tokens/s, burst 300: a 250-token request empties it to 50; a 200-token one 1 s later finds
    # 150 and needs 50 more: 0.5 s. A 400-token one never fits the burst.
    gate = TenantAdmission(_Inner(), TenantLimits(tokens_per_s=100, burst_tokens=300))
    assert gate.add(Sequence(0, 0.0, 200, 50), 0.0)
    late = Sequence(1, 1.0, 150, 50)
    assert not gate.add(late, 1.0) and late.shed
    assert gate.retry_at(late, 1.0) == pytest.approx(1.5)
    huge = Sequence(2, 1.0, 350, 50)
    assert not gate.add(huge, 1.0) and gate.retry_at(huge, 1.0) == math.inf


def test_retry_at_with_delay_is_when_the_wait_would_be_short_enough():
    # Delay up to 1 s: at t=0 the bucket (10 tok/s, burst 100) gives 100; a second 100-token request would
    # wait 10 s, so it is shed, and sent again it is held once its release is <= 1 s away: at t=9.
    gate = TenantAdmission(_Inner(), TenantLimits(tokens_per_s=10, burst_tokens=100, over_limit="delay",
                                                  max_delay_s=1.0))
    assert gate.add(Sequence(0, 0.0, 50, 50), 0.0)
    again = Sequence(1, 0.0, 50, 50)
    assert not gate.add(again, 0.0)
    assert gate.retry_at(again, 0.0) == pytest.approx(9.0)
    assert gate.add(Sequence(2, 9.0, 50, 50), 9.0) and gate.delayed == 1

"""The dominant-tenant bad day for an LLM: a few huge requests from one tenant starve the others' first
tokens when limits count requests, not when they count tokens; figures compared, never hard-coded."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from harness.engine.llm_metrics import run_figures
from harness.engine.llm_run import simulate
from harness.results.llm import LlmRun
from targets.llm import LlmEngineSpec
from targets.llm.flaws import LLM_FLAWS
from targets.llm.knobs import engine_with
from workloads.llm import LlmSchedule, build_llm_schedule, mix_workload

FLAW = next(f for f in LLM_FLAWS if f.id == "request-count-limits")


def day(seed: int) -> LlmSchedule:
    return build_llm_schedule(mix_workload("dominant-tenant", FLAW.rate_rps or 7.0, 60), seed)


def run(knobs: dict, sched: LlmSchedule) -> LlmRun:
    spec = engine_with(LlmEngineSpec(), {k: v for k, v in knobs.items() if k != "policy"})
    return run_figures(simulate(spec, sched, 60), "llm-continuous", "dominant-tenant", FLAW.rate_rps or 7.0,
                       sched.tenants, slo_ttft_s=2.0, slo_tpot_s=0.1)


def without(sched: LlmSchedule, tenant: str) -> LlmSchedule:
    keep = sched.tenant != sched.tenants.index(tenant)
    return replace(sched, arrival_s=sched.arrival_s[keep], prompt_tokens=sched.prompt_tokens[keep],
                   output_tokens=sched.output_tokens[keep], tenant=sched.tenant[keep])


def test_the_day_has_a_dominant_tenant_by_tokens_not_by_requests():
    r = run({}, day(1))
    bulk = r.per_tenant["bulk"]
    others = [t for n, t in r.per_tenant.items() if n != "bulk"]
    assert all(bulk.requests < t.requests for t in others)
    assert bulk.tokens_requested > sum(t.tokens_requested for t in others)


@pytest.mark.parametrize("seed", [1, 2])
def test_request_count_limits_let_bulk_starve_the_small_tenants_and_token_limits_do_not(seed):
    sched = day(seed)
    alone = run({}, without(sched, "bulk")).small_tenants_ttft_p99_s    # the chats with no bulk tenant at all
    present, fixed = run(FLAW.present, sched), run(FLAW.fixed, sched)
    assert alone is not None and present.small_tenants_ttft_p99_s is not None
    assert present.small_tenants_ttft_p99_s > 10 * alone                 # starved by bulk
    assert fixed.small_tenants_ttft_p99_s < 3 * alone                    # near the day without bulk
    assert present.shed == 0 or present.per_tenant["bulk"].shed == 0    # the count limit never stops bulk
    assert fixed.per_tenant["bulk"].shed > 0
    assert all(t.shed == 0 for n, t in fixed.per_tenant.items() if n != "bulk")
    assert fixed.goodput_rps > present.goodput_rps


def test_demoting_bulk_to_a_worse_class_also_spares_the_small_tenants():
    sched = day(1)
    present = run(FLAW.present, sched)
    demoted = run({**FLAW.present, "tenant_priority": "bulk:1"}, sched)
    assert demoted.small_tenants_ttft_p99_s < present.small_tenants_ttft_p99_s / 10
    small = [n for n in sched.tenants if n != "bulk"]
    assert sum(demoted.per_tenant[n].finished for n in small) > sum(present.per_tenant[n].finished for n in small)
    assert demoted.per_tenant["bulk"].finished <= present.per_tenant["bulk"].finished   # bulk pays instead


def test_delay_instead_of_shed_holds_bulk_back_without_refusing_it_all():
    sched = day(1)
    shed = run(FLAW.fixed, sched)
    delayed = run({**FLAW.fixed, "over_limit": "delay", "max_delay_s": 30.0}, sched)
    assert delayed.per_tenant["bulk"].shed < shed.per_tenant["bulk"].shed
    assert delayed.queue_wait_s.max > shed.queue_wait_s.max
    assert np.isfinite(delayed.small_tenants_ttft_p99_s)

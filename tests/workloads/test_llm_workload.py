"""LLM workloads: length distributions, arrivals, tenants, and trace replay."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pydantic import ValidationError

from workloads.llm import LENGTH_MIXES, Arrival, LengthDist, LlmWorkload, build_llm_schedule, length_mix
from workloads.llm_trace import SAMPLE_TRACE, read_trace


def test_lognormal_lengths_have_the_mean_asked_for():
    drawn = LengthDist.of_lognormal(500, 0.8, max_tokens=100_000).draw(np.random.default_rng(1), 200_000)
    assert drawn.mean() == pytest.approx(500, rel=0.02)
    assert drawn.min() >= 1


def test_fixed_and_clipped_lengths():
    rng = np.random.default_rng(1)
    assert set(LengthDist.fixed(7).draw(rng, 100)) == {7}
    assert LengthDist.of_lognormal(500, 2.0, max_tokens=600).draw(rng, 10_000).max() == 600


def test_sharegpt_like_mix_matches_the_published_means():
    prompt, output = length_mix("sharegpt-like")
    rng = np.random.default_rng(2)
    assert prompt.draw(rng, 200_000).mean() == pytest.approx(161, rel=0.05)
    assert output.draw(rng, 200_000).mean() == pytest.approx(338, rel=0.05)


def test_a_length_dist_is_one_form():
    with pytest.raises(ValidationError, match="not both or none"):
        LengthDist()
    with pytest.raises(ValueError, match="valid are lognormal, sharegpt-like"):
        length_mix("nope")


def test_schedule_is_seeded_and_poisson_rate_is_right():
    w = LlmWorkload(rate_rps=50, duration_s=200)
    a, b = build_llm_schedule(w, 3), build_llm_schedule(w, 3)
    assert np.array_equal(a.arrival_s, b.arrival_s) and np.array_equal(a.output_tokens, b.output_tokens)
    assert len(a) == pytest.approx(10_000, rel=0.05)
    assert np.all(np.diff(a.arrival_s) >= 0) and a.arrival_s[-1] < 200


def test_gamma_arrivals_are_burstier_than_poisson():
    def cv2(arrival: Arrival, burst: float) -> float:
        gaps = np.diff(build_llm_schedule(LlmWorkload(rate_rps=20, duration_s=500, arrival=arrival,
                                                      burstiness=burst), 1).arrival_s)
        return float(gaps.var() / gaps.mean() ** 2)

    assert cv2(Arrival.POISSON, 1.0) == pytest.approx(1.0, abs=0.15)
    assert cv2(Arrival.GAMMA, 4.0) == pytest.approx(4.0, rel=0.25)


def test_tenants_get_their_shares():
    s = build_llm_schedule(LlmWorkload(rate_rps=100, duration_s=100, tenants={"big": 0.6, "a": 0.2, "b": 0.2}), 1)
    assert s.tenants == ("big", "a", "b")
    assert np.mean(s.tenant == 0) == pytest.approx(0.6, abs=0.03)


def test_every_named_mix_builds():
    for name in LENGTH_MIXES:
        p, o = length_mix(name)
        assert p.draw(np.random.default_rng(0), 10).min() >= 1 and o.draw(np.random.default_rng(0), 10).min() >= 1


# -- trace replay -------------------------------------------------------------------------------

def test_sample_trace_reads_with_azure_columns():
    s = read_trace(SAMPLE_TRACE)
    assert len(s) == 240 and s.arrival_s[0] == 0 and np.all(np.diff(s.arrival_s) >= 0)
    assert s.prompt_tokens.min() >= 1 and s.output_tokens.min() >= 1


def test_speedup_and_window():
    full = read_trace(SAMPLE_TRACE)
    fast = read_trace(SAMPLE_TRACE, speedup=4.0)
    assert np.allclose(fast.arrival_s, full.arrival_s / 4)
    part = read_trace(SAMPLE_TRACE, window_s=(10.0, 30.0))
    keep = (full.arrival_s >= 10) & (full.arrival_s < 30)
    assert len(part) == keep.sum() and part.duration_s == 20.0
    assert np.allclose(part.arrival_s, full.arrival_s[keep] - 10)
    assert np.array_equal(part.output_tokens, full.output_tokens[keep])


def test_jsonl_reads_as_csv_does(tmp_path):
    rows = [{"TIMESTAMP": "2023-11-16 18:15:01.5000000", "ContextTokens": 10, "GeneratedTokens": 3},
            {"TIMESTAMP": "2023-11-16 18:15:00.0000000", "ContextTokens": 20, "GeneratedTokens": 5, "tenant": "x"}]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    s = read_trace(path)
    assert s.arrival_s.tolist() == [0.0, 1.5]          # sorted by time
    assert s.prompt_tokens.tolist() == [20, 10] and s.tenants == ("x", "default")


@pytest.mark.parametrize("body, match", [
    ("TIMESTAMP,ContextTokens\n1,2\n", "missing column"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n1,0,5\n", ":2: ContextTokens and GeneratedTokens must be >= 1"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,3,5\n", ":2:"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n", "no requests"),
])
def test_bad_traces_name_the_line(tmp_path, body, match):
    path = tmp_path / "bad.csv"
    path.write_text(body)
    with pytest.raises(ValueError, match=match):
        read_trace(path)


def test_a_tenant_may_have_lengths_of_its_own_and_the_others_keep_theirs():
    from workloads.llm import TENANT_SPLITS, TenantLengths, mix_workload

    w = mix_workload("dominant-tenant", 20.0, 60)
    s = build_llm_schedule(w, 3)
    bulk = s.tenant == s.tenants.index("bulk")
    own = TENANT_SPLITS["dominant-tenant"][1]["bulk"]
    assert abs(s.prompt_tokens[bulk].mean() / own.prompt.lognormal[0].mean_tokens - 1) < 0.1
    assert abs(s.prompt_tokens[~bulk].mean() / w.prompt.lognormal[0].mean_tokens - 1) < 0.1
    plain = build_llm_schedule(w.model_copy(update={"tenant_lengths": {}}), 3)
    assert (plain.prompt_tokens[~bulk] == s.prompt_tokens[~bulk]).all()   # the shared draws are unchanged
    with pytest.raises(ValueError, match="not in tenants"):
        LlmWorkload(tenants={"a": 1.0}, tenant_lengths={"b": TenantLengths(prompt=LengthDist.fixed(5),
                                                                            output=LengthDist.fixed(5))})

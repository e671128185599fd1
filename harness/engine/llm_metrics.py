"""From an engine trace to the figures users of LLM APIs read (`harness.results.llm.LlmRun`).

Per request: TTFT = first token - arrival; TPOT = (last token - first token) /
(output tokens - 1), the mean gap after the first token (vLLM's `bench serve`
definition; a one-token answer has none); E2E = last token - arrival; queue
wait = first scheduled work - arrival. ITL is every gap between consecutive
tokens of a request, from the engine's HdrHistogram. Percentiles use the
project's helpers (`percentile_of`, rank ceil(q n); `percentiles` for HDR).
A request meets the SLO when it finished with TTFT <= slo_ttft_s and TPOT <=
slo_tpot_s; goodput counts those per second of arrivals. Token rates count
tokens emitted while requests were still arriving (the first `duration_s`).
Per tenant the same, with the tokens it asked for and its requests shed by its
rate limit; `small_tenants_ttft_p99_s` is the worst TTFT p99 among the tenants
other than the one that asked for the most tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from harness.engine.llm_run import EngineTrace
from harness.engine.hdr import percentiles
from harness.engine.percentiles import percentile_of
from harness.results.llm import LlmRun, Pcts, TenantFigures

__all__ = ["TokenTimes", "run_figures", "token_times"]


def _pcts(values: np.ndarray) -> Pcts:
    if len(values) == 0:
        return Pcts()
    return Pcts(mean=float(values.mean()), p50=percentile_of(values, 50), p90=percentile_of(values, 90),
                p99=percentile_of(values, 99), max=float(values.max()))


@dataclass(frozen=True)
class TokenTimes:
    """Per-request arrays of one trace (one entry a sequence): the times, the output tokens, which
    finished, TTFT, which have a TPOT (more than one token) and the TPOT (NaN where none)."""
    arrival: np.ndarray
    first: np.ndarray
    last: np.ndarray
    out: np.ndarray
    done: np.ndarray
    ttft: np.ndarray
    multi: np.ndarray
    tpot: np.ndarray

    def within_slo(self, slo_ttft_s: float, slo_tpot_s: float) -> np.ndarray:
        """Finished with TTFT <= slo_ttft_s and TPOT <= slo_tpot_s (a one-token answer has no TPOT)."""
        return self.done & (self.ttft <= slo_ttft_s) & (np.isnan(self.tpot) | (self.tpot <= slo_tpot_s))


def token_times(seqs: Sequence[Any], lost: np.ndarray | None = None) -> TokenTimes:
    """The arrays of `seqs` (each with arrival_s, first_token_s, finish_s, output_tokens); a request
    marked in `lost` (its replica died with it) does not count as finished."""
    arrival = np.array([s.arrival_s for s in seqs])
    first = np.array([s.first_token_s for s in seqs])
    last = np.array([s.finish_s for s in seqs])
    out = np.array([s.output_tokens for s in seqs])
    done = ~np.isnan(last) if lost is None else ~np.isnan(last) & ~lost
    multi = done & (out > 1)
    tpot = np.full(len(seqs), np.nan)
    tpot[multi] = (last[multi] - first[multi]) / (out[multi] - 1)
    return TokenTimes(arrival, first, last, out, done, first - arrival, multi, tpot)


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def run_figures(trace: EngineTrace, policy: str, mix: str, rate_rps: float, tenants: tuple[str, ...],
                slo_ttft_s: float, slo_tpot_s: float) -> LlmRun:
    seqs = trace.seqs
    t = token_times(seqs)
    arrival, first, last, out, done, ttft, multi, tpot = (t.arrival, t.first, t.last, t.out, t.done, t.ttft,
                                                         t.multi, t.tpot)
    sched = np.array([s.scheduled_s for s in seqs])
    tenant = np.array([s.tenant for s in seqs], dtype=np.int64)
    rejected = np.array([s.rejected for s in seqs], dtype=bool)
    shed = np.array([s.shed for s in seqs], dtype=bool)
    asked = np.array([s.prompt_tokens + s.output_tokens for s in seqs], dtype=np.int64)
    good = t.within_slo(slo_ttft_s, slo_tpot_s)
    duration = trace.duration_s
    hdr = percentiles(trace.itl)
    per_tenant = {}
    for k, name in enumerate(tenants):
        mine = tenant == k
        per_tenant[name] = TenantFigures(
            requests=int(mine.sum()), finished=int((done & mine).sum()),
            ttft_s=_pcts(ttft[done & mine]), tpot_s=_pcts(tpot[multi & mine]),
            output_tok_s=float(out[done & mine & (last <= duration)].sum()) / duration,
            goodput_rps=float((good & mine).sum()) / duration, tokens_requested=int(asked[mine].sum()),
            shed=int((shed & mine).sum()))
    held = trace.kv_blocks * trace.end_s if trace.kv_blocks else 0
    return LlmRun(
        policy=policy, mix=mix, rate_rps=rate_rps, duration_s=duration, requests=len(seqs),
        finished=int(done.sum()), rejected=int(rejected.sum()), unfinished=int((~done & ~rejected & ~shed).sum()),
        ttft_s=_pcts(ttft[done]), tpot_s=_pcts(tpot[multi]), e2e_s=_pcts((last - arrival)[done]),
        itl_s=Pcts(mean=hdr["mean"], p50=hdr["p50"], p90=hdr["p90"], p99=hdr["p99"], max=hdr["max"]),
        queue_wait_s=_pcts((sched - arrival)[~np.isnan(sched)]),
        output_tok_s=trace.tokens_in_window / duration,
        total_tok_s=(trace.tokens_in_window + trace.prompt_tokens_in_window) / duration,
        goodput_rps=float(good.sum()) / duration, slo_attainment=float(good.mean()) if len(seqs) else 0.0,
        busy_share=min(1.0, trace.busy_s / trace.end_s) if trace.end_s > 0 else 0.0,
        steps=trace.steps, mean_decode_rows=_share(trace.decode_rows, trace.steps),
        kv_utilization=_share(trace.kv_block_s, held) if held else None,
        preemptions=trace.preemptions, shed=int(shed.sum()),
        idle_slot_share=(1 - trace.slot_tokens_used / trace.slot_tokens_total) if trace.slot_tokens_total else None,
        padding_share=_share(trace.padding_tokens, trace.prefill_tokens) if trace.slot_tokens_total else None,
        small_tenants_ttft_p99_s=_small_tenants_ttft_p99(per_tenant), per_tenant=per_tenant,
    )


def _small_tenants_ttft_p99(per_tenant: dict[str, TenantFigures]) -> float | None:
    """The worst TTFT p99 of the tenants other than the one that asked for the most tokens."""
    if len(per_tenant) < 2:
        return None
    dominant = max(per_tenant, key=lambda t: per_tenant[t].tokens_requested)
    p99s = [f.ttft_s.p99 for t, f in per_tenant.items() if t != dominant and f.ttft_s.p99 is not None]
    return max(p99s) if p99s else None

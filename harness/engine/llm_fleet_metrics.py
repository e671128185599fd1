"""From a fleet trace to `harness.results.fleet.FleetRun`: the client's figures, the cache's, each replica's.

As for one engine (`harness.engine.llm_metrics`): TTFT = first token - arrival, TPOT =
(last - first) / (output - 1), a request meets the SLO when it finished with TTFT <=
slo_ttft_s and TPOT <= slo_tpot_s, and goodput counts those per second of the day.
A lost request (its replica was lost) never finishes. By turn: the turn of its
conversation, "1", "2", "3" and "4+". The prefix figures sum every replica's
`PrefixStats`: hit rate = prompt tokens found cached / prompt tokens looked up.
"""

from __future__ import annotations

import numpy as np

from harness.engine.llm_fleet import FleetTrace
from harness.engine.llm_metrics import _pcts, token_times
from harness.engine.percentiles import percentile_of
from harness.results.fleet import FleetRun, ReplicaFigures

__all__ = ["fleet_figures"]

_TURNS = (("1", 1, 1), ("2", 2, 2), ("3", 3, 3), ("4+", 4, 10**9))


def _p(values: np.ndarray, q: float) -> float | None:
    return percentile_of(values, q) if len(values) else None


def fleet_figures(trace: FleetTrace, fleet: str, router: str, day: str, rate_rps: float, turn: np.ndarray,
                  slo_ttft_s: float, slo_tpot_s: float) -> FleetRun:
    seqs = trace.seqs
    lost = np.array(trace.lost, dtype=bool)
    t = token_times(seqs, lost)
    arrival, last, out, done, ttft, multi, tpot = t.arrival, t.last, t.out, t.done, t.ttft, t.multi, t.tpot
    replica = np.array([s.replica for s in seqs], dtype=np.int64)
    rejected = np.array([s.rejected for s in seqs], dtype=bool)
    good = t.within_slo(slo_ttft_s, slo_tpot_s)
    duration = trace.duration_s
    p50_turn, p99_turn = {}, {}
    for name, lo, hi in _TURNS:
        mine = done & (turn >= lo) & (turn <= hi)
        p50_turn[name], p99_turn[name] = _p(ttft[mine], 50), _p(ttft[mine], 99)
    per: list[ReplicaFigures] = []
    hit = prompt = evictions = 0
    for r, rep in enumerate(trace.replicas):
        stats = rep.cache.stats if rep.cache is not None else None
        mine = done & (replica == r)
        per.append(ReplicaFigures(requests=rep.routed, busy_share=min(1.0, rep.busy_s / trace.end_s)
                                  if trace.end_s > 0 else 0.0,
                                  ttft_p99_s=_p(ttft[mine], 99), prefix_hit_rate=stats.hit_rate if stats else None,
                                  evictions=stats.evictions if stats else 0, preemptions=rep.preemptions,
                                  alive=rep.alive))
        if stats:
            hit, prompt, evictions = hit + stats.hit_tokens, prompt + stats.prompt_tokens, evictions + stats.evictions
    alive_counts = [p.requests for p in per if p.alive]
    mean_load = sum(alive_counts) / len(alive_counts) if alive_counts else 0.0
    p99s = [p.ttft_p99_s for p in per if p.ttft_p99_s is not None]
    in_window = done & (last <= duration)
    return FleetRun(
        fleet=fleet, router=router, day=day, rate_rps=rate_rps, replicas=len(trace.replicas), duration_s=duration,
        requests=len(seqs), finished=int(done.sum()), rejected=int(rejected.sum()), lost=int(lost.sum()),
        unfinished=int((~done & ~rejected & ~lost).sum()),
        ttft_s=_pcts(ttft[done]), tpot_s=_pcts(tpot[multi]), e2e_s=_pcts((last - arrival)[done]),
        ttft_p50_by_turn_s=p50_turn, ttft_p99_by_turn_s=p99_turn,
        goodput_rps=float(good.sum()) / duration, slo_attainment=float(good.mean()) if len(seqs) else 0.0,
        output_tok_s=float(out[in_window].sum()) / duration,
        prefix_hit_rate=hit / prompt if prompt else None, tokens_saved=hit, prompt_tokens=prompt,
        evictions=evictions, preemptions=sum(p.preemptions for p in per), spills=trace.spills,
        max_replica_ttft_p99_s=max(p99s) if p99s else None,
        load_imbalance=max(alive_counts) / mean_load if mean_load else None, per_replica=per)

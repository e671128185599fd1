"""Flaw ranking: the ablation both ways, measured over a suite of scenarios.

For every flaw F in `targets.flaws.FLAWS`, on every scenario W, with one seed
(so both sides of a comparison see the very same arrivals):

- cost side: ``GOOD+F`` (hardened with F alone put back) against ``GOOD``;
- gain side: ``FLAWED-F`` (naive with F alone fixed) against ``FLAWED``.

Per (flaw, scenario) the rank result records (`per_scenario`, a
`harness.results.rank.ScenarioCost`):

- ``goodput_loss``: goodput ratio of GOOD minus that of GOOD+F (0..1, signed:
  negative means putting the flaw back helped there);
- ``p99_increase_s``: p99 of GOOD+F minus p99 of GOOD, seconds. ``None`` when
  the flaw made the 1% tail never answered while GOOD answered it (ranks
  above any finite increase); 0.0 when neither answered its 1% tail (goodput
  carries that scenario) or when the flaw turned a never-answered tail into an
  answered one (not an increase);
- ``wasted_gpu_s``: wasted GPU-seconds (duplicates, abandoned work, padding)
  of GOOD+F minus those of GOOD, over the (compressed) run;
- ``gain_goodput`` and ``gain_p99_s``: the same differences on the gain side
  (FLAWED-F better than FLAWED is positive; ``None`` p99 = the fix made a
  never-answered tail answered).

A flaw's `cost` is its worst case over the scenarios: the largest goodput
loss, the largest p99 increase (None beats any number), the largest extra
waste, and the scenario of the highest severity (goodput loss in steps of
TIE = half a point, then p99 increase). Its `gain` is the same on the gain
side.

Score (the ranking, documented in the result's `score` key): flaws sort by
worst goodput loss in steps of TIE, then worst p99 increase (never answered
first), then the fix's goodput gain from the naive side, then extra waste.
`top` is the three highest-ranked flaws the flawed design still has (for
`naive`, the first three): the ones to insist on before shipping it.

Durations: 20 targets x 11 scenarios at the scenarios' full lengths (up to
600,000 requests a run) take most of an hour on 2 cores, so each scenario is
shortened by `harness.analysis.shorten.plan`: stationary scripts cut to about
`request_budget` requests, disturbed ones cut to a little calm, the
disturbance (up to 3 s) and a little recovery; `duration_scale` scales all
of it. The plan used is in the result (`durations`).

Interactions: see `harness.analysis.interactions`; the shared measures are in
`harness.analysis.scoring`, the jobs in `harness.analysis.variants`.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

from harness.analysis.interactions import find_interactions
from harness.analysis.scoring import TIE, goodput, inf, p99, severity, tail_increase
from harness.analysis.shorten import REQUEST_BUDGET, plan_for_json
from harness.analysis.shorten import plan as plan_runs
from harness.analysis.variants import OnDone, OnPlanned, VariantJob, knobs_of, run_summaries, variant
from harness.results.rank import FlawCost, FlawGain, FlawRank, RankResult, ScenarioCost
from harness.results.run import RunSummary
from targets.config import TargetConfig
from targets.flaws import FLAWS, Flaw
from targets.spec import flaws_present
from workloads.loader import load_suite

__all__ = ["REQUEST_BUDGET", "SCORE_TEXT", "ablate", "ablation_job_count", "job_count", "measure", "rank",
           "score_key", "worst"]

Summaries = dict[tuple[str, str], RunSummary]


# -- measures -----------------------------------------------------------------------------

def measure(flaw_scenarios: dict[str, list[str]], good: str, flawed: str,
            s: Summaries) -> dict[str, dict[str, ScenarioCost]]:
    """per_scenario entries for each flaw from the summaries `s`."""
    out: dict[str, dict[str, ScenarioCost]] = {}
    for fid, scen in flaw_scenarios.items():
        rows = {}
        for w in scen:
            sides = {good: s[(good, w)], f"{good}+{fid}": s[(f"{good}+{fid}", w)],
                     flawed: s[(flawed, w)], f"{flawed}-{fid}": s.get((f"{flawed}-{fid}", w), s[(flawed, w)])}
            g, gf, n, nf = sides.values()
            rows[w] = ScenarioCost(
                goodput_loss=goodput(g) - goodput(gf),
                p99_increase_s=tail_increase(p99(g), p99(gf)),
                wasted_gpu_s=gf.gpu.wasted_gpu_s - g.gpu.wasted_gpu_s,
                gain_goodput=goodput(nf) - goodput(n),
                gain_p99_s=tail_increase(p99(nf), p99(n)),
                goodput={k: v.goodput_ratio for k, v in sides.items()},
                p99_s={k: p99(v) for k, v in sides.items()},
                amplification={k: v.amplification for k, v in sides.items()},
                lost={k: v.requests.lost for k, v in sides.items()},
            )
        out[fid] = rows
    return out


def worst(rows: dict[str, ScenarioCost]) -> tuple[FlawCost, FlawGain]:
    """(cost, gain) of one flaw: its worst case over the scenarios measured."""
    ws = list(rows)
    cost_w = max(ws, key=lambda w: severity(rows[w].goodput_loss, rows[w].p99_increase_s))
    gain_w = max(ws, key=lambda w: severity(rows[w].gain_goodput, rows[w].gain_p99_s))
    tails = [rows[w].p99_increase_s for w in ws]
    gtails = [rows[w].gain_p99_s for w in ws]
    cost = FlawCost(
        goodput_loss=max(0.0, max(rows[w].goodput_loss for w in ws)),
        p99_increase_s=None if None in tails else max(tails),  # type: ignore[type-var]
        wasted_gpu_s=max(rows[w].wasted_gpu_s for w in ws),
        scenario=cost_w,
        p99_scenario=max(ws, key=lambda w: inf(rows[w].p99_increase_s)),
    )
    gain = FlawGain(
        goodput_gain=max(0.0, max(rows[w].gain_goodput for w in ws)),
        p99_decrease_s=None if None in gtails else max(gtails),  # type: ignore[type-var]
        scenario=gain_w,
    )
    return cost, gain


def score_key(f: FlawRank) -> tuple:
    """Ascending sort key: the most harmful flaw first (see module doc)."""
    c, g = f.cost, f.gain
    return (-severity(c.goodput_loss, None)[0], -inf(c.p99_increase_s),
            -math.floor(g.goodput_gain / TIE + 1e-9), -c.wasted_gpu_s)


SCORE_TEXT = ("worst goodput loss when put back into the good design (in steps of 0.5 points), then worst "
              "p99 increase (never answered first), then the goodput its fix gains alone in the flawed design, "
              "then extra wasted GPU-seconds")


# -- the ablation --------------------------------------------------------------------------

def ablate(flaw_scenarios: dict[str, list[str]], good: str = "hardened", flawed: str = "naive", seed: int = 1,
           workers: int | None = None, plan: dict[str, dict[str, Any]] | None = None,
           on_done: OnDone | None = None, interactions: bool = True, suite: str | list[str] = "",
           on_planned: OnPlanned | None = None, suite_name: str | None = None) -> RankResult:
    """Runs the ablation for `{flaw id: [scenarios]}` and returns the rank result.

    `good` and `flawed` are target specs or design TOML paths. On the gain
    side only flaws present in `flawed` are fixed; for the others the gain is
    0 by construction (noted in the flaw's `gain.note`).
    """
    started = time.perf_counter()
    scen = sorted({w for ws in flaw_scenarios.values() for w in ws}, key=_suite_order(suite))
    plan = plan or plan_runs(scen)
    good_label, good_knobs = knobs_of(good)
    flawed_label, flawed_knobs = knobs_of(flawed)
    if flawed_label == good_label:
        flawed_label += " (flawed)"
    present = set(flaws_present(TargetConfig.model_validate(flawed_knobs)))
    by_id = {f.id: f for f in FLAWS}
    jobs = [VariantJob(good_label, good_knobs, w, seed, plan[w]["shortening"]) for w in scen]
    jobs += [VariantJob(flawed_label, flawed_knobs, w, seed, plan[w]["shortening"]) for w in scen]
    for fid, ws in flaw_scenarios.items():
        f = by_id[fid]
        jobs += [VariantJob(f"{good_label}+{fid}", variant(good_knobs, f.present), w, seed, plan[w]["shortening"]) for w in ws]
        if fid in present:
            jobs += [VariantJob(f"{flawed_label}-{fid}", variant(flawed_knobs, f.fixed), w, seed, plan[w]["shortening"])
                     for w in ws]
    summaries = run_summaries(jobs, workers, on_done, on_planned)
    per = measure(flaw_scenarios, good_label, flawed_label, summaries)
    slo = TargetConfig.model_validate(good_knobs).slo_s
    flaws = []
    for fid, rows in per.items():
        f = by_id[fid]
        cost, gain = worst(rows)
        if fid not in present:
            gain = gain.model_copy(update={"note": f"already fixed in {flawed_label}: nothing to gain"})
        flaws.append(FlawRank(id=fid, doc_item=f.doc_item, failure=f.failure, fix=f.fix,
                              exposed_by=list(f.exposed_by), cost=cost, gain=gain, per_scenario=rows, rank=0))
    flaws.sort(key=score_key)
    flaws = [f.model_copy(update={"rank": i}) for i, f in enumerate(flaws, 1)]
    found = None
    if interactions:
        found = find_interactions(flaws, present, slo, seed, (good_label, good_knobs),
                                  (flawed_label, flawed_knobs), summaries, plan, workers, on_done, on_planned)
        flaws = [f.model_copy(update={"interaction": found.text[f.id]}) if f.id in found.text else f
                 for f in flaws]
    probe_runs = found.runs if found else 0
    return RankResult(
        seed=seed, suite=scen, slo_s=slo, good=good_label, flawed=flawed_label, good_spec=good, flawed_spec=flawed,
        flaws=flaws, top=[f.id for f in flaws if f.id in present][:3],
        baselines={"hardened" if good == "hardened" else good_label: {w: summaries[(good_label, w)] for w in scen},
                   "naive" if flawed == "naive" else flawed_label: {w: summaries[(flawed_label, w)] for w in scen}},
        durations=plan_for_json(plan), score=SCORE_TEXT, runs=len(jobs) + probe_runs, ablation_runs=len(jobs),
        flaws_in_flawed=sorted(present),
        probe_runs=probe_runs if found else None, interactions=found.plans if found else None,
        wall_s=time.perf_counter() - started, suite_name=suite_name,
    )


def _suite_order(suite: str | list[str]) -> Callable[[str], tuple[int, str]]:
    try:
        order = list(suite) if isinstance(suite, list) else (load_suite(suite) if suite else [])
    except Exception:
        order = []
    return lambda w: (order.index(w) if w in order else len(order), w)


def rank(suite: str | list[str] = "bad-day", seed: int = 1, workers: int | None = None, duration_scale: float = 1.0,
         request_budget: float | None = REQUEST_BUDGET, flaws: list[str] | None = None,
         good: str = "hardened", flawed: str = "naive", on_done: OnDone | None = None,
         interactions: bool = True, on_planned: OnPlanned | None = None) -> RankResult:
    """The rank result: every flaw (or `flaws`) measured on every scenario of the suite."""
    names = list(suite) if isinstance(suite, list) else load_suite(suite)
    ids = flaws or [f.id for f in FLAWS]
    plan = plan_runs(names, duration_scale, request_budget)
    return ablate({fid: list(names) for fid in ids}, good, flawed, seed, workers, plan, on_done, interactions,
                  suite=names, on_planned=on_planned, suite_name=suite if isinstance(suite, str) else "custom")


def ablation_job_count(flaw_scenarios: dict[str, list[str]], flawed: str = "naive") -> int:
    """Runs the ablation of `flaw_scenarios` needs before interaction probes."""
    present = set(flaws_present(TargetConfig.model_validate(knobs_of(flawed)[1])))
    scen = {w for ws in flaw_scenarios.values() for w in ws}
    return 2 * len(scen) + sum(len(ws) * (2 if fid in present else 1) for fid, ws in flaw_scenarios.items())


def job_count(n_flaws: int, n_scenarios: int) -> int:
    """Runs a full rank of naive needs before interaction probes: 2 x (flaws + 1) x scenarios."""
    return 2 * (n_flaws + 1) * n_scenarios


def flaw(fid: str) -> Flaw:
    return {f.id: f for f in FLAWS}[fid]

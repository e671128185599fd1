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
  answered one (not an increase, for sorting; ``p99_change`` says which of
  these it was, so a tail that went from never to a number is a change);
- ``unserved_increase``, ``lost_increase``, ``amplification_increase``: the
  share of requests that ended timed out, failed or never resolved, the share
  lost in flight inside the target, and attempts per request, GOOD+F minus
  GOOD (`harness.analysis.rank.scoring`);
- ``wasted_gpu_s``: wasted GPU-seconds (duplicates, abandoned work, padding)
  of GOOD+F minus those of GOOD, over the (compressed) run;
- ``gain_goodput`` and ``gain_p99_s``: the same differences on the gain side
  (FLAWED-F better than FLAWED is positive; ``None`` p99 = the fix made a
  never-answered tail answered).

A flaw's `cost` is its worst case over the scenarios: the largest goodput
loss, the largest p99 increase (None beats any number), the largest share of
requests harmed (timed out, failed or lost), the largest extra amplification
and waste, and the scenario of the highest severity (goodput loss in steps of
TIE = half a point, then p99 increase, then harm, then amplification). Its
`gain` is the same on the gain side.

Score (the ranking, documented in the result's `score` key): flaws sort by
worst goodput loss in steps of TIE, then worst p99 increase (never answered
first; under 0.5 ms counts as none), then requests harmed, then
amplification, then the fix's goodput gain from the naive side, then extra
waste.
`top` is the three highest-ranked flaws the flawed design still has (for
`naive`, the first three): the ones to insist on before shipping it.

Durations: 20 targets x 11 scenarios at the scenarios' full lengths (up to
600,000 requests a run) take most of an hour on 2 cores, so each scenario is
shortened by `harness.analysis.shorten.plan`: stationary scripts cut to about
`request_budget` requests, disturbed ones cut to a little calm, the
disturbance (3 s, or longer where a flaw's mechanism needs it: 8 s for a
retry storm at the doc's client settings, `harness.analysis.exposure`) and a
little recovery; `duration_scale` scales all of it but those needs. The plan
used is in the result (`durations`); a flaw whose exposing runs still kept
too little (or did not run) carries a `too_short` warning.

Seeds (`rank --seeds N`): every run of the ablation runs once per seed (each a
separate job), and each seed ranks the flaws on its own. The tables (`cost`, `gain`,
`per_scenario`, the baselines) stay the first seed's; each flaw adds `over_seeds`
(`harness.results.rank.FlawSeeds`): its worst-case cost under each seed as a 95%
interval, its place in each seed's ranking, and the share of seeds that put it at
its final rank. With seeds the final ranking orders flaws by their median place over
the seeds, then their mean place, then the first seed's order, so one lucky seed
cannot move a flaw. Interaction probes run on the first seed only.

Interactions: see `harness.analysis.rank.interactions`; the shared measures are in
`harness.analysis.rank.scoring`, the jobs in `harness.analysis.variants`.

LLM flaws (`ablate(..., llm=llm_rank)`, as `harness rank` and `review` call it): the
LLM catalogue measured and ranked on its own (`harness.analysis.llm.llm_rank`, about a
CPU-second), the result's `llm` section. It is passed in, not imported: features do not
import each other (pyproject.toml's import contract), the caller composes them.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any, Callable

from harness.analysis.exposure import scenario_needs, short_run
from harness.analysis.rank.interactions import find_interactions
from harness.analysis.rank.scoring import (amplification, goodput, inf, lost_share, p99, p99_outcome, severity, steps,
                                           tail, tail_increase, unserved)
from harness.analysis.shorten import REQUEST_BUDGET, plan_for_json
from harness.analysis.shorten import plan as plan_runs
from harness.analysis.stats import interval
from harness.analysis.variants import OnDone, OnPlanned, VariantJob, knobs_of, variant
from harness.analysis.rank.llm_section import LlmSection, start_llm_section
from harness.engine.jobs import Jobs, Started
from harness.results.rank import (NOISE_AMPLIFICATION, NOISE_P99_S, NOISE_SHARE, FlawCost, FlawGain, FlawRank,
                                  FlawSeeds, KeptSpan, RankResult, ScenarioCost, TailChange, tail_change)
from harness.results.run import RunSummary
from targets.config import TargetConfig
from targets.flaws import FLAWS, Flaw
from targets.spec import flaws_present
from workloads.loader import load_suite

__all__ = ["REQUEST_BUDGET", "SCORE_TEXT", "LlmSection", "ablate", "ablation_job_count", "exposing_plan", "job_count",
           "measure", "rank", "score_key", "worst"]

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
                p99_outcome={k: o for k, v in sides.items() if (o := p99_outcome(v)) is not None},
                amplification={k: v.amplification for k, v in sides.items()},
                lost={k: v.requests.lost for k, v in sides.items()},
                unserved={k: unserved(v) for k, v in sides.items()},
                unserved_increase=unserved(gf) - unserved(g),
                lost_increase=lost_share(gf) - lost_share(g),
                amplification_increase=amplification(gf) - amplification(g),
                p99_change=tail_change(p99(g), p99(gf)),
                gain_unserved=unserved(n) - unserved(nf),
                gain_lost=lost_share(n) - lost_share(nf),
                gain_p99_change=tail_change(p99(n), p99(nf)),
            )
        out[fid] = rows
    return out


def _tail_key(r: ScenarioCost) -> tuple[float, float]:
    """Where a flaw's tail moved most: a measurable increase (never answered first), then a
    tail that went from never answered to a number (a change in kind), then the rest."""
    inc = r.p99_increase_s
    if inc is None or inc >= NOISE_P99_S:
        return (inf(inc), 0.0)
    return (0.0, 1.0 if r.p99_change is TailChange.BECAME_ANSWERED else inc - 1.0)


def worst(rows: dict[str, ScenarioCost]) -> tuple[FlawCost, FlawGain]:
    """(cost, gain) of one flaw: its worst case over the scenarios measured."""
    ws = list(rows)
    cost_w = max(ws, key=lambda w: severity(rows[w].goodput_loss, rows[w].p99_increase_s, rows[w].harm(),
                                            rows[w].amplification_increase))
    gain_w = max(ws, key=lambda w: severity(rows[w].gain_goodput, rows[w].gain_p99_s, rows[w].gain_harm()))
    tail_w = max(ws, key=lambda w: _tail_key(rows[w]))
    gtail_w = max(ws, key=lambda w: inf(rows[w].gain_p99_s))
    tails = [rows[w].p99_increase_s for w in ws]
    gtails = [rows[w].gain_p99_s for w in ws]
    before, after = _labels(rows[tail_w])
    cost = FlawCost(
        goodput_loss=max(0.0, max(rows[w].goodput_loss for w in ws)),
        p99_increase_s=None if None in tails else max(t for t in tails if t is not None),
        wasted_gpu_s=max(rows[w].wasted_gpu_s for w in ws),
        scenario=cost_w,
        p99_scenario=tail_w,
        p99_change=rows[tail_w].p99_change,
        p99_from_s=rows[tail_w].p99_s.get(before) if before else None,
        p99_to_s=rows[tail_w].p99_s.get(after) if after else None,
        p99_from_outcome=rows[tail_w].p99_outcome.get(before) if before else None,
        p99_to_outcome=rows[tail_w].p99_outcome.get(after) if after else None,
        harmed=max(0.0, max(rows[w].harm() for w in ws)),
        amplification_increase=max(0.0, max(rows[w].amplification_increase for w in ws)),
    )
    gain = FlawGain(
        goodput_gain=max(0.0, max(rows[w].gain_goodput for w in ws)),
        p99_decrease_s=None if None in gtails else max(t for t in gtails if t is not None),
        scenario=gain_w,
        p99_change=rows[gtail_w].gain_p99_change,
        harm_avoided=max(0.0, max(rows[w].gain_harm() for w in ws)),
    )
    return cost, gain


def _labels(r: ScenarioCost) -> tuple[str | None, str | None]:
    """(good, good+F) labels of a row: the tables are keyed good, good+F, flawed, flawed-F."""
    keys = list(r.p99_s)
    return (keys[0], keys[1]) if len(keys) >= 2 else (None, None)


def score_key(f: FlawRank) -> tuple:
    """Ascending sort key: the most harmful flaw first (see module doc)."""
    return _score(f.cost, f.gain)


def _score(c: FlawCost, g: FlawGain) -> tuple:
    return (-steps(c.goodput_loss), -tail(c.p99_increase_s), -steps(c.harmed, NOISE_SHARE),
            -steps(c.amplification_increase, NOISE_AMPLIFICATION), -steps(g.goodput_gain), -c.wasted_gpu_s,
            -inf(c.p99_increase_s))


SCORE_TEXT = ("worst goodput loss when put back into the good design (in steps of 0.5 points), then worst "
              "p99 increase (never answered first), then requests timed out, failed or lost in flight (share, "
              "in steps of 0.1 points), then extra attempts per request (amplification, in steps of 0.005), "
              "then the goodput its fix gains alone in the flawed design, then extra wasted GPU-seconds")


# -- seeds --------------------------------------------------------------------------------

def _summaries_by_seed(runs: list[VariantJob], jobs: Jobs, on_done: OnDone | None,
                       on_planned: OnPlanned | None) -> dict[int, Summaries]:
    """{seed: {(target label, scenario): summary}} for every run, each a job of `jobs`."""
    if on_planned is not None and runs:
        on_planned(len(runs))
    docs = jobs.run(runs, on_done)
    out: dict[int, Summaries] = {}
    for j, d in zip(runs, docs):
        out.setdefault(j.seed, {})[(j.target, j.workload)] = d.summary
    return out


def seed_places(flaw_scenarios: dict[str, list[str]], good: str, flawed: str,
                by_seed: dict[int, Summaries]) -> dict[int, dict[str, tuple[int, FlawCost]]]:
    """{seed: {flaw id: (its place in that seed's own ranking, its worst-case cost there)}}."""
    out = {}
    for seed, summaries in by_seed.items():
        worsts = {fid: worst(rows) for fid, rows in measure(flaw_scenarios, good, flawed, summaries).items()}
        order = sorted(worsts, key=lambda fid: _score(*worsts[fid]))
        out[seed] = {fid: (order.index(fid) + 1, worsts[fid][0]) for fid in worsts}
    return out


def rank_over_seeds(flaws: list[FlawRank], places: dict[int, dict[str, tuple[int, FlawCost]]],
                    seeds: list[int]) -> list[FlawRank]:
    """The flaws re-ranked by median place over the seeds (then mean place, then the first
    seed's rank), each with its `over_seeds` intervals and stability."""
    def at(f: FlawRank) -> list[int]:
        return [places[s][f.id][0] for s in seeds]

    order = sorted(flaws, key=lambda f: (statistics.median(at(f)), statistics.mean(at(f)), f.rank))
    out = []
    for rank_no, f in enumerate(order, 1):
        costs = [places[s][f.id][1] for s in seeds]
        seen = at(f)
        out.append(f.model_copy(update={"rank": rank_no, "over_seeds": FlawSeeds(
            goodput_loss=interval([c.goodput_loss for c in costs]),
            p99_increase_s=interval([c.p99_increase_s for c in costs]),
            harmed=interval([c.harmed for c in costs]),
            amplification_increase=interval([c.amplification_increase for c in costs]),
            places=seen, held=sum(p == rank_no for p in seen) / len(seen))}))
    return out


# -- the ablation --------------------------------------------------------------------------

def ablate(flaw_scenarios: dict[str, list[str]], good: str = "hardened", flawed: str = "naive", seed: int = 1,
           jobs: Jobs = Jobs(), plan: dict[str, dict[str, Any]] | None = None,
           on_done: OnDone | None = None, interactions: bool = True, suite: str | list[str] = "",
           on_planned: OnPlanned | None = None, suite_name: str | None = None,
           seeds: list[int] | None = None, llm: LlmSection | None = None) -> RankResult:
    """Runs the ablation for `{flaw id: [scenarios]}` and returns the rank result.

    `good` and `flawed` are target specs or design TOML paths. On the gain
    side only flaws present in `flawed` are fixed; for the others the gain is
    0 by construction (noted in the flaw's `gain.note`). `seeds` (default: `seed`
    alone) runs every job once per seed (see the module doc); `jobs` says where the
    runs go (default: this machine's worker processes). `llm` builds the LLM flaws'
    section (first seed; `harness.analysis.llm.llm_rank`); None: no section.
    """
    started = time.perf_counter()
    seeds = seeds or [seed]
    seed = seeds[0]
    scen = sorted({w for ws in flaw_scenarios.values() for w in ws}, key=_suite_order(suite))
    plan = plan or exposing_plan(flaw_scenarios, good)
    good_label, good_knobs = knobs_of(good)
    flawed_label, flawed_knobs = knobs_of(flawed)
    if flawed_label == good_label:
        flawed_label += " (flawed)"
    present = set(flaws_present(TargetConfig.model_validate(flawed_knobs)))
    by_id = {f.id: f for f in FLAWS}
    runs = [VariantJob(good_label, good_knobs, w, seed, plan[w]["shortening"]) for w in scen]
    runs += [VariantJob(flawed_label, flawed_knobs, w, seed, plan[w]["shortening"]) for w in scen]
    for fid, ws in flaw_scenarios.items():
        f = by_id[fid]
        runs += [VariantJob(f"{good_label}+{fid}", variant(good_knobs, f.present), w, seed, plan[w]["shortening"]) for w in ws]
        if fid in present:
            runs += [VariantJob(f"{flawed_label}-{fid}", variant(flawed_knobs, f.fixed), w, seed, plan[w]["shortening"])
                     for w in ws]
    runs = [dataclasses.replace(j, seed=s) for s in seeds for j in runs]
    # The LLM flaws (one long computation) are measured beside the ablation's runs, not after.
    with start_llm_section(llm, seed, jobs) if llm is not None else Started.nothing() as llm_rank_of:
        by_seed = _summaries_by_seed(runs, jobs, on_done, on_planned)
        summaries = by_seed[seed]
        per = measure(flaw_scenarios, good_label, flawed_label, summaries)
        slo = TargetConfig.model_validate(good_knobs).slo_s
        kept = {w: KeptSpan(disturbance_s=plan[w].get("disturbance_s"), after_s=plan[w].get("after_s")) for w in scen}
        flaws = []
        for fid, rows in per.items():
            f = by_id[fid]
            cost, gain = worst(rows)
            if fid not in present:
                gain = gain.model_copy(update={"note": f"already fixed in {flawed_label}: nothing to gain"})
            warning = short_run(fid, flaw_scenarios[fid], f.exposed_by, variant(good_knobs, f.present), kept)
            flaws.append(FlawRank(id=fid, doc_item=f.doc_item, failure=f.failure, fix=f.fix,
                                  exposed_by=list(f.exposed_by), cost=cost, gain=gain, per_scenario=rows, rank=0,
                                  too_short=warning))
        flaws.sort(key=score_key)
        flaws = [f.model_copy(update={"rank": i}) for i, f in enumerate(flaws, 1)]
        if len(seeds) > 1:
            flaws = rank_over_seeds(flaws, seed_places(flaw_scenarios, good_label, flawed_label, by_seed), seeds)
        found = None
        if interactions:
            found = find_interactions(flaws, present, slo, seed, (good_label, good_knobs),
                                      (flawed_label, flawed_knobs), summaries, plan, jobs, on_done, on_planned)
            flaws = [f.model_copy(update={"interaction": found.text[f.id]}) if f.id in found.text else f
                     for f in flaws]
        probe_runs = found.runs if found else 0
        return RankResult(
            seed=seed, suite=scen, slo_s=slo, good=good_label, flawed=flawed_label, good_spec=good, flawed_spec=flawed,
            flaws=flaws, top=[f.id for f in flaws if f.id in present][:3],
            baselines={"hardened" if good == "hardened" else good_label: {w: summaries[(good_label, w)] for w in scen},
                       "naive" if flawed == "naive" else flawed_label: {w: summaries[(flawed_label, w)] for w in scen}},
            durations=plan_for_json(plan), score=SCORE_TEXT, runs=len(runs) + probe_runs, ablation_runs=len(runs),
            flaws_in_flawed=sorted(present),
            probe_runs=probe_runs if found else None, interactions=found.plans if found else None,
            wall_s=time.perf_counter() - started, suite_name=suite_name, seeds=seeds if len(seeds) > 1 else None,
            llm=llm_rank_of.result(),
        )


def exposing_plan(flaw_scenarios: dict[str, list[str]], good: str = "hardened", scale: float = 1.0,
                  request_budget: float | None = REQUEST_BUDGET) -> dict[str, dict[str, Any]]:
    """The shortening plan of an ablation: `harness.analysis.shorten.plan` over its scenarios,
    each disturbance kept as long as the flaws it exposes need to show
    (`harness.analysis.exposure`), from the knobs of `good` with each flaw put back."""
    _, good_knobs = knobs_of(good)
    by_id = {f.id: f for f in FLAWS}
    needs = scenario_needs(flaw_scenarios, {fid: by_id[fid].exposed_by for fid in flaw_scenarios},
                           {fid: variant(good_knobs, by_id[fid].present) for fid in flaw_scenarios})
    names = sorted({w for ws in flaw_scenarios.values() for w in ws})
    return plan_runs(names, scale, request_budget, needs=needs)


def _suite_order(suite: str | list[str]) -> Callable[[str], tuple[int, str]]:
    try:
        order = list(suite) if isinstance(suite, list) else (load_suite(suite) if suite else [])
    except Exception:
        order = []
    return lambda w: (order.index(w) if w in order else len(order), w)


def rank(suite: str | list[str] = "bad-day", seed: int = 1, jobs: Jobs = Jobs(), duration_scale: float = 1.0,
         request_budget: float | None = REQUEST_BUDGET, flaws: list[str] | None = None,
         good: str = "hardened", flawed: str = "naive", on_done: OnDone | None = None,
         interactions: bool = True, on_planned: OnPlanned | None = None,
         seeds: list[int] | None = None, llm: LlmSection | None = None) -> RankResult:
    """The rank result: every flaw (or `flaws`) measured on every scenario of the suite
    (under each of `seeds`, default `seed` alone), and the LLM flaws' section that `llm`
    builds (`harness rank` passes `harness.analysis.llm.llm_rank`; None: none)."""
    names = list(suite) if isinstance(suite, list) else load_suite(suite)
    ids = flaws or [f.id for f in FLAWS]
    plan = exposing_plan({fid: list(names) for fid in ids}, good, duration_scale, request_budget)
    return ablate({fid: list(names) for fid in ids}, good, flawed, seed, jobs, plan, on_done, interactions,
                  suite=names, on_planned=on_planned, suite_name=suite if isinstance(suite, str) else "custom",
                  seeds=seeds, llm=llm)


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

"""The design-review demo: the doc's items one by one, answered with measurements.

`review(design)` runs, for every flaw of the catalogue, the experiment that
exposes it (its `exposed_by` scenarios plus `steady`), both ways: the flaw put
back alone into `hardened` (its cost) and fixed alone in the design under
review (its gain; `naive`, the doc's design, unless a user design is given).
It then ranks the flaws, and adds the Part 2 (capacity) and Part 3 (shared
pool) answers the caller asks for, and the LLM follow-up's
(`harness.analysis.llm.review`: static against continuous batching, in a few
seconds of simulation, citing the LLM flaws' costs from the rank's LLM
section, `harness.analysis.llm.rank`).

Two follow-ups are answered with measurements too: dashboards and alerts (the
generated alert rules evaluated on the ablation's own runs of hardened and the
design, `harness.analysis.review.alerts`: no extra run) and canaries (the
built-in rollout plans over a few seeds, or a saved `harness canary` result,
`harness.analysis.review.canary`).

Runs are shortened so each scenario keeps the disturbance the flaws it exposes
need to show (`harness.analysis.exposure`); `--quick` halves the rest. An
item whose exposing runs still kept too little carries the rank's warning
(`too_short`), so a flaw is never quietly found harmless by a run too short.

Returns a `ReviewResult`: per doc item the figures of its experiment and the
verdicts (measurable or not, where it hurt most, requests lost), decided here;
`reports/review.py` words them. No figure is canned: each is read from the
embedded rank result.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Sequence

from harness.analysis.llm import llm_rank
from harness.analysis.rank import LlmSection, ablate, ablation_job_count, exposing_plan, llm_section
from harness.analysis.review.alerts import RunTap, alerts_answer, baseline_runs
from harness.analysis.review.canary import canary_answer, start_canary_answer
from harness.analysis.review.parts_process import Part, start_parts
from harness.analysis.variants import OnDone, OnPlanned, knobs_of
from harness.engine.jobs import Executor, Jobs
from harness.results.canary import CanaryResult
from harness.results.followups import AlertsAnswer, CanaryAnswer
from harness.results.llm import LlmResult
from harness.results.rank import FlawRank, RankResult, ScenarioCost, TailChange, measurable
from harness.results.review import Effect, LostShift, ReviewItem, ReviewResult, TailShift
from targets.flaws import FLAWS
from workloads.loader import load_workload

__all__ = ["QUICK_SCALE", "Part", "capacity_part", "check_design", "default_parts", "items", "llm_part", "pool_part",
           "review", "review_job_count", "review_scenarios"]

QUICK_SCALE = 0.5          # --quick: runs this much shorter, never below what a flaw needs (shorten.py)



def review_scenarios() -> dict[str, list[str]]:
    """{flaw id: scenarios}: the flaw's exposing scenarios, then steady."""
    return {f.id: list(dict.fromkeys([*f.exposed_by, "steady"])) for f in FLAWS}


def review_job_count(design: str | None = None, flaw_scenarios: dict[str, list[str]] | None = None) -> int:
    """Runs the review's ablation takes before its interaction probes (which report their own count)."""
    return ablation_job_count(flaw_scenarios or review_scenarios(), design or "naive")


def _lost(per: dict[str, ScenarioCost], before: str, after: str) -> LostShift | None:
    """Where the change loses (or saves) the most requests in flight; None when it changes none."""
    w = max(per, key=lambda w: per[w].lost[after] - per[w].lost[before])
    a, b = per[w].lost[before], per[w].lost[after]
    return LostShift(scenario=w, before=a, after=b) if a != b else None


def _effect(f: FlawRank, before: str, after: str, side: str) -> Effect:
    """The cost (flaw put back) or gain (flaw fixed) of one flaw, from its rank entry."""
    per = f.per_scenario
    if side == "cost":
        w, seen = f.cost.scenario, any(r.cost_measurable() for r in per.values())
        row = per[w]
        change = row.goodput_loss
    else:
        w, seen = f.gain.scenario, any(r.gain_measurable() for r in per.values())
        row = per[w]
        change = row.gain_goodput
    tail = None
    pw = f.cost.p99_scenario
    moved = measurable(0.0, per[pw].p99_increase_s) or per[pw].p99_change is TailChange.BECAME_ANSWERED
    if side == "cost" and seen and pw != w and moved:
        tail = TailShift(scenario=pw, p99_before_s=per[pw].p99_s[before], p99_after_s=per[pw].p99_s[after],
                         change=per[pw].p99_change, p99_before_outcome=per[pw].p99_outcome.get(before),
                         p99_after_outcome=per[pw].p99_outcome.get(after))
    return Effect(
        before=before, after=after, scenario=w, measurable=seen, change=change,
        goodput_before=row.goodput[before], goodput_after=row.goodput[after],
        p99_before_s=row.p99_s[before], p99_after_s=row.p99_s[after],
        p99_change=row.p99_change if side == "cost" else row.gain_p99_change,
        p99_before_outcome=row.p99_outcome.get(before), p99_after_outcome=row.p99_outcome.get(after),
        unserved_before=row.unserved.get(before), unserved_after=row.unserved.get(after),
        amplification_before=row.amplification.get(before), amplification_after=row.amplification.get(after),
        wasted_gpu_s=row.wasted_gpu_s if side == "cost" else 0.0, tail=tail,
        lost=None if (side == "gain" and f.gain.note) else _lost(per, before, after),
        note=f.gain.note if side == "gain" else None,
    )


def items(rank: RankResult) -> list[ReviewItem]:
    """The walk-through rows, in the doc's order (catalogue order)."""
    by_id = {f.id: f for f in rank.flaws}
    good, flawed = rank.good, rank.flawed
    out = []
    for flaw in FLAWS:
        f = by_id.get(flaw.id)
        if f is None:
            continue
        out.append(ReviewItem(
            item=flaw.doc_item, flaw=flaw.id, failure=flaw.failure, fix=flaw.fix, rank=f.rank,
            runs_s={w: rank.durations[w].run_s for w in f.per_scenario},
            cost=_effect(f, good, f"{good}+{flaw.id}", "cost"),
            gain=_effect(f, flawed, f"{flawed}-{flaw.id}", "gain"),
            interaction=f.interaction, too_short=f.too_short,
        ))
    return out


def capacity_part(seed: int, jobs: Jobs = Jobs()) -> Part:
    """Part 2: the capacity plan, quick (the doc's formula against simulation), its points jobs of `jobs`."""
    def build() -> Any:
        from harness.analysis.capacity import plan_capacity

        return plan_capacity(seed=seed, quick=True, jobs=jobs)
    return "Part 2 (capacity)", build


def pool_part(jobs: Jobs = Jobs()) -> Part:
    """Part 3: every pool policy on the same arrivals (the default two-model pool), kept in
    `jobs`' run cache where it has one."""
    def build() -> Any:
        from harness.analysis.pool import run_pool_experiment
        from harness.analysis.pool.gang import PoolConfig

        if jobs.cache is None:
            return run_pool_experiment()
        return jobs.cache.memo("harness.analysis.pool.run_pool_experiment", {"config": PoolConfig(), "policies": None},
                               run_pool_experiment, "pool experiment, every policy")
    return "Part 3 (pool)", build


def llm_part(seed: int, jobs: Jobs = Jobs()) -> Part:
    """The follow-up "an LLM generating tokens one at a time: how does batching change?" (short sim runs;
    `review` adds the LLM flaws' costs from its rank's LLM section), kept in `jobs`' run cache where it
    has one."""
    def build() -> Any:
        from harness.analysis.llm import llm_answer

        if jobs.cache is None:
            return llm_answer(seed, flaws=[])
        return jobs.cache.memo("harness.analysis.llm.llm_answer", {"seed": seed, "flaws": []},
                               lambda: llm_answer(seed, flaws=[]), f"LLM follow-up, seed {seed}")
    return "LLM follow-up", build


def default_parts(seed: int, jobs: Jobs = Jobs()) -> list[Part]:
    """The Part 2, Part 3 and LLM follow-up answers a full review adds (each kept in `jobs`' run cache).

    With worker processes, the capacity plan's points run one after another in the parts' own
    process (`start_parts`), not on a pool of its own: that process runs beside the review's
    `width` workers, so its own pool put twice as many processes as cores to work (on two cores,
    its two pools of two workers took 1.7 CPU-s for 1.1 CPU-s of points), and the parts are not
    what the review waits for."""
    inline = dataclasses.replace(jobs, executor=Executor.INLINE) if jobs.executor is Executor.PROCESS else jobs
    return [capacity_part(seed, inline), pool_part(jobs), llm_part(seed, jobs)]


def review(design: str | None = None, quick: bool = False, seed: int = 1, jobs: Jobs = Jobs(),
           parts: Sequence[Part] = (), rank: RankResult | None = None, on_done: OnDone | None = None,
           scale: float | None = None, flaw_scenarios: dict[str, list[str]] | None = None,
           on_planned: OnPlanned | None = None, seeds: list[int] | None = None, alerts: bool = True,
           canary_seeds: int = 0, canary: CanaryResult | None = None,
           llm: LlmSection | None = llm_rank) -> ReviewResult:
    """The review of `design` (a target spec or TOML; default naive, the doc's design).

    `rank` reuses a saved rank (same design) instead of running the ablation;
    `parts` are the Part 2/3 answers to add (e.g. `capacity_part(seed, jobs)`),
    each embedded under its kind (`capacity`, `pool`); `quick` (or `scale`)
    shortens every run; `flaw_scenarios` ({flaw id: [scenarios]}) replaces the
    default experiments (tests use tiny ones); `seeds` runs the ablation under each
    (`harness.analysis.rank.ablation`: intervals and place stability per flaw); `jobs`
    says where every run goes (default: this machine's worker processes).

    The follow-ups: `alerts` evaluates the alert rules on the ablation's runs of
    hardened and the design (with a saved `rank`, on runs of its own, one per
    design and scenario); `canary` (a saved `harness canary` result) or
    `canary_seeds` (> 0: run the built-in plans over that many seeds) answers
    the canary question. `llm` builds the rank's LLM section (None: none; tests of the
    ablation alone skip its ~8 CPU-s of pure-Python LLM simulation).
    """
    started = time.perf_counter()
    flawed = design or "naive"
    notes: list[str] = []
    factor = scale if scale is not None else (QUICK_SCALE if quick else 1.0)
    first_seed = seeds[0] if seeds else seed
    # The Part 2/3 answers are built meanwhile, in a process of their own, forked first (see
    # start_parts): built after the ablation, they would leave a core idle.
    built = start_parts(parts, notes, jobs)
    try:
        with jobs.sharing() as shared:
            rank, canary_part, alerts_part = _measure(
                flawed, factor, seed, first_seed, shared, rank, on_done, flaw_scenarios, on_planned, seeds, alerts,
                canary_seeds, canary, llm, notes)
        embedded = built.result()
    except BaseException:
        built.stop()  # an interrupted or failed review does not wait for the parts
        raise
    answered = embedded.get("llm")
    if isinstance(answered, LlmResult) and rank.llm is not None:  # cite the rank's LLM flaw costs
        embedded["llm"] = answered.model_copy(update={"flaws": [c for f in rank.llm.flaws for c in f.costs]})
    return ReviewResult(
        design=flawed, seed=seed, quick=quick, rank=rank, capacity=embedded.get("capacity"),
        pool=embedded.get("pool"), llm=embedded.get("llm"), alerts=alerts_part, canary=canary_part(),
        doc_items=items(rank), notes=notes, wall_s=time.perf_counter() - started,
    )


def _measure(flawed: str, factor: float, seed: int, first_seed: int, jobs: Jobs, rank: RankResult | None,
             on_done: OnDone | None, flaw_scenarios: dict[str, list[str]] | None, on_planned: OnPlanned | None,
             seeds: list[int] | None, alerts: bool, canary_seeds: int, canary: CanaryResult | None,
             llm: LlmSection | None, notes: list[str]
             ) -> tuple[RankResult, Callable[[], CanaryAnswer | None], AlertsAnswer | None]:
    """The review's own runs: the canary rollouts (started first: they queue ahead of the
    ablation's runs on the workers `jobs` shares between them, so no core idles while the
    ablation's last runs finish), the ablation (unless `rank` is given) and the alerts'
    evaluation. (rank, the canary answer's call, the alerts answer)."""
    canary_part = _canary(canary, canary_seeds, first_seed, jobs, notes)
    tap = None
    if rank is None:
        scen = flaw_scenarios or review_scenarios()
        plan = exposing_plan(scen, "hardened", factor)
        if alerts:
            good, mine = knobs_of("hardened")[0], knobs_of(flawed)[0]
            on_done = tap = RunTap({good, mine, f"{mine} (flawed)"}, first_seed, on_done)
        rank = ablate(scen, "hardened", flawed, seed, jobs, plan, on_done, suite="bad-day", on_planned=on_planned,
                      seeds=seeds, llm=llm)
    elif rank.llm is None and llm is not None:  # a rank saved before it had an LLM section
        rank = rank.model_copy(update={"llm": llm_section(llm, first_seed, jobs)})
    alerts_part = _alerts(rank, tap, factor, first_seed, jobs, notes) if alerts else None
    return rank, canary_part, alerts_part


def _alerts(rank: RankResult, tap: RunTap | None, factor: float, seed: int, jobs: Jobs,
            notes: list[str]) -> AlertsAnswer | None:
    """The alerts follow-up on the runs the tap kept, or (a saved rank) on runs of its own."""
    try:
        if tap is not None:
            runs, source = list(tap.runs.values()), "the ablation's own runs of both designs"
        else:
            scen = {f.id: list(f.per_scenario) for f in rank.flaws}
            plan = exposing_plan(scen, rank.good_spec, factor)
            runs = baseline_runs([rank.good_spec, rank.flawed_spec], plan, seed, jobs)
            source = "runs of both designs made for this answer (the rank was reused)"
        order = {rank.good: 0, rank.flawed: 1}
        runs.sort(key=lambda r: (order.get(r.design, 2), rank.suite.index(r.scenario)
                                 if r.scenario in rank.suite else len(rank.suite)))
        return alerts_answer(runs, rank.good, source)
    except Exception as exc:  # an optional follow-up must not sink a long review
        notes.append(f"alerts follow-up failed: {type(exc).__name__}: {exc}")
    return None


def _canary(saved: CanaryResult | None, seeds: int, first_seed: int, jobs: Jobs,
            notes: list[str]) -> Callable[[], CanaryAnswer | None]:
    """The canary follow-up from a saved result, or run over `seeds` seeds (started now, on worker
    processes); the returned call gives it, or None when neither (a failure becomes a note)."""
    def failed(exc: BaseException) -> None:  # an optional follow-up must not sink a long review
        notes.append(f"canary follow-up failed: {type(exc).__name__}: {exc}")

    try:
        if saved is not None:
            answer = canary_answer(saved, f"a saved harness canary result ({saved.seeds} seed(s) a plan and day)")
            return lambda: answer
        if seeds > 0:
            waiting = start_canary_answer(seeds, first_seed, jobs=jobs)

            def collect() -> CanaryAnswer | None:
                try:
                    return waiting()
                except Exception as exc:
                    failed(exc)
                return None
            return collect
    except Exception as exc:
        failed(exc)
    return lambda: None


def check_design(design: str) -> None:
    """Raise ConfigError early for a bad design spec or TOML (before any run)."""
    from targets.spec import resolve_target

    resolve_target(design)
    load_workload("steady")

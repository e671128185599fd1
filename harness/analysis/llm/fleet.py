"""Fleets of LLM replicas side by side: each fleet on the same days (same seeded conversations), judged.

`FleetCompare` names the fleets (`targets.llm.fleet.FleetSpec`), the days
(`workloads.llm_days`), and optionally one offered rate and duration for every day
(a day's own otherwise; its events, the flash crowd and the lost replica, keep their
place as a share of the day). Every (fleet, day) is one job (`FleetPoint`), so they
spread over the cores as the other sweeps' points do. Each day gets the verdicts of the
second fleet against the first on the headline figures (`HEADLINE`): B against A, a tie within
max(`TIE_ABS`, `TIE_REL` x the larger); for any number, the ranking by goodput
summed over the days (`harness.results.fleet.FleetRanked`).

With `dataset` (a data set file, `workloads.datasets`), the day is that file: its conversations as
`workloads.dataset_days.dataset_schedule` builds them (turn j+1 carrying turn j's blocks, a shared
system prompt of `prefix_tokens` in `prefix_groups` groups), at `rate_rps` (default
DATASET_RATE_RPS; a file with start times and no rate: replayed) for `duration_s` (default
DATASET_DURATION_S): the same conversations and prefixes a live run of the file sends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from harness.analysis.llm.compare import engine_settings
from harness.engine.jobs import Executor, Jobs
from harness.engine.llm_fleet import simulate_fleet
from harness.engine.llm_fleet_metrics import fleet_figures
from harness.results.compare import FigureVerdict, Winner
from harness.results.fleet import FleetRanked, FleetResult, FleetRun, FleetSettings
from targets.llm.fleet import FleetSpec
from workloads.llm_days import FleetDay, FleetSchedule, build_fleet_schedule, fleet_day

__all__ = ["DATASET_DURATION_S", "DATASET_RATE_RPS", "FleetCompare", "FleetPoint", "HEADLINE", "dataset_day", "day_of",
           "judge_fleets", "rank_fleets", "run_fleets"]

# (figure, label, unit, better): what a fleet compare judges on every day.
HEADLINE: tuple[tuple[str, str, str, str], ...] = (
    ("goodput_rps", "goodput", "req/s", "higher"),
    ("slo_attainment", "within SLO", "share", "higher"),
    ("ttft_s.p50", "TTFT p50", "s", "lower"),
    ("ttft_s.p99", "TTFT p99", "s", "lower"),
    ("max_replica_ttft_p99_s", "worst replica TTFT p99", "s", "lower"),
    ("prefix_hit_rate", "prefix hit rate", "share", "higher"),
    ("tpot_s.p50", "TPOT p50", "s", "lower"),
    ("lost", "lost requests", "requests", "lower"),
)
TIE_REL = 0.02
DATASET_RATE_RPS = 8.0      # a data set's day without --rate (and without start times of its own)
DATASET_DURATION_S = 60.0   # ... and without --duration
TIE_ABS = {"s": 0.005, "share": 0.005, "req/s": 0.05, "requests": 0.5}


@dataclass(frozen=True)
class FleetCompare:
    fleets: tuple[FleetSpec, ...]
    days: tuple[str, ...] = ("chat",)
    rate_rps: float | None = None
    duration_s: float | None = None
    drain_s: float = 60.0
    seed: int = 1
    slo_ttft_s: float = 2.0
    slo_tpot_s: float = 0.1
    dataset: str | None = None          # the day is this data set file (its name is the day's)
    dataset_format: str | None = None
    think_time_s: float = 0.0
    prefix_tokens: int = 0
    prefix_groups: int = 1

    def __post_init__(self) -> None:
        if not self.fleets:
            raise ValueError("at least one fleet")
        for name in self.days:
            if name != self.dataset:
                fleet_day(name)   # ValueError naming the valid days
        for label, v in (("rate", self.rate_rps), ("duration", self.duration_s)):
            if v is not None and not v > 0:
                raise ValueError(f"{label} must be > 0, got {v}")


def day_of(name: str, rate_rps: float | None, duration_s: float | None) -> FleetDay:
    """The named day at `rate_rps` for `duration_s` (None: its own), its events scaled with its length."""
    day = fleet_day(name)
    update: dict[str, object] = {}
    if rate_rps is not None:
        update["rate_rps"] = rate_rps
    if duration_s is not None:
        k = duration_s / day.duration_s
        update["duration_s"] = duration_s
        for event in ("flash_at_s", "lose_replica_at_s"):
            at = getattr(day, event)
            if at is not None:
                update[event] = at * k
        update["flash_s"] = min(day.flash_s, duration_s / 4)
    return day.model_copy(update=update)


@dataclass(frozen=True)
class FleetPoint:
    """One fleet on one day: a job (plain data, picklable)."""

    compare: FleetCompare
    fleet: int
    day: str

    def run(self) -> FleetRun:
        c, spec = self.compare, self.compare.fleets[self.fleet]
        if self.day == c.dataset:
            schedule, rate = dataset_day(c, spec.engine.block_size)
        else:
            day = day_of(self.day, c.rate_rps, c.duration_s)
            schedule, rate = build_fleet_schedule(day, c.seed, spec.engine.block_size), day.rate_rps
        trace = simulate_fleet(spec, schedule, c.drain_s)
        return fleet_figures(trace, spec.name, spec.router, self.day, rate, schedule.turn,
                             c.slo_ttft_s, c.slo_tpot_s)


def dataset_day(c: FleetCompare, block_size: int) -> tuple[FleetSchedule, float]:
    """`c.dataset`'s day (see the module doc) and its offered rate (requests/s)."""
    from workloads.dataset_days import dataset_schedule
    from workloads.datasets import load_dataset

    assert c.dataset is not None
    data = load_dataset(c.dataset, c.dataset_format, c.think_time_s)
    rate = c.rate_rps if c.rate_rps is not None or data.timed else DATASET_RATE_RPS
    duration = c.duration_s or DATASET_DURATION_S
    schedule = dataset_schedule(data, duration, c.seed, rate, block_size, prefix_tokens=c.prefix_tokens,
                                prefix_groups=c.prefix_groups)
    return schedule, rate if rate is not None else len(schedule) / duration


def _value(run: FleetRun, figure: str) -> float | None:
    block, _, key = figure.partition(".")
    v = getattr(run, block)
    v = getattr(v, key) if key else v
    return None if v is None else float(v)


def judge_fleets(a: FleetRun, b: FleetRun) -> list[FigureVerdict]:
    """B against A on every headline figure; None is the worst (never answered)."""
    out = []
    for figure, label, unit, better in HEADLINE:
        va, vb = _value(a, figure), _value(b, figure)
        tie = max(TIE_ABS[unit], TIE_REL * max(abs(va or 0.0), abs(vb or 0.0)))
        if va is None or vb is None:
            winner = Winner.TIE if va is None and vb is None else (Winner.B if va is None else Winner.A)
        elif abs(va - vb) <= tie:
            winner = Winner.TIE
        else:
            b_better = vb > va if better == "higher" else vb < va
            winner = Winner.B if b_better else Winner.A
        out.append(FigureVerdict(figure=figure, label=label, unit=unit, better=better,
                                 a=va, b=vb, tie_within=tie, winner=winner))
    return out


def rank_fleets(runs: list[FleetRun], fleets: list[str]) -> list[FleetRanked]:
    """The fleets by goodput summed over the days, best first; `of_best` their share of the first's."""
    rows = []
    for name in fleets:
        mine = [r for r in runs if r.fleet == name]
        prompt = sum(r.prompt_tokens for r in mine)
        p99s = [r.ttft_s.p99 for r in mine if r.ttft_s.p99 is not None]
        rows.append((name, sum(r.goodput_rps for r in mine), sum(r.tokens_saved for r in mine) / prompt
                     if prompt else None, max(p99s) if len(p99s) == len(mine) and p99s else None))
    rows.sort(key=lambda r: (-r[1], r[3] if r[3] is not None else float("inf")))
    best = rows[0][1] if rows else 0.0
    return [FleetRanked(fleet=n, goodput_rps=g, of_best=g / best if best else None, prefix_hit_rate=h,
                        worst_ttft_p99_s=p) for n, g, h, p in rows]


def run_fleets(c: FleetCompare, jobs: Jobs | None = None,
               on_done: Callable[[str], None] | None = None) -> FleetResult:
    """Every fleet on every day; verdicts (two fleets) and the ranking."""
    names = [f.name for f in c.fleets]
    if len(set(names)) < len(names):
        raise ValueError(f"two fleets have one name: {', '.join(names)}")
    points = [FleetPoint(c, k, day) for day in c.days for k in range(len(c.fleets))]
    tell = None if on_done is None else (lambda i, p, _r: on_done(f"{c.fleets[p.fleet].name} on {p.day}"))
    runs = (jobs or Jobs(Executor.INLINE)).run(points, tell)
    verdicts = {}
    if len(c.fleets) >= 2:
        for day in c.days:
            a, b = (next(r for r in runs if r.day == day and r.fleet == n) for n in names[:2])
            verdicts[day] = judge_fleets(a, b)
    settings = FleetSettings(fleets=names, days=list(c.days), rate_rps=c.rate_rps,
                             duration_s=c.duration_s or max(DATASET_DURATION_S if d == c.dataset else
                                                             fleet_day(d).duration_s for d in c.days), seed=c.seed,
                             slo_ttft_s=c.slo_ttft_s, slo_tpot_s=c.slo_tpot_s,
                             engine=engine_settings(c.fleets[0].engine))
    return FleetResult(settings=settings, runs=runs, verdicts=verdicts, ranking=rank_fleets(runs, names))

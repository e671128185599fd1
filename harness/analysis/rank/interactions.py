"""Interactions between flaws: shown, not hidden.

The two sides of the ablation disagree when flaws interact:

- *compounding*: putting F back into the good design costs nothing (or a
  quarter or less of what its fix gains), yet fixing F alone in the flawed
  design gains a lot: F hurts only together with some other flaw G. Probe, on
  the scenario of F's largest gain: ``GOOD+G+F`` against ``GOOD+G`` for the
  PARTNERS flaws G that move most there; F's marginal cost beside G names G.
- *masked*: putting F back costs a lot, yet fixing F alone in the flawed
  design gains nothing (or a quarter or less of that cost): some other flaw
  G keeps the flawed design failing anyway, or some other *fix* is what makes
  F costly. Probe, on the scenario of F's largest cost: ``FLAWED-G-F``
  against ``FLAWED-G`` for the PARTNERS flaws G that move most there; F's
  marginal gain once G is fixed too names G.

"Matters" is a goodput difference of at least MATTERS (2 points) or a p99
moved by at least a third of the SLO (or to/from never answered);
"negligible" is under TIE (half a point) and a tenth of the SLO. At most
MAX_PROBED flaws are probed (the highest ranked), in one batch of jobs.
The ablation imports this module; this module imports only the shared
measures (`harness.analysis.rank.scoring`) and jobs (`harness.analysis.variants`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.analysis.rank.scoring import TIE, goodput, p99, severity, tail_increase
from harness.analysis.variants import OnDone, OnPlanned, VariantJob, run_summaries, variant
from harness.engine.jobs import Jobs
from harness.results.rank import FlawRank, Probe, ProbePlan
from harness.results.run import RunSummary
from targets.flaws import FLAWS

__all__ = ["Interactions", "classify", "find_interactions", "matters", "negligible"]

MATTERS = 0.02
DOMINANCE = 4.0   # one side at least this many times the other counts as lopsided
MAX_PROBED = 4    # interacting flaws probed (the highest ranked)
PARTNERS = 3      # partners tried per probed flaw


def matters(goodput: float, tail: float | None, slo_s: float) -> bool:
    return goodput >= MATTERS or tail is None or tail >= slo_s / 3


def negligible(goodput: float, tail: float | None, slo_s: float) -> bool:
    return goodput < TIE and tail is not None and tail < slo_s / 10


def _lopsided(big: float, small: float) -> bool:
    return big >= MATTERS and small * DOMINANCE <= big


def classify(f: FlawRank, slo_s: float) -> str | None:
    """'compounding', 'masked' or None for one ranked flaw."""
    c, g = f.cost, f.gain
    if g.note:  # not present in the flawed design: no gain side to compare with
        return None
    cost, gain = max(c.goodput_loss, 0.0), max(g.goodput_gain, 0.0)
    cost_matters = matters(cost, c.p99_increase_s, slo_s)
    gain_matters = matters(gain, g.p99_decrease_s, slo_s)
    if gain_matters and (negligible(cost, c.p99_increase_s, slo_s) or _lopsided(gain, cost)):
        return "compounding"
    if cost_matters and (negligible(gain, g.p99_decrease_s, slo_s) or _lopsided(cost, gain)):
        return "masked"
    return None


def _partners(flaws: list[FlawRank], present: set[str], fid: str, w: str) -> list[str]:
    """The PARTNERS other flaws (present in the flawed design) that move the
    most on `w`, either side, either sign: a fix that makes F costly (the
    flawed side's gain turns negative) counts as much as a flaw that hurts."""

    def pull(f: FlawRank) -> float:
        r = f.per_scenario.get(w)
        return -1.0 if r is None else max(abs(r.goodput_loss), abs(r.gain_goodput))
    others = [f for f in flaws if f.id != fid and f.id in present]
    return [f.id for f in sorted(others, key=lambda f: (-pull(f), f.rank))][:PARTNERS]


@dataclass(frozen=True)
class Interactions:
    """What the probes found: the plans with their probes, each probed flaw's
    `interaction` text, and how many extra runs they took."""

    plans: list[ProbePlan]
    text: dict[str, str]
    runs: int


def find_interactions(flaws: list[FlawRank], present: set[str], slo: float, seed: int,
                      good_side: tuple[str, dict[str, Any]], flawed_side: tuple[str, dict[str, Any]],
                      summaries: dict[tuple[str, str], RunSummary], plan: dict[str, dict[str, Any]],
                      jobs: Jobs = Jobs(), on_done: OnDone | None = None,
                      on_planned: OnPlanned | None = None) -> Interactions:
    """Probes the flaws whose two sides disagree (ranked flaws, highest first), each run a job of `jobs`."""
    (good, good_knobs), (flawed, flawed_knobs) = good_side, flawed_side
    by_id = {f.id: f for f in FLAWS}
    plans: list[dict[str, Any]] = []
    todo: list[VariantJob] = []
    candidates = [(f, classify(f, slo)) for f in sorted(flaws, key=lambda f: f.rank)]
    for f, kind in [(f, k) for f, k in candidates if k is not None][:MAX_PROBED]:
        w = f.gain.scenario if kind == "compounding" else f.cost.scenario
        partners = _partners(flaws, present, f.id, w)
        plans.append({"flaw": f.id, "kind": kind, "scenario": w, "partners": partners})
        short = plan[w]["shortening"]
        me = by_id[f.id]
        for g in partners:
            # The partner alone may not have run on `w` (a review runs subsets): run it too.
            if kind == "compounding":
                if (f"{good}+{g}", w) not in summaries:
                    todo.append(VariantJob(f"{good}+{g}", variant(good_knobs, by_id[g].present), w, seed, short))
                knobs = variant(variant(good_knobs, by_id[g].present), me.present)
                todo.append(VariantJob(f"{good}+{g}+{f.id}", knobs, w, seed, short))
            else:
                if (f"{flawed}-{g}", w) not in summaries:
                    todo.append(VariantJob(f"{flawed}-{g}", variant(flawed_knobs, by_id[g].fixed), w, seed, short))
                knobs = variant(variant(flawed_knobs, by_id[g].fixed), me.fixed)
                todo.append(VariantJob(f"{flawed}-{g}-{f.id}", knobs, w, seed, short))
    todo = list({(j.target, j.workload): j for j in todo}.values())  # two probes may need the same base
    probed = run_summaries(todo, jobs, on_done, on_planned) if todo else {}
    summaries = {**summaries, **probed}
    entries = {f.id: f for f in flaws}
    done: list[ProbePlan] = []
    text: dict[str, str] = {}
    for p in plans:
        f, w, fid = entries[p["flaw"]], p["scenario"], p["flaw"]
        probes = []
        for g in p["partners"]:
            if p["kind"] == "compounding":
                base, with_f = summaries[(f"{good}+{g}", w)], summaries[(f"{good}+{g}+{fid}", w)]
                delta = goodput(base) - goodput(with_f)
                tail = tail_increase(p99(base), p99(with_f))
            else:
                base, with_f = summaries[(f"{flawed}-{g}", w)], summaries[(f"{flawed}-{g}-{fid}", w)]
                delta = goodput(with_f) - goodput(base)
                tail = tail_increase(p99(with_f), p99(base))
            probes.append(Probe(partner=g, goodput=delta, p99_s=tail,
                                goodput_base=base.goodput_ratio, goodput_with=with_f.goodput_ratio))
        probe_plan = ProbePlan(**p, probes=probes)
        done.append(probe_plan)
        text[fid] = _describe(probe_plan, f, good, flawed, slo)
    return Interactions(done, text, len(todo))


def _pct(x: float) -> str:
    return f"{100 * x:.1f} points"


def _describe(p: ProbePlan, f: FlawRank, good: str, flawed: str, slo: float) -> str:
    """The finding in one sentence, kept in the rank result as `interaction` (the
    structured probes are in `interactions`)."""
    w, fid = p.scenario, p.flaw
    hits = [r for r in p.probes if matters(r.goodput, r.p99_s, slo)]
    hits.sort(key=lambda r: (severity(r.goodput, r.p99_s)), reverse=True)
    if p.kind == "compounding":
        head = (f"costs only {_pct(f.cost.goodput_loss)} put back into {good}, yet fixing it "
                f"alone in {flawed} gains {_pct(f.gain.goodput_gain)} on {w}")
        if hits:
            r = hits[0]
            return (f"{head}: it hurts only together with {r.partner} (on {w}, adding it to {good}+{r.partner} "
                    f"costs {_pct(r.goodput)} of goodput, {r.goodput_base:.1%} -> {r.goodput_with:.1%})")
        tried = ", ".join(p.partners) or "no other flaw"
        return f"{head}: it hurts only beside several flaws at once (no single partner among {tried})"
    head = (f"costs {_pct(f.cost.goodput_loss)} put back into {good} on {w}, yet fixing it alone in "
            f"{flawed} gains only {_pct(f.gain.goodput_gain)}")
    if hits:
        r = hits[0]
        return (f"{head}: it pairs with {r.partner} (once {r.partner} is fixed too, fixing {fid} gains "
                f"{_pct(r.goodput)} on {w}, {r.goodput_base:.1%} -> {r.goodput_with:.1%})")
    tried = ", ".join(p.partners) or "no other flaw"
    return f"{head}: several other flaws mask it at once (no single one among {tried} unmasks it)"

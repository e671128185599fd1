"""The review view: the design doc item by item, in words, in the terminal and in HTML.

The library (`harness.analysis.review.run`) decides every verdict and keeps the
figures (`harness.results.review.ReviewResult`); this module only words them.
The embedded rank, capacity (Part 2) and pool (Part 3) results are drawn by
their own views, found through the registry; the LLM follow-up's in words and
tables by `reports.llm.render_answer` (its curves only in HTML).
"""

from __future__ import annotations

import html as _html

from rich.console import Console
from rich.rule import Rule
from rich.table import Table

from harness.results.rank import NOISE_GOODPUT, NOISE_SHARE, FlawRank
from harness.results.review import Effect, ReviewItem, ReviewResult
from reports import llm as llm_view
from reports import review_followups as followups
from reports.fmt import fmt_pct, fmt_s
from reports.page import Section
from reports.rank import amplification, p99_words, short_run_words
from reports.rank_charts import p99_at, p99_pair
from reports.registry import view

__all__ = ["experiment", "gain", "measured", "narrative", "render", "sections", "title", "warning"]

_PARTS = (("capacity", "Part 2: capacity"), ("pool", "Part 3: shared GPU pool"),
          ("llm", "Follow-up: an LLM generating tokens"))


def title(result: ReviewResult) -> str:
    return f"Design review: {result.design}"


def pts(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} points"


def lat(x: float | None, outcome: str | None = None) -> str:
    """A p99: its latency, or the outcome its tail lands on ('never answered' only for those)."""
    return p99_at(x, outcome)


def _lost(e: Effect) -> str:
    if e.lost is None:
        return ""
    return f"; on {e.lost.scenario} requests lost in flight {e.lost.before:,} -> {e.lost.after:,}"


def _why(it: ReviewItem | None, result: ReviewResult | None, e: Effect, cost: bool) -> str:
    """Why a change went the unexpected way (a flaw put back that gains, a fix alone that
    loses), from what was measured: the interaction probe that found its partner, else the
    extra attempts that bought the goodput, else that nothing measured explains it."""
    rank = result.rank if result is not None else None
    plan = next((p for p in (rank.interactions or []) if it is not None and p.flaw == it.flaw), None) if rank else None
    probe = max(plan.probes, key=lambda r: r.goodput) if plan is not None and plan.probes else None
    if probe is not None and plan is not None and rank is not None and probe.goodput >= NOISE_GOODPUT:
        base = "" if probe.goodput_base is None or probe.goodput_with is None else \
            f", {fmt_pct(probe.goodput_base)} -> {fmt_pct(probe.goodput_with)}"
        return (f"alone it does no harm here; it hurts beside {probe.partner}: added to {rank.good}+{probe.partner} "
                f"on {plan.scenario} it costs {pts(probe.goodput)}{base}")
    amp = amplification(e.amplification_before, e.amplification_after)
    if amp and (e.amplification_after or 0) > (e.amplification_before or 0):
        return (f"bought with extra attempts ({amp}), load the fleet had room for here" if cost
                else f"with {e.before}'s other flaws still in, its clients make more attempts ({amp})")
    return "nothing measured here explains it; the ranking counts the worst cost"


def _figures(e: Effect, cost: bool, it: ReviewItem | None = None, result: ReviewResult | None = None) -> str:
    """'goodput a -> b (change), p99 a -> b[, timed out, failed or lost a -> b]'; the goodput
    change only when it is beyond noise. A change that goes the unexpected way (putting the
    flaw back gains; fixing it alone loses) carries its why inside that parenthesis."""
    change = ""
    if e.measurable and abs(e.change) >= NOISE_GOODPUT:
        if cost:
            change = f" ({pts(e.change)} lost)" if e.change > 0 else f" ({pts(-e.change)} gained: {_why(it, result, e, cost)})"
        else:
            change = (f" (+{pts(e.change)})" if e.change >= 0
                      else f" ({pts(e.change)}: {_why(it, result, e, cost)})")
    text = (f"goodput {fmt_pct(e.goodput_before)} -> {fmt_pct(e.goodput_after)}{change}, "
            + p99_pair(e.p99_before_s, e.p99_before_outcome, e.p99_after_s, e.p99_after_outcome,
                       (e.goodput_before, e.unserved_before), (e.goodput_after, e.unserved_after)))
    u0, u1 = e.unserved_before, e.unserved_after
    if u0 is not None and u1 is not None and abs(u1 - u0) >= NOISE_SHARE:
        text += f", timed out, failed or lost {fmt_pct(u0, 2)} -> {fmt_pct(u1, 2)}"
    return text


def warning(it: ReviewItem) -> str | None:
    """The item's warning when its runs could not show the flaw (decided in the library)."""
    return None if it.too_short is None else short_run_words(it.too_short)


def experiment(it: ReviewItem, result: ReviewResult) -> str:
    """What was run for this item."""
    runs = ", ".join(f"{w} {s:.3g} s" for w, s in it.runs_s.items())
    return (f"{it.cost.after} against {it.cost.before}, and {it.gain.after} against {it.gain.before}, "
            f"on {runs} (seed {result.seed}, same arrivals on both sides)")


def measured(it: ReviewItem, result: ReviewResult | None = None) -> str:
    """What putting the flaw back cost, where it cost most (`result`: where to find why a
    flaw put back gains)."""
    e = it.cost
    if not e.measurable:
        return f"no measurable cost on {', '.join(it.runs_s)}: on {e.scenario} {_figures(e, True)}" + _lost(e)
    text = f"worst on {e.scenario}: {_figures(e, True, it, result)}"
    amp = amplification(e.amplification_before, e.amplification_after)
    if amp:
        text += f", {amp}"
    if e.wasted_gpu_s >= 1:
        text += f", {e.wasted_gpu_s:,.0f} GPU-s more wasted"
    if e.tail is not None:
        text += (f"; its worst tail is on {e.tail.scenario}: "
                 + p99_pair(e.tail.p99_before_s, e.tail.p99_before_outcome, e.tail.p99_after_s, e.tail.p99_after_outcome))
    return text + _lost(e)


def gain(it: ReviewItem, result: ReviewResult | None = None) -> str:
    """What fixing the flaw alone in the design under review gained (`result`: where to find
    why a fix alone loses)."""
    e = it.gain
    if e.note:
        return e.note
    if not e.measurable:
        return f"fixed alone in {e.before} it gains nothing measurable: on {e.scenario} {_figures(e, False)}" + _lost(e)
    return f"fixed alone in {e.before}, best on {e.scenario}: {_figures(e, False, it, result)}" + _lost(e)


def _places(f: FlawRank) -> str:
    """', places 1-2 over 5 seeds (held 80%)' where the rank ran under several seeds."""
    o = f.over_seeds
    if o is None:
        return ""
    lo, hi = o.place_range
    where = f"place {lo}" if lo == hi else f"places {lo}-{hi}"
    return f", {where} over {len(o.places)} seeds (held {100 * o.held:.0f}%)"


def narrative(result: ReviewResult) -> list[str]:
    """Paragraphs for a person; every figure is one the review measured."""
    r = result.rank
    lines = [f"Design under review: {result.design}. Each flaw of the doc was put back alone into {r.good} "
             f"(what it costs) and fixed alone in {r.flawed} (what its fix gains), on the scenarios that "
             f"expose it and on steady: {r.runs} simulated runs, "
             + (f"seeds {', '.join(map(str, r.seeds))} (each seed ranks alone; the ranking takes the median "
                "place, the first seed's figures are quoted)" if r.seeds else f"seed {r.seed}")
             + f", SLO {fmt_s(r.slo_s)}."]
    for it in result.doc_items:
        line = (f"Item {it.item}, {it.flaw}: {it.failure}. Experiment: {experiment(it, result)}. "
                f"Measured: {measured(it, result)}. Fix: {it.fix}. Gain: {gain(it, result)}.")
        if it.too_short:
            line += f" Warning: {warning(it)}."
        if it.interaction:
            line += f" Interaction: {it.interaction}."
        lines.append(line)
    lines.append(f"Ranking ({r.score}): " + "; ".join(
        f"{f.rank}. {f.id} ({pts(f.cost.goodput_loss)} on {f.cost.scenario}{_places(f)})" for f in r.ranked()) + ".")
    top = [r.flaw(fid) for fid in r.top]
    lines.append("Insist on these before shipping: " + "; ".join(
        f"{f.id} (doc item {f.doc_item}: {pts(f.cost.goodput_loss)} of goodput lost on {f.cost.scenario}, p99 "
        f"{p99_words(f.cost)}"
        + (f", {pts(f.cost.harmed)} more of requests timed out, failed or lost" if f.cost.harmed >= NOISE_SHARE
           else "") + ")"
        for f in top) + ".")
    short = [f"{w} {p.run_s:.3g} of {p.full_s:g} s ({p.kept})"
             for w, p in r.durations.items() if p.run_s < p.full_s - 1e-9]
    if short:
        lines.append("Runs were shortened to fit (harness/analysis/shorten.py): " + "; ".join(short) + ".")
    if result.llm is not None:
        lines.extend(llm_view.answer(result.llm))
    if result.alerts is not None:
        lines.extend(followups.alerts_lines(result.alerts))
    if result.canary is not None:
        lines.extend(followups.canary_lines(result.canary))
    return lines + list(result.notes)


_FIELDS = ("flaw", "experiment", "warning", "measured", "fix", "gain", "interaction")


def _cells(it: ReviewItem, result: ReviewResult) -> dict[str, str | None]:
    return {"item": it.item, "flaw": f"{it.flaw}: {it.failure}", "experiment": experiment(it, result),
            "warning": warning(it), "measured": measured(it, result), "fix": it.fix, "gain": gain(it, result),
            "interaction": it.interaction}


def render(result: ReviewResult, console: Console) -> None:
    lines = narrative(result)
    console.print(Rule(f"design review: {result.design}"))
    console.print(lines[0], highlight=False)
    for it in result.doc_items:
        console.print()
        where = "Implicit flaw" if it.item == "implicit" else f"Item {it.item}"
        console.print(f"[bold]{where}: {it.flaw}[/] (rank {it.rank})", highlight=False)
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True, style="bold", min_width=13)
        grid.add_column(overflow="fold")
        cells = _cells(it, result)
        cells["flaw"] = it.failure
        for key in _FIELDS:
            if cells[key]:
                grid.add_row(f"  {key}", str(cells[key]))
        console.print(grid, highlight=False)
    console.print()
    console.print(Rule("ranking"))
    view("rank").render(result.rank, console)
    for key, heading in _PARTS:
        part = getattr(result, key)
        if part is not None:
            console.print()
            console.print(Rule(heading))
            (llm_view.render_answer if key == "llm" else view(key).render)(part, console)
    if result.alerts is not None:
        console.print()
        console.print(Rule("follow-up: dashboards and alerts"))
        followups.render_alerts(result.alerts, console)
    if result.canary is not None:
        console.print()
        console.print(Rule("follow-up: canary rollouts"))
        followups.render_canary(result.canary, console)
    for note in result.notes:
        console.print(f"[dim]note:[/] {note}", highlight=False)
    if result.wall_s:
        console.print(f"review took {result.wall_s:.0f} s.", highlight=False)


def items_table(result: ReviewResult) -> str:
    cols = ("item", "flaw", "experiment", "measured", "fix", "gain")
    head = "".join(f"<th class='l'>{c}</th>" for c in cols)
    rows = []
    for it in result.doc_items:
        cells = _cells(it, result)
        if cells["warning"]:
            cells["measured"] = f"WARNING: {cells['warning']}. {cells['measured']}"
        rows.append("<tr>" + "".join(f"<td class='l'>{_html.escape(cells[c] or '-')}</td>" for c in cols) + "</tr>")
    return f"<table class='data'><tr>{head}</tr>{''.join(rows)}</table>"


def verdict_html(result: ReviewResult) -> str:
    """The review's verdict in one line (the top three flaws to fix), and links to its parts."""
    r = result.rank
    top = "; ".join(f"{f.id} (doc item {f.doc_item}: {pts(f.cost.goodput_loss)} of goodput lost on {f.cost.scenario})"
                    for f in (r.flaw(fid) for fid in r.top))
    parts = [("review-words", "the review in words"), ("review-items", "item by item")]
    parts += [(f"review-{key}", heading) for key, heading in _PARTS if getattr(result, key) is not None]
    links = " · ".join(f"<a href='#{a}'>{_html.escape(t)}</a>" for a, t in parts)
    return (f"<p class='verdict'><b>{_html.escape(result.design)}: insist on fixing {_html.escape(top) or 'nothing measured'}"
            f".</b></p><p class='links'>Read on: {links}</p>")


def sections(result: ReviewResult) -> list[Section]:
    """The verdict and the ranking chart (the lead), the review in words, the doc item by item,
    then the rest of the rank, capacity and pool sections."""
    paras = "".join(f"<p>{_html.escape(p)}</p>" for p in narrative(result))
    rank_lead = [s for s in view("rank").sections(result.rank) if s.lead and s.figure is not None]
    out = [
        Section("verdict: the flaws to fix first", html=verdict_html(result), lead=True),
        *rank_lead,
        Section("the review, in words", html=paras, anchor="review-words",
                note=f"Design under review: {result.design}. Every figure quoted was measured."),
        Section("the design doc, item by item", html=items_table(result), anchor="review-items",
                note="For each item: the flaw, the experiment that exposes it, what it cost, the fix "
                     "and what the fix gained."),
    ]
    out.extend(s for s in view("rank").sections(result.rank) if not s.lead)
    for key, heading in _PARTS:
        part = getattr(result, key)
        if part is not None:
            out.extend(Section(f"{heading}: {s.title}", s.figure, s.html, s.note,
                               anchor=f"review-{key}" if i == 0 else None)
                       for i, s in enumerate(view(key).sections(part)))
    return out + followups.sections(result.alerts, result.canary)

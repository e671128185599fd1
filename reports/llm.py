"""The `llm` view: LLM batching policies side by side, terminal and HTML.

Reads only the typed result (``harness.results.llm.LlmResult``): the capacity
ratios and their measured reasons first (the answer to "how does batching change
for an LLM?"), then each policy's throughput-vs-TPOT curve with its knee (and,
on a mix split among tenants, the worst TTFT p99 of the tenants other than the
one asking for the most tokens), and
the LLM flaws where the result carries them (the review's LLM part).
`answer(result)` words the same figures as paragraphs for the review.
"""

from __future__ import annotations

import html as _html
from typing import Any

import plotly.graph_objects as go
from rich import box
from rich.console import Console
from rich.table import Table

from harness.results.llm import CapacityRatio, Curve, LlmFlawCost, LlmResult
from harness.results.stats import Interval
from reports.charts import FONT, SIDE_COLORS, layout
from reports.fmt import fmt_ms, fmt_n, fmt_pct, fmt_s, fmt_x
from reports.page import Section

__all__ = ["answer", "cache_answer", "curve_figure", "flaw_rows", "ranking", "ratio_rows", "render", "render_answer", "run_rows", "sections",
           "seed_rows", "symptom_words", "title"]

RATIO_HEADERS = ("mix", "A tok/s @SLO", "B tok/s @SLO", "B/A", "A tok/s @TPOT", "B tok/s @TPOT", "B/A @TPOT",
                 "A idle slots", "A padding", "A wait p50", "B wait p50", "rows/step A", "useful rows A", "rows/step B",
                 "B preempt")


def title(result: LlmResult) -> str:
    return "LLM serving: " + " vs ".join(result.settings.policies)


def _ratio(x: float | None, a: float | None) -> str:
    if x is not None:
        return fmt_x(x, 1)
    return "∞ (A never meets it)" if a is None else "-"


def ratio_rows(result: LlmResult) -> list[tuple[str, ...]]:
    """One row per mix: each side's capacity under the SLO and under TPOT alone, and the reasons."""
    def row(c: CapacityRatio) -> tuple[str, ...]:
        return (c.mix, fmt_n(c.a_tok_s), fmt_n(c.b_tok_s), _ratio(c.ratio, c.a_tok_s),
                fmt_n(c.a_tpot_tok_s), fmt_n(c.b_tpot_tok_s), _ratio(c.tpot_ratio, c.a_tpot_tok_s),
                fmt_pct(c.a_idle_slot_share, 0), fmt_pct(c.a_padding_share, 0), fmt_s(c.a_queue_wait_p50_s, "-"),
                fmt_s(c.b_queue_wait_p50_s, "-"), fmt_n(c.a_mean_decode_rows), fmt_n(c.a_useful_decode_rows),
                fmt_n(c.b_mean_decode_rows),
                "-" if c.b_preemptions is None else f"{c.b_preemptions:,}")
    return [row(c) for c in result.ratios]


def _slo_line(result: LlmResult) -> str:
    s = result.settings
    return (f"SLO: {fmt_pct(s.attainment, 0)} of requests with TTFT <= {fmt_s(s.slo_ttft_s)} and TPOT <= "
            f"{fmt_s(s.slo_tpot_s)}; @TPOT: p90 TPOT <= {fmt_s(s.slo_tpot_s)} alone. "
            f"{s.duration_s:g} s of arrivals per point, seed {s.seed}. Reasons measured at A's best point.")


def _curve_table(curve: Curve) -> Table:
    table = Table(title=f"{curve.policy} on {curve.mix}", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    tenants = any(p.small_tenants_ttft_p99_s is not None for p in curve.points)  # a mix split among tenants
    for col in ("req/s", "out tok/s", "TPOT p50 ms", "TPOT p90 ms", "TTFT p90", *(("others'\nTTFT p99",) if tenants
                                                                                   else ()), "SLO", ""):
        table.add_column(col, justify="right", no_wrap=True)
    for i, p in enumerate(curve.points):
        table.add_row(f"{p.rate_rps:.3g}", fmt_n(p.output_tok_s), fmt_ms(p.tpot_p50_s), fmt_ms(p.tpot_p90_s),
                      fmt_s(p.ttft_p90_s), *((fmt_s(p.small_tenants_ttft_p99_s, "-"),) if tenants else ()),
                      "[green]yes[/]" if p.meets_slo else "[red]no[/]", "knee" if i == curve.knee else "")
    return table


RUN_HEADERS = ("policy, mix", "req/s", "TTFT p50 ms", "TTFT p90 ms", "TPOT p50 ms", "TPOT p90 ms",
               "ITL p99 ms", "out tok/s", "done")


# The figure columns of RUN_HEADERS in the terminal: two lines each, the unit in the table's title.
TERMINAL_RUN_HEADERS = ("req/s", "TTFT\np50", "TTFT\np90", "TPOT\np50", "TPOT\np90", "ITL\np99", "out\ntok/s",
                        "done")


def run_rows(result: LlmResult) -> list[tuple[str, ...]]:
    """One row per run (the live compare's view: each policy live and in sim)."""
    return [(f"{r.policy}, {r.mix}", f"{r.rate_rps:g}", fmt_ms(r.ttft_s.p50), fmt_ms(r.ttft_s.p90), fmt_ms(r.tpot_s.p50),
             fmt_ms(r.tpot_s.p90), fmt_ms(r.itl_s.p99), fmt_n(r.output_tok_s), f"{r.finished}/{r.requests}")
            for r in result.runs]


def _run_table(result: LlmResult) -> Table:
    """The live compare's runs at 80 columns: figures whole on one line under two-line headers
    (milliseconds said once, in the title); the "policy, mix" label alone may wrap, at its spaces."""
    table = Table(title=f"{title(result)} (latencies in ms)", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    table.add_column(RUN_HEADERS[0], overflow="fold")
    for h in TERMINAL_RUN_HEADERS:
        table.add_column(h, justify="right", no_wrap=True)
    for row in run_rows(result):
        table.add_row(*row)
    return table


def symptom_words(f: LlmFlawCost) -> str:
    """The flaw's symptom present -> fixed, in words with its unit."""
    if f.symptom == "itl_max_s":
        return f"longest decode stall {fmt_ms(f.symptom_present)} -> {fmt_ms(f.symptom_fixed)} ms"
    if f.symptom == "small_tenants_ttft_p99_s":
        return (f"other tenants' worst TTFT p99 {fmt_s(f.symptom_present, '-')} -> "
                f"{fmt_s(f.symptom_fixed, '-')}")
    if f.symptom == "ttft_p50_s":
        hit = ("" if f.prefix_hit_present is None else
               f", prefix hit rate {fmt_pct(f.prefix_hit_present, 0)} -> {fmt_pct(f.prefix_hit_fixed, 0)}")
        return f"TTFT p50 {fmt_s(f.symptom_present, '-')} -> {fmt_s(f.symptom_fixed, '-')}{hit}"
    name = "SLO attainment" if f.symptom == "slo_attainment" else f.symptom
    return f"{name} {fmt_pct(f.symptom_present, 0)} -> {fmt_pct(f.symptom_fixed, 0)}"


FLAW_HEADERS = ("flaw", "mix", "symptom", "goodput req/s", "TTFT p50", "present -> fixed")


def flaw_rows(result: LlmResult) -> list[tuple[str, ...]]:
    """One row per (flaw, exposing mix): its symptom, goodput and TTFT with the flaw present and fixed,
    and the knobs (last: the terminal table leaves them to the words)."""
    return [(f.id, f.mix, symptom_words(f), f"{fmt_n(f.goodput_present_rps)} -> {fmt_n(f.goodput_fixed_rps)}",
             f"{fmt_s(f.ttft_p50_present_s)} -> {fmt_s(f.ttft_p50_fixed_s)}", f"{f.present} -> {f.fixed}")
            for f in result.flaws]


def _item(doc_item: str) -> str:
    return "implicit in the doc" if doc_item.startswith("(") else f"doc item {doc_item}"


def _why(c: CapacityRatio) -> str:
    return (f"measured at {c.a}'s best point ({c.at_rate_rps:g} req/s), {fmt_pct(c.a_idle_slot_share, 0)} of its "
            f"slot-tokens sat idle (finished sequences held until the batch's longest ended) and "
            f"{fmt_pct(c.a_padding_share, 0)} of its prefill tokens were padding, so only "
            f"{fmt_n(c.a_useful_decode_rows)} of its {fmt_n(c.a_mean_decode_rows)} decode rows per step made a token, "
            f"against {fmt_n(c.b_mean_decode_rows)} for {c.b}; a request waited {fmt_s(c.a_queue_wait_p50_s, '-')} (p50) for a batch to form and the one "
            f"ahead to finish (head-of-line), against {fmt_s(c.b_queue_wait_p50_s, '-')}; {c.b} preempted "
            f"{c.b_preemptions or 0:,} sequences")


def answer(result: LlmResult) -> list[str]:
    """The follow-up "an LLM generates tokens one at a time: how does batching change?" in paragraphs;
    every figure is one the result holds."""
    s = result.settings
    lines = [f"Follow-up, an LLM generating tokens one at a time: batching moves from requests to iterations. "
             f"{' and '.join(s.policies)} served the same seeded arrivals at {len(s.rates_rps)} rates "
             f"({s.duration_s:g} s each) on the {' and '.join(s.mixes)} length mixes; throughput is output tokens/s."]
    for c in result.ratios:
        slo = (f"under the full SLO ({fmt_pct(s.attainment, 0)} of requests within TTFT {fmt_s(s.slo_ttft_s)} and "
               f"TPOT {fmt_s(s.slo_tpot_s)}) " + (f"{fmt_n(c.b_tok_s)} against {fmt_n(c.a_tok_s)} ({fmt_x(c.ratio, 1)})"
                                                   if c.ratio is not None else
                                                   f"{c.b} serves {fmt_n(c.b_tok_s)} and {c.a} never meets it"))
        lines.append(f"On {c.mix}: at equal TPOT (p90 <= {fmt_s(s.slo_tpot_s)}) {c.b} serves "
                     f"{fmt_n(c.b_tpot_tok_s)} against {c.a}'s {fmt_n(c.a_tpot_tok_s)}, "
                     f"{_ratio(c.tpot_ratio, c.a_tpot_tok_s)}; {slo}. Why: {_why(c)}.")
    if result.flaws:
        lines.append("The doc's flaws applied to an LLM, each put in and fixed on the same arrivals: " + "; ".join(
            f"{f.id} ({_item(f.doc_item)}) on {f.mix} at {f.rate_rps:g} req/s, {f.present} -> {f.fixed}: "
            f"{symptom_words(f)}, goodput {fmt_n(f.goodput_present_rps)} -> {fmt_n(f.goodput_fixed_rps)} req/s, "
            f"TTFT p50 {fmt_s(f.ttft_p50_present_s)} -> {fmt_s(f.ttft_p50_fixed_s)}" for f in result.flaws) + ".")
    lines.extend(cache_answer(result.flaws))
    return lines


def cache_answer(flaws: list[LlmFlawCost]) -> list[str]:
    """"Does the cache earn its place?" for generated text: the doc's exact-payload cache against the prefix
    cache on the same fleet day, from the no-prefix-cache flaw's figures (none measured: no line)."""
    f = next((c for c in flaws if c.exact_repeat_share is not None and c.tokens_saved_fixed is not None
              and c.prompt_tokens), None)
    if f is None or f.prompt_tokens is None or f.tokens_saved_fixed is None or f.exact_repeat_share is None:
        return []
    saved = f.tokens_saved_fixed / f.prompt_tokens
    verdict = ("the prefix cache earns its place and the exact-response cache does not"
               if saved > f.exact_repeat_share else "the exact-response cache serves as much as the prefix cache")
    return [f"Does the cache earn its place (doc item 3) for generated text? On the {f.mix} day ({f.replicas} replicas, "
            f"{f.rate_rps:g} req/s) an exact-response cache, even unbounded, could answer "
            f"{fmt_pct(f.exact_repeat_share, 1)} of requests: a chat prompt carries its conversation's history and a "
            f"new question, so it never repeats whole, and a sampled answer replayed is not one the user would have "
            f"drawn. The prefix cache on the same day served {fmt_pct(saved, 0)} of prompt tokens "
            f"({f.tokens_saved_fixed:,} of {f.prompt_tokens:,}) from blocks already computed, TTFT p50 "
            f"{fmt_s(f.ttft_p50_present_s, '-')} without it -> {fmt_s(f.ttft_p50_fixed_s, '-')} with it, goodput "
            f"{fmt_n(f.goodput_present_rps)} -> {fmt_n(f.goodput_fixed_rps)} req/s: {verdict}."]


def _flaw_table(result: LlmResult) -> Table:
    """The flaws in 80 columns: the flaw over its mix in one cell, the symptom in words that
    may wrap, the figures whole (the knobs are left to the words)."""
    table = Table(title="LLM flaws, present -> fixed", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    table.add_column("flaw, on mix", no_wrap=True)
    table.add_column(FLAW_HEADERS[2], overflow="fold")
    for h in FLAW_HEADERS[3:-1]:
        table.add_column(h, no_wrap=True)
    for fid, mix, *rest in flaw_rows(result):
        table.add_row(f"{fid}\non {mix}", *rest[:-1])
    return table


def ranking(result: LlmResult) -> str | None:
    """Which side serves more output tokens/s within the SLO, mix by mix (None: no ratios)."""
    if not result.ratios:
        return None
    parts = []
    for c in result.ratios:
        a_cap, b_cap = c.a_tok_s or 0.0, c.b_tok_s or 0.0
        if a_cap == b_cap:
            parts.append(f"on {c.mix} neither ranks first ({fmt_n(c.a_tok_s)} tok/s within the SLO each)")
            continue
        first, second = (c.b, c.a) if b_cap > a_cap else (c.a, c.b)
        times = (f", {fmt_x(max(a_cap, b_cap) / min(a_cap, b_cap), 1)}" if min(a_cap, b_cap) > 0
                 else f"; {second} never meets the SLO")
        parts.append(f"on {c.mix} {first} ranks first: {fmt_n(max(a_cap, b_cap))} against "
                     f"{fmt_n(min(a_cap, b_cap))} output tok/s within the SLO{times}")
    return "Ranking: " + "; ".join(parts) + "."


SEED_ROWS = (("A tok/s @SLO", "a_tok_s", fmt_n), ("B tok/s @SLO", "b_tok_s", fmt_n),
             ("B/A", "ratio", lambda x: fmt_x(x, 2)), ("B/A @TPOT", "tpot_ratio", lambda x: fmt_x(x, 2)))


def _interval(i: Interval, fmt: Any) -> str:
    if i.mean is None:
        return f"- ({i.missing} of {i.n} seeds had none)"
    if i.lo is None or i.hi is None:
        return fmt(i.mean)
    return f"{fmt(i.mean)} [{fmt(i.lo)}, {fmt(i.hi)}]"


def seed_rows(result: LlmResult) -> list[tuple[str, ...]]:
    """Per capacity figure, its mean [95% interval] over the seeds on each mix."""
    over = result.over_seeds
    if over is None:
        return []
    mixes = list(over.ratios)
    return [(name, *(_interval(over.ratios[m][key], fmt) for m in mixes)) for name, key, fmt in SEED_ROWS]


def _render_seeds(result: LlmResult, console: Console) -> None:
    over = result.over_seeds
    if over is None or not over.ratios:
        return
    table = Table(title=f"Over {len(over.seeds)} seeds ({over.seeds[0]}..{over.seeds[-1]}): mean [95% interval]",
                  box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    table.add_column("", no_wrap=True)
    for mix in over.ratios:
        table.add_column(mix, justify="right")
    for row in seed_rows(result):
        table.add_row(*row)
    console.print(table)


def render(result: LlmResult, console: Console) -> None:
    if result.settings.targets:
        from reports.llm_url import render_url

        render_url(result, console)
    if not result.curves and not result.settings.targets:
        console.print(_run_table(result))
    _render_ratios(result, console)
    _render_seeds(result, console)
    for curve in result.curves:
        console.print(_curve_table(curve))
    if result.flaws:
        console.print(_flaw_table(result))


def _render_ratios(result: LlmResult, console: Console) -> None:
    if not result.ratios:
        return
    a, b = result.ratios[0].a, result.ratios[0].b
    table = Table(title=f"Output tokens/s at the same SLO: {a}, {b}" if result.settings.targets else
                  f"Output tokens/s at the same SLO: A = {a}, B = {b}", box=box.SIMPLE_HEAD,
                  pad_edge=False, padding=(0, 1))
    rows = ratio_rows(result)
    table.add_column("", no_wrap=True)
    for row in rows:
        table.add_column(row[0], justify="right")
    # URL targets: the engine's reasons (slots, padding, rows per step) are not measured from outside.
    shown = RATIO_HEADERS[1:7] if result.settings.targets else RATIO_HEADERS[1:]
    for k, header in enumerate(shown, 1):  # metrics down, mixes across: fits 80 columns
        table.add_row(header, *(row[k] for row in rows))
    console.print(table)
    console.print(_slo_line(result) if not result.settings.targets else _slo_line(result).replace(
        " Reasons measured at A's best point.", ""), style="dim", highlight=False)
    line = ranking(result)
    if line:
        console.print(line, style="bold", highlight=False)


def render_answer(result: LlmResult, console: Console) -> None:
    """The review's LLM part in the terminal: the answer in words, the ratios and the flaws (the
    curves stay in the HTML and in `harness compare`)."""
    for line in answer(result):
        console.print(line, highlight=False)
    _render_ratios(result, console)
    if result.flaws:
        console.print(_flaw_table(result))


def curve_figure(result: LlmResult, mix: str) -> go.Figure:
    """Output tokens/s (x) against TPOT p50 (y) per policy over the rate sweep; the knee is a diamond."""
    fig = go.Figure()
    for k, curve in enumerate(c for c in result.curves if c.mix == mix):
        color = SIDE_COLORS[k % len(SIDE_COLORS)]
        pts = [p for p in curve.points if p.tpot_p50_s is not None]
        fig.add_trace(go.Scatter(x=[p.output_tok_s for p in pts], y=[p.tpot_p50_s * 1000 for p in pts if p.tpot_p50_s is not None],
                                 mode="lines+markers", name=curve.policy, line=dict(color=color),
                                 text=[f"{p.rate_rps:g} req/s" for p in pts]))
        if curve.knee is not None:
            knee = curve.points[curve.knee]
            fig.add_trace(go.Scatter(x=[knee.output_tok_s], y=[(knee.tpot_p50_s or 0) * 1000], mode="markers",
                                     marker=dict(symbol="diamond", size=14, color=color),
                                     name=f"{curve.policy} knee ({knee.rate_rps:g} req/s)"))
    fig.add_hline(y=result.settings.slo_tpot_s * 1000, line_dash="dot", annotation_text="TPOT SLO",
                  annotation_font=FONT)
    fig.update_xaxes(title_text="output tokens/s")
    fig.update_yaxes(title_text="TPOT p50 (ms)")
    return layout(fig, f"Throughput vs TPOT: {mix}")


def _html_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    head = "".join(f"<th>{_html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def sections(result: LlmResult) -> list[Section]:
    out = []
    if result.settings.targets:
        from reports.llm_url import counted_line, search_line, target_lines

        lines = [line for t in result.settings.targets for line in target_lines(t)]
        lines += [f"{r.policy}, {r.mix} at {r.rate_rps:g} req/s: {counted_line(r)}" for r in result.runs]
        if result.search is not None:
            lines.append(search_line(result))
        out.append(Section("URL targets: how they were driven", html="<br>".join(_html.escape(x) for x in lines)))
    if not result.curves:
        out.append(Section("Runs", html=_html_table(RUN_HEADERS, run_rows(result))))
    if result.settings.targets:
        from reports.llm_traffic import traffic_sections
        from reports.server_charts import server_sections

        out += traffic_sections(result)
        out += server_sections(result)
    if result.ratios:
        out.append(Section("Continuous vs run-to-completion batching at the same SLO" if not result.settings.targets
                           else "B against A at the same SLO",
                           html=_html_table(RATIO_HEADERS, ratio_rows(result)),
                           note=_slo_line(result) + " " + (ranking(result) or "")))
    if result.over_seeds is not None and result.over_seeds.ratios:
        over = result.over_seeds
        out.append(Section(f"Over {len(over.seeds)} seeds: mean [95% interval]",
                           html=_html_table(("", *over.ratios), seed_rows(result)),
                           note="Each seed draws its own arrivals, the same for both policies."))
    for mix in sorted({c.mix for c in result.curves}, key=result.settings.mixes.index):
        out.append(Section(f"Throughput vs TPOT: {mix}", figure=curve_figure(result, mix),
                           note="Each point is one offered rate; the diamond is the knee (Kneedle's rule)."))
    if result.flaws:
        out.append(Section("LLM flaws, present -> fixed", html=_html_table(FLAW_HEADERS, flaw_rows(result)),
                           note="Each flaw's knobs put in and fixed on the same arrivals of a mix that exposes it."))
    return out

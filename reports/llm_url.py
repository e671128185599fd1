"""The URL parts of the `llm` view: what the harness read from an OpenAI-compatible server.

For each run against a URL: TTFT, ITL, TPOT and E2E percentiles, goodput under the
TTFT + TPOT SLO, per tenant where the mix has several; how its answers were counted
(usage or chunks) and how its prompts were sized (calibrated from the server's usage,
a tokenizer, or assumed). A sweep says the highest rate within the SLO. Reads only
`harness.results.llm`.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from harness.results.llm import LlmResult, LlmRun, UrlTargetSettings
from reports.fmt import fmt_ms, fmt_n, fmt_pct
from reports.llm_traffic import concurrency_table, traffic_line, turn_table

__all__ = ["counted_line", "figure_rows", "render_url", "run_rows", "search_line", "side", "target_lines",
           "tenant_rows"]

FIGURE_HEADERS = ("ms", "mean", "p50", "p90", "p99", "max")
RUN_HEADERS = ("target", "req/s", "done", "t/o", "err", "cut", "short", "count")
TENANT_HEADERS = ("tenant", "requests", "done", "shed", "TTFT p99 ms", "TPOT p99 ms", "goodput req/s")


def figure_rows(run: LlmRun) -> list[tuple[str, ...]]:
    """TTFT, ITL, TPOT and E2E down; mean and percentiles across (ms)."""
    return [(name, fmt_ms(p.mean), fmt_ms(p.p50), fmt_ms(p.p90), fmt_ms(p.p99), fmt_ms(p.max))
            for name, p in (("TTFT", run.ttft_s), ("ITL", run.itl_s), ("TPOT", run.tpot_s), ("E2E", run.e2e_s))]


def tenant_rows(run: LlmRun) -> list[tuple[str, ...]]:
    return [(name, f"{t.requests:,}", f"{t.finished:,}", f"{t.shed:,}", fmt_ms(t.ttft_s.p99), fmt_ms(t.tpot_s.p99),
             fmt_n(t.goodput_rps)) for name, t in run.per_tenant.items()]


def side(label: str) -> str:
    """A compare's side, "A" or "B", of its label ("A 127.0.0.1:8001/v1/completions": the lines
    above the table name each side's URL), so a long URL does not cut the table; else the label."""
    head, _, rest = label.partition(" ")
    return head if rest and head in ("A", "B") else label


def run_rows(result: LlmResult) -> list[tuple[str, ...]]:
    """One row per run: answered of sent, and how its answers ended and were counted (the target named
    first when there are several)."""
    rows = []
    several = len(result.settings.targets or []) > 1
    for r in result.runs:
        u = r.url
        rows.append((*((side(r.policy),) if several else ()), f"{r.rate_rps:.3g}", f"{r.finished:,}/{r.requests:,}",
                     *((f"{u.timed_out:,}", f"{u.errors:,}", f"{u.cut:,}", f"{u.short_answers:,}", u.token_count or "-")
                       if u is not None else ("-",) * 5)))
    return rows


def counted_line(run: LlmRun) -> str:
    u = run.url
    if u is None:
        return ""
    how = {"usage": "from the server's usage", "chunks": "from content chunks (the server sent no usage)",
           "mixed": f"from usage for {u.counted_by_usage:,} answers, from chunks for {u.counted_by_chunks:,}",
           None: "(no answer finished)"}[u.token_count]
    text = (f"{run.finished:,}/{run.requests:,} answered, {u.tokens:,} output tokens counted {how} in "
            f"{u.chunks:,} chunks")
    extra = [f"{n:,} {what}" for n, what in ((u.timed_out, "timed out"), (u.errors, "errors"), (u.cut, "cut short"),
                                             (u.short_answers, "shorter than max_tokens"), (run.shed, "shed (429)"))
             if n]
    if u.prompt_tokens_error is not None:
        extra.append(f"prompts {fmt_n(u.prompt_tokens_mean)} tokens (target {fmt_n(u.prompt_tokens_target_mean)}, "
                     f"off by {fmt_pct(u.prompt_tokens_error)} on average)")
    if u.first_errors:
        extra.append(f"first error: {u.first_errors[0]}")
    return text + ("; " + "; ".join(extra) if extra else "")


def target_lines(t: UrlTargetSettings) -> list[str]:
    sent = ", ".join(x for x in ("ignore_eos" if t.ignore_eos else "", "stream_options.include_usage"
                                 if t.include_usage else "", *t.extra_fields) if x) or "nothing extra"
    key = f"API key from ${t.api_key_env}" if t.api_key_sent else f"no API key (${t.api_key_env} unset)"
    return [f"{t.label}: {t.url}, {t.api} API, model {t.model!r}", f"  sent {sent}; {key}",
            f"  each request abandoned {t.request_timeout_s:g} s after its scheduled start",
            f"  prompts: {t.prompt_sizing}"] + [f"  note: {n}" for n in t.notes]


def search_line(result: LlmResult) -> str:
    s = result.search
    if s is None:
        return ""
    best = ("no rate met the SLO" if s.max_rate_within_slo is None
            else f"highest rate within the SLO: {s.max_rate_within_slo:.3g} req/s")
    fail = f"; first failing rate {s.first_failing_rate:.3g} req/s" if s.first_failing_rate else ""
    return (f"{s.target} on {s.mix}: {best}{fail} ({s.steps} steps of {s.step_duration_s:g} s from "
            f"{s.start_rps:g} req/s, to {s.rel_tol:.0%})")


def _figure_table(run: LlmRun) -> Table:
    table = Table(title=f"{run.policy}: {run.mix} at {run.rate_rps:g} req/s", box=box.SIMPLE_HEAD,
                  pad_edge=False, padding=(0, 1))
    for h in FIGURE_HEADERS:
        table.add_column(h, justify="right" if h != "ms" else "left", no_wrap=True)
    for row in figure_rows(run):
        table.add_row(*row)
    return table


def render_url(result: LlmResult, console: Console) -> None:
    """Per target how it was driven; a single run's figures in full; a sweep's verdict."""
    s = result.settings
    for t in s.targets or []:
        for line in target_lines(t):
            console.print(line, highlight=False, soft_wrap=False)
    slo = (f"SLO: TTFT <= {s.slo_ttft_s * 1000:,.0f} ms and TPOT <= {s.slo_tpot_s * 1000:,.0f} ms for "
           f"{fmt_pct(s.attainment, 0)} of requests")
    if result.concurrency is not None:
        console.print(concurrency_table(result.concurrency))
        console.print(f"{slo}; TTFT and E2E from each request's send", highlight=False)
        return
    if not result.curves:
        for run in result.runs:
            if run.traffic is not None:
                console.print(traffic_line(run.traffic), highlight=False)
            console.print(_figure_table(run))
            turns = turn_table(run.traffic) if run.traffic is not None else None
            if turns is not None:
                console.print(turns)
            console.print(f"goodput {fmt_n(run.goodput_rps)} req/s ({fmt_pct(run.slo_attainment)} of requests within "
                          f"the SLO); {fmt_n(run.output_tok_s)} output tokens/s. {slo}", highlight=False)
            console.print(counted_line(run), highlight=False)
            if run.server_metrics is not None:
                from reports.server_charts import server_line

                console.print(server_line(run), highlight=False)
            if len(run.per_tenant) > 1:
                table = Table(title="per tenant", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
                for h in TENANT_HEADERS:
                    table.add_column(h, justify="right" if h != "tenant" else "left", no_wrap=True)
                for row in tenant_rows(run):
                    table.add_row(*row)
                console.print(table)
        return
    table = Table(title="runs (t/o: timed out; cut: the stream ended early; short: fewer tokens than "
                  "max_tokens; count: tokens from usage or chunks)", box=box.SIMPLE_HEAD, pad_edge=False,
                  padding=(0, 1))
    for h in RUN_HEADERS if len(result.settings.targets or []) > 1 else RUN_HEADERS[1:]:
        table.add_column(h, justify="right" if h not in ("target", "count") else "left", no_wrap=True)
    for row in run_rows(result):
        table.add_row(*row)
    console.print(table)
    for run in result.runs:
        if run.url is not None and run.url.first_errors:
            console.print(f"{run.policy} at {run.rate_rps:g} req/s, first error: {run.url.first_errors[0]}",
                          highlight=False)
    if result.search is not None:
        console.print(f"[bold]{search_line(result)}[/]. {slo}", highlight=False)

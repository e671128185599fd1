"""Terminal rendering of a pool policy comparison (``compare_policies`` output).

Reads only the comparison dict, never runs a simulation. Fits 80 columns with the
four registered policies: metrics are rows, policies are columns.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from rich import box
from rich.console import Console
from rich.table import Table

__all__ = ["render_pool_compare", "render_pool_doc", "capacity_line", "verdict_lines", "plain"]

Row = tuple[str, Callable[[Mapping[str, Any]], str]]


def _s(x: float | None) -> str:
    # None means an unanswered request decided the percentile: infinitely slow.
    return "∞" if x is None else f"{x:.2f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _per_model(model: str) -> list[Row]:
    return [
        (f"{model} p50 (s)", lambda r: _s(r[model]["p50_s"])),
        (f"{model} p99 (s)", lambda r: _s(r[model]["p99_s"])),
        (f"{model} within SLO", lambda r: _pct(r[model]["slo_attainment"])),
        (f"{model} max wait (s)", lambda r: _s(r[model]["longest_wait_s"])),
        (f"{model} batch fill", lambda r: "-" if r[model]["mean_batch_size"] is None else
            f"{r[model]['mean_batch_size'] / r['config'][model]['batch_size']:.0%}"),
        (f"{model} GPU-s/req", lambda r: "-" if r[model]["gpu_s_per_request_measured"] is None
            else f"{r[model]['gpu_s_per_request_measured']:.4f}"),
    ]


METRIC_ROWS: list[Row] = _per_model("large") + _per_model("small") + [
    ("GPU utilization", lambda r: _pct(r["utilization"])),
    ("idle, large waits", lambda r: _pct(r["fragmentation_frac"])),
    ("meets SLO", lambda r: "[green]yes[/]" if r["meets_slo"] else "[red]no[/]"),
]


def capacity_line(compare: Mapping[str, Any]) -> str:
    """The capacity condition with its numbers, e.g. '... = 5.12 <= 6.40 GPU-s/s: pass'."""
    cfg, cap = compare["config"], compare["capacity"]
    lg, sm = cfg["large"], cfg["small"]
    sign, verdict = ("<=", "[green]pass[/]") if cap["ok"] else (">", "[red]FAIL[/]")
    return (f"capacity: {lg['rate_rps']:g}x{cfg['gpus']}x{lg['batch_time_s']:g}/{lg['batch_size']}"
            f" + {sm['rate_rps']:g}x{sm['batch_time_s']:g}/{sm['batch_size']}"
            f" = {cap['large_gpu_s_per_s']:.2f} + {cap['small_gpu_s_per_s']:.2f}"
            f" = {cap['lhs_gpu_s_per_s']:.2f} {sign} {cfg['gpus']}x{cfg['target_utilization']:g}"
            f" = {cap['rhs_gpu_s_per_s']:.2f} GPU-s/s: {verdict}"
            f" ({cap['utilization_needed']:.0%} busy with full batches)")


def verdict_lines(compare: Mapping[str, Any]) -> list[str]:
    """Why policies fail: the capacity reason when it fails, else each policy's symptom."""
    cap, results = compare["capacity"], compare["results"]
    slo = compare["config"]["slo_s"]
    passing = [n for n, r in results.items() if r["meets_slo"]]
    if not cap["ok"]:
        if not passing:
            return [f"[red]every policy fails[/]: {cap['reason']}"]
        return [f"capacity condition fails, yet {', '.join(passing)} met the SLO in this run: "
                f"{cap['reason']}"]
    lines = []
    for name, r in results.items():
        if r["meets_slo"]:
            continue
        lg = r["large"]
        if lg["p99_s"] is None or (lg["longest_wait_s"] or 0.0) > 5 * slo:
            lines.append(f"{name} fails although capacity suffices: the large model starves "
                         f"(longest wait {_s(lg['longest_wait_s'])} s) while "
                         f"{r['fragmentation_frac']:.0%} of GPU time sits idle waiting for all "
                         f"{compare['config']['gpus']} GPUs at once")
        else:
            late = [m for m in ("large", "small") if r[m]["p99_s"] is None or r[m]["p99_s"] > slo]
            lines.append(f"{name} fails: p99 above the {slo:g} s target for {' and '.join(late)}")
    return lines


def render_pool_compare(compare: Mapping[str, Any], console: Console) -> None:
    """Print the policies side by side, the capacity condition and why policies fail."""
    results = compare["results"]
    cfg = compare["config"]
    table = Table(title=f"{cfg['gpus']}-GPU pool, SLO {cfg['slo_s']:g} s, {cfg['duration_s']:g} s "
                        f"simulated, seed {cfg['seed']}",
                  box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    table.add_column("metric", no_wrap=True)
    for name in results:
        table.add_column(name, justify="right", no_wrap=True)
    for label, cell in METRIC_ROWS:
        table.add_row(label, *(cell(r) for r in results.values()))
    console.print(table)
    spec = {m: cfg[m] for m in ("large", "small")}
    console.print(
        f"GPU-time per request (full batch): large {cfg['gpus']}x{spec['large']['batch_time_s']:g}"
        f"/{spec['large']['batch_size']} = {_gpu_s(cfg, 'large'):.4f} GPU-s, small "
        f"{spec['small']['batch_time_s']:g}/{spec['small']['batch_size']} = {_gpu_s(cfg, 'small'):.4f}"
        f" GPU-s ({_gpu_s(cfg, 'large') / _gpu_s(cfg, 'small'):.0f}x)")
    console.print(capacity_line(compare))
    for line in verdict_lines(compare):
        console.print(line)


def _gpu_s(cfg: Mapping[str, Any], model: str) -> float:
    m = cfg[model]
    gang = cfg["gpus"] if model == "large" else 1
    return gang * m["batch_time_s"] / m["batch_size"]


def render_pool_doc(doc: Mapping[str, Any], console: Console) -> None:
    """Renderer for saved ``kind: "pool"`` documents (``harness report``)."""
    render_pool_compare(doc, console)
    for name, why in (doc.get("skipped") or {}).items():
        console.print(f"[yellow]{name} not run[/]: {why}", highlight=False)


def plain(markup: str) -> str:
    """A line without rich markup (for JSON and HTML)."""
    from rich.text import Text

    return Text.from_markup(markup).plain

"""Terminal rendering of a capacity plan (``kind: "capacity"``); fits 80 columns.

Reads only the document, never runs a simulation, so a saved plan renders again
with ``harness report FILE``.
"""

from __future__ import annotations

from typing import Any, Mapping

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

__all__ = ["render_capacity", "format_measured"]


def _ms(x: float | None) -> str:
    # None: more than 1% never answered in time, so the percentile is unbounded.
    return "∞" if x is None else f"{x * 1000:.0f}"


def _pct(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"{x:.{digits}%}"


def _gpus(x: float | int | None) -> str:
    if x is None:
        return "-"
    return f"{x:g}" if isinstance(x, int) or float(x).is_integer() else f"{x:.2f}"


def format_measured(row: Mapping[str, Any]) -> str:
    """A loss's measured value in its unit: shares as %, seconds as ms, ratios as 'x'."""
    v, unit = row["measured"], row["unit"]
    if v is None:
        return "∞" if unit.startswith("s ") else "-"
    if unit.startswith("share"):
        return f"{v:.2%}" if v < 0.01 else f"{v:.1%}"
    if unit.startswith("s "):
        return f"{v * 1000:+.0f} ms"
    if unit.startswith("x "):
        return f"{v:.2f}x"
    return f"{v:.3g}"


def _table(title: str) -> Table:
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))


def render_capacity(doc: Mapping[str, Any], console: Console) -> None:
    """Print the sizing steps, the formula over B, the losses, the curves and offline."""
    inp = doc["inputs"]
    console.print(
        f"[bold]Capacity plan[/]: {inp['qps']:,.0f} QPS, B={inp['batch_size']}, t(B) = "
        f"{inp['batch_time_s'] * 1000:.0f} ms ({inp['cost_model']}), p99 target "
        f"{inp['slo_p99_s'] * 1000:.0f} ms{', quick' if inp.get('quick') else ''}", highlight=False)
    steps = _table("From the formula to the fleet to buy")
    steps.add_column("step", no_wrap=True)
    steps.add_column("GPUs", justify="right")
    steps.add_column("+", justify="right")
    steps.add_column("why", overflow="fold")
    for s in doc.get("breakdown", []):
        d = s["delta"]
        steps.add_row(s["step"], _gpus(s["gpus"]), "" if d is None else f"{d:+g}", s["why"])
    console.print(steps)
    console.print(f"rounding: {doc['rounding']}", highlight=False)

    by_b = _table("The formula over B: GPUs = QPS x t(B) / B")
    for name in ("B", "t(B) ms", "theoretical", "GPUs", "req/s per GPU"):
        by_b.add_column(name, justify="right")
    for r in doc["table_by_b"]:
        by_b.add_row(str(r["b"]), f"{r['batch_time_s'] * 1000:.1f}", f"{r['theoretical_gpus']:.2f}",
                     str(r["formula_gpus"]), f"{r['per_gpu_rps']:,.0f}")
    console.print(by_b)

    if doc.get("losses"):
        # One line per source, its explanation indented below at full width: a three-column
        # table would wrap every explanation into a narrow column nine lines tall.
        console.print(f"[italic]Where realtime throughput goes (measured on {doc['realtime_gpus']} GPUs)[/]")
        for r in doc["losses"]:
            head = Table.grid(padding=(0, 1))
            head.add_column(width=28, overflow="fold")
            head.add_column(width=7, justify="right", no_wrap=True)
            head.add_column(overflow="fold")
            head.add_row(f"[bold]{r['source']}[/]", f"[bold]{format_measured(r)}[/]", r["unit"])
            console.print(Padding(head, (0, 0, 0, 1)))
            console.print(Padding(Text(r["explanation"], style="dim"), (0, 0, 0, 3)))
        console.print()

    if doc.get("curve"):
        curve = _table(f"Latency vs utilization at {inp['qps']:,.0f} QPS (ms)")
        for name in ("GPUs", "offered", "busy", "p50", "p99", "fill", "SLO"):
            curve.add_column(name, justify="right")
        for r in doc["curve"]:
            ok = "[green]yes[/]" if r["meets_slo"] and r["stable"] else (
                "[yellow]unstable[/]" if not r["stable"] else "[red]no[/]")
            curve.add_row(str(r["gpus"]), _pct(r["offered_utilization"], 1), _pct(r["utilization"]),
                          _ms(r["p50_s"]), _ms(r["p99_s"]), _pct(r["batch_fill"]), ok)
        console.print(curve)
        console.print("offered = QPS x t(B) / (B x GPUs); at 100% or more a queue grows without "
                      "bound however short runs look", style="dim", highlight=False)

    if doc.get("fill_vs_load"):
        fill = _table(f"Batch fill vs load on {doc['realtime_gpus']} GPUs")
        for name in ("load", "QPS", "fill", "p50 ms", "p99 ms", "GPU ms/req"):
            fill.add_column(name, justify="right")
        for r in doc["fill_vs_load"]:
            per = r["gpu_s_per_request"]
            fill.add_row(_pct(r["load_fraction"]), f"{r['rate_rps']:,.0f}", _pct(r["batch_fill"]),
                         _ms(r["p50_s"]), _ms(r["p99_s"]), "-" if per is None else f"{per * 1000:.2f}")
        console.print(fill)

    off = doc["offline"]
    console.print(
        f"[bold]Offline[/]: a backlog of {off['requests']:,} requests on {off['gpus']} GPUs, full "
        f"batches: {off['throughput_rps']:,.0f} req/s in {off['makespan_s']:.2f} s = "
        f"[bold]{off['efficiency']:.1%}[/] of the formula's {off['formula_rps']:,.0f} req/s "
        f"(fill {off['batch_fill']:.0%}, busy {off['utilization']:.0%})", highlight=False)
    rt, head = doc["realtime_gpus"], doc["realtime_with_headroom_gpus"]
    if rt is not None:
        console.print(
            f"[bold]Answer[/]: the formula says {_gpus(doc['theoretical_gpus'])} "
            f"({doc['formula_gpus']} whole GPUs); realtime at peak needs {rt} "
            f"({inp['qps'] / rt:,.0f} req/s per GPU against {inp['batch_size'] / inp['batch_time_s']:,.0f} "
            f"in a full batch); buy {_gpus(head)} for {inp.get('headroom_factor', 1.25):g}x peak "
            f"and N+1. Offline work needs only the formula's fleet.", highlight=False)
    for note in doc.get("notes", []):
        console.print(f"note: {note}", style="dim", highlight=False)

"""What a compare covers beyond its scenarios' figures, in the terminal and in HTML: an
interrupted compare's account (which scenarios finished and are judged, what ran of the rest),
and a live compare's shortening and its check against the sim on the same configs
(harness.analysis.compare.live). reports.compare places them around its tables."""

from __future__ import annotations

import html as _html

from rich import box
from rich.console import Console
from rich.table import Table

from harness.results.compare import CompareResult
from harness.results.run import RunResult
from reports.fmt import clip, fmt_s, short_share
from reports.page import Section

__all__ = ["live_sim_section", "partial_lines", "partial_section", "render_live"]


def _ran_text(label: str, run: RunResult | None) -> str:
    """'A naive ran to the end', 'B hardened cut short: 12.3 s of 600 s', 'B hardened not run'."""
    if run is None:
        return f"{label} not run"
    s = run.summary
    if not s.partial:
        return f"{label} ran to the end"
    if s.covered_s is not None and s.covered_s >= s.duration_s:
        return f"{label} cut short while its last requests were in flight"
    return f"{label} cut short: {fmt_s(s.covered_s)} of {s.duration_s:g} s"


def partial_lines(result: CompareResult) -> list[str]:
    """An interrupted compare's account (none for a whole one): which scenarios finished
    and are judged, and for each that did not, what of it ran (kept in the file, unjudged)."""
    p = result.partial
    if p is None:
        return []
    planned = len(p.finished) + len(p.unfinished)
    lines = [f"interrupted; {len(p.finished)} of {planned} scenarios finished on both sides, and only they are "
             f"judged: {', '.join(p.finished)}." if p.finished else
             f"interrupted; none of the {planned} scenarios finished on both sides: nothing is judged."]
    for w in p.unfinished:
        pair = p.runs.get(w, {})
        if pair:
            sides = [_ran_text(f"A {result.a}", pair.get(result.a)), _ran_text(f"B {result.b}", pair.get(result.b))]
            seeds = (f"seed {result.seeds[0]}: ", f"; not every seed of {len(result.seeds)} finished") \
                if result.seeds else ("", "")
            lines.append(f"{w}: not judged ({seeds[0]}{'; '.join(sides)}{seeds[1]}).")
    untouched = [w for w in p.unfinished if not p.runs.get(w)]
    if untouched:
        lines.append(f"Not started{f' (seed {result.seeds[0]})' if result.seeds else ''}: {', '.join(untouched)}.")
    return lines


def partial_section(result: CompareResult) -> list[Section]:
    """An interrupted compare's account as a section (none for a whole compare)."""
    lines = partial_lines(result)
    if not lines:
        return []
    lines[0] = lines[0][:1].upper() + lines[0][1:]
    items = "".join(f"<li>{_html.escape(line)}</li>" for line in lines)
    return [Section("Partial: interrupted", html=f"<ul>{items}</ul>")]


def _goodputs(row: dict, label: str) -> str:
    """One side's goodput share, live / sim."""
    live, simulated = row["goodput"][label]
    return f"{short_share(live or 0.0)} / {short_share(simulated or 0.0)}"


def render_live(result: CompareResult, console: Console, name_width: int) -> None:
    """A live compare: how each script was shortened, and each scenario's live winner beside
    the sim's on the same configs (harness.analysis.compare.live)."""
    block = result.live or {}
    shortened = block.get("shortened")
    if shortened:
        cut = [f"{w} {d['run_s']:.0f} s of {d['full_s']:.0f}" for w, d in shortened.items()
               if d["run_s"] < d["full_s"] - 1e-9]
        if cut:
            console.print("Shortened for live (calm cut, disturbances kept): " + ", ".join(cut) + ".",
                          highlight=False)
    sim = block.get("sim")
    if not sim:
        return
    t = Table(title="live / sim on the same configs", header_style="bold",
              box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), show_edge=False)
    t.add_column("scenario", no_wrap=True)
    t.add_column("won", justify="center", no_wrap=True)
    for side in ("A", "B"):
        t.add_column(f"{side} goodput", justify="right", no_wrap=True)
    t.add_column("", justify="center", no_wrap=True)
    for name, row in sim.items():
        cells = [_goodputs(row, label) for label in (result.a, result.b)]
        t.add_row(clip(name, name_width), f"{row['live']} / {row['sim']}", *cells,
                  "[green]=[/]" if row["agree"] else "[red]≠[/]")
    console.print(t)
    agree = sum(r["agree"] for r in sim.values())
    console.print(f"live and sim name the same winner in {agree} of {len(sim)} scenarios.", highlight=False)


def live_sim_section(result: CompareResult) -> list[Section]:
    """A live compare's scenarios run again in sim on the same configs: the two winners and goodputs."""
    sim = (result.live or {}).get("sim")
    if not sim:
        return []
    esc = _html.escape
    rows = []
    for name, row in sim.items():
        cells = "".join(f"<td>{_goodputs(row, label)}</td>" for label in (result.a, result.b))
        mark = "same" if row["agree"] else "<b>differs</b>"
        rows.append(f"<tr><td>{esc(name)}</td><td>{esc(row['live'])} / {esc(row['sim'])}</td>{cells}<td>{mark}</td></tr>")
    agree = sum(r["agree"] for r in sim.values())
    head = (f"<tr><th>scenario</th><th>won, live / sim</th><th>A ({esc(result.a)}) goodput, live / sim</th>"
            f"<th>B ({esc(result.b)}) goodput, live / sim</th><th>winner</th></tr>")
    return [Section("Live against sim on the same configs", html=f"<table>{head}{''.join(rows)}</table>",
                    note=f"each scenario run again in sim on the live runs' own fleet, workload and seed; "
                         f"live and sim name the same winner in {agree} of {len(sim)} scenarios")]

"""The gate view, for people and for CI systems: a terminal table (80 columns),
HTML, JUnit XML (one test case per check) and a Markdown table (for a pull
request comment or a CI job summary). All read only the typed result
(`harness.results.gate.GateResult`); every verdict in it was decided by
`harness.gate.check`.
"""

from __future__ import annotations

import html as _html
import math
from xml.sax.saxutils import escape, quoteattr

from rich import box
from rich.console import Console
from rich.table import Table

from harness.results.gate import CheckOutcome, GateResult
from reports.fmt import fmt_s
from reports.page import Section

__all__ = ["junit_xml", "markdown", "render", "sections", "title", "value"]


def title(result: GateResult) -> str:
    return f"Performance gate: {_word(result)}"


def _word(result: GateResult) -> str:
    return {"pass": "passed", "fail": "FAILED", "cannot judge": "CANNOT JUDGE"}[result.verdict]


def _source(result: GateResult) -> str:
    """Where the judged figures came from: sim runs, or the saved runs given."""
    if result.llm is not None:  # an LLM endpoint's gate (harness.gate.llm)
        urls = sorted({t.url for r in result.llm for t in r.settings.targets or []})
        runs = f"live runs of {', '.join(urls)}" if urls else "no live run"
        return f"{runs} from {', '.join(result.results)}" if result.results else runs
    if result.results:
        modes = sorted({s.mode for sides in result.summaries.values() for s in sides.values()})
        kinds = [f"{'/'.join(modes)} runs"] if modes else []
        kinds += ["canary rollouts"] if result.canary else []
        return f"{' and '.join(kinds) or 'results'} from {', '.join(result.results)}"
    if result.seeds:
        return f"sim mode, seeds {', '.join(map(str, result.seeds))} (95% intervals)"
    return f"sim mode, seed {result.seed}"


def _interval_words(c: CheckOutcome) -> str:
    """'95% CI 129 ms..145 ms' of a check over seeds ('' with one seed or no interval)."""
    i = c.interval
    if i is None or i.lo is None or i.hi is None:
        return ""
    return f"95% CI {value(i.lo, c.key, c.paired)}..{value(i.hi, c.key, c.paired)}"


def _note(c: CheckOutcome, *prefix: str) -> str:
    return "; ".join(x for x in (*prefix, _interval_words(c), c.note) if x)


def _cannot(result: GateResult) -> list[str]:
    return [f"cannot judge: {line}" for line in result.cannot_judge]


def _seconds(key: str) -> bool:
    return any(p.endswith("_s") and not p.endswith("tok_s") for p in key.split("."))  # tok_s: tokens/s


def value(x: float | None, key: str, paired: bool) -> str:
    """A measured value or threshold as people read it (null = never answered)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "never" if _seconds(key) else "-"
    if math.isinf(x):
        return "never" if x > 0 else "-inf"
    if paired:
        return f"{x:.3g}x"
    if _seconds(key):
        return fmt_s(x)
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def _shown(c: CheckOutcome) -> str:
    return "-" if c.skipped else value(c.measured, c.key, c.paired)


def _tally(result: GateResult) -> str:
    n, failed, skipped = len(result.checks), len(result.failed), len(result.skipped)
    return (f"{n - failed - skipped} passed, {failed} failed" + (f", {skipped} skipped" if skipped else "")
            + f" of {n} checks")


def render(result: GateResult, console: Console) -> None:
    singles = {c.target for c in result.checks if not c.paired}
    main = next(iter(singles)) if len(singles) == 1 else None
    t = Table(title=f"gate {result.gate_file}" + (f" on {main}" if main else ""),
              box=box.SIMPLE_HEAD, header_style="bold",  # pad_edge=False crops a full last column (rich 15)
              collapse_padding=True)  # at 80 columns the uncollapsed columns' minimums overran: rich cropped notes
    t.add_column("")
    t.add_column("scenario", no_wrap=True)
    t.add_column("check", overflow="fold", min_width=22)
    t.add_column("measured", justify="right", no_wrap=True)
    t.add_column("note", overflow="fold")
    for c in result.checks:
        mark = {"pass": "[green]pass[/]", "FAIL": "[bold red]FAIL[/]", "skip": "[yellow]skip[/]"}[c.status]
        note = _note(c, "" if c.target == main or c.paired else c.target)
        t.add_row(mark, c.scenario, c.check, _shown(c), note)
    console.print(t)
    verdict = {"pass": "[bold green]PASSED[/]", "fail": "[bold red]FAILED[/]",
               "cannot judge": "[bold red]CANNOT JUDGE[/]"}[result.verdict]
    wall = f" ({result.wall_s:.1f} s)" if result.wall_s else ""
    # Wrapped at spaces (an LLM gate's source is a URL): every line within the terminal.
    console.print(f"{verdict}: {_tally(result)}{wall}; {_source(result)}.", highlight=False)
    for line in _cannot(result):
        console.print(f"  {line}", highlight=False)


def sections(result: GateResult) -> list[Section]:
    """One table of the checks, failures first."""
    checks = sorted(result.checks, key=lambda c: c.passed)
    cols = ("scenario", "target", "check", "threshold", "measured", "passed", "note")
    head = "".join(f"<th class='l'>{c}</th>" for c in cols)
    rows = []
    for c in checks:
        cells = {"scenario": c.scenario, "target": c.target, "check": c.check,
                 "threshold": "-" if c.skipped else f"{c.op} {value(c.threshold, c.key, c.paired)}",
                 "measured": _shown(c), "note": _note(c) or "-"}
        tds = [f"<td class='l'>{_html.escape(cells[k])}</td>" if k != "passed" else
               {"pass": "<td class='l good'>pass</td>", "FAIL": "<td class='l bad'>FAIL</td>",
                "skip": "<td class='l'>skip</td>"}[c.status] for k in cols]
        rows.append("<tr>" + "".join(tds) + "</tr>")
    verdict = ("<p class='good'><b>PASSED</b>: " if result.passed else f"<p class='bad'><b>{_word(result)}</b>: ")
    verdict += f"{_html.escape(_tally(result))} ({_html.escape(_source(result))}).</p>"
    verdict += "".join(f"<p class='bad'>{_html.escape(line)}</p>" for line in _cannot(result))
    return [Section(f"gate {result.gate_file}",
                    html=verdict + f"<table class='data'><tr>{head}</tr>{''.join(rows)}</table>")]


def junit_xml(result: GateResult) -> str:
    """JUnit XML: one <testcase> per check, classname = scenario.target."""
    checks = result.checks
    failures, skipped = len(result.failed), len(result.skipped)
    errors = 1 if result.cannot_judge else 0
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<testsuites tests="{len(checks) + errors}" failures="{failures}" errors="{errors}" skipped="{skipped}">',
             f'  <testsuite name={quoteattr("harness gate " + result.gate_file)} tests="{len(checks) + errors}" '
             f'failures="{failures}" errors="{errors}" skipped="{skipped}" time="{result.wall_s or 0:.3f}">']
    if errors:  # an invalid run: the gate could not judge, which is neither a pass nor a failure
        why = "; ".join(result.cannot_judge)
        lines.append(f'    <testcase classname="gate" name="valid runs"><error message={quoteattr(why)}>'
                     f"{escape(why)}</error></testcase>")
    for c in checks:
        detail = (f"measured {value(c.measured, c.key, c.paired)}, threshold "
                  f"{c.op} {value(c.threshold, c.key, c.paired)}" + (f"; {c.note}" if c.note else ""))
        name = quoteattr(c.check)
        cls = quoteattr(f"{c.scenario}.{c.target}")
        if c.skipped:
            lines.append(f"    <testcase classname={cls} name={name}><skipped message={quoteattr(c.note)}/></testcase>")
        elif c.passed:
            lines.append(f"    <testcase classname={cls} name={name}><system-out>{escape(detail)}</system-out></testcase>")
        else:
            lines.append(f"    <testcase classname={cls} name={name}><failure message={quoteattr(detail)}>"
                         f"{escape(detail)}</failure></testcase>")
    lines += ["  </testsuite>", "</testsuites>", ""]
    return "\n".join(lines)


def markdown(result: GateResult) -> str:
    """A GitHub-flavoured Markdown report: verdict line, then one row per check."""
    n, failed, skipped = len(result.checks), len(result.failed), len(result.skipped)
    head = (f"### Performance gate `{result.gate_file}`: {_word(result)}\n\n"
            f"{n - failed - skipped} of {n} checks passed" + (f", {skipped} skipped" if skipped else "")
            + f" ({_source(result)}).\n\n"
            + "".join(f"**{line}**\n\n" for line in _cannot(result))
            + "| | scenario | target | check | measured | note |\n|---|---|---|---|---:|---|\n")
    rows = []
    for c in result.checks:
        mark = {"pass": "✅", "FAIL": "❌", "skip": "⏭"}[c.status]
        cells = [mark, c.scenario, c.target, f"`{c.check}`", _shown(c), c.note]
        rows.append("| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |")
    return head + "\n".join(rows) + "\n"

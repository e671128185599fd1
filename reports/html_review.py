"""HTML sections for "review" documents (the design-review demo) and "gate"
documents (CI performance gates).

A review composes the other views: its narrative as paragraphs, the doc
walk-through item by item, then the embedded rank document's sections, then
the capacity (Part 2) and pool (Part 3) sections when the review carries them
and their views (reports.capacity_view, reports.pool_view) are installed; a
missing view becomes a note, never a broken report.
"""

from __future__ import annotations

import html as _html
from importlib import import_module
from typing import Any

from reports.page import Section
from reports.html_rank import sections as rank_sections

_OPTIONAL = (("capacity", "reports.capacity_view", "Part 2: capacity"),
             ("pool", "reports.pool_view", "Part 3: shared GPU pool"))


def _text(v: Any) -> str:
    """A cell's value as escaped text: dicts as 'key: value' lines."""
    if v is None:
        return "-"
    if isinstance(v, dict):
        return "<br>".join(f"{_html.escape(str(k))}: {_text(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return "<br>".join(_text(x) for x in v)
    if isinstance(v, float):
        return f"{v:.4g}"
    return _html.escape(str(v))


def items_table(items: list[dict[str, Any]]) -> str:
    cols = ("item", "flaw", "experiment", "measured", "fix", "gain")
    head = "".join(f"<th class='l'>{c}</th>" for c in cols)
    rows = "".join("<tr>" + "".join(f"<td class='l'>{_text(it.get(c))}</td>" for c in cols) + "</tr>"
                   for it in items)
    return f"<table class='data'><tr>{head}</tr>{rows}</table>"


def optional_sections(module: str, title: str, doc: dict[str, Any]) -> list[Section]:
    """The sections of an embedded document, or a note when its view is missing."""
    try:
        builder = getattr(import_module(module), "sections")
    except (ImportError, AttributeError) as exc:
        return [Section(title, html=f"<p>({_html.escape(title)} results are in this review, but their view "
                                    f"is not available in this build: {_html.escape(str(exc))}.)</p>")]
    return [Section(f"{title}: {s.title}", s.figure, s.html, s.note) for s in builder(doc)]


def sections(doc: dict[str, Any]) -> list[Section]:
    """Sections of one review document."""
    out: list[Section] = []
    narrative = doc.get("narrative") or []
    if narrative:
        paras = "".join(f"<p>{_html.escape(str(p))}</p>" for p in narrative)
        out.append(Section("the review, in words", html=paras,
                           note=f"Design under review: {doc.get('design', '?')}. Every figure quoted was measured."))
    if doc.get("items"):
        out.append(Section("the design doc, item by item", html=items_table(doc["items"]),
                           note="For each item: the flaw, the experiment that exposes it, what it cost, the fix "
                                "and what the fix gained."))
    if doc.get("rank"):
        out.extend(rank_sections(doc["rank"]))
    for key, module, title in _OPTIONAL:
        if doc.get(key):
            out.extend(optional_sections(module, title, doc[key]))
    return out


def gate_sections(doc: dict[str, Any]) -> list[Section]:
    """One table of a gate document's checks, failures first."""
    checks = sorted(doc.get("checks") or [], key=lambda c: bool(c.get("passed")))
    cols = ("scenario", "target", "key", "op", "threshold", "measured", "passed", "note")
    head = "".join(f"<th class='l'>{c}</th>" for c in cols)
    rows = []
    for c in checks:
        cells = []
        for k in cols:
            if k == "passed":
                cells.append("<td class='l good'>pass</td>" if c.get(k) else "<td class='l bad'>FAIL</td>")
            else:
                cells.append(f"<td class='l'>{_text(c.get(k))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    failed = sum(1 for c in checks if not c.get("passed"))
    verdict = "<p class='good'><b>PASSED</b></p>" if doc.get("passed") else f"<p class='bad'><b>FAILED</b>: {failed} check(s)</p>"
    return [Section(f"gate {doc.get('gate_file', '')}", html=verdict + f"<table class='data'><tr>{head}</tr>{''.join(rows)}</table>")]

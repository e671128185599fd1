"""Self-contained HTML reports (Plotly) from saved result documents.

`write_html(results, path)` renders any mix of typed results into ONE file
that works offline: plotly.js is inlined once in the page head, every figure
is plain JSON drawn by one script, and no font, map or MathJax is fetched.
Each result kind's title and sections come from its view module, found
through reports/registry.py (imported lazily, so importing this module stays
cheap and a view module may import `Section` from here).

When every figure has been drawn the page's script sets
`#report-status[data-state="rendered"]` (and `data-plots`, the number drawn);
a JavaScript error anywhere sets `data-state="error"` and lists the error in
`#js-errors`. Tests and people both check the page by those.
"""

from __future__ import annotations

import html as _html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import plotly.graph_objects as go

from harness.results.base import Result
from harness.results.io import write_text_atomic

__all__ = ["Section", "doc_sections", "doc_title", "html_written", "mb", "page_html", "write_html"]


@dataclass
class Section:
    """One titled part of a report: a figure, an HTML fragment, or both.

    `html` is trusted markup (builders escape what they put in it); `note` is
    plain text shown under the title, for what the reader should look at.
    """

    title: str
    figure: go.Figure | None = None
    html: str | None = None
    note: str = ""
    # lead: shown in the overview at the top of the page, before the reading guide and the
    # contents (the answer first); anchor: the section's id, for links from other sections.
    lead: bool = False
    anchor: str | None = None


def doc_sections(result: Result) -> list[Section]:
    """The HTML sections of one typed result, from its kind's view (reports/registry.py)."""
    from reports.registry import view

    return view(result.kind).sections(result)


def doc_title(result: Result) -> str:
    """A heading for one typed result, from its kind's view."""
    from reports.registry import view

    return view(result.kind).title(result)


INTRO = """
<p>Every chart is interactive: hover over a line or bar for its exact values, drag to zoom
(double-click to zoom out), click a legend entry to hide that trace and double-click it to
show only that one. Everything is drawn from the saved result files; nothing was re-run.</p>
<ul>
<li><b>Time</b> is seconds since the start of the run (the workload's schedule). Values are
per window (usually 1 s); a request is counted in the window it was <i>scheduled</i> in.</li>
<li><b>Offered</b> is what the workload sent (unique requests per second); <b>goodput</b> is the
part answered successfully within the latency SLO (the dashed line on latency charts);
<b>attempts</b> include the clients' retries.</li>
<li><b>Outcomes</b>: each unique request ends as exactly one of <i>within SLO</i>, <i>late</i>
(answered OK after the SLO), <i>shed</i> (refused by the target on purpose, 429/503: a fast
answer, not a wait), <i>timed out</i> (the client gave up), <i>failed</i> (an error) or
<i>lost</i> (never resolved); tables give each one's share of all requests.</li>
<li><b>Latency</b> is end to end from each request's scheduled start to its final answer,
retries included, over the requests answered OK, always beside the outcome shares. A latency
CDF stops at the share answered OK; the legend names how the rest ended. Where a figure ranks
every request (the "all requests" p99), one not answered OK counts as infinitely slow, and a
percentile that lands on one is named by its outcome: <b>never</b> (a red &times;) only for
requests that were never answered (timed out or lost), else <i>shed</i> or <i>failed</i>.</li>
<li><b>Shaded bands</b> mark what the scenario does to the target (load spikes, GPU outages,
slowdowns, tenant bursts); thin vertical lines mark phase boundaries and recorded events.</li>
</ul>
"""

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0;color:#222;background:#fafafa}
main{max-width:1280px;margin:0 auto;padding:16px 28px 60px}
h1{font-size:1.7em;margin:.4em 0 .2em} h2{font-size:1.35em;border-bottom:2px solid #ddd;padding-top:18px}
h3{font-size:1.1em;margin:1.4em 0 .3em} .meta{color:#666;font-size:.9em}
.section{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:8px 14px 12px;margin:14px 0;overflow-x:auto}
.note{color:#444;margin:.2em 0 .6em;max-width:980px}
nav.toc{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:6px 18px}
nav.toc ul{margin:.2em 0;padding-left:1.2em} nav.toc>ul{padding-left:.4em}
table.data{border-collapse:collapse;font-size:.92em;margin:.4em 0}
table.data th,table.data td{border-bottom:1px solid #e6e6e6;padding:3px 10px;text-align:right;vertical-align:top}
table.data th{background:#f2f2f2} table.data td.l,table.data th.l{text-align:left}
tr.top td{background:#fff3e6} .bad{color:#b2182b;font-weight:600} .good{color:#1a7f37}
#js-errors{color:#b2182b;white-space:pre-wrap} .plot{width:100%}
#overview .section{border-color:#bbb} .verdict{font-size:1.15em;margin:.2em 0 .4em}
details.fold{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:6px 14px;margin:10px 0}
details.fold>summary{cursor:pointer;font-weight:600} .links a{white-space:nowrap}
"""

# Errors are caught before plotly.js loads, so a broken bundle is reported too.
ERROR_JS = """
window.__reportErrors=[];
function __reportError(msg){window.__reportErrors.push(String(msg));
 var s=document.getElementById('report-status'); if(s){s.dataset.state='error';}
 var e=document.getElementById('js-errors'); if(e){e.textContent+=String(msg)+'\\n';}}
window.addEventListener('error',function(ev){__reportError(ev.message||ev);});
window.addEventListener('unhandledrejection',function(ev){__reportError('unhandled rejection: '+(ev.reason&&ev.reason.message||ev.reason));});
"""

DRAW_JS = """
(function(){
 var status=document.getElementById('report-status');
 if(window.__reportErrors.length){  // raised before the page existed, e.g. while plotly.js loaded
   status.dataset.state='error';
   document.getElementById('js-errors').textContent=window.__reportErrors.join('\\n');}
 var figs=JSON.parse(document.getElementById('report-figures').textContent);
 var config={responsive:true,displaylogo:false,toImageButtonOptions:{format:'png',scale:2}};
 var jobs=figs.map(function(f){return Plotly.newPlot(f.id,f.fig.data,f.fig.layout||{},config);});
 Promise.all(jobs).then(function(){
   var drawn=figs.filter(function(f){var el=document.getElementById(f.id);
     return el&&el.querySelector('.plot-container svg.main-svg');}).length;
   status.dataset.plots=String(drawn);
   if(status.dataset.state!=='error'){status.dataset.state=drawn===figs.length?'rendered':'incomplete';}
   status.textContent=drawn+' of '+figs.length+' charts drawn';
 }).catch(function(err){__reportError('plot failed: '+(err&&err.message||err));});
})();
"""


def _anchor(n: int, title: str) -> str:
    slug = "".join(ch if ch.isalnum() else "-" for ch in title.lower()).strip("-")[:40]
    return f"s{n}-{slug}"


def mb(n_bytes: int) -> str:
    """A size in bytes as '5.4 MB' ('812 KB' under 1 MB)."""
    return f"{n_bytes / 1e6:.1f} MB" if n_bytes >= 1e6 else f"{n_bytes / 1e3:.0f} KB"


def _section_html(sec: Section, sid: str, figs: list[dict[str, Any]]) -> str:
    """One section's markup; its figure (if any) joins `figs`, drawn by the page's one script."""
    parts = [f'<div class="section{" lead" if sec.lead else ""}" id="{sid}"><h3>{_html.escape(sec.title)}</h3>']
    if sec.note:
        parts.append(f'<p class="note">{_html.escape(sec.note)}</p>')
    if sec.html:
        parts.append(sec.html)
    if sec.figure is not None:
        pid = f"plot-{len(figs)}"
        height = sec.figure.layout.height or 450
        parts.append(f'<div class="plot" id="{pid}" style="height:{int(height)}px"></div>')
        figs.append({"id": pid, "fig": json.loads(sec.figure.to_json())})
    parts.append("</div>")
    return "".join(parts)


def page_html(results: list[Result], plotly_js: str | None = None, title: str | None = None) -> str:
    """The whole page of typed results as a string. `plotly_js`: the library
    text to inline, once, in the head (default: the bundled plotly.js); tests may pass a stub.

    The page leads with the answer: each result's `lead` sections (its verdict and headline
    chart) come first, in the overview; the reading guide and the contents follow, folded
    (<details>), then every other section. The meta line says what the page weighs.
    """
    if plotly_js is None:
        from plotly.offline import get_plotlyjs

        plotly_js = get_plotlyjs()
    groups = [(doc_title(r), doc_sections(r)) for r in results]
    title = title or ("; ".join(g[0] for g in groups) if len(groups) == 1 else "Inference harness report")
    toc: list[str] = []
    lead: list[str] = []
    body: list[str] = []
    figs: list[dict[str, Any]] = []
    used: set[str] = set()
    n = 0
    for heading, sections in groups:
        gid = _anchor(n, heading)
        n += 1
        items = []
        body.append(f'<h2 id="{gid}">{_html.escape(heading)}</h2>')
        leads = [sec for sec in sections if sec.lead]
        if leads and len(groups) > 1:
            lead.append(f'<h2><a href="#{gid}">{_html.escape(heading)}</a></h2>')
        # Lead sections first, so their charts are the first drawn and the first on the page.
        for sec in leads + [sec for sec in sections if not sec.lead]:
            sid = sec.anchor if sec.anchor and sec.anchor not in used else _anchor(n, sec.title)
            used.add(sid)
            n += 1
            items.append(f'<li><a href="#{sid}">{_html.escape(sec.title)}</a></li>')
            (lead if sec.lead else body).append(_section_html(sec, sid, figs))
        toc.append(f'<li><a href="#{gid}">{_html.escape(heading)}</a><ul>{"".join(items)}</ul></li>')
    # "</" inside a script element would end it early; JSON allows "<\/".
    fig_json = json.dumps(figs, separators=(",", ":")).replace("</", "<\\/")
    js_lib = plotly_js.replace("</script", "<\\/script")
    overview = f'<div id="overview">{"".join(lead)}</div>' if lead else ""
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_html.escape(title)}</title>
<style>{CSS}</style>
<script>{ERROR_JS}</script>
<script>{js_lib}</script>
</head><body><main>
<h1>{_html.escape(title)}</h1>
<p class="meta">{len(results)} result document(s), {len(figs)} chart(s); this page weighs @WEIGHT@.
<span id="report-status" data-state="loading" data-plots="0" data-expected="{len(figs)}">charts not drawn yet
(JavaScript is needed for the charts)</span></p>
<div id="js-errors"></div>
{overview}
<details class="fold" id="how-to-read"><summary>How to read this report</summary>
{INTRO}
</details>
<details class="fold toc"><summary>Contents ({n - len(groups)} sections)</summary>
<nav class="toc"><ul>{"".join(toc)}</ul></nav></details>
{"".join(body)}
</main>
<script type="application/json" id="report-figures">{fig_json}</script>
<script>{DRAW_JS}</script>
</body></html>
"""
    size = len(page.encode()) - len("@WEIGHT@")
    weight = (f"{mb(size)} (plotly.js {mb(len(js_lib.encode()))}, inlined once; chart data "
              f"{mb(len(fig_json.encode()))})")
    return page.replace("@WEIGHT@", weight, 1)


def write_html(results: Iterable[Result], path: str | Path) -> Path:
    """Render typed results (any kinds in reports/registry.py) into one offline
    HTML file at `path` (parents created; written via a temp file, never torn)."""
    text = page_html(list(results))
    # A report is for sharing, unlike mkstemp's default 0600.
    return write_text_atomic(Path(path), text, mode=0o644)


def html_written(path: Path) -> str:
    """The line a command prints after writing a report: 'html: PATH (5.4 MB)'."""
    return f"html: {path} ({mb(path.stat().st_size)})"

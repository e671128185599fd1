"""HTML reports: section builders (axes, units, legends, markers) and a real
headless-browser check that the written page draws every chart without a
JavaScript error. The browser test needs Debian's `chromium` and is skipped,
saying so, when no chromium binary is installed."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from harness.engine.hdr import percentiles
from harness.engine.recorder import Recorder
from harness.engine.sim import run_sim
from harness.results import CompareResult, RunResult
from reports.page import Section, doc_sections, page_html, write_html
from reports.registry import view
from reports.fmt import fmt_share
from reports.run import render_summary
from reports.run_charts import Side, cdf_figure, markers, tenant_figure, timeseries_figure
from targets.protocol import Status
from targets.spec import resolve_target
from workloads.model import WorkloadConfig

UNITLESS = {"tenant", "scenario", "flaw (rank order)"}
UNIT = re.compile(r"\(.+\)|/s\b")

def small_workload() -> WorkloadConfig:
    """20 s: a spike at 8-12 s, a GPU outage at 5-9 s and a tenant burst at
    14-16 s, at rates that a 2-GPU target finds hard (about 6,000 requests)."""
    return WorkloadConfig.model_validate({
        "name": "tiny-bad-day", "description": "spike, outage and a burst, small",
        "phases": [{"kind": "constant", "duration_s": 4, "rate_rps": 200},
                   {"kind": "spike", "duration_s": 16, "base_rps": 250, "spike_rps": 900, "at_s": 4, "spike_s": 4}],
        "tenants": [{"name": "a", "share": 0.6, "connections": 4,
                     "bursts": [{"start_s": 14, "end_s": 16, "factor": 3}]},
                    {"name": "b", "share": 0.4, "connections": 4}],
        "faults": [{"kind": "gpu-down", "at_s": 5, "duration_s": 4, "fraction": 0.5}],
    })

@pytest.fixture(scope="module")
def runs() -> dict[str, RunResult]:
    wl = small_workload()
    return {t: run_sim(resolve_target(t, {"gpus": 2, "peak_qps": 500}), wl, seed=3) for t in ("naive", "hardened")}

@pytest.fixture(scope="module")
def compare_doc(runs) -> CompareResult:
    w = "tiny-bad-day"
    return CompareResult(a="naive", b="hardened", seed=3, mode="sim",
                         scenarios={w: {k: d.summary for k, d in runs.items()}}, runs={w: runs})

def figures(secs: list[Section]):
    return [s.figure for s in secs if s.figure is not None]

def axes_with_traces(fig) -> set[str]:
    """Layout names ('xaxis', 'yaxis3', ...) of the axes some trace is drawn on."""
    out = set()
    for tr in fig.data:
        for attr in ("xaxis", "yaxis"):
            ref = getattr(tr, attr, None) or attr[0]
            out.add(attr[0] + "axis" + ref[1:])
    return out

def check_figure(fig) -> None:
    for name in axes_with_traces(fig):
        axis = fig.layout[name]
        if axis.matches:  # a shared axis: the one it follows carries the title
            axis = fig.layout[name[0] + "axis" + axis.matches[1:]]
        title = axis.title.text
        assert title, f"{name} has no title"
        assert title in UNITLESS or UNIT.search(title), f"{name} title {title!r} has no unit"
    shown = [t for t in fig.data if t.showlegend is not False and t.type != "heatmap"]
    if len(shown) > 1:
        assert fig.layout.showlegend is not False
        assert all(t.name for t in shown)
    for t in fig.data:
        assert t.hovertemplate or t.hoverinfo == "skip", f"trace {t.name!r} has no hover text"

# -- the recorder's CDF -----------------------------------------------------------------

def test_latency_cdf_agrees_with_summary_percentiles_and_stops_at_answered():
    n = 20_000
    rng = np.random.default_rng(1)
    lat = rng.exponential(0.1, n) + 0.001
    rec = Recorder(np.zeros(n), np.zeros(n, dtype=np.int64), ("t",), 0.3, 10.0, 1.0)
    for i in range(n):
        if i % 40:  # 2.5% never answered
            rec.finish(i, Status.OK, float(lat[i]), 1)
    cdf = rec.latency_cdf()
    f, v = np.array(cdf["fraction"]), np.array(cdf["latency_s"])
    assert 150 <= len(f) <= 210
    assert np.all(np.diff(f) > 0) and np.all(np.diff(v) >= 0)
    assert cdf["answered_fraction"] == pytest.approx(0.975) and f[-1] == pytest.approx(0.975)
    p = percentiles(rec.hist_all, n - rec.hist_all.get_total_count())
    for q, key in ((0.5, "p50"), (0.9, "p90")):
        assert v[np.searchsorted(f, q - 1e-9)] == pytest.approx(p[key], rel=1e-9)
    exact = np.sort(lat[np.arange(n) % 40 != 0])
    for q, x in zip(f[1:], v[1:]):  # within HdrHistogram's 3 significant digits
        assert np.searchsorted(exact, x * 1.001, side="right") / n >= q - 1 / n
        assert np.searchsorted(exact, x * 0.999, side="left") / n <= q
    assert p["p99"] is None  # beyond the answered share: 'never', and the curve stops before it
    assert math.isclose(v[-1], rec.hist_all.get_max_value() / 1e6, rel_tol=1e-3)

# -- section builders -----------------------------------------------------------------------

def test_run_doc_carries_a_cdf_and_every_run_figure_is_labelled(runs):
    doc = runs["naive"]
    assert doc.latency_cdf["fraction"], "run documents carry the latency CDF"
    secs = doc_sections(doc)
    assert len(figures(secs)) == 3  # time series, CDF, tenants
    for fig in figures(secs):
        check_figure(fig)

def test_markers_cover_phases_spike_fault_and_burst(runs):
    doc = runs["naive"]
    got = {(m.kind, m.x0, m.x1) for m in markers(doc)}
    assert ("phase", 4.0, None) in got
    assert ("spike", 8.0, 12.0) in got
    assert ("gpu-down", 5.0, 9.0) in got
    assert ("burst", 14.0, 16.0) in got
    fig = timeseries_figure([Side("naive", doc, "#000")])
    bands = {(s.x0, s.x1) for s in fig.layout.shapes if s.type == "rect"}
    assert {(8.0, 12.0), (5.0, 9.0), (14.0, 16.0)} <= bands
    labels = " ".join(a.text for a in fig.layout.annotations)
    assert "spike to 900 req/s" in labels and "GPU outage: 50% of GPUs down" in labels and "tenant a bursts" in labels

def test_spike_markers_are_clipped_to_a_shortened_run(runs):
    base = runs["naive"]
    doc = base.model_copy(update={
        "summary": base.summary.model_copy(update={"duration_s": 20.0}),
        "phases": [{"kind": "spike", "start_s": 0.0, "end_s": 20.0}],
        "workload_config": {"phases": [{"kind": "spike", "at_s": 15, "spike_s": 10, "spike_rps": 2e4}]},
        "faults": [{"kind": "slowdown", "at_s": 25, "duration_s": 5, "factor": 3}], "events": []})
    assert [(m.kind, m.x0, m.x1) for m in markers(doc)] == [("spike", 15.0, 20.0)]
    # Inside the run, but a live run against an external target skipped it:
    doc = doc.model_copy(update={"faults": [{"kind": "slowdown", "at_s": 5, "duration_s": 5, "factor": 3}],
                                 "events": [{"t_s": 0.0, "event": "faults-skipped", "reason": "external target"}]})
    got = [(m.kind, m.x0, m.label) for m in markers(doc)]
    assert got == [("spike", 15.0, "spike to 20,000 req/s"), ("event", 0.0, "faults-skipped: external target")]

def test_overloaded_windows_show_never_and_the_slo(runs):
    doc = runs["naive"]
    fig = timeseries_figure([Side("naive", doc, "#000")])
    names = [t.name for t in fig.data]
    assert any(n.startswith("SLO") for n in names)
    gaps = sum(v is None for v in doc.timeseries["p99_s"][:20])  # the 20 windows inside the run
    assert gaps > 0, "naive on 2 GPUs must leave some windows' p99 unanswered"
    never = [t for t in fig.data if "never" in t.name]
    assert len(never) == 1 and len(never[0].x) == gaps
    assert min(never[0].y) > max(v for v in doc.timeseries["p99_s"] if v is not None)  # drawn above the data

def test_shed_windows_are_not_never_and_shed_requests_get_their_own_line(runs):
    """hardened sheds in the spike but times nothing out: its p99 line is of the requests
    answered OK, with no 'never' mark, and the shed requests are a rate of their own."""
    doc = runs["hardened"]
    assert doc.summary.outcomes.shed.count and not doc.summary.outcomes.timed_out.count
    fig = timeseries_figure([Side("hardened", doc, "#000")])
    assert not [t for t in fig.data if "never" in t.name]
    shed = [t for t in fig.data if t.name.startswith("shed")]
    assert len(shed) == 1 and max(shed[0].y) > 0
    p99 = next(t for t in fig.data if t.name.startswith("p99 latency"))
    assert all(v is not None for v in p99.y)

def test_cdf_legend_says_how_the_requests_not_answered_ok_ended(runs):
    sides = [Side("A: naive", runs["naive"], "#e6550d"), Side("B: hardened", runs["hardened"], "#3182bd")]
    fig = cdf_figure(sides)
    check_figure(fig)
    shown = [t.name for t in fig.data if t.showlegend is not False]
    na, hd = runs["naive"].summary.outcomes, runs["hardened"].summary.outcomes
    assert f"A: naive: {fmt_share(na.timed_out.share)} timed out" in shown
    assert f"B: hardened: {fmt_share(hd.shed.share)} shed" in shown
    assert not [n for n in shown if "never" in n]
    # The level line sits at the share answered OK, where the curve stops.
    level = next(t for t in fig.data if t.name == f"B: hardened: {fmt_share(hd.shed.share)} shed")
    assert level.y[0] == pytest.approx(100 * (hd.within_slo.share + hd.late.share))

def test_tenant_outcomes_are_shares_never_a_bar_on_the_latency_axis(runs):
    sides = [Side("A: naive", runs["naive"], "#e6550d"), Side("B: hardened", runs["hardened"], "#3182bd")]
    fig = tenant_figure(sides)
    check_figure(fig)
    p99_bars = [t for t in fig.data if t.type == "bar" and t.xaxis == "x"]
    for side, bars in zip(sides, p99_bars):
        assert list(bars.y) == [t.p99_ok_s for t in side.run.summary.tenants.values()]  # answered OK, all finite
    stacked = [t for t in fig.data if t.type == "bar" and t.xaxis == "x2"]
    assert {t.name for t in stacked} == {"within SLO", "late", "shed", "timed out"}  # the outcomes present
    totals = np.sum([np.array(t.y) for t in stacked], axis=0)
    assert totals == pytest.approx(100.0)  # every (tenant, target) bar is all of its requests

def test_run_table_shows_six_outcomes_and_never_only_for_unanswered(runs):
    def text(doc):
        console = Console(record=True, width=100)
        render_summary(doc.summary, console)
        return console.export_text()

    hard, naive = text(runs["hardened"]), text(runs["naive"])
    for label in ("within SLO", "late", "shed", "timed out", "failed", "lost"):
        assert re.search(rf"^. +{label} +. +\d+\.\d+%", hard, re.M), label
    assert "never" not in hard  # it sheds, it never leaves a request unanswered
    assert re.search(r"p99, all requests +. +shed", hard)
    assert re.search(r"p99, all requests +. +never .*timed out", naive)
    throttled = runs["hardened"].summary.requests.throttled
    flat = re.sub(r"[\s│]+", " ", hard)  # the note wraps inside its cell
    assert (f"{throttled:,} by the clients' own throttle (not sent)" in flat) == (throttled > 0)
    assert "own throttle" not in naive and runs["naive"].summary.requests.throttled == 0

def test_old_result_files_without_outcomes_still_load_and_render(runs):
    doc = runs["hardened"].to_json()
    s = doc["summary"]
    for key in ("outcomes", "covered_s"):
        del s[key]
    del s["requests"]["late"]
    for t in s["tenants"].values():
        for key in ("p50_ok_s", "p99_ok_s", "outcomes"):
            del t[key]
    for key in ("p99_ok_s", "outcomes"):
        del doc["timeseries"][key]
    old = RunResult.from_json(doc)
    assert old.summary.outcomes == runs["hardened"].summary.outcomes  # derived from `requests`
    assert old.summary.requests.late == runs["hardened"].summary.requests.late
    for sec in doc_sections(old):
        if sec.figure is not None:
            check_figure(sec.figure)

def test_compare_overlays_a_and_b_in_consistent_colours(compare_doc):
    secs = doc_sections(compare_doc)
    figs = figures(secs)
    assert len(figs) == 4  # the overview's goodput chart, then the scenario's three
    for fig in figs:
        check_figure(fig)
        colours: dict[str, set] = {}
        for t in fig.data:
            side = "A" if "A: naive" in (t.name or "") or t.legendgroup == "A: naive" else \
                   "B" if "B: hardened" in (t.name or "") or t.legendgroup == "B: hardened" else None
            if side:
                c = (t.line.color if t.type == "scatter" else None) or t.marker.color
                colours.setdefault(side, set()).add(c)
        assert set(colours) == {"A", "B"} and colours["A"].isdisjoint(colours["B"])
        assert all(len(c) == 1 for c in colours.values())

def test_cdf_falls_back_to_summary_percentiles_for_old_files(runs):
    doc = runs["hardened"].model_copy(update={"latency_cdf": {}})
    fig = doc_sections(doc)[2].figure
    left = fig.data[0]
    lat = doc.summary.latency_s
    assert list(left.x) == [v for v in (lat.p50, lat.p90, lat.p99, lat.p999) if v]

def test_unknown_kind_is_a_clear_error():
    with pytest.raises(ValueError, match="no report for result kind 'bogus'.*known: run, compare"):
        view("bogus")

def test_page_is_offline_and_inlines_plotly_once(runs, tmp_path):
    path = write_html([runs["naive"]], tmp_path / "sub" / "r.html")
    text = path.read_text()
    assert text.count("plotly.js v") <= 2 and text.count("Plotly.newPlot") >= 1
    from plotly.offline import get_plotlyjs

    lib = get_plotlyjs()
    assert text.count(lib[:2000]) == 1
    page = text.replace(lib.replace("</script", "<\\/script"), "")  # our own markup, without the library
    assert len(page) < len(text) - 1_000_000
    assert not re.search(r"<(script|link|img)[^>]*\b(src|href)=", page) and "http" not in page
    assert 'data-expected="3"' in text

# -- a real browser ---------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)

def load_in_chromium(page: Path, profile: Path) -> tuple[str, str]:
    """(DOM after the page's scripts ran, the browser's console log)."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=15000", "--dump-dom", page.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr

@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary installed (apt-get install chromium)")
def test_report_renders_in_headless_chromium_without_errors(runs, compare_doc, tmp_path):
    from test_rank_review_gate import synthetic_rank  # a typed rank result with every flaw

    docs = [runs["naive"], compare_doc, synthetic_rank()]
    expected = sum(len(figures(doc_sections(d))) for d in docs)
    page = write_html(docs, tmp_path / "report.html")
    dom, log = load_in_chromium(page, tmp_path / "profile")
    console = [ln for ln in log.splitlines() if "CONSOLE" in ln]
    assert not [ln for ln in console if "Uncaught" in ln or "Error" in ln], console
    status = re.search(r'id="report-status"[^>]*', dom).group(0)
    assert 'data-state="rendered"' in status and f'data-plots="{expected}"' in status, status
    assert dom.count('class="plot-container plotly"') == expected
    assert dom.count('class="main-svg"') >= expected
    # The check can fail: a broken plotly.js is reported as an error, in the console and the page.
    broken = tmp_path / "broken.html"
    broken.write_text(page_html([runs["naive"]], plotly_js="throw new Error('plotly failed to load');"))
    dom, log = load_in_chromium(broken, tmp_path / "profile2")
    assert "Uncaught Error: plotly failed to load" in log
    assert 'data-state="error"' in dom

def test_marker_labels_that_would_overlap_get_separate_rows():
    from reports.run_charts import Marker, label_levels

    marks = [Marker("spike", 10, 12, "a long label here"), Marker("event", 11, None, "x"),
             Marker("burst", 50, 60, "far away"), Marker("gpu-down", 10.5, 20, "y")]
    # 100 s over 900 px at 7 px a character: a 17-character label covers about 15 s.
    assert label_levels(marks, 100.0) == [0, 2, 0, 1]  # by x: 10 -> row 0, 10.5 -> 1, 11 -> 2, 50 -> 0



@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary installed (apt-get install chromium)")
def test_the_overview_chart_renders_before_any_table(compare_doc, tmp_path):
    """The first screen leads with the answer: in the rendered DOM the overview holds a drawn
    plotly chart, and it comes before the page's first table and before the reading guide."""
    page = write_html([compare_doc], tmp_path / "compare.html")
    dom, _ = load_in_chromium(page, tmp_path / "profile")
    overview = dom.find('id="overview"')
    chart = dom.find('class="main-svg"', overview)
    assert overview >= 0 and chart > overview, "no overview, or no chart drawn in it"
    first_table = dom.find("<table")
    assert first_table == -1 or chart < first_table, (chart, first_table)
    assert chart < dom.find('id="how-to-read"')

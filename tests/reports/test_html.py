"""HTML reports: section builders (axes, units, legends, markers) and a real
headless-browser check that the written page draws every chart without a
JavaScript error. The browser test needs Debian's `chromium` and is skipped,
saying so, when no chromium binary is installed."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.engine.recorder import Recorder, percentiles
from harness.engine.sim import run_sim
from harness.results import CompareResult, RunResult
from harness.results.io import SCHEMA
from reports.page import Section, doc_sections, page_html, write_html
from reports.rank_charts import TOP
from reports.registry import view
from reports.run_charts import markers, timeseries_figure, Side
from targets.flaws import FLAWS
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


def rank_doc(n_scen: int = 3) -> dict[str, Any]:
    """A synthetic rank document (contract 'rank'), costs from a seeded rng;
    one flaw's p99 became 'never answered' (None)."""
    rng = np.random.default_rng(7)
    suite = ["steady", "spike", "gpu-outage", "night"][:n_scen]
    flaws = []
    for f in FLAWS:
        per = {w: {"goodput_loss": float(rng.uniform(0, 0.4)), "p99_increase_s": float(rng.uniform(-0.01, 2)),
                   "wasted_gpu_s": float(rng.uniform(0, 50)), "gain_goodput": float(rng.uniform(0, 0.3)),
                   "gain_p99_s": float(rng.uniform(0, 1))} for w in suite}
        worst = max(per, key=lambda w: per[w]["goodput_loss"])
        flaws.append({"id": f.id, "doc_item": f.doc_item, "failure": f.failure, "fix": f.fix,
                      "cost": {"goodput_loss": per[worst]["goodput_loss"], "p99_increase_s": per[worst]["p99_increase_s"],
                               "wasted_gpu_s": per[worst]["wasted_gpu_s"], "scenario": worst},
                      "gain": {"goodput_gain": per[worst]["gain_goodput"], "p99_decrease_s": 0.1, "scenario": worst},
                      "per_scenario": per, "interaction": None})
    flaws.sort(key=lambda f: -f["cost"]["goodput_loss"])
    for i, f in enumerate(flaws):
        f["rank"] = i + 1
    flaws[1]["cost"]["p99_increase_s"] = None
    flaws[-1]["interaction"] = "hurts only together with blind-retries"
    return {"schema": SCHEMA, "kind": "rank", "seed": 1, "suite": suite, "slo_s": 0.3, "flaws": flaws,
            "top": [f["id"] for f in flaws[:3]], "baselines": {"hardened": {}, "naive": {}}}


def review_doc() -> dict[str, Any]:
    return {"schema": SCHEMA, "kind": "review", "design": "naive",
            "items": [{"item": "4", "flaw": "blind-retries", "experiment": "spike", "measured": {"amplification": 2.1},
                       "fix": "budgeted retries", "gain": 0.25}],
            "rank": rank_doc(), "capacity": None, "pool": None,
            "narrative": ["Retries <b>amplify</b> load 2.1x in the spike.", "Fix them first."]}


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


def test_compare_overlays_a_and_b_in_consistent_colours(compare_doc):
    secs = doc_sections(compare_doc)
    figs = figures(secs)
    assert len(figs) == 3
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


def test_rank_chart_orders_by_rank_highlights_top_three_and_marks_never():
    doc = rank_doc()
    secs = doc_sections(doc)
    chart, heat = figures(secs)
    check_figure(chart)
    check_figure(heat)
    top = [t for t in chart.data if t.name.startswith("top three")]
    assert len(top) == 3 and all(t.marker.color == TOP for t in top[:2])
    assert [y.split(". ")[1].rstrip(" ★") for y in top[0].y] == doc["top"]
    order = list(chart.layout.yaxis.categoryarray)[::-1]
    assert [int(o.split(".")[0]) for o in order] == list(range(1, len(FLAWS) + 1))
    assert top[1].text[1] == "never" and top[1].marker.pattern.shape[1] == "/"  # flaws[1]: p99 None
    assert len(heat.data[0].z) == len(FLAWS) and len(heat.data[0].x) == 3
    f1 = doc["flaws"][0]
    assert heat.data[0].z[0][0] == pytest.approx(100 * f1["per_scenario"]["steady"]["goodput_loss"])


def test_review_escapes_narrative_and_notes_missing_views(monkeypatch):
    doc = review_doc()
    doc["capacity"] = {"kind": "capacity", "theoretical_gpus": 10}
    monkeypatch.setitem(sys.modules, "reports.capacity_view", None)  # as if not installed
    secs = doc_sections(doc)
    assert "&lt;b&gt;amplify&lt;/b&gt;" in secs[0].html
    assert any("ranked" in s.title for s in secs) and len(figures(secs)) == 2
    cap = [s for s in secs if s.title.startswith("Part 2")]
    assert len(cap) == 1 and "not available" in cap[0].html


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
    docs = [runs["naive"], compare_doc, rank_doc(), review_doc()]
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


def test_heatmap_keeps_the_sign_of_a_flaw_that_helps():
    from reports.rank_charts import heatmap_figure

    doc = rank_doc()
    doc["flaws"][0]["per_scenario"]["spike"]["goodput_loss"] = -0.2  # e.g. a cache on repeated payloads
    heat = heatmap_figure(doc).data[0]
    assert heat.z[0][1] == pytest.approx(-20.0) and heat.text[0][1] == "-20.0"
    assert heat.zmid == 0 and heat.zmin is None
    assert heatmap_figure(rank_doc()).data[0].zmin == 0  # all costs: one-sided scale from zero

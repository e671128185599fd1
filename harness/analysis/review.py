"""The design-review demo: the doc's items one by one, answered with measurements.

`review(design)` runs, for every flaw of the catalogue, the experiment that
exposes it (its `exposed_by` scenarios plus `steady`), both ways: the flaw put
back alone into `hardened` (its cost) and fixed alone in the design under
review (its gain; `naive`, the doc's design, unless a user design is given).
It then ranks the flaws, and adds the Part 2 (capacity) and Part 3 (shared
pool) answers when those modules are installed. The narrative quotes only
figures read from the embedded documents; no sentence carries a canned number.

Returns a review document (kind "review"): design, items [{item, flaw,
experiment, measured, fix, gain}], rank (a rank document), capacity, pool
(documents or None), narrative [str], notes [str], wall_s.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from harness.analysis.ablation import ablate
from harness.analysis.shorten import plan as plan_runs
from harness.results.io import SCHEMA, versions
from reports.console import fmt_s
from targets.flaws import FLAWS
from workloads.loader import load_workload

QUICK_SCALE = 0.5          # --quick: every run this much shorter (see harness/shorten.py)


def review_scenarios() -> dict[str, list[str]]:
    """{flaw id: scenarios}: the flaw's exposing scenarios, then steady."""
    return {f.id: list(dict.fromkeys([*f.exposed_by, "steady"])) for f in FLAWS}


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def pts(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} points"


def lat(x: float | None) -> str:
    return "never answered" if x is None else fmt_s(x)


def harmless(loss: float, tail_s: float | None) -> bool:
    """No measurable harm: under half a point of goodput and 0.5 ms of p99."""
    return loss < 0.005 and tail_s is not None and tail_s < 0.0005


def _lost(f: dict[str, Any], before: str, after: str) -> str:
    """'N more requests lost (where)' when the change loses requests in flight."""
    rows = {w: r for w, r in f["per_scenario"].items() if "lost" in r}
    if not rows:
        return ""
    w = max(rows, key=lambda w: rows[w]["lost"][after] - rows[w]["lost"][before])
    a, b = rows[w]["lost"][before], rows[w]["lost"][after]
    return f"; on {w} requests lost in flight {a:,} -> {b:,}" if b != a else ""


def _measured(f: dict[str, Any], good: str) -> str:
    c = f["cost"]
    w = c["scenario"]
    row = f["per_scenario"][w]
    put = f"{good}+{f['id']}"
    if all(harmless(r["goodput_loss"], r["p99_increase_s"]) for r in f["per_scenario"].values()):
        text = (f"no measurable cost on {', '.join(f['per_scenario'])}: on {w} goodput {pct(row['goodput'][good])} "
                f"-> {pct(row['goodput'][put])}, p99 {lat(row['p99_s'][good])} -> {lat(row['p99_s'][put])}")
        return text + _lost(f, good, put)
    text = (f"worst on {w}: goodput {pct(row['goodput'][good])} -> {pct(row['goodput'][put])} "
            f"({pts(row['goodput_loss'])} lost), p99 {lat(row['p99_s'][good])} -> {lat(row['p99_s'][put])}")
    amp = row.get("amplification") or {}
    if amp.get(good) and amp.get(put) and abs(amp[put] - amp[good]) >= 0.05:
        text += f", amplification {amp[good]:.2f}x -> {amp[put]:.2f}x"
    if row["wasted_gpu_s"] >= 1:
        text += f", {row['wasted_gpu_s']:,.0f} GPU-s more wasted"
    pw = c.get("p99_scenario")
    if pw and pw != w and not harmless(0.0, f["per_scenario"][pw]["p99_increase_s"]):
        prow = f["per_scenario"][pw]
        text += f"; its worst tail is on {pw}: p99 {lat(prow['p99_s'][good])} -> {lat(prow['p99_s'][put])}"
    return text + _lost(f, good, put)


def _gain(f: dict[str, Any], flawed: str) -> str:
    g = f["gain"]
    if g.get("note"):
        return g["note"]
    w = g["scenario"]
    row = f["per_scenario"][w]
    fixed = f"{flawed}-{f['id']}"
    if all(harmless(r["gain_goodput"], r["gain_p99_s"]) for r in f["per_scenario"].values()):
        text = (f"fixed alone in {flawed} it gains nothing measurable: on {w} goodput {pct(row['goodput'][flawed])} "
                f"-> {pct(row['goodput'][fixed])}, p99 {lat(row['p99_s'][flawed])} -> {lat(row['p99_s'][fixed])}")
    else:
        text = (f"fixed alone in {flawed}, best on {w}: goodput {pct(row['goodput'][flawed])} -> "
                f"{pct(row['goodput'][fixed])} ({'+' if row['gain_goodput'] >= 0 else ''}"
                f"{pts(row['gain_goodput'])}), p99 {lat(row['p99_s'][flawed])} -> {lat(row['p99_s'][fixed])}")
    return text + _lost(f, flawed, fixed)


def items(rank_doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The walk-through rows, in the doc's order (catalogue order)."""
    by_id = {f["id"]: f for f in rank_doc["flaws"]}
    good, flawed = rank_doc["good"], rank_doc["flawed"]
    out = []
    for flaw in FLAWS:
        f = by_id.get(flaw.id)
        if f is None:
            continue
        scen = list(f["per_scenario"])
        runs = ", ".join(f"{w} {rank_doc['durations'][w]['run_s']:.3g} s" for w in scen)
        out.append({
            "item": flaw.doc_item, "flaw": f"{flaw.id}: {flaw.failure}",
            "experiment": (f"{good}+{flaw.id} against {good}, and {flawed}-{flaw.id} against {flawed}, "
                           f"on {runs} (seed {rank_doc['seed']}, same arrivals on both sides)"),
            "measured": _measured(f, good), "fix": flaw.fix, "gain": _gain(f, flawed),
            "rank": f["rank"], "interaction": f.get("interaction"),
        })
    return out


def narrative(doc: dict[str, Any]) -> list[str]:
    """Paragraphs for a person; every figure is read from `doc`'s documents."""
    r = doc["rank"]
    good, flawed = r["good"], r["flawed"]
    lines = [f"Design under review: {doc['design']}. Each flaw of the doc was put back alone into {good} "
             f"(what it costs) and fixed alone in {flawed} (what its fix gains), on the scenarios that "
             f"expose it and on steady: {r['runs']} simulated runs, seed {r['seed']}, SLO {fmt_s(r['slo_s'])}."]
    for it in doc["items"]:
        line = (f"Item {it['item']}, {it['flaw']}. Experiment: {it['experiment']}. Measured: {it['measured']}. "
                f"Fix: {it['fix']}. Gain: {it['gain']}.")
        if it.get("interaction"):
            line += f" Interaction: {it['interaction']}."
        lines.append(line)
    by_id = {f["id"]: f for f in r["flaws"]}
    order = sorted(r["flaws"], key=lambda f: f["rank"])
    lines.append("Ranking (" + r["score"] + "): " + "; ".join(
        f"{f['rank']}. {f['id']} ({pts(f['cost']['goodput_loss'])} on {f['cost']['scenario']})" for f in order) + ".")
    top = [by_id[i] for i in r["top"]]
    lines.append("Insist on these before shipping: " + "; ".join(
        f"{f['id']} (doc item {f['doc_item']}: {pts(f['cost']['goodput_loss'])} of goodput lost on "
        f"{f['cost']['scenario']}, p99 {'never answered' if f['cost']['p99_increase_s'] is None else '+' + fmt_s(f['cost']['p99_increase_s'])})"
        for f in top) + ".")
    short = [f"{w} {p['run_s']:.3g} of {p['full_s']:g} s ({p.get('kept', 'shortened')})"
             for w, p in r["durations"].items() if p["run_s"] < p["full_s"] - 1e-9]
    if short:
        lines.append("Runs were shortened to fit (harness/shorten.py): " + "; ".join(short) + ".")
    lines += _part2(doc.get("capacity")) + _part3(doc.get("pool"))
    lines += doc.get("notes", [])
    return lines


def _part2(cap: dict[str, Any] | None) -> list[str]:
    if not cap:
        return []
    i = cap["inputs"]
    rt, hd = cap.get("realtime_gpus"), cap.get("realtime_with_headroom_gpus")
    line = (f"Part 2: at {i['qps']:,.0f} QPS, B = {i['batch_size']} and {fmt_s(i['batch_time_s'])} per batch the doc's "
            f"formula gives {cap['theoretical_gpus']:.2f} GPUs ({cap['formula_gpus']} whole GPUs). In realtime, "
            f"with p99 <= {fmt_s(i['slo_p99_s'])}, the simulated fleet needs {rt if rt is not None else 'no finite number of'} "
            f"GPUs, {hd if hd is not None else '-'} with headroom and N+1; offline, full batches reach "
            f"{pct(cap.get('offline_efficiency'))} of the formula's throughput.")
    losses = cap.get("losses") or []
    if losses:
        line += " Where realtime throughput goes: " + "; ".join(
            f"{x['source']}: {_quantity(x['measured'], x['unit'])}" for x in losses) + "."
    return [line]


def _quantity(x: Any, unit: str) -> str:
    """A measured loss with its unit; shares read as percentages."""
    if isinstance(x, (int, float)) and unit.startswith("share "):
        return f"{100 * x:.1f}%{unit[len('share'):]}"
    if isinstance(x, float):
        return f"{x:.3g} {unit}"
    return f"{x} {unit}"


def _part3(pool: dict[str, Any] | None) -> list[str]:
    if not pool:
        return []
    cfg = pool.get("config") or {}
    parts = []
    for name, res in (pool.get("results") or {}).items():
        parts.append(f"{name}: large p99 {lat(res['large']['p99_s'])}, small p99 {lat(res['small']['p99_s'])}, "
                     f"{pct(res.get('utilization'))} busy ({'meets' if res['meets_slo'] else 'misses'} the SLO)")
    line = (f"Part 3: two models on one {cfg.get('gpus', '?')}-GPU pool, SLO {fmt_s(cfg.get('slo_s'))}: "
            + "; ".join(parts) + ".")
    verdict = pool.get("verdict") or []
    if verdict:
        line += " " + " ".join(v.rstrip(".") + "." for v in verdict)
    return [line]


def _optional(name: str, build: Callable[[], dict[str, Any]], notes: list[str]) -> dict[str, Any] | None:
    """Part 2/3 documents when their module is installed; a note when it is not."""
    try:
        return build()
    except ImportError as exc:
        notes.append(f"{name} is not available in this build ({exc}); run it separately once it is.")
    except Exception as exc:  # a broken optional part must not sink the review
        notes.append(f"{name} failed: {type(exc).__name__}: {exc}")
    return None


def review(design: str | None = None, quick: bool = False, seed: int = 1, workers: int | None = None,
           parts: bool = True, rank_doc: dict[str, Any] | None = None, on_done: Callable | None = None,
           scale: float | None = None, flaw_scenarios: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The review document for `design` (a target spec or TOML; default naive, the doc's design).

    `rank_doc` reuses a saved rank (same design) instead of running the
    ablation; `parts` adds Part 2 and Part 3; `quick` (or `scale`) shortens
    every run; `flaw_scenarios` ({flaw id: [scenarios]}) replaces the default
    experiments (tests use tiny ones).
    """
    started = time.perf_counter()
    flawed = design or "naive"
    notes: list[str] = []
    if rank_doc is None:
        scen = flaw_scenarios or review_scenarios()
        names = sorted({w for ws in scen.values() for w in ws})
        factor = scale if scale is not None else (QUICK_SCALE if quick else 1.0)
        plan = plan_runs(names, factor)
        rank_doc = ablate(scen, "hardened", flawed, seed, workers, plan, on_done, suite="bad-day")
    capacity = pool = None
    if parts:
        def cap() -> dict[str, Any]:
            from harness.analysis.capacity import plan_capacity
            return plan_capacity(seed=seed, quick=True, workers=workers)

        def pool_doc() -> dict[str, Any]:
            from harness.cli.pool import pool_document
            return pool_document()
        capacity = _optional("Part 2 (capacity)", cap, notes)
        pool = _optional("Part 3 (pool)", pool_doc, notes)
    doc: dict[str, Any] = {
        "schema": SCHEMA, "kind": "review", "design": flawed, "seed": seed, "quick": quick,
        "rank": rank_doc, "capacity": capacity, "pool": pool, "notes": notes,
    }
    doc["items"] = items(rank_doc)
    doc["narrative"] = narrative(doc)
    doc["wall_s"] = time.perf_counter() - started
    doc["versions"] = versions()
    return doc


def check_design(design: str) -> None:
    """Raise ConfigError early for a bad design spec or TOML (before any run)."""
    from targets.spec import resolve_target

    resolve_target(design)
    load_workload("steady")

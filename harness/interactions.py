"""Interactions between flaws: shown, not hidden.

The two sides of the ablation disagree when flaws interact:

- *compounding*: putting F back into the good design costs nothing, yet
  fixing F alone in the flawed design gains a lot. F hurts only together with
  some other flaw G. Probe: on the scenario of F's largest gain, run
  ``GOOD+G+F`` against ``GOOD+G`` (already measured) for the few flaws G that
  hurt most there; F's marginal cost beside G names the partner.
- *masked*: putting F back costs a lot, yet fixing F alone in the flawed
  design gains nothing: other flaws keep the flawed design failing anyway.
  Probe: on the scenario of F's largest cost, run ``FLAWED-G-F`` against
  ``FLAWED-G`` for the few flaws G that hurt most there; F's marginal gain
  once G is fixed names what masks it.

"Matters" is a goodput difference of at least MATTERS (2 points) or a p99
moved by at least a third of the SLO (or to/from never answered);
"negligible" is under TIE (half a point) and a tenth of the SLO. Probes run
at most PARTNERS partners per interacting flaw, in one batch of jobs.
"""

from __future__ import annotations

from typing import Any, Callable

from harness.ablation import TIE, VariantJob, inf, run_summaries, severity, tail_increase, p99, variant
from targets.flaws import FLAWS

MATTERS = 0.02
PARTNERS = 3


def matters(goodput: float, tail: float | None, slo_s: float) -> bool:
    return goodput >= MATTERS or tail is None or tail >= slo_s / 3


def negligible(goodput: float, tail: float | None, slo_s: float) -> bool:
    return goodput < TIE and tail is not None and tail < slo_s / 10


def classify(f: dict[str, Any], slo_s: float) -> str | None:
    """'compounding', 'masked' or None for one rank-document flaw entry."""
    c, g = f["cost"], f["gain"]
    if g.get("note"):  # not present in the flawed design: no gain side to compare with
        return None
    if negligible(c["goodput_loss"], c["p99_increase_s"], slo_s) and matters(g["goodput_gain"], g["p99_decrease_s"], slo_s):
        return "compounding"
    if matters(c["goodput_loss"], c["p99_increase_s"], slo_s) and negligible(g["goodput_gain"], g["p99_decrease_s"], slo_s):
        return "masked"
    return None


def _partners(doc: dict[str, Any], fid: str, w: str) -> list[str]:
    """Other flaws, present in the flawed design, that hurt most on `w`."""
    present = set(doc["flaws_in_flawed"])
    rows = [(f["id"], f["per_scenario"].get(w)) for f in doc["flaws"] if f["id"] != fid and f["id"] in present]
    rows = [(i, r) for i, r in rows if r is not None]
    rows.sort(key=lambda ir: (severity(ir[1]["goodput_loss"], ir[1]["p99_increase_s"]),
                              severity(ir[1]["gain_goodput"], ir[1]["gain_p99_s"])), reverse=True)
    return [i for i, _ in rows[:PARTNERS]]


def find_interactions(doc: dict[str, Any], good_knobs: dict[str, Any], flawed_knobs: dict[str, Any],
                      summaries: dict[tuple[str, str], dict], plan: dict[str, dict[str, Any]], workers: int | None,
                      on_done: Callable | None = None) -> None:
    """Fills each flaw's `interaction` text and doc["interactions"] (the probes), in place."""
    slo = doc["slo_s"]
    good, flawed = doc["good"], doc["flawed"]
    by_id = {f.id: f for f in FLAWS}
    plans: list[dict[str, Any]] = []
    jobs: list[VariantJob] = []
    for f in doc["flaws"]:
        kind = classify(f, slo)
        if kind is None:
            continue
        w = f["gain"]["scenario"] if kind == "compounding" else f["cost"]["scenario"]
        partners = _partners(doc, f["id"], w)
        plans.append({"flaw": f["id"], "kind": kind, "scenario": w, "partners": partners})
        short = plan[w]["shortening"]
        me = by_id[f["id"]]
        for g in partners:
            if kind == "compounding":
                knobs = variant(variant(good_knobs, by_id[g].present), me.present)
                jobs.append(VariantJob(f"{good}+{g}+{f['id']}", knobs, w, doc["seed"], short))
            else:
                knobs = variant(variant(flawed_knobs, by_id[g].fixed), me.fixed)
                jobs.append(VariantJob(f"{flawed}-{g}-{f['id']}", knobs, w, doc["seed"], short))
    probed = run_summaries(jobs, workers, on_done) if jobs else {}
    entries = {f["id"]: f for f in doc["flaws"]}
    for p in plans:
        f, w, fid = entries[p["flaw"]], p["scenario"], p["flaw"]
        results = []
        for g in p["partners"]:
            if p["kind"] == "compounding":
                base, with_f = summaries[(f"{good}+{g}", w)], probed[(f"{good}+{g}+{fid}", w)]
                delta = (base["goodput_ratio"] or 0.0) - (with_f["goodput_ratio"] or 0.0)
                tail = tail_increase(p99(base), p99(with_f))
            else:
                base, with_f = summaries[(f"{flawed}-{g}", w)], probed[(f"{flawed}-{g}-{fid}", w)]
                delta = (with_f["goodput_ratio"] or 0.0) - (base["goodput_ratio"] or 0.0)
                tail = tail_increase(p99(with_f), p99(base))
            results.append({"partner": g, "goodput": delta, "p99_s": tail,
                            "goodput_base": base["goodput_ratio"], "goodput_with": with_f["goodput_ratio"]})
        p["probes"] = results
        f["interaction"] = _describe(p, f, good, flawed, slo)
    doc["interactions"] = plans


def _pct(x: float) -> str:
    return f"{100 * x:.1f} points"


def _describe(p: dict[str, Any], f: dict[str, Any], good: str, flawed: str, slo: float) -> str:
    w, fid = p["scenario"], p["flaw"]
    hits = [r for r in p["probes"] if matters(r["goodput"], r["p99_s"], slo)]
    hits.sort(key=lambda r: (severity(r["goodput"], r["p99_s"])), reverse=True)
    if p["kind"] == "compounding":
        head = (f"costs {_pct(f['cost']['goodput_loss'])} at most put back into {good} alone, yet fixing it "
                f"alone in {flawed} gains {_pct(f['gain']['goodput_gain'])} on {w}")
        if hits:
            r = hits[0]
            return (f"{head}: it hurts only together with {r['partner']} (on {w}, adding it to {good}+{r['partner']} "
                    f"costs {_pct(r['goodput'])} of goodput, {r['goodput_base']:.1%} -> {r['goodput_with']:.1%})")
        tried = ", ".join(p["partners"]) or "no other flaw"
        return f"{head}: it hurts only beside several flaws at once (no single partner among {tried})"
    head = (f"costs {_pct(f['cost']['goodput_loss'])} put back into {good} on {w}, yet fixing it alone in "
            f"{flawed} gains {_pct(f['gain']['goodput_gain'])}")
    if hits:
        r = hits[0]
        return (f"{head}: {r['partner']} masks it (once {r['partner']} is fixed too, fixing {fid} gains "
                f"{_pct(r['goodput'])} on {w}, {r['goodput_base']:.1%} -> {r['goodput_with']:.1%})")
    tried = ", ".join(p["partners"]) or "no other flaw"
    return f"{head}: several other flaws mask it at once (no single one among {tried} unmasks it)"


__all__ = ["classify", "find_interactions", "matters", "negligible", "inf"]

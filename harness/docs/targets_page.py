"""docs/targets.md: target specs, the flaw catalogue and every knob, from targets/.

The flaws come from `targets.flaws.FLAWS` (the catalogue `harness targets` prints and
`rank` ablates), the knobs from `targets.config.TargetConfig`, group by group
(`KNOB_GROUPS`), the spec grammar from `targets.spec`'s docstring, and the fleet each
base gets from the sizing rule itself.
"""

from __future__ import annotations

import inspect
import tempfile
from pathlib import Path

from harness.docs.fields import enum_meanings, field_docs
from harness.docs.markdown import anchor, banner, block, code, literal, table
from targets import spec
from targets.config import KNOB_GROUPS, KNOBS, TargetConfig, Where
from targets.flaws import FLAWS
from targets.spec import BASES, base_knobs, resolve_target


def _value(v: object) -> str:
    return "none" if v is None else code(literal(v))


def page() -> str:
    knobs = {f.key: f for f in field_docs(TargetConfig)}
    owner = {k: f.id for f in FLAWS for k in f.present}
    out = [banner(["targets/spec.py", "targets/flaws.py", "targets/config.py"]),
           "# Targets: specs, flaws and knobs\n",
           "`harness targets` prints the flaw table and `harness targets --knobs` every knob; this page says "
           "the same, in full.\n",
           "## Target specs\n",
           block(inspect.cleandoc(spec.__doc__ or "")),
           "Bases built in: " + ", ".join(code(b) for b in BASES) + "; a third-party base is a callable in the "
           "`harness.targets` entry-point group returning a dict of knobs.\n",
           "Fleet size: " + " ".join((TargetConfig.fleet_gpus.__doc__ or "").split()) + " "
           + "; ".join(f"{code(b)}: {resolve_target(b).fleet_gpus} GPUs" for b in BASES) + ".\n",
           "## Flaws\n",
           "`hardened+ID` puts one flaw back into hardened; `naive-ID` fixes one in naive. Each flaw owns its "
           "knobs: `present` is naive's value, `fixed` hardened's. *Exposed by* lists the scenarios "
           "([workloads](workloads.md#built-in-scenarios)) that `rank` and `review` use to measure it.\n\n"]
    rows: list[tuple[str, ...]] = []
    for fl in FLAWS:
        turned = "<br>".join(f"{code(k)}: {_value(fl.present[k])} → {_value(fl.fixed[k])}" for k in fl.present)
        rows.append((code(fl.id), fl.doc_item, fl.failure, fl.fix, turned, ", ".join(fl.exposed_by)))
    out.append(table(("id", "doc item", "failure", "fix in hardened", "knobs (naive → hardened)", "exposed by"),
                     rows))
    hardened = {**base_knobs("hardened")}
    out.append("\n## Knobs\n")
    out.append("Set a knob with `--set KEY=VALUE` (the value is read as JSON where it parses: `--set gpus=40`, "
               "`--set slo_s=0.2`, `--set cache=off`), after a spec's colon (`hardened:gpus=40,slo_s=0.2`) or "
               "in a design file's `[knobs]` table. Defaults are the design doc's (`naive`).\n\n")
    out.append("The knobs come in groups, one per component that reads them (each a typed sub-config in "
               "`targets/config.py`; a `TargetConfig` is every group at once, so a knob's name is the same flat "
               "key everywhere). *Applies* says which runs a knob changes: " + "; ".join(
                   f"{code(w)}: {note}" for w, note in enum_meanings(Where).items()) + ".\n\n")
    for group in KNOB_GROUPS:
        out.append(f"### {group.title}\n\n{' '.join((group.__doc__ or '').split())} Read by {group.read_by}.\n\n")
        knob_rows = []
        for k in group.model_fields:
            d = knobs[k]
            allowed = "; ".join(f"{code(literal(v))}: {note}" for v, note in d.values.items()) or d.allowed
            if d.values and len(d.values) < len(d.allowed.split(", ")):
                allowed = d.allowed + " (" + allowed + ")"
            flaw = owner.get(k)
            knob_rows.append((code(k), KNOBS[k].where.value, d.type, d.unit, _value(d.default),
                              _value(hardened[k]) if k in hardened else "same", allowed, d.meaning,
                              f"[{flaw}](#{anchor('Flaws')})" if flaw else ""))
        out.append(table(("knob", "applies", "type", "unit", "naive", "hardened", "allowed", "meaning", "flaw"),
                         knob_rows))
        out.append("\n")
    out.append("\n## Design files\n")
    out.append("A target can be a TOML file (the design as config): `harness run my-design.toml -w steady`.\n\n")
    out.append(f"It is checked against the loader whenever these docs are generated: "
               f"{code(DESIGN_KEYS)} and nothing else at the top level.\n\n")
    out.append(block(_checked_design(), "toml"))
    return "\n".join(out)


DESIGN_KEYS = "base, name, description, add, fix, [knobs]"
DESIGN = """\
base = "naive"                   # naive, hardened, or a plugin base (default naive)
name = "naive-with-admission"    # optional: the name in reports (default: the file's name)
description = "the doc, plus admission control"
fix = ["no-admission-control"]   # flaw ids to fix (optional)
add = []                         # flaw ids to put back (optional)

[knobs]                          # any knob above (optional)
gpus = 40
"""


def _checked_design() -> str:
    """DESIGN, after the spec loader has read it (a file, as users give it)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "design.toml"
        path.write_text(DESIGN)
        config = resolve_target(str(path))
    assert config.admission and config.gpus == 40, "the design example no longer means what it says"
    return DESIGN

"""The framework targets in `harness targets`: each one's version, flaws by default and knobs."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from targets.frameworks.registry import FRAMEWORKS, installed_version

__all__ = ["render_frameworks"]


def render_frameworks(console: Console, knobs: bool = False) -> None:
    """One table of the framework targets (their declared flaws, the knob that fixes each);
    with `knobs`, each framework's knobs and defaults too."""
    t = Table(title="framework targets (live only; FRAMEWORK[:KEY=VALUE,...], its knobs or the design's)",
              header_style="bold")
    t.add_column("target", no_wrap=True)
    t.add_column("installed")
    t.add_column("flaws at its defaults", overflow="fold")
    t.add_column("knob that fixes it", overflow="fold")
    for fw in FRAMEWORKS.values():
        got = installed_version(fw) or "no: pip install -e '.[frameworks]'"
        for i, flaw in enumerate(fw.flaws):
            fix = ", ".join(f"{k}={json.dumps(v)}" for k, v in flaw.fix.items()) or "none"
            t.add_row(fw.name if i == 0 else "", got if i == 0 else "", f"{flaw.id}: {flaw.why}",
                      fix + (f" ({flaw.fix_note})" if flaw.fix_note else ""))
        t.add_row("", "", f"[dim]{fw.summary}[/]", f"[dim]tuned: {fw.tuned_spec()}[/]", end_section=True)
    console.print(t)
    if not knobs:
        return
    for fw in FRAMEWORKS.values():
        k = Table(title=f"{fw.name} knobs (defaults)", header_style="bold")
        k.add_column("knob", no_wrap=True)
        k.add_column("default")
        k.add_column("meaning", overflow="fold")
        defaults = fw.knobs().model_dump(mode="json")
        for name, field in fw.knobs.model_fields.items():
            k.add_row(name, json.dumps(defaults[name]), field.description or "")
        console.print(k)

"""docs/results.md: the keys of every result document, from the typed results.

Each kind in `harness.results.RESULT_KINDS` is a pydantic model; this page walks each
one and every block inside it, once each, so the keys listed are exactly the keys a
result file holds (and `load_result` accepts).
"""

from __future__ import annotations

import inspect
import re

from pydantic import BaseModel

from harness.docs.fields import COMPUTED, REQUIRED, field_docs, nested_models
from harness.docs.markdown import anchor, banner, code, literal, table
from harness.results import RESULT_KINDS
from harness.results.io import SCHEMA


def models() -> list[type[BaseModel]]:
    """Every model reachable from the result kinds, each once, kinds first (breadth first)."""
    seen: list[type[BaseModel]] = list(RESULT_KINDS.values())
    i = 0
    while i < len(seen):
        for info in seen[i].model_fields.values():
            for m in nested_models(info.annotation):
                if m not in seen:
                    seen.append(m)
        i += 1
    return seen


def titles(all_models: list[type[BaseModel]]) -> dict[type[BaseModel], str]:
    """Each model's section title: its class name, or `module.Class` where two share a name."""
    counts: dict[str, int] = {}
    for m in all_models:
        counts[m.__name__] = counts.get(m.__name__, 0) + 1
    return {m: m.__name__ if counts[m.__name__] == 1 else f"{m.__module__.rsplit('.', 1)[-1]}.{m.__name__}"
            for m in all_models}


def _linked(type_text: str, annotation: object, title: dict[type[BaseModel], str]) -> str:
    """The type with each model in it linked to that model's own section."""
    targets = {m.__name__: title[m] for m in nested_models(annotation) if m in title}
    return re.sub(r"\b([A-Z]\w+)\b",
                  lambda m: f"[{targets[m[1]]}](#{anchor(targets[m[1]])})" if m[1] in targets else m[1], type_text)


def _default(value: object) -> str:
    if value is REQUIRED:
        return "required"
    if value is COMPUTED:
        return "filled in when written"
    return code(literal(value))


def page() -> str:
    all_models = models()
    title = titles(all_models)
    kinds = {cls: kind for kind, cls in RESULT_KINDS.items()}
    out = [banner(["harness/results/"]),
           "# Result documents\n",
           "Every command that runs work writes one JSON document (`--out FILE`, default "
           f"`runs/<time>-<kind>-<label>.json`), with `kind` naming its type and `schema` = {code(SCHEMA)}, "
           "the format's version (a nested result carries its own): a file of an older version is upgraded as it "
           "is read, one of a newer version is refused with both versions named. "
           "`harness report FILE` renders any of them again; from Python, "
           "`harness.results.load_result(PATH)` reads one back (an error names the file and the bad key) "
           "and `.to_json()` gives the same document. `--json` prints the command's summary instead.\n",
           "Non-finite numbers are written as `null` (a latency that was never reached). *default* is what "
           "a key reads as when a file lacks it (files written by older versions); *required* keys are "
           "always there.\n",
           table(("kind", "document"), [(code(k), f"[{title[c]}](#{anchor(title[c])})")
                                        for k, c in RESULT_KINDS.items()])]
    for m in all_models:
        out.append(f"## {title[m]}\n" + (f"\nThe `{kinds[m]}` result.\n" if m in kinds else ""))
        doc = inspect.getdoc(m) if m.__doc__ else ""
        if doc:
            out.append(" ".join(doc.split()) + "\n")
        rows = [(code(f.key), _linked(f.type, m.model_fields[name].annotation, title), f.unit,
                 _default(f.default), f.meaning)
                for name, f in zip(m.model_fields, field_docs(m))]
        out.append(table(("key", "type", "unit", "default", "meaning"), rows))
    return "\n".join(out)

"""docs/workloads.md and docs/workload.schema.json: the workload file, from its model.

Every key of a workload TOML file comes from `workloads.model.WorkloadConfig` and the
models inside it (and of an LLM URL's workload file from `workloads.llm_file.LlmWorkloadFile`):
type, unit, default, allowed values and meaning from the fields, and
one example per key taken from the built-in scenario files (so each example is a value
a shipped scenario really uses). The schema is pydantic's JSON Schema of the same model.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from typing import Any, Iterator

from pydantic import BaseModel

from harness.docs.fields import REQUIRED, FieldDoc, field_docs, is_array, meaning, nested_models, unit_of
from harness.docs.markdown import banner, block, code, table, toml
from workloads.answers import FIGURES, TENANT_FIGURES
from workloads.loader import SCENARIO_DIR, load_suite_config, load_workload, read_toml, scenario_names, suite_names
from workloads.model import WorkloadConfig

SCHEMA_FILE = "workload.schema.json"

_INLINE_MAX = 80  # longest inline table shown as an example

# The loader fills `name` from the file name when a file has none (workloads.loader).
_OPTIONAL_IN_FILES = {"name"}

# A new user's first file: validated against the model every time the docs are made.
MINIMAL = """\
name = "my-first"
description = "2,000 QPS for a minute from two tenants, one of them bursting"

[[phases]]
kind = "constant"
duration_s = 60
rate_rps = 2000

[[tenants]]
name = "web"
share = 0.7
connections = 20
bursts = [{ start_s = 20, end_s = 30, factor = 2.0 }]

[[tenants]]
name = "batch"
share = 0.3
"""

# Every section and kind at least once, so every key has an example; also validated.
EVERYTHING = """\
name = "my-evening"
description = "a ramp to the evening peak, a slow GPU spell, one tenant replaying popular requests"
exposes = ["blind-retries"]
good_target = "goodput stays above 95% through the slowdown"
process = "gamma"
burstiness = 2.0
window_s = 0.5

[[phases]]
kind = "ramp"
duration_s = 20
from_rps = 500
to_rps = 4000

[[phases]]
kind = "constant"
duration_s = 30
rate_rps = 4000

[[tenants]]
name = "app"
share = 0.8
connections = 16

[[tenants]]
name = "replayer"
share = 0.2
connections = 2

[[tenants.bursts]]
start_s = 30
end_s = 40
factor = 2.0

[payloads]
kind = "zipf"
zipf_s = 1.2
catalog_size = 1000
variants = 2

[sizes]
kind = "pareto"
length = 16
alpha = 1.2
max_length = 512

[[faults]]
kind = "slowdown"
at_s = 25
duration_s = 10
factor = 3.0

[[answers]]
figure = "tenants.app.goodput_ratio"
label = "app's goodput"
better = "higher"
tie = 0.01
"""
EXAMPLES = {"a first file": MINIMAL, "every section": EVERYTHING}


@dataclass(frozen=True)
class Section:
    """One TOML table of a workload file and the model that validates it."""

    header: str             # "[[phases]]", "[payloads]", "" for the top level
    model: type[BaseModel]
    path: tuple[str, ...]   # keys from the top of the file
    kind: str | None = None  # a union member's `kind` tag (phases)

    @property
    def title(self) -> str:
        if not self.header:
            return "Top-level keys"
        return f"{self.header} kind = \"{self.kind}\"" if self.kind else self.header


def sections(model: type[BaseModel] = WorkloadConfig, path: tuple[str, ...] = ()) -> Iterator[Section]:
    """Every table of the file, depth first, in the model's field order."""
    if not path:
        yield Section("", model, path)
    for name, info in model.model_fields.items():
        members = nested_models(info.annotation)
        if not members:
            continue
        sub = (*path, name)
        header = f"[[{'.'.join(sub)}]]" if is_array(info.annotation) else f"[{'.'.join(sub)}]"
        for member in members:
            kind = member.model_fields["kind"].default if len(members) > 1 else None
            yield Section(header, member, sub, kind)
            yield from sections(member, sub)


def _sources() -> dict[str, dict[str, Any]]:
    """Where examples come from: the built-in scenarios, then this page's own examples."""
    files = {name: read_toml(SCENARIO_DIR / f"{name}.toml") for name in scenario_names()}
    for title, text in EXAMPLES.items():
        data = tomllib.loads(text)
        WorkloadConfig.model_validate(data)  # a broken example stops the docs being made
        files[title] = data
    return files


def _tables(data: Any, path: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    """The tables found at `path` in one file's data (arrays flattened)."""
    if isinstance(data, list):
        for item in data:
            yield from _tables(item, path)
        return
    if not isinstance(data, dict):
        return
    if not path:
        yield data
        return
    if path[0] in data:
        yield from _tables(data[path[0]], path[1:])


def example(section: Section, f: FieldDoc, files: dict[str, dict[str, Any]]) -> str:
    """`key = value` as the first built-in scenario (or example above) that sets it writes it;
    a whole table only when it fits on a line (its own section has the examples)."""
    table_key = bool(nested_models(section.model.model_fields[f.key].annotation))
    for name, data in files.items():
        for t in _tables(data, section.path):
            if section.kind is not None and t.get("kind") != section.kind:
                continue
            line = f"{f.key} = {toml(t[f.key])}" if f.key in t else ""
            if line and not (table_key and len(line) > _INLINE_MAX):
                return f"{code(line)} ({name})"
    return ""


def _default(section: Section, f: FieldDoc) -> str:
    if not section.header and f.key in _OPTIONAL_IN_FILES:
        return "the file's name, without .toml"
    if f.default is REQUIRED:
        return "**required**"
    if f.default is None:
        return "none"
    return code(toml(f.default))


def _type(section: Section, f: FieldDoc) -> str:
    info = section.model.model_fields[f.key]
    if nested_models(info.annotation):
        return "array of tables" if is_array(info.annotation) else "table"
    return f.type


def _allowed(f: FieldDoc) -> str:
    if f.values:
        return "; ".join(f"{code(toml(v))}: {note}" for v, note in f.values.items())
    return f.allowed


def _meaning(section: Section, f: FieldDoc) -> str:
    if f.key == "kind" and section.kind:
        return f"selects this kind of {section.path[-1].rstrip('s')}"
    nested = [s.header for s in sections() if s.path == (*section.path, f.key)]
    see = f" (see {nested[0]})" if nested else ""
    return f.meaning + see


def rules() -> list[str]:
    """The checks across keys: each model validator's docstring."""
    out = []
    for s in sections():
        decorators = s.model.__pydantic_decorators__
        funcs = [d.func for d in decorators.model_validators.values()] + \
            [d.func for d in decorators.field_validators.values()]
        for func in funcs:
            doc = (func.__doc__ or "").strip()
            if doc and doc not in out:
                out.append(doc)
    return out


def schema() -> dict[str, Any]:
    """JSON Schema (2020-12) of a workload file, for editors' completion and checks."""
    doc = WorkloadConfig.model_json_schema()
    doc["required"] = [k for k in doc.get("required", []) if k not in _OPTIONAL_IN_FILES]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **doc, "title": "harness workload file"}


def schema_text() -> str:
    return json.dumps(schema(), indent=2, ensure_ascii=False) + "\n"


def page() -> str:
    files = _sources()
    out = [banner(["workloads/model.py", "workloads/answers.py", "workloads/scenarios/"]),
           "# Workload files\n",
           "A workload is a TOML file: phases of an aggregate rate over time, the tenants that send it, "
           "payload and size mixes, and faults to inject. Run one with "
           "`harness run TARGET -w PATH.toml`; `harness workloads NAME` prints a built-in one with its "
           "keys explained. Times are seconds from the start of the run (phases: from the phase's start); "
           "rates are requests per second. Unknown keys are refused, with an error naming the file and key.\n",
           f"Editors: [`{SCHEMA_FILE}`]({SCHEMA_FILE}) is the JSON Schema of this format "
           "(`harness workloads --schema` prints it); with the Even Better TOML extension (taplo), put "
           f"`#:schema ./docs/{SCHEMA_FILE}` (a path relative to the file, or a URL) on a workload's first "
           "line for completion and checks as you type.\n",
           "## Examples\n",
           "Both files are checked against the model whenever these docs are generated. A first file:\n",
           block(MINIMAL, "toml"),
           "A file with every section (each key's example below names the built-in scenario it comes "
           "from, or this one):\n",
           block(EVERYTHING, "toml")]
    for s in sections():
        out.append(f"## {s.title}\n")
        doc = (s.model.__doc__ or "").strip()
        if doc and s.model.__module__.startswith("workloads") and not doc.startswith("Usage docs"):
            out.append(" ".join(doc.split()) + "\n")
        rows: list[tuple[str, ...]]  # 7 cells here, 5 in the scenario table below
        rows = [(code(f.key), _type(s, f), f.unit, _default(s, f), _allowed(f), _meaning(s, f), example(s, f, files))
                for f in field_docs(s.model)]
        out.append(table(("key", "type", "unit", "default", "allowed", "meaning", "example"), rows))
    out.append("## Rules across keys\n")
    out.append("".join(f"- {r}\n" for r in rules()))
    out.append("\n## Figures an answer may name\n")
    out.append("`[[answers]].figure` is one of these dotted keys of the run summary, or "
               "`tenants.SELECTOR.FIGURE` with SELECTOR a tenant name, a glob (`small*`), `*` or `!name` "
               "(every tenant but that one) and FIGURE one of the per-tenant figures.\n\n")
    out.append(table(("figure", "label", "unit", "better"),
                     [(code(k), v.label, v.unit.value, v.better) for k, v in FIGURES.items()]))
    out.append("\nPer-tenant figures:\n\n")
    out.append(table(("figure", "label", "unit", "better"),
                     [(code(k), v.label, v.unit.value, v.better) for k, v in TENANT_FIGURES.items()]))
    out.append("\n## Built-in scenarios\n")
    out.append("In `workloads/scenarios/`; pass the name to `-w`.\n\n")
    rows = []
    for name in scenario_names():
        wl = load_workload(name)
        rows.append((code(name), f"{wl.duration_s:g}", f"{wl.peak_rps:g}", ", ".join(wl.exposes),
                     wl.description))
    out.append(table(("name", "length (s)", "peak (requests/s)", "exposes", "description"), rows))
    out.append("\n## Suites\n\n")
    out.append("Workload scenarios run by `harness compare`/`rank`/`alerts --suite`; canary rollouts "
               "(`[[canary]]`, format in `workloads/suite.py`) by `harness canary --suite`.\n\n")
    out.append(table(("suite", "runs"), [(code(s), load_suite_config(s).contents()) for s in suite_names()]))
    out.append(llm_section())
    return "\n".join(out)


# An LLM workload file with every key that goes together: validated whenever the docs are made.
LLM_EXAMPLE = """\
name = "chat-day"
description = "ShareGPT conversations from 4 users at a time, behind 4 shared system prompts"
mix = "short"
dataset = "chats.json"
dataset_format = "sharegpt"
concurrency = 4
duration_s = 60
think_time_s = 1.0
prefix_tokens = 256
prefix_groups = 4
"""


def llm_section() -> str:
    """The LLM workload file (`workloads.llm_file`): what `-w FILE.toml` of an LLM URL holds."""
    from workloads.llm_file import LlmWorkloadFile

    LlmWorkloadFile.model_validate(tomllib.loads(LLM_EXAMPLE))  # a broken example stops the docs being made
    rows = [(code(f.key), f.type, f.unit, "the file's name, without .toml" if f.key == "name" else
             ("none" if f.default is None else code(toml(f.default))), _allowed(f), f.meaning)
            for f in field_docs(LlmWorkloadFile)]
    return "\n".join([
        "\n## LLM workload files\n",
        "`harness run URL -w FILE.toml` (and `compare URL_A URL_B`, `sweep URL`) of an OpenAI-compatible LLM URL "
        "reads an LLM workload file (`workloads/llm_file.py`): the traffic options of those commands as keys. An "
        "option given on the command line replaces the file's key; a load given (`--rate`, `--concurrency`, "
        "`--max-concurrency`) replaces the file's whole load. `sweep` sets its own load, so it refuses a file "
        "with `rate_rps`, `duration_s`, `concurrency` or `max_concurrency`. `dataset` and a trace `mix` are "
        "relative to the file. The rules across keys are the options': `concurrency` with `rate_rps` is "
        "ambiguous (`max_concurrency` caps an open loop), `concurrency` with `max_concurrency`, "
        "`dataset_format` without `dataset` and `prefix_groups` without `prefix_tokens` are refused. Unknown "
        "keys are refused; each error names the file and key.\n",
        block(LLM_EXAMPLE, "toml"),
        table(("key", "type", "unit", "default", "allowed", "meaning"), rows)])



def explain(data: dict[str, Any], model: type[BaseModel] = WorkloadConfig,
            prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(key, value, unit, meaning) for each key a workload file sets, in its order (`harness workloads NAME`)."""
    rows = []
    for key, value in data.items():
        info = model.model_fields[key]
        members = nested_models(info.annotation)
        if not members:
            note = meaning(model, key) or (f"which kind of {prefix.split('[')[0].rstrip('s.')}" if key == "kind" else "")
            rows.append((prefix + key, toml(value), unit_of(key), note))
            continue
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            member = next((m for m in members if m.model_fields.get("kind") is None
                           or len(members) == 1 or m.model_fields["kind"].default == item.get("kind")), members[0])
            where = f"{prefix}{key}[{i}]." if isinstance(value, list) else f"{prefix}{key}."
            rows += explain(item, member, where)
    return rows

"""The reference docs in docs/ equal a fresh generation, and say everything the code holds.

Two kinds of test: each checked-in page is compared with `harness docs` output (a stale
page names itself and the command that regenerates it); and the models, registries and
command tree are walked here, independently of the generator, to check that every
workload key, knob, flaw, result key, gate key, error kind, template placeholder and
command option appears in the pages.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any, Iterator, get_args

import pytest
import typer.main
from pydantic import BaseModel

from harness.cli import app
from harness.docs import HANDWRITTEN, REGENERATE, page, page_names, stale, write

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
HEAVY = {"http-api.md"}  # imports torch to ask each live model for its input


@pytest.fixture(scope="module")
def cli() -> Any:
    return typer.main.get_command(app)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in HEAVY else n
                                  for n in page_names()])
def test_checked_in_page_equals_a_fresh_generation(name: str, cli: Any) -> None:
    fresh = page(name, cli)
    path = DOCS / name
    assert path.is_file(), f"docs/{name} is missing: regenerate with `{REGENERATE}`"
    kept = path.read_text(encoding="utf-8")
    if kept != fresh:
        diff = "".join(list(difflib.unified_diff(kept.splitlines(True), fresh.splitlines(True),
                                                 f"docs/{name} (checked in)", "fresh", n=0))[:30])
        pytest.fail(f"docs/{name} is stale: regenerate with `{REGENERATE}`\n{diff}")


def test_no_page_in_docs_that_is_not_generated() -> None:
    extra = sorted(p.name for p in DOCS.iterdir()
                   if p.is_file() and p.name not in page_names() and p.name not in HANDWRITTEN)
    assert not extra, (f"docs/ holds files the generator does not make: {extra} "
                       "(delete them, generate them, or list them in harness.docs.HANDWRITTEN)")
    assert not set(HANDWRITTEN) & set(page_names()), "a page cannot be both generated and hand-written"


def test_stale_names_each_file_that_differs_and_write_fixes_it(tmp_path: Path, cli: Any) -> None:
    pages = {n: page(n, cli) for n in ("README.md", "cli.md")}
    assert stale(tmp_path, pages) == [f"{tmp_path / 'README.md'}: missing", f"{tmp_path / 'cli.md'}: missing"]
    assert write(tmp_path, pages) == ["README.md", "cli.md"]
    assert stale(tmp_path, pages) == [] and write(tmp_path, pages) == []
    (tmp_path / "cli.md").write_text(pages["cli.md"].replace("--seed", "--sed"))
    (tmp_path / "old.md").write_text("x")
    (tmp_path / "design.md").write_text("hand-written: never flagged")
    assert stale(tmp_path, pages) == [f"{tmp_path / 'cli.md'}: differs from a fresh generation",
                                      f"{tmp_path / 'old.md'}: not generated any more (delete it)"]


# -- everything in the code is in the docs -------------------------------------------------

def _doc(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    """The text under `## heading` up to the next `## ` heading."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start: end if end != -1 else None]


def _models(tp: Any) -> Iterator[type[BaseModel]]:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        yield tp
    for arg in get_args(tp):
        yield from _models(arg)


def _reachable(roots: list[type[BaseModel]]) -> list[type[BaseModel]]:
    seen, todo = [], list(roots)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.append(m)
            todo += [n for f in m.model_fields.values() for n in _models(f.annotation)]
    return seen


def test_every_workload_key_is_documented_with_its_table() -> None:
    from workloads.model import WorkloadConfig

    text = _doc("workloads.md")
    schema = json.loads(_doc("workload.schema.json"))
    defs = {**schema["$defs"], "WorkloadConfig": schema}
    for model in _reachable([WorkloadConfig]):
        for name, info in model.model_fields.items():
            assert f"| `{info.alias or name}` |" in text, f"workload key {model.__name__}.{name} not in workloads.md"
            assert name in defs[model.__name__]["properties"], f"{model.__name__}.{name} not in the schema"
    for header in ("[[phases]] kind = \"ramp\"", "[[tenants]]", "[[tenants.bursts]]", "[payloads]", "[sizes]",
                   "[[faults]]", "[[answers]]"):
        assert f"\n## {header}\n" in text
    key_rows = [r.split(" | ") for r in text.splitlines() if r.startswith("| `") and r.count(" | ") == 6]
    assert len(key_rows) > 40, "the key tables changed shape"
    for key, type_, *_, example in key_rows:
        assert "table" in type_ or example.strip(" |") != "-", f"workload key {key} has no example"


def test_every_knob_and_flaw_is_documented() -> None:
    from targets.config import KNOB_GROUPS, KNOBS, TargetConfig
    from targets.flaws import FLAWS

    text = _doc("targets.md")
    knobs = _section(text, "Knobs")
    for name in TargetConfig.model_fields:
        assert f"| `{name}` |" in knobs, f"knob {name} not in targets.md"
    for group in KNOB_GROUPS:  # each knob under its group's heading, with where it applies
        start = knobs.index(f"\n### {group.title}\n")
        end = knobs.find("\n### ", start + 1)
        under = knobs[start: end if end != -1 else None]
        for name in group.model_fields:
            assert f"| `{name}` | {KNOBS[name].where.value} |" in under, f"knob {name} not under {group.title}"
    rows = {line.split(" | ")[0]: line for line in _section(text, "Flaws").splitlines() if line.startswith("| `")}
    for f in FLAWS:
        row = rows.get(f"| `{f.id}`")
        assert row, f"flaw {f.id} not in targets.md"
        assert f.fix in row and f.failure in row and f" {f.doc_item} " in row
        assert row.rstrip(" |").endswith(", ".join(f.exposed_by)), f"{f.id}: exposing scenarios differ"
        for knob in f.present:
            assert f"`{knob}`" in row


def test_every_result_key_is_documented_under_its_block() -> None:
    from harness.results import RESULT_KINDS

    text = _doc("results.md")
    for kind in RESULT_KINDS:
        assert f"| `{kind}` |" in text
    models = _reachable(list(RESULT_KINDS.values()))
    names = [m.__name__ for m in models]
    for model in models:
        # Two blocks with one class name get their module in the heading.
        heading = model.__name__ if names.count(model.__name__) == 1 else \
            f"{model.__module__.rsplit('.', 1)[-1]}.{model.__name__}"
        section = _section(text, heading)
        for name, info in model.model_fields.items():
            assert f"| `{info.alias or name}` |" in section, f"{model.__name__}.{info.alias or name} not in results.md"


def test_every_gate_operator_and_summary_number_is_documented() -> None:
    from harness.gate.file import OPS
    from harness.results.run import RunSummary

    text = _doc("gate.md")
    for op in OPS:
        assert f"`{op}`" in text
    for name, info in RunSummary.model_fields.items():
        assert re.search(rf"\| `{re.escape(info.alias or name)}[.`]", text) or info.annotation in (str, bool) \
            or "list" in str(info.annotation) or "Literal" in str(info.annotation), f"summary key {name} not in gate.md"


def test_every_error_kind_the_server_can_answer_is_documented() -> None:
    """Kinds read from the server sources with a regex (the generator parses the AST), plus
    the target's statuses and the edge's parser errors."""
    from targets.http import edge
    from targets.protocol import Status

    text = _doc("http-api.md")
    kinds = set()
    for module in ("server.py", "parse.py", "edge.py", "l4proxy.py"):
        source = (ROOT / "targets" / "http" / module).read_text()
        kinds |= set(re.findall(r'(?:_error|BadRequest|_canned)\(\s*"?\d{3}[^,]*,\s*"([a-z0-9-]+)"', source))
        kinds |= set(re.findall(r'return \d{3}, "([a-z0-9-]+)"', source))
    kinds |= {kind for _, kind, _ in edge._PARSER_ERRORS}
    kinds |= {s.name.lower() for s in Status if s is not Status.OK}
    assert len(kinds) > 25, kinds  # the regex still finds the server's refusals
    for kind in sorted(kinds):
        assert f"| `{kind}` |" in text, f"error kind {kind} not in http-api.md"


def test_every_template_placeholder_and_body_field_is_documented() -> None:
    from harness.live.payloads import _PLACEHOLDER
    from targets.http.parse import FIELDS

    text = _doc("http-api.md")
    for name in re.findall(r"[a-z_]+", _PLACEHOLDER.pattern.split("(", 1)[1].split(")", 1)[0]):
        assert f"`{{{{{name}}}}}`" in text, f"placeholder {{{{{name}}}}} not in http-api.md"
    for field in FIELDS:
        assert f"| `{field}` |" in text


def test_every_command_and_option_is_documented(cli: Any) -> None:
    text = _doc("cli.md")

    def walk(group: Any, prefix: str) -> Iterator[tuple[str, Any]]:
        for name, cmd in group.commands.items():
            yield f"{prefix} {name}", cmd
            if hasattr(cmd, "commands"):
                yield from walk(cmd, f"{prefix} {name}")

    for full, cmd in walk(cli, "harness"):
        section = _section(text, full)
        for p in cmd.params:
            if "--help" in p.opts:
                continue
            shown = [f"`{p.name.upper()}`"] if p.param_type_name == "argument" else [f"`{o}`" for o in p.opts]
            for s in shown:
                assert s in section, f"{full}: {s} not in cli.md"

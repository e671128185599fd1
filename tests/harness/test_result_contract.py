"""The result contract (harness.results.base), held for every kind and every command.

Every `Result` subclass is registered (RESULT_KINDS), says its `kind`, implements
`summary_json`, and has a view (reports.registry). Every command that takes `--json` is
found in the typer app and run on a tiny sim input (and the live LLM compare on the tiny
decoder): what it prints parses as strict JSON and is its result's `summary_json`; the
file it writes carries the schema, loads, renders again with `harness report --html`, and its terminal view fits 80 columns with no cell cut
(tests/reports/fit.py). A new command with `--json` fails here until CASES gives it a tiny
invocation; a new kind fails until it is registered, viewed and made by some case.
"""

from __future__ import annotations

import fcntl
import html
import importlib
import inspect
import json
import os
import pkgutil
import typing
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
from typer.testing import CliRunner

import harness.results
from harness.cli import app
from harness.results import RESULT_KINDS, Result, from_json, load_result
from harness.results import io as results
from reports.registry import VIEW_FUNCTIONS, VIEWS, view
from tests.reports.fit import rendered

DATA = Path(__file__).resolve().parent.parent / "reports" / "data"

# command -> tiny sim invocations (options after the command name; --json and --out are added), and one
# live LLM compare.
# {suite}, {gate} and {rank} are a one-scenario suite, a one-check gate file and the rank case's file;
# {alerts_suite} a short spike and the calm days `alerts` adds, cut short.
CASES: dict[str, list[list[str]]] = {
    "run": [["naive", "-w", "steady", "--duration", "1", "--rate", "200"],
            ["naive", "-w", "steady", "--duration", "1", "--rate", "200", "--seeds", "2", "--jobs", "1"]],
    "compare": [["naive", "hardened", "-w", "steady", "--duration", "1", "--rate", "200", "--jobs", "1"],
                ["llm-static", "llm-continuous", "--duration", "2"],
                ["llm-fleet:router=round-robin,replicas=2", "llm-fleet:router=prefix,replicas=2", "--duration", "10",
                 "--rate", "2"],
                ["llm-static", "llm-continuous", "--duration", "2", "--seeds", "2", "--jobs", "1"],
                # live: the tiny decoder served by each policy (the only live case: about a minute)
                ["llm-static", "llm-continuous", "--mode", "live", "--duration", "1", "--rate", "4"]],
    "rank": [["--suite", "{suite}", "--scale", "0.05", "--jobs", "1"]],
    "review": [["--rank", "{rank}", "--no-parts", "--canary-seeds", "0"]],
    "gate": [["{gate}", "--jobs", "1"]],
    "capacity": [["--quick", "--qps", "500", "--jobs", "1"]],
    "sweep": [["hardened", "--step-duration", "0.5", "--tolerance", "0.5"]],
    "pool": [["--compare", "--duration", "5"]],
    "alerts": [["hardened", "--suite", "{alerts_suite}", "--hour-s", "5", "--jobs", "1"]],
    "canary": [["careful", "--seeds", "1", "--day", "good", "--day", "wrong", "--jobs", "1"]],
}
GATE = '[defaults]\nduration_s = 2\n[[scenario]]\nname = "night"\nchecks = ["latency_s.p99 <= 0.3"]\n'
ALERTS_SUITE = ('scenarios = ["spike", "steady", "night", "diurnal"]\n'
                '[durations]\nspike = 6\nsteady = 1\ndiurnal = 2\nnight = 2\n')


def json_commands() -> set[str]:
    """The app's commands with a `--json` option, found from their click commands."""
    found = set()
    for name, command in typer.main.get_command(app).commands.items():
        if any("--json" in param.opts for param in command.params):
            found.add(name)
    return found


def strict_json(text: str) -> Any:
    """json.loads that refuses NaN and Infinity (not JSON, though Python writes them)."""
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


def result_kinds() -> list[type[Result]]:
    """Every Result subclass the packages define (tests may define their own): every module of
    harness.results imported first, since RESULT_KINDS imports a kind's module on first use."""
    for module in pkgutil.iter_modules(harness.results.__path__):
        importlib.import_module(f"harness.results.{module.name}")
    out, todo = [], list(Result.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if not cls.__module__.startswith("tests"):
            out.append(cls)
    return out


# -- the contract, without running anything ------------------------------------------------

def test_every_result_kind_is_registered_under_its_kind_and_implements_the_contract() -> None:
    for cls in result_kinds():
        field = cls.model_fields["kind"]
        kind = field.default
        assert typing.get_args(field.annotation) == (kind,), f"{cls.__name__}: kind must be Literal['{kind}']"
        assert RESULT_KINDS.get(kind) is cls, f"{cls.__name__} is not RESULT_KINDS['{kind}']"
        assert not inspect.isabstract(cls), f"{cls.__name__} lacks {', '.join(cls.__abstractmethods__)}"
    assert set(RESULT_KINDS) == {c.model_fields["kind"].default for c in result_kinds()}


def test_every_result_kind_has_a_view_and_every_view_a_kind() -> None:
    assert set(VIEWS) == set(RESULT_KINDS)
    for kind in RESULT_KINDS:
        module = view(kind)
        assert all(callable(getattr(module, f)) for f in VIEW_FUNCTIONS), kind


def test_a_kind_that_forgets_summary_json_cannot_be_made() -> None:
    class Forgetful(Result):
        kind: typing.Literal["forgetful"] = "forgetful"

    with pytest.raises(TypeError, match="summary_json"):
        Forgetful()


def test_a_view_that_lacks_a_function_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(VIEWS, "sweep", "reports.fmt")
    with pytest.raises(TypeError, match="lacks title, render, sections"):
        view("sweep")


# -- the schema version ---------------------------------------------------------------------

# Keys added to results since that file was written; each loads from an old file as its default.
NEWER_KEYS = {"client_throttle_k", "client_throttle_window_s", "throttled"}


def without_newer_keys(new: typing.Any, old: typing.Any) -> typing.Any:
    """``new`` without the NEWER_KEYS that ``old`` lacks (any other extra key stays, to fail)."""
    if isinstance(new, dict) and isinstance(old, dict):
        return {k: without_newer_keys(v, old.get(k)) for k, v in new.items() if k in old or k not in NEWER_KEYS}
    if isinstance(new, list) and isinstance(old, list):
        return [without_newer_keys(a, b) for a, b in zip(new, old)] + new[len(old):]
    return new


def test_a_file_written_before_the_schema_check_still_loads_and_renders(tmp_path: Path) -> None:
    # Written by `harness compare naive hardened -w night --duration 2` at df40d0b (main, before
    # this contract): its `schema` is version 1, read as today's.
    old = DATA / "compare-night-df40d0b.json"
    doc = json.loads(old.read_text())
    result = load_result(old)
    assert result.kind == "compare" and without_newer_keys(result.to_json(), doc) == doc
    done = CliRunner().invoke(app, ["report", str(old), "--html", str(tmp_path / "old.html")])
    assert done.exit_code == 0, done.output


def test_every_result_document_says_its_schema_and_a_newer_one_is_refused() -> None:
    doc = json.loads((DATA / "compare-night-df40d0b.json").read_text())
    assert results.schema_version(doc) == results.SCHEMA_VERSION and doc["schema"] == results.SCHEMA
    newer = {**doc, "schema": f"harness.result/{results.SCHEMA_VERSION + 1}"}
    with pytest.raises(ValueError, match=r"key 'schema': written by a newer harness \(result schema 2"):
        from_json(newer, "new.json")
    with pytest.raises(ValueError, match="unknown result schema 'harness.result/one'"):
        from_json({**doc, "schema": "harness.result/one"}, "odd.json")


def test_an_older_schema_is_upgraded_as_it_is_read_nested_results_too(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = json.loads((DATA / "compare-night-df40d0b.json").read_text())
    seen: list[str] = []

    def one_to_two(d: dict[str, Any]) -> dict[str, Any]:
        seen.append(d["kind"])
        return {**d, "a": f"{d['a']} (upgraded)"} if d["kind"] == "compare" else d

    monkeypatch.setattr(results, "SCHEMA_VERSION", 2)
    monkeypatch.setitem(results.UPGRADES, 1, one_to_two)
    result = from_json(doc)
    assert sorted(seen) == ["compare", "run", "run"]  # the compare and its two nested runs
    assert result.a == "naive (upgraded)" and result.schema_ == "harness.result/2"
    assert result.runs["night"]["naive"].schema_ == "harness.result/2"


# -- every command with --json, on a tiny input -----------------------------------------------

def test_cases_cover_every_command_that_takes_json() -> None:
    found = json_commands()
    assert found - set(CASES) == set(), f"add a tiny invocation to CASES for: {sorted(found - set(CASES))}"
    assert set(CASES) - found == set(), f"CASES names commands without --json: {sorted(set(CASES) - found)}"


def _case_ids() -> list[str]:
    return [f"{command}-{i}" for command, variants in CASES.items() for i in range(len(variants))]


def _make(root: Path) -> dict[str, dict[str, Any]]:
    """Each case run once, in CASES order: case id -> exit code, stdout, all output, result files."""
    (root / "tiny.toml").write_text('scenarios = ["night"]\n')
    (root / "gate.toml").write_text(GATE)
    (root / "alerts.toml").write_text(ALERTS_SUITE)
    places = {"{suite}": str(root / "tiny.toml"), "{gate}": str(root / "gate.toml"),
              "{alerts_suite}": str(root / "alerts.toml")}
    out: dict[str, dict[str, Any]] = {}
    for case in _case_ids():
        command, i = case.rsplit("-", 1)
        folder = root / case
        args = [places.get(a, a) for a in CASES[command][int(i)]]
        target = folder if command == "alerts" else folder / "result.json"  # alerts: --out is a folder
        answer = CliRunner().invoke(app, [command, *args, "--json", "--out", str(target)])
        files = [str(p) for p in sorted(folder.glob("*.json")) if '"schema"' in p.read_text()[:40]]
        out[case] = {"exit_code": answer.exit_code, "stdout": answer.stdout, "output": answer.output, "files": files}
        if command == "rank" and files:
            places["{rank}"] = files[0]
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The cases' answers, made once per test session: under xdist the first worker makes them
    and the other reads its file (a module fixture would run on each worker)."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run_id is None:
        return _make(tmp_path_factory.mktemp("contract"))
    root = tmp_path_factory.getbasetemp().parent / f"contract-{run_id}"
    with open(f"{root}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "made.json").exists():
            root.mkdir(exist_ok=True)
            (root / "made.json").write_text(json.dumps(_make(root)))
    return json.loads((root / "made.json").read_text())


def _file(made: dict[str, dict[str, Any]], case: str) -> Path:
    answer = made[case]
    assert answer["exit_code"] == 0 and len(answer["files"]) == 1, (case, answer["output"], answer["files"])
    return Path(answer["files"][0])


@pytest.mark.slow
@pytest.mark.parametrize("case", _case_ids())
def test_json_prints_the_summary_of_the_result_written(made: dict[str, dict[str, Any]], case: str) -> None:
    path = _file(made, case)
    printed = strict_json(made[case]["stdout"])
    assert isinstance(printed, dict) and printed, case
    doc = strict_json(path.read_text())
    assert doc["schema"] == results.SCHEMA
    result = load_result(path)
    assert result.to_json() == doc
    assert json.loads(results.dumps(result.summary_json())) == printed


@pytest.mark.slow
def test_every_kind_is_made_by_some_case_and_renders_again_with_report_html(
        made: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    files = [_file(made, case) for case in made]
    loaded = [load_result(p) for p in files]
    assert {r.kind for r in loaded} == set(RESULT_KINDS)
    page = tmp_path / "all.html"
    done = CliRunner().invoke(app, ["report", *map(str, files), "--html", str(page)])
    assert done.exit_code == 0, done.output
    text = page.read_text()
    for r in loaded:
        title = view(r.kind).title(r)
        assert html.escape(title) in text or title in text, (r.kind, title)


@pytest.mark.slow
@pytest.mark.parametrize("case", _case_ids())
def test_every_view_fits_80_columns_without_cutting_a_cell(made: dict[str, dict[str, Any]], case: str) -> None:
    result = load_result(_file(made, case))
    text, cuts = rendered(view(result.kind).render, result, 80)
    assert cuts == [], "\n".join(cuts) + "\n" + text
    assert max(len(line) for line in text.splitlines()) <= 80


@pytest.mark.slow
def test_every_kind_writes_csv_tables_a_csv_reader_loads(made: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """`harness report RESULT --csv DIR`: every kind gives at least one table, each file parses
    with csv.DictReader into rows whose keys are its header, and a number in the result is a cell."""
    import csv

    files = [_file(made, case) for case in made]
    out = tmp_path / "csv"
    done = CliRunner().invoke(app, ["report", *map(str, files), "--csv", str(out)])
    assert done.exit_code == 0, done.output
    kinds: set[str] = set()
    for path in files:
        tables = sorted(out.glob(f"{path.stem}.*.csv"))
        assert tables, (path, done.output)
        kinds.add(load_result(path).kind)
        for table in tables:
            with table.open(newline="") as f:
                reader = csv.DictReader(f)
                rows = list(reader)
            assert reader.fieldnames and rows, table
            assert all(set(row) == set(reader.fieldnames) for row in rows), table
    assert kinds == set(RESULT_KINDS)

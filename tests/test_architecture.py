"""Dependencies point one way: import-linter's contracts hold, no import cycles, no torch in sim,
no aiohttp or torch in the clock-free core of targets.

The contracts live in pyproject.toml ([tool.importlinter]); each is checked here by name so
a broken one names itself. Cycles are found with grimp (import-linter's graph library) as
strongly connected components of the module graph of the four packages.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "targets", "workloads", "reports")
CONTRACTS = [c["name"] for c in
             tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]]


@pytest.fixture(scope="module")
def lint_output() -> str:
    """One `lint-imports` run, wide enough that no contract name wraps."""
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1"}
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    done = subprocess.run([sys.executable, "-c", code, "--no-cache"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    return done.stdout + done.stderr


@pytest.mark.parametrize("name", CONTRACTS)
def test_import_contract_is_kept(lint_output: str, name: str) -> None:
    line = re.search(rf"^{re.escape(name)} (KEPT|BROKEN)\b.*$", lint_output, re.MULTILINE)
    assert line, f"contract {name!r} not reported by lint-imports:\n{lint_output}"
    if line.group(1) == "BROKEN":
        # The details section repeats the name, underlined, then the offending imports.
        details = lint_output.split(f"\n{name}\n", 1)[-1].split("\n\n\n", 1)[0]
        pytest.fail(f"import contract broken: {name}\n{details}")


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of size > 1 (or with a self-import), each sorted; iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    found.append(sorted(component))
    return sorted(found)


def test_strongly_connected_finds_cycles_and_only_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"d"}}
    assert strongly_connected(graph) == [["a", "b", "c"], ["e"]]
    assert strongly_connected({"x": {"y"}, "y": set()}) == []


def test_no_import_cycles() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    cycles = strongly_connected(edges)
    lines = []
    for component in cycles:
        members = set(component)
        lines.append(" <-> ".join(component))
        for m in component:
            for imported in sorted(edges[m] & members):
                numbers = sorted({d["line_number"] for d in
                                  graph.get_import_details(importer=m, imported=imported)})
                lines.append(f"    {m} -> {imported} (l.{', '.join(map(str, numbers))})")
    assert not cycles, "import cycles:\n" + "\n".join(lines)


# A sim, with the cost model read from a profiled table, must never load torch: torch takes
# seconds to import and is only for live GPU workers and profiling.
_NO_TORCH = """
import json, sys
from harness.engine.jobs import SimJob
SimJob("naive", "steady", duration_s=1).run()
SimJob("naive", "steady", duration_s=1,
       overrides={"cost_model": "table", "cost_table": sys.argv[1]}).run()
from harness.cli import app
try:
    app(["run", "naive", "-w", "steady", "--duration", "1", "--quiet", "--out", sys.argv[2],
         "--set", "cost_model=table", "--set", "cost_table=" + sys.argv[1]])
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "torch")))
"""


@pytest.mark.slow
def test_a_sim_with_a_cost_table_does_not_import_torch(tmp_path: Path) -> None:
    table = tmp_path / "table.json"
    table.write_text(json.dumps({
        "model": "mlp", "device": "cpu", "torch": "2.13.0", "threads": 1,
        "points": [{"batch": 1, "length": None, "seconds": 0.01},
                   {"batch": 32, "length": None, "seconds": 0.05}]}))
    done = subprocess.run([sys.executable, "-c", _NO_TORCH, str(table), str(tmp_path / "run.json")],
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [], "a sim imported torch"
    assert (tmp_path / "run.json").exists()


# The clock-free core of targets: every module but the live front end, the GPU side and the LLM
# package (whose server and decoder are live too). import-linter holds this line as well
# (pyproject.toml); this reads the sources itself, so it holds without the linter's graph.
LIVE_ONLY = ("aiohttp", "torch")
NOT_CORE = ("http", "gpu", "llm")


def core_modules() -> list[Path]:
    """Every source file of the core of `targets`, found on disk (a new module is in it at once)."""
    base = ROOT / "targets"
    return sorted(p for p in base.rglob("*.py") if p.relative_to(base).parts[0] not in NOT_CORE)


def imported_roots(source: str) -> set[str]:
    """The top-level package of every import in `source`, lazy ones inside functions included
    (relative imports are the project's own, left out)."""
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_imported_roots_sees_lazy_and_nested_imports() -> None:
    source = "import os\nfrom torch import nn\ndef f():\n    import aiohttp.web\nclass C:\n    from . import x\n"
    assert imported_roots(source) == {"os", "torch", "aiohttp"}


def test_the_core_of_targets_imports_neither_aiohttp_nor_torch() -> None:
    modules = core_modules()
    assert len(modules) > 20 and ROOT / "targets" / "batcher.py" in modules
    assert not any(p.relative_to(ROOT).parts[1] in NOT_CORE for p in modules)
    found = [f"{p.relative_to(ROOT)} imports {name}" for p in modules
             for name in sorted(imported_roots(p.read_text()) & set(LIVE_ONLY))]
    assert not found, "the clock-free core of targets imports live-only packages:\n" + "\n".join(found)

"""Reference docs generated from the code: `harness docs --out docs/`.

Each page is a pure function of the models, registries and command tree it documents
(workload model, flaw catalogue and knobs, gate parser, result types, HTTP server,
CLI), so the checked-in `docs/` can be compared with a fresh generation and a test
fails the moment they differ. This package reads harness.gate, harness.live and
harness.results; the CLI's command tree is passed in, so nothing here imports the CLI.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

from harness.docs.markdown import REGENERATE, banner, table

__all__ = ["HANDWRITTEN", "PAGES", "REGENERATE", "generate", "page", "page_names", "stale", "write"]

# file -> (what it holds, builder). Builders take the CLI's click command tree.
PAGES: dict[str, tuple[str, Callable[[Any], str]]] = {}

# The pages of docs/ written by hand (paths relative to docs/), listed in the index and left alone by
# `write` and `stale`. tests/test_guides.py checks each exists, that docs/guide/ holds no page missing
# here, that every repository path they name exists, and runs every command the guides show.
HANDWRITTEN: dict[str, str] = {
    "guide/design-review.md": "the design-review walkthrough: Parts 1-3 and the follow-ups, command by command, "
                              "and what to look at in each answer",
    "guide/ci-gate.md": "a CI performance gate: the gate file, exit codes, baselines, seeds, JUnit and Markdown",
    "guide/your-own-server.md": "your own server as a target: request-level /predict URLs and OpenAI-compatible "
                                "LLM endpoints",
    "guide/your-own-vllm-server.md": "my own vLLM server: data sets (ShareGPT, JSONL/CSV, Mooncake), conversations, "
                                     "shared prefixes, --concurrency and --max-concurrency, a concurrency sweep",
    "guide/live-mode.md": "live mode: scaling, validity (who is at fault), the balancer, the front end, "
                          "framework targets",
    "guide/llm-fleet-live.md": "a live LLM fleet: the tiny decoder's prefix cache, the project's router and "
                               "sglang-router in front of the same replicas, the chat day live against sim",
    "guide/llm-fleet.md": "a fleet of LLM replicas behind a router (sim): four routers side by side, the load "
                          "bound on hot documents, the fleet flaws, the simulator's speed",
    "guide/reading-reports.md": "how to read a result: the outcome shares, the latencies, the verdicts, "
                                "the HTML report, the result files",
    "design.md": "the architecture: two clocks, the data path, the layers and their import contracts, "
                 "where each feature lives, how to add a target, a workload, a flaw, a result kind",
    "measurements.md": "measured figures, each table with its machine and date: frameworks on the bad days, "
                       "closed forms, simulator speed, LLM timing",
}


def _register() -> None:
    from harness.docs import cli_page, frameworks_page, gate_page, http_page, results_page, targets_page, workload_page

    PAGES.update({
        "README.md": ("this index", lambda app: _index()),
        "workloads.md": ("workload TOML files: every key with type, unit, default, allowed values and an example; "
                         "the figures a scenario's answers may name; the built-in scenarios and suites",
                         lambda app: workload_page.page()),
        workload_page.SCHEMA_FILE: ("JSON Schema of a workload file, for editors",
                                    lambda app: workload_page.schema_text()),
        "targets.md": ("target specs, the flaw catalogue (doc item, failure, fix, knobs, exposing scenarios) "
                       "and every knob with its naive and hardened value", lambda app: targets_page.page()),
        "frameworks.md": ("the framework targets (LitServe, Ray Serve): knobs, the flaws each has at its defaults "
                          "and the knob that fixes each; who is at fault in a live run, beside MLPerf LoadGen",
                          lambda app: frameworks_page.page()),
        "gate.md": ("the CI gate file format and every summary key a check may name", lambda app: gate_page.page()),
        "results.md": ("the keys of every result document (run, compare, rank, review, gate, capacity, pool)",
                       lambda app: results_page.page()),
        "http-api.md": ("the live HTTP API: request fields, each model's input, every error kind; URL targets "
                        "and their body template placeholders; the LLM endpoint (fields, streaming, usage, errors)", lambda app: http_page.page()),
        "cli.md": ("every command and option", cli_page.page),
    })


def _index() -> str:
    return "\n".join([
        banner(["harness/docs/"]),
        "# Reference\n",
        "Generated from the code that validates each input, so it cannot drift: "
        "`tests/test_docs.py` fails when a page here differs from a fresh generation. "
        f"After changing a model, a knob, a flaw, an error or an option, run `{REGENERATE}`.\n",
        table(("page", "holds"), [(f"[{name}]({name})", what) for name, (what, _) in PAGES.items()
                                  if name != "README.md"]),
        "## Guides and design (hand-written)\n",
        "Written by hand, not generated: the commands the guides show are run by `tests/test_guides.py`, "
        "and every repository path these pages name must exist.\n",
        table(("page", "holds"), [(f"[{name}]({name})", what) for name, what in HANDWRITTEN.items()]),
    ])


def _tidy(name: str, text: str) -> str:
    """One blank line between blocks, one newline at the end."""
    if name.endswith(".md"):
        text = re.sub(r"\n{3,}", "\n\n", text)
    return text.rstrip("\n") + "\n"


def page_names() -> list[str]:
    """The files `generate` makes, in order."""
    if not PAGES:
        _register()
    return list(PAGES)


def page(name: str, app: Any) -> str:
    """One page's text; `app` is the CLI's click command tree."""
    page_names()
    return _tidy(name, PAGES[name][1](app))


def generate(app: Any) -> dict[str, str]:
    """{file name: text} of every page."""
    return {name: page(name, app) for name in page_names()}


def stale(out: Path, pages: dict[str, str]) -> list[str]:
    """Why each file under `out` differs from `pages` (missing, differs, no longer generated)."""
    problems = []
    for name, text in pages.items():
        path = out / name
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"{path}: differs from a fresh generation")
    if out.is_dir():
        for path in sorted(out.iterdir()):
            if path.is_file() and path.name not in pages and path.name not in HANDWRITTEN:
                problems.append(f"{path}: not generated any more (delete it)")
    return problems


def write(out: Path, pages: dict[str, str]) -> list[str]:
    """Write the pages that changed; the names written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in pages.items():
        path = out / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(name)
    return written

"""The hand-written pages cannot rot: every command the guides show runs, and every path they name exists.

A guide shows commands in fenced ```sh blocks, one per line (a trailing backslash continues it; `#`
starts a comment). A block the test should not run as shown carries its forms in an HTML comment
right after it, one line per shown command, in order:

    <!-- guide-test
    run                                         as shown (the fast tier)
    fast: harness compare naive hardened -w spike --duration 2 -q
    slow: run                                   as shown, in the slow tier
    live: harness serve ... & ...               a form that needs real servers (live and slow tiers)
    -->

A block without such a comment runs every command as shown. A comment whose lines do not match the
block's commands one for one fails `test_every_shown_command_has_a_form` (naming the page and line), so
a command can be neither skipped silently nor added without a form. The fast tier (each guide's `run`
and `fast:` forms, in order, in one fresh folder) stays cheap: `harness ...` commands run in this
process, saving the interpreter's start; the full form of a guide (every command, its `slow:`/`live:`
forms included) runs in the slow tier.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.docs import HANDWRITTEN

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GUIDES = sorted((DOCS / "guide").glob("*.md"))
TIERS = ("fast", "slow", "live", "browser")
# Folders of the repository a guide's commands may read, linked into the folder they run in.
LINKED = ("harness", "targets", "workloads", "reports", "benchmarks", "docs")
COMMAND_TIMEOUT_S = 300


@dataclass(frozen=True)
class Step:
    """One shown command and the form the test runs (`tier` one of TIERS)."""

    page: str
    line: int
    shown: str
    tier: str
    command: str


class GuideError(ValueError):
    """A guide whose blocks and forms do not match: names the page and line."""


_FENCE = re.compile(r"^```(\w*)\s*$")


def _commands(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(line, command) of a block's lines: continuations joined, blanks and comments dropped."""
    found: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, text in lines:
        if pending is None and (not text.strip() or text.lstrip().startswith("#")):
            continue
        start, so_far = pending if pending is not None else (number, "")
        if text.rstrip().endswith("\\"):
            pending = (start, so_far + text.rstrip()[:-1].strip() + " ")
            continue
        found.append((start, (so_far + text.strip()).strip()))
        pending = None
    if pending is not None:
        found.append((pending[0], pending[1].strip()))
    return found


def _form(page: str, line: int, shown: str, directive: str) -> Step:
    directive = directive.strip()
    if directive == "run":
        return Step(page, line, shown, "fast", shown)
    tier, sep, command = directive.partition(":")
    if not sep or tier.strip() not in TIERS or not command.strip():
        raise GuideError(f"{page}:{line}: form {directive!r} is not 'run' or TIER: COMMAND (TIER one of "
                         f"{', '.join(TIERS)})")
    command = command.strip()
    return Step(page, line, shown, tier.strip(), shown if command == "run" else command)


def steps(page: str, text: str) -> list[Step]:
    """Every command `text` shows in ```sh blocks, each with the form to run; GuideError on a mismatch."""
    lines = text.splitlines()
    found: list[Step] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        start = i
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            i += 1
        if i == len(lines):
            raise GuideError(f"{page}:{start + 1}: a code block is never closed")
        body = [(n + 1, lines[n]) for n in range(start + 1, i)]
        i += 1
        j = i
        while j < len(lines) and not lines[j].strip():
            j += 1
        note: list[str] | None = None
        if j < len(lines) and lines[j].strip().startswith("<!-- guide-test"):
            end = j
            while end < len(lines) and "-->" not in lines[end]:
                end += 1
            if end == len(lines):
                raise GuideError(f"{page}:{j + 1}: a guide-test note is never closed")
            note = [ln for ln in lines[j + 1:end] if ln.strip()]
            if fence.group(1) not in ("sh", "bash"):
                raise GuideError(f"{page}:{j + 1}: a guide-test note follows a block that is not ```sh")
            i = end + 1
        if fence.group(1) not in ("sh", "bash"):
            continue
        commands = _commands(body)
        if note is None:
            found += [Step(page, n, c, "fast", c) for n, c in commands]
            continue
        if len(note) != len(commands):
            raise GuideError(f"{page}:{start + 1}: the block shows {len(commands)} command(s) and its "
                             f"guide-test note gives {len(note)} form(s): one line per command, in order")
        found += [_form(page, n, c, d) for (n, c), d in zip(commands, note)]
    return found


def _all_steps() -> dict[str, list[Step]]:
    return {g.name: steps(f"docs/guide/{g.name}", g.read_text(encoding="utf-8")) for g in GUIDES}


# -- the check of the checker --------------------------------------------------------------------

SAMPLE = """\
# a page

```sh
harness targets            # as shown
harness compare naive hardened \\
    --quiet
```
<!-- guide-test
run
fast: harness compare naive hardened -w steady --duration 1 -q
-->

```
not a shell block: harness never runs this
```

```sh
harness review
harness serve hardened
```
"""


def test_steps_reads_blocks_continuations_and_forms() -> None:
    got = steps("p.md", SAMPLE)
    assert [(s.line, s.tier, s.command) for s in got] == [
        (4, "fast", "harness targets            # as shown"),
        (5, "fast", "harness compare naive hardened -w steady --duration 1 -q"),
        (18, "fast", "harness review"),
        (19, "fast", "harness serve hardened"),
    ]
    assert got[1].shown == "harness compare naive hardened --quiet"


@pytest.mark.parametrize("note, why", [
    ("run", "shows 2 command(s) and its guide-test note gives 1 form(s)"),
    ("run\nrun\nrun", "gives 3 form(s)"),
    ("run\nsometimes: harness targets", "form 'sometimes: harness targets' is not 'run'"),
    ("run\nslow:", "is not 'run' or TIER: COMMAND"),
])
def test_a_note_that_does_not_cover_every_command_fails(note: str, why: str) -> None:
    text = f"```sh\nharness targets\nharness review\n```\n<!-- guide-test\n{note}\n-->\n"
    with pytest.raises(GuideError, match=re.escape(why)):
        steps("p.md", text)


def test_every_shown_command_has_a_form() -> None:
    assert GUIDES, "docs/guide/ holds no guide"
    found = _all_steps()   # raises GuideError naming the page and line
    for name, page_steps in found.items():
        assert page_steps, f"docs/guide/{name} shows no command"
        for step in page_steps:
            assert step.command.split()[0] not in ("pip", "apt-get", "sudo"), \
                f"{step.page}:{step.line}: an install command must carry a form that installs nothing"


# -- running them ----------------------------------------------------------------------------------

def _workdir(tmp_path: Path) -> Path:
    for name in LINKED:
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    return tmp_path


def _run(step: Step, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = f"{step.page}:{step.line} ({step.tier} form of `{step.shown}`)"
    command = re.sub(r"(?<![\w/])\.venv/bin/", "", step.command)
    words = shlex.split(command, comments=True)
    if words and words[0] == "harness" and not any(ch in command for ch in "|&;<>$`()"):
        monkeypatch.chdir(cwd)
        res = CliRunner().invoke(app, words[1:])
        assert res.exit_code == 0, f"{where}: exit {res.exit_code}\n{res.output[-3000:]}"
        return
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT_S)
    assert done.returncode == 0, f"{where}: exit {done.returncode}\n{(done.stdout + done.stderr)[-3000:]}"


def _guide_params() -> list[object]:
    params: list[object] = []
    for g in GUIDES:
        try:
            tiers = {s.tier for s in steps(g.name, g.read_text(encoding="utf-8"))}
        except GuideError:
            tiers = {"fast"}   # test_every_shown_command_has_a_form names the problem
        params.append(pytest.param(g.name, "fast", id=f"{g.stem}-fast"))
        if tiers - {"fast"}:
            marks = [pytest.mark.slow] + [getattr(pytest.mark, t) for t in ("live", "browser") if t in tiers]
            params.append(pytest.param(g.name, "full", id=f"{g.stem}-full", marks=marks))
    return params


@pytest.mark.parametrize("guide, form", _guide_params())
def test_every_command_a_guide_shows_runs(guide: str, form: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    page_steps = _all_steps()[guide]
    chosen = [s for s in page_steps if form == "full" or s.tier == "fast"]
    cwd = _workdir(tmp_path)
    for step in chosen:
        began = time.monotonic()
        _run(step, cwd, monkeypatch)
        took = time.monotonic() - began
        print(f"{step.page}:{step.line} {step.tier} form: {took:.1f} s")  # what each step costs, under -s or -rP
        if form == "fast":
            assert took < 120, f"{step.page}:{step.line}: the fast form took {took:.0f} s: give it a faster one"


# -- every path named exists -----------------------------------------------------------------------

PAGES = sorted({DOCS / name for name in HANDWRITTEN} | set(GUIDES))
_PATH = re.compile(r"(?<![\w./:@-])((?:harness|targets|workloads|reports|tests|benchmarks|docs|\.ci)/[\w./*-]*"
                   r"|pyproject\.toml|setup\.py)")
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def named_paths(text: str) -> list[str]:
    """Repository paths `text` names (placeholders such as KIND or NAME left out; globs kept)."""
    found = []
    for m in _PATH.finditer(text):
        path = m.group(1).rstrip(".,:;")
        if re.search(r"[A-Z]{2,}", path):
            continue   # a placeholder: harness/results/KIND.py
        found.append(path)
    return found


def test_named_paths_reads_paths_and_skips_placeholders() -> None:
    text = ("`harness/gate/ci.toml`, see harness/engine/clock.py. Also workloads/scenarios/*.toml, "
            "harness/results/KIND.py and http://127.0.0.1:8000/v1/completions; tests/.")
    assert named_paths(text) == ["harness/gate/ci.toml", "harness/engine/clock.py",
                                 "workloads/scenarios/*.toml", "tests/"]


def test_every_handwritten_page_exists_and_the_guides_are_all_listed() -> None:
    for name in HANDWRITTEN:
        assert (DOCS / name).is_file(), f"docs/{name} is listed in harness.docs.HANDWRITTEN and missing"
    listed = {f"guide/{g.name}" for g in GUIDES}
    assert listed <= set(HANDWRITTEN), f"guides not in harness.docs.HANDWRITTEN: {sorted(listed - set(HANDWRITTEN))}"


@pytest.mark.parametrize("page", PAGES + [ROOT / "README.md"], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_and_link_a_page_names_exists(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    missing = [p for p in named_paths(text) if not (list(ROOT.glob(p)) if "*" in p else (ROOT / p).exists())]
    missing += [link for link in _LINK.findall(text)
                if "://" not in link and not (page.parent / link).exists()]
    assert not missing, f"{page.relative_to(ROOT)} names what the repository does not have: {missing}"

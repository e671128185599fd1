"""`harness docs`: write the reference pages in docs/ from the code, or check them."""

from __future__ import annotations

from pathlib import Path

import typer

from harness.cli.common import fail, out


def docs(
    out_dir: Path = typer.Option(Path("docs"), "--out", help="Folder to write the pages into."),
    check: bool = typer.Option(False, "--check", help="Write nothing; exit 1 naming each page that differs."),
) -> None:
    """Generate the reference docs (workloads, targets, gate files, results, HTTP API, commands)."""
    import typer.main

    from harness.cli import app
    from harness.docs import REGENERATE, generate, stale, write

    pages = generate(typer.main.get_command(app))
    if check:
        problems = stale(out_dir, pages)
        for problem in problems:
            out.print(problem, highlight=False, soft_wrap=True)
        if problems:
            fail(f"docs are stale: regenerate with `{REGENERATE}`", code=1)
        out.print(f"{out_dir}: {len(pages)} pages, all fresh", highlight=False)
        return
    written = write(out_dir, pages)
    out.print(f"{out_dir}: wrote {', '.join(written) or 'nothing'} ({len(pages) - len(written)} unchanged)",
              highlight=False)

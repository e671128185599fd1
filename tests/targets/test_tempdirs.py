"""Temporary folders named by their owner: the next one made removes those whose owner is gone, only those."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from targets.http.tempdirs import owned_tempdir, stale_tempdirs


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()  # reaped: no process has that pid now (until the kernel reuses it)
    return p.pid


def test_the_next_folder_removes_only_those_whose_owner_is_gone(tmp_path: Path) -> None:
    dead = tmp_path / f"harness-haproxy-{_dead_pid()}-abc123"
    alive = tmp_path / f"harness-haproxy-{os.getppid()}-def456"        # a host running beside this one
    legacy = tmp_path / "harness-haproxy-k2j3h4"                        # no owner in its name: an older harness's
    other = tmp_path / f"harness-prometheus-{_dead_pid()}-ghi789"      # another prefix: not this one's to judge
    for folder in (dead, alive, legacy, other):
        folder.mkdir()
        (folder / "haproxy.cfg").write_text("x")
    (tmp_path / f"harness-haproxy-{_dead_pid()}-file").write_text("a file, not a folder")
    assert stale_tempdirs("harness-haproxy-", tmp_path) == [dead]
    mine = owned_tempdir("harness-haproxy-", tmp_path)
    assert mine.is_dir() and mine.name.startswith(f"harness-haproxy-{os.getpid()}-")
    assert not dead.exists() and alive.is_dir() and legacy.is_dir() and other.is_dir()
    assert stale_tempdirs("harness-haproxy-", tmp_path) == []  # its own folder is live while it runs

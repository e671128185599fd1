"""Temporary folders named by the process that owns them, and the removal of those whose owner is gone.

A live host's HAProxy (targets.http.haproxy_proc) and a live run's Prometheus
(harness.ops.prometheus) keep their configuration, sockets and data in a folder
of the system's temporary folder. A process killed with SIGKILL cannot remove
its own, so each folder is named ``<prefix><pid>-<random>``, ``pid`` the process
that made it, and `owned_tempdir` removes the folders of its prefix whose owner
is gone before it makes a new one. Only those: a host running beside it (another
run, another test) keeps its folder, and a folder of the prefix without an owner
in its name (an older harness's) is left alone. A reused pid keeps a stale folder
until that process ends too; it never removes a live one.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

__all__ = ["owned_tempdir", "remove_stale", "stale_tempdirs"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def stale_tempdirs(prefix: str, root: Path | None = None) -> list[Path]:
    """The folders ``<prefix><pid>-...`` in ``root`` (default: the system's temporary folder) whose
    owner process ``pid`` is gone, by name."""
    root = Path(root or tempfile.gettempdir())
    pattern = re.compile(re.escape(prefix) + r"([0-9]+)-[^/]+")
    out = []
    for path in root.glob(f"{_glob_escape(prefix)}*"):
        m = pattern.fullmatch(path.name)
        if m and path.is_dir() and not path.is_symlink() and not _alive(int(m.group(1))):
            out.append(path)
    return sorted(out)


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def remove_stale(prefix: str, root: Path | None = None) -> list[Path]:
    """Remove the folders `stale_tempdirs` finds; returns them."""
    gone = stale_tempdirs(prefix, root)
    for path in gone:
        shutil.rmtree(path, ignore_errors=True)
    return gone


def owned_tempdir(prefix: str, root: Path | None = None) -> Path:
    """A new folder ``<prefix><this pid>-<random>`` in ``root`` (default: the system's temporary folder),
    after removing the stale ones of its prefix."""
    remove_stale(prefix, root)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=root))

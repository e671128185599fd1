"""What a framework server process is told: `ServerSpec`, plain JSON-able data.

The harness (harness.live.framework_host) writes one as JSON into the run's
control folder and starts `python -m MODULE FOLDER/spec.json`; the server
(targets.frameworks.litserve_app, ray_app) reads it back. No framework, torch
or web import here.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ServerSpec", "die_with_parent"]


@dataclass(frozen=True)
class ServerSpec:
    """One framework server: which framework, its knobs, the model and where to listen.

    `workers`: model workers (processes or replicas); `batch_size`: the largest batch;
    `pad_to_s`: hold each batch to this many seconds (None: not padded); `control_dir`: the
    folder of its books and slowdown file (targets.frameworks.books); `port` on 127.0.0.1.
    """

    framework: str
    port: int
    control_dir: str
    workers: int
    batch_size: int
    knobs: dict[str, Any] = field(default_factory=dict)
    model: str = "mlp"
    seed: int = 0
    pad_to_s: float | None = 0.1
    version: str = "v1"
    threads: int = 1
    host: str = "127.0.0.1"

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(asdict(self)))

    @classmethod
    def read(cls, path: str | Path) -> ServerSpec:
        return cls(**json.loads(Path(path).read_text()))


def die_with_parent() -> None:
    """Linux: SIGTERM this server when the harness that started it dies (no orphaned servers)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass

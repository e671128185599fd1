"""The project's model behind Ray Serve: `python -m targets.frameworks.ray_app SPEC.json`.

Ray Serve's own parts do the serving: a local Ray instance (started here, its
files in a short folder of its own), Serve's HTTP proxy on 127.0.0.1:PORT, which
routes each `POST /predict` to a replica (of two picked at random, the one with
fewer ongoing requests), queueing up to `max_queued_requests` (-1: unbounded)
while every replica holds `max_ongoing_requests`; each replica validates the
body as the harness's own API servers do (targets.http.parse) and hands the
input to its `@serve.batch` method (`max_batch_size`, `batch_wait_timeout_s`,
`max_concurrent_batches`), which runs the project's torch model held to the
design's batch time (targets.frameworks.worker). The answer is the harness's own
(docs/http-api.md).

SIGTERM or SIGINT shuts Serve and Ray down before the process exits.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from dataclasses import asdict
from typing import Any

import ray
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

from targets.frameworks.server_spec import ServerSpec, die_with_parent


def deployment(spec: ServerSpec) -> Any:
    """The Serve application for `spec` (its knobs in the decorators and options)."""
    k = spec.knobs

    @serve.deployment
    class HarnessModel:
        def __init__(self, spec_data: dict[str, Any]) -> None:
            from targets.frameworks.books import Books
            from targets.frameworks.worker import ModelWorker

            s = self.spec = ServerSpec(**spec_data)
            self.worker = ModelWorker(s.model, s.seed, s.pad_to_s, s.version, s.control_dir, s.threads)
            self.books = Books(s.control_dir, "api")

        async def __call__(self, request: Request) -> JSONResponse:
            from targets.frameworks.books import Field
            from targets.frameworks.worker import answer_body
            from targets.http.parse import BadRequest

            self.books.add(Field.RECEIVED)
            try:
                try:
                    req = self.worker.parse(await request.body())
                except BadRequest as exc:
                    return JSONResponse({"error": exc.kind, "reason": exc.reason}, status_code=exc.status)
                out = await self.predict(req.input)
                return JSONResponse(answer_body(out, req.request_id, self.spec.version),
                                    headers={"X-Model-Version": self.spec.version})
            finally:
                self.books.add(Field.ANSWERED)

        @serve.batch(max_batch_size=spec.batch_size, batch_wait_timeout_s=float(k.get("batch_wait_timeout_s", 0.01)),
                     max_concurrent_batches=int(k.get("max_concurrent_batches", 1)))
        async def predict(self, items: list[Any]) -> list[dict[str, Any]]:
            return await self.worker.run_async(items)

    ongoing = k.get("max_ongoing_requests") or spec.batch_size
    # @serve.deployment made the class a Deployment; mypy still sees the class it wraps.
    return HarnessModel.options(  # type: ignore[attr-defined]
        num_replicas=spec.workers, max_ongoing_requests=int(ongoing),
        max_queued_requests=int(k.get("max_queued_requests", -1)),
        ray_actor_options={"num_cpus": 0}).bind(asdict(spec))


def main(path: str) -> None:
    die_with_parent()
    spec = ServerSpec.read(path)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    # Ray's own folder: in the control folder (short: its sockets' paths must fit 107 bytes),
    # this server's alone and removed with it.
    temp = os.path.join(spec.control_dir, "ray")
    ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False, _temp_dir=temp,
             configure_logging=False)
    try:
        timeout = spec.knobs.get("request_timeout_s")
        serve.start(http_options={"host": spec.host, "port": spec.port,
                                  **({"request_timeout_s": float(timeout)} if timeout else {})})
        serve.run(deployment(spec), name="harness", route_prefix="/predict", blocking=False)
        print("ready", flush=True)
        stop.wait()
    finally:
        try:
            serve.shutdown()
        finally:
            ray.shutdown()


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1])

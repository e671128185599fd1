"""The project's model behind LitServe: `python -m targets.frameworks.litserve_app SPEC.json`.

LitServe's own parts do the serving: its uvicorn API servers (`num_api_servers`
processes) take `POST /predict`, validate the body's structure against
`PredictBody` (FastAPI: 422 on a bad one) and put each request on one queue;
its inference worker processes (`workers_per_device`) take batches of up to
`max_batch_size`, waiting `batch_timeout` to fill one, and refuse with 504 a
request that waited `timeout` in the queue. Each worker runs the project's
torch model held to the design's batch time (targets.frameworks.worker). The
answer is the harness's own (docs/http-api.md): `{"output", "cached", "request_id",
"version"}`.

A malformed input (right structure, wrong shape) fails its whole batch: LitServe
decodes a batch's requests together and answers them all with the error. The
harness's workloads send no malformed input.

Binds 127.0.0.1 (LitServe's default is every interface) and writes no client.py.
"""

# No `from __future__ import annotations`: FastAPI reads decode_request's annotation as a type.

import sys
from typing import Any

import litserve as ls
from fastapi import HTTPException
from pydantic import BaseModel, ConfigDict, Field

from targets.frameworks.books import Books, Field as Slot
from targets.frameworks.server_spec import ServerSpec, die_with_parent
from targets.http.parse import MAX_DEADLINE_MS, BadRequest

_TENANT = r"^[A-Za-z0-9_.\-]{1,64}$"


class PredictBody(BaseModel):
    """The /predict body's structure (docs/http-api.md); the input's shape is the model's to check."""

    model_config = ConfigDict(extra="forbid")

    tenant: str = Field(pattern=_TENANT)
    request_id: str | None = Field(None, pattern=r"^[\x21-\x7e]{1,128}$")
    deadline_ms: float | None = Field(None, ge=1, le=MAX_DEADLINE_MS)
    input: list[Any]


class HarnessAPI(ls.LitAPI):
    """The project's model as a LitAPI: decode -> (request_id, array), predict a batch, encode."""

    def __init__(self, spec: ServerSpec) -> None:
        k = spec.knobs
        super().__init__(max_batch_size=spec.batch_size, batch_timeout=float(k.get("batch_timeout", 0.0)),
                         api_path="/predict")
        self.server_spec = spec

    def setup(self, device: str) -> None:
        from targets.frameworks.worker import ModelWorker  # torch: in the worker process only

        s = self.server_spec
        self.worker = ModelWorker(s.model, s.seed, s.pad_to_s, s.version, s.control_dir, s.threads)

    def decode_request(self, request: PredictBody) -> tuple[str | None, Any]:
        try:
            return request.request_id, self.worker.check(request.input)
        except BadRequest as exc:
            raise HTTPException(exc.status, detail={"error": exc.kind, "reason": exc.reason}) from None

    def batch(self, inputs: list[Any]) -> list[Any]:
        return list(inputs)

    def predict(self, x: Any) -> Any:
        if self.max_batch_size == 1:  # LitServe's unbatched loop: one decoded request
            return x[0], self.worker.run([x[1]])[0]
        return list(zip([rid for rid, _ in x], self.worker.run([item for _, item in x])))

    def unbatch(self, output: list[Any]) -> list[Any]:
        return output

    def encode_response(self, output: tuple[str | None, dict[str, Any]]) -> dict[str, Any]:
        from targets.frameworks.worker import answer_body

        rid, out = output
        return answer_body(out, rid, self.server_spec.version)


class BooksMiddleware:
    """ASGI: counts /predict requests taken in and answered in this API server's books."""

    def __init__(self, app: Any, folder: str) -> None:
        self.app = app
        self.folder = folder
        self.books: Books | None = None  # opened in the API server process, on its first request

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") != "/predict":
            await self.app(scope, receive, send)
            return
        if self.books is None:
            self.books = Books(self.folder, "api")
        self.books.add(Slot.RECEIVED)
        try:
            await self.app(scope, receive, send)
        finally:
            self.books.add(Slot.ANSWERED)


def build(spec: ServerSpec) -> ls.LitServer:
    k = spec.knobs
    timeout = float(k.get("timeout", 30.0))
    return ls.LitServer(HarnessAPI(spec), accelerator="cpu", devices=1, workers_per_device=spec.workers,
                        timeout=False if timeout < 0 else timeout, fast_queue=bool(k.get("fast_queue", False)),
                        restart_workers=bool(k.get("restart_workers", False)), disable_openapi_url=True,
                        middlewares=[(BooksMiddleware, {"folder": spec.control_dir})])


def main(path: str) -> None:
    die_with_parent()
    spec = ServerSpec.read(path)
    server = build(spec)
    server.run(host=spec.host, port=spec.port, num_api_servers=spec.knobs.get("num_api_servers"),
               log_level="warning", generate_client_file=False)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1])

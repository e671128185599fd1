"""The project's model behind BentoML: `python -m targets.frameworks.bentoml_app SPEC.json`.

BentoML's own parts do the serving, in the two-service layout its docs give for
adaptive batching behind an API of several fields (a batchable API batches one
argument; the harness's body has four):

- `HarnessAPI` (`api_workers` processes) takes `POST /predict` on 127.0.0.1:PORT;
  BentoML validates the body's fields against `predict`'s signature (400 on a bad
  one), and the API hands the input to its dependency (`bentoml.depends`), one item
  per call, answering `timeout` seconds late with 504 and, past `max_concurrency`
  requests in flight, at once with 429 (BentoML's `traffic` options). Its client
  to the model service is renewed every `runner_max_requests` calls
  (`runner_connection.max_requests`), failing (500) the calls in flight on the old one.
- `HarnessModel` (`workers` processes, one batcher each) is reached over a Unix
  socket; its `@bentoml.api(batchable=True, max_batch_size, max_latency_ms)` method
  gets the items BentoML's adaptive batcher gathered, runs the project's torch model
  held to the design's batch time (targets.frameworks.worker) and answers each item
  (a malformed input is answered 422 alone, not with its batch). The batcher refuses
  (503) the oldest queued request once it predicts that request would be answered
  later than `max_latency_ms` after it arrived.

The answer is the harness's own (docs/http-api.md). Both services run with
BentoML's access log and Prometheus metrics off (a log line and a histogram per
request cost CPU the driver on the same cores needs); every other option is
BentoML's default unless a knob sets it. BentoML imports this module
again in every process it starts (`bentoml serve MODULE:HarnessAPI`), so the spec
travels in the `HARNESS_BENTOML_SPEC` environment variable, and the services are
declared from it at import. SIGTERM stops BentoML's arbiter and its processes.
"""

# No `from __future__ import annotations`: BentoML reads the API methods' annotations as types.

import os
import sys
from typing import Annotated, Any

import bentoml
from pydantic import Field
from starlette.responses import JSONResponse

from targets.frameworks.server_spec import ServerSpec, die_with_parent
from targets.http.parse import MAX_DEADLINE_MS

SPEC_ENV = "HARNESS_BENTOML_SPEC"


def _spec() -> ServerSpec:
    if __name__ == "__main__":  # the launcher (main): its argument, which it hands on in the environment
        os.environ[SPEC_ENV] = os.path.abspath(sys.argv[1])
    path = os.environ.get(SPEC_ENV)
    if not path:
        raise RuntimeError(f"{SPEC_ENV} is not set: start this server as `python -m {__name__} SPEC.json`")
    return ServerSpec.read(path)


SPEC = _spec()
KNOBS = SPEC.knobs
die_with_parent()  # every process BentoML starts goes when the one that started it does


def _traffic() -> dict[str, Any]:
    """The API service's `traffic` options (BentoML's defaults where a knob is None)."""
    out: dict[str, Any] = {"timeout": float(KNOBS.get("timeout", 60.0))}
    if KNOBS.get("max_concurrency") is not None:
        out["max_concurrency"] = int(KNOBS["max_concurrency"])
    return out


@bentoml.service(name="harness-model", workers=SPEC.workers, threads=1, metrics={"enabled": False},
                 logging={"access": {"enabled": False}},
                 runner_connection={"max_requests": int(KNOBS.get("runner_max_requests", 100))})
class HarnessModel:
    """One model worker per process: BentoML's adaptive batcher in front of the torch model."""

    def __init__(self) -> None:
        from targets.frameworks.worker import ModelWorker  # torch: in the model's processes only

        s = SPEC
        self.worker = ModelWorker(s.model, s.seed, s.pad_to_s, s.version, s.control_dir, s.threads)

    @bentoml.api(batchable=True, max_batch_size=SPEC.batch_size,
                 max_latency_ms=int(KNOBS.get("max_latency_ms", 60_000)))
    def forward(self, items: list[Any]) -> list[dict[str, Any]]:
        """One batch: each item's output, or {"error", "reason"} for an input the model cannot take."""
        from targets.http.parse import BadRequest

        checked: list[Any] = []
        answers: list[dict[str, Any] | None] = []
        for item in items:
            try:
                checked.append(self.worker.check(item))
                answers.append(None)
            except BadRequest as exc:
                answers.append({"error": exc.kind, "reason": exc.reason})
        outputs = iter(self.worker.run(checked) if checked else [])
        return [a if a is not None else {"output": next(outputs)} for a in answers]


@bentoml.service(name="harness-api", workers=int(KNOBS.get("api_workers") or 1),
                 traffic=_traffic(), metrics={"enabled": False}, logging={"access": {"enabled": False}})
class HarnessAPI:
    """`POST /predict`: the harness's body in, the harness's answer out; the model is a dependency."""

    model = bentoml.depends(HarnessModel)

    def __init__(self) -> None:
        from targets.frameworks.books import Books

        self.books = Books(SPEC.control_dir, "api")

    @bentoml.api(route="/predict")
    async def predict(self, tenant: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.\-]{1,64}$")],
                      input: list[Any],
                      request_id: Annotated[str | None, Field(pattern=r"^[\x21-\x7e]{1,128}$")] = None,
                      deadline_ms: Annotated[float | None, Field(ge=1, le=MAX_DEADLINE_MS)] = None) -> Any:
        from targets.frameworks.books import Field as Slot
        from targets.frameworks.worker import answer_body

        self.books.add(Slot.RECEIVED)
        try:
            [out] = await self.model.to_async.forward([input])
            if "error" in out:
                return JSONResponse(out, status_code=422)
            return JSONResponse(answer_body(out["output"], request_id, SPEC.version),
                                headers={"X-Model-Version": SPEC.version})
        finally:
            self.books.add(Slot.ANSWERED)


def main(path: str) -> None:
    os.environ[SPEC_ENV] = os.path.abspath(path)
    spec = ServerSpec.read(path)
    # BentoML's own CLI, in this process: its arbiter, and the services' processes its children.
    sys.argv = ["bentoml", "serve", "targets.frameworks.bentoml_app:HarnessAPI", "--host", spec.host,
                "--port", str(spec.port), "--working-dir", os.getcwd()]
    from bentoml_cli.cli import cli

    cli()


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1])

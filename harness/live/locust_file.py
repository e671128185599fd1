"""A locustfile that reproduces a workload, as closely as Locust allows, and records every request.

`locustfile_text(workload, client)` returns the source of a standalone
locustfile (it imports only locust and the standard library, so it runs on any
machine with Locust, as master or worker):

- phases: a LoadTestShape whose tick() sets the user count so that users x
  ``PER_USER_RPS`` follows the workload's rate (`rate(t)`, sampled each second);
- tenants: each request's tenant is drawn by the workload's shares;
- payloads: the model's input (`MODEL_INPUTS`: mlp 512 numbers, cnn 3x32x32 numbers,
  transformer 64 token ids), fresh per request, with a request ID; or a URL target's
  body template (`{{tenant}}`, `{{request_id}}`, `{{deadline_ms}}`, `{{input}}`,
  `{{content}}`, `{{size}}`, as `harness.live.payloads` fills them), posted to its path;
- client policy: the client timeout as Locust's network timeout.

Where Locust cannot follow: its users are closed loop (a user waits for its
answer before pacing its next request with `constant_throughput`), so when the
target slows the offered rate falls with it and latency is measured from the
actual send, not the schedule (coordinated omission); there are no retries,
backoff or Retry-After; arrivals are paced, not Poisson. These are stated in
the file's header and in the run's result.

Recording: an event hook appends one line per request (`start_s`, `latency_s`,
HTTP status or 0 for a connection error, tenant) to a file per process under
$HARNESS_LOCUST_OUT, which harness.live.locust_run reads into a Recorder.
"""

from __future__ import annotations

import json

from workloads.model import WorkloadConfig

__all__ = ["LIMITS_TEXT", "MODEL_INPUTS", "PER_USER_RPS", "locustfile_text"]

PER_USER_RPS = 5.0  # each Locust user paces itself to this many requests/s (closed loop)
LIMITS_TEXT = ("Locust users are closed loop: a slow answer delays that user's next request, so offered load "
               "falls as the target slows and latency is timed from the actual send (coordinated omission); "
               "no retries, backoff or Retry-After; paced, not Poisson, arrivals")

_TEMPLATE = '''"""Locustfile for workload {name!r}, written by `harness locustfile`.

{limits}.
Run: locust -f THIS --headless --host http://127.0.0.1:8000 (add --master / --worker to distribute).
"""
import json
import math
import os
import random
import re
import time

from locust import FastHttpUser, LoadTestShape, constant_throughput, events, task

RATES = {rates}          # requests/s in each second of the workload
TENANTS = {tenants}      # name -> share
PER_USER_RPS = {per_user}
TIMEOUT_S = {timeout}
INPUT = {input}          # the model's input: ("floats", n) or ("tokens", n)
TEMPLATE = {template}    # a URL target's body template, or None for the built-in body
PATH = {path}
_OUT = None


def _out():
    global _OUT
    if _OUT is None:
        folder = os.environ.get("HARNESS_LOCUST_OUT")
        _OUT = open(os.path.join(folder, f"records-{{os.getpid()}}.jsonl"), "a", buffering=1) if folder else False
    return _OUT


@events.request.add_listener
def _record(request_type, name, response_time, response_length, response=None, context=None, exception=None,
            start_time=None, **kw):
    out = _out()
    if not out:
        return
    status = getattr(response, "status_code", 0) or 0
    out.write(json.dumps([start_time, response_time / 1000.0, status, (context or {{}}).get("tenant", "")]) + "\\n")


def _input():
    kind, n = INPUT
    if kind == "tokens":
        return [random.randrange(1000) for _ in range(n)]
    return [round(random.random(), 4) for _ in range(n)]


def _body(tenant, request_id):
    if TEMPLATE is None:
        return json.dumps({{"tenant": tenant, "request_id": request_id, "input": _input()}})
    values = {{"tenant": tenant, "request_id": request_id, "deadline_ms": "null", "input": json.dumps(_input()),
              "content": str(random.getrandbits(31)), "size": str(INPUT[1])}}
    return re.sub(r"\\{{\\{{(tenant|request_id|deadline_ms|input|content|size)\\}}\\}}", lambda m: values[m.group(1)],
                  TEMPLATE)


class WorkloadUser(FastHttpUser):
    wait_time = constant_throughput(PER_USER_RPS)
    network_timeout = TIMEOUT_S
    connection_timeout = TIMEOUT_S

    @task
    def predict(self):
        tenant = random.choices(list(TENANTS), weights=list(TENANTS.values()))[0]
        body = _body(tenant, f"{{tenant}}-{{random.getrandbits(48):x}}")
        self.client.post(PATH, data=body, headers={{"Content-Type": "application/json"}}, name=PATH,
                         context={{"tenant": tenant}})


class WorkloadShape(LoadTestShape):
    def tick(self):
        t = int(self.get_run_time())
        if t >= len(RATES):
            return None
        users = max(1, math.ceil(RATES[t] / PER_USER_RPS))
        return users, max(1.0, users)
'''


# Each live model's input as the locustfile draws it (the server's checks: harness.live.payloads, targets.gpu.models).
MODEL_INPUTS: dict[str, tuple[str, int]] = {"mlp": ("floats", 512), "cnn": ("floats", 3 * 32 * 32),
                                            "transformer": ("tokens", 64)}


def locustfile_text(workload: WorkloadConfig, client_timeout_s: float = 1.0, model: str = "mlp",
                    template: str | None = None, path: str = "/predict") -> str:
    """The locustfile's source for ``workload`` (rates sampled at each whole second), posting ``model``'s
    input (or ``template`` filled in) to ``path``. ValueError for an unknown model."""
    import numpy as np

    if model not in MODEL_INPUTS:
        raise ValueError(f"unknown model '{model}': valid are {', '.join(MODEL_INPUTS)}")
    seconds = max(1, int(np.ceil(workload.duration_s)))
    rates = [round(float(r), 3) for r in workload.rate(np.arange(seconds, dtype=float) + 0.5)]
    tenants = {t.name: t.share for t in workload.tenants}
    return _TEMPLATE.format(name=workload.name, limits=LIMITS_TEXT, rates=json.dumps(rates),
                            tenants=json.dumps(tenants), per_user=PER_USER_RPS, timeout=client_timeout_s,
                            input=repr(MODEL_INPUTS[model]), template=repr(template), path=repr(path))

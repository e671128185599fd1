"""Which function does `run`, `compare` and `sweep`'s job, by what the target names: the one place.

A target argument is a design spec or TOML file, a serving framework, a request-level URL,
an OpenAI-compatible LLM URL or an LLM policy (`kind_of`; `compare` reads its pair with
`pair_kind`). JOBS maps (command, kind) to the function that does the job; `dispatch`
works out the `Where` (kind, mode, driver), refuses the options given that do not apply
there (`harness.cli.applies`, exit 2), and calls the job with the command's parameters
that the job's signature names. A job function takes the command's parameter names.
"""

from __future__ import annotations

import inspect
from importlib import import_module
from typing import Any, Callable

from harness.cli.applies import COMMAND_WHERE, Driver, Kind, Mode, Where, check

__all__ = ["JOBS", "dispatch", "kind_of", "pair_kind", "where_of"]

# (command) -> kind -> "module:function" under harness.cli. A kind a command has no job for is
# sent to the job that names why (an LLM policy to `run`: unknown target; a URL to `compare`).
JOBS: dict[str, dict[Kind, str]] = {
    "run": {Kind.DESIGN: "run:run_target", Kind.FRAMEWORK: "run:run_target", Kind.URL: "run:run_target",
            Kind.LLM_POLICY: "run:run_target", Kind.LLM_URL: "llm_url:run_llm_url"},
    "compare": {Kind.DESIGN: "run:compare_targets", Kind.FRAMEWORK: "run:compare_targets",
                Kind.URL: "run:compare_targets", Kind.LLM_POLICY: "llm:compare_llm",
                Kind.LLM_URL: "llm_url:compare_llm_urls"},
    "sweep": {Kind.DESIGN: "sweep:sweep_target", Kind.FRAMEWORK: "sweep:sweep_target", Kind.URL: "sweep:sweep_target",
              Kind.LLM_POLICY: "sweep:sweep_target", Kind.LLM_URL: "sweep:sweep_llm"},
}


def kind_of(target: str) -> Kind:
    from harness.live.openai import is_llm_url
    from targets.frameworks.spec import framework_name

    if is_llm_url(target):
        return Kind.LLM_URL
    if "://" in target:
        return Kind.URL
    if framework_name(target):
        return Kind.FRAMEWORK
    if target.startswith("llm-"):
        return Kind.LLM_POLICY
    return Kind.DESIGN


def pair_kind(a: str, b: str) -> Kind:
    """`compare A B`: two LLM URLs; else an LLM policy on either side; else a URL, a framework, a design."""
    kinds = {kind_of(a), kind_of(b)}
    if kinds == {Kind.LLM_URL}:
        return Kind.LLM_URL
    for kind in (Kind.LLM_POLICY, Kind.URL, Kind.LLM_URL, Kind.FRAMEWORK):
        if kind in kinds:
            return Kind.URL if kind is Kind.LLM_URL else kind  # one LLM URL beside a spec: a URL compare refuses
    return Kind.DESIGN


def where_of(kind: Kind, mode: str, driver: str = "builtin") -> Where:
    """An LLM URL is always live, by its own driver."""
    if kind is Kind.LLM_URL:
        return Where(kind, Mode.LIVE)
    return Where(kind, Mode(mode), Driver(driver))


def _job(ref: str) -> Callable[..., None]:
    module, func = ref.split(":")
    job: Callable[..., None] = getattr(import_module(f"harness.cli.{module}"), func)
    return job


def dispatch(command: str, func: Callable[..., Any], params: dict[str, Any]) -> None:
    """Run `command`'s job for its target (`func`: the command's function; `params`: its own
    parameters' values, by name)."""
    kind = pair_kind(params["a"], params["b"]) if command == "compare" else kind_of(params["target"])
    w = where_of(kind, params["mode"], params.get("driver", "builtin"))
    if w in COMMAND_WHERE[command]:  # elsewhere (a framework in sim, ...) the job's own error says why
        check(command, w, func, params)
    job = _job(JOBS[command][kind])
    job(**{name: params[name] for name in inspect.signature(job).parameters})

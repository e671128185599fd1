"""docs/gate.md: the gate file format, and every summary key a check may name.

The format is `harness.gate.file`'s docstring (the parser's own contract); the keys are
walked from `RunSummary` and each is confirmed by the parser's key check, so the list is
exactly what `harness gate` accepts; the `[[canary]]` and `[[sweep]]` keys are
`harness.gate.keys`' lists. The project's CI gate file is shown as the example. The `[[llm]]`
gates of an LLM endpoint are `harness.gate.llm`'s docstring and `LLM_KEYS`, with harness/gate/llm.toml.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from types import NoneType
from typing import Any, Iterator, get_args, get_origin

from pydantic import BaseModel

from harness.docs.fields import meaning, type_name, unit_of
from harness.docs.markdown import banner, block, code, table
from harness.gate import file as gate_file
from harness.gate import keys as gate_keys
from harness.gate import llm as llm_gate
from harness.results.canary import CanaryCell
from harness.results.run import RunSummary
from harness.results.sweep import SweepResult

EXAMPLE = Path(gate_file.__file__).with_name("ci.toml")
LLM_EXAMPLE = Path(gate_file.__file__).with_name("llm.toml")


def _plain(tp: Any) -> Any:
    args = [a for a in get_args(tp) if a is not NoneType]
    return args[0] if get_args(tp) and len(args) == 1 and get_origin(tp) is not dict else tp


def check_keys(model: type[BaseModel] = RunSummary, prefix: str = "") -> Iterator[tuple[str, str, str]]:
    """(key, type, meaning) of every number a check can read, tables as `*`."""
    for name, info in model.model_fields.items():
        key = f"{prefix}{info.alias or name}"
        tp = _plain(info.annotation)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            yield from check_keys(tp, f"{key}.")
        elif get_origin(tp) is dict:
            value = get_args(tp)[1]
            if isinstance(value, type) and issubclass(value, BaseModel):
                yield from check_keys(value, f"{key}.*.")
            else:
                yield f"{key}.*", type_name(value), meaning(model, name)
        elif tp in (int, float) or tp is Any:
            yield key, type_name(info.annotation), meaning(model, name)


def page() -> str:
    rows = []
    for key, tp, note in check_keys():
        problem = gate_keys.key_problem(key, RunSummary, {"t0"})
        assert problem is None, f"the gate page lists {key}, which the gate refuses: {problem}"
        rows.append((code(key), tp, unit_of(key.rsplit(".", 1)[-1]) or unit_of(key.split(".")[0]), note))
    canary_rows = [(code(k), type_name(CanaryCell.model_fields[k].annotation), unit_of(k), meaning(CanaryCell, k))
                   for k in gate_keys.CANARY_KEYS]
    sweep_rows = [(code(k), type_name(SweepResult.model_fields[k].annotation), "req/s", meaning(SweepResult, k))
                  for k in gate_keys.SWEEP_KEYS]
    llm_rows = [(code(k), unit, what) for k, (unit, what) in llm_gate.LLM_KEYS.items()]
    gate_file.load_gate_file(EXAMPLE)  # the examples must stay valid gate files
    llm_gate.load_llm_gate_file(LLM_EXAMPLE)
    return "\n".join([
        banner(["harness/gate/file.py", "harness/results/run.py", "harness/results/canary.py", "harness/gate/ci.toml",
                "harness/gate/llm.py", "harness/gate/llm.toml"]),
        "# Gate files\n",
        "`harness gate FILE` runs a gate file's scenarios in sim (or judges saved runs with `--results`) and "
        "exits 0 when every check passes, 1 on a violation, 2 when the file is bad or a run cannot be judged.\n",
        "## Format\n",
        block(inspect.cleandoc(gate_file.__doc__ or "")),
        f"Operators: {', '.join(code(o) for o in gate_file.OPS)}.\n",
        "## Keys a check may name\n",
        "Every number of the run summary ([results](results.md#runsummary)); `*` in a table is every entry "
        "(for `tenants`, a tenant name also works). Latency keys that are null in results (never answered) "
        "count as infinite.\n\n" + table(("key", "type", "unit", "meaning"), rows),
        "## Keys a canary check may name\n",
        "The numbers of one plan-and-day cell of a canary result ([results](results.md#canarycell)), "
        "in a `[[canary]]` table; a bound reads their exact 95% interval over the seeds.\n\n"
        + table(("key", "type", "unit", "meaning"), canary_rows),
        "## Keys a sweep check may name\n",
        "The knee and the first failing rate of a saved sweep result ([results](results.md#sweepresult)), "
        "in a `[[sweep]]` table, judged with `--results SWEEP.json`.\n\n"
        + table(("key", "type", "unit", "meaning"), sweep_rows),
        "## Example: the project's CI gate (`harness/gate/ci.toml`)\n",
        block(EXAMPLE.read_text(), "toml"),
        "## LLM endpoints: `[[llm]]` gates\n",
        "A gate file of `[[llm]]` tables drives an OpenAI-compatible endpoint (`/v1/completions` or "
        "`/v1/chat/completions`, streaming) live, one run per table, and checks its TTFT, TPOT, ITL, goodput "
        "under the TTFT + TPOT SLO, tokens/s and error shares against bounds or a saved baseline. The exit "
        "codes and reports are the gate's: 0 pass, 1 a check failed, 2 a bad file or an endpoint that could not "
        "be probed (cannot judge). `harness gate FILE --target URL` replaces the endpoint under test; "
        "`--allow-remote` lets it be outside loopback; `--results RUN.json` judges a saved `harness run URL` "
        "instead of driving. `harness sweep URL --check \"max_rate_within_slo >= 4\"` judges an endpoint's "
        "sweep as a `[[sweep]]` check does.\n",
        block(inspect.cleandoc(llm_gate.__doc__ or "")),
        "### Keys an LLM check may name\n",
        "The figures of one run of the endpoint ([results](results.md#llmrun)); latencies in seconds over "
        "the requests answered (ITL: over tokens); a latency with no answer at all counts as infinite.\n\n"
        + table(("key", "unit", "meaning"), llm_rows),
        "### Example: an LLM endpoint's gate (`harness/gate/llm.toml`)\n",
        block(LLM_EXAMPLE.read_text(), "toml"),
    ])

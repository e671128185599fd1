"""An LLM workload file: what `-w FILE.toml` sends to an LLM URL (`run`, `compare`, `sweep`).

The same keys as the LLM URL traffic options (`--dataset`, `--dataset-format`, `--concurrency`,
`--max-concurrency`, `--think-time`, `--prefix-tokens`, `--prefix-groups`, `--rate`,
`--duration`) and the length mix or LLM trace file `-w` otherwise names, in one TOML file:

    mix = "short"
    dataset = "chats.json"     # relative to this file's folder
    concurrency = 4
    think_time_s = 1.0
    prefix_tokens = 256
    prefix_groups = 4

`load_llm_workload(path)` validates it (`LlmWorkloadFile`, unknown keys refused) and raises
`ConfigError` naming the file, the key and the problem; the rules across keys are those the
options keep (`--rate` with `--concurrency` is ambiguous, ...), named by key.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from workloads.config_files import ConfigError, read_toml, validate
from workloads.datasets.model import DatasetFormat
from workloads.llm import length_mix

__all__ = ["LlmWorkloadFile", "is_llm_workload_file", "load_llm_workload"]

_TRACE_SUFFIXES = (".csv", ".jsonl", ".ndjson")


class LlmWorkloadFile(BaseModel):
    """One LLM URL workload: a length mix (or trace) and a data set under a load mode."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field("llm", description="the workload's name (the loader fills in the file's)")
    description: str = Field("", description="what the day is, in a line")
    mix: str = Field("short", description="a length mix (short, sharegpt-like, ...) or an LLM trace file "
                     "(.csv/.jsonl, relative to this file): the prompt and output lengths of a prompt without them")
    rate_rps: float | None = Field(None, gt=0, description="the open loop's rate (as --rate); none: the "
                                   "command's default, or the data set's own times")
    duration_s: float | None = Field(None, gt=0, description="seconds of traffic (as --duration)")
    dataset: str | None = Field(None, description="prompts from a data set file, relative to this file (as "
                                "--dataset): ShareGPT .json, .jsonl/.csv of prompt or messages, a Mooncake trace")
    dataset_format: DatasetFormat | None = Field(None, description="the data set's format (as --dataset-format; "
                                                 "none: from the file)")
    concurrency: int | None = Field(None, ge=1, description="a closed loop of N users (as --concurrency)")
    max_concurrency: int | None = Field(None, ge=1, description="cap the open loop at N in flight "
                                        "(as --max-concurrency)")
    think_time_s: float = Field(0.0, ge=0, description="seconds between an answer and the conversation's next "
                                "turn (as --think-time)")
    prefix_tokens: int = Field(0, ge=0, description="a shared system prompt of N tokens opening every "
                               "conversation (as --prefix-tokens; 0: none)")
    prefix_groups: int = Field(1, ge=1, description="this many distinct system prompts, conversation k the "
                               "(k mod N)th (as --prefix-groups)")


def is_llm_workload_file(workload: str | None) -> bool:
    """`-w` of an LLM URL names a workload file (else a length mix or trace file)."""
    return workload is not None and workload.endswith(".toml")


def _rules(w: LlmWorkloadFile, source: str) -> None:
    def bad(key: str, problem: str) -> ConfigError:
        return ConfigError(f"{source}: key '{key}': {problem}")

    if w.concurrency is not None and w.rate_rps is not None:
        raise bad("concurrency", "with rate_rps is ambiguous: a closed loop of concurrency users has no rate; to "
                  "cap an open loop give rate_rps and max_concurrency")
    if w.concurrency is not None and w.max_concurrency is not None:
        raise bad("max_concurrency", "with concurrency: concurrency already caps the requests in flight")
    if w.dataset_format is not None and w.dataset is None:
        raise bad("dataset_format", "names the format of dataset: give dataset too")
    if w.prefix_groups != 1 and not w.prefix_tokens:
        raise bad("prefix_groups", "counts shared system prompts: give prefix_tokens too")
    if not w.mix.endswith(_TRACE_SUFFIXES):
        try:
            length_mix(w.mix)
        except ValueError as exc:
            raise bad("mix", str(exc)) from None


def _near(path: Path, name: str) -> str:
    """A file named in the workload, relative to the workload's folder unless absolute."""
    p = Path(name)
    return str(p if p.is_absolute() else path.parent / p)


def load_llm_workload(name: str) -> LlmWorkloadFile:
    """The workload file at `name`, its dataset and trace paths made relative to where it lies;
    ConfigError naming the file, key and problem."""
    path = Path(name)
    data = read_toml(path)
    data.setdefault("name", path.stem)
    w = validate(LlmWorkloadFile, data, str(path))
    _rules(w, str(path))
    update: dict[str, str] = {}
    if w.dataset is not None:
        update["dataset"] = _near(path, w.dataset)
    if w.mix.endswith(_TRACE_SUFFIXES):
        update["mix"] = _near(path, w.mix)
    return w.model_copy(update=update)

"""The traffic options of LLM URL commands (`run URL`, `compare`, `sweep URL`): a data set and a load mode.

Each option is one line in a command's signature; `traffic_of(...)` turns them into a
`harness.live.openai.traffic.Traffic` (reading the data set) or ends the command with exit 2
and one line naming the file, line or option; `given(...)` lists them for commands that refuse them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from harness.cli.common import fail

__all__ = ["CONCURRENCY", "CONCURRENCY_LEVELS", "DATASET", "DATASET_FORMAT", "MAX_CONCURRENCY", "PREFIX_GROUPS",
           "PREFIX_TOKENS", "THINK_TIME", "given", "levels_of", "sweep_traffic_of", "traffic_of", "workload_file"]

DATASET: Optional[Path] = typer.Option(None, "--dataset", help="LLM URL: prompts from a data set file: ShareGPT "
                                       ".json (every turn), .jsonl/.csv of prompt or messages, or a Mooncake "
                                       "trace .jsonl (hash_ids); format from the file or --dataset-format. A sim "
                                       "compare of LLM fleets: the file's conversations are the day.")
DATASET_FORMAT: Optional[str] = typer.Option(None, "--dataset-format", help="LLM URL: sharegpt, jsonl, csv or "
                                             "mooncake (default: from the file).")
CONCURRENCY: Optional[int] = typer.Option(None, "--concurrency", help="LLM URL: a closed loop of N users, each "
                                          "sending its next request as the last ends (not with --rate).")
CONCURRENCY_LEVELS: Optional[str] = typer.Option(None, "--concurrency", help="LLM URL: sweep these closed-loop "
                                                 "concurrencies (e.g. 1,2,4,8,16) in place of rates; reports the knee.")
MAX_CONCURRENCY: Optional[int] = typer.Option(None, "--max-concurrency", help="LLM URL: cap the open loop at N "
                                              "requests in flight (the wait for a slot is reported apart).")
THINK_TIME: float = typer.Option(0.0, "--think-time", help="LLM URL: seconds between an answer and the same "
                                 "conversation's next turn.")
PREFIX_TOKENS: int = typer.Option(0, "--prefix-tokens", help="LLM URL: open every conversation with a shared "
                                  "system prompt of N tokens (a prefix cache's work; 0: none).")
PREFIX_GROUPS: int = typer.Option(1, "--prefix-groups", help="LLM URL, with --prefix-tokens: this many distinct "
                                  "system prompts, conversation k sending the (k mod N)th.")


def given(dataset: Any, dataset_format: Any, concurrency: Any, max_concurrency: Any, think_time: float,
          prefix_tokens: int = 0, prefix_groups: int = 1) -> list[tuple[str, bool]]:
    return [("--dataset", dataset is not None), ("--dataset-format", dataset_format is not None),
            ("--concurrency", concurrency is not None), ("--max-concurrency", max_concurrency is not None),
            ("--think-time", think_time != 0.0), ("--prefix-tokens", prefix_tokens != 0),
            ("--prefix-groups", prefix_groups != 1)]


def levels_of(text: str) -> list[int]:
    """`1,2,4,8` as whole numbers >= 1, increasing; exit 2 naming --concurrency otherwise."""
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        fail(f"--concurrency '{text}': expected whole numbers such as 1,2,4,8,16")
    if not levels or any(n < 1 for n in levels):
        fail(f"--concurrency '{text}': every level must be >= 1")
    if sorted(set(levels)) != levels:
        fail(f"--concurrency '{text}': give the levels increasing, each once")
    return levels


def traffic_of(dataset: Path | None, dataset_format: str | None, rate: float | None, concurrency: int | None,
               max_concurrency: int | None, think_time: float, default_rate_rps: float, prefix_tokens: int = 0,
               prefix_groups: int = 1, driver_procs: int = 1, executor: str = "process") -> Any:
    """The run's traffic, or None when no traffic option was given (today's synthetic open loop);
    `--driver-procs N` over 1 sends the length mix as traffic too (conversations of one prompt each,
    split over the processes, or over Ray actors with `--executor ray`)."""
    if executor != "process" and driver_procs == 1:
        fail(f"--executor {executor} runs an LLM URL's driver processes as Ray actors: give --driver-procs N "
             "(N > 1) too")
    if driver_procs == 1 and not any(on for _, on in given(dataset, dataset_format, concurrency, max_concurrency,
                                                           think_time, prefix_tokens, prefix_groups)):
        return None
    from harness.live.openai.traffic import Traffic

    try:
        return Traffic.of(str(dataset) if dataset is not None else None, dataset_format, rate, concurrency,
                          max_concurrency, think_time, default_rate_rps=default_rate_rps,
                          prefix_tokens=prefix_tokens, prefix_groups=prefix_groups, driver_procs=driver_procs,
                          driver_executor=executor)
    except ValueError as exc:
        fail(str(exc))


def sweep_traffic_of(dataset: Path | None, dataset_format: str | None, concurrency: str | None,
                     think_time: float, prefix_tokens: int = 0, prefix_groups: int = 1,
                     driver_procs: int = 1, executor: str = "process") -> tuple[Any, list[int]]:
    """A concurrency sweep's traffic and levels (`--concurrency 1,2,4,...`, needed with --dataset).
    `--driver-procs N` is checked against the highest level (a level under N runs over that many
    processes: `harness.analysis.llm.traffic.concurrency_sweep`)."""
    if concurrency is None:
        fail("--dataset, --think-time and --prefix-tokens in a sweep of an LLM URL need --concurrency LEVELS "
             "(e.g. 1,2,4,8,16): the rate sweep sends the length mix")
    levels = levels_of(concurrency)
    return traffic_of(dataset, dataset_format, None, levels[-1], None, think_time, 1.0, prefix_tokens,
                      prefix_groups, driver_procs, executor), levels


# A workload file's key for each option of an LLM URL command (the parameter's name), and the
# option's default: an option left at it takes the file's value.
_FILE_KEYS = {"rate": ("rate_rps", None), "duration": ("duration_s", None), "dataset": ("dataset", None),
              "dataset_format": ("dataset_format", None), "concurrency": ("concurrency", None),
              "max_concurrency": ("max_concurrency", None), "think_time": ("think_time_s", 0.0),
              "prefix_tokens": ("prefix_tokens", 0), "prefix_groups": ("prefix_groups", 1)}
_LOAD = ("rate", "concurrency", "max_concurrency")


def workload_file(workload: str | None, options: dict[str, Any], own_load: bool = False) -> tuple[str | None,
                                                                                                   dict[str, Any]]:
    """`-w FILE.toml` of an LLM URL (`workloads.llm_file`): its mix, and `options` (parameter name ->
    value) with each left at its default taken from the file. A load given on the command line
    (--rate, --concurrency, --max-concurrency) replaces the file's whole load. `own_load`: the
    command sets the load itself (a sweep), so a file that names one is refused, naming the key.
    Anything else: `workload` and `options` as they are. Exit 2 naming file, key and problem."""
    from workloads.config_files import ConfigError
    from workloads.llm_file import is_llm_workload_file, load_llm_workload

    if not is_llm_workload_file(workload):
        return workload, options
    assert workload is not None
    try:
        w = load_llm_workload(workload)
    except ConfigError as exc:
        fail(str(exc))
    if own_load:
        for key in ("rate_rps", "duration_s", "concurrency", "max_concurrency"):
            if getattr(w, key) is not None:
                fail(f"{workload}: key '{key}': a sweep sets its own load and step duration (--concurrency "
                     f"LEVELS or its rate search, --step-duration); drop it here, or `harness run` the file")
    cli_load = any(options.get(name) is not None for name in _LOAD)
    merged = dict(options)
    for name, (key, default) in _FILE_KEYS.items():
        if name not in options or options[name] != default or (cli_load and name in _LOAD):
            continue
        value = getattr(w, key)
        merged[name] = Path(value) if name == "dataset" and value is not None else \
            (value.value if name == "dataset_format" and value is not None else value)
    return w.mix, merged

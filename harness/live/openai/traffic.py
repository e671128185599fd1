"""What a run sends and how: a data set (or a length mix) under a load mode, driven against a URL.

`Traffic.of(dataset, fmt, rate, concurrency, max_concurrency, think_time_s)` reads the data set
(`workloads.datasets.load_dataset`: a `DatasetError` naming file and line) and the load
(`load.Load.of`: a `LoadError` naming the option), once, before anything is sent.

`send_traffic.drive_traffic(target, prepared, traffic, mix, duration_s, seed, timeout_s)` then builds
the conversations (`sessions_plan`) and sends them (`sessions.drive_sessions`): the data set's conversations
sampled with `seed` (a replay: in the file's order at its times), or without a data set one
prompt each of the mix's seeded lengths (`PromptBuilder` text, as `run.drive_url` sends).
Open loop: conversations start at the mix's seeded Poisson arrivals at the load's rate.
Output lengths come from the file, else the recorded answer, else the mix's output lengths,
never over the mix's largest (`short`, the default: 64 tokens, which the tiny decoder's context
takes). With `prefix_tokens`, every conversation opens with one of `prefix_groups` shared system
prompts (`TurnBuilder.system_prefix`), conversation k with group k mod `prefix_groups`.
"""

from __future__ import annotations

from collections.abc import Sequence as SeqABC
from dataclasses import dataclass
from typing import Any, Callable, overload

import numpy as np

from harness.live.openai.load import Load, check_procs
from harness.live.openai.prompts import PromptBuilder
from harness.live.openai.run import Prepared
from harness.live.openai.target import UrlTarget
from harness.live.openai.turns import DEFAULT_BLOCK_TOKENS, TurnBuilder
from workloads.datasets import Conversation, Dataset, Message, Prompt, load_dataset
from workloads.llm import build_llm_schedule, length_mix, mix_workload

__all__ = ["MAX_CLOSED_CONVERSATIONS", "SessionsPlan", "Share", "Traffic", "sessions_plan"]

MAX_CLOSED_CONVERSATIONS = 100_000   # a closed loop takes at most this many conversations (a bound)


DRIVER_EXECUTORS = ("process", "ray")


@dataclass(frozen=True)
class Traffic:
    load: Load
    dataset: Dataset | None = None
    think_time_s: float = 0.0
    block_tokens: int = DEFAULT_BLOCK_TOKENS
    prefix_tokens: int = 0      # a shared system prompt this long opens every conversation (0: none)...
    prefix_groups: int = 1      # ...one of this many, conversation k's the (k mod groups)th
    driver_procs: int = 1       # driver processes the conversations are split over (`procs`)
    driver_executor: str = "process"   # ...spawned here ("process", `procs`) or Ray actors ("ray", `ray_procs`)

    def __post_init__(self) -> None:
        check_procs(self.load, self.driver_procs)
        if self.driver_executor not in DRIVER_EXECUTORS:
            raise ValueError(f"the driver's executor must be one of {', '.join(DRIVER_EXECUTORS)}, got "
                             f"'{self.driver_executor}'")
        if self.driver_executor != "process" and self.driver_procs == 1:
            raise ValueError(f"executor {self.driver_executor} runs the driver's processes as Ray actors: give "
                             "more than one (--driver-procs N)")
        if self.prefix_tokens < 0:
            raise ValueError(f"--prefix-tokens must be >= 0, got {self.prefix_tokens}")
        if self.prefix_groups < 1:
            raise ValueError(f"--prefix-groups must be >= 1, got {self.prefix_groups}")

    @classmethod
    def of(cls, dataset: str | None, dataset_format: str | None, rate_rps: float | None, concurrency: int | None,
           max_concurrency: int | None, think_time_s: float = 0.0, block_tokens: int = DEFAULT_BLOCK_TOKENS,
           default_rate_rps: float = 2.0, prefix_tokens: int = 0, prefix_groups: int = 1,
           driver_procs: int = 1, driver_executor: str = "process") -> "Traffic":
        if think_time_s < 0:
            raise ValueError(f"--think-time must be >= 0, got {think_time_s}")
        if prefix_tokens < 0 or prefix_groups < 1:
            raise ValueError(f"--prefix-tokens must be >= 0 and --prefix-groups >= 1, got {prefix_tokens} and "
                             f"{prefix_groups}")
        if prefix_groups != 1 and not prefix_tokens:
            raise ValueError("--prefix-groups counts shared system prompts: give --prefix-tokens N too")
        if dataset_format is not None and dataset is None:
            raise ValueError("--dataset-format names the format of --dataset FILE: give --dataset too")
        data = load_dataset(dataset, dataset_format, think_time_s) if dataset is not None else None
        load = Load.of(rate_rps, concurrency, max_concurrency, data is not None and data.timed, default_rate_rps)
        return cls(load, data, think_time_s, block_tokens, prefix_tokens, prefix_groups, driver_procs, driver_executor)

    @property
    def label(self) -> str:
        return self.dataset.path if self.dataset is not None else ""


class _Lazy(SeqABC[Conversation]):
    """`n` conversations made on first use (a closed loop takes an unknown number)."""

    def __init__(self, n: int, make: Callable[[int], Conversation]) -> None:
        self.n, self.make = n, make
        self.made: dict[int, Conversation] = {}

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> Conversation: ...

    @overload
    def __getitem__(self, i: slice) -> SeqABC[Conversation]: ...

    def __getitem__(self, i: int | slice) -> Conversation | SeqABC[Conversation]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self.n))]
        if not 0 <= i < self.n:
            raise IndexError(i)
        if i not in self.made:
            self.made[i] = self.make(i)
        return self.made[i]


def _plan(traffic: Traffic, mix: str, duration_s: float, seed: int, prompts: PromptBuilder, prepared: Prepared
          ) -> tuple[SeqABC[Conversation], list[float] | None, Callable[[int], int]]:
    """The conversations, their starts (None: a closed loop) and the output lengths of prompts without one."""
    load, data = traffic.load, traffic.dataset
    _, out_dist = length_mix(mix)
    drawn = out_dist.draw(np.random.default_rng((seed, 7)), 4096)

    def fallback(k: int) -> int:
        return int(drawn[k % len(drawn)])

    if data is not None and load.rate_rps is None and load.concurrency is None:   # a replay, capped or not
        convs = sorted(data.conversations, key=lambda c: c.offset_s or 0.0)
        return convs, [c.offset_s or 0.0 for c in convs], fallback
    closed = load.concurrency is not None
    schedule = build_llm_schedule(mix_workload(mix, 1.0 if closed else load.rate_rps or 1.0,
                                               4096.0 if closed else duration_s), seed)
    starts = None if closed else [float(a) for a in schedule.arrival_s]
    if data is not None:
        sample = data.sample(MAX_CLOSED_CONVERSATIONS if closed else len(schedule), seed)
        return sample, starts, fallback

    def make(k: int) -> Conversation:
        j = k % len(schedule)
        tokens, out = int(schedule.prompt_tokens[j]), int(schedule.output_tokens[j])
        if prepared.tokenizer is not None:
            text = prompts.exact(k, tokens, prepared.tokenizer, prepared.calibration)
        else:
            text = prompts.prompt(k, tokens, prepared.calibration)
        return Conversation(str(k), (Prompt(text=text, output_tokens=out),))

    return _Lazy(MAX_CLOSED_CONVERSATIONS if closed else len(schedule), make), starts, fallback


@dataclass(frozen=True)
class Share:
    """Process `index` of `procs`' part of a run (`--driver-procs`): conversations index, index + procs,
    ... of the plan, and its share of the load's users or slots (`load.split_load`)."""

    index: int = 0
    procs: int = 1

    def ids(self, n: int) -> range:
        return range(self.index, n, self.procs)


class _Strided(SeqABC[Conversation]):
    """`base[start::step]`, made on use (the closed loop's plan is lazy)."""

    def __init__(self, base: SeqABC[Conversation], ids: range) -> None:
        self.base, self.ids = base, ids

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> Conversation: ...

    @overload
    def __getitem__(self, i: slice) -> SeqABC[Conversation]: ...

    def __getitem__(self, i: int | slice) -> Conversation | SeqABC[Conversation]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return self.base[self.ids[i]]


@dataclass
class SessionsPlan:
    """What `drive_sessions` takes for one share of a run: built the same way in every process."""

    conversations: SeqABC[Conversation]
    starts_s: list[float] | None
    load: Load
    request_of: Callable[[tuple[Message, ...], Prompt, int], tuple[dict[str, Any], tuple[Message, ...], int, int]]
    opening: Callable[[int], tuple[Message, ...]] | None
    count: Callable[[str], int] | None
    ids: range            # the plan's conversation number of each of `conversations`


def sessions_plan(target: UrlTarget, prepared: Prepared, traffic: Traffic, mix: str, duration_s: float,
                  seed: int = 0, share: Share = Share()) -> SessionsPlan:
    """Share `share` of the run's conversations, starts and load, and how its turns are built."""
    from harness.live.openai.load import split_load

    _, out_dist = length_mix(mix)
    builder = TurnBuilder(target.api, prepared.calibration, prepared.tokenizer, seed, traffic.block_tokens,
                          out_dist.max_tokens)
    convs, starts, fallback = _plan(traffic, mix, duration_s, seed, PromptBuilder(seed), prepared)
    builder.fallback_output = fallback
    ids = share.ids(len(convs))

    def request_of(history: tuple[Message, ...], prompt: Prompt, index: int
                   ) -> tuple[dict[str, Any], tuple[Message, ...], int, int]:
        turn = builder.turn(history, prompt, index)
        body = target.body(prepared.model, "", turn.output_tokens, "default", ignore_eos=prepared.ignore_eos,
                           include_usage=prepared.include_usage)
        body.update(builder.payload(turn))
        return body, turn.messages, turn.prompt_tokens, turn.output_tokens

    def opening(conv: int) -> tuple[Message, ...]:   # conv: the share's own number; its group: the plan's
        return (builder.system_prefix(ids[conv] % traffic.prefix_groups, traffic.prefix_tokens),)

    mine = convs if share.procs == 1 else _Strided(convs, ids)
    return SessionsPlan(mine, None if starts is None else [starts[k] for k in ids],
                        split_load(traffic.load, share.index, share.procs), request_of,
                        opening if traffic.prefix_tokens else None,
                        prepared.tokenizer.count if prepared.tokenizer is not None else None, ids)

"""A fleet day driven live: the chat day's conversations as real text, sent open loop to a live fleet's front.

`LIVE_CHAT` is the chat day (`workloads.llm_days`) sized for the tiny decoder:
every conversation's whole stream fits its 512 tokens of context. `day_texts`
turns a `FleetSchedule` into each request's prompt, as a chat client would send
it: the tenant's system prompt (a shared head: the same text for every
conversation of that head, one generator per head id), then question, answer,
question... where each answer is the one the tiny decoder gives that prompt
(greedy, seed 0: what every replica answers, which `test_llm_live_prefix` holds
to), so a next turn sends back the blocks its replica cached while answering.
A block is then equal across requests exactly where the sim's block ids are
equal: the sim's model of the same day.

`drive_fleet(url, schedule, texts)` sends every request at its scheduled time
(`harness.live.openai.drive.drive_stream`: TTFT from the scheduled start, each
request bounded by `timeout_s`) and returns the `Driven` trace; `ttft_figures`
reads its TTFT p50 and p99 and how many finished.
"""

from __future__ import annotations

import random

import numpy as np

from harness.live.openai.drive import Driven, drive_stream
from harness.live.openai.stream import Api
from targets.llm.decoder import FIRST_PRINTABLE, LAST_PRINTABLE, TinyDecoder
from workloads.llm import LengthDist, LlmSchedule
from workloads.llm_days import FLEET_DAYS, FleetDay, FleetSchedule

__all__ = ["LIVE_CHAT", "day_texts", "drive_fleet", "split_ttft", "ttft_figures"]

_OWN_BASE = 1 << 50   # workloads.llm_days: ids at or above are a conversation's own blocks

# Chat sized for a 512-token context: system <= 160, question <= 40, answer <= 24 tokens, at most 5 turns
# (<= 480 tokens in all); 4 tenants; turns 4 s apart on average.
LIVE_CHAT: FleetDay = FLEET_DAYS["chat"].model_copy(update={
    "name": "chat-live", "tenants": 4, "rate_rps": 4.0, "duration_s": 30.0,
    "system": LengthDist.of_lognormal(120, 0.25, 160), "question": LengthDist.of_lognormal(20, 0.5, 40),
    "answer": LengthDist.of_lognormal(16, 0.3, 24), "turns_mean": 3.0, "max_turns": 5,
    "think_s": 4.0, "min_think_s": 1.0})


def _printable(seed: int, n: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randint(FIRST_PRINTABLE, LAST_PRINTABLE) for _ in range(n)]


def day_texts(schedule: FleetSchedule, model: TinyDecoder | None = None) -> list[str]:
    """Each request's prompt text, in schedule order (see the module doc). ValueError when a request's
    prompt and answer do not fit the model's context."""
    from targets.gpu.executor import torch_threads

    torch_threads(1)  # as the replicas run it: more threads only spin against the other processes here
    model = model or TinyDecoder(seed=0, max_len=512)
    bs = schedule.block_size
    order = sorted(range(len(schedule)), key=lambda i: (int(schedule.conversation[i]), int(schedule.turn[i])))
    texts: list[str] = [""] * len(schedule)
    stream: list[int] = []
    current = -1
    for i in order:
        conv, prompt_n, out_n = int(schedule.conversation[i]), int(schedule.prompt_tokens[i]), int(schedule.output_tokens[i])
        if prompt_n + out_n > model.max_len:
            raise ValueError(f"request {i}: {prompt_n} + {out_n} tokens do not fit the decoder's {model.max_len}")
        if conv != current:
            current = conv
            ids = schedule.block_ids[i]
            shared = sum(1 for b in ids if b < _OWN_BASE)
            head = _printable(int(ids[0]), shared * bs) if shared else []
            stream = head
        prompt = stream + _printable(conv * 1000 + int(schedule.turn[i]) + (1 << 40), prompt_n - len(stream))
        texts[i] = "".join(map(chr, prompt))
        stream = prompt + model.generate(prompt, out_n)
    return texts


def _llm_schedule(schedule: FleetSchedule) -> LlmSchedule:
    return LlmSchedule(schedule.name, schedule.duration_s, schedule.tenants, schedule.arrival_s,
                       schedule.prompt_tokens, schedule.output_tokens, schedule.tenant)


async def drive_fleet(url: str, schedule: FleetSchedule, texts: list[str], model: str = "tiny-llm",
                      timeout_s: float = 30.0) -> Driven:
    """Every request of `schedule` to `url` (a front's /v1/completions) at its time, streaming."""
    def body(seq: object, tenant: str) -> dict:
        i = seq.id  # type: ignore[attr-defined]  # a targets.llm.Sequence, ids in schedule order
        return {"model": model, "prompt": texts[i], "max_tokens": int(schedule.output_tokens[i]), "stream": True,
                "user": tenant}

    return await drive_stream(url, Api.COMPLETIONS, _llm_schedule(schedule), body, timeout_s=timeout_s)


def ttft_figures(driven: Driven) -> dict[str, float | int | None]:
    seqs = driven.trace.seqs
    ttft = np.array([s.first_token_s - s.arrival_s for s in seqs if s.finish_s == s.finish_s])
    return {"requests": len(seqs), "finished": len(ttft), "errors": driven.error_count, "timed_out": driven.timed_out,
            "ttft_p50_s": float(np.percentile(ttft, 50)) if len(ttft) else None,
            "ttft_p99_s": float(np.percentile(ttft, 99)) if len(ttft) else None}


def split_ttft(driven: Driven, times: dict[str, dict[str, float]]) -> dict[str, float | None]:
    """Medians of where each finished request's TTFT went, from the replicas' own times (`/request_times`,
    the same monotonic clock as the driver's): `front_in_s` (scheduled start to the replica's engine seeing
    it: the driver's send, the router, both HTTP hops), `engine_ttft_s` (engine arrival to its first token:
    queueing and prefill) and `front_out_s` (that token to the client, back through the router)."""
    origin = driven.trace.origin_s
    into, engine, out = [], [], []
    for seq in driven.trace.seqs:
        mine = times.get(str(seq.id))
        if mine is None or seq.finish_s != seq.finish_s:
            continue
        into.append(mine["arrival_s"] - (origin + seq.arrival_s))
        engine.append(mine["first_token_s"] - mine["arrival_s"])
        out.append(origin + seq.first_token_s - mine["first_token_s"])

    def med(xs: list[float]) -> float | None:
        return float(np.median(xs)) if xs else None

    return {"front_in_s": med(into), "engine_ttft_s": med(engine), "front_out_s": med(out), "matched": len(into)}

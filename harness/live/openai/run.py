"""One LLM URL target driven: probe it, size the prompts, send the schedule.

`prepare(target)` asks the server what it is before anything is measured: the model
(`--model`, else the first the server lists at /v1/models), whether it takes
`ignore_eos` and `stream_options` (a probe request with both; on a 4xx, again
without `ignore_eos`, then without `stream_options`: what it refuses is not sent, and
the result says so), and its tokens per word (`PROBE_WORDS` prompts of known word
counts, their `usage.prompt_tokens` fitted by `prompts.Calibration.fit`; with a
tokenizer, its own counts; with neither, assumed). The probes go at once; a server
that answers none within `PROBE_PATIENCE_S` may be holding them for a full batch, so
more are sent to fill one of `PROBE_BURST`. A server that refuses the probes for
another reason, answers none, or cannot be reached is a `ProbeFailed` naming why.

`drive_url(target, prepared, schedule, seed, timeout_s)` then sends the schedule:
each prompt `PromptBuilder` text sized to its `prompt_tokens`, `max_tokens` its
`output_tokens` (`drive.drive_stream`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Coroutine

import aiohttp

from harness.live.openai.drive import Driven, drive_stream
from harness.live.openai.scrape import scrape_every
from harness.live.openai.server_metrics import ScrapeSeries
from harness.live.openai.prompts import Calibration, PromptBuilder, Tokenizer, load_tokenizer
from harness.live.openai.stream import DONE, Chunk, Tally, parse_line
from harness.live.openai.target import UrlTarget
from targets.llm import Sequence
from workloads.llm import LlmSchedule

__all__ = ["PROBE_WORDS", "Prepared", "ProbeFailed", "drive_url", "prepare", "prepare_and_drive", "scraped"]

PROBE_WORDS = (4, 12, 24)    # words in each calibration probe (short: a small context must take them)
PROBE_PATIENCE_S = 5.0       # a server that answers no probe by then may be waiting for a full batch...
PROBE_BURST = 32             # ...so this many probes are sent in all, to fill one
PROBE_TIMEOUT_S = 60.0
SCRAPE_INTERVAL_S = 1.0      # --server-metrics: one scrape a second, as AIPerf's default


class ProbeFailed(RuntimeError):
    """The server could not be reached or refused the probe request (the text says how)."""


@dataclass(frozen=True)
class Prepared:
    """What the probes found: the model, what to send, and how prompts are sized."""

    model: str
    ignore_eos: bool
    include_usage: bool
    calibration: Calibration
    tokenizer: Tokenizer | None = None
    notes: list[str] = field(default_factory=list)


async def _models(http: aiohttp.ClientSession, target: UrlTarget) -> str:
    try:
        async with http.get(target.models_url, headers=target.headers()) as resp:
            doc = await resp.json(content_type=None) if resp.status == 200 else None
    except aiohttp.ClientConnectionError as exc:
        raise ProbeFailed(f"cannot reach {target.url}: {type(exc).__name__}: {exc}") from None
    except (aiohttp.ClientError, ValueError) as exc:
        raise ProbeFailed(f"cannot list the served models at {target.models_url} ({type(exc).__name__}: {exc}); "
                          "give --model") from None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not data or not isinstance(data[0], dict) or not isinstance(data[0].get("id"), str):
        raise ProbeFailed(f"{target.models_url} lists no model; give --model")
    return data[0]["id"]


async def _probe(http: aiohttp.ClientSession, target: UrlTarget, model: str, prompt: str, ignore_eos: bool,
                 include_usage: bool) -> tuple[int, str, Tally]:
    """(HTTP status, error text, the answer's tally) of one short streaming request."""
    body = target.body(model, prompt, 2, "probe", ignore_eos=ignore_eos, include_usage=include_usage)
    tally = Tally()
    async with http.post(target.url, json=body, headers=target.headers()) as resp:
        if resp.status != 200:
            return resp.status, (await resp.text())[:300], tally
        async for raw in resp.content:
            chunk = parse_line(raw, target.api)
            if chunk == DONE:
                tally.done = True
                break
            if isinstance(chunk, Chunk):
                tally.add(chunk)
    return 200, "", tally


async def _round(http: aiohttp.ClientSession, target: UrlTarget, model: str, texts: list[str], ignore_eos: bool,
                 include_usage: bool) -> list[tuple[str, tuple[int, str, Tally]]]:
    """The probes `texts` sent at once; (text, answer) of those that came. A server that holds a lone
    request until a batch fills (run-to-completion batching, full batches only) answers none within
    PROBE_PATIENCE_S: then PROBE_BURST - len(texts) more are sent, enough to fill a batch of that
    many, and all are awaited until PROBE_TIMEOUT_S; those still unanswered are abandoned."""
    sent: list[tuple[str, asyncio.Task[tuple[int, str, Tally]]]] = []

    def send(text: str) -> None:
        sent.append((text, asyncio.ensure_future(_probe(http, target, model, text, ignore_eos, include_usage))))

    for text in texts:
        send(text)
    done, pending = await asyncio.wait([t for _, t in sent], timeout=PROBE_PATIENCE_S)
    if pending and not any(t.exception() is None and t.result()[0] != 200 for t in done):
        for k in range(PROBE_BURST - len(texts)):
            send(texts[k % len(texts)])
        done, pending = await asyncio.wait([t for _, t in sent], timeout=PROBE_TIMEOUT_S - PROBE_PATIENCE_S)
    for t in pending:
        t.cancel()
    answers = []
    for text, t in sent:
        if t in done:
            exc = t.exception()
            if exc is not None:
                raise exc
            answers.append((text, t.result()))
    return answers


async def _accepted(http: aiohttp.ClientSession, target: UrlTarget, model: str, texts: list[str]
                    ) -> tuple[bool, bool, list[tuple[str, Tally]], list[str]]:
    """Which of ignore_eos and stream_options the server takes (each dropped in turn while it answers
    400 or 422), and the probes' (text, tally)."""
    tries = [(target.ignore_eos is not False, target.include_usage)]
    if target.ignore_eos is None:
        tries.append((False, target.include_usage))
    if target.include_usage:
        tries.append((tries[-1][0], False))
    notes, last = [], ""
    for ignore_eos, usage in tries:
        answers = await _round(http, target, model, texts, ignore_eos, usage)
        if not answers:
            raise ProbeFailed(f"the server answered none of {PROBE_BURST} probe requests within "
                              f"{PROBE_TIMEOUT_S:g} s")
        refused = [(status, text) for _, (status, text, _) in answers if status != 200]
        if not refused:
            if target.ignore_eos is None and not ignore_eos:
                notes.append(f"the server refused ignore_eos ({last}): not sent, so a model may end an answer "
                             "before max_tokens")
            if target.include_usage and not usage:
                notes.append("the server refused stream_options.include_usage: tokens are counted from chunks")
            return ignore_eos, usage, [(text, tally) for text, (_, _, tally) in answers], notes
        status, text = refused[0]
        last = f"HTTP {status}"
        if status not in (400, 422):
            break
    raise ProbeFailed(f"the server refused the probe request: HTTP {status}: {text}")


async def prepare(target: UrlTarget, seed: int = 0) -> Prepared:
    tokenizer = load_tokenizer(target.tokenizer) if target.tokenizer else None
    builder = PromptBuilder(seed)
    words = {builder.text(k, n, probe=True): n for k, n in enumerate(PROBE_WORDS)}
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=PROBE_TIMEOUT_S)) as http:
            model = target.model or await _models(http, target)
            ignore_eos, usage, answers, notes = await _accepted(http, target, model, list(words))
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ProbeFailed(f"cannot reach {target.url}: {type(exc).__name__}: {exc}") from None
    if tokenizer is not None:
        calibration = Calibration.fit([(n, tokenizer.count(t)) for t, n in words.items()],
                                      f"tokenizer {tokenizer.name}")
    elif any(tally.prompt_tokens for _, tally in answers):
        calibration = Calibration.fit([(words[t], tally.prompt_tokens or 0) for t, tally in answers])
    else:
        calibration = Calibration.assumed("the server sent no usage" if usage else "usage was not asked for")
    return Prepared(model, ignore_eos, usage, calibration, tokenizer, notes)


async def drive_url(target: UrlTarget, prepared: Prepared, schedule: LlmSchedule, seed: int = 0,
                    timeout_s: float = 60.0) -> Driven:
    builder = PromptBuilder(seed)

    def body(seq: Sequence, tenant: str) -> dict:
        if prepared.tokenizer is not None:
            prompt = builder.exact(seq.id, seq.prompt_tokens, prepared.tokenizer, prepared.calibration)
        else:
            prompt = builder.prompt(seq.id, seq.prompt_tokens, prepared.calibration)
        return target.body(prepared.model, prompt, seq.output_tokens, tenant, ignore_eos=prepared.ignore_eos,
                           include_usage=prepared.include_usage)

    count = prepared.tokenizer.count if prepared.tokenizer is not None else None
    return await drive_stream(target.url, target.api, schedule, body, target.headers(), timeout_s, count)


async def scraped(url: str, drive: Coroutine[Any, Any, Driven]) -> Driven:
    """`drive` awaited while `url` is scraped every SCRAPE_INTERVAL_S (`scrape.scrape_every`); the
    series, in seconds from the drive's origin, on the result."""
    series = ScrapeSeries(url, SCRAPE_INTERVAL_S)
    stop = asyncio.Event()
    scraper = asyncio.create_task(scrape_every(url, SCRAPE_INTERVAL_S, series, stop))
    try:
        driven = await drive
    finally:
        stop.set()
        await scraper
    driven.server = series.shifted(driven.trace.origin_s)
    return driven


def prepare_and_drive(target: UrlTarget, schedule: LlmSchedule, seed: int = 0, timeout_s: float = 60.0,
                      prepared: Prepared | None = None) -> tuple[Prepared, Driven]:
    """Both, in one event loop of their own (the live driver's: `driver_loop.new_loop`); a probe
    only when `prepared` is None."""
    from harness.live.driver_loop import new_loop

    async def main() -> tuple[Prepared, Driven]:
        ready = prepared or await prepare(target, seed)
        if target.server_metrics_url is None:
            return ready, await drive_url(target, ready, schedule, seed, timeout_s)
        return ready, await scraped(target.server_metrics_url, drive_url(target, ready, schedule, seed, timeout_s))

    with asyncio.Runner(loop_factory=new_loop) as runner:
        return runner.run(main())

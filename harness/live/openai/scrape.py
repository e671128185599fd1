"""Scraping a server's Prometheus `/metrics` while a run drives it: the I/O beside `server_metrics`.

`scrape_every(url, interval_s, series, stop)` GETs `url` once at once and then every
`interval_s` until `stop` is set (at most `MAX_SCRAPES` times), each GET bounded by the
interval, and adds each parsed reading to `series` at the event loop's time. A scrape
that fails (no answer in time, a non-200, text that is not an exposition) is counted
in `series.failures` with the first one's text, and the next is tried: a server's
metrics are a view of the run, never a reason to stop it.
"""

from __future__ import annotations

import asyncio

import aiohttp

from harness.live.openai.server_metrics import ScrapeSeries, read_scrape

__all__ = ["MAX_SCRAPES", "scrape_every"]

MAX_SCRAPES = 7200   # two hours at one a second: a bound on any run's loop


async def scrape_every(url: str, interval_s: float, series: ScrapeSeries, stop: asyncio.Event,
                       headers: dict[str, str] | None = None) -> None:
    loop = asyncio.get_running_loop()
    timeout = aiohttp.ClientTimeout(total=max(0.1, interval_s))
    async with aiohttp.ClientSession(timeout=timeout) as http:
        for _ in range(MAX_SCRAPES):
            began = loop.time()
            try:
                async with http.get(url, headers=headers or {}) as resp:
                    text = await resp.text()
                    if resp.status != 200:
                        raise ValueError(f"HTTP {resp.status}: {text[:120]}")
                series.add(began, read_scrape(text), loop.time() - began)
            except (aiohttp.ClientError, TimeoutError, ValueError, UnicodeDecodeError) as exc:
                series.fail(f"{url}: {type(exc).__name__}: {exc}"[:300])
            try:
                await asyncio.wait_for(stop.wait(), max(0.0, began + interval_s - loop.time()))
                return
            except TimeoutError:
                continue

"""What every command shares: the consoles, the error exit, the common options and their checks.

Common options mean the same on every command that runs work: `--seed`, `--json`
(the result alone on stdout), `--out` (result file), `--quiet` (no progress).

Every number, name and path a user types is checked while the command line is
parsed, before any work starts: a bad one ends the command with one line,
`error: --OPTION ...`, and exit code 2 (`fail`). The checks are option
callbacks built here (`bounded`, `one_of`, `existing_file`, ...), so an
option carries its own rule wherever it is used.
"""

from __future__ import annotations

import math
import signal
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, NoReturn, TypeVar

import typer
from rich.console import Console

out = Console()
err = Console(stderr=True)

MODES = ("sim", "live")
MODELS = ("mlp", "cnn", "transformer")  # targets.gpu.models.MODEL_NAMES, without importing torch
EXECUTORS = ("process", "ray")  # harness.engine.jobs.Executor, less inline (that is --jobs 1)


# The exit code of an interrupted command (128 + SIGINT), whether Ctrl-C or SIGTERM stopped
# it: what Typer gives a KeyboardInterrupt, and what a command that keeps the part that ran
# gives after writing it.
INTERRUPTED = 130


def fail(message: str, code: int = 2) -> NoReturn:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


# How long after Python dropped an interruption (see `interruptible`) it is raised again.
REDELIVER_S = 0.05


@contextmanager
def interruptible() -> Iterator[None]:
    """Within: SIGTERM stops the work as Ctrl-C does (KeyboardInterrupt in the main thread), so
    it stops the one way it knows (a compare keeps what finished). An interruption Python had
    to drop (raised inside a `__del__` or a weakref callback, where it cannot propagate: it
    reaches `sys.unraisablehook`) is raised again REDELIVER_S later, by SIGALRM, wherever the
    work then is, instead of being lost. Handlers and hook are put back after. Main thread only
    (where signal handlers are set)."""
    def interrupt(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    def redeliver(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            signal.setitimer(signal.ITIMER_REAL, REDELIVER_S)  # raised here, it would be dropped again
        else:
            previous_hook(unraisable)

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGALRM)}
    previous_hook, sys.unraisablehook = sys.unraisablehook, redeliver
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.unraisablehook = previous_hook
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def served_notice(exposed: bool, host: str, port: int, serves: str, guarded: str, token: str | None) -> None:
    """What `serve` says after binding: a loud line when it serves beyond loopback (and whether
    anyone may use it), else whether the token is required. `serves`: the paths it serves;
    `guarded`: those the token guards."""
    if exposed:
        where = "every interface of this machine" if host in ("0.0.0.0", "::") else f"address {host}"
        err.print(f"[bold red]EXPOSED[/] beyond loopback: port {port} serves {serves} on {where}; "
                  + (f"a bearer token is required on {guarded}" if token
                     else "[bold]no token[/]: anyone who connects can use the API (set --token or HARNESS_TOKEN)"),
                  highlight=False, soft_wrap=True)
    elif token:
        out.print(f"  a bearer token is required on {guarded}", highlight=False)


async def until_stopped() -> None:
    """Return on SIGINT or SIGTERM (a served target runs until then)."""
    import asyncio

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


# -- option checks (typer callbacks: they get the parsed value and return it) ---------------------

def bounded(option: str, *, gt: float | None = None, ge: float | None = None, le: float | None = None,
            unit: str = "") -> Callable[[Any], Any]:
    """A check that a number (or each of a repeated option's numbers) is finite and within bounds."""
    def check(value: Any) -> Any:
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if v is None:
                continue
            got = f", got {v:g}" if isinstance(v, (int, float)) else f", got {v!r}"
            if not math.isfinite(v):
                fail(f"{option} must be a finite number{got}")
            if gt is not None and not v > gt:
                fail(f"{option} must be > {gt:g}{unit}{got}")
            if ge is not None and not v >= ge:
                fail(f"{option} must be >= {ge:g}{unit}{got}")
            if le is not None and not v <= le:
                fail(f"{option} must be <= {le:g}{unit}{got}")
        return value
    return check


def one_of(option: str, valid: Iterable[str]) -> Callable[[Any], Any]:
    names = tuple(valid)

    def check(value: Any) -> Any:
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if v is not None and v not in names:
                fail(f"{option} '{v}': valid are {', '.join(names)}")
        return value
    return check


def device_check(value: Any) -> Any:
    if value is not None and value not in ("auto", "cpu", "cuda") and not (
            value.startswith("cuda:") and value[5:].isdigit()):
        fail(f"--device '{value}': valid are auto, cpu, cuda, cuda:N")
    return value


def executor_check(value: Any) -> Any:
    """One of EXECUTORS, and installed: a missing Ray ends the command before any work."""
    from rich.markup import escape

    from harness.engine.jobs import ExecutorUnavailable, require

    one_of("--executor", EXECUTORS)(value)
    try:
        require(value)
    except ExecutorUnavailable as exc:
        fail(f"--executor {value}: {escape(str(exc))}")  # escape: rich would read '[ray]' as markup
    return value


def existing_file(option: str) -> Callable[[Any], Any]:
    """Each path given must be a file that exists."""
    def check(value: Any) -> Any:
        for p in value if isinstance(value, (list, tuple)) else [value]:
            if p is not None and not Path(p).is_file():
                fail(f"{option} {p}: " + ("is a directory, not a file" if Path(p).is_dir() else "no such file"))
        return value
    return check


def writable_file(option: str) -> Callable[[Any], Any]:
    """A path to write: not a directory, and its folder is not a file."""
    def check(value: Any) -> Any:
        if value is None:
            return value
        p = Path(value)
        if p.is_dir():
            fail(f"{option} {p}: is a directory; give a file path")
        parent = next((q for q in p.parents if q.exists()), None)
        if parent is not None and not parent.is_dir():
            fail(f"{option} {p}: {parent} is a file, not a folder")
        return value
    return check


def int_list(option: str, value: str, ge: int = 1) -> tuple[int, ...]:
    """'1,2,4' -> (1, 2, 4); each an integer >= `ge`."""
    items = [x.strip() for x in value.split(",") if x.strip()]
    try:
        numbers = tuple(int(x) for x in items)
    except ValueError:
        fail(f"{option} '{value}': expected comma-separated integers like 1,2,4")
    if not numbers or any(n < ge for n in numbers):
        fail(f"{option} '{value}': each must be an integer >= {ge}")
    return numbers


def check_target_mode(target: str, mode: str, option: str = "TARGET") -> None:
    """A URL target runs only live: say so instead of 'unknown target http'."""
    if "://" in target and mode != "live":
        fail(f"{option} '{target}' is a URL: a URL target is driven over HTTP, so add --mode live")
    from targets.frameworks.spec import framework_name

    if framework_name(target) and mode != "live":
        fail(f"{option} '{target}' is a real serving framework: it runs live only, so add --mode live")


# -- the common options --------------------------------------------------------------------------

SEED = typer.Option(1, "--seed", help="One seed drives arrivals, clients and the target.",
                    callback=bounded("--seed", ge=0))
SEEDS = typer.Option(1, "--seeds", help="sim: run seeds SEED..SEED+N-1 and give each figure a 95% interval "
                     "(N times the work).", callback=bounded("--seeds", ge=1, le=100))
DURATION = typer.Option(None, "--duration", help="Cut or stretch the workload to this many seconds.",
                        callback=bounded("--duration", gt=0, unit=" s"))
RATE = typer.Option(None, "--rate", help="Scale the workload's rates so its peak is this (req/s); live with "
                    "--scale: the scale sizes the fleet and the rate drives it (past its knee).",
                    callback=bounded("--rate", gt=0, unit=" req/s"))
SET = typer.Option(None, "--set", help="Target knob KEY=VALUE (repeatable).")
JSON = typer.Option(False, "--json", help="Print the result as JSON to stdout, nothing else.")
OUT = typer.Option(None, "--out", help="Result file path (default: runs/<time>-<kind>-<label>.json).",
                   callback=writable_file("--out"))
QUIET = typer.Option(False, "--quiet", "-q", help="No progress display.")
HTML = typer.Option(None, "--html", help="Also write a self-contained HTML report here.",
                    callback=writable_file("--html"))
JOBS = typer.Option(None, "--jobs", "-j", help="Worker processes (default: one per core, at most 8).",
                    callback=bounded("--jobs", ge=1, le=256))
EXECUTOR = typer.Option("process", "--executor", help="Where sim jobs run, and the --driver-procs of `run`, `compare` or `sweep` of LLM URLs: "
                        "process (this machine's cores) or ray (the cluster at RAY_ADDRESS, else a local Ray "
                        "instance; needs the optional ray extra).",
                        callback=executor_check)
NO_CACHE = typer.Option(False, "--no-cache", help="Run every sim run again instead of reusing finished ones from the "
                        "run cache ($HARNESS_CACHE_DIR, else ~/.cache/harness/runs).")
MODE = typer.Option("sim", "--mode", help="sim (virtual time) or live (real servers).",
                    callback=one_of("--mode", MODES))
LIVE_SCALE = typer.Option(None, "--scale", help="live: shrink rates and fleet together, 0 < S <= 1.",
                          callback=bounded("--scale", gt=0, le=1))
MODEL = typer.Option("mlp", "--model", help="live: torch model of the GPU workers (mlp, cnn, transformer).",
                     callback=one_of("--model", MODELS))
DEVICE = typer.Option("auto", "--device", help="live: auto, cpu or cuda.", callback=device_check)
# `run`, `compare` and `sweep` also drive URLs; an OpenAI-compatible one takes any model name.
URL_MODEL = typer.Option(None, "--model", help="live: torch model of the GPU workers (mlp, cnn, transformer; default "
                         "mlp); an LLM URL: the served model's name (default: the first its /v1/models lists).")
API_KEY_ENV = typer.Option("OPENAI_API_KEY", "--api-key-env", help="LLM URL: the environment variable whose value is "
                           "sent as 'Authorization: Bearer' (none sent when it is unset; results name it, never the key).")
ALLOW_REMOTE = typer.Option(False, "--allow-remote", help="live: allow a URL target outside loopback.")
SERVER_METRICS = typer.Option(False, "--server-metrics", help="LLM URL: scrape the server's Prometheus /metrics "
                              "every second during each run (vLLM, SGLang and TGI names) into the result and report.")
SERVER_METRICS_URL = typer.Option(None, "--server-metrics-url", help="LLM URL, with --server-metrics: scrape this URL "
                                  "instead of the target's own /metrics.")
TOKENIZER = typer.Option(None, "--tokenizer", help="LLM URL: a local tokenizer.json (or its folder; the tokenizer "
                         "extra) to size prompts to exact token counts and count answers with.")
URL_TEMPLATE = typer.Option(None, "--template", help="URL target: a JSON body template ({{input}}, ...); an LLM URL: "
                            "a JSON object of fields added to every request (e.g. {\"temperature\": 0}).",
                            callback=existing_file("--template"))


def torch_model(model: str | None) -> str:
    """`--model` for a target the harness runs or a /predict URL: one of MODELS (default mlp)."""
    chosen = model or "mlp"
    one_of("--model", MODELS)(chosen)
    return chosen


if TYPE_CHECKING:
    from harness.engine.jobs import Jobs
    from harness.results.base import Result

    ResultT = TypeVar("ResultT", bound=Result)


def sim_jobs(executor: str, n_jobs: int | None, no_cache: bool) -> Jobs:
    """A sim command's `Jobs`: where its runs go, and the run cache unless --no-cache."""
    from harness.engine.jobs import Executor, Jobs
    from harness.engine.run_cache import RunCache

    return Jobs(Executor(executor), n_jobs, cache=None if no_cache else RunCache())


def cache_noted(result: ResultT, jobs: Jobs) -> ResultT:
    """`result` with `cached_runs` (the runs `jobs`' cache gave back), the cache's line on stderr."""
    cache = jobs.cache
    if cache is None or not (cache.hits or cache.misses):
        return result
    err.print(cache.note(), style="dim", highlight=False, soft_wrap=True)
    return result.model_copy(update={"cached_runs": list(cache.hits)}) if cache.hits else result


def publish(result: Any, path: Path, html: Path | None, as_json: bool, hint: str | None = None) -> None:
    """Write `result` to `path` (and the HTML report to `html`), then print it: its JSON
    summary (`summary_json`) alone with --json, else its view, `hint`, and where the files
    went. Every command that writes a result ends here, so `--json` means one thing."""
    from harness.results import io as results
    from reports.registry import view

    path = results.write_atomic(path, result)
    if html is not None:
        from reports.page import write_html

        write_html([result], html)
    if as_json:
        sys.stdout.write(results.dumps(result.summary_json()) + "\n")
        return
    view(result.kind).render(result, out)
    if hint:
        out.print(hint, style="dim", highlight=False)
    out.print(f"result: {path}  (re-render: harness report {path})", highlight=False)
    if html is not None:
        from reports.page import html_written

        out.print(html_written(html), highlight=False)

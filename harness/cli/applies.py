"""Which option applies where: one table, read by the refusals and by the `--help` panels.

`run`, `compare` and `sweep` each do several jobs, chosen by the target's kind (see
`harness.cli.dispatch`) and `--mode` (and, for `run`, `--driver`): a `Where`. Each row of
OPTIONS says, for one option, the `Where`s it applies to (None: every one), and its help
panel. `refusal(command, where, given)` is the one check: an option given (off its default)
that does not apply where the command is going ends the command with one line naming it,
exit 2 (`check`), before any work. Adding an option is one row here (or none: an option
with no row applies everywhere and sits in its command's own "Options" panel).

`tolerated` keeps what the commands accepted before this table while doing nothing with
it (e.g. `run --device` in sim): such a cell is accepted, not claimed to apply; deleting
it from the row turns it into a refusal.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Iterable, Mapping

__all__ = ["COMMAND_WHERE", "OPTIONS", "Driver", "Kind", "Mode", "Opt", "Panel", "Where", "accepted", "check",
           "given_options", "panel_of", "refusal"]


class Kind(Enum):
    """What a target argument names (`harness.cli.dispatch.kind_of`)."""
    DESIGN = "design"          # a spec or TOML file the harness builds (naive, hardened+blind-retries, ...)
    FRAMEWORK = "framework"    # a real serving framework the harness starts (litserve, ray-serve, bentoml)
    URL = "url"                # a request-level http URL (/predict)
    LLM_URL = "llm-url"        # an OpenAI-compatible .../v1/completions or .../v1/chat/completions
    LLM_POLICY = "llm-policy"  # an LLM batching policy (llm-static, ...)


class Mode(Enum):
    SIM = "sim"
    LIVE = "live"


class Driver(Enum):
    BUILTIN = "builtin"
    LOCUST = "locust"


@dataclass(frozen=True)
class Where:
    """Where a command is going: the target's kind, the mode, the live driver."""
    kind: Kind
    mode: Mode
    driver: Driver = Driver.BUILTIN


class Panel(Enum):
    """`--help` panels, in the order they are shown (typer's own "Options" panel comes first:
    `--help` and the options that belong to one command only)."""
    COMMON = "Common"
    SIM = "Sim mode"
    LIVE = "Live mode"
    URL = "URL targets"
    LLM = "LLM URLs"
    OUTPUT = "Output"


def where(kinds: Iterable[Kind], modes: Iterable[Mode] = tuple(Mode),
          drivers: Iterable[Driver] = tuple(Driver)) -> frozenset[Where]:
    return frozenset(Where(k, m, d) for k, m, d in itertools.product(kinds, modes, drivers))


HARNESS = (Kind.DESIGN, Kind.FRAMEWORK, Kind.URL)  # what the harness drives itself (a framework and a URL: live only)
SIM = where(HARNESS, [Mode.SIM])
LIVE = where(HARNESS, [Mode.LIVE])
BUILTIN_LIVE = where(HARNESS, [Mode.LIVE], [Driver.BUILTIN])
STARTED_LIVE = where([Kind.DESIGN, Kind.FRAMEWORK], [Mode.LIVE], [Driver.BUILTIN])  # a target the harness starts
URL_LIVE = where([Kind.URL], [Mode.LIVE])
LLM_URL = where([Kind.LLM_URL], [Mode.LIVE])
LLM_SIM = where([Kind.LLM_POLICY], [Mode.SIM])
LLM_POLICY = where([Kind.LLM_POLICY])

# The Wheres each dispatching command can reach (a framework or URL in sim is refused before: it runs live only).
COMMAND_WHERE: dict[str, frozenset[Where]] = {
    "run": where([Kind.DESIGN], [Mode.SIM]) | LIVE | where([Kind.LLM_URL], [Mode.LIVE], [Driver.BUILTIN]),
    "compare": where([Kind.DESIGN], [Mode.SIM], [Driver.BUILTIN]) | where([Kind.DESIGN, Kind.FRAMEWORK], [Mode.LIVE],
                                                                          [Driver.BUILTIN])
    | where([Kind.LLM_URL, Kind.LLM_POLICY], drivers=[Driver.BUILTIN]) - where([Kind.LLM_URL], [Mode.SIM]),
    "sweep": where([Kind.DESIGN], [Mode.SIM], [Driver.BUILTIN]) | where(HARNESS, [Mode.LIVE], [Driver.BUILTIN])
    | where([Kind.LLM_URL], [Mode.LIVE], [Driver.BUILTIN]),
}


@dataclass(frozen=True)
class Opt:
    """One option: its panel, where it applies (None: everywhere; `per_command` for a command
    where it means something else), and where it is accepted without applying (`tolerated`,
    per command; "*": every command)."""
    name: str
    panel: Panel
    applies: frozenset[Where] | None = None
    per_command: Mapping[str, frozenset[Where]] = field(default_factory=dict)
    tolerated: Mapping[str, frozenset[Where]] = field(default_factory=dict)
    panel_in: Mapping[str, Panel] = field(default_factory=dict)  # a command that shows it elsewhere
    say: Mapping[str, str] = field(default_factory=dict)  # a command's own refusal, where the plain one says less


def _o(name: str, panel: Panel, applies: frozenset[Where] | None = None, **kw: Any) -> Opt:
    return Opt(name, panel, applies, **kw)


# In the order a refusal names them when several are given.
OPTIONS: dict[str, Opt] = {o.name: o for o in [
    # common: the target, the traffic, the seed
    _o("--workload", Panel.COMMON, per_command={"sweep": LLM_URL, "alerts": LIVE},
       panel_in={"sweep": Panel.LLM, "alerts": Panel.LIVE}),
    _o("--suite", Panel.COMMON, per_command={"canary": SIM},
       say={"canary": "--suite runs in sim only; give PLANS with --mode live"}),
    _o("--mode", Panel.COMMON),
    _o("--target", Panel.COMMON),
    _o("--seed", Panel.COMMON),
    _o("--duration", Panel.COMMON, per_command={"alerts": LIVE, "review": where([Kind.FRAMEWORK])},
       panel_in={"alerts": Panel.LIVE, "review": Panel.LIVE}),
    _o("--rate", Panel.COMMON, per_command={"canary": LIVE}, panel_in={"canary": Panel.LIVE}),
    _o("--set", Panel.COMMON),
    _o("--also", Panel.COMMON, LLM_POLICY),
    # sim: seeds and where the jobs run
    _o("--seeds", Panel.SIM, SIM | LLM_SIM, tolerated={"canary": LIVE, "review": LIVE}),
    _o("--jobs", Panel.SIM, SIM | LLM_SIM, tolerated={c: LIVE for c in ("run", "compare", "alerts", "canary", "review")}),
    _o("--executor", Panel.SIM, SIM | LLM_SIM, tolerated={"run": LIVE, "compare": LIVE, "review": LIVE},
       per_command={**{c: SIM | LLM_SIM | LLM_URL for c in ("run", "compare")}, "sweep": LLM_URL},
       panel_in={"sweep": Panel.LLM}),
    # an LLM URL: where its --driver-procs run (sweep: an LLM URL's only; its sim search runs in-process)
    _o("--check-capacity", Panel.SIM, SIM, tolerated={"sweep": LIVE}),
    _o("--quick", Panel.SIM),
    _o("--no-cache", Panel.SIM, SIM | LLM_SIM, tolerated={"*": where(Kind)}),  # a live run has nothing to cache
    # live: the fleet, the model, the driver
    _o("--scale", Panel.LIVE, LIVE, per_command={"review": where([Kind.FRAMEWORK])}, panel_in={"rank": Panel.SIM},
       tolerated={"compare": SIM, "sweep": SIM}),
    _o("--model", Panel.LIVE, LIVE | LLM_URL, per_command={"compare": LLM_URL}, panel_in={"compare": Panel.LLM},
       tolerated={"run": SIM, "sweep": SIM, "canary": SIM}),
    _o("--device", Panel.LIVE, LIVE, tolerated={"run": SIM, "sweep": SIM, "alerts": SIM, "canary": SIM}),
    _o("--pad-to-s", Panel.LIVE, LIVE, tolerated={"sweep": SIM}),
    _o("--send-lag-limit", Panel.LIVE, LIVE, tolerated={"sweep": SIM}),
    _o("--repeats", Panel.LIVE, LIVE),
    _o("--confirm-failures", Panel.LIVE, LIVE),
    _o("--prometheus", Panel.LIVE, LIVE),
    _o("--template", Panel.URL, URL_LIVE | LLM_URL, per_command={"compare": LLM_URL, "sweep": LLM_URL},
       panel_in={"compare": Panel.LLM, "sweep": Panel.LLM}, tolerated={"run": where([Kind.DESIGN, Kind.FRAMEWORK],
                                                                                   [Mode.LIVE])}),
    _o("--allow-remote", Panel.URL, URL_LIVE | LLM_URL, per_command={"compare": LLM_URL}, panel_in={"compare": Panel.LLM},
       tolerated={"run": where([Kind.DESIGN, Kind.FRAMEWORK], [Mode.LIVE]),
                  "sweep": SIM | where([Kind.DESIGN, Kind.FRAMEWORK], [Mode.LIVE])}),
    _o("--warmup", Panel.LIVE, LIVE, per_command={"review": where([Kind.FRAMEWORK])}),
    _o("--flaw", Panel.LIVE, where([Kind.FRAMEWORK])),  # review's only
    _o("--driver", Panel.LIVE, LIVE),
    _o("--workers", Panel.LIVE, where(HARNESS, [Mode.LIVE], [Driver.LOCUST]), tolerated={"run": SIM | BUILTIN_LIVE}),
    _o("--driver-procs", Panel.LIVE, BUILTIN_LIVE | LLM_URL),  # an LLM URL: its conversations over processes
    _o("--balancer", Panel.LIVE, STARTED_LIVE, tolerated={"*": LLM_URL | LLM_POLICY}),
    # LLM URLs (OpenAI-compatible servers)
    _o("--api-key-env", Panel.LLM, LLM_URL, tolerated={"run": SIM | LIVE}),
    # LLM URL traffic: a data set, a load mode, conversations (harness.cli.llm_traffic)
    # (the data set and its shape also make a sim compare of LLM fleets' day: harness.cli.llm_fleet)
    *(_o(name, Panel.LLM, LLM_URL, per_command={} if name in ("--concurrency", "--max-concurrency") else
         {"compare": LLM_URL | LLM_SIM})
      for name in ("--dataset", "--dataset-format", "--concurrency", "--max-concurrency", "--think-time",
                   "--prefix-tokens", "--prefix-groups")),
    *(_o(name, Panel.LLM, LLM_URL) for name in ("--server-metrics", "--server-metrics-url", "--tokenizer")),
    # what is written and shown
    *(_o(name, Panel.OUTPUT) for name in ("--json", "--out", "--quiet", "--html", "--junit", "--markdown")),
]}

_EVERYWHERE = where(Kind)


def accepted(opt: Opt, command: str) -> frozenset[Where]:
    """Where `command` accepts `opt`: where it applies, and where it is tolerated."""
    applies = opt.per_command.get(command, opt.applies)
    return (_EVERYWHERE if applies is None else applies) | opt.tolerated.get(command, frozenset()) | \
        opt.tolerated.get("*", frozenset())


def panel_of(command: str, option: str) -> Panel | None:
    """The panel `option` shows in under `command --help` (None: the command's own "Options")."""
    opt = OPTIONS.get(option)
    return None if opt is None else opt.panel_in.get(command, opt.panel)


# What a refusal in an LLM job says it is ("X, Y: not used by ..."), and a kind's name in "applies to ... only".
_LLM_JOB = {("run", Kind.LLM_URL): "an LLM URL", ("compare", Kind.LLM_URL): "a compare of LLM URLs",
            ("sweep", Kind.LLM_URL): "a sweep of an LLM URL", ("compare", Kind.LLM_POLICY): "an LLM compare",
            ("gate", Kind.LLM_URL): "an LLM endpoint's gate"}
_LLM_WHY = {Kind.LLM_URL: " (it is driven live, one run at a time, by this process)",
            Kind.LLM_POLICY: " in --mode live (each policy is served and driven once, on the wall clock)"}
_ONLY_LLM_URL = {"run": "an LLM URL", "compare": "a compare of two LLM URLs", "sweep": "a sweep of an LLM URL"}
_NOUN = {"alerts": "proof of the rules", "canary": "canary rollout"}  # "this ... is sim"; else the command's name
_KIND_NAME = {Kind.DESIGN: "a design target", Kind.FRAMEWORK: "a framework target", Kind.URL: "a URL target",
              Kind.LLM_URL: "an LLM URL", Kind.LLM_POLICY: "LLM policies"}


def _kinds_phrase(command: str, kinds: set[Kind]) -> str:
    if kinds == {Kind.LLM_URL}:
        return _ONLY_LLM_URL.get(command, "an LLM URL")
    if kinds == {Kind.DESIGN, Kind.FRAMEWORK}:
        return "a target the harness starts"
    if Kind.URL in kinds and kinds <= {Kind.URL, Kind.LLM_URL}:
        return "a URL target"
    return " or ".join(_KIND_NAME[k] for k in Kind if k in kinds)


def _why_not(command: str, opt: Opt, w: Where) -> str:
    """One refused option, in a job the harness drives: where it does apply, nearest first."""
    if command in opt.say:
        return opt.say[command]
    ok, noun = accepted(opt, command), _NOUN.get(command, command)
    if any(c.kind is w.kind and c.mode is w.mode for c in ok):
        driver = next(c.driver for c in ok if c.kind is w.kind and c.mode is w.mode)
        return f"{opt.name} applies to --driver {driver.value} (this {noun}'s driver is {w.driver.value})"
    if any(c.kind is w.kind for c in ok):
        mode = next(c.mode for c in ok if c.kind is w.kind)
        return f"{opt.name} applies to --mode {mode.value} only (this {noun} is {w.mode.value})"
    applies = opt.per_command.get(command, opt.applies) or ok
    kinds = {c.kind for c in applies & COMMAND_WHERE.get(command, _EVERYWHERE)} or {c.kind for c in applies}
    return f"{opt.name} applies to {_kinds_phrase(command, kinds)} only (this {noun} is {_KIND_NAME[w.kind]})"


def refusal(command: str, w: Where, given: Iterable[str]) -> str | None:
    """The one-line error for the options `given` that `command` does not accept at `w`, or None.
    An LLM job names all of them; a job the harness drives names the first (in OPTIONS' order)
    and where it does apply."""
    chosen = set(given)
    refused = [o for name, o in OPTIONS.items() if name in chosen and w not in accepted(o, command)]
    if not refused:
        return None
    job = _LLM_JOB.get((command, w.kind))
    if job is not None:
        why = _LLM_WHY[w.kind] if w.kind is Kind.LLM_URL or w.mode is Mode.LIVE else ""
        return f"{', '.join(o.name for o in refused)}: not used by {job}{why}"
    return _why_not(command, refused[0], w)


def given_options(command: Callable[..., Any], params: Mapping[str, Any]) -> list[str]:
    """The options of a typer command function given off their defaults (a flag set, a list
    non-empty), read from its signature (`typer.Option` defaults) and the values it got."""
    import inspect

    from typer.models import OptionInfo

    names = []
    for name, p in inspect.signature(command).parameters.items():
        info = p.default
        if not isinstance(info, OptionInfo) or name not in params:
            continue
        value = params[name]
        if value in (None, False, (), []) or value == info.default:
            continue
        decls = info.param_decls or (f"--{name.replace('_', '-')}",)
        names.append(next((d for d in decls if d.startswith("--")), decls[0]))
    return names


def check(command: str, w: Where, func: Callable[..., Any], params: Mapping[str, Any]) -> None:
    """Exit 2 (`fail`) when an option given to `command` (its function `func`, called with
    `params`: its parameters' values, by name) does not apply at `w`."""
    from harness.cli.common import fail

    message = refusal(command, w, given_options(func, params))
    if message is not None:
        fail(message)

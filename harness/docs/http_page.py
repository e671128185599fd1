"""docs/http-api.md: the live HTTP API, from the server code itself.

The contract is `targets.http.server`'s docstring; the request fields and which are required
are found by asking the parser (`parse_predict`) about a body without each one; each
model's input and answer by asking the model (`validate`, `run`); the error kinds by
reading the server modules' source for every `(status, kind, reason)` they can answer,
plus the kinds made at run time (target statuses, aiohttp's own refusals); the URL-target
template placeholders from the payload builder's pattern, probed for what each becomes;
the LLM endpoint's part from its own server and parser (`harness.docs.llm_page`).
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from harness.docs import llm_page
from harness.docs.markdown import banner, block, code, table
from harness.live import payloads
from targets.http import edge, haproxy, l4proxy, parse, server
from targets.protocol import Status

ERROR_MODULES: tuple[ModuleType, ...] = (server, parse, edge, l4proxy)
_ERROR_CALLS = frozenset({"_error", "BadRequest", "_canned"})
_KIND = re.compile(r"[a-z][a-z0-9-]*\Z")

PLACEHOLDERS = {
    "tenant": "the tenant's name",
    "request_id": "the request ID (empty when the target sends none)",
    "deadline_ms": "the remaining budget in ms, or null",
    "input": "the model's input, a JSON array",
    "content": "the content id (equal ids: equal inputs)",
    "size": "the input length in tokens",
}
TEMPLATE = '{"tenant": "{{tenant}}", "deadline_ms": {{deadline_ms}}, "input": {{input}}}'


@dataclass(frozen=True)
class ErrorKind:
    status: int
    kind: str
    reason: str
    module: str


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(v) or "…" for v in node.values)
    return None


def _status(node: ast.AST) -> int | None:
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, str) and value[:3].isdigit():
        value = int(value[:3])
    return value if isinstance(value, int) and 400 <= value < 600 else None


def _written(module: ModuleType) -> list[ErrorKind]:
    """Each `(status, "kind", reason)` a module spells out: calls of its error helpers and tuples."""
    out = []
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in _ERROR_CALLS:
            parts, any_reason = node.args, True   # a helper's reason may be a variable
        elif isinstance(node, ast.Tuple):
            parts, any_reason = node.elts, False  # a bare tuple counts only when it spells all three
        else:
            continue
        if len(parts) < 3:
            continue
        status, kind, reason = _status(parts[0]), _text(parts[1]), _text(parts[2])
        reason = "…" if reason is None and any_reason else reason
        if status and kind and _KIND.match(kind) and reason is not None:
            out.append(ErrorKind(status, kind, reason, module.__name__))
    return out


def error_kinds() -> list[ErrorKind]:
    """Every error kind the live server and its proxy can answer, one row per (status, kind)."""
    found = [e for m in ERROR_MODULES for e in _written(m)]
    for cls, kind, reason in edge._PARSER_ERRORS:
        code_ = getattr(cls, "code", 400) or 400
        found.append(ErrorKind(code_ if 400 <= code_ < 500 else 400, kind, reason, edge.__name__))
    for status, http in server._HTTP.items():
        if status is not Status.OK:
            found.append(ErrorKind(http, status.name.lower(), "the target's answer (its reason, when it gives one)",
                                   server.__name__))
    for http, kind, reason in server.AIOHTTP_REFUSALS:  # the router's and body limit's, as the server answers them
        found.append(ErrorKind(http, kind, reason, "aiohttp"))
    unique: dict[tuple[int, str], ErrorKind] = {}
    for e in found:
        unique.setdefault((e.status, e.kind), e)
    return sorted(unique.values(), key=lambda e: (e.status, e.kind))


def request_fields() -> list[tuple[str, bool]]:
    """(field, required) for each body field, asking the parser about a body without it."""
    full = {"tenant": "t0", "request_id": "r-1", "deadline_ms": 1000, "input": [1]}
    assert set(full) == parse.FIELDS, "a /predict field this page does not know yet"
    out = []
    for name in sorted(parse.FIELDS):
        body = json.dumps({k: v for k, v in full.items() if k != name}).encode()
        try:
            parse.parse_predict(body, None, lambda _: None)
            out.append((name, False))
        except parse.BadRequest as exc:
            out.append((name, exc.kind == "missing-field"))
    return out


def models() -> list[tuple[str, str, str, str]]:
    """(model, input, example input, answer keys) for each live model, asked of the model."""
    from targets.gpu.models import MODEL_NAMES, create_model  # torch: only when docs are made

    out = []
    for name in MODEL_NAMES:
        handle = create_model(name)
        try:
            handle.validate(None)
            raise AssertionError(f"model {name} accepts a null input")
        except ValueError as exc:
            wanted = re.sub(r"^expected |(?: as a list)?, got NoneType$", "", str(exc))
        sample = handle.synthetic_input(np.random.default_rng(0), 4 if handle.variable_length else None)
        shown = [round(v, 3) if isinstance(v, float) else v for v in sample[:4]]
        example = json.dumps(shown)[:-1] + (", ...]" if len(sample) > 4 else "]")
        answer = handle.run([sample])[0]
        keys = ", ".join(f"{k}: {type(v).__name__}" + (f"[{len(v)}]" if isinstance(v, list) else "")
                         for k, v in answer.items())
        out.append((name, wanted, example, "{" + keys + "}"))
    return out


def placeholders() -> list[tuple[str, str, str, str]]:
    """(placeholder, meaning, what it becomes, quote it?) for each `{{name}}` of a template."""
    group = re.search(r"\(([a-z_|]+)\)", payloads._PLACEHOLDER.pattern)
    assert group is not None, "payloads._PLACEHOLDER names its placeholders in one (a|b|...) group"
    names = group[1].split("|")
    out = []
    for name in names:
        if name not in PLACEHOLDERS:
            raise KeyError(f"template placeholder {{{{{name}}}}} has no meaning in harness/docs/http_page.py")
        builder = payloads.Payloads("mlp", template='{"v": "{{%s}}"}' % name)
        shown = []
        for rid, deadline in (("r-1", 1000), (None, None)):
            raw = json.loads(builder.body("t0", 7, 3, rid, deadline))["v"]
            shown.append(raw if len(raw) <= 24 else raw[:20] + "...")
        try:
            json.loads(builder.body("t0", 7, 3, "r-1", 1000).decode()[7:-2])
            quote = "no: it is a JSON value"
        except ValueError:
            quote = "yes: it is bare text"
        other = code(shown[1]) if shown[1] else "empty"
        becomes = code(shown[0]) + (f" (or {other})" if shown[1] != shown[0] else "")
        out.append((code("{{%s}}" % name), PLACEHOLDERS[name], becomes, quote))
    return out


def _checked_template() -> str:
    """TEMPLATE, after checking that it builds bodies the built-in server accepts."""
    from targets.gpu.models import create_model

    builder, validate = payloads.Payloads("mlp", template=TEMPLATE), create_model("mlp").validate
    for rid, deadline in (("r-1", 1000), (None, None)):
        parse.parse_predict(builder.body("t0", 7, 3, rid, deadline), None, validate)
    return TEMPLATE


def balancer_rows() -> list[tuple[str, ...]]:
    """What HAProxy runs for naive and hardened, from `HaproxyPolicy.for_target` itself."""
    from targets.spec import resolve_target

    rows: list[tuple[str, ...]] = []
    for name in ("naive", "hardened"):
        cfg = resolve_target(name)
        f = haproxy.HaproxyPolicy.for_target(cfg).figures()
        cap = "none" if f["server_maxconn"] is None else f"{f['server_maxconn']} (design fleet)"
        queue = "-" if f["queue_timeout_s"] is None else f"{f['queue_timeout_s'] * 1000:g} ms, then 503"
        rows.append((code(name), code(f"mode {f['mode']}"), code(f"balance {f['balance']}"), cap, queue))
    return rows


def balancer_section() -> str:
    mapping = inspect.cleandoc(haproxy.__doc__ or "").split("What maps, and what does not (the project's proxy on "
                                                             "the left):", 1)[1].strip()
    return ("`--balancer python` (the default) runs the project's layer-4 proxy (`targets/http/l4proxy.py`) on the "
            "API servers' event loop; `--balancer haproxy` runs HAProxy (Debian's `haproxy`) in a process of its "
            "own on loopback, started and stopped with the host, its `show stat` read into the result "
            "(`live.balancer`). What it runs for the two bases (the cap is per API server and scales with the "
            "live fleet):\n\n"
            + table(("target", "mode", "balance", "requests at once per API server", "queue"), balancer_rows())
            + "\nWhat maps, and what does not (the project's proxy on the left):\n\n" + mapping + "\n")


def page() -> str:
    contract = inspect.cleandoc(server.__doc__ or "").split("HTTP API (JSON bodies, UTF-8)::", 1)[1]
    contract = inspect.cleandoc(contract.split("\n\n", 1)[1].split("\nRequest IDs and dedupe", 1)[0])
    rest = inspect.cleandoc(server.__doc__ or "").split("\nRequest IDs and dedupe", 1)[1]
    return "\n".join([
        banner([f"targets/http/{name}.py" for name in ("server", "parse", "edge", "l4proxy", "haproxy")]
               + ["targets/gpu/models.py", "harness/live/payloads.py", "targets/llm/server.py",
                  "targets/llm/openai_request.py"]),
        "# The live HTTP API\n",
        "`harness serve TARGET` (and `harness run TARGET --mode live`) starts a target as real processes on "
        "127.0.0.1: a layer-4 proxy, aiohttp API servers and torch GPU workers. This is what they answer.\n",
        block(contract),
        "## Request body\n",
        table(("field", "required"), [(code(n), "yes" if r else "no") for n, r in request_fields()]),
        f"Limits: `tenant` matches {code(parse._TENANT_RE.pattern)}; `request_id` matches "
        f"{code(parse._RID_RE.pattern)}; `deadline_ms` within 1..{parse.MAX_DEADLINE_MS}; "
        f"a body at most {server.DEFAULT_MAX_BODY_BYTES} bytes; error reasons at most "
        f"{parse.MAX_REASON_CHARS} characters.\n",
        "## Models (`--model`)\n",
        "The input each live model takes, and the `output` of a 200 answer.\n\n"
        + table(("model", "input", "example", "output"), [(code(m), i, code(e), code(o)) for m, i, e, o in models()]),
        "## Error kinds\n",
        "Every error body is `{\"error\": KIND, \"reason\": TEXT}`. The kinds the server, its HTTP edge and "
        "the L4 proxy can answer (`…` marks a value filled in at run time):\n\n"
        + table(("status", "error", "reason", "from"),
                [(e.status, code(e.kind), e.reason, code(e.module)) for e in error_kinds()]),
        "## Dedupe, connections, headers\n",
        "Request IDs and dedupe" + rest.rstrip() + "\n",
        "## The balancer (`--balancer python|haproxy`)\n",
        balancer_section(),
        "## Driving another server: URL targets and templates\n",
        "`harness run http://HOST:PORT/PATH --mode live -w W` drives any server over HTTP (loopback only "
        "unless `--allow-remote`). By default each request body is the JSON above for `--model`; "
        "`--template FILE` replaces it with your JSON, filled in per request. Placeholders are replaced "
        "byte for byte, so the ones that become bare text need quotes around them in the template:\n\n"
        + table(("placeholder", "meaning", "becomes", "quote it?"), placeholders()),
        "This template rebuilds the built-in body without a request ID (an empty `request_id` is refused: "
        "leave it out unless the target sends IDs). It is checked against the server's parser, with and "
        "without a deadline, whenever these docs are generated:\n",
        block(_checked_template(), "json"),
        llm_page.section(),
    ])

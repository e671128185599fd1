"""What a pydantic field says about itself: type, unit, default, allowed values, meaning.

The reference pages describe config and result documents from the same models that
validate them. A field's meaning is its `description`, else the comment on its line
in the class body (result blocks document their keys that way), else the comment
block just above it.
"""

from __future__ import annotations

import ast
import inspect
import io
import json
import tokenize
from dataclasses import dataclass
from enum import Enum
from functools import cache
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined, to_jsonable_python

# Unit by name suffix (STYLE.md: units in the names), longest first.
_UNITS = (("_gpu_s", "GPU-s"), ("_tok_s", "tokens/s"), ("_rps", "requests/s"), ("_qps", "requests/s"), ("_ms", "ms"),
          ("_bytes", "bytes"), ("_s", "s"))


REQUIRED = object()   # FieldDoc.default of a field that has none
COMPUTED = object()   # ... of one filled in when the document is made (versions, say)


@dataclass(frozen=True)
class FieldDoc:
    key: str        # as files spell it (the alias when there is one)
    type: str
    unit: str
    default: Any    # JSON-able value, REQUIRED or COMPUTED
    allowed: str    # enum / literal values, or bounds
    meaning: str
    values: dict[Any, str]  # enum value -> its meaning, when the enum says

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


# Names whose suffix is not a unit: the Zipf exponent is called s after the formula.
_NO_UNIT = frozenset({"zipf_s"})


def unit_of(name: str) -> str:
    if name in _NO_UNIT:
        return ""
    for suffix, unit in _UNITS:
        if name.endswith(suffix):
            return unit
    return ""


def type_name(tp: Any) -> str:
    """A short, stable name for an annotation: `float`, `list[Tenant]`, `str | null`."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return type_name(args[0])
    if origin in (Union, UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is Literal:
        return "string" if all(isinstance(a, str) for a in args) else " | ".join(map(literal_text, args))
    if origin in (tuple, list, set, frozenset):
        return f"list[{type_name(args[0])}]" if args else "list"
    if origin is dict:
        return f"table[{type_name(args[0])}, {type_name(args[1])}]" if args else "table"
    if tp is NoneType or tp is None:
        return "null"
    if tp is Any:
        return "any"
    if isinstance(tp, type) and issubclass(tp, Enum):
        return "string"
    if isinstance(tp, type):
        return {"str": "string", "float": "number", "int": "integer", "bool": "boolean"}.get(tp.__name__, tp.__name__)
    return str(tp)


def literal_text(value: Any) -> str:
    return json.dumps(to_jsonable_python(value), ensure_ascii=False)


def allowed_values(tp: Any) -> list[Any]:
    """The closed set of values an annotation admits (enums, literals), else []."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return allowed_values(args[0])
    if origin is Literal:
        return list(args)
    if origin in (Union, UnionType):
        return [v for a in args for v in allowed_values(a)]
    if isinstance(tp, type) and issubclass(tp, Enum):
        return [m.value for m in tp]
    return []


def bounds(info: FieldInfo) -> str:
    """Numeric and length bounds from the field's constraints: `> 0, <= 1`, `length 1..64`."""
    parts, lo, hi = [], None, None
    for m in info.metadata:
        if isinstance(m, at.Gt):
            parts.append(f"> {m.gt}")
        elif isinstance(m, at.Ge):
            parts.append(f">= {m.ge}")
        elif isinstance(m, at.Lt):
            parts.append(f"< {m.lt}")
        elif isinstance(m, at.Le):
            parts.append(f"<= {m.le}")
        elif isinstance(m, at.MinLen):
            lo = m.min_length
        elif isinstance(m, at.MaxLen):
            hi = m.max_length
    if hi is not None:
        parts.append(f"length {lo or 0}..{hi}")
    elif lo is not None:
        parts.append(f"length >= {lo}")
    return ", ".join(parts)


def default_of(info: FieldInfo) -> Any:
    if info.default_factory is not None:
        return info.default_factory() if info.default_factory in (list, dict, tuple) else COMPUTED
    if info.default is PydanticUndefined:
        return REQUIRED
    return to_jsonable_python(info.default)


@cache
def _comments(cls: type) -> dict[str, str]:
    """{field: comment} from the class body: the comment on the field's lines, else the block above."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    source = inspect.cleandoc("\n" + source) if source[:1].isspace() else source
    by_line: dict[int, tuple[str, bool]] = {}  # line -> (comment, alone on its line)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            alone = not tok.line[: tok.start[1]].strip()
            by_line[tok.start[0]] = (tok.string.lstrip("#").strip(), alone)
    out: dict[str, str] = {}
    body = ast.parse(source).body[0]
    for node in getattr(body, "body", []):
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if not isinstance(target, ast.Name):
            continue
        trailing = [by_line[n][0] for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)
                    if n in by_line and not by_line[n][1]]
        above: list[str] = []
        n = node.lineno - 1
        while n in by_line and by_line[n][1]:
            above.insert(0, by_line[n][0])
            n -= 1
        text = " ".join(trailing) or " ".join(a for a in above if not a.startswith("--"))
        if text:
            out[target.id] = text
    return out


def enum_meanings(enum: type[Enum]) -> dict[Any, str]:
    """{value: the comment on its member's line} of an enum class."""
    notes = _comments(enum)
    return {m.value: notes[m.name] for m in enum if m.name in notes}


def value_meanings(tp: Any) -> dict[Any, str]:
    """{value: meaning} for the enums an annotation holds (empty for other types)."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Annotated, Union, UnionType):
        return {k: v for a in args for k, v in value_meanings(a).items()}
    if isinstance(tp, type) and issubclass(tp, Enum):
        return enum_meanings(tp)
    return {}


def meaning(cls: type[BaseModel], name: str) -> str:
    info = cls.model_fields[name]
    if info.description:
        return info.description
    for klass in cls.__mro__:
        if isinstance(klass, type) and issubclass(klass, BaseModel) and name in _comments(klass):
            return _comments(klass)[name]
    return ""


def field_docs(cls: type[BaseModel]) -> list[FieldDoc]:
    """Every field of `cls`, in declaration order."""
    out = []
    for name, info in cls.model_fields.items():
        key = info.alias or name
        values = allowed_values(info.annotation)
        allowed = ", ".join(literal_text(v) for v in values) if values else bounds(info)
        out.append(FieldDoc(key, type_name(info.annotation), unit_of(key), default_of(info), allowed,
                            meaning(cls, name), value_meanings(info.annotation)))
    return out


def nested_models(tp: Any) -> list[type[BaseModel]]:
    """The models an annotation holds (inside lists, tables, unions), in order."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    found: list[type[BaseModel]] = []
    for arg in get_args(tp):
        for m in nested_models(arg):
            if m not in found:
                found.append(m)
    return found


def is_array(tp: Any) -> bool:
    """A list/tuple annotation (possibly Optional or Annotated around it)."""
    origin = get_origin(tp)
    if origin is Annotated:
        return is_array(get_args(tp)[0])
    if origin in (Union, UnionType):
        return any(is_array(a) for a in get_args(tp) if a is not NoneType)
    return origin in (tuple, list)

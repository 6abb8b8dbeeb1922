"""Model output is hostile: parse it strictly, with one narrow fallback, and validate it before use.

The fallback accepts exactly: a reply wrapped in ``` fences, and prose around a JSON object (the first balanced
top-level object is taken). Nothing else is "repaired": no trailing commas, no single quotes, no truncation."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.S)
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


class JsonParseError(ValueError):
    """Why a reply is not a usable JSON object (said back to the model in the re-ask)."""


@dataclass(frozen=True)
class Parsed:
    data: dict[str, Any]
    repaired: bool  # True when the fallback (fences, prose) was needed


def _loads_object(text: str) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise JsonParseError(f"expected a JSON object, got a JSON {type(value).__name__}")
    return value


def first_object(text: str) -> str | None:
    """The first balanced {...} in `text`, honouring JSON strings and escapes; None if none closes."""
    start = text.find("{")
    while start != -1:
        depth, in_string, escaped = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
        return None  # the first object never closes: truncated, not something to guess at
    return None


def _candidates(text: str) -> list[str]:
    out = [m.group(1) for m in _FENCE.finditer(text)]
    obj = first_object(text)
    if obj is not None:
        out.append(obj)
    return out


def parse_json_object(text: str | None) -> Parsed:
    """Strict json.loads; else a fenced block or the first balanced object in prose. Raises JsonParseError."""
    if text is None or not text.strip():
        raise JsonParseError("the reply is empty")
    try:
        return Parsed(_loads_object(text), repaired=False)
    except JsonParseError:
        raise
    except ValueError as exc:
        strict_error = exc
    for candidate in _candidates(text):
        try:
            return Parsed(_loads_object(candidate.strip()), repaired=True)
        except ValueError:
            continue
    if "{" in text and first_object(text) is None:
        raise JsonParseError(f"the JSON object is not closed (truncated?): {strict_error}")
    raise JsonParseError(f"the reply is not a JSON object: {strict_error}")


def _type_ok(value: Any, expected: Any) -> bool:
    names = expected if isinstance(expected, list) else [expected]
    known = [n for n in names if n in _TYPES]
    if not known:
        return True  # not a simple type: not checked here
    if isinstance(value, bool) and "boolean" not in known:
        return False  # bool is an int in Python, never in JSON
    return any(isinstance(value, _TYPES[n]) for n in known)


def validate(
    data: dict[str, Any], *, schema: dict[str, Any] | None, required: tuple[str, ...] = ()
) -> list[str]:
    """Problems with `data`: missing required fields and wrong simple types of top-level properties."""
    problems: list[str] = []
    needed = list(required) + [r for r in (schema or {}).get("required", ()) if r not in required]
    for name in needed:
        if name not in data:
            problems.append(f"missing required field {name!r}")
    properties = (schema or {}).get("properties") or {}
    for name, spec in properties.items():
        if (
            name in data
            and isinstance(spec, dict)
            and "type" in spec
            and not _type_ok(data[name], spec["type"])
        ):
            problems.append(f"field {name!r} must be {spec['type']}, got {type(data[name]).__name__}")
    return problems

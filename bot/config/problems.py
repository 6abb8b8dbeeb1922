"""A failed validation of a YAML file in our words: every error, each with its file:line, its key path and, for an
unknown key, the keys that are known there and the closest of them ("`agnet`: unknown key; did you mean
`agent`?"). Generic over the pydantic model, so that sqlcanary.yml (bot.config.model) and `sqlcanary validate`
(bot.validate) say the same thing."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ValidationError

from bot.base.yamlread import LineDict, LineList

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file: where (file, line, dotted key path) and what, in words that name the fix."""

    path: str
    line: int | None
    key: str  # "agent.timeout", "cases[2].tag"; "" for the file as a whole
    message: str
    severity: Severity = "error"
    case_id: str | None = None

    @property
    def where(self) -> str:
        return self.path if self.line is None else f"{self.path}:{self.line}"

    @property
    def what(self) -> str:
        """The message with its key path (and case id) in front, without the file."""
        head = f"{self.key}: " if self.key else ""
        case = f"(case {self.case_id}) " if self.case_id else ""
        return f"{case}{head}{self.message}"

    def __str__(self) -> str:
        tag = "warning: " if self.severity == "warning" else ""
        return f"{self.where}: {tag}{self.what}"


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known key a typo most likely meant (difflib's ratio; None when nothing is close)."""
    found = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_key_message(word: str, known: Iterable[str], *, within: str = "") -> str:
    """ "unknown key; did you mean `agent`? (known keys: ...)": the "did you mean" only when one is close.
    `within` says where, in words ("a case") or as a key path ("`agent`")."""
    names = sorted(known)
    guess = closest(word, names)
    there = f" in {within}" if within else ""
    hint = f"; did you mean `{guess}`?" if guess else ""
    return f"unknown key{there}{hint} (known keys{there}: {', '.join(names)})"


def unknown_keys(
    doc: dict,
    known: Iterable[str],
    *,
    path: str,
    prefix: str = "",
    within: str | None = None,
    fallback_line: int | None = None,
    case_id: str | None = None,
) -> list[Problem]:
    """A Problem for each key of `doc` that is not in `known`, at its own line. `prefix` is the key path of `doc`
    ("agent."); `within` names it in words (default: that key path)."""
    names = set(known)
    where = within if within is not None else (f"`{prefix.rstrip('.')}`" if prefix else "")
    out = []
    for key in doc:
        if str(key) in names:
            continue
        line = doc.line_of(str(key)) if isinstance(doc, LineDict) else fallback_line
        message = unknown_key_message(str(key), names, within=where)
        out.append(Problem(path, line, f"{prefix}{key}", message, case_id=case_id))
    return out


# --- pydantic errors ---------------------------------------------------------------------------------------------


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _inner(annotation: Any, key: object) -> Any:
    """The annotation one step below `annotation` at `key`: a model's field, a dict's value, a sequence's item."""
    models = _models_in(annotation)
    for model in models:
        field = model.model_fields.get(str(key))
        if field is not None:
            return field.annotation
    if models:
        return None
    for arg in (annotation, *get_args(annotation)):
        origin = get_origin(arg)
        if origin is dict:
            return get_args(arg)[1]
        if origin in (list, tuple):
            return get_args(arg)[0]
    return None


def known_keys(
    model: type[BaseModel], keys: Sequence[object], hidden: Iterable[str] = ()
) -> list[str] | None:
    """The keys the model accepts below the key path `keys` (None when no model is there)."""
    annotation: Any = model
    for key in keys:
        annotation = _inner(annotation, key)
        if annotation is None:
            return None
    models = _models_in(annotation)
    if not models:
        return None
    skip = set(hidden)
    return sorted(name for name in models[0].model_fields if name not in skip)


def _walk(doc: Any, loc: Sequence[object]) -> tuple[list[object], int | None]:
    """The part of a pydantic error location that names keys and items of the document (a union's member tags,
    such as `str` or `function-after[...]`, are not in it), and the line of the deepest of them."""
    keys: list[object] = []
    node = doc
    line = doc.line if isinstance(doc, LineDict | LineList) else None
    for part in loc:
        if isinstance(node, dict) and str(part) in node:
            line = node.line_of(str(part)) if isinstance(node, LineDict) else line
            keys.append(str(part))
            node = node[str(part)]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            line = node.line_of(part) if isinstance(node, LineList) else line
            keys.append(part)
            node = node[part]
        elif isinstance(node, dict | list):
            continue  # a union member's tag
        else:
            break
    return keys, line


def key_path(keys: Sequence[object]) -> str:
    out = ""
    for key in keys:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


def _words(err: Any, keys: list[object], model: type[BaseModel], hidden: Iterable[str]) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        known = known_keys(model, keys[:-1], hidden) or []
        parent = key_path(keys[:-1])
        return unknown_key_message(
            str(keys[-1]) if keys else "", known, within=f"`{parent}`" if parent else ""
        )
    if kind == "missing":
        return "a required key is missing"
    msg = str(err["msg"]).removeprefix("Value error, ")
    value = err.get("input")
    shown = repr(value) if isinstance(value, str | int | float | bool) else None
    return f"{msg[:1].lower()}{msg[1:]}" + (f" (got {shown})" if shown and shown not in msg else "")


def validation_problems(
    exc: ValidationError, doc: Any, model: type[BaseModel], *, path: str, hidden: Iterable[str] = ()
) -> list[Problem]:
    """Every error of a pydantic validation of `doc` (a mapping read by bot.base.yamlread) against `model`, in
    our words; the alternatives of one union are said together."""
    hidden = tuple(hidden)
    merged: dict[tuple[str, int | None], list[str]] = {}
    order: list[tuple[str, int | None]] = []
    for err in exc.errors():
        keys, line = _walk(doc, err["loc"])
        if err["type"] == "missing":
            keys = [*keys, *[p for p in err["loc"][len(keys) :] if isinstance(p, str)][-1:]]
        spot = (key_path(keys), line)
        words = _words(err, keys, model, hidden)
        if spot not in merged:
            merged[spot] = []
            order.append(spot)
        if words not in merged[spot]:
            merged[spot].append(words)
    return [Problem(path, line, key, "; or ".join(merged[(key, line)])) for key, line in order]

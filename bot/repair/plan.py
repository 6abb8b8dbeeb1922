"""The model's repair plan (hostile input): its shape, and every check an action must pass before a byte is
written. A refusal carries a reason the next prompt shows the model."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Literal

import sqlglot
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlglot.errors import ParseError, TokenError

from bot.kb import check_kb
from bot.kb.files import MAX_FILE_BYTES, KBFiles, RefusedPath
from bot.repair.actions import MAX_EDITS, Action, Edit, Unusable, apply_action, file_kind

MAX_ACTIONS = 12
_FILE = {"type": "string", "description": "a KB path as listed, e.g. kb/metrics/x.yaml"}
_EDITS = {
    "type": "array",
    "minItems": 1,
    "maxItems": MAX_EDITS,
    "items": {
        "type": "object",
        "properties": {
            "search": {"type": "string", "description": "lines copied exactly from the file; found once"},
            "replace": {"type": "string"},
        },
        "required": ["search", "replace"],
        "additionalProperties": False,
    },
}
# Sent as response_format: an action is {file, edits} or {file, content}, nothing else. There is no `type` to
# get wrong: the file's name says what it is. A server that constrains output to the schema (llama.cpp,
# vLLM, OpenAI) cannot produce any other shape.
PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "issues_found": {"type": "array", "items": {"type": "string"}},
        "reasoning": {"type": "string"},
        "status": {"type": "string", "enum": ["updated", "perfect"]},
        "actions": {
            "type": "array",
            "maxItems": MAX_ACTIONS,
            "items": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {"file": _FILE, "edits": _EDITS},
                        "required": ["file", "edits"],
                        "additionalProperties": False,
                    },
                    {
                        "type": "object",
                        "properties": {"file": _FILE, "content": {"type": "string"}},
                        "required": ["file", "content"],
                        "additionalProperties": False,
                    },
                ]
            },
        },
        "improvements_made": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["status", "actions"],
}
__all__ = [
    "MAX_ACTIONS",
    "PLAN_SCHEMA",
    "Action",
    "CheckedPlan",
    "Edit",
    "Plan",
    "PlanError",
    "Refusal",
    "check_plan",
    "combine_held",
    "kb_folders",
    "parse_plan",
]


class _Lenient(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class Plan(_Lenient):
    status: Literal["updated", "perfect"]
    issues_found: tuple[str, ...] = ()
    improvements_made: tuple[str, ...] = ()
    actions: tuple[Action, ...] = Field(default=(), max_length=MAX_ACTIONS)
    reasoning: str = ""
    ignored_keys: tuple[str, ...] = ()  # keys of the reply that are not part of the plan (reported, not used)


class PlanError(ValueError):
    """The reply is not a plan; the message says what is wrong (shown to the model)."""


def _ignored(data: dict[str, Any]) -> tuple[str, ...]:
    known = set(Plan.model_fields) - {"ignored_keys"}
    out = [k for k in data if k not in known]
    for i, action in enumerate(data.get("actions") or []):
        if isinstance(action, dict):
            out += [f"actions[{i}].{k}" for k in action if k not in Action.model_fields]
    return tuple(str(k) for k in out)


def parse_plan(data: Any) -> Plan:
    if not isinstance(data, dict):
        raise PlanError("the reply must be one JSON object")
    clean = {k: v for k, v in data.items() if k != "ignored_keys"}
    try:
        plan = Plan.model_validate(clean)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "reply"
        raise PlanError(f"{where}: {err['msg']}") from None
    return plan.model_copy(update={"ignored_keys": _ignored(data)})


@dataclass(frozen=True)
class Refusal:
    file: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.reason}" if self.file else self.reason


@dataclass(frozen=True)
class CheckedPlan:
    """`changes` are the new texts of every file the plan writes ({relative path: text}); empty when refused."""

    plan: Plan
    changes: dict[str, str] = field(default_factory=dict)
    originals: dict[str, str | None] = field(default_factory=dict)
    refusals: tuple[Refusal, ...] = ()
    # Refused by the KB validator alone (every action applied and parsed): what the plan would have written, so
    # that the loop can try it together with a later plan that the validator refuses for the other half of
    # the same rule (a ratio whose two parts must change together). Never written on its own.
    held: dict[str, str] = field(default_factory=dict)
    held_originals: dict[str, str | None] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.refusals and bool(self.changes)


def _content_problem(rel: str, text: str) -> str | None:
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:
        return f"the result is larger than {MAX_FILE_BYTES} bytes"
    suffix = PurePosixPath(rel).suffix.lower()
    if suffix in (".yaml", ".yml"):
        try:
            yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f" at line {mark.line + 1}" if mark else ""
            return f"the YAML does not parse{line}: {getattr(exc, 'problem', None) or exc}"
    if suffix == ".sql":
        try:
            trees = [t for t in sqlglot.parse(text, read="postgres") if t is not None]
        except (ParseError, TokenError, ValueError) as exc:
            return f"the SQL does not parse as PostgreSQL: {str(exc).splitlines()[0][:200]}"
        if not trees:
            return "the SQL file is empty"
    return None


def kb_folders(kb: KBFiles) -> tuple[str, ...]:
    """The literal folder each `kb.paths` glob starts with ("kb/**/*.yaml" -> "kb"): the KB roots."""
    out: list[str] = []
    for g in kb.globs:
        parts = []
        for part in g.split("/")[:-1]:
            if any(ch in part for ch in "*?["):
                break
            parts.append(part)
        folder = "/".join(parts)
        if folder not in out:
            out.append(folder)
    return tuple(out)


def _folder_of(rel: str, folders: tuple[str, ...]) -> str | None:
    best = None
    for f in folders:
        if (not f or rel.startswith(f + "/")) and (best is None or len(f) > len(best)):
            best = f
    return best


def _kb_refusals(kb: KBFiles, changes: dict[str, str]) -> list[Refusal]:
    """Errors check_kb finds in each touched KB folder after the plan that it did not find before."""
    folders = kb_folders(kb)
    existing = kb.files()
    out: list[Refusal] = []
    for folder in sorted({f for f in (_folder_of(r, folders) for r in changes) if f is not None}):
        prefix = f"{folder}/" if folder else ""
        before = {k.removeprefix(prefix): v for k, v in existing.items() if k.startswith(prefix)}
        after = {**before, **{k.removeprefix(prefix): v for k, v in changes.items() if k.startswith(prefix)}}
        old = {(p.path, p.message) for p in check_kb(before, prefix=folder).errors}
        for p in check_kb(after, prefix=folder).errors:
            if (p.path, p.message) not in old:
                where = f"{p.path}:{p.line}" if p.line else p.path
                out.append(Refusal(p.path, f"the KB validator rejects the result: {where}: {p.message}"))
    return out


def _existing_like(kb: KBFiles, rel: str) -> str:
    """Edits to a file that is not there: most often a name made up or copied from an example."""
    names = difflib.get_close_matches(rel, sorted(kb.files()), n=3, cutoff=0.5)
    return f". To edit an existing file, name it: {', '.join(names)}" if names else ""


# Said with every search text that is not in the file: a small model searches for lines a pull request removed
# (copied from the diff's `-` side), which can never match. Inserting takes a line that is there.
NOT_THERE = (
    ". A `search` is always lines the file has now: lines a change removed are not there. To insert lines, "
    "search for the line they go after and replace it with that line followed by the lines to insert"
)


def check_plan(plan: Plan, kb: KBFiles) -> CheckedPlan:
    """Every action checked against the files on disk and the actions before it; all refused or none."""
    if plan.status == "updated" and not plan.actions:
        return CheckedPlan(plan, refusals=(Refusal("", "status is `updated` but there are no actions"),))
    texts: dict[str, str | None] = {}
    originals: dict[str, str | None] = {}
    refusals: list[Refusal] = []
    for i, action in enumerate(plan.actions):
        try:
            rel = kb.relative(action.file)
            if rel not in texts:
                texts[rel] = originals[rel] = kb.read(rel)
            texts[rel] = apply_action(action, rel, texts[rel])
            problem = _content_problem(rel, texts[rel] or "")
            if problem:
                raise ValueError(problem)
        except (RefusedPath, ValueError, OSError, UnicodeDecodeError) as exc:
            message = exc.message if isinstance(exc, RefusedPath) else str(exc)
            if isinstance(exc, RefusedPath):
                message += f"; only KB files may be written ({', '.join(kb.globs)})"
            elif not isinstance(exc, Unusable):
                message += f"; send the whole corrected {file_kind(str(action.file))} as `content`"
            elif action.edits and texts.get(str(action.file)) is None:
                message += _existing_like(kb, str(action.file))
            elif "search text not found" in message:
                message += NOT_THERE
            refusals.append(Refusal(str(action.file)[:200], f"actions[{i}]: {message}"))
    changes = {k: v for k, v in texts.items() if v is not None and v != originals.get(k)}
    if not refusals and plan.actions and not changes:
        refusals.append(Refusal("", "the actions change nothing"))
    if refusals:
        return CheckedPlan(plan, refusals=tuple(refusals))
    kept = {k: originals[k] for k in changes}
    invalid = _kb_refusals(kb, changes)
    if invalid:
        return CheckedPlan(plan, refusals=tuple(invalid), held=changes, held_originals=kept)
    return CheckedPlan(plan, changes=changes, originals=kept)


def combine_held(kb: KBFiles, earlier: CheckedPlan, later: CheckedPlan) -> CheckedPlan | None:
    """Two plans the KB validator refused, on different files, tried as one: the plan the validator accepts
    when each half alone breaks a rule across files. None when they overlap, a file changed since the earlier
    plan was checked, or the validator still refuses the union."""
    if not earlier.held or not later.held or set(earlier.held) & set(later.held):
        return None
    if any(kb.read(path) != text for path, text in earlier.held_originals.items()):
        return None
    changes = {**earlier.held, **later.held}
    if _kb_refusals(kb, changes):
        return None
    return CheckedPlan(
        later.plan, changes=changes, originals={**earlier.held_originals, **later.held_originals}
    )

"""The model's repair plan (hostile input): its shape, and every check an action must pass before a byte is
written. A refusal carries a reason the next prompt shows the model."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Literal

import sqlglot
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlglot.errors import ParseError, TokenError

from bot.kb import check_kb
from bot.repair.kb import MAX_FILE_BYTES, KBFiles, RefusedPath

ActionType = Literal["edit_metric", "edit_snippet", "create_metric", "create_snippet"]
MAX_ACTIONS = 12
MAX_EDITS = 20

PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["status", "actions"],
    "properties": {
        "status": {"type": "string", "enum": ["updated", "perfect"]},
        "issues_found": {"type": "array", "items": {"type": "string"}},
        "improvements_made": {"type": "array", "items": {"type": "string"}},
        "actions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "file"],
                "properties": {
                    "type": {"type": "string", "enum": list(ActionType.__args__)},  # type: ignore[attr-defined]
                    "file": {"type": "string"},
                    "edits": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["search", "replace"],
                            "properties": {"search": {"type": "string"}, "replace": {"type": "string"}},
                        },
                    },
                    "content": {"type": "string"},
                },
            },
        },
        "reasoning": {"type": "string"},
    },
}


class _Lenient(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class Edit(_Lenient):
    search: str
    replace: str


class Action(_Lenient):
    type: ActionType
    file: str
    edits: tuple[Edit, ...] = Field(default=(), max_length=MAX_EDITS)
    content: str | None = None


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

    @property
    def ok(self) -> bool:
        return not self.refusals and bool(self.changes)


def _apply_action(action: Action, current: str | None) -> str:
    """The file's text after the action; ValueError naming what does not apply."""
    is_edit = action.type.startswith("edit_")
    if is_edit:
        if action.content is not None or not action.edits:
            raise ValueError(f"{action.type} needs `edits` (a list of {{search, replace}}) and no `content`")
        if current is None:
            raise ValueError("the file does not exist (use create_* to create a file)")
        text = current
        for i, edit in enumerate(action.edits):
            if not edit.search:
                raise ValueError(f"edits[{i}]: `search` is empty")
            found = text.count(edit.search)
            if found != 1:
                what = "not found" if found == 0 else f"found {found} times (must be exactly once)"
                raise ValueError(f"edits[{i}]: search text {what}: {edit.search[:120]!r}")
            text = text.replace(edit.search, edit.replace, 1)
        return text
    if action.edits or action.content is None:
        raise ValueError(f"{action.type} needs `content` and no `edits`")
    if current is not None:
        raise ValueError("the file already exists; create_* never overwrites (use edit_*)")
    return action.content


def _kind_matches(action: Action, rel: str) -> str | None:
    suffix = PurePosixPath(rel).suffix.lower()
    if action.type.endswith("_snippet") and suffix != ".sql":
        return f"{action.type} writes a .sql file"
    if action.type.endswith("_metric") and suffix not in (".yaml", ".yml"):
        return f"{action.type} writes a .yaml file"
    return None


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
            problem = _kind_matches(action, rel)
            if problem:
                raise ValueError(problem)
            if rel not in texts:
                texts[rel] = originals[rel] = kb.read(rel)
            texts[rel] = _apply_action(action, texts[rel])
            problem = _content_problem(rel, texts[rel] or "")
            if problem:
                raise ValueError(problem)
        except (RefusedPath, ValueError, OSError, UnicodeDecodeError) as exc:
            message = exc.message if isinstance(exc, RefusedPath) else str(exc)
            refusals.append(Refusal(str(action.file)[:200], f"actions[{i}] ({action.type}): {message}"))
    changes = {k: v for k, v in texts.items() if v is not None and v != originals.get(k)}
    if not refusals and plan.actions and not changes:
        refusals.append(Refusal("", "the actions change nothing"))
    if not refusals:
        refusals.extend(_kb_refusals(kb, changes))
    if refusals:
        return CheckedPlan(plan, refusals=tuple(refusals))
    return CheckedPlan(plan, changes=changes, originals={k: originals[k] for k in changes})

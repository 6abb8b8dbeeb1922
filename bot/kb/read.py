"""Parse each KB file into its model, recording problems (file:line) instead of stopping at the first one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from bot.base.errors import CaseFileError
from bot.kb.model import (
    AGGREGATIONS,
    DimensionsFile,
    KbProblem,
    Metric,
    PreferencesFile,
    Recipe,
    TablesFile,
)
from bot.kb.spans import SpanDict, SpanList, line_at, load_spanned_yaml

M = TypeVar("M", bound=BaseModel)

TABLES_FILE = "tables.yaml"
DIMENSIONS_FILE = "dimensions.yaml"
PREFERENCES_FILE = "preferences.yaml"
KB_SUFFIXES = (".yaml", ".yml", ".sql", ".md")


@dataclass
class Draft:
    """What the reading pass found, before cross-references are checked."""

    prefix: str
    tables: TablesFile | None = None
    dimensions: DimensionsFile | None = None
    preferences: PreferencesFile | None = None
    metrics: dict[str, tuple[Metric, str, SpanDict]] = field(default_factory=dict)
    recipes: dict[str, tuple[Recipe, str, SpanDict]] = field(default_factory=dict)
    snippets: dict[str, tuple[str, str]] = field(default_factory=dict)
    docs: dict[str, Any] = field(default_factory=dict)
    spans: dict[str, str] = field(default_factory=dict)
    problems: list[KbProblem] = field(default_factory=list)

    def shown(self, path: str) -> str:
        return f"{self.prefix}/{path}" if self.prefix else path

    def problem(self, path: str, line: int | None, message: str, severity: str = "error") -> None:
        self.problems.append(KbProblem(self.shown(path), line, message, severity))  # type: ignore[arg-type]

    def span(self, key: str, path: str, start: int, end: int) -> None:
        self.spans[key] = f"{self.shown(path)}:{start}-{max(start, end)}"


def read_kb_dir(root: str | Path) -> dict[str, str]:
    """Every KB file under `root` as {relative posix path: text}."""
    base = Path(root)
    if not base.is_dir():
        raise CaseFileError("knowledge base folder not found", path=str(base))
    out: dict[str, str] = {}
    for p in sorted(base.rglob("*")):
        if p.is_file() and p.suffix in KB_SUFFIXES:
            out[p.relative_to(base).as_posix()] = p.read_text(encoding="utf-8")
    return out


def _describe(exc: ValidationError, doc: Any) -> tuple[int, str]:
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    where = ".".join(str(p) for p in loc)
    kind, msg = err["type"], err["msg"]
    if kind == "extra_forbidden":
        msg = f"unknown key {str(loc[-1])!r}"
    elif kind == "missing":
        msg = f"missing required field {str(loc[-1])!r}"
        loc = loc[:-1]
    elif kind == "literal_error" and loc and loc[-1] == "aggregation":
        msg = f"unknown aggregation {err.get('input')!r} (known: {', '.join(AGGREGATIONS)})"
    elif where:
        msg = f"{where}: {msg}"
    if msg.startswith("Value error, "):
        msg = msg.removeprefix("Value error, ")
    return line_at(doc, loc), msg


def parse_model(draft: Draft, path: str, text: str, model: type[M]) -> tuple[M, SpanDict] | None:
    try:
        doc = load_spanned_yaml(text, draft.shown(path))
    except CaseFileError as exc:
        draft.problem(path, exc.line, exc.message)
        return None
    if not isinstance(doc, SpanDict):
        draft.problem(path, getattr(doc, "start", 1), "the file must hold a mapping")
        return None
    try:
        return model.model_validate(doc), doc
    except ValidationError as exc:
        line, msg = _describe(exc, doc)
        draft.problem(path, line, msg)
        return None


def _read_named(draft: Draft, path: str, text: str, model: type[M], registry: dict, kind: str) -> None:
    """A metric or recipe file: validated, registered by name (a second one of that name is a problem)."""
    parsed = parse_model(draft, path, text, model)
    if parsed is None:
        return
    item, doc = parsed
    name = item.name  # type: ignore[attr-defined]
    if name in registry:
        first = registry[name][1]
        draft.problem(
            path, doc.line_of("name"), f"duplicate {kind} name {name!r} (first in {draft.shown(first)})"
        )
        return
    registry[name] = (item, path, doc)
    draft.span(f"{kind}:{name}", path, 1, len(text.splitlines()))


def _read_metric(draft: Draft, path: str, text: str) -> None:
    _read_named(draft, path, text, Metric, draft.metrics, "metric")


def _read_recipe(draft: Draft, path: str, text: str) -> None:
    _read_named(draft, path, text, Recipe, draft.recipes, "recipe")


def _span_list(draft: Draft, path: str, doc: Any, key: str, kind: str, names: list[str]) -> None:
    """Record the line span of each item of the list `doc[key]` as `kind:name`."""
    items = doc.get(key) if isinstance(doc, dict) else None
    if isinstance(items, SpanList):
        for name, (start, end) in zip(names, items.item_spans, strict=False):
            draft.span(f"{kind}:{name}", path, start, end)


def _read_dimensions(draft: Draft, path: str, text: str) -> None:
    parsed = parse_model(draft, path, text, DimensionsFile)
    if parsed is None:
        return
    dims, doc = parsed
    draft.dimensions, draft.docs[path] = dims, doc
    _span_list(draft, path, doc, "dimensions", "dimension", [d.name for d in dims.dimensions])
    _span_list(draft, path, doc, "time_grains", "grain", [g.name for g in dims.time_grains])
    _span_list(draft, path, doc, "day_filters", "day_filter", [f.name for f in dims.day_filters])
    for dim, raw in zip(dims.dimensions, doc["dimensions"], strict=False):
        _span_list(draft, path, raw, "values", f"value:{dim.name}", [v.value for v in dim.values])
        _span_list(draft, path, raw, "groups", f"group:{dim.name}", [g.name for g in dim.groups])


def _read_tables(draft: Draft, path: str, text: str) -> None:
    parsed = parse_model(draft, path, text, TablesFile)
    if parsed is None:
        return
    draft.tables, doc = parsed
    draft.docs[path] = doc
    tables = doc["tables"]
    for name in draft.tables.tables:
        start, end = tables.key_spans[name]
        draft.span(f"table:{name}", path, start, end)


def _read_preferences(draft: Draft, path: str, text: str) -> None:
    parsed = parse_model(draft, path, text, PreferencesFile)
    if parsed is None:
        return
    draft.preferences, doc = parsed
    draft.docs[path] = doc
    _span_list(draft, path, doc, "preferences", "preference", [p.name for p in draft.preferences.preferences])


def read_files(files: Mapping[str, str], *, prefix: str = "") -> Draft:
    """Parse every file; the kind of a file follows from its place in the folder."""
    draft = Draft(prefix=prefix.rstrip("/"))
    for path in sorted(files):
        text = files[path]
        if path == TABLES_FILE:
            _read_tables(draft, path, text)
        elif path == DIMENSIONS_FILE:
            _read_dimensions(draft, path, text)
        elif path == PREFERENCES_FILE:
            _read_preferences(draft, path, text)
        elif path.startswith("metrics/") and path.endswith((".yaml", ".yml")):
            _read_metric(draft, path, text)
        elif path.startswith("recipes/") and path.endswith((".yaml", ".yml")):
            _read_recipe(draft, path, text)
        elif path.startswith("snippets/") and path.endswith(".sql"):
            name = path.removeprefix("snippets/").removesuffix(".sql")
            draft.snippets[name] = (text, path)
            draft.span(f"snippet:{name}", path, 1, len(text.splitlines()))
        elif path.endswith((".yaml", ".yml")):
            draft.problem(path, None, "not a known KB file (ignored)", "warning")
    for required in (TABLES_FILE, DIMENSIONS_FILE):
        if required not in files:
            draft.problem(required, None, "missing: every KB needs this file")
    if not any(p.startswith("metrics/") for p in files):
        draft.problem("metrics/", None, "no metric files")
    return draft

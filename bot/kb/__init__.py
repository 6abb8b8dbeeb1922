"""Knowledge bases of metric definitions, dimensions and SQL snippets: schema, reading, validation.

Generic on purpose: the shop agent reads its KB with it, and the repair loop validates proposed KB edits
with `check_kb(files)` before trying them (a mapping of relative path to text, no folder needed).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bot.base.errors import CaseFileError
from bot.kb.checks import check_dimensions, check_metrics, check_preferences, check_recipes
from bot.kb.model import (
    AGGREGATIONS,
    DayFilter,
    Dimension,
    DimensionValue,
    KbProblem,
    KnowledgeBase,
    Metric,
    Preference,
    Recipe,
    TableDoc,
    TimeGrain,
    ValueGroup,
)
from bot.kb.read import read_files, read_kb_dir

__all__ = [
    "AGGREGATIONS",
    "DayFilter",
    "Dimension",
    "DimensionValue",
    "KbError",
    "KbProblem",
    "KnowledgeBase",
    "Metric",
    "Preference",
    "Recipe",
    "TableDoc",
    "TimeGrain",
    "ValueGroup",
    "check_kb",
    "load_kb",
    "read_kb_dir",
    "validate_kb",
]


class KbError(CaseFileError):
    """A knowledge base does not validate; `problems` lists every error found."""

    def __init__(self, problems: list[KbProblem]) -> None:
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(first.message + more, path=first.path, line=first.line)
        self.problems = problems


def check_kb(files: Mapping[str, str], *, prefix: str = "") -> KnowledgeBase:
    """Parse and validate KB files given as {path relative to the KB folder: text}. Never raises for bad
    content: the problems are in the result. `prefix` is put before paths in problems and spans ("kb")."""
    draft = read_files(files, prefix=prefix)
    check_dimensions(draft)
    check_metrics(draft)
    check_recipes(draft)
    check_preferences(draft)
    dims = draft.dimensions
    return KnowledgeBase(
        tables=dict(draft.tables.tables) if draft.tables else {},
        metrics={name: m for name, (m, _, _) in draft.metrics.items()},
        dimensions={d.name: d for d in dims.dimensions} if dims else {},
        time_grains={g.name: g for g in dims.time_grains} if dims else {},
        day_filters={f.name: f for f in dims.day_filters} if dims else {},
        snippets={name: text for name, (text, _) in draft.snippets.items()},
        recipes={name: r for name, (r, _, _) in draft.recipes.items()},
        preferences=draft.preferences.preferences if draft.preferences else (),
        spans=dict(draft.spans),
        problems=tuple(sorted(draft.problems, key=lambda p: (p.severity != "error", p.path, p.line or 0))),
    )


def validate_kb(root: str | Path, *, prefix: str | None = None) -> list[KbProblem]:
    """Every problem of the KB folder `root` (errors first, then warnings)."""
    base = Path(root)
    return list(check_kb(read_kb_dir(base), prefix=base.name if prefix is None else prefix).problems)


def load_kb(root: str | Path, *, prefix: str | None = None) -> KnowledgeBase:
    """Read a KB folder; raise KbError (exit code 2) naming file:line when it has errors."""
    base = Path(root)
    kb = check_kb(read_kb_dir(base), prefix=base.name if prefix is None else prefix)
    if kb.errors:
        raise KbError(list(kb.errors))
    return kb

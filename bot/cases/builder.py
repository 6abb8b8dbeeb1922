"""One case of a suite, from its YAML mapping and the defaults over it: validated, its gold alternatives
expanded and parsed, every error naming the file, the line and the case id."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from pydantic import ValidationError

from bot.base.errors import CaseFileError
from bot.base.yamlread import LineDict, LineList
from bot.cases.choices import expand_column_choices
from bot.cases.fields import check_sql_parses, compare_options, first_error, first_loc, strings
from bot.cases.model import READ_ONLY_CATEGORIES, Case, Category, Check, Efficiency

CASE_KEYS = {
    "id",
    "perturb",
    "question",
    "gold_sql",
    "expected_sql",
    "db",
    "tags",
    "category",
    "instructions",
    "setup_sql",
    "teardown_sql",
    "checks",
    "compare",
    "efficiency",
}


@dataclass(frozen=True)
class _At:
    """Where a case is: its file, its line, its keys' lines and its id (for every error it raises)."""

    path: str
    line: int
    line_of: Callable[[str], int]
    case_id: str | None

    @property
    def id(self) -> str:
        """The case's id, once `_checked_keys` has made sure there is one."""
        assert self.case_id is not None
        return self.case_id

    def error(self, message: str, *, key: str | None = None, line: int | None = None) -> CaseFileError:
        where = line if line is not None else (self.line_of(key) if key else self.line)
        return CaseFileError(message, path=self.path, line=where, case_id=self.case_id)


def build_case(
    raw: Any, defaults: dict[str, Any], *, path: str, fallback_line: int, known_dbs: frozenset[str]
) -> Case:
    if not isinstance(raw, dict):
        raise CaseFileError("a case must be a mapping", path=path, line=fallback_line)
    line = raw.line if isinstance(raw, LineDict) else fallback_line
    at = _At(
        path=path,
        line=line,
        line_of=raw.line_of if isinstance(raw, LineDict) else (lambda _k: line),
        case_id=str(raw.get("id", "")).strip() or None,
    )
    gold_key = _checked_keys(raw, at)
    merged = {**defaults, **{k: v for k, v in raw.items() if k not in (gold_key,)}}
    category = cast(Category, merged.get("category") or "query")  # the Case model validates it
    gold = _gold(raw, gold_key, category, at)
    db = str(merged.get("db") or "")
    if db not in known_dbs:
        known = ", ".join(sorted(known_dbs))
        raise at.error(f"unknown db {db!r} (the suite defines: {known})", key="db" if "db" in raw else None)
    case = _model(raw, defaults, merged, gold=gold, db=db, category=category, at=at)
    if not case.question.strip():
        raise at.error("a case needs a `question`")
    if not case.gold_sql and not case.checks:
        raise at.error("a case needs gold_sql (or checks, for writes)")
    if case.category == "efficiency" and case.efficiency is None:
        case = case.model_copy(update={"efficiency": Efficiency()})
    return case


def _checked_keys(raw: dict[str, Any], at: _At) -> str:
    """No unknown key, an id, and one of gold_sql or expected_sql: the key the gold is under."""
    unknown = sorted(set(raw) - CASE_KEYS)
    if unknown:
        raise at.error(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(CASE_KEYS))})", key=unknown[0])
    if at.case_id is None:
        raise CaseFileError("a case needs an `id`", path=at.path, line=at.line)
    if "gold_sql" in raw and "expected_sql" in raw:
        raise at.error("give gold_sql or expected_sql, not both")
    return "gold_sql" if "gold_sql" in raw else "expected_sql"


def _gold(raw: dict[str, Any], gold_key: str, category: str, at: _At) -> list[str]:
    """The gold alternatives, column choices expanded, each parsed (one statement for a read-only case)."""
    gold_line = at.line_of(gold_key)
    gold: list[str] = []
    for i, alt in enumerate(strings(raw.get(gold_key), what=gold_key, path=at.path, line=gold_line)):
        alt_line = raw[gold_key].line_of(i) if isinstance(raw.get(gold_key), LineList) else gold_line
        for variant in expand_column_choices(alt):
            count = check_sql_parses(variant, path=at.path, line=alt_line, case_id=at.id, what=gold_key)
            if count > 1 and category in READ_ONLY_CATEGORIES:
                raise at.error(
                    f"{gold_key} holds {count} statements; a {category} case takes one query "
                    "(write acceptable alternatives as a YAML list)",
                    line=alt_line,
                )
            gold.append(variant)
    return gold


def _checks(merged: dict[str, Any], at: _At) -> tuple[Check, ...]:
    checks_raw = merged.get("checks") or []
    if isinstance(checks_raw, str | dict):
        checks_raw = [checks_raw]
    checks = []
    for i, chk in enumerate(checks_raw):
        chk_line = checks_raw.line_of(i) if isinstance(checks_raw, LineList) else at.line_of("checks")
        try:
            checks.append(Check(sql=chk) if isinstance(chk, str) else Check(**chk))
        except (TypeError, ValidationError) as exc:
            raise at.error(f"bad check: {first_error(exc)}", line=chk_line) from exc
        check_sql_parses(checks[-1].sql, path=at.path, line=chk_line, case_id=at.id, what="check sql")
    return tuple(checks)


def _model(
    raw: dict[str, Any],
    defaults: dict[str, Any],
    merged: dict[str, Any],
    *,
    gold: list[str],
    db: str,
    category: Category,
    at: _At,
) -> Case:
    """The Case, validated by its model; a field it refuses is named with its line."""
    path, line_of = at.path, at.line_of
    tags = strings(merged.get("tags"), what="tags", path=path, line=line_of("tags"))
    checks = _checks(merged, at)
    try:
        compare = compare_options(raw.get("compare"), path=path, line=line_of("compare"), case_id=at.case_id)
        compare = compare.merged_over(
            compare_options(defaults.get("compare"), path=path, line=at.line, case_id=at.case_id)
        )
        efficiency = Efficiency(**raw["efficiency"]) if raw.get("efficiency") else None
        return Case(
            id=at.id,
            question=str(merged.get("question") or ""),
            gold_sql=tuple(gold),
            db=db,
            tags=tags,
            category=category,
            instructions=str(merged.get("instructions") or ""),
            setup_sql=strings(
                merged.get("setup_sql"), what="setup_sql", path=path, line=line_of("setup_sql")
            ),
            teardown_sql=strings(
                merged.get("teardown_sql"), what="teardown_sql", path=path, line=line_of("teardown_sql")
            ),
            checks=checks,
            compare=compare,
            efficiency=efficiency,
            source=f"{path}:{at.line}",
            perturb=raw.get("perturb"),
            perturb_default=defaults.get("perturb_default"),
        )
    except (TypeError, ValidationError) as exc:
        field = first_loc(exc)
        raise at.error(f"{first_error(exc)}", key=field or None) from exc

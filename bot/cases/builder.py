"""One case of a suite, from its YAML mapping and the defaults over it: validated, its gold alternatives
expanded and parsed, every error naming the file, the line and the case id."""

from __future__ import annotations

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


def build_case(
    raw: Any, defaults: dict[str, Any], *, path: str, fallback_line: int, known_dbs: frozenset[str]
) -> Case:
    if not isinstance(raw, dict):
        raise CaseFileError("a case must be a mapping", path=path, line=fallback_line)
    line = raw.line if isinstance(raw, LineDict) else fallback_line
    line_of = raw.line_of if isinstance(raw, LineDict) else (lambda _k: line)
    case_id = str(raw.get("id", "")).strip() or None
    unknown = sorted(set(raw) - CASE_KEYS)
    if unknown:
        raise CaseFileError(
            f"unknown key {unknown[0]!r} (known: {', '.join(sorted(CASE_KEYS))})",
            path=path,
            line=line_of(unknown[0]),
            case_id=case_id,
        )
    if case_id is None:
        raise CaseFileError("a case needs an `id`", path=path, line=line)
    if "gold_sql" in raw and "expected_sql" in raw:
        raise CaseFileError("give gold_sql or expected_sql, not both", path=path, line=line, case_id=case_id)
    gold_key = "gold_sql" if "gold_sql" in raw else "expected_sql"
    gold_line = line_of(gold_key)
    gold_raw = strings(raw.get(gold_key), what=gold_key, path=path, line=gold_line)
    merged = {**defaults, **{k: v for k, v in raw.items() if k not in (gold_key,)}}
    category = cast(Category, merged.get("category") or "query")  # the Case model validates it
    gold: list[str] = []
    for i, alt in enumerate(gold_raw):
        alt_line = raw[gold_key].line_of(i) if isinstance(raw.get(gold_key), LineList) else gold_line
        for variant in expand_column_choices(alt):
            count = check_sql_parses(variant, path=path, line=alt_line, case_id=case_id, what=gold_key)
            if count > 1 and category in READ_ONLY_CATEGORIES:
                raise CaseFileError(
                    f"{gold_key} holds {count} statements; a {category} case takes one query "
                    "(write acceptable alternatives as a YAML list)",
                    path=path,
                    line=alt_line,
                    case_id=case_id,
                )
            gold.append(variant)
    db = str(merged.get("db") or "")
    if db not in known_dbs:
        known = ", ".join(sorted(known_dbs))
        db_line = line_of("db") if "db" in raw else line
        raise CaseFileError(
            f"unknown db {db!r} (the suite defines: {known})", path=path, line=db_line, case_id=case_id
        )
    tags = strings(merged.get("tags"), what="tags", path=path, line=line_of("tags"))
    checks_raw = merged.get("checks") or []
    if isinstance(checks_raw, str | dict):
        checks_raw = [checks_raw]
    checks = []
    for i, chk in enumerate(checks_raw):
        chk_line = checks_raw.line_of(i) if isinstance(checks_raw, LineList) else line_of("checks")
        try:
            checks.append(Check(sql=chk) if isinstance(chk, str) else Check(**chk))
        except (TypeError, ValidationError) as exc:
            raise CaseFileError(
                f"bad check: {first_error(exc)}", path=path, line=chk_line, case_id=case_id
            ) from exc
        check_sql_parses(checks[-1].sql, path=path, line=chk_line, case_id=case_id, what="check sql")
    try:
        compare = compare_options(raw.get("compare"), path=path, line=line_of("compare"), case_id=case_id)
        compare = compare.merged_over(
            compare_options(defaults.get("compare"), path=path, line=line, case_id=case_id)
        )
        efficiency = Efficiency(**raw["efficiency"]) if raw.get("efficiency") else None
        case = Case(
            id=case_id,
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
            checks=tuple(checks),
            compare=compare,
            efficiency=efficiency,
            source=f"{path}:{line}",
            perturb=raw.get("perturb"),
            perturb_default=defaults.get("perturb_default"),
        )
    except (TypeError, ValidationError) as exc:
        field = first_loc(exc)
        raise CaseFileError(
            f"{first_error(exc)}", path=path, line=line_of(field) if field else line, case_id=case_id
        ) from exc
    if not case.question.strip():
        raise CaseFileError("a case needs a `question`", path=path, line=line, case_id=case_id)
    if not case.gold_sql and not case.checks:
        raise CaseFileError(
            "a case needs gold_sql (or checks, for writes)", path=path, line=line, case_id=case_id
        )
    if case.category == "efficiency" and case.efficiency is None:
        case = case.model_copy(update={"efficiency": Efficiency()})
    return case

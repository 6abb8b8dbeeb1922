"""The `structural` scorer: a deterministic comparison of the gold and the predicted query with sqlglot.

Both queries are parsed (PostgreSQL), qualified against the live schema when one is given, normalised by the
passes in `bot.scoring.normalize`, and the parts of the top-level query (`bot.scoring.structural_parts`) are
compared (`bot.scoring.structural_diff`): tables, joins, filters, aggregates, grouping, having, select list,
distinct, ordering, limit, set operations, CTEs and derived tables (a single differing CTE, derived table or
branch is compared recursively). A diagnostic, never a decision by itself: no database, no LLM, and it never
raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.schema import MappingSchema

from bot.base.results import Verdict
from bot.scoring.normalize import DIALECT, PassContext, known_columns, run_passes
from bot.scoring.structural_diff import (
    PART_LABELS,
    PARTS,
    Part,
    diff_parts,
    differences,
    message,
    part_detail,
)
from bot.scoring.structural_parts import extract_parts, statement_parts

SCORER = "structural"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NOT_STATEMENTS = (exp.Condition, exp.Alias, exp.Identifier)
__all__ = ["PARTS", "PART_LABELS", "Part", "extract_parts", "schema_from_rows", "structural_verdict"]


def structural_verdict(
    gold_sql: str, pred_sql: str, *, schema: dict[str, dict[str, str]] | None = None
) -> Verdict:
    """Compare the structure of two queries. match None: gold unparsable or the comparison itself failed."""
    try:
        return _verdict(gold_sql, pred_sql, schema)
    except Exception as exc:  # noqa: BLE001 - recursion limits and sqlglot internals must not escape a scorer
        return _result(None, "error", f"structural comparison failed: {_short(exc)}")


def _result(
    match: bool | None, kind: str, message: str, flags: list[str] | None = None, **details: Any
) -> Verdict:
    return Verdict(
        scorer=SCORER, match=match, kind=kind, flags=tuple(flags or ()), message=message, details=details
    )


def schema_from_rows(rows: Iterable[Sequence[Any] | Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """`{table: {column: type}}` from `information_schema.columns` rows `(table_name, column_name, data_type)`.

    Keep the query's `ORDER BY table_name, ordinal_position`: star expansion follows the column order.
    """
    schema: dict[str, dict[str, str]] = {}
    for row in rows:
        if isinstance(row, Mapping):
            table, column, data_type = row["table_name"], row["column_name"], row["data_type"]
        else:
            table, column, data_type = row[0], row[1], row[2]
        schema.setdefault(str(table), {})[str(column)] = str(data_type or "unknown")
    return schema


def _verdict(gold_sql: str, pred_sql: str, schema: dict[str, dict[str, str]] | None) -> Verdict:
    gold, gold_error = _parse(gold_sql)
    if gold_error:
        return _result(None, "gold_unparsable", f"gold does not parse: {gold_error}")
    pred, pred_error = _parse(pred_sql)
    if pred_error:
        return _result(False, "unparsable", f"prediction does not parse: {pred_error}")
    flags: list[str] = []
    mapping = _mapping_schema(schema, flags)
    known = known_columns(*gold, *pred)
    single = len(gold) == 1 and len(pred) == 1
    gold_parts = statement_parts(_normalized(gold, "gold", mapping, known, flags), single=single)
    pred_parts = statement_parts(_normalized(pred, "pred", mapping, known, flags), single=single)
    diffs = diff_parts(gold_parts, pred_parts, extract=extract_parts)
    if not diffs:
        return _result(True, "same_structure", "same structure", flags)
    found = differences(diffs, gold_parts, pred_parts)
    return _result(
        False,
        "different_structure",
        message(found),
        flags,
        differences=[d.as_dict() for d in found],
        parts={d.part: part_detail(d) for d in diffs},
    )


def _parse(sql: str | None) -> tuple[list[exp.Expr], str | None]:
    if not sql or not sql.strip():
        return [], "empty SQL"
    try:
        parsed = sqlglot.parse(sql, read=DIALECT)
        statements = [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]
    except SqlglotError as exc:
        return [], _short(exc)
    if not statements:
        return [], "no SQL statement"
    for statement in statements:
        if isinstance(statement, _NOT_STATEMENTS):
            return [], f"not a SQL statement: `{_clip(statement.sql(dialect=DIALECT))}`"
    return [s.unnest() if isinstance(s, exp.Subquery) else s for s in statements], None


def _mapping_schema(schema: dict[str, dict[str, str]] | None, flags: list[str]) -> MappingSchema | None:
    if not schema:
        flags.append("no_schema")
        return None
    try:
        return MappingSchema(dict[str, object](schema), dialect=DIALECT, normalize=False)
    except Exception:  # noqa: BLE001 - a malformed schema only costs qualification
        flags.append("schema_unusable")
        return None


def _normalized(
    statements: list[exp.Expr], side: str, mapping: MappingSchema | None, known: dict, flags: list[str]
) -> list[exp.Expr]:
    out = []
    for statement in statements:
        ctx = PassContext(schema=mapping, known_columns=known)
        normalized, skipped = run_passes(statement, ctx)
        flags.extend(
            f"pass_skipped:{name}:{side}" for name in skipped if f"pass_skipped:{name}:{side}" not in flags
        )
        if ctx.notes and f"qualify_lenient:{side}" not in flags:
            flags.append(f"qualify_lenient:{side}")
        out.append(normalized)
    return out


def _clip(text: str, width: int = 120) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _short(exc: BaseException) -> str:
    text = _ANSI.sub("", str(exc)).strip().splitlines()
    return _clip(f"{type(exc).__name__}: {text[0] if text else ''}", 300)

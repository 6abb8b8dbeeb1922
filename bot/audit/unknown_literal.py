"""`unknown_literal`: a string the gold's WHERE compares with a column (`=`, `IN`, `LIKE` without wildcards) that
no stored value of that column equals on the fixture: a misspelt value, a wrong case, a value from another
version of the data. Evidence: the literal, the column, and the nearest stored values."""

from __future__ import annotations

from bot.audit.context import CaseAudit
from bot.audit.literals import Comparison, likeness, literal_comparisons, nearest_values
from bot.audit.model import Suspect, plain

VALUES_READ = 5000  # distinct stored values read to find the nearest ones
CLOSE = 0.8  # likeness from which a stored value looks like what the literal meant


def _stored(audit: CaseAudit, comparison: Comparison) -> list[str] | None:
    out = audit.fetch(comparison.values_sql(VALUES_READ))
    if not out.ok or out.result is None:
        return None
    return [str(plain(row[0])) for row in out.result.rows]


def _confidence(literal: str, nearest: list[str]) -> str:
    best = max((likeness(literal, v) for v in nearest), default=0.0)
    if best == 1.0:
        return "high"  # the same value but for case or surrounding spaces
    return "medium" if best >= CLOSE else "low"


def detect_unknown_literals(audit: CaseAudit) -> list[Suspect]:
    if not audit.golds or not audit.golds[0].ok:
        return []
    out: list[Suspect] = []
    seen: set[tuple[str, str, str, str]] = set()
    for index in range(len(audit.case.gold_sql)):
        for comparison in literal_comparisons(audit.gold_sql(index), audit.schema()):
            mark = (comparison.schema, comparison.table, comparison.column, comparison.literal)
            if mark in seen:
                continue
            seen.add(mark)
            exists = audit.fetch(comparison.exists_sql())
            if not exists.ok or exists.result is None or exists.result.rows:
                continue
            stored = _stored(audit, comparison)
            if stored is None:
                continue
            nearest = nearest_values(comparison.literal, stored)
            wrapped = (
                f"{comparison.wrapper}({comparison.column_name})"
                if comparison.wrapper
                else comparison.column_name
            )
            out.append(
                audit.suspect(
                    "unknown_literal",
                    _confidence(comparison.literal, nearest),
                    f"{wrapped} {comparison.op} '{comparison.literal}' matches no stored value"
                    + (
                        f" (nearest: {', '.join(repr(v) for v in nearest[:3])})"
                        if nearest
                        else " (the column is empty)"
                    ),
                    {
                        "literal": comparison.literal,
                        "column": comparison.column_name,
                        "operator": comparison.op,
                        "wrapper": comparison.wrapper,
                        "nearest": nearest,
                        "distinct_values": len(stored),
                    },
                )
            )
    return out

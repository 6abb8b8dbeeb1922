"""What an audit finds: each suspect gold with its evidence, and the report over a suite (written as JSON)."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from typing import Any, Literal

from bot.base.frozen import FrozenModel

SCHEMA_VERSION = 1
Confidence = Literal["high", "medium", "low"]
CONFIDENCES: tuple[Confidence, ...] = ("high", "medium", "low")
# The detectors' kinds, in the order a case's suspects are listed (bot/audit/detectors.py runs them).
KINDS = (
    "gold_error",
    "empty_result",
    "null_result",
    "order_ties",
    "unknown_literal",
    "alternatives_disagree",
    "agreement_against_gold",
    "gold_fails_on_perturbed",
    "llm_hint",
)
HINT_KINDS = frozenset({"llm_hint"})  # hints only: listed, never counted by `--strict`
MAX_EVIDENCE_ROWS = 5


class Suspect(FrozenModel):
    """One reason to doubt a case's gold: what was found (`kind`), how sure the audit is, and the rows or
    values that show it (JSON values only: bot/audit/model.py `plain` makes them so)."""

    case_id: str
    kind: str
    confidence: Confidence
    message: str
    evidence: dict[str, Any]
    source: str = ""  # the case's file:line, as the loader recorded it


class AuditReport(FrozenModel):
    schema_version: int = SCHEMA_VERSION
    suite: str
    suspects: tuple[Suspect, ...] = ()
    audited: int = 0  # the query cases whose golds were audited
    skipped: int = 0  # cases of other categories (writes, efficiency): their golds are not audited

    def strict_exit(self) -> bool:
        """Whether `--strict` fails: a suspect that is not a hint (an LLM's opinion never fails a gate)."""
        return any(s.kind not in HINT_KINDS for s in self.suspects)


def plain(value: Any) -> Any:
    """A fetched value as JSON can hold it: numbers stay numbers (a Decimal becomes an int or a float), dates and
    everything else their text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() and abs(value) < 2**53 else float(value)
    if isinstance(value, dt.date | dt.time | dt.datetime | dt.timedelta | uuid.UUID):
        return str(value)
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, memoryview | bytes):
        return f"\\x{bytes(value).hex()[:64]}"
    return str(value)


def plain_rows(
    rows: list[tuple[Any, ...]] | list[list[Any]], limit: int = MAX_EVIDENCE_ROWS
) -> list[list[Any]]:
    return [[plain(v) for v in row] for row in rows[:limit]]

"""One case under audit: its gold's results, fetched once in the case's read-only transaction on the run's
working database, and the guarded reads the detectors make there (every probe under a savepoint)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.audit.literals import Schema
from bot.audit.model import Suspect
from bot.base.results import ResultSet
from bot.cases.model import Case, CompareOptions
from bot.db.session import Outcome, Session
from bot.run.query_cases import as_compared

if TYPE_CHECKING:
    from bot.run.perturbed import Copies

# `--llm`: the case and its first gold's result on the real data -> (they match, why), or None (not asked)
Hint = Callable[[Case, ResultSet | None], tuple[bool, str] | None]

_SCHEMA_SQL = (
    "SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns "
    "WHERE table_schema NOT IN ('pg_catalog', 'information_schema', '_sqlcanary') "
    "ORDER BY table_schema, table_name, ordinal_position"
)


def read_schema(session: Session) -> Schema:
    """Every table column the runner role sees, by (schema, table), read through the session."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for schema, table, column, dtype in session.raw(_SCHEMA_SQL) or []:
        out.setdefault((schema, table), {})[column] = dtype
    return out


@dataclass
class CaseAudit:
    """What the detectors read: the case, its compare options, each gold alternative's outcome (run as the judge
    runs it) and a way to run more read-only queries in the same transaction."""

    case: Case
    session: Session
    options: CompareOptions
    golds: list[Outcome]
    schema: Callable[[], Schema]
    answers: tuple[str, ...] = ()  # predictions of earlier runs (`--runs`), for agreement_against_gold
    found: list[Suspect] = field(default_factory=list)
    copies: Copies | None = None  # `--perturb K`: the run's perturbed copies (bot.run.perturbed)
    on_copies: tuple[int, ...] = ()  # the K copies this case is judged on, as a run chooses them
    hint: Hint | None = None  # `--llm`

    def fetch(self, sql: str) -> Outcome:
        """A probe: one guarded query under a savepoint (a probe that fails leaves the transaction usable)."""
        return self.session.fetch(sql, savepoint=True)

    def gold_sql(self, alternative: int = 0) -> str:
        return as_compared(self.case.gold_sql[alternative], self.options)

    def gold(self, alternative: int = 0) -> ResultSet | None:
        out = self.golds[alternative]
        return out.result if out.ok else None

    def suspect(self, kind: str, confidence: str, message: str, evidence: dict) -> Suspect:
        return Suspect(
            case_id=self.case.id,
            kind=kind,
            confidence=confidence,  # type: ignore[arg-type]
            message=message,
            evidence=evidence,
            source=self.case.source,
        )

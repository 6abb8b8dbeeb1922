"""What running one piece of SQL gave, and how a server error is told to the user."""

from __future__ import annotations

import time
from dataclasses import dataclass

import psycopg2
from psycopg2 import errorcodes

from bot.base.errors import DatabaseError
from bot.base.results import ResultSet
from bot.db.guards import BYTE_CAP_SQLSTATE, SHARED_EFFECT_SQLSTATE


@dataclass(frozen=True)
class Outcome:
    """What running one piece of SQL gave: rows, or an error with its class."""

    result: ResultSet | None = None
    error: str | None = None
    error_class: str | None = None
    sqlstate: str | None = None
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


class ConnectionLost(DatabaseError):
    """The database went away in the middle of a case."""


def classify_error(exc: psycopg2.Error) -> str:
    code = getattr(exc, "pgcode", None) or ""
    if code == BYTE_CAP_SQLSTATE:
        return "result_too_large"
    if code == SHARED_EFFECT_SQLSTATE:
        return "outside_scratch"
    if code == errorcodes.QUERY_CANCELED:
        return "timeout"
    if code in (errorcodes.READ_ONLY_SQL_TRANSACTION,):
        return "read_only"
    if code in (errorcodes.INSUFFICIENT_PRIVILEGE,):
        return "permission_denied"
    if code.startswith("42"):
        return "syntax_or_schema"
    if code == errorcodes.ACTIVE_SQL_TRANSACTION:
        return "needs_autocommit"
    if code.startswith("53") or code == errorcodes.CONFIGURATION_LIMIT_EXCEEDED:
        return "resources"
    if code.startswith("22"):
        return "data_exception"
    return "runtime"


def first_line(exc: BaseException) -> str:
    text = (getattr(exc, "pgerror", None) or str(exc)).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def error_outcome(exc: psycopg2.Error, started: float) -> Outcome:
    message, error_class = first_line(exc), classify_error(exc)
    if "multi-query plan" in message:
        message, error_class = (
            "the SQL holds more than one statement; a query case takes exactly one",
            ("multiple_statements"),
        )
    elif message.startswith("ERROR:  cannot open") and "query as cursor" in message:
        error_class = "not_a_query"
    elif "EXECUTE of transaction commands" in message:
        message, error_class = (
            "transaction control is not allowed: the case's transaction is rolled back",
            ("forbidden_statement"),
        )
    return Outcome(
        error=message.removeprefix("ERROR:").strip(),
        error_class=error_class,
        sqlstate=getattr(exc, "pgcode", None),
        duration_s=time.perf_counter() - started,
    )


def byte_cap_reason(cap: int) -> str:
    """Why a result was not fetched, named like the row cap's reasons."""
    size = f"{cap // 2**20} MiB" if cap % 2**20 == 0 else f"{cap} bytes"
    return (
        f"the result exceeds the byte cap ({size} of rows per query, counted as the text the server sends): "
        "it was not fetched"
    )

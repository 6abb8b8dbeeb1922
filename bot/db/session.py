"""One worker's connection to one working database, and the isolated primitives cases are executed with.

Every case runs inside a transaction that is rolled back; predictions run as the restricted role, under a
server-side statement_timeout, with a client-side watchdog that cancels a statement the server did not stop.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import psycopg2
import psycopg2.extensions
from psycopg2 import errorcodes

from bot.errors import DatabaseError
from bot.results import ResultSet

SESSION_SETTINGS = (
    "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'; SET IntervalStyle = 'postgres'; "
    "SET extra_float_digits = 3; SET search_path = \"$user\", public; SET application_name = 'sqlcanary'; "
    "SET max_parallel_workers_per_gather = 0; SET jit = off"
)
_WATCHDOG_GRACE_S = 3.0


class OutOfRange(str):
    """A date or time PostgreSQL holds but Python cannot (BC dates, year 10000+): kept as its text."""


def _safe_caster(base: Any, name: str) -> Any:
    def cast(value: Any, cur: Any) -> Any:
        try:
            return base(value, cur)
        except (ValueError, OverflowError):
            return OutOfRange(value) if value is not None else None

    return psycopg2.extensions.new_type(base.values, name, cast)


_SAFE_TYPES = [
    _safe_caster(psycopg2.extensions.PYDATE, "SQLCANARY_DATE"),
    _safe_caster(psycopg2.extensions.PYDATETIME, "SQLCANARY_TIMESTAMP"),
    _safe_caster(psycopg2.extensions.PYDATETIMETZ, "SQLCANARY_TIMESTAMPTZ"),
]


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


def _first_line(exc: BaseException) -> str:
    text = (getattr(exc, "pgerror", None) or str(exc)).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class _Watchdog:
    """A thread that cancels the connection's running statement once its deadline has passed."""

    def __init__(self, conn: psycopg2.extensions.connection) -> None:
        self._conn = conn
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="sqlcanary-watchdog", daemon=True)
        self._thread.start()

    def arm(self, seconds: float) -> None:
        with self._cond:
            self._deadline = time.monotonic() + seconds
            self._cond.notify()

    def disarm(self) -> None:
        self._deadline = None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _loop(self) -> None:
        with self._cond:
            while not self._closed:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                self._deadline = None
                try:
                    self._conn.cancel()
                except psycopg2.Error:
                    pass


class Session:
    """A connection (as the restricted role) to one working database."""

    def __init__(self, dsn: str, *, statement_timeout_ms: int, row_cap: int, direct: bool = False) -> None:
        self.dsn = dsn
        self.direct = direct
        self._pending = ""
        self.statement_timeout_ms = statement_timeout_ms
        self.row_cap = row_cap
        self._cursor_seq = 0
        self._conn: psycopg2.extensions.connection | None = None
        self._watchdog: _Watchdog | None = None
        self._sequences: str | None = None
        self.connect()

    # -- connection ------------------------------------------------------------------------------------
    def connect(self) -> None:
        try:
            conn = psycopg2.connect(self.dsn, connect_timeout=10)
            conn.autocommit = True
            for caster in _SAFE_TYPES:
                psycopg2.extensions.register_type(caster, conn)
            with conn.cursor() as cur:
                cur.execute(SESSION_SETTINGS)
                cur.execute(
                    f"SET statement_timeout = {int(self.statement_timeout_ms)}; SET lock_timeout = '5s'"
                )
                cur.execute(
                    "SELECT coalesce(string_agg(format('setval(%L, %s, %s)', quote_ident(schemaname) || '.' || "
                    "quote_ident(sequencename), coalesce(last_value, start_value), CASE WHEN last_value IS NULL THEN 'false' ELSE 'true' END), ', '), '')"
                    " FROM pg_sequences WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
                )
                row = cur.fetchone()
                seqs = row[0] if row else ""
        except psycopg2.OperationalError as exc:
            raise ConnectionLost(f"cannot connect to the working database: {_first_line(exc)}") from exc
        self._conn = conn
        self._sequences = f"SELECT {seqs}" if seqs else None
        self._watchdog = _Watchdog(conn)

    def close(self) -> None:
        if self._watchdog:
            self._watchdog.close()
        if self._conn is not None and not self._conn.closed:
            self._conn.close()

    @property
    def conn(self) -> psycopg2.extensions.connection:
        if self._conn is None or self._conn.closed:
            self.connect()
        assert self._conn is not None
        return self._conn

    def _raw(self, sql: str, params: tuple[Any, ...] | None = None) -> list[tuple[Any, ...]] | None:
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchall() if cur.description is not None else None
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as exc:
            if self._conn is not None and self._conn.closed:
                raise ConnectionLost(f"the database connection was lost: {_first_line(exc)}") from exc
            raise

    # -- transactions ----------------------------------------------------------------------------------
    def begin(self, *, read_only: bool) -> None:
        """Start the case's transaction; BEGIN travels with the next statement (one round trip fewer).

        statement_timeout and lock_timeout are session settings: whatever a prediction does to them inside the
        case's transaction is undone by its rollback, and the watchdog stands behind them meanwhile."""
        mode = "ISOLATION LEVEL REPEATABLE READ READ ONLY" if read_only else "ISOLATION LEVEL READ COMMITTED"
        self._pending = f"BEGIN {mode}; "

    def _take_pending(self) -> str:
        pending, self._pending = self._pending, ""
        return pending

    def rollback(self) -> None:
        """End the case's transaction (restore_sequences undoes the one thing a rollback does not)."""
        self._pending = ""
        try:
            if self.conn.info.transaction_status != psycopg2.extensions.TRANSACTION_STATUS_IDLE:
                self._raw("ROLLBACK")
        except ConnectionLost:
            raise
        except psycopg2.Error:
            self.reset()

    def restore_sequences(self) -> None:
        if self._sequences:
            self._raw(self._take_pending() + self._sequences)

    def reset(self) -> None:
        """Throw the connection away (after a cancel or a broken protocol state) and open a new one."""
        self.close()
        self._conn = None
        self._pending = ""
        self.connect()

    def savepoint(self, name: str) -> None:
        self._raw(f"{self._take_pending()}SAVEPOINT {name}")

    def rollback_to(self, name: str) -> None:
        self._raw(f"ROLLBACK TO SAVEPOINT {name}")

    # -- statements ------------------------------------------------------------------------------------
    def _guarded(self, fn, *, untrusted: bool) -> Outcome:
        started = time.perf_counter()
        if untrusted and self._watchdog:
            self._watchdog.arm(self.statement_timeout_ms / 1000 + _WATCHDOG_GRACE_S)
        try:
            result = fn()
            return Outcome(result=result, duration_s=time.perf_counter() - started)
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as exc:
            if self._conn is not None and self._conn.closed:
                raise ConnectionLost(f"the database connection was lost: {_first_line(exc)}") from exc
            return self._error(exc, started)
        except psycopg2.Error as exc:
            return self._error(exc, started)
        finally:
            if untrusted and self._watchdog:
                self._watchdog.disarm()

    @staticmethod
    def _error(exc: psycopg2.Error, started: float) -> Outcome:
        message, error_class = _first_line(exc), classify_error(exc)
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
        return Outcome(error=message.removeprefix("ERROR:").strip(), error_class=error_class,
                       sqlstate=getattr(exc, "pgcode", None), duration_s=time.perf_counter() - started)  # fmt: skip

    def fetch(self, sql: str, *, untrusted: bool, savepoint: bool = False) -> Outcome:
        """Run one query through a cursor and fetch at most row_cap + 1 rows.

        Untrusted SQL is opened by `_sqlcanary.open_cursor` from a bound string: the server refuses anything
        but a single query. With `savepoint`, an error rolls back to a savepoint so the transaction stays usable."""
        self._cursor_seq += 1
        name = f"sqlcanary_c{self._cursor_seq}"
        own_tx = not self._pending and not self.in_transaction()
        prefix = ("BEGIN; " if own_tx else self._take_pending()) + (
            f"SAVEPOINT {name}_s; " if savepoint else ""
        )
        fetch = f"FETCH FORWARD {self.row_cap + 1} FROM {name}"

        def go() -> ResultSet:
            with self.conn.cursor() as cur:
                if untrusted:
                    cur.execute(f"{prefix}SELECT _sqlcanary.open_cursor(%s, %s); {fetch}", (name, sql))
                else:
                    cur.execute(f"{prefix}DECLARE {name} NO SCROLL CURSOR FOR {sql}\n; {fetch}")
                rows = cur.fetchall()
                description = cur.description or ()
                cols = tuple(d.name for d in description)
                oids = tuple(d.type_code for d in description)
            truncated = len(rows) > self.row_cap
            return ResultSet(columns=cols, type_oids=oids, rows=rows[: self.row_cap], truncated=truncated)

        out = self._guarded(go, untrusted=untrusted)
        if own_tx:
            self.rollback()
        elif not out.ok and savepoint and self.in_transaction():
            try:
                self._raw(f"ROLLBACK TO SAVEPOINT {name}_s")
            except psycopg2.Error:
                pass
        return out

    def execute(self, sql: str, *, untrusted: bool) -> Outcome:
        """Run SQL for its effect. Untrusted SQL runs through `_sqlcanary.exec` (it cannot end the transaction)
        unless the session is `direct` (a scratch database in autocommit, where nothing is worth protecting)."""
        prefix = self._take_pending()

        def go() -> None:
            with self.conn.cursor() as cur:
                if untrusted and not self.direct:
                    cur.execute(f"{prefix}SELECT _sqlcanary.exec(%s)", (sql,))
                else:
                    cur.execute(f"{prefix}{sql}")

        return self._guarded(go, untrusted=untrusted)

    def explain_cost(self, sql: str, *, untrusted: bool) -> tuple[float | None, str | None]:
        """Total cost of the plan (EXPLAIN without ANALYZE: nothing runs), or the error."""
        holder: list[Any] = []
        prefix = self._take_pending()

        def go() -> None:
            with self.conn.cursor() as cur:
                if untrusted:
                    cur.execute(f"{prefix}SELECT _sqlcanary.explain(%s)", (sql,))
                else:
                    cur.execute(f"{prefix}EXPLAIN (FORMAT JSON) {sql}")
                row = cur.fetchone()
                holder.append(row[0] if row else None)

        out = self._guarded(go, untrusted=untrusted)
        if not out.ok:
            return None, out.error
        plan = holder[0]
        plan = json.loads(plan) if isinstance(plan, str) else plan
        return float(plan[0]["Plan"]["Total Cost"]), None

    def in_transaction(self) -> bool:
        return self.conn.info.transaction_status in (
            psycopg2.extensions.TRANSACTION_STATUS_INTRANS,
            psycopg2.extensions.TRANSACTION_STATUS_INERROR,
        )

    def in_failed_transaction(self) -> bool:
        return self.conn.info.transaction_status == psycopg2.extensions.TRANSACTION_STATUS_INERROR

    def schema(self) -> dict[str, dict[str, str]]:
        rows = self._raw(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"
        )
        out: dict[str, dict[str, str]] = {}
        for table, column, dtype in rows or []:
            out.setdefault(table, {})[column] = dtype
        return out

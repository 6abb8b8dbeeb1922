"""One worker's connection to one working database, and the isolated primitives cases are executed with.

Every case runs inside a transaction that is rolled back; predictions run as the restricted role, under a
server-side statement_timeout, with a client-side watchdog that cancels a statement the server did not stop.
Every fetched result is bounded in rows (row_cap) and in bytes (byte_cap, counted by the server: db/guards.py).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import psycopg2
import psycopg2.extensions

from bot.base.results import ResultSet
from bot.db.guards import BYTE_CAP, BYTE_CAP_SQLSTATE, one_query
from bot.db.outcome import ConnectionLost, Outcome, byte_cap_reason, error_outcome, first_line
from bot.db.plans import PlanMemo, plan_estimate
from bot.db.scratch_exec import scratch_execute
from bot.db.watchdog import WATCHDOG_GRACE_S, Watchdog

__all__ = ["ConnectionLost", "Outcome", "SESSION_SETTINGS", "Session"]

SESSION_SETTINGS = (
    "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'; SET IntervalStyle = 'postgres'; "
    "SET extra_float_digits = 3; SET search_path = public, pg_temp; SET application_name = 'sqlcanary'; "
    "SET max_parallel_workers_per_gather = 0; SET jit = off"
)


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


class Session:
    """A connection (as the restricted role) to one working database."""

    def __init__(
        self,
        dsn: str,
        *,
        statement_timeout_ms: int,
        row_cap: int,
        direct: bool = False,
        byte_cap: int = BYTE_CAP,
        plans: PlanMemo | None = None,
    ) -> None:
        self.dsn = dsn
        self.plans = plans  # the run's memo of estimates on this database's template (bot/run/query_cost.py)
        self.byte_cap = byte_cap
        self.direct = direct
        self._pending = ""
        self.statement_timeout_ms = statement_timeout_ms
        self.row_cap = row_cap
        self._cursor_seq = 0
        self._conn: psycopg2.extensions.connection | None = None
        self._watchdog: Watchdog | None = None
        self._sequences: str | None = None
        self._reset = ""
        self.connect()

    # -- connection ------------------------------------------------------------------------------------
    def connect(self) -> None:
        try:
            conn = psycopg2.connect(self.dsn, connect_timeout=10)
            conn.autocommit = True
            for caster in _SAFE_TYPES:
                psycopg2.extensions.register_type(caster, conn)
            with conn.cursor() as cur:
                cur.execute(self.guard_settings())
                cur.execute(
                    "SELECT coalesce(string_agg(format('setval(%L, %s, %s)', quote_ident(schemaname) || '.' || "
                    "quote_ident(sequencename), coalesce(last_value, start_value), CASE WHEN last_value IS NULL THEN 'false' ELSE 'true' END), ', '), '')"
                    " FROM pg_sequences WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
                )
                row = cur.fetchone()
                seqs = row[0] if row else ""
        except psycopg2.OperationalError as exc:
            raise ConnectionLost(f"cannot connect to the working database: {first_line(exc)}") from exc
        self._conn = conn
        self._reset = f"RESET ALL; {self.guard_settings()}; "
        self._sequences = f"SELECT {seqs}" if seqs else None
        self._watchdog = Watchdog(conn)

    def guard_settings(self) -> str:
        """The session settings every statement runs under (also re-applied after a scratch statement)."""
        timeout = int(self.statement_timeout_ms)
        return f"{SESSION_SETTINGS}; SET statement_timeout = {timeout}; SET lock_timeout = '5s'"

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

    def raw(self, sql: str, params: tuple[Any, ...] | None = None) -> list[tuple[Any, ...]] | None:
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchall() if cur.description is not None else None
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as exc:
            if self._conn is not None and self._conn.closed:
                raise ConnectionLost(f"the database connection was lost: {first_line(exc)}") from exc
            raise

    # -- transactions ----------------------------------------------------------------------------------
    def begin(self, *, read_only: bool) -> None:
        """Start the case's transaction; BEGIN travels with the next statement (one round trip fewer).

        statement_timeout and lock_timeout are session settings: whatever a prediction does to them inside the
        case's transaction is undone by its rollback, and the watchdog stands behind them meanwhile."""
        mode = "ISOLATION LEVEL REPEATABLE READ READ ONLY" if read_only else "ISOLATION LEVEL READ COMMITTED"
        self._pending = f"BEGIN {mode}; "

    def fresh(self) -> None:
        """The next statement starts from the guard settings: whatever the SQL before it set in this transaction
        (a search_path, a time zone, any setting a prediction may change) is reset first, in the same round trip.
        Evaluators call it between the phases of a case (setup, gold, prediction, checks)."""
        if (self._pending or self.in_transaction()) and not self._pending.endswith(self._reset):
            self._pending += self._reset

    def take_pending(self) -> str:
        pending, self._pending = self._pending, ""
        return pending

    def rollback(self) -> None:
        """End the case's transaction (restore_sequences undoes the one thing a rollback does not)."""
        self._pending = ""
        try:
            if self.conn.info.transaction_status != psycopg2.extensions.TRANSACTION_STATUS_IDLE:
                self.raw("ROLLBACK")
        except ConnectionLost:
            raise
        except psycopg2.Error:
            self.reset()

    def restore_sequences(self) -> None:
        if self._sequences:
            self.raw(self.take_pending() + self._sequences)

    def reset(self) -> None:
        """Throw the connection away (after a cancel or a broken protocol state) and open a new one."""
        self.close()
        self._conn = None
        self._pending = ""
        self.connect()

    def savepoint(self, name: str) -> None:
        self.raw(f"{self.take_pending()}SAVEPOINT {name}")

    def rollback_to(self, name: str) -> None:
        self.raw(f"ROLLBACK TO SAVEPOINT {name}")

    # -- statements ------------------------------------------------------------------------------------
    def guarded(self, fn) -> Outcome:
        """`fn` under the watchdog; a database error becomes the Outcome's error."""
        started = time.perf_counter()
        if self._watchdog:
            self._watchdog.arm(self.statement_timeout_ms / 1000 + WATCHDOG_GRACE_S)
        try:
            result = fn()
            return Outcome(result=result, duration_s=time.perf_counter() - started)
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as exc:
            if self._conn is not None and self._conn.closed:
                raise ConnectionLost(f"the database connection was lost: {first_line(exc)}") from exc
            return error_outcome(exc, started)
        except psycopg2.Error as exc:
            return error_outcome(exc, started)
        finally:
            if self._watchdog:
                self._watchdog.disarm()

    def fetch(self, sql: str, *, savepoint: bool = False) -> Outcome:
        """Run one query through a cursor and fetch at most row_cap + 1 rows, and at most byte_cap bytes.

        The query is opened by `_sqlcanary.open_cursor` from a bound string (db/guards.py): the server counts
        the bytes of the rows it hands out and refuses the row that crosses byte_cap, so an oversized result
        never reaches this process. Untrusted SQL is first opened on its own: the server refuses anything but a
        single query. With `savepoint`, an error rolls back to a savepoint so the transaction stays usable."""
        self._cursor_seq += 1
        name = f"sqlcanary_c{self._cursor_seq}"
        own_tx = not self._pending and not self.in_transaction()
        if self.in_transaction():
            self.fresh()  # a query reads from the guard settings, whatever ran before it in the transaction
        prefix = ("BEGIN; " if own_tx else self.take_pending()) + (
            f"SAVEPOINT {name}_s; " if savepoint else ""
        )
        fetch = f"FETCH FORWARD {self.row_cap + 1} FROM {name}"
        args = (name, one_query(sql), self.byte_cap, True)

        def go() -> ResultSet:
            with self.conn.cursor() as cur:
                cur.execute(f"{prefix}SELECT _sqlcanary.open_cursor(%s, %s, %s, %s); {fetch}", args)
                rows = cur.fetchall()
                description = cur.description or ()
                cols = tuple(d.name for d in description)
                oids = tuple(d.type_code for d in description)
            truncated = len(rows) > self.row_cap
            return ResultSet(columns=cols, type_oids=oids, rows=rows[: self.row_cap], truncated=truncated)

        out = self.guarded(go)
        if out.sqlstate == BYTE_CAP_SQLSTATE:
            out = replace(out, error=byte_cap_reason(self.byte_cap), error_class="result_too_large")
        if own_tx:
            self.rollback()
        elif not out.ok and savepoint and self.in_transaction():
            try:
                self.raw(f"ROLLBACK TO SAVEPOINT {name}_s")
            except psycopg2.Error:
                pass
        return out

    def execute(self, sql: str) -> Outcome:
        """Run SQL for its effect. Untrusted SQL runs through `_sqlcanary.exec` (it cannot end the transaction);
        in a `direct` session (a scratch database in autocommit) through `_sqlcanary.exec_checked` (db/scratch.py)."""
        if self.direct:
            return scratch_execute(self, sql)
        prefix = self.take_pending()

        def go() -> None:
            with self.conn.cursor() as cur:
                cur.execute(f"{prefix}SELECT _sqlcanary.exec(%s)", (sql,))

        return self.guarded(go)

    def explain_cost(self, sql: str) -> tuple[float | None, str | None]:
        """Total cost of the plan (EXPLAIN without ANALYZE: nothing runs), or the error."""
        cost, _, error = self.explain_plan(sql)
        return cost, error

    def explain_plan(self, sql: str) -> tuple[float | None, float | None, str | None]:
        """The plan's total cost and the rows its relation scans read (db/plans.py; EXPLAIN without ANALYZE:
        nothing runs), or the error."""
        holder: list[Any] = []
        prefix = self.take_pending()

        def go() -> None:
            with self.conn.cursor() as cur:
                cur.execute(f"{prefix}SELECT _sqlcanary.explain(%s)", (sql,))
                row = cur.fetchone()
                holder.append(row[0] if row else None)

        out = self.guarded(go)
        if not out.ok:
            return None, None, out.error
        plan = holder[0]
        estimate = plan_estimate(json.loads(plan) if isinstance(plan, str) else plan)
        return estimate.cost, estimate.rows, None

    def in_transaction(self) -> bool:
        return self.conn.info.transaction_status in (
            psycopg2.extensions.TRANSACTION_STATUS_INTRANS,
            psycopg2.extensions.TRANSACTION_STATUS_INERROR,
        )

    def in_failed_transaction(self) -> bool:
        return self.conn.info.transaction_status == psycopg2.extensions.TRANSACTION_STATUS_INERROR

    def schema(self) -> dict[str, dict[str, str]]:
        rows = self.raw(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"
        )
        out: dict[str, dict[str, str]] = {}
        for table, column, dtype in rows or []:
            out.setdefault(table, {})[column] = dtype
        return out

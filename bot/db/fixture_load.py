"""Loading a fixture into a database being prepared as a template, as the restricted role.

A fixture comes from the suite, and a pull request may change it: it is untrusted SQL. It is therefore never run
by a superuser, nor by a client that runs meta-commands or programs (psql), nor by a process with an inherited
environment. The fixture's statements (bot.db.fixture_sql) go over one connection as `sqlcanary_runner`, the role
predictions run as, which has no superuser, CREATEROLE or CREATEDB attribute and no membership in
`pg_execute_server_program`, `pg_read_server_files` or `pg_write_server_files`: `COPY ... TO PROGRAM`,
`COPY ... FROM '/file'`, `pg_read_file` and `lo_import` are refused by the server. Each file is one transaction;
one that changes anything outside the loading database (the role itself, its settings or memberships, any other
database: what `ALTER ROLE CURRENT_USER SET ...` would do) is rolled back and refused. A fixture that would
hold the check forever (`SELECT pg_sleep(...)`, statement after statement) is stopped: each statement by the
load within a budget (LOAD_BUDGET_S): when it runs out, the statement running is cancelled (a fixture may `SET
statement_timeout = 0`, as pg_dump's do, but cannot stop a cancel) and the fixture is refused.
"""

from __future__ import annotations

import io
import threading
from contextlib import closing
from pathlib import Path

import psycopg2
import psycopg2.extensions

from bot.base.errors import CaseFileError, DatabaseError
from bot.base.fixture_files import FixtureFile
from bot.db.fixture_sql import Unit, split_fixture

# What the restricted role itself can change that would outlive the load (the same state the scratch guard
# watches, bot.db.guards): its own row, its settings, its memberships and grants, databases it would own.
_ROLE_STATE = """SELECT pg_catalog.md5(pg_catalog.concat_ws('|',
  (SELECT r::pg_catalog.text FROM pg_catalog.pg_roles r WHERE r.rolname = current_user),
  (SELECT pg_catalog.string_agg(s::pg_catalog.text, ',' ORDER BY s.setdatabase, s.setrole)
   FROM pg_catalog.pg_db_role_setting s
   WHERE s.setrole IN (0, (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user))),
  (SELECT pg_catalog.string_agg(m::pg_catalog.text, ',' ORDER BY m.oid) FROM pg_catalog.pg_auth_members m
   WHERE (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user) IN (m.roleid, m.member)),
  (SELECT pg_catalog.string_agg(d.datname, ',' ORDER BY d.oid) FROM pg_catalog.pg_database d
   WHERE d.datdba = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user))))"""
LOAD_BUDGET_S = 900.0  # a whole fixture's load; defog's largest loads in seconds
_OPTIONS = "-c client_min_messages=warning -c max_parallel_workers_per_gather=0"
_NOT_PRIVILEGED = (
    " (a fixture is loaded as the restricted role sqlcanary_runner, never as a superuser: it may create and "
    "fill its own tables, schemas, functions and trusted extensions, nothing else)"
)


def load_fixture(
    dsn: str, files: tuple[FixtureFile, ...], *, db_label: str, budget_s: float = LOAD_BUDGET_S
) -> None:
    """Run each fixture file, in order, in a transaction of its own, as the role of `dsn` (the restricted one),
    within `budget_s` seconds for all of them."""
    try:
        opened = psycopg2.connect(dsn, connect_timeout=10, options=_OPTIONS)
    except psycopg2.OperationalError as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise DatabaseError(f"cannot connect to load the fixture of database {db_label!r}: {first}") from None
    with closing(opened) as conn:
        expired = threading.Event()

        def stop() -> None:
            expired.set()
            conn.cancel()

        timer = threading.Timer(budget_s, stop)
        timer.daemon = True
        timer.start()
        try:
            for fixture in files:
                units = split_fixture(fixture.text(), fixture.path)
                _load_file(conn, units, fixture.path, db_label, over=_Budget(expired, budget_s))
        finally:
            timer.cancel()


class _Budget:
    """Whether the load's time has run out, and the error that says so."""

    def __init__(self, expired: threading.Event, budget_s: float) -> None:
        self.expired = expired
        self.budget_s = budget_s

    def error(self, db_label: str, path: Path, line: int | None) -> CaseFileError:
        return CaseFileError(
            f"fixture of database {db_label!r} did not load within {self.budget_s:g} s: refused, nothing of this "
            "file was kept",
            path=str(path),
            line=line,
        )


def _state(cur: psycopg2.extensions.cursor) -> str:
    cur.execute(
        "SET LOCAL search_path = pg_catalog, pg_temp"
    )  # whatever the fixture set, the check reads the catalog
    cur.execute(_ROLE_STATE)
    row = cur.fetchone()
    return str(row[0]) if row else ""


def _load_file(
    conn: psycopg2.extensions.connection,
    units: list[Unit],
    path: Path,
    db_label: str,
    *,
    over: _Budget,
) -> None:
    line = 0
    try:
        with conn.cursor() as cur:
            before = _state(cur)
            cur.execute("RESET search_path")
            for unit in units:
                line = unit.line
                if over.expired.is_set():
                    raise over.error(db_label, path, line)
                if unit.copy_data is None:
                    cur.execute(unit.sql)
                else:
                    cur.copy_expert(unit.sql, io.StringIO(unit.copy_data))
            line = 0
            if _state(cur) != before:
                raise CaseFileError(
                    f"fixture of database {db_label!r} changes the restricted role it is loaded as (its "
                    "attributes, settings or memberships) or a database outside its own: refused, nothing of it "
                    "was kept",
                    path=str(path),
                )
        conn.commit()
    except psycopg2.Error as exc:
        conn.rollback()
        if over.expired.is_set():
            raise over.error(db_label, path, line or None) from None
        message = exc.diag.message_primary or (str(exc).strip().splitlines() or [repr(exc)])[0]
        hint = _NOT_PRIVILEGED if getattr(exc, "pgcode", None) == "42501" else ""
        raise CaseFileError(
            f"fixture of database {db_label!r} failed to load: {message}{hint}",
            path=str(path),
            line=line or None,
        ) from None
    except BaseException:
        conn.rollback()
        raise

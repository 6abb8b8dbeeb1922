"""An admin role that is not a superuser (RDS, Cloud SQL, Azure, Supabase): what sqlcanary does instead, and
what it cannot do there.

Such a role needs CREATEDB (template, working and scratch databases, and the `sqlcanary_state` database) and
CREATEROLE (the restricted role `sqlcanary_runner`). What a superuser does that it cannot, and the equivalent:

- It cannot read `pg_authid`: the role's state is read from `pg_roles` (all but the password verifier), and the
  password is set again at the start of every run (the same password: open sessions and concurrent runs are
  unaffected) instead of being checked.
- It cannot create a schema in the `postgres` database: the runner's password is kept in
  `_sqlcanary_admin.runner_secret` in a database of its own, `sqlcanary_state`, which only the admin may connect to.
- It may hand objects to the runner role only as a member of it (PostgreSQL 16: CREATEROLE makes the creator an
  ADMIN member, without INHERIT or SET): sqlcanary grants itself INHERIT and SET on the runner role. That gives the
  admin the runner's privileges, never the reverse.

What cannot be installed (said once per process, as a warning, by `limitations`):

- `temp_file_limit` on the runner role is superuser-only: a prediction's temporary files are bounded by the
  server's own `temp_file_limit` and by `statement_timeout` alone.
- `REVOKE EXECUTE ON pg_terminate_backend / pg_cancel_backend FROM PUBLIC` is the bootstrap superuser's: a
  prediction can end another concurrent run's prediction session on the same server (that run's case errors as
  "connection lost"; verdicts are never silently changed).
- A change of the runner's own password made by a prediction in a scratch database (`ALTER ROLE CURRENT_USER
  PASSWORD`, the one attribute a role may change on itself) is not seen by the scratch guard (`pg_roles` hides
  it); the run sets the password back right after the scratch database, and a concurrent run that connects in
  between fails to connect.
"""

from __future__ import annotations

import logging

import psycopg2
from psycopg2 import errors, sql
from psycopg2.extensions import cursor as Cursor
from psycopg2.extensions import make_dsn

from bot.base.errors import DatabaseError
from bot.db.provision import Server

log = logging.getLogger("sqlcanary.db")

STATE_DB = "sqlcanary_state"
_SAID: set[str] = set()

LIMITATIONS = (
    "temp_file_limit is not set on the runner role (superuser-only): a prediction's temporary files are bounded "
    "only by the server's temp_file_limit ({temp_file_limit}) and statement_timeout",
    "pg_terminate_backend and pg_cancel_backend stay open to PUBLIC (only the bootstrap superuser may revoke "
    "them): a prediction can end a concurrent run's session on this server, whose case then errors",
    "a prediction in a scratch database that changes the runner role's own password is not caught by the scratch "
    "guard; the password is set back right after that case",
)


def limitations(server: Server, cur: Cursor) -> list[str]:
    """What isolation an admin that is not a superuser cannot install (empty for a superuser)."""
    if server.superuser:
        return []
    cur.execute("SELECT current_setting('temp_file_limit')")
    row = cur.fetchone()
    limit = str(row[0]) if row else "?"
    shown = "unlimited" if limit == "-1" else limit
    return [text.replace("{temp_file_limit}", shown) for text in LIMITATIONS]


def say_limitations(server: Server, cur: Cursor) -> None:
    """Warn once per process and server what cannot be installed (see the module)."""
    if server.superuser or server.admin_dsn in _SAID:
        return
    _SAID.add(server.admin_dsn)
    for line in limitations(server, cur):
        log.warning("sqlcanary: the admin role is not a superuser: %s", line)


def state_database(server: Server) -> str:
    """The database that keeps the runner's password for an admin that cannot create a schema in `postgres`:
    made the first time, owned by the admin, closed to everyone else."""
    conn = psycopg2.connect(server.admin_dsn, connect_timeout=10)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (STATE_DB,))
            if cur.fetchone() is None:
                try:
                    cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(STATE_DB)))
                except errors.DuplicateDatabase:
                    pass  # a concurrent run made it
                except errors.UniqueViolation:
                    pass
                cur.execute(
                    sql.SQL("REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC").format(
                        sql.Identifier(STATE_DB)
                    )
                )
    finally:
        conn.close()
    return STATE_DB


def state_dsn(server: Server) -> str:
    return make_dsn(server.admin_dsn, dbname=state_database(server))


def adopt_runner(cur: Cursor, role: str) -> None:
    """Let the admin hand objects to `role` and end its sessions (ALTER ... OWNER TO, DROP DATABASE ... WITH
    (FORCE), DROP OWNED): INHERIT and SET on it. PostgreSQL 15 and older need only the membership."""
    cur.execute("SELECT current_setting('server_version_num')::int")
    row = cur.fetchone()
    options = sql.SQL(" WITH INHERIT TRUE, SET TRUE") if row and int(row[0]) >= 160000 else sql.SQL("")
    try:
        cur.execute(
            sql.SQL("GRANT {} TO CURRENT_USER").format(sql.Identifier(role)) + options  # type: ignore[operator]
        )
    except errors.InsufficientPrivilege as exc:
        raise DatabaseError(
            f"the role {role} exists but the admin role may not administer it (another role created it): drop it "
            f"as that role (`sqlcanary db clean` with its DSN) or grant it to this one WITH ADMIN OPTION "
            f"({str(exc).strip().splitlines()[0]})"
        ) from None

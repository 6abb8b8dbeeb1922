"""The restricted role predictions run as, and its one password, which every run on a server shares.

Runs used to give the role a fresh password each, so a run that opened a connection after another run had
started (a reconnect after a lost connection, a scratch clone) was locked out. Now the password is made once,
under an advisory lock, and kept in a table only superusers can read (`_sqlcanary_admin.runner_secret`, in the
`postgres` maintenance database when there is one; an admin that is not a superuser keeps it in `sqlcanary_state`,
bot/db/managed.py); every later run reads it and never rotates it.

The password never appears in a statement: the server generates it, and the role gets a SCRAM verifier
computed here, so statement logs and pg_stat_statements cannot show it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from contextlib import ExitStack, closing

import psycopg2
from psycopg2 import sql
from psycopg2.extensions import make_dsn, parse_dsn

from bot.base.errors import DatabaseError
from bot.db import managed
from bot.db.provision import Server, redact
from bot.db.rolestate import create_role, limits_for, log, read_state, reset

RUNNER_ROLE = "sqlcanary_runner"
ADMIN_SCHEMA = "_sqlcanary_admin"
MAINTENANCE_DB = "postgres"
_LOCK_KEY = "sqlcanary_runner_role"
_SCRAM_ITERATIONS = 4096


def ensure_runner_role(server: Server) -> str:
    """Create the role or put back whatever is off in it (db/rolestate.py); returns its password (stable across
    runs: TCP servers may require one, and concurrent runs must all keep connecting with it).

    Everything happens in one transaction under a transaction-level advisory lock taken in the database that
    holds the secret, so concurrent runs serialise here and all read the same committed password. When nothing
    is off, the check is one query after the lock."""
    # `with conn` is one transaction: committed (and the lock released) on exit, rolled back on an error.
    with closing(_secret_store(server)) as conn, conn, conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s)), current_database()", (_LOCK_KEY,))
        row = cur.fetchone()
        store_db = str(row[1]) if row else MAINTENANCE_DB
        password = _stored_password(cur)
        admin_db = parse_dsn(server.admin_dsn).get("dbname") or store_db
        managed.say_limitations(server, cur)
        state = read_state(cur, RUNNER_ROLE, sorted({store_db, admin_db}), superuser=server.superuser)
        if state is None:
            create_role(cur, RUNNER_ROLE, scram_verifier(password), limits=limits_for(server.superuser))
            if not server.superuser:
                managed.adopt_runner(cur, RUNNER_ROLE)
            return password
        if not server.superuser:
            _managed_upkeep(cur, password)
        # A superuser checks the verifier; any other admin cannot read it and has just set it again.
        password_ok = verifier_matches(state.verifier, password) if server.superuser else True
        found = state.off(password_ok)
        if not found:
            return password
        others = [admin_db] if admin_db != store_db and state.holdings else []
        with ExitStack() as stack:
            cursors = [stack.enter_context(closing(_connect(server, db))).cursor() for db in others]
            verifier = None if password_ok else scram_verifier(password)
            reset(cur, RUNNER_ROLE, state, verifier=verifier, other_db_cursors=cursors)
        log.warning(
            "sqlcanary: the restricted role %s had been changed outside sqlcanary; reset %s",
            RUNNER_ROLE,
            "; ".join(found),
        )
    return password


def _managed_upkeep(cur: psycopg2.extensions.cursor, password: str) -> None:
    """For an admin that is not a superuser (bot/db/managed.py): its INHERIT and SET membership in the runner
    role, and the password, which it cannot read back to check, set again (the same one)."""
    cur.execute("SELECT pg_has_role(current_user, %s, 'USAGE')", (RUNNER_ROLE,))
    row = cur.fetchone()
    if not (row and row[0]):
        managed.adopt_runner(cur, RUNNER_ROLE)
    cur.execute(
        sql.SQL("ALTER ROLE {} PASSWORD %s").format(sql.Identifier(RUNNER_ROLE)), (scram_verifier(password),)
    )


def _connect(server: Server, dbname: str) -> psycopg2.extensions.connection:
    conn = psycopg2.connect(make_dsn(server.admin_dsn, dbname=dbname), connect_timeout=10)
    conn.autocommit = True
    return conn


def _secret_store(server: Server) -> psycopg2.extensions.connection:
    """A connection to the database that keeps the secret: `postgres` when it exists (one place per server,
    whatever database each run's DSN names), else the admin DSN's own database."""
    if not server.superuser:  # it cannot create a schema in `postgres` (bot/db/managed.py)
        return psycopg2.connect(managed.state_dsn(server), connect_timeout=10)
    conn = psycopg2.connect(server.admin_dsn, connect_timeout=10)
    with conn.cursor() as cur:
        cur.execute(
            "SELECT current_database(), EXISTS (SELECT 1 FROM pg_database WHERE datname = %s AND datallowconn)",
            (MAINTENANCE_DB,),
        )
        row = cur.fetchone()
    conn.rollback()
    if row is None or row[0] == MAINTENANCE_DB or not row[1]:
        return conn
    conn.close()
    dsn = make_dsn(server.admin_dsn, dbname=MAINTENANCE_DB)
    try:
        return psycopg2.connect(dsn, connect_timeout=10)
    except psycopg2.OperationalError as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise DatabaseError(
            f"cannot connect to the {MAINTENANCE_DB!r} database at {redact(dsn)}, where sqlcanary keeps the "
            f"restricted role's password: {first}"
        ) from None


def _stored_password(cur: psycopg2.extensions.cursor) -> str:
    """The role's password from the store, generated server-side the first time (also on a server where an
    older sqlcanary made the role but kept no secret)."""
    cur.execute("SELECT to_regclass(%s)", (f"{ADMIN_SCHEMA}.runner_secret",))
    row = cur.fetchone()
    if row is None or row[0] is None:
        schema = sql.Identifier(ADMIN_SCHEMA)
        cur.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
        cur.execute(sql.SQL("REVOKE ALL ON SCHEMA {} FROM PUBLIC").format(schema))
        cur.execute(
            sql.SQL(
                "CREATE TABLE {}.runner_secret (role name PRIMARY KEY, password text NOT NULL, "
                "created_at timestamptz NOT NULL DEFAULT now())"
            ).format(schema)
        )
        cur.execute(sql.SQL("REVOKE ALL ON {}.runner_secret FROM PUBLIC").format(schema))
    table = sql.SQL("{}.runner_secret").format(sql.Identifier(ADMIN_SCHEMA))
    cur.execute(sql.SQL("SELECT password FROM {} WHERE role = %s").format(table), (RUNNER_ROLE,))
    row = cur.fetchone()
    if row is not None:
        return str(row[0])
    cur.execute(
        sql.SQL(
            "INSERT INTO {} (role, password) VALUES "
            "(%s, replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')) RETURNING password"
        ).format(table),
        (RUNNER_ROLE,),
    )
    row = cur.fetchone()
    assert row is not None
    return str(row[0])


def _scram_keys(password: str, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    return hashlib.sha256(client_key).digest(), server_key


def scram_verifier(password: str, *, salt: bytes | None = None) -> str:
    """What PostgreSQL stores for a SCRAM-SHA-256 password (RFC 5802/7677); given to ALTER ROLE ... PASSWORD
    in place of the password itself, as psql's \\password does."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    stored, server = _scram_keys(password, salt, _SCRAM_ITERATIONS)
    b64 = base64.b64encode
    return f"SCRAM-SHA-256${_SCRAM_ITERATIONS}:{b64(salt).decode()}${b64(stored).decode()}:{b64(server).decode()}"


def verifier_matches(verifier: str | None, password: str) -> bool:
    """Whether a pg_authid.rolpassword value is a SCRAM verifier of this password."""
    try:
        head, keys = (verifier or "").removeprefix("SCRAM-SHA-256$").split("$")
        iterations, salt = head.split(":")
        stored, server = keys.split(":")
        want = _scram_keys(password, base64.b64decode(salt), int(iterations))
        got = (base64.b64decode(stored), base64.b64decode(server))
    except ValueError:  # NULL, md5, or anything else: not ours
        return False
    ours = bool(verifier and verifier.startswith("SCRAM-SHA-256$"))
    return ours and hmac.compare_digest(want[0] + want[1], got[0] + got[1])

"""What sqlcanary keeps on a server (templates, working and scratch clones, its state database, its role), when
each template was last used, pruning past an age or a total size, and `sqlcanary db clean`.

A template's last use is its database comment (`COMMENT ON DATABASE`, shown by psql's `\\l+`), set by every run
that uses it; a template without one (made before this was recorded) is stamped when a prune first sees it.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

import psycopg2
from psycopg2 import sql
from psycopg2.extensions import cursor as Cursor
from psycopg2.extensions import make_dsn

from bot.base.errors import DatabaseError
from bot.db.managed import STATE_DB
from bot.db.provision import Server
from bot.db.role import ADMIN_SCHEMA, RUNNER_ROLE

log = logging.getLogger("sqlcanary.db")

TEMPLATE_PREFIX = "sqlcanary_t_"
WORK_PREFIX = "sqlcanary_w_"
RUNNER = RUNNER_ROLE
_STAMP = "sqlcanary template; last used "
# Sizes of the templates only (what the prune policy budgets): sizing a database stats every file in it, and the
# kept working copies (bot.db.copies) would double the work at the end of every run.
_OURS = (
    "SELECT datname, CASE WHEN left(datname, 12) = %s THEN pg_database_size(oid) ELSE 0 END, "
    "shobj_description(oid, 'pg_database') FROM pg_database "
    "WHERE left(datname, 12) IN (%s, %s) OR datname = %s ORDER BY datname"
)


@dataclass(frozen=True)
class PrunePolicy:
    """Templates not used for `max_age_days`, then the least recently used while all of them together exceed
    `max_total_bytes`, are dropped at the end of a run (never one the run used)."""

    max_age_days: float = 30.0
    max_total_bytes: int = 5 * 1024**3


@dataclass(frozen=True)
class TemplateInfo:
    name: str
    size: int
    last_used: dt.datetime | None


@dataclass(frozen=True)
class Inventory:
    templates: tuple[TemplateInfo, ...]
    working: tuple[str, ...]  # run clones and scratch databases
    state_db: bool
    roles: tuple[str, ...]
    runner_sessions: int


@dataclass
class Cleaned:
    dropped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # "name: why"


def _connect(server: Server, dbname: str | None = None) -> Any:
    dsn = server.admin_dsn if dbname is None else make_dsn(server.admin_dsn, dbname=dbname)
    conn = psycopg2.connect(dsn, connect_timeout=10)
    conn.autocommit = True
    return conn


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def touch_template(cur: Cursor, name: str) -> None:
    """Record that a run uses template `name` now (only its owner may: others leave it as it is)."""
    try:
        cur.execute(
            sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                sql.Identifier(name), sql.Literal(_STAMP + _now().isoformat())
            )
        )
    except psycopg2.Error as exc:
        log.debug("cannot record the use of %s: %s", name, exc)


def _last_used(comment: str | None) -> dt.datetime | None:
    if not comment or not comment.startswith(_STAMP):
        return None
    try:
        return dt.datetime.fromisoformat(comment.removeprefix(_STAMP))
    except ValueError:
        return None


def inventory(server: Server) -> Inventory:
    with closing(_connect(server)) as conn, conn.cursor() as cur:
        cur.execute(_OURS, (TEMPLATE_PREFIX, TEMPLATE_PREFIX, WORK_PREFIX, STATE_DB))
        rows = cur.fetchall()
        cur.execute("SELECT rolname FROM pg_roles WHERE rolname = %s ORDER BY 1", (RUNNER,))
        roles = tuple(r[0] for r in cur.fetchall())
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (RUNNER,))
        row = cur.fetchone()
    templates = tuple(
        TemplateInfo(name, int(size), _last_used(comment))
        for name, size, comment in rows
        if name.startswith(TEMPLATE_PREFIX)
    )
    working = tuple(name for name, _, _ in rows if name.startswith(WORK_PREFIX))
    state = any(name == STATE_DB for name, _, _ in rows)
    return Inventory(templates, working, state, roles, int(row[0]) if row else 0)


def to_prune(
    templates: Iterable[TemplateInfo], policy: PrunePolicy, *, keep: set[str], now: dt.datetime
) -> list[str]:
    """The templates `policy` drops: too old, then least recently used first while the total is too large."""
    items = sorted(templates, key=lambda t: (t.last_used or now, t.name))
    limit = now - dt.timedelta(days=policy.max_age_days)
    drop = [t.name for t in items if t.name not in keep and t.last_used is not None and t.last_used < limit]
    total = sum(t.size for t in items if t.name not in drop)
    for t in items:
        if total <= policy.max_total_bytes:
            break
        if t.name not in keep and t.name not in drop:
            drop.append(t.name)
            total -= t.size
    return drop


def prune_templates(server: Server, policy: PrunePolicy, *, keep: set[str]) -> list[str]:
    """Drop the templates `policy` says; a failure is logged, never raised (a run's result does not depend on it)."""
    try:
        found = inventory(server).templates
        with closing(_connect(server)) as conn, conn.cursor() as cur:
            for t in found:
                if t.last_used is None:
                    touch_template(cur, t.name)
            names = to_prune(found, policy, keep=keep, now=_now())
            for name in names:
                _drop_template(cur, name)
        return names
    except psycopg2.Error as exc:
        log.warning("sqlcanary: could not prune old templates: %s", str(exc).strip().splitlines()[0])
        return []


def _drop_template(cur: Cursor, name: str) -> None:
    """Under the lock that loading it takes (bot/db/templates.py), so no run loads it meanwhile."""
    ident = sql.Identifier(name)
    cur.execute("SELECT pg_advisory_lock(hashtext(%s))", (name,))
    try:
        cur.execute(sql.SQL("ALTER DATABASE {} WITH IS_TEMPLATE false").format(ident))
        cur.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))
    finally:
        cur.execute("SELECT pg_advisory_unlock(hashtext(%s))", (name,))


def clean(server: Server, *, force: bool = False) -> Cleaned:
    """Drop every database and role sqlcanary made on this server. Refused while the runner role has sessions
    (a run in progress) unless `force`."""
    found = inventory(server)
    if found.runner_sessions and not force:
        raise DatabaseError(
            f"{found.runner_sessions} session(s) of {RUNNER} are open on this server: a run is in progress. "
            "Wait for it, or pass --force to end them"
        )
    done = Cleaned()
    with closing(_connect(server)) as conn, conn.cursor() as cur:
        names = [t.name for t in found.templates] + list(found.working)
        names += [STATE_DB] if found.state_db else []
        for name in names:
            try:
                if name.startswith(TEMPLATE_PREFIX):
                    _drop_template(cur, name)
                else:
                    cur.execute(
                        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                    )
                done.dropped.append(name)
            except psycopg2.Error as exc:
                done.failed.append(f"{name}: {str(exc).strip().splitlines()[0]}")
    if server.superuser:
        _drop_admin_schema(server, done)
    if found.roles:
        _drop_runner(server, done)
    return done


def _drop_admin_schema(server: Server, done: Cleaned) -> None:
    try:
        with closing(_connect(server, "postgres")) as conn, conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (ADMIN_SCHEMA,))
            if cur.fetchone():
                cur.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(ADMIN_SCHEMA)))
                done.dropped.append(f"postgres.{ADMIN_SCHEMA}")
    except psycopg2.Error as exc:
        done.failed.append(f"postgres.{ADMIN_SCHEMA}: {str(exc).strip().splitlines()[0]}")


def _drop_runner(server: Server, done: Cleaned) -> None:
    """DROP OWNED in the databases the admin reaches (its own and `postgres`), then the role."""
    ident = sql.Identifier(RUNNER)
    try:
        with closing(_connect(server)) as conn, conn.cursor() as cur:
            cur.execute("SELECT current_database()")
            row = cur.fetchone()
            own = str(row[0]) if row else "postgres"
            for db in sorted({own, "postgres"}):
                try:
                    with closing(_connect(server, db)) as other, other.cursor() as ocur:
                        ocur.execute(sql.SQL("DROP OWNED BY {}").format(ident))
                except psycopg2.Error:
                    pass  # not reachable or nothing owned: DROP ROLE says what is left
            cur.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(ident))
            done.dropped.append(f"role {RUNNER}")
    except psycopg2.Error as exc:
        done.failed.append(f"role {RUNNER}: {str(exc).strip().splitlines()[0]}")

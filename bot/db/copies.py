"""Working copies that outlive a run: one per (template, slot), leased by a run for as long as it lasts.

Creating and dropping a run's clones was 41% of a warm run (a DROP DATABASE forces a checkpoint). A copy is
now kept: a run leases slot 0, 1, ... of its template (a session-level advisory lock, held by one admin
connection for the run and released when it closes, however the run ends), and uses the copy as it is.

A copy can be reused because nothing a case does outlives it: every case runs in a transaction that is rolled
back, untrusted SQL cannot end it (bot.db.statements, bot.db.guards), and what a rollback does not undo, a
sequence's position, is restored after each write case (bot.db.session). What a run could still leave (a
sequence moved by a run that died between a write and its restore, a schema changed by a bug of ours) is caught
when the copy is leased: the copy's state (its schema as names resolve it, and every sequence's position) is
compared with the state it had when it was cloned, kept in the database's comment, which only its owner, the
admin, can set. A copy that differs, or has no comment, is cloned again from its template.

A copy is dropped with its template (bot.db.inventory prunes both) or when its template is gone (a stale copy),
never while a run holds its lease."""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import closing

import psycopg2
from psycopg2 import sql

from bot.db.inventory import TEMPLATE_PREFIX, WORK_PREFIX
from bot.db.provision import Server, admin_connect
from bot.db.schema_state import STATE_PARTS

Clone = Callable[[Server, str, str], None]  # (server, template, name): bot.db.templates.clone_database

SLOTS = 16  # concurrent runs of one template on one server; past it, a run clones a copy of its own
_STATE = (
    "SELECT pg_catalog.md5(pg_catalog.concat_ws('|', "
    + ", ".join(f"({part})" for part in STATE_PARTS)
    + ", (SELECT pg_catalog.string_agg(pg_catalog.concat_ws(':', schemaname, sequencename, last_value), ',' "
    "ORDER BY schemaname, sequencename) FROM pg_catalog.pg_sequences)))"
)
_MARK = "sqlcanary copy state "
_COPY = re.compile(re.escape(WORK_PREFIX) + r"(.+_[0-9a-f]{16})_s[0-9]+")  # copy_name's


def copy_name(template: str, slot: int) -> str:
    """`sqlcanary_w_<label>_<fingerprint>_s<slot>`: the copies of a template are found by its name."""
    return f"{WORK_PREFIX}{template.removeprefix(TEMPLATE_PREFIX)}_s{slot}"


def copies_of(template: str) -> str:
    """A LIKE pattern for every copy of `template`."""
    return copy_name(template, 0)[:-1].replace("_", r"\_") + "%"


def try_lease(cur, name: str) -> bool:
    """Hold the lease of copy `name` on `cur`'s connection (until it is released or the connection closes)."""
    cur.execute("SELECT pg_catalog.pg_try_advisory_lock(pg_catalog.hashtext(%s))", (name,))
    return bool(cur.fetchone()[0])


def release(cur, name: str) -> None:
    cur.execute("SELECT pg_catalog.pg_advisory_unlock(pg_catalog.hashtext(%s))", (name,))


def _state(server: Server, name: str) -> str:
    with closing(admin_connect(server, name)) as conn, conn.cursor() as cur:
        cur.execute(_STATE)
        return str(cur.fetchone()[0])


def _state_or_none(server: Server, name: str) -> str | None:
    """The copy's state, None when it cannot be read (it refuses connections, say): then it is cloned again."""
    try:
        return _state(server, name)
    except psycopg2.Error:
        return None


def _recorded(cur, name: str) -> str | None:
    cur.execute(
        "SELECT pg_catalog.shobj_description(oid, 'pg_database') FROM pg_catalog.pg_database WHERE datname = %s",
        (name,),
    )
    row = cur.fetchone()
    if row is None or not row[0] or not str(row[0]).startswith(_MARK):
        return None
    return str(row[0]).removeprefix(_MARK)


def _clone(server: Server, cur, template: str, name: str, clone: Clone) -> None:
    clone(server, template, name)
    state = _state(server, name)
    cur.execute(sql.SQL("COMMENT ON DATABASE {} IS %s").format(sql.Identifier(name)), (_MARK + state,))


def lease_copy(server: Server, cur, template: str, *, clone: Clone) -> tuple[str, bool] | None:
    """A copy of `template` leased on `cur`'s connection: (its name, whether it was cloned now); None when every
    slot is leased. A copy whose state is not the one it was cloned with is cloned again."""
    for slot in range(SLOTS):
        name = copy_name(template, slot)
        if not try_lease(cur, name):
            continue
        recorded = _recorded(cur, name)
        if recorded is not None and _state_or_none(server, name) == recorded:
            return name, False
        _clone(server, cur, template, name, clone)
        return name, True
    return None


def _drop_if_free(cur, name: str) -> None:
    """Drop copy `name` unless a run holds its lease (taken and released here)."""
    if not try_lease(cur, name):
        return
    try:
        cur.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    finally:
        release(cur, name)


def drop_copies(cur, template: str) -> None:
    """Drop every copy of `template` no run holds."""
    cur.execute(
        "SELECT datname FROM pg_catalog.pg_database WHERE datname LIKE %s ORDER BY 1", (copies_of(template),)
    )
    for (name,) in cur.fetchall():
        _drop_if_free(cur, name)


def stale_copies(cur, names: list[str]) -> None:
    """Drop the copies among `names` (databases of this server) whose template is gone and no run holds; the
    other names (a run's own clones, bot.db.templates.drop_stale_work_databases) are left."""
    cur.execute("SELECT datname FROM pg_catalog.pg_database WHERE datname LIKE %s", (TEMPLATE_PREFIX + "%",))
    templates = {r[0] for r in cur.fetchall()}
    for name in names:
        copy = _COPY.fullmatch(name)
        if copy is not None and TEMPLATE_PREFIX + copy.group(1) not in templates:
            _drop_if_free(cur, name)

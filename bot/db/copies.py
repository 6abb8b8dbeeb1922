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

The comment also names the template: a copy is found by it, whatever its name (a name too long for PostgreSQL's
63 bytes, as a perturbed copy's template makes it, is a digest of the template's). A copy is dropped with its
template (bot.db.inventory prunes both) or when its template is gone (a stale copy), never while a run holds its
lease."""

from __future__ import annotations

import hashlib
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
_MARK = "sqlcanary copy of "  # the comment: `sqlcanary copy of <template> state <md5>`
_STATE_MARK = " state "
NAME_BYTES = 63  # PostgreSQL's identifier limit: a longer name is cut, and two copies could share it
_COPY = re.compile(re.escape(WORK_PREFIX) + r"(.+_[0-9a-f]{16}|h[0-9a-f]{20})_s[0-9]+")  # copy_name's


def is_copy(name: str) -> bool:
    """Whether `name` is a kept copy's name (not a run's own clone)."""
    return _COPY.fullmatch(name) is not None


def copy_name(template: str, slot: int) -> str:
    """`sqlcanary_w_<label>_<fingerprint>_s<slot>`, or `sqlcanary_w_h<digest of the template>_s<slot>` when
    that is longer than PostgreSQL keeps."""
    name = f"{WORK_PREFIX}{template.removeprefix(TEMPLATE_PREFIX)}_s{slot}"
    if len(name.encode()) <= NAME_BYTES:
        return name
    return f"{WORK_PREFIX}h{hashlib.sha256(template.encode()).hexdigest()[:20]}_s{slot}"


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


def _record(comment: object) -> tuple[str, str] | None:
    """(template, state) of a copy's comment; None for another comment or none."""
    text = str(comment or "")
    if not text.startswith(_MARK) or _STATE_MARK not in text:
        return None
    template, _, state = text.removeprefix(_MARK).rpartition(_STATE_MARK)
    return template, state


def _recorded(cur, name: str, template: str) -> str | None:
    """The state copy `name` was cloned with, when it is a copy of `template`."""
    cur.execute(
        "SELECT pg_catalog.shobj_description(oid, 'pg_database') FROM pg_catalog.pg_database WHERE datname = %s",
        (name,),
    )
    row = cur.fetchone()
    record = _record(row[0]) if row else None
    return record[1] if record is not None and record[0] == template else None


def _clone(server: Server, cur, template: str, name: str, clone: Clone) -> None:
    clone(server, template, name)
    state = _state(server, name)
    comment = f"{_MARK}{template}{_STATE_MARK}{state}"
    cur.execute(sql.SQL("COMMENT ON DATABASE {} IS %s").format(sql.Identifier(name)), (comment,))


def lease_copy(server: Server, cur, template: str, *, clone: Clone) -> tuple[str, bool] | None:
    """A copy of `template` leased on `cur`'s connection: (its name, whether it was cloned now); None when every
    slot is leased. A copy whose state is not the one it was cloned with is cloned again."""
    for slot in range(SLOTS):
        name = copy_name(template, slot)
        if not try_lease(cur, name):
            continue
        recorded = _recorded(cur, name, template)
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


def _copies(cur) -> dict[str, str | None]:
    """{copy: the template its comment names, or None (a clone that died before its comment)}."""
    cur.execute(
        "SELECT datname, pg_catalog.shobj_description(oid, 'pg_database') FROM pg_catalog.pg_database "
        "WHERE datname LIKE %s ORDER BY 1",
        (WORK_PREFIX.replace("_", r"\_") + "%",),
    )
    found: dict[str, str | None] = {}
    for name, comment in cur.fetchall():
        record = _record(comment)
        if record is not None or is_copy(name):
            found[name] = record[0] if record else None
    return found


def drop_copies(cur, template: str) -> None:
    """Drop every copy of `template` no run holds."""
    slots = {copy_name(template, slot) for slot in range(SLOTS)}
    for name, of in _copies(cur).items():
        if of == template or (of is None and name in slots):
            _drop_if_free(cur, name)


def stale_copies(cur) -> None:
    """Drop the copies of this server whose template is gone, or that died before they were recorded, unless
    a run holds them; a run's own clones (bot.db.templates.drop_stale_work_databases) are left."""
    cur.execute("SELECT datname FROM pg_catalog.pg_database WHERE datname LIKE %s", (TEMPLATE_PREFIX + "%",))
    templates = {r[0] for r in cur.fetchall()}
    for name, of in _copies(cur).items():
        if of is None or of not in templates:
            _drop_if_free(cur, name)

"""Is the runner role still what sqlcanary made it? One query says; whatever is off is put back, and said.

What the role must be: a login with no superuser, database, role, replication or RLS-bypass attribute; exactly
sqlcanary's resource limits as its settings (none per database); no membership either way; nothing it owns and
no grant it holds on a shared object (a database, a tablespace, a parameter) or in the database where sqlcanary
keeps its secret and the admin DSN's database. (Its objects in the templates are the fixtures handed over to it;
templates accept no connection, so only an admin can change them.) A prediction cannot change any of this for
longer than its case (the case's transaction is rolled back, the scratch database's guard refuses), but an
earlier sqlcanary, a person or a tool as admin can: each run checks at its start, and after a scratch database.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from psycopg2 import sql
from psycopg2.extensions import cursor as Cursor

log = logging.getLogger("sqlcanary.db")

ATTRIBUTES = (
    "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT CONNECTION LIMIT -1 "
    "VALID UNTIL 'infinity'"
)
LIMITS = (
    ("temp_file_limit", "1GB"),
    ("statement_timeout", "120s"),
    ("idle_in_transaction_session_timeout", "300s"),
)
SUPERUSER_ONLY = ("temp_file_limit",)  # PGC_SUSET: an admin that is not a superuser cannot set it on a role


def limits_for(superuser: bool) -> tuple[tuple[str, str], ...]:
    """The resource limits an admin can give the role (bot/db/managed.py says what the others cost)."""
    return LIMITS if superuser else tuple(kv for kv in LIMITS if kv[0] not in SUPERUSER_ONLY)


_STATE = """
SELECT a.rolsuper OR a.rolcreatedb OR a.rolcreaterole OR a.rolreplication OR a.rolbypassrls OR NOT a.rolcanlogin
         OR NOT a.rolinherit OR a.rolconnlimit <> -1 OR a.rolvaliduntil IS DISTINCT FROM 'infinity',
       a.rolpassword,
       ARRAY(SELECT coalesce(d.datname, '') || E'\\x1f' || array_to_string(s.setconfig, E'\\x1f')
             FROM pg_db_role_setting s LEFT JOIN pg_database d ON d.oid = s.setdatabase
             WHERE s.setrole = a.oid ORDER BY 1),
       ARRAY(SELECT r.rolname FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid WHERE m.member = a.oid),
       ARRAY(SELECT r.rolname FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member WHERE m.roleid = a.oid
             AND r.rolname <> %(admin)s),
       ARRAY(SELECT DISTINCT coalesce(d.datname, '') FROM pg_shdepend s LEFT JOIN pg_database d ON d.oid = s.dbid
             WHERE s.refclassid = 'pg_authid'::regclass AND s.refobjid = a.oid
               AND (s.dbid = 0 OR d.datname = ANY(%(dbs)s)) ORDER BY 1)
FROM {catalog} a WHERE a.rolname = %(role)s
"""


def _global_settings(limits: tuple[tuple[str, str], ...]) -> str:
    return "\x1f".join(["", *sorted(f"{k}={v}" for k, v in limits)])


@dataclass(frozen=True)
class RoleState:
    """What the one query found; `off()` names what differs from what sqlcanary made."""

    attributes_off: bool
    verifier: str | None
    settings: tuple[str, ...]
    member_of: tuple[str, ...]
    members: tuple[str, ...]
    holdings: tuple[str, ...]  # database names ("" for shared objects) where the role owns or holds something
    limits: tuple[tuple[str, str], ...] = LIMITS  # the settings it must have (limits_for)

    def settings_off(self) -> bool:
        normal = ["\x1f".join([s.split("\x1f")[0], *sorted(s.split("\x1f")[1:])]) for s in self.settings]
        return normal != [_global_settings(self.limits)]

    def off(self, password_ok: bool) -> list[str]:
        found = []
        if self.attributes_off:
            found.append("its attributes")
        if not password_ok:
            found.append("its password")
        if self.settings_off():
            shown = [s.replace("\x1f", " ").strip() for s in self.settings]
            found.append(f"its settings ({'; '.join(shown) or 'none'})")
        if self.member_of or self.members:
            found.append(f"its memberships ({', '.join([*self.member_of, *self.members])})")
        if self.holdings:
            where = ", ".join(h or "shared objects" for h in self.holdings)
            found.append(f"objects it owned or privileges it held ({where})")
        return found


def read_state(cur: Cursor, role: str, databases: list[str], *, superuser: bool = True) -> RoleState | None:
    """The role's state in one round trip, or None when the role does not exist. An admin that is not a
    superuser reads pg_roles (pg_authid is a superuser's: the password verifier shows as ********), and its own
    membership in the role (PostgreSQL 16 records CREATEROLE's ownership of the role that way; sqlcanary adds
    INHERIT and SET to it, bot/db/managed.py) is not counted as one."""
    query = _STATE.replace("{catalog}", "pg_authid" if superuser else "pg_roles")
    admin = "" if superuser else _current_user(cur)
    cur.execute(query, {"role": role, "dbs": databases, "admin": admin})
    row: Any = cur.fetchone()
    if row is None:
        return None
    return RoleState(
        bool(row[0]),
        row[1],
        tuple(row[2]),
        tuple(row[3]),
        tuple(row[4]),
        tuple(row[5]),
        limits_for(superuser),
    )


def _current_user(cur: Cursor) -> str:
    cur.execute("SELECT current_user")
    row: Any = cur.fetchone()
    return str(row[0])


def create_role(
    cur: Cursor, role: str, verifier: str, *, limits: tuple[tuple[str, str], ...] = LIMITS
) -> None:
    cur.execute(
        sql.SQL(f"CREATE ROLE {{}} {ATTRIBUTES} PASSWORD %s").format(sql.Identifier(role)), (verifier,)
    )
    _apply_limits(cur, role, limits)


def _apply_limits(cur: Cursor, role: str, limits: tuple[tuple[str, str], ...] = LIMITS) -> None:
    for name, value in limits:
        cur.execute(
            sql.SQL("ALTER ROLE {} SET {} = %s").format(sql.Identifier(role), sql.Identifier(name)), (value,)
        )


def reset(
    cur: Cursor, role: str, state: RoleState, *, verifier: str | None, other_db_cursors: list[Cursor]
) -> None:
    """Put back what `state` shows off (in the caller's transaction). `verifier`: the password's new verifier when
    it must be set. `other_db_cursors`: cursors in the other databases where the role holds something."""
    ident = sql.Identifier(role)
    if state.attributes_off:
        cur.execute(sql.SQL(f"ALTER ROLE {{}} {ATTRIBUTES}").format(ident))
    if verifier is not None:
        cur.execute(sql.SQL("ALTER ROLE {} PASSWORD %s").format(ident), (verifier,))
    if state.settings_off():
        for setting in state.settings:
            db = setting.split("\x1f")[0]
            if db:
                cur.execute(
                    sql.SQL("ALTER ROLE {} IN DATABASE {} RESET ALL").format(ident, sql.Identifier(db))
                )
        cur.execute(sql.SQL("ALTER ROLE {} RESET ALL").format(ident))
        _apply_limits(cur, role, state.limits)
    for granted in state.member_of:
        cur.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(granted), ident))
    for member in state.members:
        cur.execute(sql.SQL("REVOKE {} FROM {}").format(ident, sql.Identifier(member)))
    if state.holdings:
        # DROP OWNED also revokes the role's privileges on shared objects; REASSIGN hands the databases and
        # tablespaces it owns (which DROP OWNED leaves) to the admin.
        for c in [cur, *other_db_cursors]:
            c.execute(sql.SQL("DROP OWNED BY {}").format(ident))
        cur.execute(sql.SQL("REASSIGN OWNED BY {} TO CURRENT_USER").format(ident))

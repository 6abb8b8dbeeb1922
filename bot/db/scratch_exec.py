"""An untrusted statement in a scratch database: the same guards as in a case's transaction, though it commits.

The scratch database exists for statements that cannot run in a transaction (VACUUM, CREATE INDEX
CONCURRENTLY); everything else of the prediction still runs through a guard function, in a transaction of its
own, as the restricted role under the session's timeouts and the watchdog:

1. `BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT _sqlcanary.exec_checked(stmt); COMMIT`: the guard compares
   the server-wide state (the runner role, its settings, memberships and grants, every database) before and
   after the statement in one snapshot and raises when it changed, so `ALTER ROLE ... SET`, `ALTER DATABASE`,
   `GRANT` on anything outside the clone roll back instead of committing. Then the session's settings are put
   back (a committed `set_config` would otherwise outlive the statement).
2. Only a statement the server refuses to run in a transaction (SQLSTATE 25001) is then sent on its own, in
   autocommit. Sent alone, it is a single statement; if the server sees more than one, they form an implicit
   transaction block in which the non-transactional one refuses to run and the others roll back. The role has
   no privilege for any non-transactional statement that acts beyond the clone (CREATE/DROP DATABASE, ALTER
   SYSTEM, tablespaces), and the state is compared around it too; the run then checks the role again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from psycopg2.extensions import connection

from bot.db.outcome import Outcome


class ScratchSession(Protocol):
    """What of a scratch database's session (bot.db.session.Session, `direct`) this module uses."""

    @property
    def conn(self) -> connection: ...

    def guard_settings(self) -> str: ...

    def guarded(self, fn: Callable[[], None]) -> Outcome: ...

    def rollback(self) -> None: ...

    def raw(self, sql: str, params: tuple[Any, ...] | None = None) -> list[tuple[Any, ...]] | None: ...


_SHARED = "SELECT _sqlcanary.shared_state()"


def scratch_execute(session: ScratchSession, sql: str) -> Outcome:
    restore = f"RESET ALL; {session.guard_settings()}"

    def in_transaction() -> None:
        with session.conn.cursor() as cur:
            cur.execute(
                "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT _sqlcanary.exec_checked(%s); COMMIT; "
                + restore,
                (sql,),
            )

    out = session.guarded(in_transaction)
    if out.ok:
        return out
    session.rollback()  # the failed transaction (and any setting changed in it)
    if out.error_class != "needs_autocommit":
        return out
    before = session.raw(_SHARED)

    def alone() -> None:
        with session.conn.cursor() as cur:
            cur.execute(sql)

    out = session.guarded(alone)
    session.raw(restore)
    if session.raw(_SHARED) != before:
        return Outcome(
            error="the statement changed something outside the scratch database (the restricted role, its "
            "settings or grants, or a database); sqlcanary puts the role back",
            error_class="outside_scratch",
            duration_s=out.duration_s,
        )
    return out

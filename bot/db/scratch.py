"""Scratch databases: a fresh clone of a template for a write case whose statements cannot run in a
transaction. The clone is dropped afterwards and the runner role is checked (and put back) right after."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import psycopg2
from psycopg2.extensions import parse_dsn

from bot.base.errors import DatabaseError
from bot.db.provision import Server
from bot.db.role import ensure_runner_role
from bot.db.session import Session
from bot.db.templates import WORK_PREFIX, Database, clone_database, drop_database, runner_dsn

ScratchFactory = Callable[[str], AbstractContextManager[Session]]


def scratch_factory(
    server: Server, dbs: dict[str, Database], *, timeout_ms: int, row_cap: int
) -> ScratchFactory:
    """`scratch(db)`: a direct (autocommit) session on a new clone of `db`'s template (db/scratch_exec.py)."""
    counter = itertools.count()

    @contextmanager
    def scratch(db: str) -> Iterator[Session]:
        name = f"{WORK_PREFIX}scratch_p{os.getpid()}_{next(counter)}"
        clone_database(server, dbs[db].template, name)
        password = parse_dsn(dbs[db].dsn).get("password", "")
        try:
            session = Session(
                runner_dsn(server, name, password),
                statement_timeout_ms=timeout_ms,
                row_cap=row_cap,
                direct=True,
            )
            try:
                yield session
            finally:
                session.close()
        finally:
            drop_database(server, name)
            try:
                ensure_runner_role(server)
            except (psycopg2.OperationalError, DatabaseError):
                pass  # the server is gone (the case reports it); the next run checks the role at its start

    return scratch

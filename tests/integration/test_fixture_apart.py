"""As root, a fixture is sent to PostgreSQL by a fresh unprivileged user, through a door that admits only the
restricted role into only the database being loaded (bot.run.fixture_apart, bot.db.door)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from contextlib import closing
from pathlib import Path

import psycopg2
import pytest
from psycopg2.extensions import make_dsn

from bot.base.errors import CaseFileError
from bot.base.fixture_files import trusted_fixtures
from bot.db.door import Door
from bot.db.provision import socket_files
from bot.db.role import RUNNER_ROLE, ensure_runner_role
from bot.db.templates import admin_connect, clone_database, drop_database, ensure_template
from bot.run.fixture_apart import loaded_as

pytestmark = pytest.mark.integration
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the loader runs apart only when sqlcanary is root")


def _template(pg_server, tmp_path: Path, text: str) -> tuple[str, list[int | None]]:
    path = tmp_path / "shop.sql"
    path.write_text(text)
    users: list[int | None] = []

    def load(*args, **kwargs) -> None:
        users.append(loaded_as(*args, **kwargs))

    label = f"apart_{uuid.uuid4().hex[:8]}"
    template, _ = ensure_template(pg_server, db_label=label, files=trusted_fixtures([path]), load=load)
    return template, users


@as_root
def test_the_fixture_is_loaded_by_an_unprivileged_user(pg_server, tmp_path):
    template, users = _template(pg_server, tmp_path, "CREATE TABLE t (x int);\nINSERT INTO t VALUES (42);\n")
    assert len(users) == 1 and users[0] not in (None, 0)
    copy = f"{template[:40]}_check"
    clone_database(pg_server, template, copy)
    try:
        with closing(admin_connect(pg_server, copy)) as conn, conn.cursor() as cur:
            cur.execute("SELECT x FROM t")
            assert cur.fetchall() == [(42,)]
    finally:
        drop_database(pg_server, copy)


@as_root
def test_a_fixture_error_apart_still_names_its_file_and_line(pg_server, tmp_path):
    with pytest.raises(CaseFileError, match="permission denied") as info:
        _template(pg_server, tmp_path, "CREATE TABLE t (x int);\nCOPY t TO PROGRAM 'true';\n")
    assert info.value.path == str(tmp_path / "shop.sql") and info.value.line == 2


@pytest.fixture
def door(pg_server):
    sockets = socket_files(pg_server.admin_dsn)
    if not sockets:
        pytest.skip("the server is reached over TCP: no door is needed")
    dbname = f"door_{uuid.uuid4().hex[:8]}"
    ensure_runner_role(pg_server)
    with closing(admin_connect(pg_server)) as conn, conn.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{dbname}"')
    try:
        with Door(sockets[0], uid=os.geteuid(), user=RUNNER_ROLE, dbname=dbname) as opened:
            yield opened, dbname
    finally:
        with closing(admin_connect(pg_server)) as conn, conn.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


def test_the_door_admits_the_restricted_role_into_its_database(door, pg_server):
    opened, dbname = door
    password = ensure_runner_role(pg_server)
    with closing(psycopg2.connect(make_dsn(opened.dsn, password=password))) as conn, conn.cursor() as cur:
        cur.execute("SELECT current_user, current_database()")
        assert cur.fetchone() == (RUNNER_ROLE, dbname)


_CANCELLED = """
import sys, threading, psycopg2
conn = psycopg2.connect(sys.argv[1])
threading.Timer(0.5, conn.cancel).start()
try:
    conn.cursor().execute("SELECT pg_sleep(60)")
    print("slept")
except psycopg2.errors.QueryCanceled:
    print("cancelled")
"""


def test_a_cancel_request_passes_the_door(door, pg_server):
    """How the fixture's budget stops a statement (bot.db.fixture_load): the cancel goes through the door too.
    (From another process: psycopg2 holds the interpreter while it cancels, and the door's relay is Python.)"""
    opened, _ = door
    dsn = make_dsn(opened.dsn, password=ensure_runner_role(pg_server))
    done = subprocess.run(
        [sys.executable, "-c", _CANCELLED, dsn], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "cancelled", done.stderr


@pytest.mark.parametrize(
    "change",
    [{"user": "postgres"}, {"dbname": "postgres"}, {"replication": "database"}],
    ids=["superuser", "another-database", "replication"],
)
def test_the_door_closes_on_any_other_role_or_database(door, change):
    opened, _ = door
    with pytest.raises(psycopg2.OperationalError):
        psycopg2.connect(make_dsn(opened.dsn, **change), connect_timeout=5).close()

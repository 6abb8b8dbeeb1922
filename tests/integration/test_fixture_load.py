"""A fixture is untrusted SQL (a pull request may change it): it is loaded as the restricted role over a plain
connection, never by psql or a superuser (bot.db.fixture_load). Each hostile fixture below is refused with its
file and line, leaves nothing behind (no file written, no role changed), and an honest pg_dump-style fixture,
COPY data and owner statements included, loads as before."""

from __future__ import annotations

import os
from contextlib import closing
from pathlib import Path

import pytest

from bot.base.errors import CaseFileError
from bot.base.fixture_files import trusted_fixtures
from bot.db.role import RUNNER_ROLE
from bot.db.templates import admin_connect, ensure_template

pytestmark = pytest.mark.integration


def _fixture(tmp_path: Path, text: str, name: str = "shop.sql") -> Path:
    path = tmp_path / name
    path.write_text("CREATE TABLE customers (id int PRIMARY KEY, name text);\n" + text)
    return path


def _load(pg_server, path: Path) -> CaseFileError:
    with pytest.raises(CaseFileError) as info:
        ensure_template(pg_server, db_label=f"hostile_{os.getpid()}", files=trusted_fixtures([path]))
    return info.value


def _runner_settings(pg_server) -> list:
    with closing(admin_connect(pg_server)) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT s.setconfig FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole WHERE r.rolname = %s",
            (RUNNER_ROLE,),
        )
        return cur.fetchall()


def _databases_like(pg_server, pattern: str) -> list[str]:
    with closing(admin_connect(pg_server)) as conn, conn.cursor() as cur:
        cur.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (pattern,))
        return [r[0] for r in cur.fetchall()]


@pytest.mark.parametrize(
    ("attack", "line", "says"),
    [
        ("\\! touch {marker}\n", 2, "is a psql meta-command"),
        ("SELECT 1; \\! touch {marker}\n", 2, "is a psql meta-command"),
        ("\\o {marker}\nSELECT 1;\n", 2, "is a psql meta-command"),
        ("COPY customers TO PROGRAM 'touch {marker}';\n", 2, "permission denied"),
        ("COPY (SELECT 1) TO '{marker}';\n", 2, "permission denied"),
        ("CREATE TABLE loot (t text);\nCOPY loot FROM '/etc/passwd';\n", 3, "permission denied"),
        ("SELECT pg_read_file('/etc/passwd');\n", 2, "permission denied"),
        ("SELECT lo_import('/etc/passwd');\n", 2, "permission denied"),
        ("CREATE ROLE evil SUPERUSER;\n", 2, "permission denied"),
        ("ALTER ROLE CURRENT_USER CREATEDB;\n", 2, "permission denied"),
        ("CREATE DATABASE evil;\n", 2, "CREATE DATABASE"),
        ("COMMIT;\nALTER ROLE CURRENT_USER SET work_mem = 64;\n", 2, "may not end or split"),
    ],
)
def test_a_hostile_fixture_runs_nothing_outside_its_database(pg_server, tmp_path, attack, line, says):
    marker = tmp_path / "pwned"
    path = _fixture(tmp_path, attack.replace("{marker}", str(marker)))
    err = _load(pg_server, path)
    assert (err.path, err.line) == (str(path), line)
    assert says in str(err)
    assert not marker.exists()
    assert not _databases_like(pg_server, f"sqlcanary_tpl_hostile_{os.getpid()}%")


def test_a_fixture_that_would_hold_the_check_is_stopped_at_its_budget(pg_server, tmp_path):
    """pg_dump's own `SET statement_timeout = 0` does not help a fixture that sleeps: the statement running when
    the budget runs out is cancelled, and the fixture is refused with its line."""
    from bot.db.fixture_load import load_fixture
    from bot.db.role import ensure_runner_role
    from bot.db.templates import runner_dsn

    path = tmp_path / "sleepy.sql"
    path.write_text("SET statement_timeout = 0;\nSELECT pg_sleep(600);\nSELECT 1;\n", encoding="utf-8")
    dsn = runner_dsn(pg_server, "postgres", ensure_runner_role(pg_server))
    with pytest.raises(CaseFileError) as info:
        load_fixture(dsn, trusted_fixtures([path]), db_label="sleepy", budget_s=1.0)
    assert "did not load within 1 s" in str(info.value)
    assert (info.value.path, info.value.line) == (str(path), 2)


def test_a_fixture_that_changes_its_role_is_rolled_back_whole(pg_server, tmp_path):
    before = _runner_settings(pg_server)
    path = _fixture(tmp_path, "ALTER ROLE CURRENT_USER SET search_path = evil, public;\n")
    err = _load(pg_server, path)
    assert "changes the restricted role it is loaded as" in str(err) and err.path == str(path)
    assert _runner_settings(pg_server) == before


def test_a_fixture_cannot_plant_the_guard_schema(pg_server, tmp_path):
    path = _fixture(
        tmp_path,
        "CREATE SCHEMA _sqlcanary;\nCREATE FUNCTION _sqlcanary.exec(q text) RETURNS void LANGUAGE sql AS 'SELECT 1';\n",
    )
    err = _load(pg_server, path)
    assert "its template could not be prepared" in str(err)


def test_a_pg_dump_style_fixture_loads_as_the_restricted_role(pg_server, tmp_path):
    text = (
        "\\restrict AbC123\n"
        "SET statement_timeout = 0;\n"
        "SELECT pg_catalog.set_config('search_path', '', false);\n"
        "CREATE SCHEMA sales;\n"
        "ALTER SCHEMA sales OWNER TO postgres;\n"
        "CREATE TABLE sales.orders (id int, note text);\n"
        "ALTER TABLE sales.orders OWNER TO someone_who_does_not_exist;\n"
        "COPY sales.orders (id, note) FROM stdin;\n"
        "1\ta;b\n"
        "2\t\\N\n"
        "\\.\n"
        "CREATE FUNCTION sales.n() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM sales.orders; $$;\n"
        "\\unrestrict AbC123\n"
    )
    path = tmp_path / "dump.sql"
    path.write_text(text)
    template, _ = ensure_template(pg_server, db_label=f"dump_{os.getpid()}", files=trusted_fixtures([path]))
    with closing(admin_connect(pg_server)) as conn, conn.cursor() as cur:
        cur.execute(f'ALTER DATABASE "{template}" WITH ALLOW_CONNECTIONS true')
    try:
        with closing(admin_connect(pg_server, template)) as conn, conn.cursor() as cur:
            cur.execute("SELECT id, note FROM sales.orders ORDER BY id")
            assert cur.fetchall() == [(1, "a;b"), (2, None)]
            cur.execute(
                "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'sales.orders'::regclass "
                "UNION ALL SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'sales'"
            )
            assert {r[0] for r in cur.fetchall()} == {RUNNER_ROLE}
            cur.execute("SELECT has_database_privilege('public', current_database(), 'TEMPORARY')")
            assert cur.fetchone() == (False,)
    finally:
        with closing(admin_connect(pg_server)) as conn, conn.cursor() as cur:
            cur.execute(f'ALTER DATABASE "{template}" WITH IS_TEMPLATE false')
            cur.execute(f'DROP DATABASE "{template}" WITH (FORCE)')


def test_loading_a_fixture_leaves_the_role_holding_nothing_on_a_shared_object(pg_server, tmp_path):
    """The role's check at every run start resets a role holding a grant on a database (bot.db.rolestate): a
    template whose load granted the role anything there would make every later run reset it."""
    path = _fixture(tmp_path, "INSERT INTO customers VALUES (1, 'Ada');\n", name="clean.sql")
    template, _ = ensure_template(pg_server, db_label=f"clean_{os.getpid()}", files=trusted_fixtures([path]))
    try:
        with closing(admin_connect(pg_server)) as conn, conn.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM pg_shdepend WHERE dbid = 0 AND refobjid = %s::regrole", (RUNNER_ROLE,)
            )
            assert cur.fetchone() == (0,)
    finally:
        with closing(admin_connect(pg_server)) as conn, conn.cursor() as cur:
            cur.execute(f'ALTER DATABASE "{template}" WITH IS_TEMPLATE false')
            cur.execute(f'DROP DATABASE "{template}" WITH (FORCE)')

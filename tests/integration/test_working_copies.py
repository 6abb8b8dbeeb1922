"""Working copies that outlive a run (bot.db.copies): leased per (template, slot), reused while their state is
the one they were cloned with, cloned again when it is not, and dropped with their template, never while
leased."""

from __future__ import annotations

import uuid
from contextlib import closing
from pathlib import Path

import psycopg2
import pytest
from psycopg2 import sql

from bot.base.fixture_files import FixtureFile, trusted_fixtures
from bot.db import copies
from bot.db.provision import admin_connect
from bot.db.templates import clone_database, ensure_template, working_databases

pytestmark = pytest.mark.integration

FIXTURE = "CREATE TABLE t (id serial PRIMARY KEY, x int); INSERT INTO t (x) VALUES (1), (2);\n"


@pytest.fixture
def db(tmp_path: Path) -> tuple[str, dict[str, tuple[FixtureFile, ...]]]:
    label = f"wc_{uuid.uuid4().hex[:10]}"  # unique: the server keeps templates and copies across sessions
    fixture = tmp_path / "t.sql"
    fixture.write_text(FIXTURE)
    return label, {label: trusted_fixtures([fixture])}


def oid(dsn: str, name: str) -> int | None:
    with closing(psycopg2.connect(dsn)) as conn, conn.cursor() as cur:
        cur.execute("SELECT oid FROM pg_database WHERE datname = %s", (name,))
        row = cur.fetchone()
        return row[0] if row else None


def as_admin(server, name: str, statement: str) -> None:
    with closing(admin_connect(server, name)) as conn, conn.cursor() as cur:
        cur.execute(statement)


def count(dsn: str) -> int:
    with closing(psycopg2.connect(dsn)) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM t")
        return cur.fetchone()[0]


def test_a_copy_is_kept_and_leased_again_while_its_state_is_unchanged(pg_server, pg_dsn, db) -> None:
    label, databases = db
    with working_databases(pg_server, databases) as dbs:
        name = dbs[label].name
        assert name.endswith("_s0") and count(dbs[label].dsn) == 2
    kept = oid(pg_dsn, name)
    assert kept is not None, "kept after the run"
    with working_databases(pg_server, databases) as dbs:
        assert dbs[label].name == name and oid(pg_dsn, name) == kept, "the same copy: not cloned again"


@pytest.mark.parametrize(
    "leftover",
    [
        "SELECT nextval('t_id_seq')",  # a sequence a rollback does not restore
        "CREATE TABLE extra (y int)",  # a schema changed outside a case's transaction
        "ALTER TABLE t RENAME COLUMN x TO z",
    ],
)
def test_a_copy_left_different_is_cloned_again(pg_server, pg_dsn, db, leftover: str) -> None:
    label, databases = db
    with working_databases(pg_server, databases) as dbs:
        name = dbs[label].name
    before = oid(pg_dsn, name)
    as_admin(pg_server, name, leftover)
    with working_databases(pg_server, databases) as dbs:
        assert dbs[label].name == name and oid(pg_dsn, name) != before, "cloned again from its template"
        with closing(psycopg2.connect(dbs[label].dsn)) as conn, conn.cursor() as cur:
            cur.execute("SELECT nextval('t_id_seq'), count(*) FROM pg_class WHERE relname = 'extra'")
            assert cur.fetchone() == (3, 0)  # the template's state again


def test_runs_at_once_lease_different_slots_and_a_leased_copy_is_never_dropped(pg_server, pg_dsn, db) -> None:
    label, databases = db
    template, _ = ensure_template(pg_server, db_label=label, files=databases[label])
    with closing(admin_connect(pg_server)) as one, one.cursor() as a:
        with closing(admin_connect(pg_server)) as two, two.cursor() as b:
            first = copies.lease_copy(pg_server, a, template, clone=clone_database)
            second = copies.lease_copy(pg_server, b, template, clone=clone_database)
            assert (
                first
                and second
                and {first[0], second[0]}
                == {
                    copies.copy_name(template, 0),
                    copies.copy_name(template, 1),
                }
            )
            with closing(admin_connect(pg_server)) as three, three.cursor() as c:
                copies.drop_copies(c, template)  # what pruning the template does
            assert oid(pg_dsn, first[0]) and oid(pg_dsn, second[0]), "a leased copy stays"
        with closing(admin_connect(pg_server)) as three, three.cursor() as c:
            copies.drop_copies(c, template)
        assert oid(pg_dsn, second[0]) is None and oid(pg_dsn, first[0]) is not None, "dropped once released"


def test_a_copy_whose_template_is_gone_is_dropped_when_no_run_holds_it(pg_server, pg_dsn, db) -> None:
    if pg_server.kind != "embedded":
        pytest.skip("stale databases are dropped on the embedded server only")
    label, databases = db
    with working_databases(pg_server, databases) as dbs:
        name, template = dbs[label].name, dbs[label].template
    with closing(admin_connect(pg_server)) as conn, conn.cursor() as cur:
        cur.execute(sql.SQL("ALTER DATABASE {} WITH IS_TEMPLATE false").format(sql.Identifier(template)))
        cur.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(template)))
    with working_databases(pg_server, {}):
        pass
    assert oid(pg_dsn, name) is None


def test_a_template_whose_copy_name_is_too_long_gets_a_digest_name_found_by_its_comment(
    pg_server, pg_dsn, db
) -> None:
    """A perturbed copy's template (`..._x<key>_<i>`) can make `<copy>_s<slot>` longer than PostgreSQL's 63
    bytes: the copy is named by a digest, and pruning and the stale check find it by the template its comment
    names, not by its name."""
    label, databases = db
    template, _ = ensure_template(pg_server, db_label=label, files=databases[label])
    long = f"sqlcanary_t_{label}_" + "x" * (copies.NAME_BYTES - len(f"sqlcanary_t_{label}_"))
    assert len(long) == copies.NAME_BYTES
    clone_database(pg_server, template, long)
    try:
        name = copies.copy_name(long, 15)
        assert len(name) <= copies.NAME_BYTES and name != copies.copy_name(f"{long[:-1]}y", 15)
        with closing(admin_connect(pg_server)) as one, one.cursor() as a:
            leased = copies.lease_copy(pg_server, a, long, clone=clone_database)
            assert leased and leased[0] == copies.copy_name(long, 0) and copies.is_copy(leased[0])
        with closing(admin_connect(pg_server)) as one, one.cursor() as a:
            again = copies.lease_copy(pg_server, a, long, clone=clone_database)
        assert again == (leased[0], False), "the digest-named copy is leased again, not cloned"
        with closing(admin_connect(pg_server)) as three, three.cursor() as c:
            copies.drop_copies(c, long)
        assert oid(pg_dsn, leased[0]) is None, "found by its comment when its template is pruned"
    finally:
        with closing(admin_connect(pg_server)) as conn, conn.cursor() as cur:
            cur.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(long)))


def test_a_digest_named_copy_whose_template_is_gone_is_dropped(pg_server, pg_dsn, db) -> None:
    if pg_server.kind != "embedded":
        pytest.skip("stale databases are dropped on the embedded server only")
    label, databases = db
    template, _ = ensure_template(pg_server, db_label=label, files=databases[label])
    long = f"sqlcanary_t_{label}_" + "z" * (copies.NAME_BYTES - len(f"sqlcanary_t_{label}_"))
    clone_database(pg_server, template, long)
    with closing(admin_connect(pg_server)) as one, one.cursor() as a:
        leased = copies.lease_copy(pg_server, a, long, clone=clone_database)
    assert leased and oid(pg_dsn, leased[0])
    with closing(admin_connect(pg_server)) as conn, conn.cursor() as cur:
        cur.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(long)))
    with working_databases(pg_server, {}):
        pass
    assert oid(pg_dsn, leased[0]) is None

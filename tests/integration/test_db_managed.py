"""Managed PostgreSQL (issue 17, item 10): through --dsn as a role with CREATEDB and CREATEROLE but no superuser,
the shop suite gives a superuser's statuses, hostile predictions still fail cleanly with the data pristine, and
`sqlcanary db clean` leaves no sqlcanary database or role.

Everything runs on a private embedded server (its own data directory under tmp): `db clean` must not touch the
server other test sessions share."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg2
import pytest
from psycopg2.extensions import make_dsn

from bot.base.errors import DatabaseError
from bot.base.results import read_run
from bot.cli import main
from bot.db import lifecycle
from bot.db.provision import provision, start_embedded
from tests.integration.test_hostile import ATTACKS, _suite

pytestmark = pytest.mark.integration

SHOP = Path(__file__).resolve().parents[2] / "benchmarks" / "shop"
ADMIN = "canary_admin"
# What a non-superuser cannot install (bot/db/managed.py), and so how these attacks end instead: still failed,
# with the next case's data pristine, but with another reason.
COSTS = {
    ("vacuum_alter_password", "management"),  # the scratch guard cannot see a password; the run sets it back
    ("terminate_other_runs", "query"),  # pg_terminate_backend stays open to PUBLIC
    ("terminate_other_runs", "management"),
}


def _rows(dsn: str, query: str) -> list[tuple]:
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(query)
        rows = cur.fetchall()
    conn.close()
    return rows


def _leftovers(dsn: str) -> tuple[list[tuple], list[tuple], list[tuple]]:
    return (
        _rows(dsn, "SELECT datname FROM pg_database WHERE datname LIKE 'sqlcanary%'"),
        _rows(dsn, "SELECT rolname FROM pg_roles WHERE rolname LIKE 'sqlcanary%'"),
        _rows(dsn, "SELECT nspname FROM pg_namespace WHERE nspname = '_sqlcanary_admin'"),
    )


def _run(*args: str) -> int:
    return main([*args])


@pytest.fixture(scope="module")
def managed(tmp_path_factory):
    """A private server; `super_dsn` its superuser, `dsn` a CREATEDB CREATEROLE login that is not one."""
    root = tmp_path_factory.mktemp("managed-pg")
    server = start_embedded(root)
    with psycopg2.connect(server.admin_dsn) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE ROLE {ADMIN} LOGIN CREATEDB CREATEROLE PASSWORD 'managed-pw'")
        cur.execute("CREATE ROLE canary_weak LOGIN CREATEDB PASSWORD 'weak-pw'")
    conn.close()
    dsn = make_dsn(server.admin_dsn, user=ADMIN, password="managed-pw")
    yield {"super_dsn": server.admin_dsn, "dsn": dsn, "tmp": root}
    for pgdata in root.glob("pg*"):
        lifecycle.stop(pgdata)


@pytest.fixture(scope="module")
def runs(managed):
    """The shop as the superuser, `db clean`; the shop and the hostile suite as the managed admin, `db clean`."""
    tmp: Path = managed["tmp"]
    got: dict = {}
    assert _run("run", str(SHOP), "--dsn", managed["super_dsn"], "--out", str(tmp / "super.json"), "-q") == 0
    got["super"] = read_run(tmp / "super.json")
    assert _run("db", "clean", "--dsn", managed["super_dsn"]) == 0
    got["after_super_clean"] = _leftovers(managed["super_dsn"])
    assert _run("run", str(SHOP), "--dsn", managed["dsn"], "--out", str(tmp / "managed.json"), "-q") == 0
    got["managed"] = read_run(tmp / "managed.json")
    suite, preds = _suite(tmp)
    args = ["--agent", f"predictions:{preds}", "--jobs", "1", "--statement-timeout", "2s", "-q"]
    assert _run("run", str(suite), "--dsn", managed["dsn"], "--out", str(tmp / "hostile.json"), *args) == 0
    got["hostile"] = {c.id: c for c in read_run(tmp / "hostile.json").cases}
    got["role_after_hostile"] = _rows(
        managed["super_dsn"],
        "SELECT rolsuper, rolcreatedb, rolcreaterole, rolbypassrls, rolconfig FROM pg_roles "
        "WHERE rolname = 'sqlcanary_runner'",
    )
    got["members_after_hostile"] = _rows(
        managed["super_dsn"],
        "SELECT roleid::regrole::text, member::regrole::text FROM pg_auth_members "
        "WHERE 'sqlcanary_runner'::regrole IN (roleid, member) ORDER BY 1, 2",
    )
    got["clean_rc"] = _run("db", "clean", "--dsn", managed["dsn"])
    got["after_managed_clean"] = _leftovers(managed["super_dsn"])
    return got


def test_a_non_superuser_with_createdb_and_createrole_is_accepted(managed):
    server = provision(dsn=managed["dsn"])
    assert (server.superuser, server.kind) == (False, "embedded")


def test_a_role_without_createrole_is_refused_naming_it(managed):
    weak = make_dsn(managed["super_dsn"], user="canary_weak", password="weak-pw")
    with pytest.raises(DatabaseError, match=r"CREATEROLE.*the restricted role"):
        provision(dsn=weak)


def test_the_shop_gives_a_superusers_statuses(runs):
    want = {c.id: c.status for c in runs["super"].cases}
    got = {c.id: c.status for c in runs["managed"].cases}
    assert got == want
    assert sorted(want.values()).count("passed") >= 80


@pytest.mark.parametrize("attack", ATTACKS, ids=[a["id"] for a in ATTACKS])
@pytest.mark.parametrize("category", ["query", "management"])
def test_hostile_predictions_fail_and_the_next_case_is_pristine(runs, attack, category):
    case = runs["hostile"][f"{attack['id']}:{category}"]
    if attack[category] == "PASS":  # the right change (tests/fixtures/hostile/attacks.yml)
        assert case.status == "passed", case.reason
        return
    assert case.status == "failed", (case.status, case.reason)
    if (attack["id"], category) not in COSTS:
        assert re.search(attack[category], case.reason, re.I), case.reason
    canary = runs["hostile"][f"{attack['id']}:{category}:canary"]
    assert canary.status == "passed", canary.reason


def test_the_runner_role_is_as_sqlcanary_made_it_after_the_hostile_run(runs):
    # No temp_file_limit: superuser-only (bot/db/managed.py); only the admin's own membership (PostgreSQL 16's
    # record of CREATEROLE, plus the INHERIT/SET grant sqlcanary adds).
    assert runs["role_after_hostile"] == [
        (False, False, False, False, ["statement_timeout=120s", "idle_in_transaction_session_timeout=300s"])
    ]
    assert {m for _, m in runs["members_after_hostile"]} == {ADMIN}


def test_db_clean_leaves_no_sqlcanary_database_or_role(runs):
    assert runs["after_super_clean"] == ([], [], [])
    assert runs["clean_rc"] == 0
    assert runs["after_managed_clean"] == ([], [], [])

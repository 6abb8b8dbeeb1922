"""Hostile predictions end as failed cases with a clear reason, and the next case sees pristine data."""

from __future__ import annotations

import json
import re
from pathlib import Path

import psycopg2
import pytest
import yaml

from bot.base.results import read_run
from bot.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hostile"
ATTACKS = yaml.safe_load((FIXTURES / "attacks.yml").read_text())
CANARY_SQL = "SELECT id, owner, balance FROM accounts ORDER BY id"
PWNED = Path("/tmp/sqlcanary-pwned")
RUNNER_SETTINGS = [
    "temp_file_limit=1GB",
    "statement_timeout=120s",
    "idle_in_transaction_session_timeout=300s",
]


def _suite(tmp_path: Path) -> tuple[Path, Path]:
    cases, preds = [], []
    for attack in ATTACKS:
        qid, mid = f"{attack['id']}:query", f"{attack['id']}:management"
        cases.append(
            {
                "id": qid,
                "question": "How many accounts are there?",
                "gold_sql": "SELECT count(*) FROM accounts",
            }
        )
        cases.append({"id": f"{qid}:canary", "question": "List the accounts.", "gold_sql": CANARY_SQL})
        cases.append(
            {
                "id": mid,
                "question": "Give ada one more unit of balance.",
                "category": "management",
                "gold_sql": "UPDATE accounts SET balance = balance + 1 WHERE id = 1",
                "checks": [
                    "SELECT balance = 101 FROM accounts WHERE id = 1",
                    {"sql": "SELECT count(*) FROM accounts", "expect": [[3]]},
                ],
            }
        )
        cases.append({"id": f"{mid}:canary", "question": "List the accounts.", "gold_sql": CANARY_SQL})
        preds += [
            {"id": qid, "sql": attack["sql"]},
            {"id": mid, "sql": attack["sql"]},
            {"id": f"{qid}:canary", "sql": CANARY_SQL},
            {"id": f"{mid}:canary", "sql": CANARY_SQL},
        ]
    suite = tmp_path / "hostile.yml"
    suite.write_text(
        yaml.safe_dump(
            {
                "name": "hostile",
                "databases": {"bank": str(FIXTURES / "bank.sql")},
                "defaults": {"row_cap": 1000},
                "cases": cases,
            },
            sort_keys=False,
        )
    )
    pred_file = tmp_path / "preds.jsonl"
    pred_file.write_text("".join(json.dumps(p) + "\n" for p in preds))
    return suite, pred_file


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory, pg_dsn):
    tmp = tmp_path_factory.mktemp("hostile")
    PWNED.unlink(missing_ok=True)
    suite, preds = _suite(tmp)
    out = tmp / "run.json"
    rc = main(
        [
            "run",
            str(suite),
            "--agent",
            f"predictions:{preds}",
            "--dsn",
            pg_dsn,
            "--out",
            str(out),
            "--jobs",
            "1",
            "--statement-timeout",
            "2s",
            "-q",
        ]
    )
    assert rc == 0
    return {c.id: c for c in read_run(out).cases}


@pytest.mark.parametrize("attack", ATTACKS, ids=[a["id"] for a in ATTACKS])
@pytest.mark.parametrize("category", ["query", "management"])
def test_attack_fails_with_clear_reason(hostile_run, attack, category):
    case = hostile_run[f"{attack['id']}:{category}"]
    if attack[category] == "PASS":  # the right change, and session state its checks must not be read under
        assert case.status == "passed", case.reason
        return
    assert case.status == "failed", (case.status, case.reason)
    assert re.search(attack[category], case.reason, re.I), case.reason


@pytest.mark.parametrize("attack", ATTACKS, ids=[a["id"] for a in ATTACKS])
@pytest.mark.parametrize("category", ["query", "management"])
def test_next_case_sees_pristine_data(hostile_run, attack, category):
    canary = hostile_run[f"{attack['id']}:{category}:canary"]
    assert canary.status == "passed", canary.reason


def test_nothing_escaped_to_the_server(hostile_run, pg_dsn):
    assert not PWNED.exists(), "COPY TO PROGRAM ran"
    with psycopg2.connect(pg_dsn) as conn, conn.cursor() as cur:
        cur.execute("SELECT setting FROM pg_file_settings WHERE name = 'work_mem' AND applied IS NOT NULL")
        assert cur.fetchall() == [], "ALTER SYSTEM changed postgresql.auto.conf"
        cur.execute(
            "SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = 'sqlcanary_runner'"
        )
        assert cur.fetchone() == (False, False, False)
        # Nothing a scratch database's statement tried outlived its case (issue 14, finding 6).
        cur.execute(
            "SELECT coalesce(d.datname, '*'), r.rolname, s.setconfig FROM pg_db_role_setting s "
            "LEFT JOIN pg_database d ON d.oid = s.setdatabase LEFT JOIN pg_roles r ON r.oid = s.setrole "
            "WHERE s.setrole = 'sqlcanary_runner'::regrole OR d.datname = 'postgres' OR d.datname LIKE 'sqlcanary%'"
        )
        assert cur.fetchall() == [("*", "sqlcanary_runner", RUNNER_SETTINGS)]
        cur.execute(
            "SELECT count(*) FROM pg_auth_members WHERE 'sqlcanary_runner'::regrole IN (roleid, member)"
        )
        assert cur.fetchone() == (0,)
        cur.execute("SELECT datname FROM pg_database WHERE datdba = 'sqlcanary_runner'::regrole")
        assert cur.fetchall() == []
    conn.close()


def test_an_innocent_run_after_gets_the_true_verdicts(hostile_run, tmp_path, pg_dsn):
    """The hostile run is over; a friendly run on the same server (new connections, new clones, a scratch
    database) judges as if it had never happened."""
    update = "UPDATE accounts SET balance = balance + 1 WHERE id = 1"
    answers = {
        "count": ("SELECT count(*) FROM accounts", "passed"),
        "count:wrong": ("SELECT count(*) - 1 FROM accounts", "failed"),
        "list": (CANARY_SQL, "passed"),
        "give": (update, "passed"),
        "give:wrong": ("UPDATE accounts SET balance = balance + 2 WHERE id = 1", "failed"),
        "give:scratch": (f"VACUUM; {update}", "passed"),
        "give:index": (f"CREATE INDEX CONCURRENTLY ON accounts (owner); {update}", "passed"),
    }
    checks = [
        "SELECT balance = 101 FROM accounts WHERE id = 1",
        {"sql": "SELECT count(*) FROM accounts", "expect": [[3]]},
    ]
    cases = []
    for cid in answers:
        if cid.startswith("give"):
            cases.append(
                {
                    "id": cid,
                    "question": "Give ada one more unit.",
                    "category": "management",
                    "gold_sql": update,
                    "checks": checks,
                }
            )
        else:
            gold = CANARY_SQL if cid == "list" else "SELECT count(*) FROM accounts"
            cases.append({"id": cid, "question": "Accounts?", "gold_sql": gold})
    suite = tmp_path / "innocent.yml"
    suite.write_text(
        yaml.safe_dump(
            {"name": "innocent", "databases": {"bank": str(FIXTURES / "bank.sql")}, "cases": cases},
            sort_keys=False,
        )
    )
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"id": k, "sql": v[0]}) + "\n" for k, v in answers.items()))
    out = tmp_path / "run.json"
    rc = main(
        [
            "run",
            str(suite),
            "--agent",
            f"predictions:{preds}",
            "--dsn",
            pg_dsn,
            "--out",
            str(out),
            "--jobs",
            "2",
            "-q",
        ]
    )
    assert rc == 0
    got = {c.id: (c.status, c.reason) for c in read_run(out).cases}
    assert {k: v[0] for k, v in got.items()} == {k: v[1] for k, v in answers.items()}, got

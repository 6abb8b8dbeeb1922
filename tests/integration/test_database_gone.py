"""A database that goes away mid-run: exit 2 with a clear message, and the cases finished so far survive."""

from __future__ import annotations

import json
import textwrap

import yaml

from bot.base.results import read_run
from bot.cli import main

AGENT = textwrap.dedent(
    """
    import os, psycopg2

    def answer(request):
        if request["id"] == "c3":
            # Cut the working database off: no new connections, and every open one terminated.
            conn = psycopg2.connect(os.environ["SQLCANARY_TEST_ADMIN_DSN"])
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("SELECT datname FROM pg_database WHERE datname LIKE 'sqlcanary_w_gone%'")
                for (name,) in cur.fetchall():
                    cur.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
                    cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
            conn.close()
        return {"sql": "SELECT count(*) FROM t"}
    """
)


def test_database_gone_exits_2_and_keeps_results(tmp_path, pg_dsn, monkeypatch, capsys):
    fixture = tmp_path / "t.sql"
    fixture.write_text("CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2);\n")
    cases = [
        {"id": f"c{i}", "question": "How many rows?", "gold_sql": "SELECT count(*) FROM t"}
        for i in range(1, 6)
    ]
    suite = tmp_path / "suite.yml"
    suite.write_text(yaml.safe_dump({"name": "gone", "databases": {"gone": str(fixture)}, "cases": cases}))
    (tmp_path / "agent.py").write_text(AGENT)
    monkeypatch.setenv("SQLCANARY_TEST_ADMIN_DSN", pg_dsn)
    # This agent is the test's hand inside the run (it cuts the database off as the superuser), not a pull
    # request's code: it runs in process, as without root, where it sees the environment.
    monkeypatch.setattr("bot.agents.sandbox.sandbox_wanted", lambda: False)
    out = tmp_path / "run.json"
    rc = main(
        [
            "run",
            str(suite),
            "--agent",
            f"python:{tmp_path / 'agent.py'}:answer",
            "--dsn",
            pg_dsn,
            "--out",
            str(out),
            "--jobs",
            "1",
            "-q",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "connect" in err or "lost" in err
    run = read_run(out)
    assert run.meta.complete is False
    assert [c.id for c in run.cases if c.status == "passed"] == ["c1", "c2"]
    raw = json.loads(out.read_text())
    assert raw["summary"]["passed"] == 2
    # the run's working copy is kept, and the next run that leases it finds it refusing connections: it is
    # cloned again (bot.db.copies), and the run passes
    monkeypatch.setattr("bot.db.copies.SLOTS", 1)  # the same copy, not another slot's
    again = [
        "run",
        str(suite),
        "--agent",
        "gold",
        "--dsn",
        pg_dsn,
        "--out",
        str(tmp_path / "again.json"),
        "-q",
    ]
    assert main(again) == 0, capsys.readouterr().err
    assert {c.status for c in read_run(tmp_path / "again.json").cases} == {"passed"}

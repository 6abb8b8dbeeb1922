"""Fixtures are loaded once into a template keyed by their content, reused while unchanged, and runs work in
clones that are dropped afterwards."""

from __future__ import annotations

import uuid
from contextlib import closing

import psycopg2
import yaml

from bot.base.results import read_run
from bot.cli import main


def _templates(dsn: str, label: str) -> dict[str, int]:
    with closing(psycopg2.connect(dsn)) as conn, conn.cursor() as cur:
        cur.execute("SELECT datname, oid FROM pg_database WHERE datname LIKE %s", (f"sqlcanary_t_{label}_%",))
        return dict(cur.fetchall())


def _work_dbs(dsn: str, label: str) -> dict[str, int]:
    with closing(psycopg2.connect(dsn)) as conn, conn.cursor() as cur:
        cur.execute("SELECT datname, oid FROM pg_database WHERE datname LIKE %s", (f"sqlcanary_w_{label}_%",))
        return dict(cur.fetchall())


def test_template_reused_while_fixture_unchanged_and_rebuilt_when_it_changes(tmp_path, pg_dsn):
    label = (
        f"tpl_{uuid.uuid4().hex[:10]}"  # unique per run: a long-lived server keeps templates across sessions
    )
    fixture = tmp_path / "f.sql"
    fixture.write_text("CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2), (3);\n")
    suite = tmp_path / "suite.yml"
    suite.write_text(
        yaml.safe_dump(
            {
                "databases": {label: str(fixture)},
                "cases": [{"id": "n", "question": "How many?", "gold_sql": "SELECT count(*) FROM t"}],
            }
        )
    )
    out = tmp_path / "run.json"
    args = ["run", str(suite), "--dsn", pg_dsn, "--out", str(out), "-q"]

    assert main(args) == 0
    first = _templates(pg_dsn, label)
    assert len(first) == 1
    fingerprint = read_run(out).meta.fixtures[label]
    assert fingerprint in next(iter(first))
    copy = _work_dbs(pg_dsn, label)
    assert list(copy) == [f"sqlcanary_w_{label}_{fingerprint}_s0"], "one working copy, kept (bot.db.copies)"

    assert main(args) == 0
    assert _templates(pg_dsn, label) == first, "same name and oid: loaded once, reused"
    assert _work_dbs(pg_dsn, label) == copy, "the same working copy (name and oid): leased again, not cloned"
    assert read_run(out).meta.fixtures[label] == fingerprint

    fixture.write_text("CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2);\n")
    assert main(args) == 0
    after = _templates(pg_dsn, label)
    assert len(after) == 2 and set(first) < set(after), "a changed fixture gets a template of its own"
    assert read_run(out).meta.fixtures[label] != fingerprint
    assert read_run(out).cases[0].status == "passed"

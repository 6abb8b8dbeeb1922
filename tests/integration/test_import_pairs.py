"""Issue 17, item 9: Spider and BIRD pairs (`{question, query | SQL, db_id}`) import as a suite, one case file per
db_id, the SQLite databases converted to PostgreSQL fixtures, and the SQLite-only syntax reported per case. The
imported golds then run on a real PostgreSQL with the gold agent: what was rewritten gives the SQLite answer,
what PostgreSQL refuses is invalid, as the import warned. Small fixtures in tests/fixtures/pairs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from bot.cli import main

pytestmark = pytest.mark.integration

PAIRS = Path(__file__).resolve().parents[1] / "fixtures" / "pairs"


def build_sqlite(folder: Path, name: str) -> Path:
    """`folder/<name>/<name>.sqlite` from the fixture's SQLite script (Spider's and BIRD's layout)."""
    target = folder / name / f"{name}.sqlite"
    target.parent.mkdir(parents=True)
    con = sqlite3.connect(target)
    con.executescript((PAIRS / f"{name}.sqlite.sql").read_text())
    con.commit()
    con.close()
    return target


def sqlite_answer(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.fixture
def spider(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str, Path]:
    db = build_sqlite(tmp_path / "database", "concert_singer")
    out = tmp_path / "suite"
    argv = ["import", "spider", str(PAIRS / "spider_dev.json"), "--db-dir", str(tmp_path / "database")]
    assert main([*argv, "--out", str(out)]) == 0
    return out, capsys.readouterr().out, db


def test_spider_pairs_become_one_case_file_per_db_with_each_rewrite_said(spider) -> None:
    out, printed, _ = spider
    assert sorted(p.name for p in (out / "cases").iterdir()) == ["concert_singer.yml"]
    suite = yaml.safe_load((out / "suite.yml").read_text())
    assert suite["databases"] == {"concert_singer": "fixtures/concert_singer.sql"}
    cases = {c["id"]: c for c in yaml.safe_load((out / "cases" / "concert_singer.yml").read_text())}
    assert cases["concert_singer:1"]["gold_sql"] == "SELECT COUNT(*) FROM singer WHERE country = 'France'"
    assert "LIMIT 2 OFFSET 1" in cases["concert_singer:2"]["gold_sql"]
    assert "ILIKE" in cases["concert_singer:3"]["gold_sql"]
    # each SQLite-only construct is reported, with the case it is in
    for case_id, words in [
        ("concert_singer:1", '"France" is a string in SQLite'),
        ("concert_singer:2", "`LIMIT a, b`"),
        ("concert_singer:2", "backtick"),
        ("concert_singer:3", "LIKE is case-insensitive in SQLite"),
        ("concert_singer:5", "without grouping or aggregating it"),
        ("concert_singer:6", "skipped: the gold does not parse as SQLite"),
    ]:
        assert any(case_id in line and words in line for line in printed.splitlines()), (case_id, words)
    assert "world_1" in printed and "no world_1/world_1.sqlite" in printed  # its database is not there
    assert "concert_singer:6" not in cases and "world_1:7" not in cases
    assert "wrote 6 cases over 1 database" in printed and "2 skipped" in printed
    assert (
        "transpiled" in cases["concert_singer:1"]["tags"]
        and "transpiled" not in cases["concert_singer:0"]["tags"]
    )


def test_imported_spider_golds_give_sqlite_answers_on_postgresql(spider, pg_dsn: str, tmp_path: Path) -> None:
    out, _, db = spider
    result = tmp_path / "run.json"
    main(["run", str(out), "--agent", "gold", "--dsn", pg_dsn, "--out", str(result), "-q"])
    status = {c["id"]: c["status"] for c in json.loads(result.read_text())["cases"]}
    # the gold agent answers with the gold: every decidable case passes; the one PostgreSQL refuses is invalid
    assert status.pop("concert_singer:5") == "invalid"
    assert set(status.values()) == {"passed"}, status
    # and what PostgreSQL computes is what SQLite did for the original SQL
    pairs = json.loads((PAIRS / "spider_dev.json").read_text())
    france = sqlite_answer(db, pairs[1]["query"])
    like = sqlite_answer(db, pairs[3]["query"])
    assert france == [(4,)] and like == [
        ("Joe Sharp",)
    ]  # "France" as a string; LIKE matched 'Joe' for '%joe%'


def test_an_import_is_not_audited_unless_asked(spider) -> None:
    out, printed, _ = spider
    assert not (out / "audit.json").exists()
    assert "not audited" in printed and f"sqlcanary audit {out}" in printed


def test_import_audit_writes_the_audit_json_beside_the_suite(tmp_path: Path, pg_dsn: str, capsys) -> None:
    """`--audit`: the imported golds audited as `sqlcanary audit --format json` audits them, written to
    OUT/audit.json: the gold PostgreSQL refuses (a column neither grouped nor aggregated) is a gold_error."""
    build_sqlite(tmp_path / "database", "concert_singer")
    out = tmp_path / "suite"
    argv = ["import", "spider", str(PAIRS / "spider_dev.json"), "--db-dir", str(tmp_path / "database")]
    assert main([*argv, "--out", str(out), "--audit", "--dsn", pg_dsn]) == 0
    printed = capsys.readouterr().out
    report = json.loads((out / "audit.json").read_text())
    assert report["schema_version"] == 1 and report["audited"] == 6 and report["skipped"] == 0
    kinds = {(s["case_id"], s["kind"]) for s in report["suspects"]}
    assert ("concert_singer:5", "gold_error") in kinds
    assert all(s["source"].startswith(str(out / "cases" / "concert_singer.yml")) for s in report["suspects"])
    assert f"written to {out / 'audit.json'}" in printed
    # the same document `sqlcanary audit --format json` prints
    again = tmp_path / "again.json"
    assert main(["audit", str(out), "--dsn", pg_dsn, "-q", "--format", "json", "--out", str(again)]) == 0
    assert json.loads(again.read_text()) == report


def test_bird_pairs_keep_their_ids_evidence_and_difficulty(tmp_path: Path, pg_dsn: str, capsys) -> None:
    build_sqlite(tmp_path / "dev_databases", "debit_card")
    out = tmp_path / "bird"
    argv = ["import", "bird", str(PAIRS / "bird_dev.json"), "--db-dir", str(tmp_path / "dev_databases")]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    cases = {c["id"]: c for c in yaml.safe_load((out / "cases" / "debit_card.yml").read_text())}
    assert set(cases) == {"debit_card:1470", "debit_card:1471", "debit_card:1472", "debit_card:1473"}
    assert cases["debit_card:1470"]["instructions"].startswith("Percentage = ")
    assert "simple" in cases["debit_card:1470"]["tags"]
    for case_id, words in [
        ("debit_card:1470", "`IIF`"),
        ("debit_card:1471", "`strftime`"),
        ("debit_card:1472", "backtick"),
        ("debit_card:1473", "`||`"),
    ]:
        assert any(case_id in line and words in line for line in printed.splitlines()), (case_id, words)
    result = tmp_path / "run.json"
    main(["run", str(out), "--agent", "gold", "--dsn", pg_dsn, "--out", str(result), "-q"])
    status = {c["id"]: c["status"] for c in json.loads(result.read_text())["cases"]}
    assert set(status.values()) == {"passed"}, status


def test_a_list_that_is_not_pairs_is_refused_naming_the_item(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "dev.json"
    bad.write_text(
        json.dumps([{"db_id": "x", "query": "SELECT 1", "question": "q"}, {"db_id": "x", "query": "q"}])
    )
    (tmp_path / "db").mkdir()
    code = main(
        ["import", "spider", str(bad), "--db-dir", str(tmp_path / "db"), "--out", str(tmp_path / "o")]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "item [1]" in err and "question" in err and str(bad) in err
    assert main(["import", "bird", str(bad), "--out", str(tmp_path / "o")]) == 2  # --db-dir is needed
    assert "--db-dir" in capsys.readouterr().err

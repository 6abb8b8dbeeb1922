"""The planner's cost per query case on a real PostgreSQL: a prediction that returns the gold's rows through a
far costlier plan passes and says so in its `query_cost`; a prediction that did not run, a write case and an
efficiency case record none; the estimates are kept in the cache folder, so a second run explains nothing."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import yaml

from bot.base.results import read_run
from bot.cli import main
from bot.db.session import Session

pytestmark = pytest.mark.integration

FIXTURE = """
CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL);
INSERT INTO t SELECT g, g % 100 FROM generate_series(1, 50000) g;
"""

POINT = "SELECT count(*) FROM t WHERE id = 5"  # the primary key's index
SCAN = "SELECT count(*) FROM t WHERE id + 0 = 5"  # the same row, through every row of t
POINT_6, SCAN_6 = POINT.replace("5", "6"), SCAN.replace("5", "6")  # the efficiency case's

# (id, gold (one or several alternatives), prediction, extra fields of the case)
CASES: list[tuple[str, str | list[str], str, dict]] = [
    ("costly", POINT, SCAN, {}),
    (
        "second-gold",
        ["SELECT 42", POINT],
        SCAN,
        {},
    ),  # judged against (so costed with) the alternative it matched
    ("wrong", "SELECT count(*) FROM t WHERE id < 10", "SELECT count(*) FROM t WHERE id < 11", {}),
    ("broken", POINT, "SELECT no_such_column FROM t", {}),
    (
        "write",
        "UPDATE t SET v = -1 WHERE id = 1",
        "UPDATE t SET v = -1 WHERE id = 1",
        {"category": "management", "checks": ["SELECT v = -1 FROM t WHERE id = 1"]},
    ),
    (
        "efficient",
        POINT_6,
        POINT_6,
        {"category": "efficiency", "efficiency": {"reference_sql": SCAN_6, "threshold": 0.3}},
    ),
]
# What the query cases explain: each prediction that ran and the gold it was judged against ("SELECT 42" never).
QUERY_TEXTS = {POINT, SCAN, "SELECT count(*) FROM t WHERE id < 10", "SELECT count(*) FROM t WHERE id < 11"}


@pytest.fixture
def label() -> str:
    return (
        f"qc_{uuid.uuid4().hex[:8]}"  # a server kept across sessions keeps templates: a fresh label each time
    )


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("SQLCANARY_CACHE_DIR", str(folder))
    return folder


def _suite(tmp_path: Path, label: str) -> tuple[Path, Path]:
    (tmp_path / "t.sql").write_text(FIXTURE)
    cases = [{"id": i, "question": f"Case {i}?", "gold_sql": gold, **extra} for i, gold, _, extra in CASES]
    doc = {"databases": {label: "t.sql"}, "cases": cases}
    (tmp_path / "suite.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"id": i, "sql": pred}) + "\n" for i, _, pred, _ in CASES))
    return tmp_path / "suite.yml", preds


def _run(suite: Path, preds: Path, dsn: str, out: Path, *extra: str):
    args = ["run", str(suite), "--agent", f"predictions:{preds}", "--dsn", dsn, "--out", str(out), "-q"]
    code = main([*args, *extra])
    assert code in (0, 1)
    return {c.id: c for c in read_run(out).cases}


def _explains(monkeypatch) -> list[str]:
    """Every SQL text the run explains (Session.explain_plan, which explain_cost goes through too)."""
    seen: list[str] = []
    real = Session.explain_plan

    def counting(self: Session, sql: str):
        seen.append(sql)
        return real(self, sql)

    monkeypatch.setattr(Session, "explain_plan", counting)
    return seen


def test_query_cost_per_query_case_and_its_memo(tmp_path, pg_dsn, label, cache, monkeypatch):
    suite, preds = _suite(tmp_path, label)
    explained = _explains(monkeypatch)
    cases = _run(suite, preds, pg_dsn, tmp_path / "a.json", "--jobs", "1")  # one worker: no two at once
    statuses = {i: c.status for i, c in cases.items()}
    assert statuses == {
        "costly": "passed",
        "second-gold": "passed",
        "wrong": "failed",
        "broken": "failed",
        "write": "passed",
        "efficient": "passed",
    }

    costly = cases["costly"].query_cost
    assert costly is not None and costly.prediction and costly.gold
    assert costly.prediction >= 10 * costly.gold, costly
    assert costly.prediction_rows is not None and costly.gold_rows is not None
    assert costly.prediction_rows > costly.gold_rows >= 1, "the scan of t reads more than the index's one row"

    second = cases["second-gold"].query_cost
    assert cases["second-gold"].prediction.alternative == 1
    assert second == costly, "the gold it was judged against (#2), not the first alternative"

    wrong = cases["wrong"].query_cost
    assert wrong is not None and wrong.prediction and wrong.gold, (
        "a prediction that ran, whatever its verdict"
    )
    assert cases["wrong"].verdicts["execution"].kind != "pred_error"

    assert cases["broken"].verdicts["execution"].kind == "pred_error"
    for case_id in ("broken", "write", "efficient"):
        assert cases[case_id].query_cost is None, case_id
    saved = {c["id"]: c for c in json.loads((tmp_path / "a.json").read_text())["cases"]}
    assert "query_cost" in saved["costly"] and "query_cost" not in saved["broken"]

    # Each text explained once in the run (a text already explained on the template is known), and the
    # efficiency case's plans as before (never memoized: an index case's plan changes within the case).
    asked = [sql for sql in explained if sql in QUERY_TEXTS]
    assert sorted(asked) == sorted(QUERY_TEXTS), explained
    assert set(explained) - QUERY_TEXTS == {POINT_6, SCAN_6}

    memo = cache / "query-costs.json"
    kept = json.loads(memo.read_text())
    assert len(kept) == len(QUERY_TEXTS)
    assert not list(cache.glob("*.tmp")), "written atomically: no temporary file left"

    explained.clear()
    again = _run(suite, preds, pg_dsn, tmp_path / "b.json")
    assert {i: c.query_cost for i, c in again.items()} == {i: c.query_cost for i, c in cases.items()}
    assert not [sql for sql in explained if sql in QUERY_TEXTS], "a warm run explains no query case's SQL"
    assert set(explained) == {POINT_6, SCAN_6}, "only the efficiency case's own plans"
    assert json.loads(memo.read_text()) == kept


def test_an_unreadable_memo_is_rebuilt(tmp_path, pg_dsn, label, cache):
    suite, preds = _suite(tmp_path, label)
    cache.mkdir()
    memo = cache / "query-costs.json"
    memo.write_text("{not json")
    cases = _run(suite, preds, pg_dsn, tmp_path / "a.json")
    assert cases["costly"].query_cost is not None
    assert len(json.loads(memo.read_text())) == len(QUERY_TEXTS)

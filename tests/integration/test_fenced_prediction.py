"""A prediction in a Markdown code fence (what a chat model often sends) is named as such, through the real CLI:
not "the prediction is empty". It still fails: the fence is not taken off, since the agent's SQL would fail the
same way wherever it runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.base.results import read_run
from bot.cli import main

pytestmark = pytest.mark.integration

SINGLE = Path(__file__).resolve().parents[1] / "fixtures" / "suites" / "single"


def test_a_fenced_prediction_is_called_fenced_on_query_and_write_cases(tmp_path: Path, pg_dsn: str) -> None:
    shutil.copy(SINGLE / "shop.sql", tmp_path / "shop.sql")
    (tmp_path / "suite.yml").write_text(
        "databases:\n  shop: shop.sql\ncases:\n"
        "  - id: count\n    question: How many customers\n    gold_sql: SELECT count(*) FROM customers\n"
        "  - id: wipe\n    question: Remove every customer\n    category: management\n"
        "    gold_sql: DELETE FROM customers\n    checks: [SELECT count(*) FROM customers]\n"
        "  - id: empty\n    question: Names\n    gold_sql: SELECT name FROM customers\n",
        encoding="utf-8",
    )
    predictions = [
        {"id": "count", "sql": "```sql\nSELECT count(*) FROM customers\n```"},
        {"id": "wipe", "sql": "~~~\nDELETE FROM customers\n~~~"},
        {"id": "empty", "sql": "  -- nothing\n"},
    ]
    (tmp_path / "predictions.json").write_text(json.dumps(predictions), encoding="utf-8")
    out = tmp_path / "run.json"
    code = main(
        ["run", str(tmp_path / "suite.yml"), "--agent", f"predictions:{tmp_path / 'predictions.json'}"]
        + ["--dsn", pg_dsn, "--out", str(out), "-q"]
    )
    assert code == 0
    cases = {c.id: c for c in read_run(out).cases}
    for case_id, fence in (("count", "```sql"), ("wipe", "~~~")):
        assert cases[case_id].status == "failed"
        assert f"code fence ({fence})" in cases[case_id].reason and "empty" not in cases[case_id].reason
    assert cases["empty"].status == "failed" and "the prediction is empty" in cases["empty"].reason

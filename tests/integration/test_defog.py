"""The public defog benchmark, imported and judged on a real PostgreSQL: every gold alternative passes."""

from __future__ import annotations

import json

import pytest

from bot.base.results import read_run
from bot.cli import main


@pytest.fixture(scope="module")
def defog_suite(shared, tmp_path_factory):
    out = tmp_path_factory.mktemp("defog") / "suite"
    assert main(["import", "defog", str(shared / "datasets/defog"), "--out", str(out)]) == 0
    return out


def _run(suite, agent, pg_dsn, tmp_path):
    out = tmp_path / "run.json"
    assert main(["run", str(suite), "--agent", agent, "--dsn", pg_dsn, "--out", str(out), "-q"]) == 0
    return read_run(out)


def test_every_gold_alternative_passes(defog_suite, pg_dsn, tmp_path):
    run = _run(defog_suite, "gold:all", pg_dsn, tmp_path)
    bad = [(c.id, c.status, c.reason) for c in run.cases if c.status != "passed"]
    assert bad == []
    assert (run.summary.total, run.summary.passed, run.summary.invalid) == (419, 419, 0)
    assert len(run.meta.fixtures) == 11 and run.meta.server_version


def test_predictions_file_of_last_alternatives_passes(defog_suite, shared, pg_dsn, tmp_path):
    rows = [json.loads(line) for line in (shared / "datasets/defog/cases.jsonl").read_text().splitlines()]
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(json.dumps({"id": r["id"], "sql": r["gold_sql_variants"][-1]}) + "\n" for r in rows)
    )
    run = _run(defog_suite, f"predictions:{preds}", pg_dsn, tmp_path)
    assert (run.summary.total, run.summary.passed, run.summary.invalid) == (419, 419, 0)
    multi = [c for c in run.cases if c.prediction.alternative not in (None, 0)]
    assert multi, "cases with several alternatives matched a later one"

"""A failed case explained where a person reads it, through the real CLI on a real PostgreSQL (issue 25):

- a prediction that returns a timestamp for the gold's date column: the message names the column and both types
  first ("12 of 12 rows differ" hid the cast);
- a prediction that misses 2 rows and adds 1: missing and extra rows counted apart;
- `sqlcanary report` of the run alone (md, html, junit) shows each failing case's gold SQL beside the prediction;
- `sqlcanary show` prints the first rows of both sides, with their row counts; a run file from before they were
  recorded still loads and says they were not.

The suite runs once for the module: `days` (timestamp for date), `ids` (2 rows missing, 1 extra), `names` (passes).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bot.base.errors import EXIT_OK
from bot.base.results import read_run
from bot.cli import main
from tests.integration.test_run_habits import AGENT

pytestmark = pytest.mark.integration

FIXTURE = """CREATE TABLE visits (id int PRIMARY KEY, visit_day date NOT NULL);
INSERT INTO visits SELECT i, date '2026-01-01' + i FROM generate_series(1, 6) AS i;
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL);
INSERT INTO customers VALUES (1, 'Ada'), (2, 'Bo'), (3, 'Cy'), (4, 'Di');
"""
GOLD = {
    "days": "SELECT visit_day FROM visits",
    "ids": "SELECT id FROM customers",
    "names": "SELECT name FROM customers",
}
PREDICTIONS = {
    "days": "SELECT visit_day::timestamp AS visit_day FROM visits",
    "ids": "SELECT id FROM customers WHERE id <= 2 UNION ALL SELECT 9",
    "names": "SELECT c.name FROM customers AS c",
}
TYPES = "column `visit_day`: the prediction returns timestamp, the gold date (the values are equal once cast)"
APART = "2 rows missing, 1 extra (of 4 gold rows)"


def _write_suite(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "shop.sql").write_text(FIXTURE)
    lines = ["databases:", "  shop: shop.sql", "cases:"]
    for case_id, gold in GOLD.items():
        lines += [f"  - id: {case_id}", f"    question: What of {case_id}?", f"    gold_sql: {gold}"]
    (folder / "suite.yml").write_text("\n".join(lines) + "\n")
    (folder / "answers.json").write_text(json.dumps(PREDICTIONS))
    (folder / "agent.py").write_text(AGENT)
    return folder / "suite.yml"


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory, pg_dsn: str) -> tuple[Path, str]:
    """The run file and what `sqlcanary run --verbose` wrote on stderr."""
    folder = tmp_path_factory.mktemp("explained")
    suite = _write_suite(folder / "s")
    agent = f"command:{sys.executable} {suite.parent / 'agent.py'} {suite.parent / 'answers.json'}"
    out = folder / "run.json"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)  # no sqlcanary.yml around
        mp.delenv("DATABASE_URL", raising=False)
        err_file = folder / "stderr.txt"
        with err_file.open("w") as err, pytest.MonkeyPatch.context() as streams:
            streams.setattr(sys, "stderr", err)
            code = main(
                ["run", str(suite), "--agent", agent, "--dsn", pg_dsn, "--out", str(out), "--verbose"]
            )
    assert code == EXIT_OK  # no gate set: a failing case is reported, not a failed run
    return out, err_file.read_text()


def _report(run_file: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["report", str(run_file), "--format", fmt]) == EXIT_OK
    return capsys.readouterr().out


def test_a_timestamp_for_a_date_names_the_column_and_both_types_first(ran, capsys):
    run_file, err = ran
    days = next(c for c in read_run(run_file).cases if c.id == "days")
    assert days.status == "failed"  # VERDICTS.md: a date is not a timestamp at midnight
    assert days.reason.startswith(TYPES + "; ")
    assert days.verdicts["execution"].details["types"] == [
        {"column": "visit_day", "gold": "date", "prediction": "timestamp"}
    ]
    assert f"FAILED days: {TYPES}" in err  # the terminal's line, before any count
    assert f"**First difference:** {TYPES}; " in _report(run_file, "md", capsys)


def test_missing_and_extra_rows_are_counted_apart(ran):
    run_file, err = ran
    ids = next(c for c in read_run(run_file).cases if c.id == "ids")
    assert ids.status == "failed"
    assert APART in ids.reason
    assert "of 5 rows differ" not in ids.reason  # the one count that mixed them
    first = ids.verdicts["execution"].details["first_difference"]
    assert (first["missing"], first["extra"]) == (2, 1)
    assert f"FAILED ids: row count differs: gold has 4 rows, prediction has 3; {APART}" in err


@pytest.mark.parametrize("fmt", ["md", "summary", "html", "junit"])
def test_the_reports_of_a_run_show_the_gold_sql_of_each_failing_case(ran, capsys, fmt):
    """Before: only the prediction; the gold was in the suite, not in the run."""
    run_file, _ = ran
    text = _report(run_file, fmt, capsys)
    escaped = fmt in ("html", "junit")
    for case_id in ("days", "ids"):
        assert GOLD[case_id] in text, f"{fmt}: no gold SQL of {case_id}"
        assert PREDICTIONS[case_id].replace("<=", "&lt;=" if escaped else "<=") in text
    assert GOLD["names"] not in text  # a passing case's gold is not recorded


def test_junit_puts_the_gold_and_the_prediction_in_the_failures_text(ran, capsys):
    run_file, _ = ran
    text = _report(run_file, "junit", capsys)
    failure = text[text.index('name="ids"') :]
    failure = failure[: failure.index("</failure>")]
    assert f"gold:\n{GOLD['ids']}\nprediction:\n" in failure
    assert "SELECT id FROM customers WHERE id &lt;= 2 UNION ALL SELECT 9" in failure


def test_show_prints_the_first_rows_of_both_sides(ran, capsys):
    run_file, _ = ran
    capsys.readouterr()
    assert main(["show", str(run_file), "days"]) == EXIT_OK
    shown = capsys.readouterr().out
    block = shown[shown.index("rows (the first 5 of each side):") :]
    gold, pred = block.split("  prediction, ")
    assert "  gold, 6 rows:" in gold
    assert "visit_day (date)" in gold and "2026-01-02" in gold and "2026-01-06" in gold
    assert "2026-01-07" not in gold and "… 1 more row" in gold  # the first 5 rows, then how many more
    assert pred.startswith("6 rows:")
    assert "visit_day (timestamp)" in pred and "2026-01-02 00:00:00" in pred
    header, rule, first = (line.strip() for line in gold.splitlines()[2:5])
    assert len(header) == len(rule) and rule.startswith("---")  # an aligned table under its header


def test_show_of_a_run_without_recorded_rows_says_so(ran, capsys, tmp_path):
    """A run file written before the samples (and the gold) were recorded still loads."""
    run_file, _ = ran
    raw = json.loads(run_file.read_text())
    for case in raw["cases"]:
        case.pop("gold_sql", None)
        for verdict in case["verdicts"].values():
            verdict["details"].pop("samples", None)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(raw))
    capsys.readouterr()
    assert main(["show", str(old), "ids"]) == EXIT_OK
    shown = capsys.readouterr().out
    assert "rows: not recorded in this run" in shown
    assert GOLD["ids"] in shown  # still found in the run's suite, as before

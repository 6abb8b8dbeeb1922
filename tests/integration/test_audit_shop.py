"""`sqlcanary audit` on the init template's shop, on a real PostgreSQL: a planted wrong gold of each kind is
flagged with its evidence, a correct gold of each shape is not, bad input exits 2 naming it, `--strict` exits 1,
and `--format json` is the documented document."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from bot.base.results import CaseResult, Prediction, RunMeta, RunResult, Summary, write_run
from bot.cli import main

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SHOP_FIXTURE = REPO / "templates" / "init" / "fixtures" / "shop.sql"

CASES = [
    # planted wrong golds
    {
        "id": "empty",
        "question": "Orders placed in 2030?",
        "gold_sql": "SELECT id FROM orders WHERE ordered_at >= DATE '2030-01-01'",
    },
    {
        "id": "nulls",
        "question": "Revenue of 2030?",
        "gold_sql": "SELECT sum(amount) AS revenue FROM orders WHERE ordered_at >= DATE '2030-01-01'",
    },
    {
        "id": "tie-cut",
        "question": "The two customers with the most orders?",
        "gold_sql": "SELECT c.name FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.name ORDER BY count(*) DESC LIMIT 2",
    },
    {"id": "no-order", "question": "Any one customer?", "gold_sql": "SELECT name FROM customers LIMIT 1"},
    {
        "id": "distinct-on",
        "question": "One customer per country",
        "gold_sql": "SELECT DISTINCT ON (country) country, name FROM customers ORDER BY country",
    },
    {
        "id": "bad-literal",
        "question": "Customers in the US?",
        "gold_sql": "SELECT name FROM customers WHERE country = 'us'",
    },
    {
        "id": "alts-disagree",
        "question": "Customers in the US?",
        "gold_sql": [
            "SELECT name FROM customers WHERE country = 'US'",
            "SELECT name FROM customers WHERE country = 'UK'",
        ],
    },
    {
        "id": "outvoted",
        "question": "Customers outside the US?",
        "gold_sql": "SELECT name FROM customers WHERE country = 'US'",
    },
    # correct golds of the same shapes
    {
        "id": "unique-cut",
        "question": "The two biggest orders?",
        "gold_sql": "SELECT id, amount FROM orders ORDER BY amount DESC, id LIMIT 2",
    },
    {
        "id": "good-literal",
        "question": "Customers in the US or UK?",
        "gold_sql": "SELECT c.name FROM customers c WHERE c.country IN ('US', 'UK')",
    },
    {
        "id": "alts-agree",
        "question": "Customers in the US?",
        "gold_sql": [
            "SELECT name FROM customers WHERE country = 'US'",
            "SELECT c.name FROM customers AS c WHERE c.country IN ('US')",
        ],
    },
    {
        "id": "agreed",
        "question": "Customers in the US?",
        "gold_sql": "SELECT name FROM customers WHERE country = 'US'",
    },
]
CLEAN = {"unique-cut", "good-literal", "alts-agree", "agreed"}
OUTSIDE_US = "SELECT name FROM customers WHERE country <> 'US'"


def _suite(root: Path, cases: list[dict]) -> Path:
    (root / "fixtures").mkdir(parents=True)
    shutil.copy(SHOP_FIXTURE, root / "fixtures" / "shop.sql")
    doc = {"name": "audited", "databases": {"shop": "fixtures/shop.sql"}, "cases": cases}
    (root / "suite.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def _runs(folder: Path) -> list[str]:
    """Three saved runs: `outvoted` answered three ways alike (not the gold's), `agreed` like its gold; one answer
    is a write, which is refused, never run."""
    answers = [OUTSIDE_US, OUTSIDE_US, f"  {OUTSIDE_US} "]
    agreed = ["SELECT name FROM customers WHERE country = 'US'", "DROP TABLE customers", "SELECT 'Grace'"]
    paths = []
    for k in range(3):
        cases = (
            CaseResult(
                id="outvoted", status="failed", category="query", prediction=Prediction(sql=answers[k])
            ),
            CaseResult(id="agreed", status="passed", category="query", prediction=Prediction(sql=agreed[k])),
        )
        run = RunResult(meta=RunMeta(suite="audited", suite_hash="h"), summary=Summary(total=2), cases=cases)
        path = folder / f"run{k}.json"
        write_run(path, run)
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def audited(tmp_path_factory, pg_dsn):
    root = tmp_path_factory.mktemp("audit")
    suite = _suite(root / "suite", CASES)
    out = root / "audit.json"
    rc = main(
        [
            "audit",
            str(suite),
            "--dsn",
            pg_dsn,
            "--format",
            "json",
            "--out",
            str(out),
            "-q",
            "--runs",
            *_runs(root),
        ]
    )
    return rc, json.loads(out.read_text()), suite


def _by_case(report: dict) -> dict[str, dict[str, dict]]:
    found: dict[str, dict[str, dict]] = {}
    for s in report["suspects"]:
        found.setdefault(s["case_id"], {})[s["kind"]] = s
    return found


def test_audit_is_advisory_and_its_json_has_the_documented_fields(audited):
    rc, report, _ = audited
    assert rc == 0
    assert report["schema_version"] == 1 and report["suite"] == "audited" and report["audited"] == len(CASES)
    for s in report["suspects"]:
        assert set(s) >= {"case_id", "kind", "confidence", "message", "evidence"}
        assert s["confidence"] in ("high", "medium", "low")


def test_empty_and_null_golds_are_flagged_with_their_rows(audited):
    found = _by_case(audited[1])
    assert found["empty"]["empty_result"]["evidence"]["row_count"] == 0
    nulls = found["nulls"]["null_result"]["evidence"]
    assert nulls["rows"] == [[None]] and nulls["columns"] == ["revenue"]


def test_a_limit_through_a_real_tie_is_flagged_with_the_tied_rows(audited):
    ev = _by_case(audited[1])["tie-cut"]["order_ties"]["evidence"]
    # Grace has two orders; Ada, Linus and Margaret one each: LIMIT 2 keeps one of those three
    assert ev["boundary"] == "limit" and ev["tie_key"] == [1]
    tied = {r[0] for r in ev["kept"] + ev["left_out"]}
    assert tied == {"Ada", "Linus", "Margaret"} and len(ev["kept"]) == 1


def test_a_limit_without_order_by_and_a_tied_distinct_on_are_flagged(audited):
    found = _by_case(audited[1])
    assert found["no-order"]["order_ties"]["evidence"]["ordered"] is False
    ev = found["distinct-on"]["order_ties"]["evidence"]
    assert ev["boundary"] == "distinct on" and ev["tie_key"] == ["US"]
    assert {r[1] for r in ev["kept"] + ev["left_out"]} == {"Grace", "Margaret"}


def test_an_unknown_literal_names_the_column_and_the_nearest_values(audited):
    s = _by_case(audited[1])["bad-literal"]["unknown_literal"]
    assert s["confidence"] == "high"  # 'US' is the same value but for case
    assert s["evidence"]["literal"] == "us" and s["evidence"]["column"] == "customers.country"
    assert s["evidence"]["nearest"][0] == "US" and len(s["evidence"]["nearest"]) <= 5


def test_disagreeing_alternatives_are_flagged_with_their_differing_rows(audited):
    ev = _by_case(audited[1])["alts-disagree"]["alternatives_disagree"]["evidence"]
    assert ev["alternatives"] == [1, 2] and ev["row_counts"] == [2, 1]
    assert ev["only_in_second"] == [["Ada"]]


def test_answers_that_agree_against_the_gold_are_flagged(audited):
    ev = _by_case(audited[1])["outvoted"]["agreement_against_gold"]["evidence"]
    assert ev["agreeing"] == 3 and ev["answers"] == 3
    assert sorted(r[0] for r in ev["agreed_rows"]) == ["Ada", "Linus"]


def test_correct_golds_of_each_shape_are_not_flagged(audited):
    found = _by_case(audited[1])
    assert not CLEAN & set(found), {k: list(found[k]) for k in CLEAN & set(found)}
    assert set(found["bad-literal"]) == {"empty_result", "unknown_literal"}


def test_strict_exits_1_and_text_lists_each_suspect(audited, pg_dsn, capsys):
    suite = audited[2]
    assert main(["audit", str(suite), "--dsn", pg_dsn, "--strict", "-q", "--id", "tie-cut"]) == 1
    text = capsys.readouterr().out
    assert "tie-cut: order_ties [high]" in text and "left_out" in text
    assert main(["audit", str(suite), "--dsn", pg_dsn, "--strict", "-q", "--id", "unique-cut"]) == 0


def test_a_missing_suite_exits_2_naming_it(tmp_path, pg_dsn, capsys):
    missing = tmp_path / "nowhere"
    assert main(["audit", str(missing), "--dsn", pg_dsn]) == 2
    assert "nowhere" in capsys.readouterr().err


def test_an_unparsable_gold_exits_2_naming_file_line_and_case(tmp_path, pg_dsn, capsys):
    suite = _suite(tmp_path / "s", [{"id": "broken", "question": "?", "gold_sql": "SELECT FROM WHERE ((("}])
    assert main(["audit", str(suite), "--dsn", pg_dsn]) == 2
    err = capsys.readouterr().err
    assert "suite.yml:" in err and "broken" in err


def test_a_runs_file_that_is_not_a_run_exits_2_naming_it(tmp_path, pg_dsn, capsys):
    suite = _suite(tmp_path / "s", CASES[:1])
    bogus = tmp_path / "bogus.json"
    bogus.write_text("{}")
    assert main(["audit", str(suite), "--dsn", pg_dsn, "--runs", str(bogus)]) == 2
    assert "bogus.json" in capsys.readouterr().err

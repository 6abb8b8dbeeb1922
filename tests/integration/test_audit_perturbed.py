"""`sqlcanary audit --perturb K` (gold_fails_on_perturbed) on a real PostgreSQL: gold alternatives that agree on
the real data but are different readings (every customer happens to have one order: counting customers and
counting orders agree) are flagged on the perturbed copies a run builds, with the copy, its changes and the differing rows; true
rewrites are not; without copies (`--perturb 0`) nothing is flagged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bot.cli import main

pytestmark = pytest.mark.integration

FIXTURE = """
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL);
CREATE TABLE orders (id int PRIMARY KEY, customer_id int NOT NULL REFERENCES customers (id), amount numeric);
INSERT INTO customers VALUES (1, 'Ada'), (2, 'Grace'), (3, 'Linus');
INSERT INTO orders VALUES (10, 1, 5), (12, 2, 3), (13, 3, 9);
"""

CASES = [
    {
        "id": "readings",  # customers, or orders: one order each on the real data, a copy adds one more
        "question": "How many customers have placed an order?",
        "gold_sql": [
            "SELECT count(DISTINCT customer_id) AS n FROM orders",
            "SELECT count(*) AS n FROM orders",
        ],
    },
    {
        "id": "rewrites",  # the same reading written twice (customer_id is a NOT NULL foreign key)
        "question": "How many customers have placed an order?",
        "gold_sql": [
            "SELECT count(DISTINCT customer_id) AS n FROM orders",
            "SELECT count(DISTINCT c.id) AS n FROM customers c JOIN orders o ON o.customer_id = c.id",
        ],
    },
    {
        "id": "single",  # one gold: nothing to compare
        "question": "How many orders are there?",
        "gold_sql": "SELECT count(*) AS n FROM orders",
    },
]


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("perturbed_audit")
    (root / "shop.sql").write_text(FIXTURE)
    doc = {"name": "perturbed", "databases": {"shop": "shop.sql"}, "cases": CASES}
    (root / "suite.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def _audit(suite: Path, pg_dsn: str, out: Path, *extra: str) -> dict:
    argv = ["audit", str(suite), "--dsn", pg_dsn, "-q", "--format", "json", "--out", str(out), *extra]
    assert main(argv) == 0
    return json.loads(out.read_text())


def _kind(report: dict, kind: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for s in report["suspects"]:
        if s["kind"] == kind:
            out.setdefault(s["case_id"], []).append(s)
    return out


def test_alternatives_split_by_a_copy_are_flagged_with_the_copy_and_rows(suite, pg_dsn, tmp_path):
    report = _audit(suite, pg_dsn, tmp_path / "a.json", "--perturb", "3")
    flagged = _kind(report, "gold_fails_on_perturbed")
    assert set(flagged) == {"readings"}, flagged
    (s,) = flagged["readings"]
    ev = s["evidence"]
    assert s["confidence"] == "medium" and s["source"].startswith(str(suite / "suite.yml"))
    assert ev["alternatives"] == [1, 2] and 1 <= ev["copy"] <= 4
    assert ev["row_counts_real"] == [1, 1] and ev["row_counts_copy"] == [1, 1]
    (first,), (second,) = ev["only_in_first"], ev["only_in_second"]
    assert first[0] >= 3 and second[0] > first[0]  # copied orders of a customer count once, and each
    assert any("orders" in c for c in ev["changes"])
    # the real data do not separate them: no other detector flags the case
    assert [x["kind"] for x in report["suspects"] if x["case_id"] == "readings"] == [
        "gold_fails_on_perturbed"
    ]


def test_without_copies_nothing_is_compared(suite, pg_dsn, tmp_path):
    report = _audit(suite, pg_dsn, tmp_path / "a.json", "--perturb", "0")
    assert _kind(report, "gold_fails_on_perturbed") == {}


def test_the_configs_perturb_is_the_default(suite, pg_dsn, tmp_path):
    (tmp_path / "sqlcanary.yml").write_text(yaml.safe_dump({"suite": str(suite), "perturb": 2}))
    report = _audit(suite, pg_dsn, tmp_path / "a.json", "--config", str(tmp_path / "sqlcanary.yml"))
    assert set(_kind(report, "gold_fails_on_perturbed")) == {"readings"}


def test_a_perturb_out_of_range_exits_2_naming_the_flag(suite, pg_dsn, capsys):
    assert main(["audit", str(suite), "--dsn", pg_dsn, "-q", "--perturb", "99"]) == 2
    assert "--perturb" in capsys.readouterr().err

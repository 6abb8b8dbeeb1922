"""Reading a plan (bot/db/plans.py): its total cost, and the rows of its relation scans summed over the whole
tree, subplans included, scans of what another node produced left out; and the memo of estimates kept in the
cache folder (bot/run/query_cost.py): a cache whose unreadable or odd content is ignored, merged and bounded."""

from __future__ import annotations

import json

from bot.db.plans import Estimate, plan_estimate, scan_rows
from bot.run import query_cost
from bot.run.query_cost import CostMemo

NESTED = [
    {
        "Plan": {
            "Node Type": "Hash Join",
            "Total Cost": 1234.5,
            "Plan Rows": 7,
            "Plans": [
                {"Node Type": "Seq Scan", "Relation Name": "orders", "Plan Rows": 1000, "Total Cost": 500.0},
                {
                    "Node Type": "Hash",
                    "Plan Rows": 20,
                    "Plans": [
                        {
                            "Node Type": "Bitmap Heap Scan",
                            "Plan Rows": 20,
                            "Plans": [{"Node Type": "Bitmap Index Scan", "Plan Rows": 20}],
                        }
                    ],
                },
                {
                    "Node Type": "Aggregate",
                    "Parent Relationship": "InitPlan",
                    "Plan Rows": 1,
                    "Plans": [{"Node Type": "Index Only Scan", "Plan Rows": 3}],
                },
                {
                    "Node Type": "CTE Scan",  # what the CTE's own plan read is counted there
                    "Plan Rows": 50,
                    "Plans": [{"Node Type": "Index Scan", "Plan Rows": 5}],
                },
                {"Node Type": "Function Scan", "Plan Rows": 100},
                {
                    "Node Type": "Subquery Scan",
                    "Plan Rows": 9,
                    "Plans": [{"Node Type": "Tid Scan", "Plan Rows": 2}],
                },
            ],
        }
    }
]


def test_rows_are_summed_over_the_relation_scans_of_a_nested_plan():
    assert plan_estimate(NESTED) == Estimate(cost=1234.5, rows=1000 + 20 + 3 + 5 + 2)


def test_a_plan_without_scans_reads_nothing():
    assert plan_estimate([{"Plan": {"Node Type": "Result", "Total Cost": 0.01, "Plan Rows": 1}}]) == (
        0.01,
        0.0,
    )
    assert scan_rows({"Node Type": "Seq Scan"}) == 0.0


def test_the_memo_file_is_a_cache(tmp_path):
    path = tmp_path / "query-costs.json"
    for text in ("{not json", "[1, 2]", '"a string"'):
        path.write_text(text)
        assert CostMemo(path).get("tpl", "SELECT 1") is None
    memo = CostMemo(path)
    memo.put("tpl", "SELECT 1", Estimate(1.5, 3.0))
    memo.save()
    good = json.loads(path.read_text())
    assert len(good) == 1 and not list(tmp_path.glob("*.tmp"))
    key = next(iter(good))
    odd = {key: good[key], "b": [1], "c": ["1", 2], "d": [True, 1], "e": [-1, 2], "f": {"x": 1}}
    path.write_text(json.dumps(odd))
    assert CostMemo(path).get("tpl", "SELECT 1") == Estimate(1.5, 3.0)
    assert CostMemo(path).get("tpl", "SELECT 2") is None
    assert CostMemo(path).get("other-template", "SELECT 1") is None, "keyed by the template too"


def test_saving_merges_with_the_file_and_keeps_the_newest(tmp_path, monkeypatch):
    monkeypatch.setattr(query_cost, "MAX_KEPT", 3)
    path = tmp_path / "cache" / "query-costs.json"
    first, second = CostMemo(path), CostMemo(path)
    for i in range(2):
        first.put("tpl", f"SELECT {i}", Estimate(float(i), 1.0))
    first.save()
    for i in range(2, 4):
        second.put("tpl", f"SELECT {i}", Estimate(float(i), 1.0))
    second.save()  # another run's estimates, written meanwhile, are kept beside these
    again = CostMemo(path)
    assert [again.get("tpl", f"SELECT {i}") for i in range(4)] == [
        None,
        Estimate(1.0, 1.0),
        Estimate(2.0, 1.0),
        Estimate(3.0, 1.0),
    ], "at most MAX_KEPT, the oldest dropped"
    unchanged = path.stat().st_mtime_ns
    CostMemo(path).save()
    assert path.stat().st_mtime_ns == unchanged, "a run that explained nothing does not write"

"""Reading a plan of `EXPLAIN (FORMAT JSON)` (nothing ran): its total cost, and the rows its scans of relations
read as the planner estimates them.

The rows are the "Plan Rows" of every scan that reads a table (a sequential, index, index-only, bitmap heap,
TID or foreign scan, parallel or not: a parallel scan has the same node type), summed over the whole plan,
its subplans included. Scans over what another node produced (a CTE, a subquery, a function, VALUES) are not
counted: what they read was counted where it was scanned. A scan's "Plan Rows" are the rows it returns per
execution, after its filter; that is the planner's estimate a plan gives without running it.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

RELATION_SCANS = frozenset(
    {
        "Seq Scan",
        "Sample Scan",
        "Index Scan",
        "Index Only Scan",
        "Bitmap Heap Scan",
        "Tid Scan",
        "Tid Range Scan",
        "Foreign Scan",
    }
)


class Estimate(NamedTuple):
    """The planner's estimate of one query: its plan's total cost and the rows its relation scans read."""

    cost: float
    rows: float


def plan_estimate(explained: Any) -> Estimate:
    """The Estimate of EXPLAIN (FORMAT JSON)'s output (a list holding one {"Plan": ...})."""
    top = explained[0]["Plan"]
    return Estimate(cost=float(top["Total Cost"]), rows=scan_rows(top))


def scan_rows(node: dict[str, Any]) -> float:
    """The "Plan Rows" of the relation scans in `node` and every node under it."""
    total = 0.0
    stack = [node]
    while stack:
        n = stack.pop()
        if n.get("Node Type") in RELATION_SCANS:
            total += float(n.get("Plan Rows") or 0)
        stack.extend(n.get("Plans") or ())
    return total


class PlanMemo(Protocol):
    """What a run keeps of the estimates it has read on one database, by the query's text (bot/run/query_cost.py:
    the same text on the same template is planned the same)."""

    def get(self, sql: str) -> Estimate | None: ...

    def put(self, sql: str, estimate: Estimate) -> None: ...

"""`gold_error`, `empty_result` and `null_result`: a gold that does not run, returns no rows, or returns only NULLs
judges almost nothing (most wrong predictions return the same)."""

from __future__ import annotations

from bot.audit.context import CaseAudit
from bot.audit.model import Suspect, plain_rows


def _which(alternatives: list[int], total: int) -> str:
    if total == 1:
        return "the gold"
    if len(alternatives) == total:
        return f"every gold alternative ({total})"
    return "gold alternative " + ", ".join(f"#{i + 1}" for i in alternatives)


def detect_results(audit: CaseAudit) -> list[Suspect]:
    total = len(audit.golds)
    failed = [i for i, g in enumerate(audit.golds) if not g.ok]
    out: list[Suspect] = []
    if failed:
        errors = {f"#{i + 1}": audit.golds[i].error for i in failed}
        out.append(
            audit.suspect(
                "gold_error",
                "high",
                f"{_which(failed, total)} fails on the fixture: {audit.golds[failed[0]].error}",
                {"errors": errors},
            )
        )
    ran = [(i, g.result) for i, g in enumerate(audit.golds) if g.ok and g.result is not None]
    empty = [i for i, r in ran if not r.rows]
    if empty:
        out.append(
            audit.suspect(
                "empty_result",
                "high" if len(empty) == total else "medium",
                f"{_which(empty, total)} returns no rows: any prediction that finds nothing passes",
                {"alternatives": [i + 1 for i in empty], "row_count": 0},
            )
        )
    nulls = [(i, r) for i, r in ran if r.rows and all(v is None for row in r.rows for v in row)]
    if nulls:
        first = nulls[0][1]
        out.append(
            audit.suspect(
                "null_result",
                "high" if len(nulls) == total else "medium",
                f"{_which([i for i, _ in nulls], total)} returns only NULLs ({len(first.rows)} row(s)): "
                "an aggregate over no rows, or a join that matched nothing",
                {
                    "alternatives": [i + 1 for i, _ in nulls],
                    "row_count": len(first.rows),
                    "columns": list(first.columns),
                    "rows": plain_rows(first.rows),
                },
            )
        )
    return out

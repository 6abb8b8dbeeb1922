"""`agreement_against_gold`: earlier runs' answers for a case (`--runs`: runs, repeats, sweep legs) that mostly
agree with each other on a result the gold does not accept: when most answers agree, the answer key may be the
one that is wrong. A RunResult keeps predictions, not their rows: each distinct prediction runs again here, as a
prediction runs in a case (one query, in the case's read-only transaction, guarded)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bot.audit.context import CaseAudit
from bot.audit.model import Suspect, plain_rows
from bot.base.results import ResultSet, read_run
from bot.db.statements import UnsafeSQL
from bot.run.query_cases import as_compared, judge_pair, query_text

MIN_AGREEING = 3  # answers that must agree before their shared result counts against the gold


def answers_from_runs(paths: Iterable[str | Path]) -> dict[str, tuple[str, ...]]:
    """Each case's predicted SQL across the saved runs (every attempt of a repeated run), read with the project's
    reader (a file that is not a RunResult stops the audit with its name)."""
    out: dict[str, list[str]] = {}
    for path in paths:
        run = read_run(path)
        for case in run.cases:
            sqls = [a.sql for a in case.attempts] if case.attempts else [case.prediction.sql]
            out.setdefault(case.id, []).extend(s for s in sqls if s)
    return {k: tuple(v) for k, v in out.items()}


@dataclass
class _Cluster:
    sql: str
    result: ResultSet
    size: int = 1


def _same(audit: CaseAudit, a_sql: str, a: ResultSet, b_sql: str, b: ResultSet) -> bool:
    """One answer's result accepts the other's, either way round, as the case compares results."""
    return bool(
        judge_pair(audit.session, audit.case, a_sql, a, b_sql, b, audit.options).match
        or judge_pair(audit.session, audit.case, b_sql, b, a_sql, a, audit.options).match
    )


def _clusters(audit: CaseAudit) -> tuple[list[_Cluster], int]:
    """The answers grouped by result (each distinct SQL run once), and how many answers ran."""
    ran: dict[str, ResultSet | None] = {}
    clusters: list[_Cluster] = []
    counted = 0
    for sql in audit.answers:
        if sql not in ran:
            try:
                text = as_compared(query_text(sql), audit.options)
            except UnsafeSQL:
                ran[sql] = None
                continue
            out = audit.fetch(text)
            ran[sql] = out.result if out.ok and out.result is not None and not out.result.truncated else None
        result = ran[sql]
        if result is None:
            continue
        counted += 1
        text = as_compared(sql, audit.options)
        home = next((c for c in clusters if _same(audit, c.sql, c.result, text, result)), None)
        if home is None:
            clusters.append(_Cluster(sql=text, result=result))
        else:
            home.size += 1
    return clusters, counted


def detect_agreement(audit: CaseAudit) -> list[Suspect]:
    if len(audit.answers) < MIN_AGREEING or not audit.golds or not all(g.ok for g in audit.golds):
        return []
    clusters, counted = _clusters(audit)
    if not clusters:
        return []
    top = max(clusters, key=lambda c: c.size)
    if top.size < MIN_AGREEING or top.size * 2 <= len(audit.answers):
        return []
    for i in range(len(audit.golds)):
        gold = audit.gold(i)
        assert gold is not None
        if judge_pair(
            audit.session, audit.case, audit.gold_sql(i), gold, top.sql, top.result, audit.options, i
        ).match:
            return []
    gold = audit.gold()
    assert gold is not None
    return [
        audit.suspect(
            "agreement_against_gold",
            "high" if top.size * 3 >= len(audit.answers) * 2 and top.size >= 5 else "medium",
            f"{top.size} of {len(audit.answers)} answers from the given runs agree on a result the gold does not "
            f"accept ({len(top.result.rows)} row(s) vs the gold's {len(gold.rows)})",
            {
                "agreeing": top.size,
                "answers": len(audit.answers),
                "answers_run": counted,
                "agreed_sql": top.sql,
                "agreed_row_count": len(top.result.rows),
                "agreed_columns": list(top.result.columns),
                "agreed_rows": plain_rows(top.result.rows),
                "gold_row_count": len(gold.rows),
                "gold_columns": list(gold.columns),
                "gold_rows": plain_rows(gold.rows),
            },
        )
    ]

"""Executing one case's gold and prediction on a Session and asking the scorers: the per-case core of a run,
by the case's category (query_cases, write_cases, efficiency_cases; their outcome is an Evaluation)."""

from __future__ import annotations

from bot.cases.model import Case, CompareOptions
from bot.db.session import Session
from bot.run.efficiency_cases import evaluate_efficiency
from bot.run.evaluation import Evaluation, ScratchFactory
from bot.run.query_cases import evaluate_query
from bot.run.write_cases import evaluate_write


def evaluate_case(
    case: Case,
    pred_sql: str,
    session: Session,
    *,
    options: CompareOptions,
    scratch: ScratchFactory | None = None,
) -> Evaluation:
    if case.category == "management":
        return evaluate_write(case, pred_sql, session, scratch=scratch)
    if case.category == "efficiency":
        return evaluate_efficiency(case, pred_sql, session, options=options, scratch=scratch)
    return evaluate_query(case, pred_sql, session, options=options)

"""Evaluating an efficiency case: the prediction's plan cost against the gold's (or a slow reference
query's) once its results match; for an index case, the cost of `explain_sql` before and after the prediction."""

from __future__ import annotations

from bot.cases.model import Case, CompareOptions
from bot.db.session import Session
from bot.db.statements import UnsafeSQL, write_statements
from bot.run.evaluation import Evaluation, NeedsScratch, ScratchFactory, as_invalid, as_refused, from_verdict
from bot.run.query_cases import evaluate_query, query_text
from bot.run.write_cases import run_checks, run_statements
from bot.scoring.qep import qep_verdict
from bot.scoring.tcv import tcv_verdict


def evaluate_efficiency(
    case: Case, pred_sql: str, session: Session, *, options: CompareOptions, scratch: ScratchFactory | None
) -> Evaluation:
    eff = case.efficiency
    assert eff is not None
    if eff.explain_sql:
        return _evaluate_index(case, pred_sql, session)
    ev = evaluate_query(case, pred_sql, session, options=options)
    if ev.status == "invalid" or "execution" not in ev.verdicts:
        return ev
    execution = ev.verdicts["execution"]
    if execution.kind in ("pred_error", "pred_refused"):
        v = qep_verdict(
            results_match=False,
            pred_cost=None,
            reference_cost=None,
            threshold=eff.threshold,
            strictly_cheaper=False,
            reference="",
            error=execution.message,
        )
        return from_verdict("qep", {"qep": v, "execution": execution}, error_class=ev.error_class)
    ref_sql = eff.reference_sql or case.gold_sql[0]
    session.begin(read_only=True)
    try:
        pred_cost, perr = session.explain_cost(query_text(pred_sql))
        ref_cost, rerr = session.explain_cost(ref_sql)
    finally:
        session.rollback()
    if rerr:
        return as_invalid(f"the reference query cannot be explained: {rerr}", {"execution": execution})
    v = qep_verdict(
        results_match=execution.match,
        pred_cost=pred_cost,
        reference_cost=ref_cost,
        threshold=eff.threshold,
        strictly_cheaper=eff.reference_sql is not None,
        reference="the slow query" if eff.reference_sql else "the gold",
        error=perr,
    )
    return from_verdict("qep", {"qep": v, "execution": execution})


def _evaluate_index(case: Case, pred_sql: str, session: Session) -> Evaluation:
    eff = case.efficiency
    assert eff is not None and eff.explain_sql
    try:
        stmts = write_statements(pred_sql)
    except UnsafeSQL as exc:
        return as_refused("qep", exc)
    session.begin(read_only=False)
    try:
        before, err = session.explain_cost(eff.explain_sql)
        if err:
            return as_invalid(f"efficiency.explain_sql cannot be explained: {err}")
        fail = run_statements(session, stmts)
        if fail is not None:
            v = qep_verdict(
                results_match=None,
                pred_cost=None,
                reference_cost=before,
                threshold=eff.threshold,
                strictly_cheaper=True,
                reference="the plan before",
                error=f"the prediction failed: {fail.error}",
            )
            return from_verdict("qep", {"qep": v}, error_class=fail.error_class)
        after, err = session.explain_cost(eff.explain_sql)
        checks = run_checks(session, case) if case.checks else []
    except NeedsScratch as exc:
        return as_invalid(
            f"the prediction needs to run outside a transaction ({exc}); index cases run in one"
        )
    finally:
        session.rollback()
        session.restore_sequences()
    verdicts = {
        "qep": qep_verdict(
            results_match=None,
            pred_cost=after,
            reference_cost=before,
            threshold=eff.threshold,
            strictly_cheaper=True,
            reference="the plan before the change",
            error=err,
        )
    }
    if checks:
        verdicts["tcv"] = tcv_verdict(checks, gold=None)
        if verdicts["tcv"].match is False:
            return from_verdict("tcv", verdicts)
    return from_verdict("qep", verdicts)

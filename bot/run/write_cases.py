"""Evaluating a write case: setup, gold and checks, then (after rolling back to a savepoint) setup, prediction
and checks, all rolled back; statements that cannot run in a transaction fall back to a scratch clone of the
template."""

from __future__ import annotations

from bot.cases.model import Case
from bot.db.schema_state import SchemaState, schema_state
from bot.db.session import Outcome, Session
from bot.db.statements import UnsafeSQL, write_statements
from bot.run.evaluation import (
    Evaluation,
    GoldFailed,
    NeedsScratch,
    ScratchFactory,
    as_invalid,
    as_refused,
    from_verdict,
)
from bot.scoring.execution import error_verdict
from bot.scoring.tcv import CheckOutcome, judge_check, tcv_verdict


def run_statements(session: Session, stmts: list[str]) -> Outcome | None:
    """The first failing statement's outcome, or None when all ran. Raises NeedsScratch."""
    for stmt in stmts:
        out = session.execute(stmt)
        if not out.ok:
            if out.error_class == "needs_autocommit":
                raise NeedsScratch(out.error)
            return out
    return None


def _case_statements(sql: str, what: str) -> list[str]:
    """The suite's own SQL (setup, a write gold) under the same rules as a prediction: split into statements,
    transaction control and the guarded settings refused. A suite comes from the pull request too."""
    try:
        return write_statements(sql)
    except UnsafeSQL as exc:
        raise GoldFailed(f"{what}: {exc}") from None


def run_checks(session: Session, case: Case) -> list[CheckOutcome]:
    """Each check, one query, read from the guard settings (Session.fetch resets what the SQL before it set)."""
    outs = []
    for chk in case.checks:
        out = session.fetch(chk.sql, savepoint=session.in_transaction())
        outs.append(CheckOutcome(check=chk, result=out.result, error=out.error))
    return outs


def _setup(case: Case, session: Session) -> None:
    for sql in case.setup_sql:
        session.fresh()
        fail = run_statements(session, _case_statements(sql, "setup_sql"))
        if fail:
            raise GoldFailed(f"setup_sql failed: {fail.error}")


def _same_transaction(session: Session, before: SchemaState, after: SchemaState) -> None:
    """The case's SQL runs through the guard functions, which cannot end a transaction; this makes sure of it."""
    if not session.direct and before.transaction != after.transaction:
        raise GoldFailed("the case's transaction was ended by its SQL; nothing it did can be judged")


def _gold_phase(case: Case, session: Session) -> tuple[list[CheckOutcome], bool]:
    """The gold's checks, and whether the gold changes the schema (a case about DDL)."""
    _setup(case, session)
    before = schema_state(session)
    for gold in case.gold_sql[:1]:
        session.fresh()
        fail = run_statements(session, _case_statements(gold, "the gold"))
        if fail:
            raise GoldFailed(fail.error)
    after = schema_state(session)
    _same_transaction(session, before, after)
    outs = run_checks(session, case)
    if case.gold_sql:
        for i, out in enumerate(outs):
            if out.check.expect != "gold":
                ok, why = judge_check(out, gold=None)
                if not ok:
                    raise GoldFailed(f"the gold does not pass its own check #{i + 1}: {why}")
    return outs, before.schema != after.schema


def _pred_phase(
    case: Case, session: Session, stmts: list[str], *, ddl: bool
) -> tuple[list[CheckOutcome], Outcome | None]:
    _setup(case, session)
    before = schema_state(session)
    session.fresh()
    fail = run_statements(session, stmts)
    if fail:
        return [], fail
    after = schema_state(session)
    _same_transaction(session, before, after)
    if after.schema != before.schema and not ddl:
        return [], Outcome(error=SCHEMA_CHANGED, error_class="schema_changed")
    return run_checks(session, case), None


SCHEMA_CHANGED = (
    "the prediction changes the schema (a table, view, column, policy or function) where the gold does not: "
    "its checks could read what it built instead of what it changed, so it is not judged by them"
)


def evaluate_write(
    case: Case, pred_sql: str, session: Session, *, scratch: ScratchFactory | None
) -> Evaluation:
    try:
        stmts = write_statements(pred_sql)
    except UnsafeSQL as exc:
        return as_refused("tcv", exc)
    if not case.checks:
        return as_invalid("a case that writes needs `checks` to judge the prediction")
    session.begin(read_only=False)
    try:
        session.savepoint("sqlcanary_gold")
        gold_checks, ddl = _gold_phase(case, session)
        session.rollback_to("sqlcanary_gold")
        session.restore_sequences()
        pred_checks, fail = _pred_phase(case, session, stmts, ddl=ddl)
    except GoldFailed as exc:
        return as_invalid(f"the gold failed: {exc}")
    except NeedsScratch:
        session.rollback()
        session.restore_sequences()
        if scratch is None:
            return as_invalid(
                "a statement cannot run inside a transaction and no scratch database is available"
            )
        return _evaluate_write_in_scratch(case, stmts, scratch)
    finally:
        session.rollback()
        session.restore_sequences()
    if fail is not None:
        v = error_verdict("tcv", error=fail.error or "", error_class=fail.error_class)
        return from_verdict("tcv", {"tcv": v})
    return from_verdict("tcv", {"tcv": tcv_verdict(pred_checks, gold=gold_checks)})


def _evaluate_write_in_scratch(case: Case, stmts: list[str], scratch: ScratchFactory) -> Evaluation:
    try:
        with scratch(case.db) as s:
            gold_checks, ddl = _gold_phase(case, s)
        with scratch(case.db) as s:
            pred_checks, fail = _pred_phase(case, s, stmts, ddl=ddl)
    except GoldFailed as exc:
        return as_invalid(f"the gold failed: {exc}")
    except NeedsScratch as exc:
        return as_invalid(f"cannot run in a scratch database either: {exc}")
    if fail is not None:
        return from_verdict(
            "tcv", {"tcv": error_verdict("tcv", error=fail.error or "", error_class=fail.error_class)}
        )
    v = tcv_verdict(pred_checks, gold=gold_checks)
    v = v.model_copy(update={"flags": (*v.flags, "scratch_database")})
    return from_verdict("tcv", {"tcv": v})

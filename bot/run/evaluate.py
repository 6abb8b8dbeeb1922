"""Executing one case's gold and prediction on a Session and asking the scorers: the per-case core of a run.

Query cases: gold and prediction in one read-only repeatable-read transaction, rolled back.
Write cases: setup, gold and checks, then (after rolling back to a savepoint) setup, prediction and checks, all
rolled back; statements that cannot run in a transaction fall back to a scratch clone of the template.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from bot.base.results import Status, Verdict
from bot.cases.model import Case, CompareOptions
from bot.db.session import Outcome, Session
from bot.db.statements import UnsafeSQL, write_statements
from bot.scoring.execution import error_verdict, judge_results, wants_order
from bot.scoring.order import key_positions, with_limit, with_order_keys, without_distinct
from bot.scoring.qep import qep_verdict
from bot.scoring.tables import OrderCheck
from bot.scoring.tcv import CheckOutcome, tcv_verdict

# Statements refused early in a query case, with a clear reason (anything else goes to the server, which refuses
# all but a single query anyway).
NOT_QUERIES = {
    "INSERT",
    "UPDATE",
    "DELETE",
    "MERGE",
    "TRUNCATE",
    "DROP",
    "CREATE",
    "ALTER",
    "COPY",
    "GRANT",
    "REVOKE",
    "SET",
    "RESET",
    "COMMIT",
    "ROLLBACK",
    "BEGIN",
    "START",
    "END",
    "ABORT",
    "SAVEPOINT",
    "RELEASE",
    "VACUUM",
    "ANALYZE",
    "CLUSTER",
    "REINDEX",
    "LOCK",
    "DO",
    "CALL",
    "PREPARE",
    "EXECUTE",
    "DEALLOCATE",
    "DISCARD",
    "LISTEN",
    "NOTIFY",
    "LOAD",
    "COMMENT",
    "SECURITY",
    "REFRESH",
    "IMPORT",
    "CHECKPOINT",
    "REASSIGN",
}
ScratchFactory = Callable[[str], AbstractContextManager[Session]]


@dataclass(frozen=True)
class Evaluation:
    status: Status
    verdicts: dict[str, Verdict]
    deciding: str | None
    reason: str
    error_class: str | None = None
    alternative: int | None = None
    timings: dict[str, float] = field(default_factory=dict)


class _GoldFailed(Exception):
    pass


class _NeedsScratch(Exception):
    pass


def _invalid(reason: str, verdicts: dict[str, Verdict] | None = None) -> Evaluation:
    return Evaluation(
        status="invalid", verdicts=verdicts or {}, deciding=None, reason=reason, error_class="gold_error"
    )


def _refused(scorer: str, exc: UnsafeSQL) -> Evaluation:
    v = Verdict(
        scorer=scorer,
        match=False,
        kind="pred_refused",
        message=f"the prediction was refused: {exc}",
        details={"error_class": exc.error_class},
    )
    return Evaluation(
        status="failed", verdicts={scorer: v}, deciding=scorer, reason=v.message, error_class=exc.error_class
    )


def _from_verdict(scorer: str, verdicts: dict[str, Verdict], *, error_class: str | None = None) -> Evaluation:
    v = verdicts[scorer]
    if v.match is True:
        return Evaluation(
            status="passed",
            verdicts=verdicts,
            deciding=scorer,
            reason="",
            alternative=v.details.get("alternative"),
        )
    if v.match is None:
        return Evaluation(
            status="invalid",
            verdicts=verdicts,
            deciding=scorer,
            reason=v.message,
            error_class=error_class or v.kind,
        )
    return Evaluation(
        status="failed",
        verdicts=verdicts,
        deciding=scorer,
        reason=v.message,
        error_class=error_class or v.details.get("error_class"),
    )


_LEAD = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/|\()*(\w*)", re.S)


def _query_text(pred_sql: str) -> str:
    """A cheap early refusal with a clear reason; the server still refuses anything but one query."""
    m = _LEAD.match(pred_sql)
    lead = m.group(1).upper() if m else ""
    if not lead:
        raise UnsafeSQL("the prediction is empty", error_class="empty")
    if lead in NOT_QUERIES:
        raise UnsafeSQL(
            f"a query case takes one SELECT; the prediction is a {lead} statement", error_class="not_a_query"
        )
    return pred_sql


def _runs(session: Session, gold_sql: str, n_keys: int, n_rows: int) -> tuple[int, ...] | None:
    """Lengths of the gold's runs of equal ORDER BY keys, from the gold with its keys appended as outputs."""
    probe_sql = with_order_keys(gold_sql)
    if probe_sql is None:
        return None
    probe = session.fetch(probe_sql, untrusted=False, savepoint=True)
    if not probe.ok or probe.result is None or probe.result.truncated or len(probe.result.rows) != n_rows:
        return None
    runs: list[int] = []
    last: object = object()
    for row in probe.result.rows:
        key = row[-n_keys:]
        if runs and key == last:
            runs[-1] += 1
        else:
            runs.append(1)
        last = key
    return tuple(runs)


def _order_check(
    session: Session, gold_sql: str, gold_rows, columns, options: CompareOptions
) -> OrderCheck | None:
    info = wants_order(gold_sql, options)
    if info is None:
        return None
    if not info.keys:
        return OrderCheck(key_positions=None)
    positions = key_positions(gold_sql, info, columns)
    if positions is None:
        return OrderCheck(key_positions=None, runs=_runs(session, gold_sql, len(info.keys), len(gold_rows)))
    tie_cut = False
    if positions is not None and info.limit is not None and len(gold_rows) == info.limit and gold_rows:
        probe_sql = with_limit(gold_sql, info.limit + 1)
        if probe_sql:
            probe = session.fetch(probe_sql, untrusted=False, savepoint=True)
            if probe.ok and probe.result and len(probe.result.rows) > info.limit:
                rows = probe.result.rows
                tie_cut = tuple(rows[-1][i] for i in positions) == tuple(rows[-2][i] for i in positions)
    return OrderCheck(key_positions=positions, tie_cut=tie_cut)


def _compare_alternatives(
    case: Case, session: Session, pred_text: str, options: CompareOptions
) -> tuple[dict[str, Verdict], Outcome | None]:
    """Run the gold alternatives (and the prediction once) until one matches. Raises _GoldFailed."""
    first: Verdict | None = None
    pred: Outcome | None = None
    gold_errors: list[str] = []
    multi = len(case.gold_sql) > 1
    strip = bool(options.strip_distinct) or options.preset == "test_suite"
    if strip:
        pred_text = without_distinct(pred_text)
    for idx, gold_sql in enumerate(case.gold_sql):
        gold_sql = without_distinct(gold_sql) if strip else gold_sql
        gold = session.fetch(gold_sql, untrusted=False, savepoint=multi)
        if not gold.ok:
            gold_errors.append(f"gold #{idx + 1}: {gold.error}")
            continue
        if pred is None:
            pred = session.fetch(pred_text, untrusted=True)
            if not pred.ok:
                return {
                    "execution": error_verdict(
                        "execution", error=pred.error or "", error_class=pred.error_class
                    )
                }, pred
        assert gold.result is not None and pred.result is not None
        order = _order_check(session, gold_sql, gold.result.rows, gold.result.columns, options)
        verdict = judge_results(
            gold.result,
            pred.result,
            options=options,
            gold_sql=gold_sql,
            question=case.question,
            pred_sql=pred_text,
            order=order,
            alternative=idx,
        )
        if verdict.match:
            return {"execution": verdict}, pred
        first = first or verdict
    if first is None or gold_errors:
        # A gold alternative that fails is a broken suite, never "the prediction is wrong".
        raise _GoldFailed("; ".join(gold_errors) or "no gold query")
    return {"execution": first}, pred


def evaluate_query(case: Case, pred_sql: str, session: Session, *, options: CompareOptions) -> Evaluation:
    refused: UnsafeSQL | None = None
    try:
        pred_text = _query_text(pred_sql)
    except UnsafeSQL as exc:
        pred_text, refused = "", exc
    session.begin(read_only=True)
    try:
        if refused is not None:
            gold = session.fetch(case.gold_sql[0], untrusted=False)
            return (
                _invalid(f"the gold failed: {gold.error}") if not gold.ok else _refused("execution", refused)
            )
        verdicts, _ = _compare_alternatives(case, session, pred_text, options)
    except _GoldFailed as exc:
        return _invalid(f"the gold failed: {exc}")
    finally:
        session.rollback()
    return _from_verdict("execution", verdicts)


def _run_statements(session: Session, stmts: list[str], *, untrusted: bool) -> Outcome | None:
    """The first failing statement's outcome, or None when all ran. Raises _NeedsScratch."""
    for stmt in stmts:
        out = session.execute(stmt, untrusted=untrusted)
        if not out.ok:
            if out.error_class == "needs_autocommit":
                raise _NeedsScratch(out.error)
            return out
    return None


def _run_checks(session: Session, case: Case) -> list[CheckOutcome]:
    outs = []
    for chk in case.checks:
        out = session.fetch(chk.sql, untrusted=False, savepoint=session.in_transaction())
        outs.append(CheckOutcome(check=chk, result=out.result, error=out.error))
    return outs


def _gold_phase(case: Case, session: Session) -> list[CheckOutcome]:
    fail = _run_statements(session, list(case.setup_sql), untrusted=False)
    if fail:
        raise _GoldFailed(f"setup_sql failed: {fail.error}")
    for gold in case.gold_sql[:1]:
        fail = _run_statements(session, write_statements(gold), untrusted=False)
        if fail:
            raise _GoldFailed(fail.error)
    outs = _run_checks(session, case)
    if case.gold_sql:
        for i, out in enumerate(outs):
            if out.check.expect != "gold":
                from bot.scoring.tcv import judge_check

                ok, why = judge_check(out, gold=None)
                if not ok:
                    raise _GoldFailed(f"the gold does not pass its own check #{i + 1}: {why}")
    return outs


def _pred_phase(case: Case, session: Session, stmts: list[str]) -> tuple[list[CheckOutcome], Outcome | None]:
    fail = _run_statements(session, list(case.setup_sql), untrusted=False)
    if fail:
        raise _GoldFailed(f"setup_sql failed: {fail.error}")
    fail = _run_statements(session, stmts, untrusted=True)
    if fail:
        return [], fail
    return _run_checks(session, case), None


def evaluate_write(
    case: Case, pred_sql: str, session: Session, *, scratch: ScratchFactory | None
) -> Evaluation:
    try:
        stmts = write_statements(pred_sql)
    except UnsafeSQL as exc:
        return _refused("tcv", exc)
    if not case.checks:
        return _invalid("a case that writes needs `checks` to judge the prediction")
    session.begin(read_only=False)
    try:
        session.savepoint("sqlcanary_gold")
        gold_checks = _gold_phase(case, session)
        session.rollback_to("sqlcanary_gold")
        session.restore_sequences()
        pred_checks, fail = _pred_phase(case, session, stmts)
    except _GoldFailed as exc:
        return _invalid(f"the gold failed: {exc}")
    except _NeedsScratch:
        session.rollback()
        session.restore_sequences()
        if scratch is None:
            return _invalid(
                "a statement cannot run inside a transaction and no scratch database is available"
            )
        return _evaluate_write_in_scratch(case, stmts, scratch)
    finally:
        session.rollback()
        session.restore_sequences()
    if fail is not None:
        v = error_verdict("tcv", error=fail.error or "", error_class=fail.error_class)
        return _from_verdict("tcv", {"tcv": v})
    return _from_verdict("tcv", {"tcv": tcv_verdict(pred_checks, gold=gold_checks)})


def _evaluate_write_in_scratch(case: Case, stmts: list[str], scratch: ScratchFactory) -> Evaluation:
    try:
        with scratch(case.db) as s:
            gold_checks = _gold_phase(case, s)
        with scratch(case.db) as s:
            pred_checks, fail = _pred_phase(case, s, stmts)
    except _GoldFailed as exc:
        return _invalid(f"the gold failed: {exc}")
    except _NeedsScratch as exc:
        return _invalid(f"cannot run in a scratch database either: {exc}")
    if fail is not None:
        return _from_verdict(
            "tcv", {"tcv": error_verdict("tcv", error=fail.error or "", error_class=fail.error_class)}
        )
    v = tcv_verdict(pred_checks, gold=gold_checks)
    v = v.model_copy(update={"flags": (*v.flags, "scratch_database")})
    return _from_verdict("tcv", {"tcv": v})


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
        return _from_verdict("qep", {"qep": v, "execution": execution}, error_class=ev.error_class)
    ref_sql = eff.reference_sql or case.gold_sql[0]
    session.begin(read_only=True)
    try:
        pred_cost, perr = session.explain_cost(_query_text(pred_sql), untrusted=True)
        ref_cost, rerr = session.explain_cost(ref_sql, untrusted=False)
    finally:
        session.rollback()
    if rerr:
        return _invalid(f"the reference query cannot be explained: {rerr}", {"execution": execution})
    v = qep_verdict(
        results_match=execution.match,
        pred_cost=pred_cost,
        reference_cost=ref_cost,
        threshold=eff.threshold,
        strictly_cheaper=eff.reference_sql is not None,
        reference="the slow query" if eff.reference_sql else "the gold",
        error=perr,
    )
    return _from_verdict("qep", {"qep": v, "execution": execution})


def _evaluate_index(case: Case, pred_sql: str, session: Session) -> Evaluation:
    eff = case.efficiency
    assert eff is not None and eff.explain_sql
    try:
        stmts = write_statements(pred_sql)
    except UnsafeSQL as exc:
        return _refused("qep", exc)
    session.begin(read_only=False)
    try:
        before, err = session.explain_cost(eff.explain_sql, untrusted=False)
        if err:
            return _invalid(f"efficiency.explain_sql cannot be explained: {err}")
        fail = _run_statements(session, stmts, untrusted=True)
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
            return _from_verdict("qep", {"qep": v}, error_class=fail.error_class)
        after, err = session.explain_cost(eff.explain_sql, untrusted=False)
        checks = _run_checks(session, case) if case.checks else []
    except _NeedsScratch as exc:
        return _invalid(f"the prediction needs to run outside a transaction ({exc}); index cases run in one")
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
            return _from_verdict("tcv", verdicts)
    return _from_verdict("qep", verdicts)


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

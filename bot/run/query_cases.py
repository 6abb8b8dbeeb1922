"""Evaluating a query case: the gold alternatives and the prediction in one read-only repeatable-read
transaction, rolled back; the order check on the gold's ORDER BY key (ties found by probe queries); the planner's
estimates of a prediction that ran and of its gold (bot/run/query_cost.py)."""

from __future__ import annotations

import re
from dataclasses import replace

from bot.base.results import ResultSet, Verdict
from bot.base.usage import QueryCost
from bot.cases.model import Case, CompareOptions
from bot.db.session import Outcome, Session
from bot.db.statements import UnsafeSQL, refuse_empty
from bot.run.evaluation import Evaluation, GoldFailed, as_invalid, as_refused, from_verdict
from bot.run.query_cost import query_cost
from bot.scoring.execution import error_verdict, judge_results, wants_order
from bot.scoring.order import key_positions, with_limit, with_order_keys, without_distinct
from bot.scoring.samples import with_samples
from bot.scoring.tables import OrderCheck

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


_LEAD = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/|\()*(\w*)", re.S)


def query_text(pred_sql: str) -> str:
    """A cheap early refusal with a clear reason; the server still refuses anything but one query."""
    m = _LEAD.match(pred_sql)
    lead = m.group(1).upper() if m else ""
    if not lead:
        refuse_empty(pred_sql)
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
    probe = session.fetch(probe_sql, savepoint=True)
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


def order_check(
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
            probe = session.fetch(probe_sql, savepoint=True)
            if probe.ok and probe.result and len(probe.result.rows) > info.limit:
                rows = probe.result.rows
                tie_cut = tuple(rows[-1][i] for i in positions) == tuple(rows[-2][i] for i in positions)
    return OrderCheck(key_positions=positions, tie_cut=tie_cut)


def judge_pair(
    session: Session,
    case: Case,
    gold_sql: str,
    gold: ResultSet,
    pred_sql: str,
    pred: ResultSet,
    options: CompareOptions,
    alternative: int = 0,
) -> Verdict:
    """The execution verdict of one gold's rows against the prediction's, on the database `session` reads
    (which the order check probes for ties)."""
    order = order_check(session, gold_sql, gold.rows, gold.columns, options)
    return judge_results(
        gold,
        pred,
        options=options,
        gold_sql=gold_sql,
        question=case.question,
        pred_sql=pred_sql,
        order=order,
        alternative=alternative,
    )


def as_compared(sql_text: str, options: CompareOptions) -> str:
    """A gold or prediction as it is run: without DISTINCT under `strip_distinct` (and the test-suite preset)."""
    strip = bool(options.strip_distinct) or options.preset == "test_suite"
    return without_distinct(sql_text) if strip else sql_text


def _compare_alternatives(
    case: Case, session: Session, pred_text: str, options: CompareOptions
) -> tuple[dict[str, Verdict], Outcome | None]:
    """Run the gold alternatives (and the prediction once) until one matches. Raises GoldFailed."""
    first: Verdict | None = None
    pred: Outcome | None = None
    gold_errors: list[str] = []
    multi = len(case.gold_sql) > 1
    pred_text = as_compared(pred_text, options)
    for idx, gold_sql in enumerate(case.gold_sql):
        gold_sql = as_compared(gold_sql, options)
        gold = session.fetch(gold_sql, savepoint=multi)
        if not gold.ok:
            gold_errors.append(f"gold #{idx + 1}: {gold.error}")
            continue
        if pred is None:
            pred = session.fetch(pred_text)
            if not pred.ok:
                return {
                    "execution": error_verdict(
                        "execution", error=pred.error or "", error_class=pred.error_class
                    )
                }, pred
        assert gold.result is not None and pred.result is not None
        verdict = judge_pair(session, case, gold_sql, gold.result, pred_text, pred.result, options, idx)
        if verdict.match:
            return {"execution": verdict}, pred
        first = first or with_samples(verdict, gold.result, pred.result)  # `sqlcanary show` prints them
    if first is None or gold_errors:
        # A gold alternative that fails is a broken suite, never "the prediction is wrong".
        raise GoldFailed("; ".join(gold_errors) or "no gold query")
    return {"execution": first}, pred


def evaluate_query(case: Case, pred_sql: str, session: Session, *, options: CompareOptions) -> Evaluation:
    refused: UnsafeSQL | None = None
    try:
        pred_text = query_text(pred_sql)
    except UnsafeSQL as exc:
        pred_text, refused = "", exc
    session.begin(read_only=True)
    try:
        if refused is not None:
            gold = session.fetch(case.gold_sql[0])
            return (
                as_invalid(f"the gold failed: {gold.error}")
                if not gold.ok
                else as_refused("execution", refused)
            )
        verdicts, pred = _compare_alternatives(case, session, pred_text, options)
        cost = _query_cost(case, session, verdicts["execution"], pred, pred_text, options)
    except GoldFailed as exc:
        return as_invalid(f"the gold failed: {exc}")
    finally:
        session.rollback()
    return replace(from_verdict("execution", verdicts), query_cost=cost)


def _query_cost(
    case: Case,
    session: Session,
    verdict: Verdict,
    pred: Outcome | None,
    pred_text: str,
    options: CompareOptions,
) -> QueryCost | None:
    """A query case's prediction that ran, and the gold alternative it was judged against (bot/run/query_cost.py):
    their estimates, in the case's transaction. None for other categories (an efficiency case has its own)."""
    if case.category != "query" or pred is None or not pred.ok:
        return None
    gold_sql = case.gold_sql[verdict.details.get("alternative") or 0]
    return query_cost(session, as_compared(gold_sql, options), as_compared(pred_text, options))

"""Judging one answer of a case: each SQL it offers evaluated (one retry on a fresh connection), the
alternatives combined, and the diagnostics added to a failing case (the structural scorer, the LLM judge)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from bot.agents.base import Answer
from bot.base.results import Verdict
from bot.cases.model import Case, CompareOptions
from bot.db.session import ConnectionLost, Session
from bot.run.evaluate import evaluate_case
from bot.run.evaluation import Evaluation, ScratchFactory
from bot.run.perturbed import Copies, with_perturbation


def _combine_alternatives(evs: list[Evaluation]) -> Evaluation:
    """`gold:all`: every alternative must pass; the first that does not is the reason."""
    for i, ev in enumerate(evs):
        if ev.status != "passed":
            return Evaluation(
                status=ev.status,
                verdicts=ev.verdicts,
                deciding=ev.deciding,
                reason=f"gold alternative #{i + 1}: {ev.reason}",
                error_class=ev.error_class,
                alternative=i,
                query_cost=ev.query_cost,
            )
    return evs[0]


# `--llm-judge`: an LLM's opinion on whether a failing prediction is equivalent (a diagnostic, never deciding).
JudgeFn = Callable[[Case, str], Verdict]


@dataclass(frozen=True)
class JudgeTools:
    """What judging an answer uses besides the case and its session: the scratch databases (statements that
    cannot run in a transaction), the structural diagnostic on passing cases too (`structural`), the LLM's
    opinion on failing ones (`llm_judge`, `--llm-judge`), each database's schema for the structural scorer
    (`schemas`, filled as it goes) and the perturbed copies (bot/run/perturbed.py)."""

    scratch: ScratchFactory | None
    structural: bool = False
    llm_judge: JudgeFn | None = None
    schemas: dict[str, Any] = field(default_factory=dict)
    copies: Copies | None = None


def judge_answer(
    case: Case,
    answer: Answer,
    session: Session,
    options: CompareOptions,
    tools: JudgeTools,
    *,
    perturb: int = 0,
) -> Evaluation:
    """The answer's Evaluation. Failing cases get the structural verdict (passing ones too under
    `tools.structural`) and the LLM judge's; a query case that passed is checked on `perturb` of its database's
    perturbed copies."""
    scratch, copies = tools.scratch, tools.copies
    sqls = answer.alternatives or (answer.sql or "",)
    try:
        evs = [evaluate_case(case, s, session, options=options, scratch=scratch) for s in sqls]
    except ConnectionLost:
        session.reset()  # one retry on a fresh connection, then the run stops
        evs = [evaluate_case(case, s, session, options=options, scratch=scratch) for s in sqls]
    # Each SQL on the copies against the gold alternative it matched (`perturb` is 0 but for query cases); a
    # pass turned coincidental keeps the query's cost.
    evs = [
        replace(with_perturbation(e, case, s, session, options, copies, perturb), query_cost=e.query_cost)
        for e, s in zip(evs, sqls, strict=True)
    ]
    ev = _combine_alternatives(evs) if len(evs) > 1 else evs[0]
    if ev.status == "failed" or (tools.structural and ev.status == "passed"):
        sv = _structural(case, answer.sql, session, tools.schemas)
        if sv is not None:
            ev = replace(ev, verdicts={**ev.verdicts, "structural": sv})
    if tools.llm_judge is not None and ev.status == "failed" and answer.sql and case.gold_sql:
        jv = tools.llm_judge(case, answer.sql)
        ev = replace(ev, verdicts={**ev.verdicts, "llm_judge": jv})
    return ev


def _structural(case: Case, sql: str | None, session: Session, cache: dict) -> Verdict | None:
    if not sql or not case.gold_sql:
        return None
    try:
        from bot.scoring.structural import structural_verdict
    except ImportError:  # pragma: no cover - the scorer ships with the package
        return None
    if case.db not in cache:
        try:
            cache[case.db] = session.schema()
        except Exception:  # noqa: BLE001 - a diagnostic must never fail a run
            cache[case.db] = None
    return structural_verdict(case.gold_sql[0], sql, schema=cache[case.db])

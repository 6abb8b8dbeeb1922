"""A case's answer and its evaluation as the CaseResult a run records; K attempts (`--repeat K`) as one."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

from bot.agents.base import Answer
from bot.base.case_hash import case_content_hash
from bot.base.results import Attempt, CaseResult, Prediction
from bot.cases.model import Case, CompareOptions
from bot.run.evaluation import Evaluation


def judge_hash(case: Case, options: CompareOptions, *, statement_timeout_ms: int, row_cap: int) -> str:
    """What decides a case's verdict besides what it asks (bot.base.case_hash): its setup, teardown and checks,
    its compare options as resolved over the suite's, its efficiency rule, its instructions, and the suite's
    limits. A pull request that changes any of them has edited the case."""
    content = {
        "setup": case.setup_sql,
        "teardown": case.teardown_sql,
        "checks": [c.model_dump(mode="json") for c in case.checks],
        "compare": options.model_dump(mode="json", exclude_none=True),
        "efficiency": case.efficiency.model_dump(mode="json") if case.efficiency else None,
        "instructions": case.instructions,
        "limits": [statement_timeout_ms, row_cap],
    }
    data = json.dumps(content, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


def case_result(
    case: Case,
    answer: Answer,
    ev: Evaluation | None,
    *,
    agent_s: float,
    eval_s: float,
    answer_key: str | None,
    judged_by: str | None = None,
) -> CaseResult:
    prediction = Prediction(
        sql=answer.sql,
        error=answer.error,
        error_class=answer.error_class,
        stderr=answer.stderr,
        used=answer.used,
        duration_s=round(answer.duration_s or agent_s, 6),
        alternative=ev.alternative if ev else None,
        usage=answer.usage,
        cached=answer.cached,
    )
    timings = {"agent_s": round(agent_s, 6), "eval_s": round(eval_s, 6)}
    timings.update({k: round(v, 6) for k, v in (ev.timings if ev else {}).items()})
    base: dict[str, Any] = dict(
        id=case.id,
        category=case.category,
        tags=case.tags,
        db=case.db,
        question=case.question,
        prediction=prediction,
        timings=timings,
        source=case.source,
        answer_key=answer_key,
        case_hash=case_content_hash(case),
        judge_hash=judged_by,
        query_cost=ev.query_cost if ev else None,
    )
    if ev is None:
        return CaseResult(
            status="errored",
            reason=f"agent: {answer.error}",
            error_class=answer.error_class,
            gold_sql=case.gold_sql,
            **base,
        )
    return CaseResult(
        status=ev.status,
        verdicts=ev.verdicts,
        deciding_scorer=ev.deciding,
        reason=ev.reason,
        error_class=ev.error_class,
        gold_sql=() if ev.status == "passed" else case.gold_sql,  # the reports show it beside the prediction
        **base,
    )


# Which outcome is worse, for ties between attempts.
_SEVERITY = {"passed": 0, "invalid": 1, "failed": 2, "errored": 3}


def combine_attempts(tries: list[CaseResult]) -> CaseResult:
    """K attempts -> one CaseResult: the majority status (a tie goes to the worse outcome), the details of
    the first attempt with that status, and every attempt in `attempts`."""
    counts = Counter(t.status for t in tries)
    status = max(counts, key=lambda s: (counts[s], _SEVERITY[s]))
    chosen = next(t for t in tries if t.status == status)
    attempts = tuple(
        Attempt(status=t.status, sql=t.prediction.sql, reason=t.reason, error_class=t.error_class)
        for t in tries
    )
    return chosen.model_copy(update={"attempts": attempts})

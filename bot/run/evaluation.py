"""One case's evaluation outcome (Evaluation) and the ways an evaluator ends: passed, failed or invalid by a
scorer's verdict, a prediction refused before it ran, or a gold that failed (a broken suite)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from bot.base.results import Status, Verdict
from bot.base.usage import QueryCost
from bot.db.session import Session
from bot.db.statements import UnsafeSQL

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
    query_cost: QueryCost | None = None  # a query case whose prediction ran: the planner's estimates


class GoldFailed(Exception):
    pass


class NeedsScratch(Exception):
    pass


def as_invalid(reason: str, verdicts: dict[str, Verdict] | None = None) -> Evaluation:
    return Evaluation(
        status="invalid", verdicts=verdicts or {}, deciding=None, reason=reason, error_class="gold_error"
    )


def as_refused(scorer: str, exc: UnsafeSQL) -> Evaluation:
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


def from_verdict(scorer: str, verdicts: dict[str, Verdict], *, error_class: str | None = None) -> Evaluation:
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

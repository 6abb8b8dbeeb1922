"""The `tcv` scorer (test-case validation): after a write, each check must hold."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from bot.base.results import ResultSet, Verdict
from bot.cases.model import Check
from bot.scoring.tables import TableOptions, compare_tables
from bot.scoring.values import DEFAULT_ABS_TOL, DEFAULT_REL_TOL, close, is_number, show


@dataclass(frozen=True)
class CheckOutcome:
    check: Check
    result: ResultSet | None
    error: str | None = None


def _expected_equal(expected: Any, actual: Any) -> bool:
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if is_number(expected) and is_number(actual):
        return close(expected, actual, abs_tol=DEFAULT_ABS_TOL, rel_tol=DEFAULT_REL_TOL)
    if isinstance(expected, str):
        if isinstance(actual, dt.date | dt.datetime | dt.time):
            return actual.isoformat() == expected or str(actual) == expected
        return str(actual) == expected
    return expected == actual


def _rows_match(expected: list[list[Any]], actual: list[tuple[Any, ...]]) -> bool:
    if len(expected) != len(actual):
        return False
    left = list(actual)
    for row in expected:
        hit = next(
            (
                i
                for i, a in enumerate(left)
                if len(a) == len(row) and all(_expected_equal(e, v) for e, v in zip(row, a, strict=True))
            ),
            None,
        )
        if hit is None:
            return False
        left.pop(hit)
    return True


def judge_check(outcome: CheckOutcome, *, gold: CheckOutcome | None) -> tuple[bool, str]:
    """(passed, why not) for one check after the prediction ran."""
    chk = outcome.check
    label = chk.name or f"`{chk.sql.strip()[:80]}`"
    if outcome.error is not None or outcome.result is None:
        return False, f"check {label} failed to run: {outcome.error}"
    rows = outcome.result.rows
    if chk.expect == "gold":
        if gold is None or gold.result is None:
            return False, f"check {label}: no gold result to compare with"
        tv = compare_tables(gold.result, outcome.result, opts=TableOptions(columns="positional"))
        return bool(tv.match), f"check {label}: {tv.message}"
    if chk.expect is True or chk.expect is False:
        want = bool(chk.expect)
        ok = len(rows) == 1 and len(rows[0]) == 1 and rows[0][0] is want
        got = (
            show(rows[0][0])
            if len(rows) == 1 and len(rows[0]) == 1
            else f"{len(rows)} row{'' if len(rows) == 1 else 's'}"
        )
        return ok, f"check {label} returned {got}, expected {str(want).lower()}"
    ok = _rows_match(chk.expect, rows)
    return (
        ok,
        f"check {label} returned {show(tuple(rows[:3]), 120)}, expected {show(tuple(map(tuple, chk.expect[:3])), 120)}",
    )


def tcv_verdict(outcomes: list[CheckOutcome], *, gold: list[CheckOutcome] | None) -> Verdict:
    if not outcomes:
        return Verdict(scorer="tcv", match=None, kind="no_checks", message="the case has no checks")
    failures = []
    for i, out in enumerate(outcomes):
        ok, why = judge_check(out, gold=gold[i] if gold else None)
        if not ok:
            failures.append(why)
    if failures:
        return Verdict(
            scorer="tcv",
            match=False,
            kind="check_failed",
            message=failures[0],
            details={"failed": len(failures), "checks": len(outcomes), "reasons": failures[:10]},
        )
    return Verdict(
        scorer="tcv",
        match=True,
        kind="checks_passed",
        message="the check holds" if len(outcomes) == 1 else f"all {len(outcomes)} checks hold",
        details={"checks": len(outcomes)},
    )

"""JUnit XML, one <testcase> per case, for CI systems that show test results: failed, errored and invalid cases
as <failure>, <error> and <skipped>, regressions named as such when there is a comparison."""

from __future__ import annotations

from dataclasses import dataclass

from bot.base.results import CaseResult, RunResult
from bot.compare.comparison import Comparison
from bot.report.environment import environment
from bot.report.view import CaseRow, row_from_change


@dataclass(frozen=True)
class JUnitCase:
    classname: str
    name: str
    time: float
    outcome: str  # passed | failure | error | skipped
    message: str = ""
    type: str = ""
    body: str = ""


def _junit_message(case: CaseResult, row: CaseRow | None) -> str:
    message = case.reason or case.status
    if case.status == "invalid":
        return message
    if row is not None and row.judged == "regressed":
        passes = f", passes {row.attempts}" if row.repeated else ""
        renamed = f", as {row.renamed_from}" if row.renamed_from else ""
        return f"REGRESSION (passed on base{renamed}{passes}): {message}"
    if case.repeats > 1:
        label = "FLAKY: " if 0 < case.passes < case.repeats else ""
        return f"{label}{case.passes}/{case.repeats} attempts passed: {message}"
    return message


def _gold(gold_sql: tuple[str, ...]) -> str:
    """The gold SQL for a failure's text: "gold:", or "gold (one of N alternatives):" with each numbered."""
    if len(gold_sql) <= 1:
        return "".join(f"gold:\n{g.strip()}" for g in gold_sql)
    shown = (f"#{n}:\n{g.strip()}" for n, g in enumerate(gold_sql, 1))
    return f"gold (one of {len(gold_sql)} alternatives):\n" + "\n".join(shown)


def _junit_case(case: CaseResult, row: CaseRow | None) -> JUnitCase:
    name = case.category or (case.tags[0] if case.tags else "sqlcanary")
    elapsed = round(case.timings.get("agent_s", 0.0) + case.timings.get("eval_s", 0.0), 3)
    outcome = {"failed": "failure", "errored": "error", "invalid": "skipped"}.get(case.status, "passed")
    structural = case.verdicts.get("structural")
    body = "\n".join(
        part
        for part in (
            case.reason,
            f"structural: {structural.message}" if structural and structural.match is False else "",
            f"source: {case.source}" if case.source else "",
            _gold((row.gold_sql if row is not None else ()) or case.gold_sql),
            f"prediction:\n{case.prediction.sql}" if case.prediction.sql else "",
            f"base prediction:\n{row.base_sql}" if row is not None and row.base_sql else "",
        )
        if part
    )
    kind = case.error_class or case.prediction.error_class or (row.group if row else case.status)
    return JUnitCase(name, case.id, elapsed, outcome, _junit_message(case, row), kind or "", body)


def render_junit(run: RunResult, comparison: Comparison | None = None) -> str:
    """JUnit XML, one <testcase> per case: failed -> <failure>, errored -> <error>, invalid -> <skipped>;
    with a comparison, regressions are named in the failure message."""
    changes = {c.id: row_from_change(c) for c in comparison.cases} if comparison is not None else {}
    cases = [_junit_case(c, changes.get(c.id)) for c in run.cases]
    counts = {k: sum(c.outcome == k for c in cases) for k in ("failure", "error", "skipped")}
    return (
        environment()
        .get_template("junit.xml.j2")
        .render(
            run=run,
            cases=cases,
            counts=counts,
            comparison=comparison,
            total_time=round(sum(c.time for c in cases), 3),
        )
    )

"""One row per case, as every report lists it: from a comparison's CaseChange or a single run's CaseResult.
Pure. bot.report.view groups these rows into sections and re-exports these names."""

from __future__ import annotations

from dataclasses import dataclass, replace

from bot.base.results import CaseResult
from bot.compare.comparison import CaseChange, Comparison
from bot.report.explain import CauseView, case_causes, prediction_diff, verdict_words


@dataclass(frozen=True)
class CaseRow:
    id: str
    group: str  # a transition (comparison) or a status (single run)
    question: str = ""
    category: str = ""
    tags: tuple[str, ...] = ()
    base_status: str | None = None
    head_status: str | None = None
    base_passes: int = 0
    base_repeats: int = 0
    head_passes: int = 0
    head_repeats: int = 0
    flaky: bool = False
    p_value: float | None = None
    reason: str = ""
    structural: str = ""
    head_sql: str | None = None
    base_sql: str | None = None
    base_error_class: str | None = None
    head_error_class: str | None = None
    source: str | None = None
    renamed_from: str | None = None
    outcome: str | None = None  # renamed: the pair's own transition
    edited: bool = False  # the change edited the case itself (bot.compare.comparison.CaseChange.edited)
    against_base: str | None = None  # an edited case's head answer judged by the base's version (check)
    gold_sql: tuple[str, ...] = ()
    used: tuple[str, ...] = ()  # the KB spans the head's answer used
    causes: tuple[CauseView, ...] = ()  # the changed lines this regression is linked to (bot.compare.causes)
    explained: bool | None = None  # regressions of a linked comparison: whether the diff explains it

    @property
    def verdict(self) -> str:
        """The verdict in words: "regressed: passed on base, fails on head"."""
        return verdict_words(
            self.group,
            outcome=self.outcome,
            head_status=self.head_status,
            renamed_from=self.renamed_from,
            attempts=self.attempts if self.repeated else "",
        )

    @property
    def sql_diff(self) -> str:
        """base prediction → head prediction, unified."""
        return prediction_diff(self.base_sql, self.head_sql)

    @property
    def judged(self) -> str:
        """The group the case counts as: a renamed case by its outcome."""
        return self.outcome if self.group == "renamed" and self.outcome else self.group

    @property
    def repeated(self) -> bool:
        return max(self.base_repeats, self.head_repeats) > 1

    @property
    def attempts(self) -> str:
        """ "3/3 → 1/3": passes out of attempts, base then head."""
        base = f"{self.base_passes}/{self.base_repeats}" if self.base_repeats else "–"
        head = f"{self.head_passes}/{self.head_repeats}" if self.head_repeats else "–"
        return f"{base} → {head}"


def row_from_change(c: CaseChange, cmp: Comparison | None = None) -> CaseRow:
    """One case's row; with its comparison, the causes it is linked to."""
    linked = cmp is not None and cmp.linked and c.judged == "regressed"
    causes = case_causes(cmp, c) if cmp is not None and linked else ()
    return CaseRow(
        gold_sql=c.gold_sql,
        used=c.head_used or c.base_used,
        causes=causes,
        explained=bool(causes) if linked else None,
        id=c.id,
        group=c.transition,
        question=c.question,
        category=c.category,
        tags=c.tags,
        base_status=c.base_status,
        head_status=c.head_status,
        base_passes=c.base_passes,
        base_repeats=c.base_repeats,
        head_passes=c.head_passes,
        head_repeats=c.head_repeats,
        flaky=c.flaky,
        p_value=c.p_value,
        reason=c.reason,
        structural=c.structural,
        head_sql=c.head_sql,
        base_sql=c.base_sql,
        base_error_class=c.base_error_class,
        head_error_class=c.head_error_class,
        source=c.source,
        renamed_from=c.renamed_from,
        outcome=c.outcome,
        edited=c.edited,
        against_base=c.against_base,
    )


def rows_from_comparison(cmp: Comparison) -> list[CaseRow]:
    """Every case as a row; head only: grouped by the head's status, as for a single run."""
    rows = [row_from_change(c, cmp) for c in cmp.cases]
    if cmp.baseline == "none":
        rows = [replace(r, group=r.head_status or r.group) for r in rows]
    return rows


def _structural(case: CaseResult) -> str:
    v = case.verdicts.get("structural")
    return v.message if v is not None and v.match is False else ""


def row_from_case(c: CaseResult) -> CaseRow:
    return CaseRow(
        id=c.id,
        group=c.status,
        question=c.question,
        category=c.category,
        tags=c.tags,
        head_status=c.status,
        head_passes=c.passes,
        head_repeats=c.repeats,
        flaky=0 < c.passes < c.repeats,
        reason=c.reason,
        structural=_structural(c),
        head_sql=c.prediction.sql,
        head_error_class=c.error_class or c.prediction.error_class,
        gold_sql=c.gold_sql,
        source=c.source,
    )

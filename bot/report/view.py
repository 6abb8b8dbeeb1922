"""What every report shows, computed once from a Comparison (base vs head) or a single RunResult, so the
templates only lay it out. Pure: no I/O, no Jinja. The case rows are built in bot.report.rows; callers import
them from here too. Which rows and SQL a shorter report keeps (the comment's cut, the trim) is bot.report.cuts."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from bot.base.results import STATUSES, Counts, RunMeta, RunResult
from bot.compare.comparison import TRANSITIONS, Comparison, RateDelta
from bot.report.explain import CauseView, cause_views, refer_to_named, uncited_note
from bot.report.metrics_view import MetricRow, comment_rows, metric_rows, metrics_line
from bot.report.rows import CaseRow, row_from_case, row_from_change, rows_from_comparison

WITH_SQL = frozenset({"regressed", "fixed", "flaky", "became_invalid", "error_changed", "failed", "errored"})

LABELS = {
    "regressed": "Regressed",
    "fixed": "Fixed",
    "flaky": "Flaky",
    "became_invalid": "Became invalid",
    "became_valid": "Became valid",
    "error_changed": "Error changed",
    "new": "New",
    "removed": "Removed",
    "renamed": "Renamed",
    "still_failing": "Still failing",
    "still_passing": "Still passing",
    "passed": "Passed",
    "failed": "Failed",
    "errored": "Errored",
    "invalid": "Invalid",
}
NOTES = {
    "regressed": "passed on base, fail on head",
    "fixed": "failed on base, pass on head",
    "flaky": "the attempts disagree and the difference is not significant: labelled, not failed",
    "became_invalid": "the gold or the fixture broke: excluded from the pass rate; one that passed on base fails "
    "the gate unless `allow_invalid`",
    "became_valid": "invalid on base, decidable on head",
    "error_changed": "failing on both sides, with a different error class",
    "new": "only in head",
    "removed": "only in base: a deleted case cannot fail, so removals fail the gate unless `allow_removed`",
    "renamed": "a new id for the same question, database, gold SQL and category: judged by its own outcome",
    "still_failing": "failing on both sides",
    "failed": "the answer is wrong",
    "errored": "the agent gave no usable answer",
    "invalid": "the gold does not run: excluded from the pass rate",
}
RUN_SECTIONS = ("failed", "errored", "invalid", "flaky")
RUN_NOTES = {"flaky": "passed by majority, but the attempts disagree"}
FOLD_ROWS = 5  # the comment folds a case table longer than this (and one whose cases the causes name)


@dataclass(frozen=True)
class RateRow:
    name: str
    base: Counts | None
    head: Counts | None
    base_rate: float | None
    head_rate: float | None
    delta: float | None

    @property
    def changed(self) -> bool:
        return self.delta is not None and abs(self.delta) > 1e-12


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    note: str
    rows: tuple[CaseRow, ...]
    total: int

    @property
    def omitted(self) -> int:
        return self.total - len(self.rows)


@dataclass(frozen=True)
class ReportView:
    # head_only: a comparison without a baseline (compare_head_only), laid out like a run
    kind: Literal["comparison", "run", "head_only"]
    verdict: str  # pass | regressions | incomparable (comparison); pass | failures (run)
    word: str
    mark: str
    headline: str
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    overall: RateRow
    by_category: tuple[RateRow, ...]
    by_tag: tuple[RateRow, ...]
    counts: tuple[tuple[str, str, int], ...]  # (key, label, number of cases), non-zero only
    sections: tuple[Section, ...]
    details: tuple[CaseRow, ...]  # cases whose SQL is shown in collapsible blocks
    base: RunMeta | None
    head: RunMeta
    total_cases: int
    forced: bool = False
    omitted_details: int = 0
    baseline_reason: str = ""  # head_only: why there is no base run
    min_pass_rate: float | None = None  # head_only: the only rule that can fail it
    linked: bool = False  # the comparison knew the diff: `causes` and `unexplained` are meaningful
    causes: tuple[CauseView, ...] = ()
    unexplained: tuple[str, ...] = ()  # regressed, and no KB line their answers used was changed
    uncited: str = ""  # under "not explained": the changed files no answer cites, in Markdown (explain.py)
    metrics: tuple[MetricRow, ...] = ()  # cost, tokens, latency, query cost, base → head (metrics_view.py)
    metrics_line: str = ""  # the same, as one line of Markdown for the first screen

    @property
    def omitted(self) -> int:
        return sum(s.omitted for s in self.sections)

    @property
    def detail_total(self) -> int:
        return len(self.details) + self.omitted_details

    @property
    def named(self) -> frozenset[str]:
        """The case ids the causes list by name (under a changed line or "not explained")."""
        return frozenset(i for c in self.causes for i in c.cases) | frozenset(self.unexplained)

    @property
    def brief_reasons(self) -> tuple[str, ...]:
        """The reasons, each list of ids the causes already name replaced by its number (the comment's)."""
        return tuple(refer_to_named(r, self.named) for r in self.reasons)

    @property
    def brief_warnings(self) -> tuple[str, ...]:
        return tuple(refer_to_named(w, self.named) for w in self.warnings)

    def folds(self, section: Section) -> bool:
        """Whether the comment folds this section's table: long, or its cases are named above it already."""
        return section.total > FOLD_ROWS or all(r.id in self.named for r in section.rows)


def with_sql(sections: tuple[Section, ...]) -> tuple[CaseRow, ...]:
    """The sections' rows whose SQL is shown (WITH_SQL), in order."""
    return tuple(r for s in sections for r in s.rows if r.judged in WITH_SQL)


def _rate(name: str, d: RateDelta) -> RateRow:
    return RateRow(name, d.base, d.head, d.base_rate, d.head_rate, d.delta)


def _sections(
    rows: list[CaseRow], keys: tuple[str, ...], notes: dict[str, str] = NOTES
) -> tuple[Section, ...]:
    out = []
    for key in keys:
        picked = tuple(r for r in rows if r.group == key)
        if picked:
            note = notes.get(key, NOTES.get(key, ""))
            out.append(Section(key, LABELS.get(key, key), note, picked, len(picked)))
    return tuple(out)


def _comparison_headline(cmp: Comparison) -> tuple[str, str, str]:
    regressed, fixed, flaky = (len(cmp.judged_as(k)) for k in ("regressed", "fixed", "flaky"))
    if cmp.verdict == "incomparable":
        return "NOT COMPARABLE", "⚠️", "base and head cannot be compared"
    if cmp.verdict == "regressions":
        words = (
            f"{regressed} regressed case{'s' * (regressed != 1)}" if regressed else "the quality gate failed"
        )
        return "FAIL", "❌", words
    extra = [f"{n} {word}" for n, word in ((fixed, "fixed"), (flaky, "flaky")) if n]
    return "PASS", "✅", "no regressions" + (f" ({', '.join(extra)})" if extra else "")


def view_comparison(cmp: Comparison, *, sections: tuple[str, ...] | None = None) -> ReportView:
    """`sections`: the transitions listed case by case (default: every transition but still_passing)."""
    if cmp.baseline == "none":
        return view_head_only(cmp)
    keys = sections if sections is not None else tuple(t for t in TRANSITIONS if t != "still_passing")
    built = _sections([row_from_change(c, cmp) for c in cmp.cases], keys)
    word, mark, headline = _comparison_headline(cmp)
    return ReportView(
        kind="comparison",
        verdict=cmp.verdict,
        word=word,
        mark=mark,
        headline=headline,
        reasons=cmp.reasons,
        warnings=cmp.warnings,
        overall=_rate("all", cmp.overall),
        by_category=tuple(_rate(k, v) for k, v in sorted(cmp.by_category.items())),
        by_tag=tuple(_rate(k, v) for k, v in sorted(cmp.by_tag.items())),
        counts=tuple((t, LABELS[t], cmp.counts[t]) for t in TRANSITIONS if cmp.counts.get(t)),
        sections=built,
        details=with_sql(built),
        base=cmp.base,
        head=cmp.head,
        total_cases=len(cmp.cases),
        forced=cmp.forced,
        linked=cmp.linked,
        causes=cause_views(cmp),
        unexplained=cmp.unexplained,
        uncited=uncited_note(cmp),
        metrics=(rows := metric_rows(cmp)),
        metrics_line=metrics_line(comment_rows(rows)),
    )


def _single(name: str, c: Counts) -> RateRow:
    return RateRow(name, None, c, None, c.pass_rate, None)


def _run_rows(rows: list[CaseRow]) -> tuple[Section, ...]:
    """A single run's sections: failed, errored, invalid, and passing cases whose attempts disagree."""
    rows = [
        r if r.group != "passed" else replace(r, group="flaky")
        for r in rows
        if r.group != "passed" or r.flaky
    ]
    return _sections(rows, RUN_SECTIONS, RUN_NOTES)


def view_run(run: RunResult) -> ReportView:
    s = run.summary
    built = _run_rows([row_from_case(c) for c in run.cases])
    decidable = s.total - s.invalid
    ok = s.failed == 0 and s.errored == 0
    headline = (
        f"all {decidable} decidable case{'s' * (decidable != 1)} pass"
        if ok
        else f"{s.failed + s.errored} of {decidable} decidable cases did not pass"
    )
    return ReportView(
        kind="run",
        verdict="pass" if ok else "failures",
        word="PASS" if ok else "FAIL",
        mark="✅" if ok else "❌",
        headline=headline,
        reasons=(),
        warnings=() if run.meta.complete else ("the run is incomplete",),
        overall=_single("all", s),
        by_category=tuple(_single(k, v) for k, v in s.by_category.items()),
        by_tag=tuple(_single(k, v) for k, v in s.by_tag.items()),
        counts=tuple((k, LABELS[k], getattr(s, k)) for k in STATUSES if getattr(s, k)),
        sections=built,
        details=with_sql(built),
        base=None,
        head=run.meta,
        total_cases=len(run.cases),
    )


def _sentence(text: str) -> str:
    """A reason as the templates place it: capitalised, without the final period they add."""
    text = text.strip().rstrip(".")
    return text[:1].upper() + text[1:]


def view_head_only(cmp: Comparison) -> ReportView:
    """No baseline (the base commit has no suite): the head laid out like a single run, judged by the gate's
    minimum pass rate alone."""
    h = cmp.overall.head
    built = _run_rows(rows_from_comparison(cmp))
    ok = cmp.verdict == "pass"
    decidable = h.total - h.invalid
    headline = (
        f"no baseline: head only, {h.passed} of {decidable} decidable case{'s' * (decidable != 1)} pass"
    )
    return ReportView(
        kind="head_only",
        verdict=cmp.verdict,
        word="PASS" if ok else "FAIL",
        mark="✅" if ok else "❌",
        headline=headline,
        reasons=cmp.reasons,
        warnings=cmp.warnings,
        overall=_single("all", h),
        by_category=tuple(_single(k, v.head) for k, v in sorted(cmp.by_category.items())),
        by_tag=tuple(_single(k, v.head) for k, v in sorted(cmp.by_tag.items())),
        counts=tuple((k, LABELS[k], getattr(h, k)) for k in STATUSES if getattr(h, k)),
        sections=built,
        details=with_sql(built),
        base=None,
        head=cmp.head,
        total_cases=len(cmp.cases),
        baseline_reason=_sentence(cmp.baseline_reason or "there is no base run to compare with"),
        min_pass_rate=cmp.gate.min_pass_rate,
    )


def build_view(subject: Comparison | RunResult) -> ReportView:
    if isinstance(subject, Comparison):
        return view_comparison(subject)
    if isinstance(subject, RunResult):
        return view_run(subject)
    raise TypeError(f"a report needs a Comparison or a RunResult, not {type(subject).__name__}")

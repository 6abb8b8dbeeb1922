"""Which case rows and SQL blocks a report shows: the sticky comment's
cut (COMMENT_ROWS, COMMENT_DETAILS, one case per cause) and the trim that fits a rendered report into a size limit.
Pure: a ReportView (bot.report.view) in, a shorter copy out."""

from __future__ import annotations

from dataclasses import replace

from bot.report.rows import CaseRow
from bot.report.view import ReportView, with_sql

# The sticky comment lists at most this many case rows per section and the SQL of this many cases; the HTML
# report, the job summary and the JSON keep every case.
COMMENT_ROWS = 10
COMMENT_DETAILS = 3


def trim(view: ReportView, *, rows: int, details: int) -> ReportView:
    """Keep the first `rows` case rows (sections in priority order) and the SQL of the first `details` of those."""
    left = max(rows, 0)
    kept = []
    for s in view.sections:
        take = s.rows[:left]
        left -= len(take)
        kept.append(replace(s, rows=take))
    shown = with_sql(tuple(kept))
    cut = shown[: max(details, 0)]
    return replace(view, sections=tuple(kept), details=cut, omitted_details=view.detail_total - len(cut))


def _examples(rows: tuple[CaseRow, ...]) -> tuple[CaseRow, ...]:
    """`rows` without the regressions whose causes an earlier row already has: one example per cause."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for r in rows:
        key = tuple(c.label for c in r.causes) if r.explained is not None else None
        if key is None or key not in seen:
            out.append(r)
        if key is not None:
            seen.add(key)
    return tuple(out)


def brief(view: ReportView, *, rows: int, details: int) -> ReportView:
    """At most `rows` case rows in each section and the SQL of `details` of those, one case per cause (after
    `trim`: the smaller of both cuts). The sections keep their totals, so the reports say how many are left out."""
    kept = tuple(replace(s, rows=s.rows[: max(rows, 0)]) for s in view.sections)
    shown = {r.id for r in view.details}
    cut = _examples(tuple(r for r in with_sql(kept) if r.id in shown))[: max(details, 0)]
    return replace(view, sections=kept, details=cut, omitted_details=view.detail_total - len(cut))

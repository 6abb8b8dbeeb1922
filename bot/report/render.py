"""Reports from the Jinja templates in `templates/`: the sticky PR comment, the job summary, a standalone HTML
report, JUnit XML and JSON. Every render_* function is pure: a Comparison or a RunResult in, text out."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jinja2 import Environment
from markupsafe import Markup

from bot.base.results import CaseResult, RunResult
from bot.base.templating import new_environment, tidy_markdown
from bot.base.textfilters import md_url
from bot.compare.comparison import Comparison
from bot.report import charts
from bot.report.marker import MARKER, marker_for
from bot.report.redact import redact_model, scrub_rendered
from bot.report.view import (
    LABELS,
    CaseRow,
    ReportView,
    build_view,
    row_from_case,
    row_from_change,
    rows_from_comparison,
    trim,
)

COMMENT_LIMIT = 65_536  # characters in a GitHub comment body
SUMMARY_LIMIT = 1_048_576  # bytes in a GitHub job summary
FORMATS = ("md", "summary", "html", "junit", "json")
# How much of each untrusted text a report shows (characters); the full text is in the JSON and HTML reports.
COMMENT_WIDTHS = {
    "question": 140,
    "reason": 220,
    "structural": 300,
    "sql": 3000,
}  # structural: its whole parts
SUMMARY_WIDTHS = {"question": 300, "reason": 600, "structural": 600, "sql": 20_000}

Subject = Comparison | RunResult


@functools.lru_cache(maxsize=1)
def environment() -> Environment:
    """The reports' environment: bot.base.templating's settings and filters plus the report globals."""
    return new_environment(labels=LABELS, marker=MARKER)


def _largest(lo: int, hi: int, fits: Callable[[int], bool]) -> int:
    """The largest n in [lo, hi] with fits(n), given fits(lo) and that fits is monotone."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def _fit(name: str, view: ReportView, *, limit: int, measure: Callable[[str], int], **context: object) -> str:
    """Render; when too long, drop per-case SQL blocks, then whole case rows (lowest priority first), never
    part of a row or a block, so every fence and <details> the template opens is closed."""
    template = environment().get_template(name)

    def render(v: ReportView) -> str:
        return tidy_markdown(template.render(view=v, **context))

    full = render(view)
    if measure(full) <= limit:
        return full
    rows = sum(len(s.rows) for s in view.sections)
    if measure(render(trim(view, rows=rows, details=0))) <= limit:
        keep = _largest(
            0, len(view.details), lambda d: measure(render(trim(view, rows=rows, details=d))) <= limit
        )
        return render(trim(view, rows=rows, details=keep))
    if measure(render(trim(view, rows=0, details=0))) <= limit:
        keep = _largest(0, rows, lambda r: measure(render(trim(view, rows=r, details=0))) <= limit)
        return render(trim(view, rows=keep, details=0))
    return _minimal(
        view,
        limit=limit,
        measure=measure,
        details_url=context.get("details_url"),
        marker=str(context.get("marker", MARKER)),
    )


def _minimal(
    view: ReportView, *, limit: int, measure: Callable[[str], int], details_url: object, marker: str
) -> str:
    link = f" [Full report]({md_url(details_url)})." if details_url else ""
    text = f"{marker}\n## sqlcanary: {view.mark} {view.word}\n\nThe report is too long to show here.{link}\n"
    while measure(text) > limit and len(text) > len(marker) + 1:
        text = text[: len(text) // 2].rsplit("\n", 1)[0] + "\n"
    return text


def render_comment(
    subject: Subject, *, limit: int = COMMENT_LIMIT, details_url: str | None = None, key: str = ""
) -> str:
    """The sticky pull-request comment: at most `limit` characters, starting with the hidden marker of `key`
    (the suite and matrix key, any text: see bot.report.marker; "" is the key-less marker)."""
    return _fit(
        "comment.md.j2",
        build_view(subject),
        limit=limit,
        measure=len,
        details_url=details_url,
        widths=COMMENT_WIDTHS,
        marker=marker_for(key),
    )


def render_summary(subject: Subject, *, limit: int = SUMMARY_LIMIT, details_url: str | None = None) -> str:
    """The job summary (GITHUB_STEP_SUMMARY): fuller than the comment, at most `limit` UTF-8 bytes."""
    return _fit(
        "summary.md.j2",
        build_view(subject),
        limit=limit,
        measure=lambda s: len(s.encode("utf-8")),
        details_url=details_url,
        widths=SUMMARY_WIDTHS,
    )


def _latency(run: RunResult | None) -> list[float]:
    if run is None:
        return []
    return [
        c.timings.get("agent_s", 0.0) + c.timings.get("eval_s", 0.0)
        for c in run.cases
        if "agent_s" in c.timings or "eval_s" in c.timings
    ]


def _rate_chart(rows: tuple, *, title: str, compared: bool) -> Markup | None:
    if not rows:
        return None
    series = [
        charts.Series(
            "head" if compared else "pass rate", charts.HEAD_COLOR, tuple(r.head_rate for r in rows)
        )
    ]
    if compared:
        series.insert(0, charts.Series("base", charts.BASE_COLOR, tuple(r.base_rate for r in rows)))
    return charts.grouped_bars([r.name for r in rows], series, title=title)


def _html_charts(
    view: ReportView, *, head: RunResult | None, base: RunResult | None
) -> dict[str, Markup | None]:
    compared = view.kind == "comparison"
    groups = [(label, n, charts.GROUP_COLORS.get(key, charts.BASE_COLOR)) for key, label, n in view.counts]
    latency = [("head" if compared else "run", charts.HEAD_COLOR, _latency(head))]
    if compared and base is not None:
        latency.insert(0, ("base", charts.BASE_COLOR, _latency(base)))
    has_latency = any(values for _, _, values in latency)
    title = "Transitions" if compared else "Outcomes"
    return {
        "by_category": _rate_chart(view.by_category, title="Pass rate by category", compared=compared),
        "by_tag": _rate_chart(view.by_tag, title="Pass rate by tag", compared=compared),
        "groups": charts.count_bars(groups, title=title) if groups else None,
        "latency": charts.histogram(latency, title="Latency distribution") if has_latency else None,
    }


def render_html(subject: Subject, *, head: RunResult | None = None, base: RunResult | None = None) -> str:
    """A standalone HTML report (inline CSS and SVG, no script, no network). The latency chart needs the runs'
    timings: pass `head` (and `base`) with a Comparison; a RunResult brings its own."""
    view = build_view(subject)
    if isinstance(subject, RunResult):
        head, rows = subject, [row_from_case(c) for c in subject.cases]
    else:
        rows = rows_from_comparison(subject)
    template = environment().get_template("report.html.j2")
    return template.render(
        view=view, charts=_html_charts(view, head=head, base=base), rows=rows, colors=charts.GROUP_COLORS
    )


def render_cases_text(rows: Sequence[CaseRow]) -> str:
    """Cases for the terminal (`sqlcanary show`): question, verdict, cause, first and structural difference,
    gold SQL and the base → head prediction diff, as plain text."""
    return environment().get_template("show.txt.j2").render(rows=list(rows))


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


def render_json(subject: Subject) -> str:
    return subject.model_dump_json(indent=2) + "\n"


def render(
    fmt: str,
    subject: Subject,
    *,
    head: RunResult | None = None,
    base: RunResult | None = None,
    details_url: str | None = None,
    limit: int | None = None,
    marker_key: str = "",
    secrets: Sequence[str] = (),
) -> str:
    """One report by format name (FORMATS). `secrets` are masked in the subject and in the final text (see
    bot.report.redact); `marker_key` names the sticky comment's marker ("md" only)."""
    if secrets:
        subject = redact_model(subject, secrets)
        head, base = (None if r is None else redact_model(r, secrets) for r in (head, base))
    return scrub_rendered(
        _render(fmt, subject, head=head, base=base, details_url=details_url, limit=limit, key=marker_key),
        secrets,
    )


def _render(
    fmt: str,
    subject: Subject,
    *,
    head: RunResult | None,
    base: RunResult | None,
    details_url: str | None,
    limit: int | None,
    key: str,
) -> str:
    if fmt == "md":
        return render_comment(subject, limit=limit or COMMENT_LIMIT, details_url=details_url, key=key)
    if fmt == "summary":
        return render_summary(subject, limit=limit or SUMMARY_LIMIT, details_url=details_url)
    if fmt == "html":
        return render_html(subject, head=head, base=base)
    if fmt == "junit":
        run = head if head is not None else subject
        if not isinstance(run, RunResult):
            raise ValueError("JUnit XML needs the head RunResult")
        return render_junit(run, subject if isinstance(subject, Comparison) else None)
    if fmt == "json":
        return render_json(subject)
    raise ValueError(f"unknown report format {fmt!r}: one of {', '.join(FORMATS)}")

"""Reports from the Jinja templates in `templates/`: the sticky PR comment and the job summary (fitted to
GitHub's limits), a standalone HTML report (bot.report.html_report), JUnit XML (bot.report.junit_xml) and JSON,
by format name. Every render_* function is pure: a Comparison or a RunResult in, text out."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bot.base.results import RunResult
from bot.base.secrets import redact_model, scrub_rendered
from bot.base.templating import tidy_markdown
from bot.base.textfilters import md_url
from bot.compare.comparison import Comparison
from bot.report.cuts import COMMENT_DETAILS, COMMENT_ROWS, brief, trim
from bot.report.environment import environment
from bot.report.html_report import render_html
from bot.report.junit_xml import render_junit
from bot.report.marker import MARKER, marker_for
from bot.report.view import CaseRow, ReportView, build_view

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

    def rendered(v: ReportView) -> str:
        return tidy_markdown(template.render(view=v, **context))

    full = rendered(view)
    if measure(full) <= limit:
        return full
    rows = sum(len(s.rows) for s in view.sections)
    if measure(rendered(trim(view, rows=rows, details=0))) <= limit:
        keep = _largest(
            0, len(view.details), lambda d: measure(rendered(trim(view, rows=rows, details=d))) <= limit
        )
        return rendered(trim(view, rows=rows, details=keep))
    if measure(rendered(trim(view, rows=0, details=0))) <= limit:
        keep = _largest(0, rows, lambda r: measure(rendered(trim(view, rows=r, details=0))) <= limit)
        return rendered(trim(view, rows=keep, details=0))
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
        brief(build_view(subject), rows=COMMENT_ROWS, details=COMMENT_DETAILS),
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


def render_cases_text(rows: Sequence[CaseRow]) -> str:
    """Cases for the terminal (`sqlcanary show`): question, verdict, cause, first and structural difference,
    gold SQL and the base → head prediction diff, as plain text."""
    return environment().get_template("show.txt.j2").render(rows=list(rows))


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
    bot.base.secrets.scrub_rendered); `marker_key` names the sticky comment's marker ("md" only)."""
    if secrets:
        subject = redact_model(subject, secrets)
        head, base = (None if r is None else redact_model(r, secrets) for r in (head, base))
    text = _render(fmt, subject, head=head, base=base, details_url=details_url, limit=limit, key=marker_key)
    return scrub_rendered(text, secrets)


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

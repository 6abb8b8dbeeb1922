"""The sweep report as text: Markdown (sweep-report.md, and the job summary, fitted to its 1 MiB), standalone HTML
with one chart per metric (inline SVG, bot.report.charts) and JSON (the SweepReport model). Pure functions: a
SweepReport in, text out. Names, models and case ids come from runs a matrix job uploaded: the templates escape
them (bot.base.textfilters)."""

from __future__ import annotations

from collections.abc import Callable

from markupsafe import Markup

from bot.base.templating import tidy_markdown
from bot.base.textfilters import pct
from bot.report import charts
from bot.report.environment import environment
from bot.report.metrics_view import metrics_text
from bot.sweep.report import SettingRow, SweepReport

SUMMARY_LIMIT = 1_048_576  # bytes in a GitHub job summary
_COLORS = ("#0969da", "#8250df", "#1a7f37", "#bc4c00", "#cf222e", "#1b7c83", "#d4a72c", "#57606a")


def seconds(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def dollars(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.4f}"


def count(value: int | float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def p_value(value: float | None) -> str:
    if value is None:
        return ""
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _helpers() -> dict[str, Callable]:
    return {
        "seconds": seconds,
        "dollars": dollars,
        "count": count,
        "p_value": p_value,
        "metrics_text": metrics_text,
    }


def render_markdown(report: SweepReport, *, ids: bool = True, tags: bool = True) -> str:
    template = environment().get_template("sweep.md.j2")
    return tidy_markdown(template.render(report=report, show_ids=ids, show_tags=tags, **_helpers()))


def render_summary(report: SweepReport, *, limit: int = SUMMARY_LIMIT) -> str:
    """The Markdown, fitted to the job summary: without the case ids, then without the per-tag table."""
    for ids, tags in ((True, True), (False, True), (False, False)):
        text = render_markdown(report, ids=ids, tags=tags)
        if len(text.encode("utf-8")) <= limit:
            return text
    return text[: limit // 4] + "\n\n(cut: the full table is in sweep-report.md)\n"


def render_json(report: SweepReport) -> str:
    return report.model_dump_json(indent=2) + "\n"


def _won_lost(row: SettingRow, *, won: bool) -> float | None:
    v = row.versus_first
    return None if v is None else float(v.won if won else v.lost)


# (title, value of a row, max of the axis: None for the largest value, formatter)
_METRICS: tuple[tuple[str, Callable[[SettingRow], float | None], float | None, Callable[..., str]], ...] = (
    ("Pass rate", lambda r: r.pass_rate, 1.0, pct),
    ("pass@k (any of k attempts)", lambda r: r.pass_at_k, 1.0, pct),
    ("pass^k (all k attempts)", lambda r: r.pass_hat_k, 1.0, pct),
    ("Cases won against the first setting", lambda r: _won_lost(r, won=True), None, count),
    ("Cases lost against the first setting", lambda r: _won_lost(r, won=False), None, count),
    ("LLM calls", lambda r: r.llm_calls, None, count),
    ("Tokens", lambda r: r.tokens, None, count),
    ("Cost (USD)", lambda r: r.cost_usd, None, dollars),
    ("Agent latency p50", lambda r: r.latency_p50_s, None, seconds),
    ("Agent latency p95", lambda r: r.latency_p95_s, None, seconds),
)


def metric_charts(report: SweepReport) -> list[tuple[str, Markup]]:
    """One bar chart per metric some setting has a value for: one bar per setting."""
    names = [r.name for r in report.settings]
    out = []
    for title, value_of, top, fmt in _METRICS:
        values = tuple(None if v is None else float(v) for v in (value_of(r) for r in report.settings))
        if all(v is None for v in values):
            continue
        peak = top or max((v for v in values if v is not None), default=0.0) or 1.0
        series = [charts.Series(title, _COLORS[0], values)]
        out.append((title, charts.grouped_bars(names, series, title=title, max_value=peak, fmt=fmt)))
    return out


def category_chart(report: SweepReport, *, by: str) -> Markup | None:
    keys = report.categories if by == "category" else report.tags
    if not keys:
        return None
    series = [
        charts.Series(
            r.name,
            _COLORS[i % len(_COLORS)],
            tuple((r.by_category if by == "category" else r.by_tag).get(k) for k in keys),
        )
        for i, r in enumerate(report.settings)
    ]
    return charts.grouped_bars(list(keys), series, title=f"Pass rate by {by}")


def render_html(report: SweepReport) -> str:
    template = environment().get_template("sweep.html.j2")
    return template.render(
        report=report,
        metric_charts=metric_charts(report),
        category_chart=category_chart(report, by="category"),
        tag_chart=category_chart(report, by="tag"),
        **_helpers(),
    )

"""The standalone HTML report: inline CSS and SVG charts (pass rates, outcomes, latency), no script, no
network."""

from __future__ import annotations

from markupsafe import Markup

from bot.base.results import RunResult
from bot.compare.comparison import Comparison
from bot.report import charts
from bot.report.environment import environment
from bot.report.view import ReportView, build_view, row_from_case, rows_from_comparison


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
    rates = {"by_category": (view.by_category, "category"), "by_tag": (view.by_tag, "tag")}
    return {
        **{
            k: _rate_chart(rows, title=f"Pass rate by {by}", compared=compared)
            for k, (rows, by) in rates.items()
        },
        "groups": charts.count_bars(groups, title=title) if groups else None,
        "latency": charts.histogram(latency, title="Latency distribution") if has_latency else None,
    }


def render_html(
    subject: Comparison | RunResult, *, head: RunResult | None = None, base: RunResult | None = None
) -> str:
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

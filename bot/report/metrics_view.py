"""The evaluation metrics of a comparison (bot.compare.metrics) as the reports show them: one line for the first
screen of the comment and the job summary ("cost/case $0.0021 → $0.0034 (+62%, 95% CI ...)"), and per metric
the cases that moved most, for the HTML report and the summary's table. Every text here is built from numbers;
case ids are escaped by the templates that show them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from bot.compare.comparison import Comparison, GateSettings
from bot.compare.gate import metric_reasons
from bot.compare.metrics import Metric, MetricDelta, shown

LABELS = {
    "cost": "cost/case",
    "tokens": "tokens/case",
    "latency": "latency p50",
    "query_cost": "query cost/case",
}


@dataclass(frozen=True)
class MetricRow:
    metric: str
    label: str
    base: str  # the base's median
    head: str
    change: str  # "+62%", "-5%", "new" (from zero), "" (no change to speak of)
    interval: str  # "95% CI +$0.0010 to +$0.0015": the median change per case
    p95: str  # "p95 1.20 s → 1.31 s"
    total: str  # "total $0.18 → $0.29 over 84 cases"
    note: str  # why the metric is not gated, if it is not
    gated: bool  # the gate may judge it (bot.compare.metrics.MetricDelta.gated)
    failed: bool  # the gate failed on this metric
    moved: tuple[tuple[str, str, str], ...]  # (case id, base, head), largest rise first


def _signed(metric: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    text = shown(cast(Metric, metric), abs(value))
    return ("+" if value > 0 else "-" if value < 0 else "±") + text


def metric_row(d: MetricDelta, gate: GateSettings | None) -> MetricRow:
    """`d` as the reports show it; `gate` (None: none applies, as in a sweep) marks a metric that failed it."""
    m = d.metric
    from_zero = "new" if (d.head_median or 0) > 0 else ""
    change = f"{d.change:+.0%}" if d.change is not None else from_zero
    interval = (
        f"95% CI {_signed(m, d.ci_low)} to {_signed(m, d.ci_high)}"
        if d.ci_low is not None
        else "too few cases for an interval"
    )
    return MetricRow(
        metric=m,
        label=LABELS[m],
        base=shown(m, d.base_median),
        head=shown(m, d.head_median),
        change=change,
        interval=interval,
        p95=f"p95 {shown(m, d.base_p95)} → {shown(m, d.head_p95)}",
        total=f"total {shown(m, d.base_total)} → {shown(m, d.head_total)} over {d.pairs} case(s)",
        note=d.note,
        gated=d.gated,
        failed=bool(metric_reasons([d], gate)) if gate is not None else False,
        moved=tuple((c.id, shown(m, c.base), shown(m, c.head)) for c in d.moved),
    )


def metric_rows(cmp: Comparison) -> tuple[MetricRow, ...]:
    return tuple(metric_row(d, cmp.gate) for d in cmp.metrics)


def metrics_text(deltas: tuple[MetricDelta, ...]) -> str:
    """The metrics line of deltas no gate applies to (a sweep's setting against the first)."""
    return metrics_line(tuple(metric_row(d, None) for d in deltas))


def comment_rows(rows: tuple[MetricRow, ...]) -> tuple[MetricRow, ...]:
    """What the first screen shows: every measure but a latency the gate may not judge (timed in other jobs, or
    within the timer's noise). A re-run of the same event then shows the same line, and the sticky comment is
    left alone; the job summary and the HTML report show every measure with its note."""
    return tuple(r for r in rows if r.metric != "latency" or r.gated)


def metrics_line(rows: tuple[MetricRow, ...]) -> str:
    """One line, Markdown: each metric's medians, change and interval; a metric that failed the gate in bold."""
    parts = []
    for r in rows:
        change = f" ({r.change}, {r.interval})" if r.change else f" ({r.interval})"
        note = f", {r.note}" if r.note else ""
        text = f"{r.label} {r.base} → {r.head}{change}{note}"
        parts.append(f"**{text}** ✗" if r.failed else text)
    return " · ".join(parts)

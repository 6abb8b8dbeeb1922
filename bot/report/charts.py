"""Inline SVG charts for the HTML report: no script, no network, every label escaped."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from bot.base.textfilters import pct, truncate_middle

BASE_COLOR = "#8c959f"
HEAD_COLOR = "#0969da"
GROUP_COLORS = {
    "regressed": "#cf222e",
    "fixed": "#1a7f37",
    "flaky": "#d4a72c",
    "became_invalid": "#8250df",
    "became_valid": "#a475f9",
    "error_changed": "#bc4c00",
    "new": "#1b7c83",
    "removed": "#57606a",
    "renamed": "#0550ae",
    "still_failing": "#ff8182",
    "still_passing": "#4ac26b",
    "passed": "#1a7f37",
    "failed": "#cf222e",
    "errored": "#bc4c00",
    "invalid": "#8250df",
}
TEXT = "#24292f"
GRID = "#d0d7de"
WIDTH = 640
LABEL_W = 170
VALUE_W = 64
FONT = 'font-family="system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif" font-size="12"'


@dataclass(frozen=True)
class Series:
    name: str
    color: str
    values: tuple[float | None, ...]


def _svg(height: float, body: list[str], *, label: str) -> Markup:
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 {WIDTH} {height:.0f}" '
        f'width="{WIDTH}" height="{height:.0f}" {FONT}><title>{escape(label)}</title>'
        + "".join(body)
        + "</svg>"
    )


def _text(x: float, y: float, text: str, *, anchor: str = "start", fill: str = TEXT) -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{fill}">{escape(text)}</text>'


def _rect(x: float, y: float, w: float, h: float, color: str, tip: str) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{h:.1f}" fill="{color}">'
        f"<title>{escape(tip)}</title></rect>"
    )


def _legend(series: Sequence[Series], y: float) -> list[str]:
    out, x = [], LABEL_W
    for s in series:
        out.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{s.color}"/>')
        out.append(_text(x + 17, y, s.name))
        x += 30 + 7 * len(s.name)
    return out


def grouped_bars(
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    max_value: float = 1.0,
    fmt: Callable[[float | None], str] = pct,
) -> Markup:
    """Horizontal grouped bars: one group per label, one bar per series (base then head)."""
    bar_h, gap = 14, 12
    area = WIDTH - LABEL_W - VALUE_W
    top = 30
    group_h = len(series) * (bar_h + 2) + gap
    height = top + len(labels) * group_h + 24
    body = _legend(series, 16)
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = LABEL_W + area * tick
        body.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 18}" stroke="{GRID}"/>')
        body.append(_text(x, height - 4, fmt(tick * max_value), anchor="middle", fill="#57606a"))
    for i, label in enumerate(labels):
        y = top + i * group_h
        body.append(_text(LABEL_W - 8, y + group_h / 2, truncate_middle(label, 26), anchor="end"))
        for j, s in enumerate(series):
            value = s.values[i]
            by = y + j * (bar_h + 2)
            w = 0.0 if value is None else area * min(max(value / max_value, 0.0), 1.0)
            body.append(_rect(LABEL_W, by, w, bar_h, s.color, f"{label} {s.name}: {fmt(value)}"))
            body.append(_text(LABEL_W + w + 4, by + bar_h - 3, fmt(value)))
    return _svg(height, body, label=title)


def count_bars(items: Sequence[tuple[str, int, str]], *, title: str) -> Markup:
    """Horizontal bars of counts: (label, count, colour)."""
    bar_h, gap, top = 18, 8, 8
    area = WIDTH - LABEL_W - VALUE_W
    peak = max((n for _, n, _ in items), default=0) or 1
    height = top + len(items) * (bar_h + gap) + 8
    body = []
    for i, (label, n, color) in enumerate(items):
        y = top + i * (bar_h + gap)
        w = area * n / peak
        body.append(_text(LABEL_W - 8, y + bar_h - 4, label, anchor="end"))
        body.append(_rect(LABEL_W, y, w, bar_h, color, f"{label}: {n}"))
        body.append(_text(LABEL_W + w + 4, y + bar_h - 4, str(n)))
    return _svg(height, body, label=title)


def _edges(values: Sequence[float], bins: int) -> list[float]:
    """Round bin edges from 0; when a few outliers dwarf the rest, the range stops at the 95th percentile
    and the last bin holds everything above it."""
    ordered = sorted(values)
    peak = ordered[-1] if ordered else 0.0
    p95 = ordered[int(0.95 * (len(ordered) - 1))] if ordered else 0.0
    top = p95 * 1.1 if peak > 2 * p95 > 0 else peak
    if top <= 0:
        return [i * 0.1 for i in range(bins + 1)]
    raw = top / bins
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [i * step for i in range(bins + 1)]


def _bin_counts(values: Sequence[float], edges: list[float]) -> list[int]:
    counts = [0] * (len(edges) - 1)
    for v in values:
        counts[min(max(int(v / edges[1]), 0), len(counts) - 1)] += 1
    return counts


def _seconds(v: float) -> str:
    return f"{v * 1000:.0f}ms" if v < 1 else f"{v:.3g}s"


def histogram(series: Sequence[tuple[str, str, Sequence[float]]], *, title: str, bins: int = 12) -> Markup:
    """Vertical histogram of durations in seconds; several series share the bins, side by side."""
    everything = [v for _, _, values in series for v in values]
    edges = _edges(everything, bins)
    counts = [_bin_counts(values, edges) for _, _, values in series]
    peak = max((n for c in counts for n in c), default=0) or 1
    left, top, bottom, plot_h = 48, 30, 40, 220
    slot = (WIDTH - left - 16) / bins
    bar_w = (slot - 4) / max(len(series), 1)
    body = _legend([Series(name, color, ()) for name, color, _ in series], 16)
    for frac in (0, 0.5, 1):
        y = top + plot_h * (1 - frac)
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{WIDTH - 16}" y2="{y:.1f}" stroke="{GRID}"/>')
        body.append(_text(left - 6, y + 4, str(round(peak * frac)), anchor="end", fill="#57606a"))
    for b in range(bins):
        x0 = left + b * slot + 2
        for j, (name, color, _) in enumerate(series):
            n = counts[j][b]
            h = plot_h * n / peak
            upper = "and more" if b == bins - 1 else f"– {_seconds(edges[b + 1])}"
            tip = f"{name}: {n} case(s) at {_seconds(edges[b])} {upper}"
            body.append(_rect(x0 + j * bar_w, top + plot_h - h, bar_w, h, color, tip))
        if b % 2 == 0:
            body.append(_text(x0 - 2, top + plot_h + 16, _seconds(edges[b]), anchor="middle", fill="#57606a"))
    caption = "agent + evaluation time per case"
    if everything and max(everything) > edges[-1]:
        caption += f" (the last bar: {_seconds(edges[-2])} and slower)"
    body.append(_text(WIDTH / 2, top + plot_h + 34, caption, anchor="middle"))
    return _svg(top + plot_h + bottom, body, label=title)

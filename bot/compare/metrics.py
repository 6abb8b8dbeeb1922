"""Evaluation metrics beyond the pass rate, base against head, case by case: what each answer cost (USD), its
tokens, its latency, and its query's planned cost.

Each metric is compared over the cases both runs measured (paired by case id): the medians, 95th percentiles and
totals of each side; the relative change of the median; and a 95% interval for the median of the paired
differences (head minus base). The interval is distribution-free and exact: the order statistics the sign test
inverts (for n pairs, the k-th smallest and k-th largest difference, k the largest count with
P(Binomial(n, 1/2) < k) <= 2.5%). It needs no resampling, so it costs one sort at any suite size and gives the
same answer every time; it makes no assumption about the shape of the differences (costs and latencies are
skewed), where a t-interval would. An increase is called only when the interval lies wholly above zero.

Latency is measured by the run that asked the agent: an answer from the answer cache, or a run from the run
cache, was timed elsewhere. Only answers asked in both runs are paired, and only when both runs were measured in
the same job is latency gated (`latency_gated`); otherwise the comparison shows it and says why it is not gated."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import ceil
from typing import Literal

from bot.base.results import CaseResult, FrozenModel, RunResult

Metric = Literal["cost", "tokens", "latency", "query_cost"]
METRICS: tuple[Metric, ...] = ("cost", "tokens", "latency", "query_cost")
UNITS: dict[Metric, str] = {"cost": "USD", "tokens": "tokens", "latency": "s", "query_cost": "planner cost"}
MOVED_SHOWN = 5  # cases a metric names as the ones that moved most
LATENCY_FLOOR_S = 0.05  # a median latency change below this is timer noise for a process agent: never gated


class MovedCase(FrozenModel):
    id: str
    base: float
    head: float


class MetricDelta(FrozenModel):
    """One metric, base against head, over the `pairs` cases both measured."""

    metric: Metric
    unit: str
    pairs: int
    base_median: float | None = None
    head_median: float | None = None
    base_p95: float | None = None
    head_p95: float | None = None
    base_total: float | None = None
    head_total: float | None = None
    change: float | None = None  # head median / base median - 1; None when the base's median is 0
    ci_low: float | None = None  # the 95% interval of the median paired difference (head - base), in `unit`
    ci_high: float | None = None
    gated: bool = True  # False: shown, never failing the gate (`note` says why)
    note: str = ""
    moved: tuple[MovedCase, ...] = ()  # the cases whose value moved most, largest rise first

    @property
    def increased(self) -> bool:
        """The median paired difference is above zero at 95% (the interval lies wholly above it)."""
        return self.ci_low is not None and self.ci_low > 0


def _cost(c: CaseResult) -> float | None:
    return c.prediction.usage.cost_usd if c.prediction.usage else None


def _tokens(c: CaseResult) -> float | None:
    tokens = c.prediction.usage.tokens if c.prediction.usage else None
    return float(tokens) if tokens is not None else None


def _latency(c: CaseResult) -> float | None:
    p = c.prediction
    return p.duration_s if p.duration_s is not None and not p.cached else None


def _query_cost(c: CaseResult) -> float | None:
    return c.query_cost.prediction if c.query_cost else None


VALUE: dict[Metric, Callable[[CaseResult], float | None]] = {
    "cost": _cost,
    "tokens": _tokens,
    "latency": _latency,
    "query_cost": _query_cost,
}


def median(values: Sequence[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..1): a value the run actually had."""
    s = sorted(values)
    return s[max(0, ceil(q * len(s)) - 1)]


def median_interval(diffs: Sequence[float], *, level: float = 0.95) -> tuple[float, float] | None:
    """The distribution-free interval for the median of `diffs` (the sign test's, from order statistics); None
    with too few values to reach `level` (fewer than 6 for 95%)."""
    n = len(diffs)
    alpha, outcomes = (1 - level) / 2, 2**n
    k, below, ways = 0, 0, 1  # ways = comb(n, k), kept exact as an integer
    while k < n:  # the largest k with P(X < k) <= alpha, X ~ Binomial(n, 1/2)
        if (below + ways) / outcomes > alpha:
            break
        below, ways, k = below + ways, ways * (n - k) // (k + 1), k + 1
    if k == 0:
        return None
    s = sorted(diffs)
    return s[k - 1], s[n - k]


def metric_delta(
    metric: Metric, base: RunResult, head: RunResult, *, latency_gated: bool = True
) -> MetricDelta | None:
    """`metric` compared over the cases both runs measured; None when no case was measured by both."""
    value = VALUE[metric]
    base_by_id = {c.id: value(c) for c in base.cases}
    pairs = [
        (c.id, b, h)
        for c in head.cases
        if (h := value(c)) is not None and (b := base_by_id.get(c.id)) is not None
    ]
    if not pairs:
        return None
    b_vals, h_vals = [p[1] for p in pairs], [p[2] for p in pairs]
    base_med, head_med = median(b_vals), median(h_vals)
    interval = median_interval([h - b for _, b, h in pairs])
    moved = sorted(pairs, key=lambda p: (p[2] - p[1], p[0]), reverse=True)[:MOVED_SHOWN]
    gated, note = True, ""
    if interval is None:
        gated, note = False, "not gated: a 95% interval needs 6 cases measured by both runs"
    elif metric == "latency" and not latency_gated:
        gated, note = False, "not gated: the two runs were not timed in the same job (a cached run)"
    elif metric == "latency" and abs(head_med - base_med) < LATENCY_FLOOR_S:
        gated, note = False, f"not gated: the medians differ by less than {LATENCY_FLOOR_S * 1000:.0f} ms"
    return MetricDelta(
        metric=metric,
        unit=UNITS[metric],
        pairs=len(pairs),
        base_median=base_med,
        head_median=head_med,
        base_p95=percentile(b_vals, 0.95),
        head_p95=percentile(h_vals, 0.95),
        base_total=sum(b_vals),
        head_total=sum(h_vals),
        change=(head_med / base_med - 1) if base_med else None,
        ci_low=interval[0] if interval else None,
        ci_high=interval[1] if interval else None,
        gated=gated,
        note=note,
        moved=tuple(MovedCase(id=i, base=b, head=h) for i, b, h in moved if h != b),
    )


NAMES: dict[Metric, str] = {
    "cost": "cost",
    "tokens": "tokens",
    "latency": "latency",
    "query_cost": "query cost",
}


def shown(metric: Metric, value: float | None) -> str:
    """A value of `metric` as people read it: $0.0021, 1,234 tokens, 870 ms or 1.23 s, 123.4."""
    if value is None:
        return "n/a"
    if metric == "cost":
        return f"${value:.4f}" if abs(value) < 1 else f"${value:,.2f}"
    if metric == "tokens":
        return f"{value:,.0f}"
    if metric == "latency":
        return f"{value * 1000:.0f} ms" if abs(value) < 1 else f"{value:.2f} s"
    return f"{value:,.1f}"


def costlier_plans(base: RunResult, head: RunResult, ratio: float) -> list[MovedCase]:
    """The cases whose prediction's planned cost at the head is at least `ratio` times the base's (a base cost
    above zero), the largest ratio first."""
    base_cost = {c.id: _query_cost(c) for c in base.cases}
    found = [
        MovedCase(id=c.id, base=b, head=h)
        for c in head.cases
        if (h := _query_cost(c)) is not None and (b := base_cost.get(c.id)) and h >= ratio * b
    ]
    return sorted(found, key=lambda m: (-m.head / m.base, m.id))


def plan_cost_reasons(base: RunResult, head: RunResult, ratio: float | None) -> list[str]:
    """The gate's `max_query_cost_ratio`: one reason naming the cases whose plan became that much costlier."""
    found = costlier_plans(base, head, ratio) if ratio is not None else []
    if not found:
        return []
    named = ", ".join(
        f"{m.id} ({shown('query_cost', m.base)} → {shown('query_cost', m.head)}, {m.head / m.base:.0f}x)"
        for m in found[:MOVED_SHOWN]
    )
    more = f" and {len(found) - MOVED_SHOWN} more" if len(found) > MOVED_SHOWN else ""
    return [
        f"{len(found)} case(s) answer through a plan at least {ratio:g}x as costly as the base's answer "
        f"(the planner's estimate; gate.max_query_cost_ratio): {named}{more}"
    ]


def compare_metrics(base: RunResult, head: RunResult, *, latency_gated: bool) -> tuple[MetricDelta, ...]:
    """Every metric both runs measured on at least one common case, in METRICS order."""
    found = (metric_delta(m, base, head, latency_gated=latency_gated) for m in METRICS)
    return tuple(d for d in found if d is not None)
